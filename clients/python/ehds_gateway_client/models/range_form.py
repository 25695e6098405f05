from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="RangeForm")



@_attrs_define
class RangeForm:
    """ A closed numeric range.

        Attributes:
            hi (float):
            lo (float):
     """

    hi: float
    lo: float





    def to_dict(self) -> dict[str, Any]:
        hi = self.hi

        lo = self.lo


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "hi": hi,
            "lo": lo,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        hi = d.pop("hi")

        lo = d.pop("lo")

        range_form = cls(
            hi=hi,
            lo=lo,
        )

        return range_form

