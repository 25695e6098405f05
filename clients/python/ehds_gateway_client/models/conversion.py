from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="Conversion")



@_attrs_define
class Conversion:
    """ An officer's proposal to convert an application into an Art. 69 data request; the
    applicant's agreement converts it.

        Attributes:
            proposed_at (datetime.datetime):
            proposed_by (str):
            reasons (str):
            accepted_at (datetime.datetime | None | Unset):
     """

    proposed_at: datetime.datetime
    proposed_by: str
    reasons: str
    accepted_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        proposed_at = self.proposed_at.isoformat()

        proposed_by = self.proposed_by

        reasons = self.reasons

        accepted_at: None | str | Unset
        if isinstance(self.accepted_at, Unset):
            accepted_at = UNSET
        elif isinstance(self.accepted_at, datetime.datetime):
            accepted_at = self.accepted_at.isoformat()
        else:
            accepted_at = self.accepted_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "proposed_at": proposed_at,
            "proposed_by": proposed_by,
            "reasons": reasons,
        })
        if accepted_at is not UNSET:
            field_dict["accepted_at"] = accepted_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        proposed_at = datetime.datetime.fromisoformat(d.pop("proposed_at"))




        proposed_by = d.pop("proposed_by")

        reasons = d.pop("reasons")

        def _parse_accepted_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                accepted_at_type_0 = datetime.datetime.fromisoformat(data)



                return accepted_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        accepted_at = _parse_accepted_at(d.pop("accepted_at", UNSET))


        conversion = cls(
            proposed_at=proposed_at,
            proposed_by=proposed_by,
            reasons=reasons,
            accepted_at=accepted_at,
        )


        conversion.additional_properties = d
        return conversion

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
