from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.fee_line import FeeLine
  from ..models.holder_cost import HolderCost





T = TypeVar("T", bound="FeeEstimateBody")



@_attrs_define
class FeeEstimateBody:
    """ 
        Attributes:
            currency (None | str | Unset): ISO 4217 code, e.g. `EUR`; with a fee schedule, the schedule's (default).
            holder_costs (list[HolderCost] | Unset): The data holders' estimates of their costs (Art. 62(2)), passed
                through.
            hours (float | None | Unset): With a fee schedule: the processing time the HDAB expects, in hours (rounded up to
                the quarter hour); the schedule turns it, the holders' costs and the applicant's
                reduction into the lines.
            lines (list[FeeLine] | None | Unset): The fee's parts (Art. 62: the HDAB's costs and the data holders' passed
                through), in
                minor units (cents). Without a fee schedule, required.
     """

    currency: None | str | Unset = UNSET
    holder_costs: list[HolderCost] | Unset = UNSET
    hours: float | None | Unset = UNSET
    lines: list[FeeLine] | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.fee_line import FeeLine # noqa: PLC0415
        from ..models.holder_cost import HolderCost # noqa: PLC0415
        currency: None | str | Unset
        if isinstance(self.currency, Unset):
            currency = UNSET
        else:
            currency = self.currency

        holder_costs: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.holder_costs, Unset):
            holder_costs = []
            for holder_costs_item_data in self.holder_costs:
                holder_costs_item = holder_costs_item_data.to_dict()
                holder_costs.append(holder_costs_item)



        hours: float | None | Unset
        if isinstance(self.hours, Unset):
            hours = UNSET
        else:
            hours = self.hours

        lines: list[dict[str, Any]] | None | Unset
        if isinstance(self.lines, Unset):
            lines = UNSET
        elif isinstance(self.lines, list):
            lines = []
            for lines_type_0_item_data in self.lines:
                lines_type_0_item = lines_type_0_item_data.to_dict()
                lines.append(lines_type_0_item)


        else:
            lines = self.lines


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if currency is not UNSET:
            field_dict["currency"] = currency
        if holder_costs is not UNSET:
            field_dict["holder_costs"] = holder_costs
        if hours is not UNSET:
            field_dict["hours"] = hours
        if lines is not UNSET:
            field_dict["lines"] = lines

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.fee_line import FeeLine # noqa: PLC0415
        from ..models.holder_cost import HolderCost # noqa: PLC0415
        d = dict(src_dict)
        def _parse_currency(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        currency = _parse_currency(d.pop("currency", UNSET))


        _holder_costs = d.pop("holder_costs", UNSET)
        holder_costs: list[HolderCost] | Unset = UNSET
        if _holder_costs is not UNSET:
            holder_costs = []
            for holder_costs_item_data in _holder_costs:
                holder_costs_item = HolderCost.from_dict(holder_costs_item_data)



                holder_costs.append(holder_costs_item)


        def _parse_hours(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        hours = _parse_hours(d.pop("hours", UNSET))


        def _parse_lines(data: object) -> list[FeeLine] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                lines_type_0 = []
                _lines_type_0 = data
                for lines_type_0_item_data in (_lines_type_0):
                    lines_type_0_item = FeeLine.from_dict(lines_type_0_item_data)



                    lines_type_0.append(lines_type_0_item)

                return lines_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[FeeLine] | None | Unset, data)

        lines = _parse_lines(d.pop("lines", UNSET))


        fee_estimate_body = cls(
            currency=currency,
            holder_costs=holder_costs,
            hours=hours,
            lines=lines,
        )

        return fee_estimate_body

