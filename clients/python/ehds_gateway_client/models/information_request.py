from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.application_status import ApplicationStatus
from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="InformationRequest")



@_attrs_define
class InformationRequest:
    """ A request for information: the application is incomplete until it is answered.

        Attributes:
            due_at (datetime.datetime):
            questions (str):
            requested_at (datetime.datetime):
            requested_by (str):
            resumes (ApplicationStatus): Where an application stands in the procedure (see [`procedure`]).
            answer (None | str | Unset):
            answered_at (datetime.datetime | None | Unset):
     """

    due_at: datetime.datetime
    questions: str
    requested_at: datetime.datetime
    requested_by: str
    resumes: ApplicationStatus
    answer: None | str | Unset = UNSET
    answered_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        due_at = self.due_at.isoformat()

        questions = self.questions

        requested_at = self.requested_at.isoformat()

        requested_by = self.requested_by

        resumes = self.resumes.value

        answer: None | str | Unset
        if isinstance(self.answer, Unset):
            answer = UNSET
        else:
            answer = self.answer

        answered_at: None | str | Unset
        if isinstance(self.answered_at, Unset):
            answered_at = UNSET
        elif isinstance(self.answered_at, datetime.datetime):
            answered_at = self.answered_at.isoformat()
        else:
            answered_at = self.answered_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "due_at": due_at,
            "questions": questions,
            "requested_at": requested_at,
            "requested_by": requested_by,
            "resumes": resumes,
        })
        if answer is not UNSET:
            field_dict["answer"] = answer
        if answered_at is not UNSET:
            field_dict["answered_at"] = answered_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        due_at = datetime.datetime.fromisoformat(d.pop("due_at"))




        questions = d.pop("questions")

        requested_at = datetime.datetime.fromisoformat(d.pop("requested_at"))




        requested_by = d.pop("requested_by")

        resumes = ApplicationStatus(d.pop("resumes"))




        def _parse_answer(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        answer = _parse_answer(d.pop("answer", UNSET))


        def _parse_answered_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                answered_at_type_0 = datetime.datetime.fromisoformat(data)



                return answered_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        answered_at = _parse_answered_at(d.pop("answered_at", UNSET))


        information_request = cls(
            due_at=due_at,
            questions=questions,
            requested_at=requested_at,
            requested_by=requested_by,
            resumes=resumes,
            answer=answer,
            answered_at=answered_at,
        )


        information_request.additional_properties = d
        return information_request

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
