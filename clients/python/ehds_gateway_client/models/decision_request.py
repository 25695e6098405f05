from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.decision_kind import DecisionKind
from ..models.dp_requirement import DpRequirement
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.assessment_request import AssessmentRequest
  from ..models.scope_request import ScopeRequest





T = TypeVar("T", bound="DecisionRequest")



@_attrs_define
class DecisionRequest:
    """ 
        Attributes:
            decision (DecisionKind):
            conditions (None | str | Unset): Conditions attached to the permit.
            dp_requirement (DpRequirement | Unset): What the HDAB's decision requires of every study's privacy plan under a
                permit. Amendable
                like the other terms. Permits issued before this term existed allow client- or record-level
                DP, which is also the default of a new decision.
            grant_optout_exception (bool | Unset): Whether the HDAB grants the Art. 71(4) exception the application asked
                for.
            minimisation (list[AssessmentRequest] | Unset): The data-minimisation assessment of requested categories (Art.
                68(1)(b), Art. 66). A
                category found not necessary must be left out of a grant's scope.
            reason (None | str | Unset): Required for a refusal (Art. 68(9)) and for a partial grant; an optional note for a
                grant. Published in the public register with the decision: no personal data.
            require_secure_aggregation (bool | Unset): Studies under the permit must use secure aggregation, so that the
                gateway never sees
                one holder's update (default false). Approval only.
            scope (None | ScopeRequest | Unset):
     """

    decision: DecisionKind
    conditions: None | str | Unset = UNSET
    dp_requirement: DpRequirement | Unset = UNSET
    grant_optout_exception: bool | Unset = UNSET
    minimisation: list[AssessmentRequest] | Unset = UNSET
    reason: None | str | Unset = UNSET
    require_secure_aggregation: bool | Unset = UNSET
    scope: None | ScopeRequest | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.assessment_request import AssessmentRequest # noqa: PLC0415
        from ..models.scope_request import ScopeRequest # noqa: PLC0415
        decision = self.decision.value

        conditions: None | str | Unset
        if isinstance(self.conditions, Unset):
            conditions = UNSET
        else:
            conditions = self.conditions

        dp_requirement: str | Unset = UNSET
        if not isinstance(self.dp_requirement, Unset):
            dp_requirement = self.dp_requirement.value


        grant_optout_exception = self.grant_optout_exception

        minimisation: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.minimisation, Unset):
            minimisation = []
            for minimisation_item_data in self.minimisation:
                minimisation_item = minimisation_item_data.to_dict()
                minimisation.append(minimisation_item)



        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        require_secure_aggregation = self.require_secure_aggregation

        scope: dict[str, Any] | None | Unset
        if isinstance(self.scope, Unset):
            scope = UNSET
        elif isinstance(self.scope, ScopeRequest):
            scope = self.scope.to_dict()
        else:
            scope = self.scope


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "decision": decision,
        })
        if conditions is not UNSET:
            field_dict["conditions"] = conditions
        if dp_requirement is not UNSET:
            field_dict["dp_requirement"] = dp_requirement
        if grant_optout_exception is not UNSET:
            field_dict["grant_optout_exception"] = grant_optout_exception
        if minimisation is not UNSET:
            field_dict["minimisation"] = minimisation
        if reason is not UNSET:
            field_dict["reason"] = reason
        if require_secure_aggregation is not UNSET:
            field_dict["require_secure_aggregation"] = require_secure_aggregation
        if scope is not UNSET:
            field_dict["scope"] = scope

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.assessment_request import AssessmentRequest # noqa: PLC0415
        from ..models.scope_request import ScopeRequest # noqa: PLC0415
        d = dict(src_dict)
        decision = DecisionKind(d.pop("decision"))




        def _parse_conditions(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        conditions = _parse_conditions(d.pop("conditions", UNSET))


        _dp_requirement = d.pop("dp_requirement", UNSET)
        dp_requirement: DpRequirement | Unset
        if isinstance(_dp_requirement,  Unset):
            dp_requirement = UNSET
        else:
            dp_requirement = DpRequirement(_dp_requirement)




        grant_optout_exception = d.pop("grant_optout_exception", UNSET)

        _minimisation = d.pop("minimisation", UNSET)
        minimisation: list[AssessmentRequest] | Unset = UNSET
        if _minimisation is not UNSET:
            minimisation = []
            for minimisation_item_data in _minimisation:
                minimisation_item = AssessmentRequest.from_dict(minimisation_item_data)



                minimisation.append(minimisation_item)


        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        require_secure_aggregation = d.pop("require_secure_aggregation", UNSET)

        def _parse_scope(data: object) -> None | ScopeRequest | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                scope_type_0 = ScopeRequest.from_dict(data)



                return scope_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ScopeRequest | Unset, data)

        scope = _parse_scope(d.pop("scope", UNSET))


        decision_request = cls(
            decision=decision,
            conditions=conditions,
            dp_requirement=dp_requirement,
            grant_optout_exception=grant_optout_exception,
            minimisation=minimisation,
            reason=reason,
            require_secure_aggregation=require_secure_aggregation,
            scope=scope,
        )

        return decision_request

