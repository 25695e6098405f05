from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.application_status import ApplicationStatus
from ..types import UNSET, Unset
from typing import cast
from uuid import UUID
import datetime

if TYPE_CHECKING:
  from ..models.new_application import NewApplication
  from ..models.procedure import Procedure





T = TypeVar("T", bound="Application")



@_attrs_define
class Application:
    """ 
        Attributes:
            applicant_sub (str):
            id (UUID): Identifier of a data access application (Art. 67).
            request (NewApplication): A parsed, internally consistent application.
            status (ApplicationStatus): Where an application stands in the procedure (see [`procedure`]).
            submitted_at (datetime.datetime):
            decided_at (datetime.datetime | None | Unset):
            decided_by (None | str | Unset):
            decision_reason (None | str | Unset):
            permit_id (None | Unset | UUID):
            procedure (Procedure | Unset): The record of the procedure: every step's facts, from which the clocks are
                computed.
     """

    applicant_sub: str
    id: UUID
    request: NewApplication
    status: ApplicationStatus
    submitted_at: datetime.datetime
    decided_at: datetime.datetime | None | Unset = UNSET
    decided_by: None | str | Unset = UNSET
    decision_reason: None | str | Unset = UNSET
    permit_id: None | Unset | UUID = UNSET
    procedure: Procedure | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.new_application import NewApplication # noqa: PLC0415
        from ..models.procedure import Procedure # noqa: PLC0415
        applicant_sub = self.applicant_sub

        id = str(self.id)

        request = self.request.to_dict()

        status = self.status.value

        submitted_at = self.submitted_at.isoformat()

        decided_at: None | str | Unset
        if isinstance(self.decided_at, Unset):
            decided_at = UNSET
        elif isinstance(self.decided_at, datetime.datetime):
            decided_at = self.decided_at.isoformat()
        else:
            decided_at = self.decided_at

        decided_by: None | str | Unset
        if isinstance(self.decided_by, Unset):
            decided_by = UNSET
        else:
            decided_by = self.decided_by

        decision_reason: None | str | Unset
        if isinstance(self.decision_reason, Unset):
            decision_reason = UNSET
        else:
            decision_reason = self.decision_reason

        permit_id: None | str | Unset
        if isinstance(self.permit_id, Unset):
            permit_id = UNSET
        elif isinstance(self.permit_id, UUID):
            permit_id = str(self.permit_id)
        else:
            permit_id = self.permit_id

        procedure: dict[str, Any] | Unset = UNSET
        if not isinstance(self.procedure, Unset):
            procedure = self.procedure.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "applicant_sub": applicant_sub,
            "id": id,
            "request": request,
            "status": status,
            "submitted_at": submitted_at,
        })
        if decided_at is not UNSET:
            field_dict["decided_at"] = decided_at
        if decided_by is not UNSET:
            field_dict["decided_by"] = decided_by
        if decision_reason is not UNSET:
            field_dict["decision_reason"] = decision_reason
        if permit_id is not UNSET:
            field_dict["permit_id"] = permit_id
        if procedure is not UNSET:
            field_dict["procedure"] = procedure

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.new_application import NewApplication # noqa: PLC0415
        from ..models.procedure import Procedure # noqa: PLC0415
        d = dict(src_dict)
        applicant_sub = d.pop("applicant_sub")

        id = UUID(d.pop("id"))




        request = NewApplication.from_dict(d.pop("request"))




        status = ApplicationStatus(d.pop("status"))




        submitted_at = datetime.datetime.fromisoformat(d.pop("submitted_at"))




        def _parse_decided_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                decided_at_type_0 = datetime.datetime.fromisoformat(data)



                return decided_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        decided_at = _parse_decided_at(d.pop("decided_at", UNSET))


        def _parse_decided_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        decided_by = _parse_decided_by(d.pop("decided_by", UNSET))


        def _parse_decision_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        decision_reason = _parse_decision_reason(d.pop("decision_reason", UNSET))


        def _parse_permit_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                permit_id_type_0 = UUID(data)



                return permit_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        permit_id = _parse_permit_id(d.pop("permit_id", UNSET))


        _procedure = d.pop("procedure", UNSET)
        procedure: Procedure | Unset
        if isinstance(_procedure,  Unset):
            procedure = UNSET
        else:
            procedure = Procedure.from_dict(_procedure)




        application = cls(
            applicant_sub=applicant_sub,
            id=id,
            request=request,
            status=status,
            submitted_at=submitted_at,
            decided_at=decided_at,
            decided_by=decided_by,
            decision_reason=decision_reason,
            permit_id=permit_id,
            procedure=procedure,
        )


        application.additional_properties = d
        return application

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
