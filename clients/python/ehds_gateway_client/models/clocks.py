from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="Clocks")



@_attrs_define
class Clocks:
    """ The deadlines of an application at one instant, all computed from its record.

        Attributes:
            decision_clock_stopped (bool): The decision clock is stopped by an open information request.
            overdue (bool):
            decision_due (datetime.datetime | None | Unset): When the decision is due: three months from completeness, plus
                the extension, plus the
                time information requests stopped the clock. Absent before the application is complete.
            fee_response_due (datetime.datetime | None | Unset):
            information_due (datetime.datetime | None | Unset):
            next_due (datetime.datetime | None | Unset): The deadline the current state runs against.
            publication_due (datetime.datetime | None | Unset): When the decision must be public (30 working days in the
                HDAB's member state).
     """

    decision_clock_stopped: bool
    overdue: bool
    decision_due: datetime.datetime | None | Unset = UNSET
    fee_response_due: datetime.datetime | None | Unset = UNSET
    information_due: datetime.datetime | None | Unset = UNSET
    next_due: datetime.datetime | None | Unset = UNSET
    publication_due: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        decision_clock_stopped = self.decision_clock_stopped

        overdue = self.overdue

        decision_due: None | str | Unset
        if isinstance(self.decision_due, Unset):
            decision_due = UNSET
        elif isinstance(self.decision_due, datetime.datetime):
            decision_due = self.decision_due.isoformat()
        else:
            decision_due = self.decision_due

        fee_response_due: None | str | Unset
        if isinstance(self.fee_response_due, Unset):
            fee_response_due = UNSET
        elif isinstance(self.fee_response_due, datetime.datetime):
            fee_response_due = self.fee_response_due.isoformat()
        else:
            fee_response_due = self.fee_response_due

        information_due: None | str | Unset
        if isinstance(self.information_due, Unset):
            information_due = UNSET
        elif isinstance(self.information_due, datetime.datetime):
            information_due = self.information_due.isoformat()
        else:
            information_due = self.information_due

        next_due: None | str | Unset
        if isinstance(self.next_due, Unset):
            next_due = UNSET
        elif isinstance(self.next_due, datetime.datetime):
            next_due = self.next_due.isoformat()
        else:
            next_due = self.next_due

        publication_due: None | str | Unset
        if isinstance(self.publication_due, Unset):
            publication_due = UNSET
        elif isinstance(self.publication_due, datetime.datetime):
            publication_due = self.publication_due.isoformat()
        else:
            publication_due = self.publication_due


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "decision_clock_stopped": decision_clock_stopped,
            "overdue": overdue,
        })
        if decision_due is not UNSET:
            field_dict["decision_due"] = decision_due
        if fee_response_due is not UNSET:
            field_dict["fee_response_due"] = fee_response_due
        if information_due is not UNSET:
            field_dict["information_due"] = information_due
        if next_due is not UNSET:
            field_dict["next_due"] = next_due
        if publication_due is not UNSET:
            field_dict["publication_due"] = publication_due

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        decision_clock_stopped = d.pop("decision_clock_stopped")

        overdue = d.pop("overdue")

        def _parse_decision_due(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                decision_due_type_0 = datetime.datetime.fromisoformat(data)



                return decision_due_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        decision_due = _parse_decision_due(d.pop("decision_due", UNSET))


        def _parse_fee_response_due(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                fee_response_due_type_0 = datetime.datetime.fromisoformat(data)



                return fee_response_due_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        fee_response_due = _parse_fee_response_due(d.pop("fee_response_due", UNSET))


        def _parse_information_due(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                information_due_type_0 = datetime.datetime.fromisoformat(data)



                return information_due_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        information_due = _parse_information_due(d.pop("information_due", UNSET))


        def _parse_next_due(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_due_type_0 = datetime.datetime.fromisoformat(data)



                return next_due_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        next_due = _parse_next_due(d.pop("next_due", UNSET))


        def _parse_publication_due(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                publication_due_type_0 = datetime.datetime.fromisoformat(data)



                return publication_due_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        publication_due = _parse_publication_due(d.pop("publication_due", UNSET))


        clocks = cls(
            decision_clock_stopped=decision_clock_stopped,
            overdue=overdue,
            decision_due=decision_due,
            fee_response_due=fee_response_due,
            information_due=information_due,
            next_due=next_due,
            publication_due=publication_due,
        )


        clocks.additional_properties = d
        return clocks

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
