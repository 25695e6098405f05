from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="DittoConfig")



@_attrs_define
class DittoConfig:
    """ 
        Attributes:
            lambda_ (float | Unset): Pull of the personal model towards the global one. Default: 0.009999999776482582.
     """

    lambda_: float | Unset = 0.009999999776482582





    def to_dict(self) -> dict[str, Any]:
        lambda_ = self.lambda_


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if lambda_ is not UNSET:
            field_dict["lambda"] = lambda_

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        lambda_ = d.pop("lambda", UNSET)

        ditto_config = cls(
            lambda_=lambda_,
        )

        return ditto_config

