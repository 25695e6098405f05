from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="FedOptConfig")



@_attrs_define
class FedOptConfig:
    """ The server optimiser's settings.

        Attributes:
            beta1 (float | Unset):  Default: 0.8999999761581421.
            beta2 (float | Unset):  Default: 0.9900000095367432.
            server_lr (float | Unset): Server learning rate `eta`. Default: 0.10000000149011612.
            tau (float | Unset): Adaptivity `tau`. Default: 9.999999717180685e-10.
     """

    beta1: float | Unset = 0.8999999761581421
    beta2: float | Unset = 0.9900000095367432
    server_lr: float | Unset = 0.10000000149011612
    tau: float | Unset = 9.999999717180685e-10





    def to_dict(self) -> dict[str, Any]:
        beta1 = self.beta1

        beta2 = self.beta2

        server_lr = self.server_lr

        tau = self.tau


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if beta1 is not UNSET:
            field_dict["beta1"] = beta1
        if beta2 is not UNSET:
            field_dict["beta2"] = beta2
        if server_lr is not UNSET:
            field_dict["server_lr"] = server_lr
        if tau is not UNSET:
            field_dict["tau"] = tau

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        beta1 = d.pop("beta1", UNSET)

        beta2 = d.pop("beta2", UNSET)

        server_lr = d.pop("server_lr", UNSET)

        tau = d.pop("tau", UNSET)

        fed_opt_config = cls(
            beta1=beta1,
            beta2=beta2,
            server_lr=server_lr,
            tau=tau,
        )

        return fed_opt_config

