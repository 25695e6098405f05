from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.data_category import DataCategory
from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="GrantScope")



@_attrs_define
class GrantScope:
    """ What a partial grant keeps of the request (Art. 68(3)); absent parts are granted as asked.

        Attributes:
            categories (list[DataCategory] | None | Unset):
            data_holders (list[str] | None | Unset):
            period_end (datetime.datetime | None | Unset):
     """

    categories: list[DataCategory] | None | Unset = UNSET
    data_holders: list[str] | None | Unset = UNSET
    period_end: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        categories: list[str] | None | Unset
        if isinstance(self.categories, Unset):
            categories = UNSET
        elif isinstance(self.categories, list):
            categories = []
            for categories_type_0_item_data in self.categories:
                categories_type_0_item = categories_type_0_item_data.value
                categories.append(categories_type_0_item)


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
        field_dict.update(self.additional_properties)
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
        def _parse_categories(data: object) -> list[DataCategory] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                categories_type_0 = []
                _categories_type_0 = data
                for categories_type_0_item_data in (_categories_type_0):
                    categories_type_0_item = DataCategory(categories_type_0_item_data)



                    categories_type_0.append(categories_type_0_item)

                return categories_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[DataCategory] | None | Unset, data)

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


        grant_scope = cls(
            categories=categories,
            data_holders=data_holders,
            period_end=period_end,
        )


        grant_scope.additional_properties = d
        return grant_scope

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
