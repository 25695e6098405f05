from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="FedProxConfig")



@_attrs_define
class FedProxConfig:
    """ 
        Attributes:
            mu (float | Unset): Proximal weight `mu` (0.01 is the usual starting point). Default: 0.009999999776482582.
     """

    mu: float | Unset = 0.009999999776482582





    def to_dict(self) -> dict[str, Any]:
        mu = self.mu


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if mu is not UNSET:
            field_dict["mu"] = mu

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        mu = d.pop("mu", UNSET)

        fed_prox_config = cls(
            mu=mu,
        )

        return fed_prox_config

