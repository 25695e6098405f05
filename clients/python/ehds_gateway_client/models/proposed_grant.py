from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.proposed_grant_terms import ProposedGrantTerms





T = TypeVar("T", bound="ProposedGrant")



@_attrs_define
class ProposedGrant:
    """ An approval recorded by one officer, waiting for a second one (the four-eyes rule).

        Attributes:
            proposed_at (datetime.datetime):
            proposed_by (str):
            terms (ProposedGrantTerms): The permit terms the proposal carries, as the decision request gave them.
            note (None | str | Unset):
     """

    proposed_at: datetime.datetime
    proposed_by: str
    terms: ProposedGrantTerms
    note: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.proposed_grant_terms import ProposedGrantTerms # noqa: PLC0415
        proposed_at = self.proposed_at.isoformat()

        proposed_by = self.proposed_by

        terms = self.terms.to_dict()

        note: None | str | Unset
        if isinstance(self.note, Unset):
            note = UNSET
        else:
            note = self.note


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "proposed_at": proposed_at,
            "proposed_by": proposed_by,
            "terms": terms,
        })
        if note is not UNSET:
            field_dict["note"] = note

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.proposed_grant_terms import ProposedGrantTerms # noqa: PLC0415
        d = dict(src_dict)
        proposed_at = datetime.datetime.fromisoformat(d.pop("proposed_at"))




        proposed_by = d.pop("proposed_by")

        terms = ProposedGrantTerms.from_dict(d.pop("terms"))




        def _parse_note(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        note = _parse_note(d.pop("note", UNSET))


        proposed_grant = cls(
            proposed_at=proposed_at,
            proposed_by=proposed_by,
            terms=terms,
            note=note,
        )


        proposed_grant.additional_properties = d
        return proposed_grant

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
