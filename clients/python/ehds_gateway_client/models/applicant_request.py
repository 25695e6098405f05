from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ApplicantRequest")



@_attrs_define
class ApplicantRequest:
    """ 
        Attributes:
            organisation (str):
            public_body (bool): Whether the applicant is a public-sector body or acts on behalf of one (Art. 53(2)).
     """

    organisation: str
    public_body: bool





    def to_dict(self) -> dict[str, Any]:
        organisation = self.organisation

        public_body = self.public_body


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "organisation": organisation,
            "public_body": public_body,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        organisation = d.pop("organisation")

        public_body = d.pop("public_body")

        applicant_request = cls(
            organisation=organisation,
            public_body=public_body,
        )

        return applicant_request

