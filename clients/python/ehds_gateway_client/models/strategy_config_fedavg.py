from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_fedavg_name import StrategyConfigFedavgName






T = TypeVar("T", bound="StrategyConfigFedavg")



@_attrs_define
class StrategyConfigFedavg:
    """ Plain FedAvg (McMahan et al. 2017): no settings.

        Attributes:
            name (StrategyConfigFedavgName):
     """

    name: StrategyConfigFedavgName
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigFedavgName(d.pop("name"))




        strategy_config_fedavg = cls(
            name=name,
        )


        strategy_config_fedavg.additional_properties = d
        return strategy_config_fedavg

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
