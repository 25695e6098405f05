from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.query_form import QueryForm
  from ..models.statistics_run_request_feature_spec import StatisticsRunRequestFeatureSpec





T = TypeVar("T", bound="StatisticsRunRequest")



@_attrs_define
class StatisticsRunRequest:
    """ The body of `POST /v1/permits/{id}/statistics`.

        Attributes:
            feature_spec (StatisticsRunRequestFeatureSpec): The feature specification defining the query's variables.
            purpose (str): The Art. 53 purpose the statistics serve (one of the permit's).
            query (QueryForm): A statistical query as the applicant submits it, before validation.
            data_holders (list[str] | Unset): The holders to ask (all of the permit's when absent).
     """

    feature_spec: StatisticsRunRequestFeatureSpec
    purpose: str
    query: QueryForm
    data_holders: list[str] | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.query_form import QueryForm # noqa: PLC0415
        from ..models.statistics_run_request_feature_spec import StatisticsRunRequestFeatureSpec # noqa: PLC0415
        feature_spec = self.feature_spec.to_dict()

        purpose = self.purpose

        query = self.query.to_dict()

        data_holders: list[str] | Unset = UNSET
        if not isinstance(self.data_holders, Unset):
            data_holders = self.data_holders




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "feature_spec": feature_spec,
            "purpose": purpose,
            "query": query,
        })
        if data_holders is not UNSET:
            field_dict["data_holders"] = data_holders

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.query_form import QueryForm # noqa: PLC0415
        from ..models.statistics_run_request_feature_spec import StatisticsRunRequestFeatureSpec # noqa: PLC0415
        d = dict(src_dict)
        feature_spec = StatisticsRunRequestFeatureSpec.from_dict(d.pop("feature_spec"))




        purpose = d.pop("purpose")

        query = QueryForm.from_dict(d.pop("query"))




        data_holders = cast(list[str], d.pop("data_holders", UNSET))


        statistics_run_request = cls(
            feature_spec=feature_spec,
            purpose=purpose,
            query=query,
            data_holders=data_holders,
        )

        return statistics_run_request

