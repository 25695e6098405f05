from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="OutputCheckRequest")



@_attrs_define
class OutputCheckRequest:
    """ 
        Attributes:
            min_samples_per_site (int):
            min_sites (int):
     """

    min_samples_per_site: int
    min_sites: int





    def to_dict(self) -> dict[str, Any]:
        min_samples_per_site = self.min_samples_per_site

        min_sites = self.min_sites


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "min_samples_per_site": min_samples_per_site,
            "min_sites": min_sites,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        min_samples_per_site = d.pop("min_samples_per_site")

        min_sites = d.pop("min_sites")

        output_check_request = cls(
            min_samples_per_site=min_samples_per_site,
            min_sites=min_sites,
        )

        return output_check_request

