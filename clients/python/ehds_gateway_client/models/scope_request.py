from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="ScopeRequest")



@_attrs_define
class ScopeRequest:
    """ 
        Attributes:
            categories (list[str] | None | Unset): The categories granted (a subset of those requested).
            data_holders (list[str] | None | Unset): The data holders granted (a subset of those requested).
            period_end (datetime.datetime | None | Unset): An earlier end of the permit than requested.
     """

    categories: list[str] | None | Unset = UNSET
    data_holders: list[str] | None | Unset = UNSET
    period_end: datetime.datetime | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        categories: list[str] | None | Unset
        if isinstance(self.categories, Unset):
            categories = UNSET
        elif isinstance(self.categories, list):
            categories = self.categories


        else:
            categories = self.categories

        data_holders: list[str] | None | Unset
        if isinstance(self.data_holders, Unset):
            data_holders = UNSET
        elif isinstance(self.data_holders, list):
            data_holders = self.data_holders


        else:
            data_holders = self.data_holders

        period_end: None | str | Unset
        if isinstance(self.period_end, Unset):
            period_end = UNSET
        elif isinstance(self.period_end, datetime.datetime):
            period_end = self.period_end.isoformat()
        else:
            period_end = self.period_end


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if categories is not UNSET:
            field_dict["categories"] = categories
        if data_holders is not UNSET:
            field_dict["data_holders"] = data_holders
        if period_end is not UNSET:
            field_dict["period_end"] = period_end

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_categories(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                categories_type_0 = cast(list[str], data)

                return categories_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        categories = _parse_categories(d.pop("categories", UNSET))


        def _parse_data_holders(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                data_holders_type_0 = cast(list[str], data)

                return data_holders_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        data_holders = _parse_data_holders(d.pop("data_holders", UNSET))


        def _parse_period_end(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                period_end_type_0 = datetime.datetime.fromisoformat(data)



                return period_end_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        period_end = _parse_period_end(d.pop("period_end", UNSET))


        scope_request = cls(
            categories=categories,
            data_holders=data_holders,
            period_end=period_end,
        )

        return scope_request

