from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_26_name import StrategyConfigType26Name






T = TypeVar("T", bound="StrategyConfigType26")



@_attrs_define
class StrategyConfigType26:
    """ Baseline: every site trains alone, nothing is shared.

        Attributes:
            name (StrategyConfigType26Name):
     """

    name: StrategyConfigType26Name





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType26Name(d.pop("name"))




        strategy_config_type_26 = cls(
            name=name,
        )

        return strategy_config_type_26

