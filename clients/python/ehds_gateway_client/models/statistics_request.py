from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.query_form import QueryForm
  from ..models.statistics_request_feature_spec import StatisticsRequestFeatureSpec





T = TypeVar("T", bound="StatisticsRequest")



@_attrs_define
class StatisticsRequest:
    """ The statistical content an applicant declares (Art. 69(2)(d)): the variables, as a feature
    specification the holders' nodes read, and the queries over them.

        Attributes:
            feature_spec (StatisticsRequestFeatureSpec): The feature specification (docs/feature-specifications.md) defining
                the variables.
            queries (list[QueryForm]): One query per statistic asked for.
     """

    feature_spec: StatisticsRequestFeatureSpec
    queries: list[QueryForm]





    def to_dict(self) -> dict[str, Any]:
        from ..models.query_form import QueryForm # noqa: PLC0415
        from ..models.statistics_request_feature_spec import StatisticsRequestFeatureSpec # noqa: PLC0415
        feature_spec = self.feature_spec.to_dict()

        queries = []
        for queries_item_data in self.queries:
            queries_item = queries_item_data.to_dict()
            queries.append(queries_item)




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "feature_spec": feature_spec,
            "queries": queries,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.query_form import QueryForm # noqa: PLC0415
        from ..models.statistics_request_feature_spec import StatisticsRequestFeatureSpec # noqa: PLC0415
        d = dict(src_dict)
        feature_spec = StatisticsRequestFeatureSpec.from_dict(d.pop("feature_spec"))




        queries = []
        _queries = d.pop("queries")
        for queries_item_data in (_queries):
            queries_item = QueryForm.from_dict(queries_item_data)



            queries.append(queries_item)


        statistics_request = cls(
            feature_spec=feature_spec,
            queries=queries,
        )

        return statistics_request

