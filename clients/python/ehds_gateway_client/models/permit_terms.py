from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.dp_requirement import DpRequirement
from ..models.purpose import Purpose
from ..models.research_flag import ResearchFlag
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.opt_out_exception import OptOutException
  from ..models.permit_terms_categories_item import PermitTermsCategoriesItem
  from ..models.permit_terms_data_holders_item import PermitTermsDataHoldersItem
  from ..models.privacy_budget import PrivacyBudget





T = TypeVar("T", bound="PermitTerms")



@_attrs_define
class PermitTerms:
    """ 
        Attributes:
            categories (list[PermitTermsCategoriesItem]):
            data_holders (list[PermitTermsDataHoldersItem]):
            member_states (list[str]):
            privacy_budget (PrivacyBudget):
            purposes (list[Purpose]):
            research_flags (list[ResearchFlag]):
            conditions (None | str | Unset):
            dp_requirement (DpRequirement | Unset): What the HDAB's decision requires of every study's privacy plan under a
                permit. Amendable
                like the other terms. Permits issued before this term existed allow client- or record-level
                DP, which is also the default of a new decision.
            optout_exception (None | OptOutException | Unset):
            require_secure_aggregation (bool | Unset): Studies under the permit must sum the holders' updates under secure
                aggregation, so
                that the gateway never sees one (docs/secure-aggregation.md); absent on older permits.
            statistics_only (bool | Unset): Issued for an Art. 69 data request: only statistics are answered under it, never
                a
                study (absent on older permits, and written only when set, so that the terms of other
                permits serialise as before).
     """

    categories: list[PermitTermsCategoriesItem]
    data_holders: list[PermitTermsDataHoldersItem]
    member_states: list[str]
    privacy_budget: PrivacyBudget
    purposes: list[Purpose]
    research_flags: list[ResearchFlag]
    conditions: None | str | Unset = UNSET
    dp_requirement: DpRequirement | Unset = UNSET
    optout_exception: None | OptOutException | Unset = UNSET
    require_secure_aggregation: bool | Unset = UNSET
    statistics_only: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.opt_out_exception import OptOutException # noqa: PLC0415
        from ..models.permit_terms_categories_item import PermitTermsCategoriesItem # noqa: PLC0415
        from ..models.permit_terms_data_holders_item import PermitTermsDataHoldersItem # noqa: PLC0415
        from ..models.privacy_budget import PrivacyBudget # noqa: PLC0415
        categories = []
        for categories_item_data in self.categories:
            categories_item = categories_item_data.to_dict()
            categories.append(categories_item)



        data_holders = []
        for data_holders_item_data in self.data_holders:
            data_holders_item = data_holders_item_data.to_dict()
            data_holders.append(data_holders_item)



        member_states = self.member_states



        privacy_budget = self.privacy_budget.to_dict()

        purposes = []
        for purposes_item_data in self.purposes:
            purposes_item = purposes_item_data.value
            purposes.append(purposes_item)



        research_flags = []
        for research_flags_item_data in self.research_flags:
            research_flags_item = research_flags_item_data.value
            research_flags.append(research_flags_item)



        conditions: None | str | Unset
        if isinstance(self.conditions, Unset):
            conditions = UNSET
        else:
            conditions = self.conditions

        dp_requirement: str | Unset = UNSET
        if not isinstance(self.dp_requirement, Unset):
            dp_requirement = self.dp_requirement.value


        optout_exception: dict[str, Any] | None | Unset
        if isinstance(self.optout_exception, Unset):
            optout_exception = UNSET
        elif isinstance(self.optout_exception, OptOutException):
            optout_exception = self.optout_exception.to_dict()
        else:
            optout_exception = self.optout_exception

        require_secure_aggregation = self.require_secure_aggregation

        statistics_only = self.statistics_only


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "categories": categories,
            "data_holders": data_holders,
            "member_states": member_states,
            "privacy_budget": privacy_budget,
            "purposes": purposes,
            "research_flags": research_flags,
        })
        if conditions is not UNSET:
            field_dict["conditions"] = conditions
        if dp_requirement is not UNSET:
            field_dict["dp_requirement"] = dp_requirement
        if optout_exception is not UNSET:
            field_dict["optout_exception"] = optout_exception
        if require_secure_aggregation is not UNSET:
            field_dict["require_secure_aggregation"] = require_secure_aggregation
        if statistics_only is not UNSET:
            field_dict["statistics_only"] = statistics_only

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.opt_out_exception import OptOutException # noqa: PLC0415
        from ..models.permit_terms_categories_item import PermitTermsCategoriesItem # noqa: PLC0415
        from ..models.permit_terms_data_holders_item import PermitTermsDataHoldersItem # noqa: PLC0415
        from ..models.privacy_budget import PrivacyBudget # noqa: PLC0415
        d = dict(src_dict)
        categories = []
        _categories = d.pop("categories")
        for categories_item_data in (_categories):
            categories_item = PermitTermsCategoriesItem.from_dict(categories_item_data)



            categories.append(categories_item)


        data_holders = []
        _data_holders = d.pop("data_holders")
        for data_holders_item_data in (_data_holders):
            data_holders_item = PermitTermsDataHoldersItem.from_dict(data_holders_item_data)



            data_holders.append(data_holders_item)


        member_states = cast(list[str], d.pop("member_states"))


        privacy_budget = PrivacyBudget.from_dict(d.pop("privacy_budget"))




        purposes = []
        _purposes = d.pop("purposes")
        for purposes_item_data in (_purposes):
            purposes_item = Purpose(purposes_item_data)



            purposes.append(purposes_item)


        research_flags = []
        _research_flags = d.pop("research_flags")
        for research_flags_item_data in (_research_flags):
            research_flags_item = ResearchFlag(research_flags_item_data)



            research_flags.append(research_flags_item)


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




        def _parse_optout_exception(data: object) -> None | OptOutException | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                optout_exception_type_0 = OptOutException.from_dict(data)



                return optout_exception_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OptOutException | Unset, data)

        optout_exception = _parse_optout_exception(d.pop("optout_exception", UNSET))


        require_secure_aggregation = d.pop("require_secure_aggregation", UNSET)

        statistics_only = d.pop("statistics_only", UNSET)

        permit_terms = cls(
            categories=categories,
            data_holders=data_holders,
            member_states=member_states,
            privacy_budget=privacy_budget,
            purposes=purposes,
            research_flags=research_flags,
            conditions=conditions,
            dp_requirement=dp_requirement,
            optout_exception=optout_exception,
            require_secure_aggregation=require_secure_aggregation,
            statistics_only=statistics_only,
        )


        permit_terms.additional_properties = d
        return permit_terms

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
