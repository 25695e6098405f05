from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="NoisyValue")



@_attrs_define
class NoisyValue:
    """ A released noisy value with its noise's spread.

        Attributes:
            coverage (float):
            half_width_95 (float): Half-width of the 95% interval: value ± half_width holds the exact value with
                probability `coverage` (≥ 0.95).
            sd (float): SD of the added noise.
            value (float):
     """

    coverage: float
    half_width_95: float
    sd: float
    value: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        coverage = self.coverage

        half_width_95 = self.half_width_95

        sd = self.sd

        value = self.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "coverage": coverage,
            "half_width_95": half_width_95,
            "sd": sd,
            "value": value,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        coverage = d.pop("coverage")

        half_width_95 = d.pop("half_width_95")

        sd = d.pop("sd")

        value = d.pop("value")

        noisy_value = cls(
            coverage=coverage,
            half_width_95=half_width_95,
            sd=sd,
            value=value,
        )


        noisy_value.additional_properties = d
        return noisy_value

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
