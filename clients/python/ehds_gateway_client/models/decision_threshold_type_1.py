from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.decision_threshold_type_1_rule import DecisionThresholdType1Rule






T = TypeVar("T", bound="DecisionThresholdType1")



@_attrs_define
class DecisionThresholdType1:
    """ The threshold that maximises F1 on the holder's validation part.

        Attributes:
            rule (DecisionThresholdType1Rule):
     """

    rule: DecisionThresholdType1Rule
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        rule = self.rule.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "rule": rule,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        rule = DecisionThresholdType1Rule(d.pop("rule"))




        decision_threshold_type_1 = cls(
            rule=rule,
        )


        decision_threshold_type_1.additional_properties = d
        return decision_threshold_type_1

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
