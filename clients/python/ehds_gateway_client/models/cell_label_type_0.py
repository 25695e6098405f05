from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.cell_label_type_0_kind import CellLabelType0Kind






T = TypeVar("T", bound="CellLabelType0")



@_attrs_define
class CellLabelType0:
    """ 
        Attributes:
            column (str):
            kind (CellLabelType0Kind):
            value (float):
     """

    column: str
    kind: CellLabelType0Kind
    value: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        column = self.column

        kind = self.kind.value

        value = self.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "column": column,
            "kind": kind,
            "value": value,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        column = d.pop("column")

        kind = CellLabelType0Kind(d.pop("kind"))




        value = d.pop("value")

        cell_label_type_0 = cls(
            column=column,
            kind=kind,
            value=value,
        )


        cell_label_type_0.additional_properties = d
        return cell_label_type_0

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
