from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="RecurrentRequest")



@_attrs_define
class RecurrentRequest:
    """ A recurrent network over the hourly series; its cell is the backbone's `kind`.

        Attributes:
            hidden (int):
            layers (int | Unset): Stacked layers (1 to 4, default 1).
            readout (str | Unset): `last` (default) or `mean` over observed steps.
     """

    hidden: int
    layers: int | Unset = UNSET
    readout: str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        hidden = self.hidden

        layers = self.layers

        readout = self.readout


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "hidden": hidden,
        })
        if layers is not UNSET:
            field_dict["layers"] = layers
        if readout is not UNSET:
            field_dict["readout"] = readout

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        hidden = d.pop("hidden")

        layers = d.pop("layers", UNSET)

        readout = d.pop("readout", UNSET)

        recurrent_request = cls(
            hidden=hidden,
            layers=layers,
            readout=readout,
        )

        return recurrent_request

