from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.dp_form import DpForm
  from ..models.filter_form import FilterForm
  from ..models.group_form import GroupForm
  from ..models.range_form import RangeForm





T = TypeVar("T", bound="QueryForm")



@_attrs_define
class QueryForm:
    """ A statistical query as the applicant submits it, before validation.

        Attributes:
            statistic (str): `count`, `mean`, `quantiles`, `histogram` or `kaplan_meier`.
            bins (int | None | Unset): Number of equal-width bins of the quantile histogram (`quantiles`).
            bounds (None | RangeForm | Unset):
            dp (DpForm | None | Unset):
            edges (list[float] | None | Unset): Bin edges, strictly increasing (`histogram`).
            event (None | str | Unset): Event indicator variable, 1 event / 0 censored (`kaplan_meier`).
            filters (list[FilterForm] | Unset): Conjunction of predicates selecting the population.
            group_by (list[GroupForm] | Unset): Up to two grouping variables (cross-tabulation).
            probabilities (list[float] | None | Unset): Probabilities in (0, 1) (`quantiles`).
            range_ (None | RangeForm | Unset):
            time (None | str | Unset): Follow-up time variable (`kaplan_meier`).
            time_grid (list[float] | None | Unset): Time points, strictly increasing, first ≥ 0; the last is the horizon
                (`kaplan_meier`).
            variable (None | str | Unset): The analysed variable (`mean`, `quantiles`, `histogram`).
     """

    statistic: str
    bins: int | None | Unset = UNSET
    bounds: None | RangeForm | Unset = UNSET
    dp: DpForm | None | Unset = UNSET
    edges: list[float] | None | Unset = UNSET
    event: None | str | Unset = UNSET
    filters: list[FilterForm] | Unset = UNSET
    group_by: list[GroupForm] | Unset = UNSET
    probabilities: list[float] | None | Unset = UNSET
    range_: None | RangeForm | Unset = UNSET
    time: None | str | Unset = UNSET
    time_grid: list[float] | None | Unset = UNSET
    variable: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.dp_form import DpForm # noqa: PLC0415
        from ..models.filter_form import FilterForm # noqa: PLC0415
        from ..models.group_form import GroupForm # noqa: PLC0415
        from ..models.range_form import RangeForm # noqa: PLC0415
        statistic = self.statistic

        bins: int | None | Unset
        if isinstance(self.bins, Unset):
            bins = UNSET
        else:
            bins = self.bins

        bounds: dict[str, Any] | None | Unset
        if isinstance(self.bounds, Unset):
            bounds = UNSET
        elif isinstance(self.bounds, RangeForm):
            bounds = self.bounds.to_dict()
        else:
            bounds = self.bounds

        dp: dict[str, Any] | None | Unset
        if isinstance(self.dp, Unset):
            dp = UNSET
        elif isinstance(self.dp, DpForm):
            dp = self.dp.to_dict()
        else:
            dp = self.dp

        edges: list[float] | None | Unset
        if isinstance(self.edges, Unset):
            edges = UNSET
        elif isinstance(self.edges, list):
            edges = self.edges


        else:
            edges = self.edges

        event: None | str | Unset
        if isinstance(self.event, Unset):
            event = UNSET
        else:
            event = self.event

        filters: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.filters, Unset):
            filters = []
            for filters_item_data in self.filters:
                filters_item = filters_item_data.to_dict()
                filters.append(filters_item)



        group_by: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.group_by, Unset):
            group_by = []
            for group_by_item_data in self.group_by:
                group_by_item = group_by_item_data.to_dict()
                group_by.append(group_by_item)



        probabilities: list[float] | None | Unset
        if isinstance(self.probabilities, Unset):
            probabilities = UNSET
        elif isinstance(self.probabilities, list):
            probabilities = self.probabilities


        else:
            probabilities = self.probabilities

        range_: dict[str, Any] | None | Unset
        if isinstance(self.range_, Unset):
            range_ = UNSET
        elif isinstance(self.range_, RangeForm):
            range_ = self.range_.to_dict()
        else:
            range_ = self.range_

        time: None | str | Unset
        if isinstance(self.time, Unset):
            time = UNSET
        else:
            time = self.time

        time_grid: list[float] | None | Unset
        if isinstance(self.time_grid, Unset):
            time_grid = UNSET
        elif isinstance(self.time_grid, list):
            time_grid = self.time_grid


        else:
            time_grid = self.time_grid

        variable: None | str | Unset
        if isinstance(self.variable, Unset):
            variable = UNSET
        else:
            variable = self.variable


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "statistic": statistic,
        })
        if bins is not UNSET:
            field_dict["bins"] = bins
        if bounds is not UNSET:
            field_dict["bounds"] = bounds
        if dp is not UNSET:
            field_dict["dp"] = dp
        if edges is not UNSET:
            field_dict["edges"] = edges
        if event is not UNSET:
            field_dict["event"] = event
        if filters is not UNSET:
            field_dict["filters"] = filters
        if group_by is not UNSET:
            field_dict["group_by"] = group_by
        if probabilities is not UNSET:
            field_dict["probabilities"] = probabilities
        if range_ is not UNSET:
            field_dict["range"] = range_
        if time is not UNSET:
            field_dict["time"] = time
        if time_grid is not UNSET:
            field_dict["time_grid"] = time_grid
        if variable is not UNSET:
            field_dict["variable"] = variable

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.dp_form import DpForm # noqa: PLC0415
        from ..models.filter_form import FilterForm # noqa: PLC0415
        from ..models.group_form import GroupForm # noqa: PLC0415
        from ..models.range_form import RangeForm # noqa: PLC0415
        d = dict(src_dict)
        statistic = d.pop("statistic")

        def _parse_bins(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        bins = _parse_bins(d.pop("bins", UNSET))


        def _parse_bounds(data: object) -> None | RangeForm | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                bounds_type_0 = RangeForm.from_dict(data)



                return bounds_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RangeForm | Unset, data)

        bounds = _parse_bounds(d.pop("bounds", UNSET))


        def _parse_dp(data: object) -> DpForm | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                dp_type_0 = DpForm.from_dict(data)



                return dp_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DpForm | None | Unset, data)

        dp = _parse_dp(d.pop("dp", UNSET))


        def _parse_edges(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                edges_type_0 = cast(list[float], data)

                return edges_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        edges = _parse_edges(d.pop("edges", UNSET))


        def _parse_event(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        event = _parse_event(d.pop("event", UNSET))


        _filters = d.pop("filters", UNSET)
        filters: list[FilterForm] | Unset = UNSET
        if _filters is not UNSET:
            filters = []
            for filters_item_data in _filters:
                filters_item = FilterForm.from_dict(filters_item_data)



                filters.append(filters_item)


        _group_by = d.pop("group_by", UNSET)
        group_by: list[GroupForm] | Unset = UNSET
        if _group_by is not UNSET:
            group_by = []
            for group_by_item_data in _group_by:
                group_by_item = GroupForm.from_dict(group_by_item_data)



                group_by.append(group_by_item)


        def _parse_probabilities(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                probabilities_type_0 = cast(list[float], data)

                return probabilities_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        probabilities = _parse_probabilities(d.pop("probabilities", UNSET))


        def _parse_range_(data: object) -> None | RangeForm | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                range_type_0 = RangeForm.from_dict(data)



                return range_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RangeForm | Unset, data)

        range_ = _parse_range_(d.pop("range", UNSET))


        def _parse_time(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        time = _parse_time(d.pop("time", UNSET))


        def _parse_time_grid(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                time_grid_type_0 = cast(list[float], data)

                return time_grid_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        time_grid = _parse_time_grid(d.pop("time_grid", UNSET))


        def _parse_variable(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        variable = _parse_variable(d.pop("variable", UNSET))


        query_form = cls(
            statistic=statistic,
            bins=bins,
            bounds=bounds,
            dp=dp,
            edges=edges,
            event=event,
            filters=filters,
            group_by=group_by,
            probabilities=probabilities,
            range_=range_,
            time=time,
            time_grid=time_grid,
            variable=variable,
        )

        return query_form

