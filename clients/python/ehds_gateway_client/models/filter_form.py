from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="FilterForm")



@_attrs_define
class FilterForm:
    """ One filter predicate. `op` is one of `eq`, `in`, `lt`, `le`, `gt`, `ge` (with `value`, or
    `values` for `in`), `between` (inclusive `lo`..`hi`), `is_missing`, `not_missing`.

        Attributes:
            column (str):
            op (str):
            hi (float | None | Unset):
            lo (float | None | Unset):
            value (float | None | Unset):
            values (list[float] | None | Unset):
     """

    column: str
    op: str
    hi: float | None | Unset = UNSET
    lo: float | None | Unset = UNSET
    value: float | None | Unset = UNSET
    values: list[float] | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        column = self.column

        op = self.op

        hi: float | None | Unset
        if isinstance(self.hi, Unset):
            hi = UNSET
        else:
            hi = self.hi

        lo: float | None | Unset
        if isinstance(self.lo, Unset):
            lo = UNSET
        else:
            lo = self.lo

        value: float | None | Unset
        if isinstance(self.value, Unset):
            value = UNSET
        else:
            value = self.value

        values: list[float] | None | Unset
        if isinstance(self.values, Unset):
            values = UNSET
        elif isinstance(self.values, list):
            values = self.values


        else:
            values = self.values


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "column": column,
            "op": op,
        })
        if hi is not UNSET:
            field_dict["hi"] = hi
        if lo is not UNSET:
            field_dict["lo"] = lo
        if value is not UNSET:
            field_dict["value"] = value
        if values is not UNSET:
            field_dict["values"] = values

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        column = d.pop("column")

        op = d.pop("op")

        def _parse_hi(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        hi = _parse_hi(d.pop("hi", UNSET))


        def _parse_lo(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        lo = _parse_lo(d.pop("lo", UNSET))


        def _parse_value(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        value = _parse_value(d.pop("value", UNSET))


        def _parse_values(data: object) -> list[float] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                values_type_0 = cast(list[float], data)

                return values_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        values = _parse_values(d.pop("values", UNSET))


        filter_form = cls(
            column=column,
            op=op,
            hi=hi,
            lo=lo,
            value=value,
            values=values,
        )

        return filter_form

