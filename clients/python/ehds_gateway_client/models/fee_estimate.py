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
  from ..models.fee_line import FeeLine





T = TypeVar("T", bound="FeeEstimate")



@_attrs_define
class FeeEstimate:
    """ The fee estimate (Art. 62) sent before the decision; the applicant accepts or withdraws.

        Attributes:
            currency (str): ISO 4217 code.
            lines (list[FeeLine]):
            sent_at (datetime.datetime):
            sent_by (str):
            total_minor (int):
            accepted_at (datetime.datetime | None | Unset):
     """

    currency: str
    lines: list[FeeLine]
    sent_at: datetime.datetime
    sent_by: str
    total_minor: int
    accepted_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.fee_line import FeeLine # noqa: PLC0415
        currency = self.currency

        lines = []
        for lines_item_data in self.lines:
            lines_item = lines_item_data.to_dict()
            lines.append(lines_item)



        sent_at = self.sent_at.isoformat()

        sent_by = self.sent_by

        total_minor = self.total_minor

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
            "currency": currency,
            "lines": lines,
            "sent_at": sent_at,
            "sent_by": sent_by,
            "total_minor": total_minor,
        })
        if accepted_at is not UNSET:
            field_dict["accepted_at"] = accepted_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.fee_line import FeeLine # noqa: PLC0415
        d = dict(src_dict)
        currency = d.pop("currency")

        lines = []
        _lines = d.pop("lines")
        for lines_item_data in (_lines):
            lines_item = FeeLine.from_dict(lines_item_data)



            lines.append(lines_item)


        sent_at = datetime.datetime.fromisoformat(d.pop("sent_at"))




        sent_by = d.pop("sent_by")

        total_minor = d.pop("total_minor")

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


        fee_estimate = cls(
            currency=currency,
            lines=lines,
            sent_at=sent_at,
            sent_by=sent_by,
            total_minor=total_minor,
            accepted_at=accepted_at,
        )


        fee_estimate.additional_properties = d
        return fee_estimate

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
