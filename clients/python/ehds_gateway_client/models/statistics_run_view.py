from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.purpose import Purpose
from ..models.run_status import RunStatus
from ..types import UNSET, Unset
from typing import cast
from uuid import UUID
import datetime

if TYPE_CHECKING:
  from ..models.answer_type_0 import AnswerType0
  from ..models.answer_type_1 import AnswerType1
  from ..models.charge import Charge
  from ..models.differencing_risk import DifferencingRisk
  from ..models.not_counted import NotCounted
  from ..models.query_form import QueryForm
  from ..models.release import Release
  from ..models.review import Review





T = TypeVar("T", bound="StatisticsRunView")



@_attrs_define
class StatisticsRunView:
    """ A run as the API shows it. `answer` is present once released (only the noisy values under
    differential privacy); `checked` is the output checker's verdict, shown to HDAB officers
    while they decide on a flagged answer.

        Attributes:
            created_at (datetime.datetime):
            deadline (datetime.datetime): The holders' nodes answer by then.
            differencing (list[DifferencingRisk]):
            flags (list[str]): Why the answer needed an officer, or was withheld.
            holders_asked (int):
            holders_missing (list[str]):
            id (UUID): Identifier of one statistical query answered by the federation.
            organisation (str):
            overdue (bool):
            permit_id (UUID): Identifier of a data permit (Art. 68).
            purpose (Purpose):
            query (QueryForm): A statistical query as the applicant submits it, before validation.
            requested_by (str):
            statistic (str):
            status (RunStatus): Where a run stands.
            answer (AnswerType0 | AnswerType1 | None | Unset):
            answer_due (datetime.datetime | None | Unset): Art. 69(4): when the answer to the data request is due.
            application_id (None | Unset | UUID):
            charge (Charge | None | Unset):
            checked (None | Release | Unset):
            finished_at (datetime.datetime | None | Unset):
            holders_answered (int | None | Unset):
            not_counted (None | NotCounted | Unset):
            review (None | Review | Unset):
     """

    created_at: datetime.datetime
    deadline: datetime.datetime
    differencing: list[DifferencingRisk]
    flags: list[str]
    holders_asked: int
    holders_missing: list[str]
    id: UUID
    organisation: str
    overdue: bool
    permit_id: UUID
    purpose: Purpose
    query: QueryForm
    requested_by: str
    statistic: str
    status: RunStatus
    answer: AnswerType0 | AnswerType1 | None | Unset = UNSET
    answer_due: datetime.datetime | None | Unset = UNSET
    application_id: None | Unset | UUID = UNSET
    charge: Charge | None | Unset = UNSET
    checked: None | Release | Unset = UNSET
    finished_at: datetime.datetime | None | Unset = UNSET
    holders_answered: int | None | Unset = UNSET
    not_counted: None | NotCounted | Unset = UNSET
    review: None | Review | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.answer_type_0 import AnswerType0 # noqa: PLC0415
        from ..models.answer_type_1 import AnswerType1 # noqa: PLC0415
        from ..models.charge import Charge # noqa: PLC0415
        from ..models.differencing_risk import DifferencingRisk # noqa: PLC0415
        from ..models.not_counted import NotCounted # noqa: PLC0415
        from ..models.query_form import QueryForm # noqa: PLC0415
        from ..models.release import Release # noqa: PLC0415
        from ..models.review import Review # noqa: PLC0415
        created_at = self.created_at.isoformat()

        deadline = self.deadline.isoformat()

        differencing = []
        for differencing_item_data in self.differencing:
            differencing_item = differencing_item_data.to_dict()
            differencing.append(differencing_item)



        flags = self.flags



        holders_asked = self.holders_asked

        holders_missing = self.holders_missing



        id = str(self.id)

        organisation = self.organisation

        overdue = self.overdue

        permit_id = str(self.permit_id)

        purpose = self.purpose.value

        query = self.query.to_dict()

        requested_by = self.requested_by

        statistic = self.statistic

        status = self.status.value

        answer: dict[str, Any] | None | Unset
        if isinstance(self.answer, Unset):
            answer = UNSET
        elif isinstance(self.answer, AnswerType0):
            answer = self.answer.to_dict()
        elif isinstance(self.answer, AnswerType1):
            answer = self.answer.to_dict()
        else:
            answer = self.answer

        answer_due: None | str | Unset
        if isinstance(self.answer_due, Unset):
            answer_due = UNSET
        elif isinstance(self.answer_due, datetime.datetime):
            answer_due = self.answer_due.isoformat()
        else:
            answer_due = self.answer_due

        application_id: None | str | Unset
        if isinstance(self.application_id, Unset):
            application_id = UNSET
        elif isinstance(self.application_id, UUID):
            application_id = str(self.application_id)
        else:
            application_id = self.application_id

        charge: dict[str, Any] | None | Unset
        if isinstance(self.charge, Unset):
            charge = UNSET
        elif isinstance(self.charge, Charge):
            charge = self.charge.to_dict()
        else:
            charge = self.charge

        checked: dict[str, Any] | None | Unset
        if isinstance(self.checked, Unset):
            checked = UNSET
        elif isinstance(self.checked, Release):
            checked = self.checked.to_dict()
        else:
            checked = self.checked

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        holders_answered: int | None | Unset
        if isinstance(self.holders_answered, Unset):
            holders_answered = UNSET
        else:
            holders_answered = self.holders_answered

        not_counted: dict[str, Any] | None | Unset
        if isinstance(self.not_counted, Unset):
            not_counted = UNSET
        elif isinstance(self.not_counted, NotCounted):
            not_counted = self.not_counted.to_dict()
        else:
            not_counted = self.not_counted

        review: dict[str, Any] | None | Unset
        if isinstance(self.review, Unset):
            review = UNSET
        elif isinstance(self.review, Review):
            review = self.review.to_dict()
        else:
            review = self.review


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "created_at": created_at,
            "deadline": deadline,
            "differencing": differencing,
            "flags": flags,
            "holders_asked": holders_asked,
            "holders_missing": holders_missing,
            "id": id,
            "organisation": organisation,
            "overdue": overdue,
            "permit_id": permit_id,
            "purpose": purpose,
            "query": query,
            "requested_by": requested_by,
            "statistic": statistic,
            "status": status,
        })
        if answer is not UNSET:
            field_dict["answer"] = answer
        if answer_due is not UNSET:
            field_dict["answer_due"] = answer_due
        if application_id is not UNSET:
            field_dict["application_id"] = application_id
        if charge is not UNSET:
            field_dict["charge"] = charge
        if checked is not UNSET:
            field_dict["checked"] = checked
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if holders_answered is not UNSET:
            field_dict["holders_answered"] = holders_answered
        if not_counted is not UNSET:
            field_dict["not_counted"] = not_counted
        if review is not UNSET:
            field_dict["review"] = review

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.answer_type_0 import AnswerType0 # noqa: PLC0415
        from ..models.answer_type_1 import AnswerType1 # noqa: PLC0415
        from ..models.charge import Charge # noqa: PLC0415
        from ..models.differencing_risk import DifferencingRisk # noqa: PLC0415
        from ..models.not_counted import NotCounted # noqa: PLC0415
        from ..models.query_form import QueryForm # noqa: PLC0415
        from ..models.release import Release # noqa: PLC0415
        from ..models.review import Review # noqa: PLC0415
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        deadline = datetime.datetime.fromisoformat(d.pop("deadline"))




        differencing = []
        _differencing = d.pop("differencing")
        for differencing_item_data in (_differencing):
            differencing_item = DifferencingRisk.from_dict(differencing_item_data)



            differencing.append(differencing_item)


        flags = cast(list[str], d.pop("flags"))


        holders_asked = d.pop("holders_asked")

        holders_missing = cast(list[str], d.pop("holders_missing"))


        id = UUID(d.pop("id"))




        organisation = d.pop("organisation")

        overdue = d.pop("overdue")

        permit_id = UUID(d.pop("permit_id"))




        purpose = Purpose(d.pop("purpose"))




        query = QueryForm.from_dict(d.pop("query"))




        requested_by = d.pop("requested_by")

        statistic = d.pop("statistic")

        status = RunStatus(d.pop("status"))




        def _parse_answer(data: object) -> AnswerType0 | AnswerType1 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_answer_type_0 = AnswerType0.from_dict(data)



                return componentsschemas_answer_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_answer_type_1 = AnswerType1.from_dict(data)



                return componentsschemas_answer_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AnswerType0 | AnswerType1 | None | Unset, data)

        answer = _parse_answer(d.pop("answer", UNSET))


        def _parse_answer_due(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                answer_due_type_0 = datetime.datetime.fromisoformat(data)



                return answer_due_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        answer_due = _parse_answer_due(d.pop("answer_due", UNSET))


        def _parse_application_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                application_id_type_0 = UUID(data)



                return application_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        application_id = _parse_application_id(d.pop("application_id", UNSET))


        def _parse_charge(data: object) -> Charge | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                charge_type_0 = Charge.from_dict(data)



                return charge_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Charge | None | Unset, data)

        charge = _parse_charge(d.pop("charge", UNSET))


        def _parse_checked(data: object) -> None | Release | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                checked_type_0 = Release.from_dict(data)



                return checked_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Release | Unset, data)

        checked = _parse_checked(d.pop("checked", UNSET))


        def _parse_finished_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)



                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))


        def _parse_holders_answered(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        holders_answered = _parse_holders_answered(d.pop("holders_answered", UNSET))


        def _parse_not_counted(data: object) -> None | NotCounted | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                not_counted_type_0 = NotCounted.from_dict(data)



                return not_counted_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | NotCounted | Unset, data)

        not_counted = _parse_not_counted(d.pop("not_counted", UNSET))


        def _parse_review(data: object) -> None | Review | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                review_type_0 = Review.from_dict(data)



                return review_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Review | Unset, data)

        review = _parse_review(d.pop("review", UNSET))


        statistics_run_view = cls(
            created_at=created_at,
            deadline=deadline,
            differencing=differencing,
            flags=flags,
            holders_asked=holders_asked,
            holders_missing=holders_missing,
            id=id,
            organisation=organisation,
            overdue=overdue,
            permit_id=permit_id,
            purpose=purpose,
            query=query,
            requested_by=requested_by,
            statistic=statistic,
            status=status,
            answer=answer,
            answer_due=answer_due,
            application_id=application_id,
            charge=charge,
            checked=checked,
            finished_at=finished_at,
            holders_answered=holders_answered,
            not_counted=not_counted,
            review=review,
        )


        statistics_run_view.additional_properties = d
        return statistics_run_view

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
