from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.first_bad_entry import FirstBadEntry





T = TypeVar("T", bound="VerifyReport")



@_attrs_define
class VerifyReport:
    """ 
        Attributes:
            entries_checked (int):
            head_hash (str):
            valid (bool):
            first_bad (FirstBadEntry | None | Unset):
            head_seq (int | None | Unset):
     """

    entries_checked: int
    head_hash: str
    valid: bool
    first_bad: FirstBadEntry | None | Unset = UNSET
    head_seq: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.first_bad_entry import FirstBadEntry # noqa: PLC0415
        entries_checked = self.entries_checked

        head_hash = self.head_hash

        valid = self.valid

        first_bad: dict[str, Any] | None | Unset
        if isinstance(self.first_bad, Unset):
            first_bad = UNSET
        elif isinstance(self.first_bad, FirstBadEntry):
            first_bad = self.first_bad.to_dict()
        else:
            first_bad = self.first_bad

        head_seq: int | None | Unset
        if isinstance(self.head_seq, Unset):
            head_seq = UNSET
        else:
            head_seq = self.head_seq


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "entries_checked": entries_checked,
            "head_hash": head_hash,
            "valid": valid,
        })
        if first_bad is not UNSET:
            field_dict["first_bad"] = first_bad
        if head_seq is not UNSET:
            field_dict["head_seq"] = head_seq

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.first_bad_entry import FirstBadEntry # noqa: PLC0415
        d = dict(src_dict)
        entries_checked = d.pop("entries_checked")

        head_hash = d.pop("head_hash")

        valid = d.pop("valid")

        def _parse_first_bad(data: object) -> FirstBadEntry | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                first_bad_type_0 = FirstBadEntry.from_dict(data)



                return first_bad_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(FirstBadEntry | None | Unset, data)

        first_bad = _parse_first_bad(d.pop("first_bad", UNSET))


        def _parse_head_seq(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        head_seq = _parse_head_seq(d.pop("head_seq", UNSET))


        verify_report = cls(
            entries_checked=entries_checked,
            head_hash=head_hash,
            valid=valid,
            first_bad=first_bad,
            head_seq=head_seq,
        )


        verify_report.additional_properties = d
        return verify_report

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
