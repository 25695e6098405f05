from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="CheckBody")



@_attrs_define
class CheckBody:
    """ 
        Attributes:
            purpose (str):
            categories (list[str] | Unset):
            data_holders (list[str] | Unset):
            epsilon (float | None | Unset): Privacy budget the processing would spend.
     """

    purpose: str
    categories: list[str] | Unset = UNSET
    data_holders: list[str] | Unset = UNSET
    epsilon: float | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        purpose = self.purpose

        categories: list[str] | Unset = UNSET
        if not isinstance(self.categories, Unset):
            categories = self.categories



        data_holders: list[str] | Unset = UNSET
        if not isinstance(self.data_holders, Unset):
            data_holders = self.data_holders



        epsilon: float | None | Unset
        if isinstance(self.epsilon, Unset):
            epsilon = UNSET
        else:
            epsilon = self.epsilon


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "purpose": purpose,
        })
        if categories is not UNSET:
            field_dict["categories"] = categories
        if data_holders is not UNSET:
            field_dict["data_holders"] = data_holders
        if epsilon is not UNSET:
            field_dict["epsilon"] = epsilon

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        purpose = d.pop("purpose")

        categories = cast(list[str], d.pop("categories", UNSET))


        data_holders = cast(list[str], d.pop("data_holders", UNSET))


        def _parse_epsilon(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        epsilon = _parse_epsilon(d.pop("epsilon", UNSET))


        check_body = cls(
            purpose=purpose,
            categories=categories,
            data_holders=data_holders,
            epsilon=epsilon,
        )

        return check_body

