from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.application_request import ApplicationRequest





T = TypeVar("T", bound="InformationAnswerBody")



@_attrs_define
class InformationAnswerBody:
    """ 
        Attributes:
            answer (str):
            application (ApplicationRequest | None | Unset):
     """

    answer: str
    application: ApplicationRequest | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.application_request import ApplicationRequest # noqa: PLC0415
        answer = self.answer

        application: dict[str, Any] | None | Unset
        if isinstance(self.application, Unset):
            application = UNSET
        elif isinstance(self.application, ApplicationRequest):
            application = self.application.to_dict()
        else:
            application = self.application


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "answer": answer,
        })
        if application is not UNSET:
            field_dict["application"] = application

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.application_request import ApplicationRequest # noqa: PLC0415
        d = dict(src_dict)
        answer = d.pop("answer")

        def _parse_application(data: object) -> ApplicationRequest | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                application_type_0 = ApplicationRequest.from_dict(data)



                return application_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ApplicationRequest | None | Unset, data)

        application = _parse_application(d.pop("application", UNSET))


        information_answer_body = cls(
            answer=answer,
            application=application,
        )

        return information_answer_body

