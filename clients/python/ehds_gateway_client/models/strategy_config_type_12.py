from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_12_name import StrategyConfigType12Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType12")



@_attrs_define
class StrategyConfigType12:
    """ 
        Attributes:
            name (StrategyConfigType12Name):
            rho (float | Unset): Radius `rho` of the perturbation (default 0.05, as for FedSAM). Default:
                0.05000000074505806.
     """

    name: StrategyConfigType12Name
    rho: float | Unset = 0.05000000074505806





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        rho = self.rho


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if rho is not UNSET:
            field_dict["rho"] = rho

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType12Name(d.pop("name"))




        rho = d.pop("rho", UNSET)

        strategy_config_type_12 = cls(
            name=name,
            rho=rho,
        )

        return strategy_config_type_12

