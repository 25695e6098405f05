from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.study_reason_type_5_code import StudyReasonType5Code






T = TypeVar("T", bound="StudyReasonType5")



@_attrs_define
class StudyReasonType5:
    """ 
        Attributes:
            affordable_rounds (int):
            code (StudyReasonType5Code):
            planned_epsilon (float):
            remaining (float):
     """

    affordable_rounds: int
    code: StudyReasonType5Code
    planned_epsilon: float
    remaining: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        affordable_rounds = self.affordable_rounds

        code = self.code.value

        planned_epsilon = self.planned_epsilon

        remaining = self.remaining


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "affordable_rounds": affordable_rounds,
            "code": code,
            "planned_epsilon": planned_epsilon,
            "remaining": remaining,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        affordable_rounds = d.pop("affordable_rounds")

        code = StudyReasonType5Code(d.pop("code"))




        planned_epsilon = d.pop("planned_epsilon")

        remaining = d.pop("remaining")

        study_reason_type_5 = cls(
            affordable_rounds=affordable_rounds,
            code=code,
            planned_epsilon=planned_epsilon,
            remaining=remaining,
        )


        study_reason_type_5.additional_properties = d
        return study_reason_type_5

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
