from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.backbone_request_type_4_kind import BackboneRequestType4Kind
from typing import cast






T = TypeVar("T", bound="BackboneRequestType4")



@_attrs_define
class BackboneRequestType4:
    """ A ResNet-style CNN with GroupNorm over the specification's image `[channels, height,
    width]`, or, without one, over the series as a `[2, steps, channels]` image (values and
    presence mask). Every stage after the first halves the image.

        Attributes:
            groups (int):
            kind (BackboneRequestType4Kind):
            stages (list[int]):
     """

    groups: int
    kind: BackboneRequestType4Kind
    stages: list[int]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        groups = self.groups

        kind = self.kind.value

        stages = self.stages




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "groups": groups,
            "kind": kind,
            "stages": stages,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        groups = d.pop("groups")

        kind = BackboneRequestType4Kind(d.pop("kind"))




        stages = cast(list[int], d.pop("stages"))


        backbone_request_type_4 = cls(
            groups=groups,
            kind=kind,
            stages=stages,
        )


        backbone_request_type_4.additional_properties = d
        return backbone_request_type_4

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
