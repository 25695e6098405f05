from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="PFedMeConfig")



@_attrs_define
class PFedMeConfig:
    """ 
        Attributes:
            beta (float | Unset): Server step `beta` towards the average of the site models (1 = FedAvg averaging). Default:
                1.0.
            inner_steps (int | Unset): Gradient steps `K` on the inner (personal) problem per local step. Default: 5.
            lambda_ (float | Unset): Strength `lambda` of the tie between personal and local model. Default: 15.0.
            personal_lr (float | Unset): Step size of the inner gradient steps. Default: 0.009999999776482582.
     """

    beta: float | Unset = 1.0
    inner_steps: int | Unset = 5
    lambda_: float | Unset = 15.0
    personal_lr: float | Unset = 0.009999999776482582





    def to_dict(self) -> dict[str, Any]:
        beta = self.beta

        inner_steps = self.inner_steps

        lambda_ = self.lambda_

        personal_lr = self.personal_lr


        field_dict: dict[str, Any] = {}

        field_dict.update({
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
        beta = d.pop("beta", UNSET)

        inner_steps = d.pop("inner_steps", UNSET)

        lambda_ = d.pop("lambda", UNSET)

        personal_lr = d.pop("personal_lr", UNSET)

        p_fed_me_config = cls(
            beta=beta,
            inner_steps=inner_steps,
            lambda_=lambda_,
            personal_lr=personal_lr,
        )

        return p_fed_me_config

