from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.fed_mode_sign import FedModeSign
from ..models.strategy_config_type_10_name import StrategyConfigType10Name
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="StrategyConfigType10")



@_attrs_define
class StrategyConfigType10:
    """ 
        Attributes:
            name (StrategyConfigType10Name):
            curve_steps (int | None | Unset): Mini-batch steps that train the control point; `None` = the round's local
                steps.
            lambda_ (float | Unset): `lambda >= 0` of the server objective (0 = loss-weighted curve mean). Default: 0.0.
            sign (FedModeSign | Unset): Which sign the server's `lambda ||Theta - theta_g||^2` term carries (see the module
                docs).
     """

    name: StrategyConfigType10Name
    curve_steps: int | None | Unset = UNSET
    lambda_: float | Unset = 0.0
    sign: FedModeSign | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        curve_steps: int | None | Unset
        if isinstance(self.curve_steps, Unset):
            curve_steps = UNSET
        else:
            curve_steps = self.curve_steps

        lambda_ = self.lambda_

        sign: str | Unset = UNSET
        if not isinstance(self.sign, Unset):
            sign = self.sign.value



        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if curve_steps is not UNSET:
            field_dict["curve_steps"] = curve_steps
        if lambda_ is not UNSET:
            field_dict["lambda"] = lambda_
        if sign is not UNSET:
            field_dict["sign"] = sign

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType10Name(d.pop("name"))




        def _parse_curve_steps(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        curve_steps = _parse_curve_steps(d.pop("curve_steps", UNSET))


        lambda_ = d.pop("lambda", UNSET)

        _sign = d.pop("sign", UNSET)
        sign: FedModeSign | Unset
        if isinstance(_sign,  Unset):
            sign = UNSET
        else:
            sign = FedModeSign(_sign)




        strategy_config_type_10 = cls(
            name=name,
            curve_steps=curve_steps,
            lambda_=lambda_,
            sign=sign,
        )

        return strategy_config_type_10

