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

if TYPE_CHECKING:
  from ..models.budget_view import BudgetView
  from ..models.permit_state_type_0 import PermitStateType0
  from ..models.permit_state_type_1 import PermitStateType1
  from ..models.permit_state_type_2 import PermitStateType2
  from ..models.permit_state_type_3 import PermitStateType3
  from ..models.permit_terms import PermitTerms





T = TypeVar("T", bound="PermitView")



@_attrs_define
class PermitView:
    """ 
        Attributes:
            application_id (UUID): Identifier of a data access application (Art. 67).
            etag (str): The value to send back in `If-Match`.
            expires_at (datetime.datetime):
            id (UUID): Identifier of a data permit (Art. 68).
            issued_at (datetime.datetime):
            organisation (str): An organisation: an applicant's organisation or a data holder. Matches the organisation
                claim
                of the caller's token.
            principal_investigator (str):
            privacy_budget (BudgetView):
            public_body (bool):
            state (PermitStateType0 | PermitStateType1 | PermitStateType2 | PermitStateType3): The lifecycle. `Expired` is
                also derived from time: an active or suspended permit whose
                expiry has passed is expired whether or not anyone recorded it.
            status (str): The state now; `expired` is derived from time.
            terms (PermitTerms):
            terms_version (int):
            valid_from (datetime.datetime):
            extended_at (datetime.datetime | None | Unset):
     """

    application_id: UUID
    etag: str
    expires_at: datetime.datetime
    id: UUID
    issued_at: datetime.datetime
    organisation: str
    principal_investigator: str
    privacy_budget: BudgetView
    public_body: bool
    state: PermitStateType0 | PermitStateType1 | PermitStateType2 | PermitStateType3
    status: str
    terms: PermitTerms
    terms_version: int
    valid_from: datetime.datetime
    extended_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.budget_view import BudgetView # noqa: PLC0415
        from ..models.permit_state_type_0 import PermitStateType0 # noqa: PLC0415
        from ..models.permit_state_type_1 import PermitStateType1 # noqa: PLC0415
        from ..models.permit_state_type_2 import PermitStateType2 # noqa: PLC0415
        from ..models.permit_state_type_3 import PermitStateType3 # noqa: PLC0415
        from ..models.permit_terms import PermitTerms # noqa: PLC0415
        application_id = str(self.application_id)

        etag = self.etag

        expires_at = self.expires_at.isoformat()

        id = str(self.id)

        issued_at = self.issued_at.isoformat()

        organisation = self.organisation

        principal_investigator = self.principal_investigator

        privacy_budget = self.privacy_budget.to_dict()

        public_body = self.public_body

        state: dict[str, Any]
        if isinstance(self.state, PermitStateType0):
            state = self.state.to_dict()
        elif isinstance(self.state, PermitStateType1):
            state = self.state.to_dict()
        elif isinstance(self.state, PermitStateType2):
            state = self.state.to_dict()
        else:
            state = self.state.to_dict()


        status = self.status

        terms = self.terms.to_dict()

        terms_version = self.terms_version

        valid_from = self.valid_from.isoformat()

        extended_at: None | str | Unset
        if isinstance(self.extended_at, Unset):
            extended_at = UNSET
        elif isinstance(self.extended_at, datetime.datetime):
            extended_at = self.extended_at.isoformat()
        else:
            extended_at = self.extended_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "application_id": application_id,
            "etag": etag,
            "expires_at": expires_at,
            "id": id,
            "issued_at": issued_at,
            "organisation": organisation,
            "principal_investigator": principal_investigator,
            "privacy_budget": privacy_budget,
            "public_body": public_body,
            "state": state,
            "status": status,
            "terms": terms,
            "terms_version": terms_version,
            "valid_from": valid_from,
        })
        if extended_at is not UNSET:
            field_dict["extended_at"] = extended_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.budget_view import BudgetView # noqa: PLC0415
        from ..models.permit_state_type_0 import PermitStateType0 # noqa: PLC0415
        from ..models.permit_state_type_1 import PermitStateType1 # noqa: PLC0415
        from ..models.permit_state_type_2 import PermitStateType2 # noqa: PLC0415
        from ..models.permit_state_type_3 import PermitStateType3 # noqa: PLC0415
        from ..models.permit_terms import PermitTerms # noqa: PLC0415
        d = dict(src_dict)
        application_id = UUID(d.pop("application_id"))




        etag = d.pop("etag")

        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))




        id = UUID(d.pop("id"))




        issued_at = datetime.datetime.fromisoformat(d.pop("issued_at"))




        organisation = d.pop("organisation")

        principal_investigator = d.pop("principal_investigator")

        privacy_budget = BudgetView.from_dict(d.pop("privacy_budget"))




        public_body = d.pop("public_body")

        def _parse_state(data: object) -> PermitStateType0 | PermitStateType1 | PermitStateType2 | PermitStateType3:
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_permit_state_type_0 = PermitStateType0.from_dict(data)



                return componentsschemas_permit_state_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_permit_state_type_1 = PermitStateType1.from_dict(data)



                return componentsschemas_permit_state_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_permit_state_type_2 = PermitStateType2.from_dict(data)



                return componentsschemas_permit_state_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            componentsschemas_permit_state_type_3 = PermitStateType3.from_dict(data)



            return componentsschemas_permit_state_type_3

        state = _parse_state(d.pop("state"))


        status = d.pop("status")

        terms = PermitTerms.from_dict(d.pop("terms"))




        terms_version = d.pop("terms_version")

        valid_from = datetime.datetime.fromisoformat(d.pop("valid_from"))




        def _parse_extended_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                extended_at_type_0 = datetime.datetime.fromisoformat(data)



                return extended_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        extended_at = _parse_extended_at(d.pop("extended_at", UNSET))


        permit_view = cls(
            application_id=application_id,
            etag=etag,
            expires_at=expires_at,
            id=id,
            issued_at=issued_at,
            organisation=organisation,
            principal_investigator=principal_investigator,
            privacy_budget=privacy_budget,
            public_body=public_body,
            state=state,
            status=status,
            terms=terms,
            terms_version=terms_version,
            valid_from=valid_from,
            extended_at=extended_at,
        )


        permit_view.additional_properties = d
        return permit_view

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
