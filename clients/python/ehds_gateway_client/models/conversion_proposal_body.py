from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="ConversionProposalBody")



@_attrs_define
class ConversionProposalBody:
    """ 
        Attributes:
            reasons (str): Why statistics meet the applicant's need (Art. 69).
     """

    reasons: str





    def to_dict(self) -> dict[str, Any]:
        reasons = self.reasons


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "reasons": reasons,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reasons = d.pop("reasons")

        conversion_proposal_body = cls(
            reasons=reasons,
        )

        return conversion_proposal_body

