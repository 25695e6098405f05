from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_19_name import StrategyConfigType19Name






T = TypeVar("T", bound="StrategyConfigType19")



@_attrs_define
class StrategyConfigType19:
    """ 
        Attributes:
            name (StrategyConfigType19Name):
     """

    name: StrategyConfigType19Name





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
        name = StrategyConfigType19Name(d.pop("name"))




        strategy_config_type_19 = cls(
            name=name,
        )

        return strategy_config_type_19

