from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.evaluation_view_mean_test import EvaluationViewMeanTest
  from ..models.evaluation_view_mean_validation import EvaluationViewMeanValidation
  from ..models.site_evaluation_view import SiteEvaluationView





T = TypeVar("T", bound="EvaluationView")



@_attrs_define
class EvaluationView:
    """ How the holders judged one round's model on their own data. A holder whose validation or
    test part is too small to show (the small-cell rule: fewer examples than the threshold)
    has that part withheld, and the means are over the parts shown. Where the study chooses
    each holder's decision threshold on its validation part, the holder's test metrics are read
    at a value derived from the validation rows: they rest on both parts, and a withheld
    validation part withholds them too.

        Attributes:
            mean_test (EvaluationViewMeanTest):
            mean_validation (EvaluationViewMeanValidation): Every metric as the uniform mean over the holders shown (`loss`
                example-weighted): F1,
                AUROC, calibration, the predicted-positive rate that shows a collapse to one class,
                C-index for survival, ...
            sites (list[SiteEvaluationView]):
            mean_test_accuracy (float | None | Unset):
            mean_test_balanced_accuracy (float | None | Unset):
            mean_validation_accuracy (float | None | Unset): Uniform mean over the holders shown (the FLamby convention).
     """

    mean_test: EvaluationViewMeanTest
    mean_validation: EvaluationViewMeanValidation
    sites: list[SiteEvaluationView]
    mean_test_accuracy: float | None | Unset = UNSET
    mean_test_balanced_accuracy: float | None | Unset = UNSET
    mean_validation_accuracy: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.evaluation_view_mean_test import EvaluationViewMeanTest # noqa: PLC0415
        from ..models.evaluation_view_mean_validation import EvaluationViewMeanValidation # noqa: PLC0415
        from ..models.site_evaluation_view import SiteEvaluationView # noqa: PLC0415
        mean_test = self.mean_test.to_dict()

        mean_validation = self.mean_validation.to_dict()

        sites = []
        for sites_item_data in self.sites:
            sites_item = sites_item_data.to_dict()
            sites.append(sites_item)



        mean_test_accuracy: float | None | Unset
        if isinstance(self.mean_test_accuracy, Unset):
            mean_test_accuracy = UNSET
        else:
            mean_test_accuracy = self.mean_test_accuracy

        mean_test_balanced_accuracy: float | None | Unset
        if isinstance(self.mean_test_balanced_accuracy, Unset):
            mean_test_balanced_accuracy = UNSET
        else:
            mean_test_balanced_accuracy = self.mean_test_balanced_accuracy

        mean_validation_accuracy: float | None | Unset
        if isinstance(self.mean_validation_accuracy, Unset):
            mean_validation_accuracy = UNSET
        else:
            mean_validation_accuracy = self.mean_validation_accuracy


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "mean_test": mean_test,
            "mean_validation": mean_validation,
            "sites": sites,
        })
        if mean_test_accuracy is not UNSET:
            field_dict["mean_test_accuracy"] = mean_test_accuracy
        if mean_test_balanced_accuracy is not UNSET:
            field_dict["mean_test_balanced_accuracy"] = mean_test_balanced_accuracy
        if mean_validation_accuracy is not UNSET:
            field_dict["mean_validation_accuracy"] = mean_validation_accuracy

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.evaluation_view_mean_test import EvaluationViewMeanTest # noqa: PLC0415
        from ..models.evaluation_view_mean_validation import EvaluationViewMeanValidation # noqa: PLC0415
        from ..models.site_evaluation_view import SiteEvaluationView # noqa: PLC0415
        d = dict(src_dict)
        mean_test = EvaluationViewMeanTest.from_dict(d.pop("mean_test"))




        mean_validation = EvaluationViewMeanValidation.from_dict(d.pop("mean_validation"))




        sites = []
        _sites = d.pop("sites")
        for sites_item_data in (_sites):
            sites_item = SiteEvaluationView.from_dict(sites_item_data)



            sites.append(sites_item)


        def _parse_mean_test_accuracy(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        mean_test_accuracy = _parse_mean_test_accuracy(d.pop("mean_test_accuracy", UNSET))


        def _parse_mean_test_balanced_accuracy(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        mean_test_balanced_accuracy = _parse_mean_test_balanced_accuracy(d.pop("mean_test_balanced_accuracy", UNSET))


        def _parse_mean_validation_accuracy(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        mean_validation_accuracy = _parse_mean_validation_accuracy(d.pop("mean_validation_accuracy", UNSET))


        evaluation_view = cls(
            mean_test=mean_test,
            mean_validation=mean_validation,
            sites=sites,
            mean_test_accuracy=mean_test_accuracy,
            mean_test_balanced_accuracy=mean_test_balanced_accuracy,
            mean_validation_accuracy=mean_validation_accuracy,
        )


        evaluation_view.additional_properties = d
        return evaluation_view

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
