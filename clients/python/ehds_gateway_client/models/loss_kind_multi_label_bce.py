from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="LossKindMultiLabelBce")



@_attrs_define
class LossKindMultiLabelBce:
    """ One logit per label of a multi-label task.

        Attributes:
            pos_weight (list[float] | None | Unset):
     """

    pos_weight: list[float] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        pos_weight: list[float] | None | Unset
        if isinstance(self.pos_weight, Unset):
            pos_weight = UNSET
        elif isinstance(self.pos_weight, list):
            pos_weight = self.pos_weight


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
        def _parse_pos_weight(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                pos_weight_type_0 = cast(list[float], data)

                return pos_weight_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        pos_weight = _parse_pos_weight(d.pop("pos_weight", UNSET))


        loss_kind_multi_label_bce = cls(
            pos_weight=pos_weight,
        )


        loss_kind_multi_label_bce.additional_properties = d
        return loss_kind_multi_label_bce

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
