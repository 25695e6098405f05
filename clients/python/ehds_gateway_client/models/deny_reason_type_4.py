from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.data_category import DataCategory
from ..models.deny_reason_type_4_code import DenyReasonType4Code






T = TypeVar("T", bound="DenyReasonType4")



@_attrs_define
class DenyReasonType4:
    """ 
        Attributes:
            category (DataCategory):
            code (DenyReasonType4Code):
     """

    category: DataCategory
    code: DenyReasonType4Code
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        category = self.category.value

        code = self.code.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "category": category,
            "code": code,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        category = DataCategory(d.pop("category"))




        code = DenyReasonType4Code(d.pop("code"))




        deny_reason_type_4 = cls(
            category=category,
            code=code,
        )


        deny_reason_type_4.additional_properties = d
        return deny_reason_type_4

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
