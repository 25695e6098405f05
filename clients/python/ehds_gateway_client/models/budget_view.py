from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.budget_unit import BudgetUnit






T = TypeVar("T", bound="BudgetView")



@_attrs_define
class BudgetView:
    """ 
        Attributes:
            delta (float):
            epsilon_remaining (float):
            epsilon_spent (float):
            epsilon_total (float):
            unit (BudgetUnit): What one unit of privacy protects: a single record, or a whole data holder's contribution.
     """

    delta: float
    epsilon_remaining: float
    epsilon_spent: float
    epsilon_total: float
    unit: BudgetUnit
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        delta = self.delta

        epsilon_remaining = self.epsilon_remaining

        epsilon_spent = self.epsilon_spent

        epsilon_total = self.epsilon_total

        unit = self.unit.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "delta": delta,
            "epsilon_remaining": epsilon_remaining,
            "epsilon_spent": epsilon_spent,
            "epsilon_total": epsilon_total,
            "unit": unit,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        delta = d.pop("delta")

        epsilon_remaining = d.pop("epsilon_remaining")

        epsilon_spent = d.pop("epsilon_spent")

        epsilon_total = d.pop("epsilon_total")

        unit = BudgetUnit(d.pop("unit"))




        budget_view = cls(
            delta=delta,
            epsilon_remaining=epsilon_remaining,
            epsilon_spent=epsilon_spent,
            epsilon_total=epsilon_total,
            unit=unit,
        )


        budget_view.additional_properties = d
        return budget_view

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
