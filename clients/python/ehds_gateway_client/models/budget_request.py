from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="BudgetRequest")



@_attrs_define
class BudgetRequest:
    """ 
        Attributes:
            delta (float):
            epsilon (float):
            unit (str):
     """

    delta: float
    epsilon: float
    unit: str





    def to_dict(self) -> dict[str, Any]:
        delta = self.delta

        epsilon = self.epsilon

        unit = self.unit


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "delta": delta,
            "epsilon": epsilon,
            "unit": unit,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        delta = d.pop("delta")

        epsilon = d.pop("epsilon")

        unit = d.pop("unit")

        budget_request = cls(
            delta=delta,
            epsilon=epsilon,
            unit=unit,
        )

        return budget_request

