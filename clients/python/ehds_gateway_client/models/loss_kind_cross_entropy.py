from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="LossKindCrossEntropy")



@_attrs_define
class LossKindCrossEntropy:
    """ One logit per class, labels are class indices.

        Attributes:
            class_weights (list[float] | None | Unset):
     """

    class_weights: list[float] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        class_weights: list[float] | None | Unset
        if isinstance(self.class_weights, Unset):
            class_weights = UNSET
        elif isinstance(self.class_weights, list):
            class_weights = self.class_weights


        else:
            class_weights = self.class_weights


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
        })
        if class_weights is not UNSET:
            field_dict["class_weights"] = class_weights

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_class_weights(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                class_weights_type_0 = cast(list[float], data)

                return class_weights_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        class_weights = _parse_class_weights(d.pop("class_weights", UNSET))


        loss_kind_cross_entropy = cls(
            class_weights=class_weights,
        )


        loss_kind_cross_entropy.additional_properties = d
        return loss_kind_cross_entropy

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
