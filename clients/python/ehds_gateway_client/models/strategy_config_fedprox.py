from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_fedprox_name import StrategyConfigFedproxName
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigFedprox")



@_attrs_define
class StrategyConfigFedprox:
    """ 
        Attributes:
            name (StrategyConfigFedproxName):
            mu (float | Unset): Proximal weight `mu` (0.01 is the usual starting point). Default: 0.009999999776482582.
     """

    name: StrategyConfigFedproxName
    mu: float | Unset = 0.009999999776482582
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        mu = self.mu


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
        })
        if mu is not UNSET:
            field_dict["mu"] = mu

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigFedproxName(d.pop("name"))




        mu = d.pop("mu", UNSET)

        strategy_config_fedprox = cls(
            name=name,
            mu=mu,
        )


        strategy_config_fedprox.additional_properties = d
        return strategy_config_fedprox

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
