from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_1_name import StrategyConfigType1Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType1")



@_attrs_define
class StrategyConfigType1:
    """ 
        Attributes:
            name (StrategyConfigType1Name):
            mu (float | Unset): Proximal weight `mu` (0.01 is the usual starting point). Default: 0.009999999776482582.
     """

    name: StrategyConfigType1Name
    mu: float | Unset = 0.009999999776482582





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        mu = self.mu


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if mu is not UNSET:
            field_dict["mu"] = mu

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType1Name(d.pop("name"))




        mu = d.pop("mu", UNSET)

        strategy_config_type_1 = cls(
            name=name,
            mu=mu,
        )

        return strategy_config_type_1

