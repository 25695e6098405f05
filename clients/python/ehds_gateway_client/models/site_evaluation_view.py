from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.site_evaluation_view_test import SiteEvaluationViewTest
  from ..models.site_evaluation_view_validation import SiteEvaluationViewValidation





T = TypeVar("T", bound="SiteEvaluationView")



@_attrs_define
class SiteEvaluationView:
    """ One holder's evaluation as shown; `null` where the part rests on too few examples.

        Attributes:
            data_holder (str): An organisation: an applicant's organisation or a data holder. Matches the organisation claim
                of the caller's token.
            test (SiteEvaluationViewTest):
            validation (SiteEvaluationViewValidation):
     """

    data_holder: str
    test: SiteEvaluationViewTest
    validation: SiteEvaluationViewValidation
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.site_evaluation_view_test import SiteEvaluationViewTest # noqa: PLC0415
        from ..models.site_evaluation_view_validation import SiteEvaluationViewValidation # noqa: PLC0415
        data_holder = self.data_holder

        test = self.test.to_dict()

        validation = self.validation.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "data_holder": data_holder,
            "test": test,
            "validation": validation,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.site_evaluation_view_test import SiteEvaluationViewTest # noqa: PLC0415
        from ..models.site_evaluation_view_validation import SiteEvaluationViewValidation # noqa: PLC0415
        d = dict(src_dict)
        data_holder = d.pop("data_holder")

        test = SiteEvaluationViewTest.from_dict(d.pop("test"))




        validation = SiteEvaluationViewValidation.from_dict(d.pop("validation"))




        site_evaluation_view = cls(
            data_holder=data_holder,
            test=test,
            validation=validation,
        )


        site_evaluation_view.additional_properties = d
        return site_evaluation_view

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
