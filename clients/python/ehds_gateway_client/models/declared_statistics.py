from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.declared_statistics_feature_spec import DeclaredStatisticsFeatureSpec
  from ..models.query_form import QueryForm





T = TypeVar("T", bound="DeclaredStatistics")



@_attrs_define
class DeclaredStatistics:
    """ Declared statistical content, parsed.

        Attributes:
            feature_spec (DeclaredStatisticsFeatureSpec):
            queries (list[QueryForm]):
     """

    feature_spec: DeclaredStatisticsFeatureSpec
    queries: list[QueryForm]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.declared_statistics_feature_spec import DeclaredStatisticsFeatureSpec # noqa: PLC0415
        from ..models.query_form import QueryForm # noqa: PLC0415
        feature_spec = self.feature_spec.to_dict()

        queries = []
        for queries_item_data in self.queries:
            queries_item = queries_item_data.to_dict()
            queries.append(queries_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "feature_spec": feature_spec,
            "queries": queries,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.declared_statistics_feature_spec import DeclaredStatisticsFeatureSpec # noqa: PLC0415
        from ..models.query_form import QueryForm # noqa: PLC0415
        d = dict(src_dict)
        feature_spec = DeclaredStatisticsFeatureSpec.from_dict(d.pop("feature_spec"))




        queries = []
        _queries = d.pop("queries")
        for queries_item_data in (_queries):
            queries_item = QueryForm.from_dict(queries_item_data)



            queries.append(queries_item)


        declared_statistics = cls(
            feature_spec=feature_spec,
            queries=queries,
        )


        declared_statistics.additional_properties = d
        return declared_statistics

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
