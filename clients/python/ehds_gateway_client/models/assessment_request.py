from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="AssessmentRequest")



@_attrs_define
class AssessmentRequest:
    """ 
        Attributes:
            category (str):
            necessary (bool): Whether the category is necessary, adequate and proportionate (Art. 68(1)(b)).
            note (str | Unset):
     """

    category: str
    necessary: bool
    note: str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        category = self.category

        necessary = self.necessary

        note = self.note


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "category": category,
            "necessary": necessary,
        })
        if note is not UNSET:
            field_dict["note"] = note

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        category = d.pop("category")

        necessary = d.pop("necessary")

        note = d.pop("note", UNSET)

        assessment_request = cls(
            category=category,
            necessary=necessary,
            note=note,
        )

        return assessment_request

