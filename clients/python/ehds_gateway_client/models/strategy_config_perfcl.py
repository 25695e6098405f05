from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_perfcl_name import StrategyConfigPerfclName
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigPerfcl")



@_attrs_define
class StrategyConfigPerfcl:
    """ 
        Attributes:
            name (StrategyConfigPerfclName):
            gamma (float | Unset): Weight of the personal-extractor term. Default: 1.0.
            mu (float | Unset): Weight of the shared-extractor term. Default: 1.0.
            temperature (float | Unset): Temperature of both contrastive terms. Default: 0.5.
     """

    name: StrategyConfigPerfclName
    gamma: float | Unset = 1.0
    mu: float | Unset = 1.0
    temperature: float | Unset = 0.5
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        gamma = self.gamma

        mu = self.mu

        temperature = self.temperature


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
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
        name = StrategyConfigPerfclName(d.pop("name"))




        gamma = d.pop("gamma", UNSET)

        mu = d.pop("mu", UNSET)

        temperature = d.pop("temperature", UNSET)

        strategy_config_perfcl = cls(
            name=name,
            gamma=gamma,
            mu=mu,
            temperature=temperature,
        )


        strategy_config_perfcl.additional_properties = d
        return strategy_config_perfcl

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
