from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_7_name import StrategyConfigType7Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType7")



@_attrs_define
class StrategyConfigType7:
    """ 
        Attributes:
            name (StrategyConfigType7Name):
            alpha (float | Unset): Dynamic regularisation weight `alpha` (> 0). Default: 0.009999999776482582.
     """

    name: StrategyConfigType7Name
    alpha: float | Unset = 0.009999999776482582





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        alpha = self.alpha


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if alpha is not UNSET:
            field_dict["alpha"] = alpha

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType7Name(d.pop("name"))




        alpha = d.pop("alpha", UNSET)

        strategy_config_type_7 = cls(
            name=name,
            alpha=alpha,
        )

        return strategy_config_type_7

