from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_fedlesam_name import StrategyConfigFedlesamName
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigFedlesam")



@_attrs_define
class StrategyConfigFedlesam:
    """ 
        Attributes:
            name (StrategyConfigFedlesamName):
            rho (float | Unset): Radius `rho` of the perturbation (default 0.05, as for FedSAM). Default:
                0.05000000074505806.
     """

    name: StrategyConfigFedlesamName
    rho: float | Unset = 0.05000000074505806
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        rho = self.rho


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
        })
        if rho is not UNSET:
            field_dict["rho"] = rho

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigFedlesamName(d.pop("name"))




        rho = d.pop("rho", UNSET)

        strategy_config_fedlesam = cls(
            name=name,
            rho=rho,
        )


        strategy_config_fedlesam.additional_properties = d
        return strategy_config_fedlesam

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
