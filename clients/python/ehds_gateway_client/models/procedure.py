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
  from ..models.category_assessment import CategoryAssessment
  from ..models.conversion import Conversion
  from ..models.declined_grant import DeclinedGrant
  from ..models.extension import Extension
  from ..models.fee_estimate import FeeEstimate
  from ..models.grant_scope import GrantScope
  from ..models.information_request import InformationRequest
  from ..models.invoice import Invoice
  from ..models.proposed_grant import ProposedGrant
  from ..models.routing import Routing





T = TypeVar("T", bound="Procedure")



@_attrs_define
class Procedure:
    """ The record of the procedure: every step's facts, from which the clocks are computed.

        Attributes:
            completed_at (datetime.datetime | None | Unset): When the application was found complete: the decision clock
                starts (Art. 68(4)).
            conversion (Conversion | None | Unset):
            declined_grants (list[DeclinedGrant] | Unset): Declined proposals (four-eyes), newest last.
            extension (Extension | None | Unset):
            fee_estimate (FeeEstimate | None | Unset):
            information_requests (list[InformationRequest] | Unset):
            invoice (Invoice | None | Unset):
            minimisation (list[CategoryAssessment] | Unset):
            proposed_grant (None | ProposedGrant | Unset):
            published_at (datetime.datetime | None | Unset): When the decision was made public (Art. 57(1)(j)(iii)).
            routing (None | Routing | Unset):
            scope (GrantScope | None | Unset):
     """

    completed_at: datetime.datetime | None | Unset = UNSET
    conversion: Conversion | None | Unset = UNSET
    declined_grants: list[DeclinedGrant] | Unset = UNSET
    extension: Extension | None | Unset = UNSET
    fee_estimate: FeeEstimate | None | Unset = UNSET
    information_requests: list[InformationRequest] | Unset = UNSET
    invoice: Invoice | None | Unset = UNSET
    minimisation: list[CategoryAssessment] | Unset = UNSET
    proposed_grant: None | ProposedGrant | Unset = UNSET
    published_at: datetime.datetime | None | Unset = UNSET
    routing: None | Routing | Unset = UNSET
    scope: GrantScope | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.category_assessment import CategoryAssessment # noqa: PLC0415
        from ..models.conversion import Conversion # noqa: PLC0415
        from ..models.declined_grant import DeclinedGrant # noqa: PLC0415
        from ..models.extension import Extension # noqa: PLC0415
        from ..models.fee_estimate import FeeEstimate # noqa: PLC0415
        from ..models.grant_scope import GrantScope # noqa: PLC0415
        from ..models.information_request import InformationRequest # noqa: PLC0415
        from ..models.invoice import Invoice # noqa: PLC0415
        from ..models.proposed_grant import ProposedGrant # noqa: PLC0415
        from ..models.routing import Routing # noqa: PLC0415
        completed_at: None | str | Unset
        if isinstance(self.completed_at, Unset):
            completed_at = UNSET
        elif isinstance(self.completed_at, datetime.datetime):
            completed_at = self.completed_at.isoformat()
        else:
            completed_at = self.completed_at

        conversion: dict[str, Any] | None | Unset
        if isinstance(self.conversion, Unset):
            conversion = UNSET
        elif isinstance(self.conversion, Conversion):
            conversion = self.conversion.to_dict()
        else:
            conversion = self.conversion

        declined_grants: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.declined_grants, Unset):
            declined_grants = []
            for declined_grants_item_data in self.declined_grants:
                declined_grants_item = declined_grants_item_data.to_dict()
                declined_grants.append(declined_grants_item)



        extension: dict[str, Any] | None | Unset
        if isinstance(self.extension, Unset):
            extension = UNSET
        elif isinstance(self.extension, Extension):
            extension = self.extension.to_dict()
        else:
            extension = self.extension

        fee_estimate: dict[str, Any] | None | Unset
        if isinstance(self.fee_estimate, Unset):
            fee_estimate = UNSET
        elif isinstance(self.fee_estimate, FeeEstimate):
            fee_estimate = self.fee_estimate.to_dict()
        else:
            fee_estimate = self.fee_estimate

        information_requests: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.information_requests, Unset):
            information_requests = []
            for information_requests_item_data in self.information_requests:
                information_requests_item = information_requests_item_data.to_dict()
                information_requests.append(information_requests_item)



        invoice: dict[str, Any] | None | Unset
        if isinstance(self.invoice, Unset):
            invoice = UNSET
        elif isinstance(self.invoice, Invoice):
            invoice = self.invoice.to_dict()
        else:
            invoice = self.invoice

        minimisation: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.minimisation, Unset):
            minimisation = []
            for minimisation_item_data in self.minimisation:
                minimisation_item = minimisation_item_data.to_dict()
                minimisation.append(minimisation_item)



        proposed_grant: dict[str, Any] | None | Unset
        if isinstance(self.proposed_grant, Unset):
            proposed_grant = UNSET
        elif isinstance(self.proposed_grant, ProposedGrant):
            proposed_grant = self.proposed_grant.to_dict()
        else:
            proposed_grant = self.proposed_grant

        published_at: None | str | Unset
        if isinstance(self.published_at, Unset):
            published_at = UNSET
        elif isinstance(self.published_at, datetime.datetime):
            published_at = self.published_at.isoformat()
        else:
            published_at = self.published_at

        routing: dict[str, Any] | None | Unset
        if isinstance(self.routing, Unset):
            routing = UNSET
        elif isinstance(self.routing, Routing):
            routing = self.routing.to_dict()
        else:
            routing = self.routing

        scope: dict[str, Any] | None | Unset
        if isinstance(self.scope, Unset):
            scope = UNSET
        elif isinstance(self.scope, GrantScope):
            scope = self.scope.to_dict()
        else:
            scope = self.scope


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
        })
        if completed_at is not UNSET:
            field_dict["completed_at"] = completed_at
        if conversion is not UNSET:
            field_dict["conversion"] = conversion
        if declined_grants is not UNSET:
            field_dict["declined_grants"] = declined_grants
        if extension is not UNSET:
            field_dict["extension"] = extension
        if fee_estimate is not UNSET:
            field_dict["fee_estimate"] = fee_estimate
        if information_requests is not UNSET:
            field_dict["information_requests"] = information_requests
        if invoice is not UNSET:
            field_dict["invoice"] = invoice
        if minimisation is not UNSET:
            field_dict["minimisation"] = minimisation
        if proposed_grant is not UNSET:
            field_dict["proposed_grant"] = proposed_grant
        if published_at is not UNSET:
            field_dict["published_at"] = published_at
        if routing is not UNSET:
            field_dict["routing"] = routing
        if scope is not UNSET:
            field_dict["scope"] = scope

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.category_assessment import CategoryAssessment # noqa: PLC0415
        from ..models.conversion import Conversion # noqa: PLC0415
        from ..models.declined_grant import DeclinedGrant # noqa: PLC0415
        from ..models.extension import Extension # noqa: PLC0415
        from ..models.fee_estimate import FeeEstimate # noqa: PLC0415
        from ..models.grant_scope import GrantScope # noqa: PLC0415
        from ..models.information_request import InformationRequest # noqa: PLC0415
        from ..models.invoice import Invoice # noqa: PLC0415
        from ..models.proposed_grant import ProposedGrant # noqa: PLC0415
        from ..models.routing import Routing # noqa: PLC0415
        d = dict(src_dict)
        def _parse_completed_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                completed_at_type_0 = datetime.datetime.fromisoformat(data)



                return completed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        completed_at = _parse_completed_at(d.pop("completed_at", UNSET))


        def _parse_conversion(data: object) -> Conversion | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                conversion_type_0 = Conversion.from_dict(data)



                return conversion_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Conversion | None | Unset, data)

        conversion = _parse_conversion(d.pop("conversion", UNSET))


        _declined_grants = d.pop("declined_grants", UNSET)
        declined_grants: list[DeclinedGrant] | Unset = UNSET
        if _declined_grants is not UNSET:
            declined_grants = []
            for declined_grants_item_data in _declined_grants:
                declined_grants_item = DeclinedGrant.from_dict(declined_grants_item_data)



                declined_grants.append(declined_grants_item)


        def _parse_extension(data: object) -> Extension | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                extension_type_0 = Extension.from_dict(data)



                return extension_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Extension | None | Unset, data)

        extension = _parse_extension(d.pop("extension", UNSET))


        def _parse_fee_estimate(data: object) -> FeeEstimate | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                fee_estimate_type_0 = FeeEstimate.from_dict(data)



                return fee_estimate_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(FeeEstimate | None | Unset, data)

        fee_estimate = _parse_fee_estimate(d.pop("fee_estimate", UNSET))


        _information_requests = d.pop("information_requests", UNSET)
        information_requests: list[InformationRequest] | Unset = UNSET
        if _information_requests is not UNSET:
            information_requests = []
            for information_requests_item_data in _information_requests:
                information_requests_item = InformationRequest.from_dict(information_requests_item_data)



                information_requests.append(information_requests_item)


        def _parse_invoice(data: object) -> Invoice | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                invoice_type_0 = Invoice.from_dict(data)



                return invoice_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Invoice | None | Unset, data)

        invoice = _parse_invoice(d.pop("invoice", UNSET))


        _minimisation = d.pop("minimisation", UNSET)
        minimisation: list[CategoryAssessment] | Unset = UNSET
        if _minimisation is not UNSET:
            minimisation = []
            for minimisation_item_data in _minimisation:
                minimisation_item = CategoryAssessment.from_dict(minimisation_item_data)



                minimisation.append(minimisation_item)


        def _parse_proposed_grant(data: object) -> None | ProposedGrant | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                proposed_grant_type_0 = ProposedGrant.from_dict(data)



                return proposed_grant_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ProposedGrant | Unset, data)

        proposed_grant = _parse_proposed_grant(d.pop("proposed_grant", UNSET))


        def _parse_published_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                published_at_type_0 = datetime.datetime.fromisoformat(data)



                return published_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        published_at = _parse_published_at(d.pop("published_at", UNSET))


        def _parse_routing(data: object) -> None | Routing | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                routing_type_0 = Routing.from_dict(data)



                return routing_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Routing | Unset, data)

        routing = _parse_routing(d.pop("routing", UNSET))


        def _parse_scope(data: object) -> GrantScope | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                scope_type_0 = GrantScope.from_dict(data)



                return scope_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(GrantScope | None | Unset, data)

        scope = _parse_scope(d.pop("scope", UNSET))


        procedure = cls(
            completed_at=completed_at,
            conversion=conversion,
            declined_grants=declined_grants,
            extension=extension,
            fee_estimate=fee_estimate,
            information_requests=information_requests,
            invoice=invoice,
            minimisation=minimisation,
            proposed_grant=proposed_grant,
            published_at=published_at,
            routing=routing,
            scope=scope,
        )


        procedure.additional_properties = d
        return procedure

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
