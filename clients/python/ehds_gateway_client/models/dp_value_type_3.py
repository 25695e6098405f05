from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.dp_value_type_3_kind import DpValueType3Kind
from typing import cast






T = TypeVar("T", bound="DpValueType3")



@_attrs_define
class DpValueType3:
    """ Quantiles of the noisy histogram (negative bins set to 0): post-processing.

        Attributes:
            kind (DpValueType3Kind):
            probabilities (list[float]):
            values (list[float | None]):
     """

    kind: DpValueType3Kind
    probabilities: list[float]
    values: list[float | None]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        kind = self.kind.value

        probabilities = self.probabilities



        values = []
        for values_item_data in self.values:
            values_item: float | None
            values_item = values_item_data
            values.append(values_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "kind": kind,
            "probabilities": probabilities,
            "values": values,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        kind = DpValueType3Kind(d.pop("kind"))




        probabilities = cast(list[float], d.pop("probabilities"))


        values = []
        _values = d.pop("values")
        for values_item_data in (_values):
            def _parse_values_item(data: object) -> float | None:
                if data is None:
                    return data
                return cast(float | None, data)

            values_item = _parse_values_item(values_item_data)

            values.append(values_item)


        dp_value_type_3 = cls(
            kind=kind,
            probabilities=probabilities,
            values=values,
        )


        dp_value_type_3.additional_properties = d
        return dp_value_type_3

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
