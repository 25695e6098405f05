from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_6_name import StrategyConfigType6Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType6")



@_attrs_define
class StrategyConfigType6:
    """ 
        Attributes:
            name (StrategyConfigType6Name):
            server_lr (float | Unset): Multiplies the normalised server step (1.0 = the paper's rule). Default: 1.0.
     """

    name: StrategyConfigType6Name
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
        name = StrategyConfigType6Name(d.pop("name"))




        server_lr = d.pop("server_lr", UNSET)

        strategy_config_type_6 = cls(
            name=name,
            server_lr=server_lr,
        )

        return strategy_config_type_6

