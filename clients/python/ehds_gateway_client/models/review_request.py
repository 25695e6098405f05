from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.review_decision import ReviewDecision






T = TypeVar("T", bound="ReviewRequest")



@_attrs_define
class ReviewRequest:
    """ The body of `POST /v1/statistics/{id}/review`.

        Attributes:
            decision (ReviewDecision): An officer's decision on a flagged answer.
            justification (str): Why: recorded with the decision and in the audit trail.
     """

    decision: ReviewDecision
    justification: str





    def to_dict(self) -> dict[str, Any]:
        decision = self.decision.value

        justification = self.justification


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "decision": decision,
            "justification": justification,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        decision = ReviewDecision(d.pop("decision"))




        justification = d.pop("justification")

        review_request = cls(
            decision=decision,
            justification=justification,
        )

        return review_request

