from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_14_name import StrategyConfigType14Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType14")



@_attrs_define
class StrategyConfigType14:
    """ 
        Attributes:
            name (StrategyConfigType14Name):
            tau (float | Unset): Calibration strength `tau` (default 1.0). Default: 1.0.
     """

    name: StrategyConfigType14Name
    tau: float | Unset = 1.0





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        tau = self.tau


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if tau is not UNSET:
            field_dict["tau"] = tau

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType14Name(d.pop("name"))




        tau = d.pop("tau", UNSET)

        strategy_config_type_14 = cls(
            name=name,
            tau=tau,
        )

        return strategy_config_type_14

