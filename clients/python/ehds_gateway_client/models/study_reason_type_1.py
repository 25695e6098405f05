from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.dp_level import DpLevel
from ..models.dp_requirement import DpRequirement
from ..models.study_reason_type_1_code import StudyReasonType1Code
from typing import cast






T = TypeVar("T", bound="StudyReasonType1")



@_attrs_define
class StudyReasonType1:
    """ The permit's `dp_requirement` does not allow the study's DP level.

        Attributes:
            code (StudyReasonType1Code):
            dp_requirement (DpRequirement): What the HDAB's decision requires of every study's privacy plan under a permit.
                Amendable
                like the other terms. Permits issued before this term existed allow client- or record-level
                DP, which is also the default of a new decision.
            level (DpLevel): Which unit differential privacy protects in a study.
            permitted_levels (list[DpLevel]):
     """

    code: StudyReasonType1Code
    dp_requirement: DpRequirement
    level: DpLevel
    permitted_levels: list[DpLevel]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        code = self.code.value

        dp_requirement = self.dp_requirement.value

        level = self.level.value

        permitted_levels = []
        for permitted_levels_item_data in self.permitted_levels:
            permitted_levels_item = permitted_levels_item_data.value
            permitted_levels.append(permitted_levels_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "code": code,
            "dp_requirement": dp_requirement,
            "level": level,
            "permitted_levels": permitted_levels,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        code = StudyReasonType1Code(d.pop("code"))




        dp_requirement = DpRequirement(d.pop("dp_requirement"))




        level = DpLevel(d.pop("level"))




        permitted_levels = []
        _permitted_levels = d.pop("permitted_levels")
        for permitted_levels_item_data in (_permitted_levels):
            permitted_levels_item = DpLevel(permitted_levels_item_data)



            permitted_levels.append(permitted_levels_item)


        study_reason_type_1 = cls(
            code=code,
            dp_requirement=dp_requirement,
            level=level,
            permitted_levels=permitted_levels,
        )


        study_reason_type_1.additional_properties = d
        return study_reason_type_1

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
