from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.aggregation_type_5_rule import AggregationType5Rule






T = TypeVar("T", bound="AggregationType5")



@_attrs_define
class AggregationType5:
    """ Bulyan (El Mhamdi et al. 2018): repeated Krum, then a trimmed mean around the median;
    needs n >= 4f + 3.

        Attributes:
            f (int):
            rule (AggregationType5Rule):
     """

    f: int
    rule: AggregationType5Rule
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        f = self.f

        rule = self.rule.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "f": f,
            "rule": rule,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        f = d.pop("f")

        rule = AggregationType5Rule(d.pop("rule"))




        aggregation_type_5 = cls(
            f=f,
            rule=rule,
        )


        aggregation_type_5.additional_properties = d
        return aggregation_type_5

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
