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
  from ..models.permit_terms import PermitTerms





T = TypeVar("T", bound="PermitVersion")



@_attrs_define
class PermitVersion:
    """ 
        Attributes:
            recorded_at (datetime.datetime):
            recorded_by (str):
            terms (PermitTerms):
            terms_version (int):
            reason (None | str | Unset):
     """

    recorded_at: datetime.datetime
    recorded_by: str
    terms: PermitTerms
    terms_version: int
    reason: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.permit_terms import PermitTerms # noqa: PLC0415
        recorded_at = self.recorded_at.isoformat()

        recorded_by = self.recorded_by

        terms = self.terms.to_dict()

        terms_version = self.terms_version

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "recorded_at": recorded_at,
            "recorded_by": recorded_by,
            "terms": terms,
            "terms_version": terms_version,
        })
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.permit_terms import PermitTerms # noqa: PLC0415
        d = dict(src_dict)
        recorded_at = datetime.datetime.fromisoformat(d.pop("recorded_at"))




        recorded_by = d.pop("recorded_by")

        terms = PermitTerms.from_dict(d.pop("terms"))




        terms_version = d.pop("terms_version")

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        permit_version = cls(
            recorded_at=recorded_at,
            recorded_by=recorded_by,
            terms=terms,
            terms_version=terms_version,
            reason=reason,
        )


        permit_version.additional_properties = d
        return permit_version

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
