from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="AmendRequest")



@_attrs_define
class AmendRequest:
    """ 
        Attributes:
            reason (str):
            categories (list[str] | None | Unset):
            conditions (None | str | Unset):
            data_holders (list[str] | None | Unset):
            dp_requirement (None | str | Unset): The privacy requirement for the permit's studies from now on: `client`,
                `record`,
                `client_or_record` or `none_allowed`. Studies already accepted keep their plan.
            epsilon (float | None | Unset):
            member_states (list[str] | None | Unset):
            purposes (list[str] | None | Unset):
            require_secure_aggregation (bool | None | Unset): Whether the permit's studies must use secure aggregation from
                now on. Studies already
                accepted keep how they run.
     """

    reason: str
    categories: list[str] | None | Unset = UNSET
    conditions: None | str | Unset = UNSET
    data_holders: list[str] | None | Unset = UNSET
    dp_requirement: None | str | Unset = UNSET
    epsilon: float | None | Unset = UNSET
    member_states: list[str] | None | Unset = UNSET
    purposes: list[str] | None | Unset = UNSET
    require_secure_aggregation: bool | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        reason = self.reason

        categories: list[str] | None | Unset
        if isinstance(self.categories, Unset):
            categories = UNSET
        elif isinstance(self.categories, list):
            categories = self.categories


        else:
            categories = self.categories

        conditions: None | str | Unset
        if isinstance(self.conditions, Unset):
            conditions = UNSET
        else:
            conditions = self.conditions

        data_holders: list[str] | None | Unset
        if isinstance(self.data_holders, Unset):
            data_holders = UNSET
        elif isinstance(self.data_holders, list):
            data_holders = self.data_holders


        else:
            data_holders = self.data_holders

        dp_requirement: None | str | Unset
        if isinstance(self.dp_requirement, Unset):
            dp_requirement = UNSET
        else:
            dp_requirement = self.dp_requirement

        epsilon: float | None | Unset
        if isinstance(self.epsilon, Unset):
            epsilon = UNSET
        else:
            epsilon = self.epsilon

        member_states: list[str] | None | Unset
        if isinstance(self.member_states, Unset):
            member_states = UNSET
        elif isinstance(self.member_states, list):
            member_states = self.member_states


        else:
            member_states = self.member_states

        purposes: list[str] | None | Unset
        if isinstance(self.purposes, Unset):
            purposes = UNSET
        elif isinstance(self.purposes, list):
            purposes = self.purposes


        else:
            purposes = self.purposes

        require_secure_aggregation: bool | None | Unset
        if isinstance(self.require_secure_aggregation, Unset):
            require_secure_aggregation = UNSET
        else:
            require_secure_aggregation = self.require_secure_aggregation


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "reason": reason,
        })
        if categories is not UNSET:
            field_dict["categories"] = categories
        if conditions is not UNSET:
            field_dict["conditions"] = conditions
        if data_holders is not UNSET:
            field_dict["data_holders"] = data_holders
        if dp_requirement is not UNSET:
            field_dict["dp_requirement"] = dp_requirement
        if epsilon is not UNSET:
            field_dict["epsilon"] = epsilon
        if member_states is not UNSET:
            field_dict["member_states"] = member_states
        if purposes is not UNSET:
            field_dict["purposes"] = purposes
        if require_secure_aggregation is not UNSET:
            field_dict["require_secure_aggregation"] = require_secure_aggregation

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reason = d.pop("reason")

        def _parse_categories(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                categories_type_0 = cast(list[str], data)

                return categories_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        categories = _parse_categories(d.pop("categories", UNSET))


        def _parse_conditions(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        conditions = _parse_conditions(d.pop("conditions", UNSET))


        def _parse_data_holders(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                data_holders_type_0 = cast(list[str], data)

                return data_holders_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        data_holders = _parse_data_holders(d.pop("data_holders", UNSET))


        def _parse_dp_requirement(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        dp_requirement = _parse_dp_requirement(d.pop("dp_requirement", UNSET))


        def _parse_epsilon(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        epsilon = _parse_epsilon(d.pop("epsilon", UNSET))


        def _parse_member_states(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                member_states_type_0 = cast(list[str], data)

                return member_states_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        member_states = _parse_member_states(d.pop("member_states", UNSET))


        def _parse_purposes(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                purposes_type_0 = cast(list[str], data)

                return purposes_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        purposes = _parse_purposes(d.pop("purposes", UNSET))


        def _parse_require_secure_aggregation(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        require_secure_aggregation = _parse_require_secure_aggregation(d.pop("require_secure_aggregation", UNSET))


        amend_request = cls(
            reason=reason,
            categories=categories,
            conditions=conditions,
            data_holders=data_holders,
            dp_requirement=dp_requirement,
            epsilon=epsilon,
            member_states=member_states,
            purposes=purposes,
            require_secure_aggregation=require_secure_aggregation,
        )

        return amend_request

