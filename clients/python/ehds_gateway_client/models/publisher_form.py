from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="PublisherForm")



@_attrs_define
class PublisherForm:
    """ 
        Attributes:
            name (str): `foaf:name`.
            organisation (str): The holder's organisation id: the caller's own.
     """

    name: str
    organisation: str





    def to_dict(self) -> dict[str, Any]:
        name = self.name

        organisation = self.organisation


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
            "organisation": organisation,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        organisation = d.pop("organisation")

        publisher_form = cls(
            name=name,
            organisation=organisation,
        )

        return publisher_form

