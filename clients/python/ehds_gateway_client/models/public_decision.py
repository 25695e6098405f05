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

if TYPE_CHECKING:
  from ..models.public_fee import PublicFee
  from ..models.public_permit import PublicPermit





T = TypeVar("T", bound="PublicDecision")



@_attrs_define
class PublicDecision:
    """ A published decision.

        Attributes:
            decided_at (datetime.datetime):
            granted_categories (list[DataCategory]): The categories granted (after data minimisation).
            granted_data_holders (list[str]):
            outcome (str): `approved`, `partially_approved` or `rejected`.
            published_at (datetime.datetime):
            fee (None | PublicFee | Unset):
            permit (None | PublicPermit | Unset):
            reasons (None | str | Unset):
     """

    decided_at: datetime.datetime
    granted_categories: list[DataCategory]
    granted_data_holders: list[str]
    outcome: str
    published_at: datetime.datetime
    fee: None | PublicFee | Unset = UNSET
    permit: None | PublicPermit | Unset = UNSET
    reasons: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.public_fee import PublicFee # noqa: PLC0415
        from ..models.public_permit import PublicPermit # noqa: PLC0415
        decided_at = self.decided_at.isoformat()

        granted_categories = []
        for granted_categories_item_data in self.granted_categories:
            granted_categories_item = granted_categories_item_data.value
            granted_categories.append(granted_categories_item)



        granted_data_holders = self.granted_data_holders



        outcome = self.outcome

        published_at = self.published_at.isoformat()

        fee: dict[str, Any] | None | Unset
        if isinstance(self.fee, Unset):
            fee = UNSET
        elif isinstance(self.fee, PublicFee):
            fee = self.fee.to_dict()
        else:
            fee = self.fee

        permit: dict[str, Any] | None | Unset
        if isinstance(self.permit, Unset):
            permit = UNSET
        elif isinstance(self.permit, PublicPermit):
            permit = self.permit.to_dict()
        else:
            permit = self.permit

        reasons: None | str | Unset
        if isinstance(self.reasons, Unset):
            reasons = UNSET
        else:
            reasons = self.reasons


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "decided_at": decided_at,
            "granted_categories": granted_categories,
            "granted_data_holders": granted_data_holders,
            "outcome": outcome,
            "published_at": published_at,
        })
        if fee is not UNSET:
            field_dict["fee"] = fee
        if permit is not UNSET:
            field_dict["permit"] = permit
        if reasons is not UNSET:
            field_dict["reasons"] = reasons

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.public_fee import PublicFee # noqa: PLC0415
        from ..models.public_permit import PublicPermit # noqa: PLC0415
        d = dict(src_dict)
        decided_at = datetime.datetime.fromisoformat(d.pop("decided_at"))




        granted_categories = []
        _granted_categories = d.pop("granted_categories")
        for granted_categories_item_data in (_granted_categories):
            granted_categories_item = DataCategory(granted_categories_item_data)



            granted_categories.append(granted_categories_item)


        granted_data_holders = cast(list[str], d.pop("granted_data_holders"))


        outcome = d.pop("outcome")

        published_at = datetime.datetime.fromisoformat(d.pop("published_at"))




        def _parse_fee(data: object) -> None | PublicFee | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                fee_type_0 = PublicFee.from_dict(data)



                return fee_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PublicFee | Unset, data)

        fee = _parse_fee(d.pop("fee", UNSET))


        def _parse_permit(data: object) -> None | PublicPermit | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                permit_type_0 = PublicPermit.from_dict(data)



                return permit_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PublicPermit | Unset, data)

        permit = _parse_permit(d.pop("permit", UNSET))


        def _parse_reasons(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reasons = _parse_reasons(d.pop("reasons", UNSET))


        public_decision = cls(
            decided_at=decided_at,
            granted_categories=granted_categories,
            granted_data_holders=granted_data_holders,
            outcome=outcome,
            published_at=published_at,
            fee=fee,
            permit=permit,
            reasons=reasons,
        )


        public_decision.additional_properties = d
        return public_decision

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
