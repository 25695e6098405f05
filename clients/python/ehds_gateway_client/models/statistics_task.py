from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.data_category import DataCategory
from ..models.filter_policy import FilterPolicy
from ..models.purpose import Purpose
from typing import cast
from uuid import UUID
import datetime

if TYPE_CHECKING:
  from ..models.query_form import QueryForm
  from ..models.statistics_task_feature_spec import StatisticsTaskFeatureSpec





T = TypeVar("T", bound="StatisticsTask")



@_attrs_define
class StatisticsTask:
    """ One holder's part of a statistics run, as `GET /v1/node/statistics-tasks` hands it out:
    the query and the variables it reads, never the other holders' names.

        Attributes:
            categories (list[DataCategory]):
            data_holder (str): An organisation: an applicant's organisation or a data holder. Matches the organisation claim
                of the caller's token.
            deadline (datetime.datetime):
            feature_spec (StatisticsTaskFeatureSpec): The feature specification defining the query's variables
                (`ehds_core::domain::statistics::variables`).
            optout_policy (FilterPolicy): Which opt-outs count for a permit's processing.
            permit_id (UUID): Identifier of a data permit (Art. 68).
            purpose (Purpose):
            query (QueryForm): A statistical query as the applicant submits it, before validation.
            registry_version (int): The opt-out registry version the node filters against.
            run_id (UUID): Identifier of one statistical query answered by the federation.
            task_id (UUID): Identifier of one data holder's part of a statistics run.
     """

    categories: list[DataCategory]
    data_holder: str
    deadline: datetime.datetime
    feature_spec: StatisticsTaskFeatureSpec
    optout_policy: FilterPolicy
    permit_id: UUID
    purpose: Purpose
    query: QueryForm
    registry_version: int
    run_id: UUID
    task_id: UUID
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.query_form import QueryForm # noqa: PLC0415
        from ..models.statistics_task_feature_spec import StatisticsTaskFeatureSpec # noqa: PLC0415
        categories = []
        for categories_item_data in self.categories:
            categories_item = categories_item_data.value
            categories.append(categories_item)



        data_holder = self.data_holder

        deadline = self.deadline.isoformat()

        feature_spec = self.feature_spec.to_dict()

        optout_policy = self.optout_policy.value

        permit_id = str(self.permit_id)

        purpose = self.purpose.value

        query = self.query.to_dict()

        registry_version = self.registry_version

        run_id = str(self.run_id)

        task_id = str(self.task_id)


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "categories": categories,
            "data_holder": data_holder,
            "deadline": deadline,
            "feature_spec": feature_spec,
            "optout_policy": optout_policy,
            "permit_id": permit_id,
            "purpose": purpose,
            "query": query,
            "registry_version": registry_version,
            "run_id": run_id,
            "task_id": task_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.query_form import QueryForm # noqa: PLC0415
        from ..models.statistics_task_feature_spec import StatisticsTaskFeatureSpec # noqa: PLC0415
        d = dict(src_dict)
        categories = []
        _categories = d.pop("categories")
        for categories_item_data in (_categories):
            categories_item = DataCategory(categories_item_data)



            categories.append(categories_item)


        data_holder = d.pop("data_holder")

        deadline = datetime.datetime.fromisoformat(d.pop("deadline"))




        feature_spec = StatisticsTaskFeatureSpec.from_dict(d.pop("feature_spec"))




        optout_policy = FilterPolicy(d.pop("optout_policy"))




        permit_id = UUID(d.pop("permit_id"))




        purpose = Purpose(d.pop("purpose"))




        query = QueryForm.from_dict(d.pop("query"))




        registry_version = d.pop("registry_version")

        run_id = UUID(d.pop("run_id"))




        task_id = UUID(d.pop("task_id"))




        statistics_task = cls(
            categories=categories,
            data_holder=data_holder,
            deadline=deadline,
            feature_spec=feature_spec,
            optout_policy=optout_policy,
            permit_id=permit_id,
            purpose=purpose,
            query=query,
            registry_version=registry_version,
            run_id=run_id,
            task_id=task_id,
        )


        statistics_task.additional_properties = d
        return statistics_task

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
