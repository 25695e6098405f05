from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="GroupForm")



@_attrs_define
class GroupForm:
    """ A grouping variable: categorical (`levels`) or binned (`edges`), exactly one of them.

        Attributes:
            column (str):
            edges (list[float] | None | Unset):
            levels (list[float] | None | Unset):
     """

    column: str
    edges: list[float] | None | Unset = UNSET
    levels: list[float] | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        column = self.column

        edges: list[float] | None | Unset
        if isinstance(self.edges, Unset):
            edges = UNSET
        elif isinstance(self.edges, list):
            edges = self.edges


        else:
            edges = self.edges

        levels: list[float] | None | Unset
        if isinstance(self.levels, Unset):
            levels = UNSET
        elif isinstance(self.levels, list):
            levels = self.levels


        else:
            levels = self.levels


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "column": column,
        })
        if edges is not UNSET:
            field_dict["edges"] = edges
        if levels is not UNSET:
            field_dict["levels"] = levels

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        column = d.pop("column")

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


        def _parse_levels(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                levels_type_0 = cast(list[float], data)

                return levels_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        levels = _parse_levels(d.pop("levels", UNSET))


        group_form = cls(
            column=column,
            edges=edges,
            levels=levels,
        )

        return group_form

