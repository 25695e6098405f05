from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.study_task_multiclass import StudyTaskMulticlass





T = TypeVar("T", bound="StudyTaskType1")



@_attrs_define
class StudyTaskType1:
    """ One logit per class (softmax), labels are class indices.

        Attributes:
            multiclass (StudyTaskMulticlass): One logit per class (softmax), labels are class indices.
     """

    multiclass: StudyTaskMulticlass
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.study_task_multiclass import StudyTaskMulticlass # noqa: PLC0415
        multiclass = self.multiclass.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "multiclass": multiclass,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.study_task_multiclass import StudyTaskMulticlass # noqa: PLC0415
        d = dict(src_dict)
        multiclass = StudyTaskMulticlass.from_dict(d.pop("multiclass"))




        study_task_type_1 = cls(
            multiclass=multiclass,
        )


        study_task_type_1.additional_properties = d
        return study_task_type_1

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
