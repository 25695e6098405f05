from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.statistics_request import StatisticsRequest





T = TypeVar("T", bound="ConversionBody")



@_attrs_define
class ConversionBody:
    """ 
        Attributes:
            statistics (StatisticsRequest): The statistical content an applicant declares (Art. 69(2)(d)): the variables, as
                a feature
                specification the holders' nodes read, and the queries over them.
     """

    statistics: StatisticsRequest





    def to_dict(self) -> dict[str, Any]:
        from ..models.statistics_request import StatisticsRequest # noqa: PLC0415
        statistics = self.statistics.to_dict()


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "statistics": statistics,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.statistics_request import StatisticsRequest # noqa: PLC0415
        d = dict(src_dict)
        statistics = StatisticsRequest.from_dict(d.pop("statistics"))




        conversion_body = cls(
            statistics=statistics,
        )

        return conversion_body

