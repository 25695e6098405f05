from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_23_name import StrategyConfigType23Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType23")



@_attrs_define
class StrategyConfigType23:
    """ 
        Attributes:
            name (StrategyConfigType23Name):
            alpha (float | Unset): Step size `alpha` of the inner (adaptation) step, in training and at evaluation. Default:
                0.009999999776482582.
            eval_steps (int | Unset): Plain SGD steps from the global model before a site evaluates (default 1). Default: 1.
     """

    name: StrategyConfigType23Name
    alpha: float | Unset = 0.009999999776482582
    eval_steps: int | Unset = 1





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        alpha = self.alpha

        eval_steps = self.eval_steps


        field_dict: dict[str, Any] = {}

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
        name = StrategyConfigType23Name(d.pop("name"))




        alpha = d.pop("alpha", UNSET)

        eval_steps = d.pop("eval_steps", UNSET)

        strategy_config_type_23 = cls(
            name=name,
            alpha=alpha,
            eval_steps=eval_steps,
        )

        return strategy_config_type_23

