from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_13_name import StrategyConfigType13Name
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigType13")



@_attrs_define
class StrategyConfigType13:
    """ 
        Attributes:
            name (StrategyConfigType13Name):
            alpha (float | Unset): Weight `alpha` of the perturbed gradient in the quasi-gradient
                `(1 - alpha) g + alpha g̃` (in [0, 1]; default 0.5). Default: 0.5.
            lambda_ (float | Unset): `lambda` (> 0) of the proximal term `(x - x_g) / lambda` and of the prox-correction
                update (default 10). Default: 10.0.
            rho (float | Unset): Radius `rho` of the gradient perturbation (>= 0; default 0.05). Default:
                0.05000000074505806.
     """

    name: StrategyConfigType13Name
    alpha: float | Unset = 0.5
    lambda_: float | Unset = 10.0
    rho: float | Unset = 0.05000000074505806





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        alpha = self.alpha

        lambda_ = self.lambda_

        rho = self.rho


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if alpha is not UNSET:
            field_dict["alpha"] = alpha
        if lambda_ is not UNSET:
            field_dict["lambda"] = lambda_
        if rho is not UNSET:
            field_dict["rho"] = rho

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType13Name(d.pop("name"))




        alpha = d.pop("alpha", UNSET)

        lambda_ = d.pop("lambda", UNSET)

        rho = d.pop("rho", UNSET)

        strategy_config_type_13 = cls(
            name=name,
            alpha=alpha,
            lambda_=lambda_,
            rho=rho,
        )

        return strategy_config_type_13

