from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.review_decision import ReviewDecision
from typing import cast
import datetime






T = TypeVar("T", bound="Review")



@_attrs_define
class Review:
    """ 
        Attributes:
            at (datetime.datetime):
            by (str):
            decision (ReviewDecision): An officer's decision on a flagged answer.
            justification (str):
     """

    at: datetime.datetime
    by: str
    decision: ReviewDecision
    justification: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        by = self.by

        decision = self.decision.value

        justification = self.justification


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "at": at,
            "by": by,
            "decision": decision,
            "justification": justification,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))




        by = d.pop("by")

        decision = ReviewDecision(d.pop("decision"))




        justification = d.pop("justification")

        review = cls(
            at=at,
            by=by,
            decision=decision,
            justification=justification,
        )


        review.additional_properties = d
        return review

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
