from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.backbone_request_type_3_kind import BackboneRequestType3Kind
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="BackboneRequestType3")



@_attrs_define
class BackboneRequestType3:
    """ The recurrent network over the series fused with an MLP over the static columns.

        Attributes:
            cell (str): `lstm` or `gru`.
            hidden (int):
            kind (BackboneRequestType3Kind):
            layers (int | Unset):
            readout (str | Unset):
            static_hidden (list[int] | Unset):
     """

    cell: str
    hidden: int
    kind: BackboneRequestType3Kind
    layers: int | Unset = UNSET
    readout: str | Unset = UNSET
    static_hidden: list[int] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        cell = self.cell

        hidden = self.hidden

        kind = self.kind.value

        layers = self.layers

        readout = self.readout

        static_hidden: list[int] | Unset = UNSET
        if not isinstance(self.static_hidden, Unset):
            static_hidden = self.static_hidden




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "cell": cell,
            "hidden": hidden,
            "kind": kind,
        })
        if layers is not UNSET:
            field_dict["layers"] = layers
        if readout is not UNSET:
            field_dict["readout"] = readout
        if static_hidden is not UNSET:
            field_dict["static_hidden"] = static_hidden

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cell = d.pop("cell")

        hidden = d.pop("hidden")

        kind = BackboneRequestType3Kind(d.pop("kind"))




        layers = d.pop("layers", UNSET)

        readout = d.pop("readout", UNSET)

        static_hidden = cast(list[int], d.pop("static_hidden", UNSET))


        backbone_request_type_3 = cls(
            cell=cell,
            hidden=hidden,
            kind=kind,
            layers=layers,
            readout=readout,
            static_hidden=static_hidden,
        )


        backbone_request_type_3.additional_properties = d
        return backbone_request_type_3

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
