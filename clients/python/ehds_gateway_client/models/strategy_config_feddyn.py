from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_feddyn_name import StrategyConfigFeddynName
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigFeddyn")



@_attrs_define
class StrategyConfigFeddyn:
    """ 
        Attributes:
            name (StrategyConfigFeddynName):
            alpha (float | Unset): Dynamic regularisation weight `alpha` (> 0). Default: 0.009999999776482582.
     """

    name: StrategyConfigFeddynName
    alpha: float | Unset = 0.009999999776482582
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        alpha = self.alpha


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
        })
        if alpha is not UNSET:
            field_dict["alpha"] = alpha

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigFeddynName(d.pop("name"))




        alpha = d.pop("alpha", UNSET)

        strategy_config_feddyn = cls(
            name=name,
            alpha=alpha,
        )


        strategy_config_feddyn.additional_properties = d
        return strategy_config_feddyn

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
