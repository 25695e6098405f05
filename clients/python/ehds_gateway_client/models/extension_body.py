from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ExtensionBody")



@_attrs_define
class ExtensionBody:
    """ 
        Attributes:
            months (int): 1-3 months (Art. 68(4)).
            reasons (str): Why more time is needed; the applicant is told (Art. 68(4)).
     """

    months: int
    reasons: str





    def to_dict(self) -> dict[str, Any]:
        months = self.months

        reasons = self.reasons


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "months": months,
            "reasons": reasons,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        months = d.pop("months")

        reasons = d.pop("reasons")

        extension_body = cls(
            months=months,
            reasons=reasons,
        )

        return extension_body

