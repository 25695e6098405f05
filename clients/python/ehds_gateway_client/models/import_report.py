from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ImportReport")



@_attrs_define
class ImportReport:
    """ 
        Attributes:
            registered (int):
            registry_version (int):
            unchanged (int): Rows already in the registry (re-imports of the same source ids).
            withdrawn (int):
     """

    registered: int
    registry_version: int
    unchanged: int
    withdrawn: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        registered = self.registered

        registry_version = self.registry_version

        unchanged = self.unchanged

        withdrawn = self.withdrawn


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "registered": registered,
            "registry_version": registry_version,
            "unchanged": unchanged,
            "withdrawn": withdrawn,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        registered = d.pop("registered")

        registry_version = d.pop("registry_version")

        unchanged = d.pop("unchanged")

        withdrawn = d.pop("withdrawn")

        import_report = cls(
            registered=registered,
            registry_version=registry_version,
            unchanged=unchanged,
            withdrawn=withdrawn,
        )


        import_report.additional_properties = d
        return import_report

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
