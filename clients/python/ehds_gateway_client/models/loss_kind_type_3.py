from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.loss_kind_multi_label_bce import LossKindMultiLabelBce





T = TypeVar("T", bound="LossKindType3")



@_attrs_define
class LossKindType3:
    """ One logit per label of a multi-label task.

        Attributes:
            multi_label_bce (LossKindMultiLabelBce): One logit per label of a multi-label task.
     """

    multi_label_bce: LossKindMultiLabelBce
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.loss_kind_multi_label_bce import LossKindMultiLabelBce # noqa: PLC0415
        multi_label_bce = self.multi_label_bce.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "MultiLabelBce": multi_label_bce,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.loss_kind_multi_label_bce import LossKindMultiLabelBce # noqa: PLC0415
        d = dict(src_dict)
        multi_label_bce = LossKindMultiLabelBce.from_dict(d.pop("MultiLabelBce"))




        loss_kind_type_3 = cls(
            multi_label_bce=multi_label_bce,
        )


        loss_kind_type_3.additional_properties = d
        return loss_kind_type_3

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
