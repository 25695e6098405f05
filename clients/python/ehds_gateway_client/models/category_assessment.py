from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.data_category import DataCategory






T = TypeVar("T", bound="CategoryAssessment")



@_attrs_define
class CategoryAssessment:
    """ The data-minimisation assessment of one requested category (Art. 68(1)(b), Art. 66).

        Attributes:
            category (DataCategory):
            necessary (bool):
            note (str):
     """

    category: DataCategory
    necessary: bool
    note: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        category = self.category.value

        necessary = self.necessary

        note = self.note


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "category": category,
            "necessary": necessary,
            "note": note,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        category = DataCategory(d.pop("category"))




        necessary = d.pop("necessary")

        note = d.pop("note")

        category_assessment = cls(
            category=category,
            necessary=necessary,
            note=note,
        )


        category_assessment.additional_properties = d
        return category_assessment

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
