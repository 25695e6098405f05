from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.cell_label_type_1_kind import CellLabelType1Kind






T = TypeVar("T", bound="CellLabelType1")



@_attrs_define
class CellLabelType1:
    """ `[lo, hi)`, or `[lo, hi]` for the last bin.

        Attributes:
            closed_hi (bool):
            column (str):
            hi (float):
            kind (CellLabelType1Kind):
            lo (float):
     """

    closed_hi: bool
    column: str
    hi: float
    kind: CellLabelType1Kind
    lo: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        closed_hi = self.closed_hi

        column = self.column

        hi = self.hi

        kind = self.kind.value

        lo = self.lo


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "closed_hi": closed_hi,
            "column": column,
            "hi": hi,
            "kind": kind,
            "lo": lo,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        closed_hi = d.pop("closed_hi")

        column = d.pop("column")

        hi = d.pop("hi")

        kind = CellLabelType1Kind(d.pop("kind"))




        lo = d.pop("lo")

        cell_label_type_1 = cls(
            closed_hi=closed_hi,
            column=column,
            hi=hi,
            kind=kind,
            lo=lo,
        )


        cell_label_type_1.additional_properties = d
        return cell_label_type_1

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
