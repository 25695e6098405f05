from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.loss_kind_bce_with_logits import LossKindBceWithLogits





T = TypeVar("T", bound="LossKindType0")



@_attrs_define
class LossKindType0:
    """ One logit per example, labels in {0, 1}.

        Attributes:
            bce_with_logits (LossKindBceWithLogits): One logit per example, labels in {0, 1}.
     """

    bce_with_logits: LossKindBceWithLogits
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.loss_kind_bce_with_logits import LossKindBceWithLogits # noqa: PLC0415
        bce_with_logits = self.bce_with_logits.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "BceWithLogits": bce_with_logits,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.loss_kind_bce_with_logits import LossKindBceWithLogits # noqa: PLC0415
        d = dict(src_dict)
        bce_with_logits = LossKindBceWithLogits.from_dict(d.pop("BceWithLogits"))




        loss_kind_type_0 = cls(
            bce_with_logits=bce_with_logits,
        )


        loss_kind_type_0.additional_properties = d
        return loss_kind_type_0

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
