from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.aggregation_type_6_rule import AggregationType6Rule






T = TypeVar("T", bound="AggregationType6")



@_attrs_define
class AggregationType6:
    """ FLTrust (Cao et al. 2021): the root holder's update `g0` is the root update; every other
    holder's update gets trust ReLU(cos(g_i, g0)), is rescaled to ||g0|| and enters a
    trust-weighted mean. The root holder's update is not one of the combined updates, so a
    round needs it and at least one other; a round without it fails.

        Attributes:
            root_holder (str): One of the study's data holders, trusted to hold the clean root data set.
            rule (AggregationType6Rule):
     """

    root_holder: str
    rule: AggregationType6Rule
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        root_holder = self.root_holder

        rule = self.rule.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "root_holder": root_holder,
            "rule": rule,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        root_holder = d.pop("root_holder")

        rule = AggregationType6Rule(d.pop("rule"))




        aggregation_type_6 = cls(
            root_holder=root_holder,
            rule=rule,
        )


        aggregation_type_6.additional_properties = d
        return aggregation_type_6

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
