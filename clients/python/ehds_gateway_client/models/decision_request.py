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
            reason (None | str | Unset): Required for a rejection (Art. 68(9)); an optional note for an approval.
            require_secure_aggregation (bool | Unset): Studies under the permit must use secure aggregation, so that the
                gateway never sees
                one holder's update (default false). Approval only.
     """

    decision: DecisionKind
    conditions: None | str | Unset = UNSET
    dp_requirement: DpRequirement | Unset = UNSET
    grant_optout_exception: bool | Unset = UNSET
    reason: None | str | Unset = UNSET
    require_secure_aggregation: bool | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
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

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        require_secure_aggregation = self.require_secure_aggregation


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
        if reason is not UNSET:
            field_dict["reason"] = reason
        if require_secure_aggregation is not UNSET:
            field_dict["require_secure_aggregation"] = require_secure_aggregation

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
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

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        require_secure_aggregation = d.pop("require_secure_aggregation", UNSET)

        decision_request = cls(
            decision=decision,
            conditions=conditions,
            dp_requirement=dp_requirement,
            grant_optout_exception=grant_optout_exception,
            reason=reason,
            require_secure_aggregation=require_secure_aggregation,
        )

        return decision_request

