from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="InformationRequestBody")



@_attrs_define
class InformationRequestBody:
    """ 
        Attributes:
            questions (str): What the application lacks; the applicant has four weeks to answer (Art. 68(4)).
     """

    questions: str





    def to_dict(self) -> dict[str, Any]:
        questions = self.questions


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "questions": questions,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        questions = d.pop("questions")

        information_request_body = cls(
            questions=questions,
        )

        return information_request_body

