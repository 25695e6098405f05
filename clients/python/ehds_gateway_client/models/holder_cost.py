from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="HolderCost")



@_attrs_define
class HolderCost:
    """ A data holder's estimate of its costs, passed through (Art. 62(2)).

        Attributes:
            amount_minor (int):
            data_holder (str): An organisation: an applicant's organisation or a data holder. Matches the organisation claim
                of the caller's token.
     """

    amount_minor: int
    data_holder: str





    def to_dict(self) -> dict[str, Any]:
        amount_minor = self.amount_minor

        data_holder = self.data_holder


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "amount_minor": amount_minor,
            "data_holder": data_holder,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        amount_minor = d.pop("amount_minor")

        data_holder = d.pop("data_holder")

        holder_cost = cls(
            amount_minor=amount_minor,
            data_holder=data_holder,
        )

        return holder_cost

