from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_feddecorr_name import StrategyConfigFeddecorrName
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigFeddecorr")



@_attrs_define
class StrategyConfigFeddecorr:
    """ 
        Attributes:
            name (StrategyConfigFeddecorrName):
            beta (float | Unset): Weight `beta` of the decorrelation term (default 0.1). Default: 0.10000000149011612.
     """

    name: StrategyConfigFeddecorrName
    beta: float | Unset = 0.10000000149011612
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        beta = self.beta


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
        })
        if beta is not UNSET:
            field_dict["beta"] = beta

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigFeddecorrName(d.pop("name"))




        beta = d.pop("beta", UNSET)

        strategy_config_feddecorr = cls(
            name=name,
            beta=beta,
        )


        strategy_config_feddecorr.additional_properties = d
        return strategy_config_feddecorr

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
