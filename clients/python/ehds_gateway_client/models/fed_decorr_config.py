from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="FedDecorrConfig")



@_attrs_define
class FedDecorrConfig:
    """ 
        Attributes:
            beta (float | Unset): Weight `beta` of the decorrelation term (default 0.1). Default: 0.10000000149011612.
     """

    beta: float | Unset = 0.10000000149011612





    def to_dict(self) -> dict[str, Any]:
        beta = self.beta


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if beta is not UNSET:
            field_dict["beta"] = beta

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        beta = d.pop("beta", UNSET)

        fed_decorr_config = cls(
            beta=beta,
        )

        return fed_decorr_config

