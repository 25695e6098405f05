from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.opt_out_event_kind import OptOutEventKind
from typing import cast
from uuid import UUID

if TYPE_CHECKING:
  from ..models.opt_out_event import OptOutEvent





T = TypeVar("T", bound="OptOutRecordView")



@_attrs_define
class OptOutRecordView:
    """ 
        Attributes:
            events (list[OptOutEvent]):
            record_id (UUID): Identifier of an opt-out record (Art. 71).
            registry_version (int):
            status (OptOutEventKind):
            subject_key (str): HMAC of the pseudonym: the registry never stores the pseudonym itself.
     """

    events: list[OptOutEvent]
    record_id: UUID
    registry_version: int
    status: OptOutEventKind
    subject_key: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.opt_out_event import OptOutEvent # noqa: PLC0415
        events = []
        for events_item_data in self.events:
            events_item = events_item_data.to_dict()
            events.append(events_item)



        record_id = str(self.record_id)

        registry_version = self.registry_version

        status = self.status.value

        subject_key = self.subject_key


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "events": events,
            "record_id": record_id,
            "registry_version": registry_version,
            "status": status,
            "subject_key": subject_key,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.opt_out_event import OptOutEvent # noqa: PLC0415
        d = dict(src_dict)
        events = []
        _events = d.pop("events")
        for events_item_data in (_events):
            events_item = OptOutEvent.from_dict(events_item_data)



            events.append(events_item)


        record_id = UUID(d.pop("record_id"))




        registry_version = d.pop("registry_version")

        status = OptOutEventKind(d.pop("status"))




        subject_key = d.pop("subject_key")

        opt_out_record_view = cls(
            events=events,
            record_id=record_id,
            registry_version=registry_version,
            status=status,
            subject_key=subject_key,
        )


        opt_out_record_view.additional_properties = d
        return opt_out_record_view

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
