from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.outcome import Outcome
from ..types import UNSET, Unset
from typing import cast
from uuid import UUID
import datetime

if TYPE_CHECKING:
  from ..models.actor import Actor





T = TypeVar("T", bound="AuditEntry")



@_attrs_define
class AuditEntry:
    """ 
        Attributes:
            action (str):
            actor (Actor): Who acted. `sub` is the token subject (a pseudonymous account id), or `anonymous`.
            detail (Any):
            hash_ (str):
            id (UUID):
            outcome (Outcome):
            prev_hash (str):
            recorded_at (datetime.datetime):
            resource_type (str):
            seq (int):
            http_status (int | None | Unset):
            permit_id (None | str | Unset):
            request_id (None | str | Unset):
            resource_id (None | str | Unset):
     """

    action: str
    actor: Actor
    detail: Any
    hash_: str
    id: UUID
    outcome: Outcome
    prev_hash: str
    recorded_at: datetime.datetime
    resource_type: str
    seq: int
    http_status: int | None | Unset = UNSET
    permit_id: None | str | Unset = UNSET
    request_id: None | str | Unset = UNSET
    resource_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.actor import Actor # noqa: PLC0415
        action = self.action

        actor = self.actor.to_dict()

        detail = self.detail

        hash_ = self.hash_

        id = str(self.id)

        outcome = self.outcome.value

        prev_hash = self.prev_hash

        recorded_at = self.recorded_at.isoformat()

        resource_type = self.resource_type

        seq = self.seq

        http_status: int | None | Unset
        if isinstance(self.http_status, Unset):
            http_status = UNSET
        else:
            http_status = self.http_status

        permit_id: None | str | Unset
        if isinstance(self.permit_id, Unset):
            permit_id = UNSET
        else:
            permit_id = self.permit_id

        request_id: None | str | Unset
        if isinstance(self.request_id, Unset):
            request_id = UNSET
        else:
            request_id = self.request_id

        resource_id: None | str | Unset
        if isinstance(self.resource_id, Unset):
            resource_id = UNSET
        else:
            resource_id = self.resource_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "action": action,
            "actor": actor,
            "detail": detail,
            "hash": hash_,
            "id": id,
            "outcome": outcome,
            "prev_hash": prev_hash,
            "recorded_at": recorded_at,
            "resource_type": resource_type,
            "seq": seq,
        })
        if http_status is not UNSET:
            field_dict["http_status"] = http_status
        if permit_id is not UNSET:
            field_dict["permit_id"] = permit_id
        if request_id is not UNSET:
            field_dict["request_id"] = request_id
        if resource_id is not UNSET:
            field_dict["resource_id"] = resource_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.actor import Actor # noqa: PLC0415
        d = dict(src_dict)
        action = d.pop("action")

        actor = Actor.from_dict(d.pop("actor"))




        detail = d.pop("detail")

        hash_ = d.pop("hash")

        id = UUID(d.pop("id"))




        outcome = Outcome(d.pop("outcome"))




        prev_hash = d.pop("prev_hash")

        recorded_at = datetime.datetime.fromisoformat(d.pop("recorded_at"))




        resource_type = d.pop("resource_type")

        seq = d.pop("seq")

        def _parse_http_status(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        http_status = _parse_http_status(d.pop("http_status", UNSET))


        def _parse_permit_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        permit_id = _parse_permit_id(d.pop("permit_id", UNSET))


        def _parse_request_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        request_id = _parse_request_id(d.pop("request_id", UNSET))


        def _parse_resource_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        resource_id = _parse_resource_id(d.pop("resource_id", UNSET))


        audit_entry = cls(
            action=action,
            actor=actor,
            detail=detail,
            hash_=hash_,
            id=id,
            outcome=outcome,
            prev_hash=prev_hash,
            recorded_at=recorded_at,
            resource_type=resource_type,
            seq=seq,
            http_status=http_status,
            permit_id=permit_id,
            request_id=request_id,
            resource_id=resource_id,
        )


        audit_entry.additional_properties = d
        return audit_entry

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
