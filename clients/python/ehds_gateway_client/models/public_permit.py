from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
from uuid import UUID
import datetime






T = TypeVar("T", bound="PublicPermit")



@_attrs_define
class PublicPermit:
    """ 
        Attributes:
            expires_at (datetime.datetime):
            permit_id (UUID): Identifier of a data permit (Art. 68).
            status (str): `active`, `suspended`, `revoked` or `expired`.
            valid_from (datetime.datetime):
            measure_reason (None | str | Unset):
            measure_since (datetime.datetime | None | Unset): The measure taken on the permit (Art. 63), with its stated
                reason.
     """

    expires_at: datetime.datetime
    permit_id: UUID
    status: str
    valid_from: datetime.datetime
    measure_reason: None | str | Unset = UNSET
    measure_since: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        expires_at = self.expires_at.isoformat()

        permit_id = str(self.permit_id)

        status = self.status

        valid_from = self.valid_from.isoformat()

        measure_reason: None | str | Unset
        if isinstance(self.measure_reason, Unset):
            measure_reason = UNSET
        else:
            measure_reason = self.measure_reason

        measure_since: None | str | Unset
        if isinstance(self.measure_since, Unset):
            measure_since = UNSET
        elif isinstance(self.measure_since, datetime.datetime):
            measure_since = self.measure_since.isoformat()
        else:
            measure_since = self.measure_since


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "expires_at": expires_at,
            "permit_id": permit_id,
            "status": status,
            "valid_from": valid_from,
        })
        if measure_reason is not UNSET:
            field_dict["measure_reason"] = measure_reason
        if measure_since is not UNSET:
            field_dict["measure_since"] = measure_since

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))




        permit_id = UUID(d.pop("permit_id"))




        status = d.pop("status")

        valid_from = datetime.datetime.fromisoformat(d.pop("valid_from"))




        def _parse_measure_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        measure_reason = _parse_measure_reason(d.pop("measure_reason", UNSET))


        def _parse_measure_since(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                measure_since_type_0 = datetime.datetime.fromisoformat(data)



                return measure_since_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        measure_since = _parse_measure_since(d.pop("measure_since", UNSET))


        public_permit = cls(
            expires_at=expires_at,
            permit_id=permit_id,
            status=status,
            valid_from=valid_from,
            measure_reason=measure_reason,
            measure_since=measure_since,
        )


        public_permit.additional_properties = d
        return public_permit

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
