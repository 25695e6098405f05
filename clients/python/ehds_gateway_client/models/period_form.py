from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="PeriodForm")



@_attrs_define
class PeriodForm:
    """ 
        Attributes:
            start (str): `YYYY-MM-DD`.
            end (None | str | Unset): `YYYY-MM-DD`; absent while the dataset still grows.
     """

    start: str
    end: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        start = self.start

        end: None | str | Unset
        if isinstance(self.end, Unset):
            end = UNSET
        else:
            end = self.end


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "start": start,
        })
        if end is not UNSET:
            field_dict["end"] = end

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        start = d.pop("start")

        def _parse_end(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        end = _parse_end(d.pop("end", UNSET))


        period_form = cls(
            start=start,
            end=end,
        )

        return period_form

