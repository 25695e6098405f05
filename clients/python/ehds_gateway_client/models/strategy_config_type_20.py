from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_20_name import StrategyConfigType20Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType20")



@_attrs_define
class StrategyConfigType20:
    """ 
        Attributes:
            name (StrategyConfigType20Name):
            alpha_init (float | Unset): Mixing weight every site starts with (paper: 0.5). Default: 0.5.
            alpha_l2 (float | Unset): Coefficient of the `l2 alpha` term added to the alpha gradient (authors' code: 0.02).
                Default: 0.019999999552965164.
            alpha_lr (float | Unset): Step size of the alpha update (FL4Health's Fed-Heart-Disease run: 0.1). Default:
                0.10000000149011612.
     """

    name: StrategyConfigType20Name
    alpha_init: float | Unset = 0.5
    alpha_l2: float | Unset = 0.019999999552965164
    alpha_lr: float | Unset = 0.10000000149011612





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        alpha_init = self.alpha_init

        alpha_l2 = self.alpha_l2

        alpha_lr = self.alpha_lr


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if alpha_init is not UNSET:
            field_dict["alpha_init"] = alpha_init
        if alpha_l2 is not UNSET:
            field_dict["alpha_l2"] = alpha_l2
        if alpha_lr is not UNSET:
            field_dict["alpha_lr"] = alpha_lr

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType20Name(d.pop("name"))




        alpha_init = d.pop("alpha_init", UNSET)

        alpha_l2 = d.pop("alpha_l2", UNSET)

        alpha_lr = d.pop("alpha_lr", UNSET)

        strategy_config_type_20 = cls(
            name=name,
            alpha_init=alpha_init,
            alpha_l2=alpha_l2,
            alpha_lr=alpha_lr,
        )

        return strategy_config_type_20

