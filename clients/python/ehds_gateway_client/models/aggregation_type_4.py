from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.aggregation_type_4_rule import AggregationType4Rule






T = TypeVar("T", bound="AggregationType4")



@_attrs_define
class AggregationType4:
    """ Coordinate-wise mean without the `per_side` lowest and highest values (Yin et al.
    2018); needs n > 2 per_side.

        Attributes:
            per_side (int):
            rule (AggregationType4Rule):
     """

    per_side: int
    rule: AggregationType4Rule
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        per_side = self.per_side

        rule = self.rule.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "per_side": per_side,
            "rule": rule,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        per_side = d.pop("per_side")

        rule = AggregationType4Rule(d.pop("rule"))




        aggregation_type_4 = cls(
            per_side=per_side,
            rule=rule,
        )


        aggregation_type_4.additional_properties = d
        return aggregation_type_4

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
