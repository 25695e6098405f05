from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_fednova_name import StrategyConfigFednovaName
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigFednova")



@_attrs_define
class StrategyConfigFednova:
    """ 
        Attributes:
            name (StrategyConfigFednovaName):
            server_lr (float | Unset): Multiplies the normalised server step (1.0 = the paper's rule). Default: 1.0.
     """

    name: StrategyConfigFednovaName
    server_lr: float | Unset = 1.0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        server_lr = self.server_lr


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
        })
        if server_lr is not UNSET:
            field_dict["server_lr"] = server_lr

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigFednovaName(d.pop("name"))




        server_lr = d.pop("server_lr", UNSET)

        strategy_config_fednova = cls(
            name=name,
            server_lr=server_lr,
        )


        strategy_config_fednova.additional_properties = d
        return strategy_config_fednova

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
