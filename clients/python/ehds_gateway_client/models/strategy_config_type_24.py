from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_24_name import StrategyConfigType24Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType24")



@_attrs_define
class StrategyConfigType24:
    """ 
        Attributes:
            name (StrategyConfigType24Name):
            beta (float | Unset): Server step `beta` towards the average of the site models (1 = FedAvg averaging). Default:
                1.0.
            inner_steps (int | Unset): Gradient steps `K` on the inner (personal) problem per local step. Default: 5.
            lambda_ (float | Unset): Strength `lambda` of the tie between personal and local model. Default: 15.0.
            personal_lr (float | Unset): Step size of the inner gradient steps. Default: 0.009999999776482582.
     """

    name: StrategyConfigType24Name
    beta: float | Unset = 1.0
    inner_steps: int | Unset = 5
    lambda_: float | Unset = 15.0
    personal_lr: float | Unset = 0.009999999776482582





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        beta = self.beta

        inner_steps = self.inner_steps

        lambda_ = self.lambda_

        personal_lr = self.personal_lr


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if beta is not UNSET:
            field_dict["beta"] = beta
        if inner_steps is not UNSET:
            field_dict["inner_steps"] = inner_steps
        if lambda_ is not UNSET:
            field_dict["lambda"] = lambda_
        if personal_lr is not UNSET:
            field_dict["personal_lr"] = personal_lr

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType24Name(d.pop("name"))




        beta = d.pop("beta", UNSET)

        inner_steps = d.pop("inner_steps", UNSET)

        lambda_ = d.pop("lambda", UNSET)

        personal_lr = d.pop("personal_lr", UNSET)

        strategy_config_type_24 = cls(
            name=name,
            beta=beta,
            inner_steps=inner_steps,
            lambda_=lambda_,
            personal_lr=personal_lr,
        )

        return strategy_config_type_24

