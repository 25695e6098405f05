from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.register_entry import RegisterEntry
  from ..models.register_summary import RegisterSummary





T = TypeVar("T", bound="RegisterPage")



@_attrs_define
class RegisterPage:
    """ 
        Attributes:
            entries (list[RegisterEntry]):
            summary (RegisterSummary): Applications per state, small counts withheld.
     """

    entries: list[RegisterEntry]
    summary: RegisterSummary
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.register_entry import RegisterEntry # noqa: PLC0415
        from ..models.register_summary import RegisterSummary # noqa: PLC0415
        entries = []
        for entries_item_data in self.entries:
            entries_item = entries_item_data.to_dict()
            entries.append(entries_item)



        summary = self.summary.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "entries": entries,
            "summary": summary,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.register_entry import RegisterEntry # noqa: PLC0415
        from ..models.register_summary import RegisterSummary # noqa: PLC0415
        d = dict(src_dict)
        entries = []
        _entries = d.pop("entries")
        for entries_item_data in (_entries):
            entries_item = RegisterEntry.from_dict(entries_item_data)



            entries.append(entries_item)


        summary = RegisterSummary.from_dict(d.pop("summary"))




        register_page = cls(
            entries=entries,
            summary=summary,
        )


        register_page.additional_properties = d
        return register_page

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
