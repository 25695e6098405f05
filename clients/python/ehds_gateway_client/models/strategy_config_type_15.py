from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_15_name import StrategyConfigType15Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType15")



@_attrs_define
class StrategyConfigType15:
    """ 
        Attributes:
            name (StrategyConfigType15Name):
            beta (float | Unset): Weight `beta` of the decorrelation term (default 0.1). Default: 0.10000000149011612.
     """

    name: StrategyConfigType15Name
    beta: float | Unset = 0.10000000149011612





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        beta = self.beta


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if beta is not UNSET:
            field_dict["beta"] = beta

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType15Name(d.pop("name"))




        beta = d.pop("beta", UNSET)

        strategy_config_type_15 = cls(
            name=name,
            beta=beta,
        )

        return strategy_config_type_15

