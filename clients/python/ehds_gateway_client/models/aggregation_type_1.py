from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.aggregation_type_1_rule import AggregationType1Rule






T = TypeVar("T", bound="AggregationType1")



@_attrs_define
class AggregationType1:
    """ Krum (Blanchard et al. 2017): the update closest to its n - f - 2 nearest neighbours;
    needs n >= 2f + 3.

        Attributes:
            f (int):
            rule (AggregationType1Rule):
     """

    f: int
    rule: AggregationType1Rule
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

        rule = AggregationType1Rule(d.pop("rule"))




        aggregation_type_1 = cls(
            f=f,
            rule=rule,
        )


        aggregation_type_1.additional_properties = d
        return aggregation_type_1

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
