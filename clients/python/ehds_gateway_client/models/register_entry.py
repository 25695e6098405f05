from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.application_kind import ApplicationKind
from ..models.data_category import DataCategory
from ..models.purpose import Purpose
from ..types import UNSET, Unset
from typing import cast
from uuid import UUID
import datetime

if TYPE_CHECKING:
  from ..models.public_decision import PublicDecision





T = TypeVar("T", bound="RegisterEntry")



@_attrs_define
class RegisterEntry:
    """ One application as the public sees it.

        Attributes:
            applicant_organisation (str): An organisation: an applicant's organisation or a data holder. Matches the
                organisation claim
                of the caller's token.
            application_id (UUID): Identifier of a data access application (Art. 67).
            categories (list[DataCategory]):
            data_holders (list[str]):
            kind (ApplicationKind): What is applied for.
            member_states (list[str]):
            public_body (bool):
            purposes (list[Purpose]):
            received_at (datetime.datetime):
            requested_period_end (datetime.datetime):
            requested_period_start (datetime.datetime):
            status (str): `received` until a decision is published; then the decision's outcome, or
                `withdrawn` / `lapsed`.
            title (str):
            updated_at (datetime.datetime): The last change the public can see, for feeds.
            decision (None | PublicDecision | Unset):
            extended_months (int | None | Unset): When the decision period was extended, and by how many months.
     """

    applicant_organisation: str
    application_id: UUID
    categories: list[DataCategory]
    data_holders: list[str]
    kind: ApplicationKind
    member_states: list[str]
    public_body: bool
    purposes: list[Purpose]
    received_at: datetime.datetime
    requested_period_end: datetime.datetime
    requested_period_start: datetime.datetime
    status: str
    title: str
    updated_at: datetime.datetime
    decision: None | PublicDecision | Unset = UNSET
    extended_months: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.public_decision import PublicDecision # noqa: PLC0415
        applicant_organisation = self.applicant_organisation

        application_id = str(self.application_id)

        categories = []
        for categories_item_data in self.categories:
            categories_item = categories_item_data.value
            categories.append(categories_item)



        data_holders = self.data_holders



        kind = self.kind.value

        member_states = self.member_states



        public_body = self.public_body

        purposes = []
        for purposes_item_data in self.purposes:
            purposes_item = purposes_item_data.value
            purposes.append(purposes_item)



        received_at = self.received_at.isoformat()

        requested_period_end = self.requested_period_end.isoformat()

        requested_period_start = self.requested_period_start.isoformat()

        status = self.status

        title = self.title

        updated_at = self.updated_at.isoformat()

        decision: dict[str, Any] | None | Unset
        if isinstance(self.decision, Unset):
            decision = UNSET
        elif isinstance(self.decision, PublicDecision):
            decision = self.decision.to_dict()
        else:
            decision = self.decision

        extended_months: int | None | Unset
        if isinstance(self.extended_months, Unset):
            extended_months = UNSET
        else:
            extended_months = self.extended_months


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "applicant_organisation": applicant_organisation,
            "application_id": application_id,
            "categories": categories,
            "data_holders": data_holders,
            "kind": kind,
            "member_states": member_states,
            "public_body": public_body,
            "purposes": purposes,
            "received_at": received_at,
            "requested_period_end": requested_period_end,
            "requested_period_start": requested_period_start,
            "status": status,
            "title": title,
            "updated_at": updated_at,
        })
        if decision is not UNSET:
            field_dict["decision"] = decision
        if extended_months is not UNSET:
            field_dict["extended_months"] = extended_months

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.public_decision import PublicDecision # noqa: PLC0415
        d = dict(src_dict)
        applicant_organisation = d.pop("applicant_organisation")

        application_id = UUID(d.pop("application_id"))




        categories = []
        _categories = d.pop("categories")
        for categories_item_data in (_categories):
            categories_item = DataCategory(categories_item_data)



            categories.append(categories_item)


        data_holders = cast(list[str], d.pop("data_holders"))


        kind = ApplicationKind(d.pop("kind"))




        member_states = cast(list[str], d.pop("member_states"))


        public_body = d.pop("public_body")

        purposes = []
        _purposes = d.pop("purposes")
        for purposes_item_data in (_purposes):
            purposes_item = Purpose(purposes_item_data)



            purposes.append(purposes_item)


        received_at = datetime.datetime.fromisoformat(d.pop("received_at"))




        requested_period_end = datetime.datetime.fromisoformat(d.pop("requested_period_end"))




        requested_period_start = datetime.datetime.fromisoformat(d.pop("requested_period_start"))




        status = d.pop("status")

        title = d.pop("title")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))




        def _parse_decision(data: object) -> None | PublicDecision | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                decision_type_0 = PublicDecision.from_dict(data)



                return decision_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PublicDecision | Unset, data)

        decision = _parse_decision(d.pop("decision", UNSET))


        def _parse_extended_months(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        extended_months = _parse_extended_months(d.pop("extended_months", UNSET))


        register_entry = cls(
            applicant_organisation=applicant_organisation,
            application_id=application_id,
            categories=categories,
            data_holders=data_holders,
            kind=kind,
            member_states=member_states,
            public_body=public_body,
            purposes=purposes,
            received_at=received_at,
            requested_period_end=requested_period_end,
            requested_period_start=requested_period_start,
            status=status,
            title=title,
            updated_at=updated_at,
            decision=decision,
            extended_months=extended_months,
        )


        register_entry.additional_properties = d
        return register_entry

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
