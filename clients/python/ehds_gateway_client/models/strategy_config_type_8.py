from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_8_name import StrategyConfigType8Name
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="StrategyConfigType8")



@_attrs_define
class StrategyConfigType8:
    """ 
        Attributes:
            name (StrategyConfigType8Name):
            eps (float | Unset): `eps` in the denominator of `eta_g` (paper: 1e-3 for neural networks). Default: 0.001.
            example_weighted (bool | Unset): Example-weighted mean instead of the paper's uniform mean. Default: False.
            max_step (float | None | Unset): Upper bound on `eta_g` (`None`: the paper's unbounded rule).
     """

    name: StrategyConfigType8Name
    eps: float | Unset = 0.001
    example_weighted: bool | Unset = False
    max_step: float | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        eps = self.eps

        example_weighted = self.example_weighted

        max_step: float | None | Unset
        if isinstance(self.max_step, Unset):
            max_step = UNSET
        else:
            max_step = self.max_step


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if eps is not UNSET:
            field_dict["eps"] = eps
        if example_weighted is not UNSET:
            field_dict["example_weighted"] = example_weighted
        if max_step is not UNSET:
            field_dict["max_step"] = max_step

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType8Name(d.pop("name"))




        eps = d.pop("eps", UNSET)

        example_weighted = d.pop("example_weighted", UNSET)

        def _parse_max_step(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_step = _parse_max_step(d.pop("max_step", UNSET))


        strategy_config_type_8 = cls(
            name=name,
            eps=eps,
            example_weighted=example_weighted,
            max_step=max_step,
        )

        return strategy_config_type_8

