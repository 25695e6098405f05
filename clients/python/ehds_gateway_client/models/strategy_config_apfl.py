from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_apfl_name import StrategyConfigApflName
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigApfl")



@_attrs_define
class StrategyConfigApfl:
    """ 
        Attributes:
            name (StrategyConfigApflName):
            alpha_init (float | Unset): Mixing weight every site starts with (paper: 0.5). Default: 0.5.
            alpha_l2 (float | Unset): Coefficient of the `l2 alpha` term added to the alpha gradient (authors' code: 0.02).
                Default: 0.019999999552965164.
            alpha_lr (float | Unset): Step size of the alpha update (FL4Health's Fed-Heart-Disease run: 0.1). Default:
                0.10000000149011612.
     """

    name: StrategyConfigApflName
    alpha_init: float | Unset = 0.5
    alpha_l2: float | Unset = 0.019999999552965164
    alpha_lr: float | Unset = 0.10000000149011612
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        alpha_init = self.alpha_init

        alpha_l2 = self.alpha_l2

        alpha_lr = self.alpha_lr


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
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
        name = StrategyConfigApflName(d.pop("name"))




        alpha_init = d.pop("alpha_init", UNSET)

        alpha_l2 = d.pop("alpha_l2", UNSET)

        alpha_lr = d.pop("alpha_lr", UNSET)

        strategy_config_apfl = cls(
            name=name,
            alpha_init=alpha_init,
            alpha_l2=alpha_l2,
            alpha_lr=alpha_lr,
        )


        strategy_config_apfl.additional_properties = d
        return strategy_config_apfl

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
