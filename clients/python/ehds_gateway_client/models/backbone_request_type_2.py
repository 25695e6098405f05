from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.backbone_request_type_2_kind import BackboneRequestType2Kind
from ..types import UNSET, Unset






T = TypeVar("T", bound="BackboneRequestType2")



@_attrs_define
class BackboneRequestType2:
    """ An LSTM over the hourly series (masked missing bins).

        Attributes:
            hidden (int):
            kind (BackboneRequestType2Kind):
            layers (int | Unset): Stacked layers (1 to 4, default 1).
            readout (str | Unset): `last` (default) or `mean` over observed steps.
     """

    hidden: int
    kind: BackboneRequestType2Kind
    layers: int | Unset = UNSET
    readout: str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        hidden = self.hidden

        kind = self.kind.value

        layers = self.layers

        readout = self.readout


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "hidden": hidden,
            "kind": kind,
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

        kind = BackboneRequestType2Kind(d.pop("kind"))




        layers = d.pop("layers", UNSET)

        readout = d.pop("readout", UNSET)

        backbone_request_type_2 = cls(
            hidden=hidden,
            kind=kind,
            layers=layers,
            readout=readout,
        )

        return backbone_request_type_2

