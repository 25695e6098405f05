from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.warning_code import WarningCode
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="FeatureQuality")



@_attrs_define
class FeatureQuality:
    """ One study column at one holder.

        Attributes:
            flags (list[WarningCode]): The preflight's warnings about this column.
            name (str): The column, as the study's feature specification names it.
            ignored (int | None | Unset): Of those, records that did not count (undated, outside the window, a refused
                unit...);
                `null` when withheld.
            matched (int | None | Unset): Records matching the feature's codes; `null` when withheld.
            missing (int | None | Unset): Training rows without a value (imputed, or dropped where the feature has no
                imputation);
                `null` when withheld.
     """

    flags: list[WarningCode]
    name: str
    ignored: int | None | Unset = UNSET
    matched: int | None | Unset = UNSET
    missing: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        flags = []
        for flags_item_data in self.flags:
            flags_item = flags_item_data.value
            flags.append(flags_item)



        name = self.name

        ignored: int | None | Unset
        if isinstance(self.ignored, Unset):
            ignored = UNSET
        else:
            ignored = self.ignored

        matched: int | None | Unset
        if isinstance(self.matched, Unset):
            matched = UNSET
        else:
            matched = self.matched

        missing: int | None | Unset
        if isinstance(self.missing, Unset):
            missing = UNSET
        else:
            missing = self.missing


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "flags": flags,
            "name": name,
        })
        if ignored is not UNSET:
            field_dict["ignored"] = ignored
        if matched is not UNSET:
            field_dict["matched"] = matched
        if missing is not UNSET:
            field_dict["missing"] = missing

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        flags = []
        _flags = d.pop("flags")
        for flags_item_data in (_flags):
            flags_item = WarningCode(flags_item_data)



            flags.append(flags_item)


        name = d.pop("name")

        def _parse_ignored(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ignored = _parse_ignored(d.pop("ignored", UNSET))


        def _parse_matched(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        matched = _parse_matched(d.pop("matched", UNSET))


        def _parse_missing(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        missing = _parse_missing(d.pop("missing", UNSET))


        feature_quality = cls(
            flags=flags,
            name=name,
            ignored=ignored,
            matched=matched,
            missing=missing,
        )


        feature_quality.additional_properties = d
        return feature_quality

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
