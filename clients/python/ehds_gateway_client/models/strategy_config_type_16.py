from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_16_name import StrategyConfigType16Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType16")



@_attrs_define
class StrategyConfigType16:
    """ 
        Attributes:
            name (StrategyConfigType16Name):
            mu (float | Unset): Weight of the model-contrastive term. Default: 1.0.
            temperature (float | Unset): Temperature of the contrastive term. Default: 0.5.
     """

    name: StrategyConfigType16Name
    mu: float | Unset = 1.0
    temperature: float | Unset = 0.5





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        mu = self.mu

        temperature = self.temperature


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if mu is not UNSET:
            field_dict["mu"] = mu
        if temperature is not UNSET:
            field_dict["temperature"] = temperature

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType16Name(d.pop("name"))




        mu = d.pop("mu", UNSET)

        temperature = d.pop("temperature", UNSET)

        strategy_config_type_16 = cls(
            name=name,
            mu=mu,
            temperature=temperature,
        )

        return strategy_config_type_16

