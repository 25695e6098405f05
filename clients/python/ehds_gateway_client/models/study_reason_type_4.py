from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.study_reason_type_4_code import StudyReasonType4Code






T = TypeVar("T", bound="StudyReasonType4")



@_attrs_define
class StudyReasonType4:
    """ `remaining`: the permit's unspent budget less what its other live studies reserved.

        Attributes:
            code (StudyReasonType4Code):
            epsilon_one_round (float):
            remaining (float):
     """

    code: StudyReasonType4Code
    epsilon_one_round: float
    remaining: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        code = self.code.value

        epsilon_one_round = self.epsilon_one_round

        remaining = self.remaining


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "code": code,
            "epsilon_one_round": epsilon_one_round,
            "remaining": remaining,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        code = StudyReasonType4Code(d.pop("code"))




        epsilon_one_round = d.pop("epsilon_one_round")

        remaining = d.pop("remaining")

        study_reason_type_4 = cls(
            code=code,
            epsilon_one_round=epsilon_one_round,
            remaining=remaining,
        )


        study_reason_type_4.additional_properties = d
        return study_reason_type_4

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
