from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_per_fedavg_name import StrategyConfigPerFedavgName
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigPerFedavg")



@_attrs_define
class StrategyConfigPerFedavg:
    """ 
        Attributes:
            name (StrategyConfigPerFedavgName):
            alpha (float | Unset): Step size `alpha` of the inner (adaptation) step, in training and at evaluation. Default:
                0.009999999776482582.
            eval_steps (int | Unset): Plain SGD steps from the global model before a site evaluates (default 1). Default: 1.
     """

    name: StrategyConfigPerFedavgName
    alpha: float | Unset = 0.009999999776482582
    eval_steps: int | Unset = 1
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        alpha = self.alpha

        eval_steps = self.eval_steps


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
        })
        if alpha is not UNSET:
            field_dict["alpha"] = alpha
        if eval_steps is not UNSET:
            field_dict["eval_steps"] = eval_steps

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigPerFedavgName(d.pop("name"))




        alpha = d.pop("alpha", UNSET)

        eval_steps = d.pop("eval_steps", UNSET)

        strategy_config_per_fedavg = cls(
            name=name,
            alpha=alpha,
            eval_steps=eval_steps,
        )


        strategy_config_per_fedavg.additional_properties = d
        return strategy_config_per_fedavg

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
