from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="FedNovaConfig")



@_attrs_define
class FedNovaConfig:
    """ 
        Attributes:
            server_lr (float | Unset): Multiplies the normalised server step (1.0 = the paper's rule). Default: 1.0.
     """

    server_lr: float | Unset = 1.0





    def to_dict(self) -> dict[str, Any]:
        server_lr = self.server_lr


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if server_lr is not UNSET:
            field_dict["server_lr"] = server_lr

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        server_lr = d.pop("server_lr", UNSET)

        fed_nova_config = cls(
            server_lr=server_lr,
        )

        return fed_nova_config

