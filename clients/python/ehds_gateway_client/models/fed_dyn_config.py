from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="FedDynConfig")



@_attrs_define
class FedDynConfig:
    """ 
        Attributes:
            alpha (float | Unset): Dynamic regularisation weight `alpha` (> 0). Default: 0.009999999776482582.
     """

    alpha: float | Unset = 0.009999999776482582





    def to_dict(self) -> dict[str, Any]:
        alpha = self.alpha


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if alpha is not UNSET:
            field_dict["alpha"] = alpha

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        alpha = d.pop("alpha", UNSET)

        fed_dyn_config = cls(
            alpha=alpha,
        )

        return fed_dyn_config

