from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_21_name import StrategyConfigType21Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType21")



@_attrs_define
class StrategyConfigType21:
    """ 
        Attributes:
            name (StrategyConfigType21Name):
            gamma (float | Unset): Weight of the personal-extractor term. Default: 1.0.
            mu (float | Unset): Weight of the shared-extractor term. Default: 1.0.
            temperature (float | Unset): Temperature of both contrastive terms. Default: 0.5.
     """

    name: StrategyConfigType21Name
    gamma: float | Unset = 1.0
    mu: float | Unset = 1.0
    temperature: float | Unset = 0.5





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        gamma = self.gamma

        mu = self.mu

        temperature = self.temperature


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if gamma is not UNSET:
            field_dict["gamma"] = gamma
        if mu is not UNSET:
            field_dict["mu"] = mu
        if temperature is not UNSET:
            field_dict["temperature"] = temperature

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType21Name(d.pop("name"))




        gamma = d.pop("gamma", UNSET)

        mu = d.pop("mu", UNSET)

        temperature = d.pop("temperature", UNSET)

        strategy_config_type_21 = cls(
            name=name,
            gamma=gamma,
            mu=mu,
            temperature=temperature,
        )

        return strategy_config_type_21

