from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_2_name import StrategyConfigType2Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType2")



@_attrs_define
class StrategyConfigType2:
    """ 
        Attributes:
            name (StrategyConfigType2Name):
            server_lr (float | Unset): Global step size `lr_g` (1.0 = plain averaging of the models). Default: 1.0.
     """

    name: StrategyConfigType2Name
    server_lr: float | Unset = 1.0





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        server_lr = self.server_lr


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if server_lr is not UNSET:
            field_dict["server_lr"] = server_lr

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType2Name(d.pop("name"))




        server_lr = d.pop("server_lr", UNSET)

        strategy_config_type_2 = cls(
            name=name,
            server_lr=server_lr,
        )

        return strategy_config_type_2

