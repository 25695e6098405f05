from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.budget_unit import BudgetUnit
from ..models.study_reason_type_0_code import StudyReasonType0Code






T = TypeVar("T", bound="StudyReasonType0")



@_attrs_define
class StudyReasonType0:
    """ The permit's budget protects whole data holders; only client-level DP does that.

        Attributes:
            code (StudyReasonType0Code):
            permit_unit (BudgetUnit): What one unit of privacy protects: a single record, or a whole data holder's
                contribution.
     """

    code: StudyReasonType0Code
    permit_unit: BudgetUnit
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        code = self.code.value

        permit_unit = self.permit_unit.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "code": code,
            "permit_unit": permit_unit,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        code = StudyReasonType0Code(d.pop("code"))




        permit_unit = BudgetUnit(d.pop("permit_unit"))




        study_reason_type_0 = cls(
            code=code,
            permit_unit=permit_unit,
        )


        study_reason_type_0.additional_properties = d
        return study_reason_type_0

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
