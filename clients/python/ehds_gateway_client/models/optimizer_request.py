from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="OptimizerRequest")



@_attrs_define
class OptimizerRequest:
    """ 
        Attributes:
            lr (float):
            name (str): `sgd`, `adam` or `adamw`.
            weight_decay (float | None | Unset):
     """

    lr: float
    name: str
    weight_decay: float | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        lr = self.lr

        name = self.name

        weight_decay: float | None | Unset
        if isinstance(self.weight_decay, Unset):
            weight_decay = UNSET
        else:
            weight_decay = self.weight_decay


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "lr": lr,
            "name": name,
        })
        if weight_decay is not UNSET:
            field_dict["weight_decay"] = weight_decay

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        lr = d.pop("lr")

        name = d.pop("name")

        def _parse_weight_decay(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        weight_decay = _parse_weight_decay(d.pop("weight_decay", UNSET))


        optimizer_request = cls(
            lr=lr,
            name=name,
            weight_decay=weight_decay,
        )

        return optimizer_request

