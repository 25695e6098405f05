from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="Invoice")



@_attrs_define
class Invoice:
    """ What the applicant is charged: on a grant, the accepted estimate; on a withdrawal after an
    estimate, the costs already incurred (Art. 62(5)); nothing on a refusal.

        Attributes:
            currency (str):
            holders_minor (int): The part passed on to the data holders (Art. 62(2)).
            issued_at (datetime.datetime):
            total_minor (int):
     """

    currency: str
    holders_minor: int
    issued_at: datetime.datetime
    total_minor: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        currency = self.currency

        holders_minor = self.holders_minor

        issued_at = self.issued_at.isoformat()

        total_minor = self.total_minor


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "currency": currency,
            "holders_minor": holders_minor,
            "issued_at": issued_at,
            "total_minor": total_minor,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        currency = d.pop("currency")

        holders_minor = d.pop("holders_minor")

        issued_at = datetime.datetime.fromisoformat(d.pop("issued_at"))




        total_minor = d.pop("total_minor")

        invoice = cls(
            currency=currency,
            holders_minor=holders_minor,
            issued_at=issued_at,
            total_minor=total_minor,
        )


        invoice.additional_properties = d
        return invoice

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
