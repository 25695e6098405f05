from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="LossKindBceWithLogits")



@_attrs_define
class LossKindBceWithLogits:
    """ One logit per example, labels in {0, 1}.

        Attributes:
            pos_weight (float | None | Unset):
     """

    pos_weight: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        pos_weight: float | None | Unset
        if isinstance(self.pos_weight, Unset):
            pos_weight = UNSET
        else:
            pos_weight = self.pos_weight


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
        })
        if pos_weight is not UNSET:
            field_dict["pos_weight"] = pos_weight

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_pos_weight(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        pos_weight = _parse_pos_weight(d.pop("pos_weight", UNSET))


        loss_kind_bce_with_logits = cls(
            pos_weight=pos_weight,
        )


        loss_kind_bce_with_logits.additional_properties = d
        return loss_kind_bce_with_logits

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
