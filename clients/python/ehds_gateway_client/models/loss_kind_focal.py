from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="LossKindFocal")



@_attrs_define
class LossKindFocal:
    """ Focal loss; binary (one logit) or multi-class (one logit per class).

        Attributes:
            gamma (float):
            alpha (float | None | Unset):
     """

    gamma: float
    alpha: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        gamma = self.gamma

        alpha: float | None | Unset
        if isinstance(self.alpha, Unset):
            alpha = UNSET
        else:
            alpha = self.alpha


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "gamma": gamma,
        })
        if alpha is not UNSET:
            field_dict["alpha"] = alpha

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        gamma = d.pop("gamma")

        def _parse_alpha(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        alpha = _parse_alpha(d.pop("alpha", UNSET))


        loss_kind_focal = cls(
            gamma=gamma,
            alpha=alpha,
        )


        loss_kind_focal.additional_properties = d
        return loss_kind_focal

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
