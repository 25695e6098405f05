from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="FedLcConfig")



@_attrs_define
class FedLcConfig:
    """ 
        Attributes:
            tau (float | Unset): Calibration strength `tau` (default 1.0). Default: 1.0.
     """

    tau: float | Unset = 1.0





    def to_dict(self) -> dict[str, Any]:
        tau = self.tau


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if tau is not UNSET:
            field_dict["tau"] = tau

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        tau = d.pop("tau", UNSET)

        fed_lc_config = cls(
            tau=tau,
        )

        return fed_lc_config

