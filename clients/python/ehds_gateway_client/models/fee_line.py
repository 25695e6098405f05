from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="FeeLine")



@_attrs_define
class FeeLine:
    """ One line of a fee estimate, in minor units of its currency.

        Attributes:
            amount_minor (int):
            description (str):
            data_holder (None | str | Unset):
     """

    amount_minor: int
    description: str
    data_holder: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        amount_minor = self.amount_minor

        description = self.description

        data_holder: None | str | Unset
        if isinstance(self.data_holder, Unset):
            data_holder = UNSET
        else:
            data_holder = self.data_holder


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "amount_minor": amount_minor,
            "description": description,
        })
        if data_holder is not UNSET:
            field_dict["data_holder"] = data_holder

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        amount_minor = d.pop("amount_minor")

        description = d.pop("description")

        def _parse_data_holder(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        data_holder = _parse_data_holder(d.pop("data_holder", UNSET))


        fee_line = cls(
            amount_minor=amount_minor,
            description=description,
            data_holder=data_holder,
        )

        return fee_line

