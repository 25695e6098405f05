from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_fedspeed_name import StrategyConfigFedspeedName
from ..types import UNSET, Unset






T = TypeVar("T", bound="StrategyConfigFedspeed")



@_attrs_define
class StrategyConfigFedspeed:
    """ 
        Attributes:
            name (StrategyConfigFedspeedName):
            alpha (float | Unset): Weight `alpha` of the perturbed gradient in the quasi-gradient
                `(1 - alpha) g + alpha g̃` (in [0, 1]; default 0.5). Default: 0.5.
            lambda_ (float | Unset): `lambda` (> 0) of the proximal term `(x - x_g) / lambda` and of the prox-correction
                update (default 10). Default: 10.0.
            rho (float | Unset): Radius `rho` of the gradient perturbation (>= 0; default 0.05). Default:
                0.05000000074505806.
     """

    name: StrategyConfigFedspeedName
    alpha: float | Unset = 0.5
    lambda_: float | Unset = 10.0
    rho: float | Unset = 0.05000000074505806
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        alpha = self.alpha

        lambda_ = self.lambda_

        rho = self.rho


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
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
        name = StrategyConfigFedspeedName(d.pop("name"))




        alpha = d.pop("alpha", UNSET)

        lambda_ = d.pop("lambda", UNSET)

        rho = d.pop("rho", UNSET)

        strategy_config_fedspeed = cls(
            name=name,
            alpha=alpha,
            lambda_=lambda_,
            rho=rho,
        )


        strategy_config_fedspeed.additional_properties = d
        return strategy_config_fedspeed

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
