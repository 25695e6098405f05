from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.loss_kind_cross_entropy import LossKindCrossEntropy





T = TypeVar("T", bound="LossKindType1")



@_attrs_define
class LossKindType1:
    """ One logit per class, labels are class indices.

        Attributes:
            cross_entropy (LossKindCrossEntropy): One logit per class, labels are class indices.
     """

    cross_entropy: LossKindCrossEntropy
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.loss_kind_cross_entropy import LossKindCrossEntropy # noqa: PLC0415
        cross_entropy = self.cross_entropy.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "CrossEntropy": cross_entropy,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.loss_kind_cross_entropy import LossKindCrossEntropy # noqa: PLC0415
        d = dict(src_dict)
        cross_entropy = LossKindCrossEntropy.from_dict(d.pop("CrossEntropy"))




        loss_kind_type_1 = cls(
            cross_entropy=cross_entropy,
        )


        loss_kind_type_1.additional_properties = d
        return loss_kind_type_1

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
