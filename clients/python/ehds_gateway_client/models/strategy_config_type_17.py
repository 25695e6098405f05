from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_17_name import StrategyConfigType17Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType17")



@_attrs_define
class StrategyConfigType17:
    """ 
        Attributes:
            name (StrategyConfigType17Name):
            lambda_ (float | Unset): Pull of the personal model towards the global one. Default: 0.009999999776482582.
     """

    name: StrategyConfigType17Name
    lambda_: float | Unset = 0.009999999776482582





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        lambda_ = self.lambda_


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if lambda_ is not UNSET:
            field_dict["lambda"] = lambda_

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType17Name(d.pop("name"))




        lambda_ = d.pop("lambda", UNSET)

        strategy_config_type_17 = cls(
            name=name,
            lambda_=lambda_,
        )

        return strategy_config_type_17

