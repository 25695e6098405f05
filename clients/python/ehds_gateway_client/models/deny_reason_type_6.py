from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.deny_reason_type_6_code import DenyReasonType6Code






T = TypeVar("T", bound="DenyReasonType6")



@_attrs_define
class DenyReasonType6:
    """ 
        Attributes:
            code (DenyReasonType6Code):
            remaining (float):
            requested (float):
     """

    code: DenyReasonType6Code
    remaining: float
    requested: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        code = self.code.value

        remaining = self.remaining

        requested = self.requested


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "code": code,
            "remaining": remaining,
            "requested": requested,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        code = DenyReasonType6Code(d.pop("code"))




        remaining = d.pop("remaining")

        requested = d.pop("requested")

        deny_reason_type_6 = cls(
            code=code,
            remaining=remaining,
            requested=requested,
        )


        deny_reason_type_6.additional_properties = d
        return deny_reason_type_6

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
