from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.statistics_result_body_partial import StatisticsResultBodyPartial





T = TypeVar("T", bound="StatisticsResultBody")



@_attrs_define
class StatisticsResultBody:
    """ The body of `POST /v1/node/statistics-tasks/{id}/result`: the node's sufficient statistics
    for the query (counts, moments, bin counts; never a record) and what did not count.

        Attributes:
            incomplete (int): Subjects left out because a variable without an imputation rule was missing.
            opted_out (int): Subjects the opt-out filter removed.
            partial (StatisticsResultBodyPartial): `ehds_stats::Partial` as JSON.
            registry_version (int): The registry version the node filtered against (must be the task's).
     """

    incomplete: int
    opted_out: int
    partial: StatisticsResultBodyPartial
    registry_version: int





    def to_dict(self) -> dict[str, Any]:
        from ..models.statistics_result_body_partial import StatisticsResultBodyPartial # noqa: PLC0415
        incomplete = self.incomplete

        opted_out = self.opted_out

        partial = self.partial.to_dict()

        registry_version = self.registry_version


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "incomplete": incomplete,
            "opted_out": opted_out,
            "partial": partial,
            "registry_version": registry_version,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.statistics_result_body_partial import StatisticsResultBodyPartial # noqa: PLC0415
        d = dict(src_dict)
        incomplete = d.pop("incomplete")

        opted_out = d.pop("opted_out")

        partial = StatisticsResultBodyPartial.from_dict(d.pop("partial"))




        registry_version = d.pop("registry_version")

        statistics_result_body = cls(
            incomplete=incomplete,
            opted_out=opted_out,
            partial=partial,
            registry_version=registry_version,
        )

        return statistics_result_body

