from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.opt_out_event_kind import OptOutEventKind
from typing import cast
from uuid import UUID
import datetime






T = TypeVar("T", bound="OptOutEvent")



@_attrs_define
class OptOutEvent:
    """ One row of the registry. `seq` is the registry version that the row created.

        Attributes:
            channel (str):
            effective_at (datetime.datetime): When the registration or withdrawal takes effect.
            kind (OptOutEventKind):
            member_state (str):
            record_id (UUID): Identifier of an opt-out record (Art. 71).
            recorded_at (datetime.datetime):
            scope (str): Always `all_secondary_use`: Art. 71 covers all EHDS secondary use.
            seq (int):
            subject_key (str):
     """

    channel: str
    effective_at: datetime.datetime
    kind: OptOutEventKind
    member_state: str
    record_id: UUID
    recorded_at: datetime.datetime
    scope: str
    seq: int
    subject_key: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        channel = self.channel

        effective_at = self.effective_at.isoformat()

        kind = self.kind.value

        member_state = self.member_state

        record_id = str(self.record_id)

        recorded_at = self.recorded_at.isoformat()

        scope = self.scope

        seq = self.seq

        subject_key = self.subject_key


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "channel": channel,
            "effective_at": effective_at,
            "kind": kind,
            "member_state": member_state,
            "record_id": record_id,
            "recorded_at": recorded_at,
            "scope": scope,
            "seq": seq,
            "subject_key": subject_key,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        channel = d.pop("channel")

        effective_at = datetime.datetime.fromisoformat(d.pop("effective_at"))




        kind = OptOutEventKind(d.pop("kind"))




        member_state = d.pop("member_state")

        record_id = UUID(d.pop("record_id"))




        recorded_at = datetime.datetime.fromisoformat(d.pop("recorded_at"))




        scope = d.pop("scope")

        seq = d.pop("seq")

        subject_key = d.pop("subject_key")

        opt_out_event = cls(
            channel=channel,
            effective_at=effective_at,
            kind=kind,
            member_state=member_state,
            record_id=record_id,
            recorded_at=recorded_at,
            scope=scope,
            seq=seq,
            subject_key=subject_key,
        )


        opt_out_event.additional_properties = d
        return opt_out_event

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
