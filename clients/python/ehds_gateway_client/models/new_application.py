from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.application_kind import ApplicationKind
from ..models.data_category import DataCategory
from ..models.purpose import Purpose
from ..models.research_flag import ResearchFlag
from ..models.user_kind import UserKind
from ..types import UNSET, Unset
from typing import cast
from uuid import UUID
import datetime

if TYPE_CHECKING:
  from ..models.declared_statistics import DeclaredStatistics
  from ..models.opt_out_exception import OptOutException
  from ..models.privacy_budget import PrivacyBudget





T = TypeVar("T", bound="NewApplication")



@_attrs_define
class NewApplication:
    """ A parsed, internally consistent application.

        Attributes:
            categories (list[DataCategory]):
            data_holders (list[str]):
            justification (str):
            member_states (list[str]):
            organisation (str): An organisation: an applicant's organisation or a data holder. Matches the organisation
                claim
                of the caller's token.
            period_end (datetime.datetime):
            period_start (datetime.datetime):
            privacy_budget (PrivacyBudget):
            public_body (bool):
            purposes (list[Purpose]):
            research_flags (list[ResearchFlag]):
            title (str):
            datasets (list[UUID] | Unset): The catalogue datasets (Art. 77) the application is for.
            kind (ApplicationKind | Unset): What is applied for.
            optout_exception (None | OptOutException | Unset):
            statistics (DeclaredStatistics | None | Unset):
            user_kinds (list[UserKind] | Unset): Kinds of user the fee schedule may reduce fees for (absent from older
                records).
     """

    categories: list[DataCategory]
    data_holders: list[str]
    justification: str
    member_states: list[str]
    organisation: str
    period_end: datetime.datetime
    period_start: datetime.datetime
    privacy_budget: PrivacyBudget
    public_body: bool
    purposes: list[Purpose]
    research_flags: list[ResearchFlag]
    title: str
    datasets: list[UUID] | Unset = UNSET
    kind: ApplicationKind | Unset = UNSET
    optout_exception: None | OptOutException | Unset = UNSET
    statistics: DeclaredStatistics | None | Unset = UNSET
    user_kinds: list[UserKind] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.declared_statistics import DeclaredStatistics # noqa: PLC0415
        from ..models.opt_out_exception import OptOutException # noqa: PLC0415
        from ..models.privacy_budget import PrivacyBudget # noqa: PLC0415
        categories = []
        for categories_item_data in self.categories:
            categories_item = categories_item_data.value
            categories.append(categories_item)



        data_holders = self.data_holders



        justification = self.justification

        member_states = self.member_states



        organisation = self.organisation

        period_end = self.period_end.isoformat()

        period_start = self.period_start.isoformat()

        privacy_budget = self.privacy_budget.to_dict()

        public_body = self.public_body

        purposes = []
        for purposes_item_data in self.purposes:
            purposes_item = purposes_item_data.value
            purposes.append(purposes_item)



        research_flags = []
        for research_flags_item_data in self.research_flags:
            research_flags_item = research_flags_item_data.value
            research_flags.append(research_flags_item)



        title = self.title

        datasets: list[str] | Unset = UNSET
        if not isinstance(self.datasets, Unset):
            datasets = []
            for datasets_item_data in self.datasets:
                datasets_item = str(datasets_item_data)
                datasets.append(datasets_item)



        kind: str | Unset = UNSET
        if not isinstance(self.kind, Unset):
            kind = self.kind.value


        optout_exception: dict[str, Any] | None | Unset
        if isinstance(self.optout_exception, Unset):
            optout_exception = UNSET
        elif isinstance(self.optout_exception, OptOutException):
            optout_exception = self.optout_exception.to_dict()
        else:
            optout_exception = self.optout_exception

        statistics: dict[str, Any] | None | Unset
        if isinstance(self.statistics, Unset):
            statistics = UNSET
        elif isinstance(self.statistics, DeclaredStatistics):
            statistics = self.statistics.to_dict()
        else:
            statistics = self.statistics

        user_kinds: list[str] | Unset = UNSET
        if not isinstance(self.user_kinds, Unset):
            user_kinds = []
            for user_kinds_item_data in self.user_kinds:
                user_kinds_item = user_kinds_item_data.value
                user_kinds.append(user_kinds_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "categories": categories,
            "data_holders": data_holders,
            "justification": justification,
            "member_states": member_states,
            "organisation": organisation,
            "period_end": period_end,
            "period_start": period_start,
            "privacy_budget": privacy_budget,
            "public_body": public_body,
            "purposes": purposes,
            "research_flags": research_flags,
            "title": title,
        })
        if datasets is not UNSET:
            field_dict["datasets"] = datasets
        if kind is not UNSET:
            field_dict["kind"] = kind
        if optout_exception is not UNSET:
            field_dict["optout_exception"] = optout_exception
        if statistics is not UNSET:
            field_dict["statistics"] = statistics
        if user_kinds is not UNSET:
            field_dict["user_kinds"] = user_kinds

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.declared_statistics import DeclaredStatistics # noqa: PLC0415
        from ..models.opt_out_exception import OptOutException # noqa: PLC0415
        from ..models.privacy_budget import PrivacyBudget # noqa: PLC0415
        d = dict(src_dict)
        categories = []
        _categories = d.pop("categories")
        for categories_item_data in (_categories):
            categories_item = DataCategory(categories_item_data)



            categories.append(categories_item)


        data_holders = cast(list[str], d.pop("data_holders"))


        justification = d.pop("justification")

        member_states = cast(list[str], d.pop("member_states"))


        organisation = d.pop("organisation")

        period_end = datetime.datetime.fromisoformat(d.pop("period_end"))




        period_start = datetime.datetime.fromisoformat(d.pop("period_start"))




        privacy_budget = PrivacyBudget.from_dict(d.pop("privacy_budget"))




        public_body = d.pop("public_body")

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


        title = d.pop("title")

        _datasets = d.pop("datasets", UNSET)
        datasets: list[UUID] | Unset = UNSET
        if _datasets is not UNSET:
            datasets = []
            for datasets_item_data in _datasets:
                datasets_item = UUID(datasets_item_data)



                datasets.append(datasets_item)


        _kind = d.pop("kind", UNSET)
        kind: ApplicationKind | Unset
        if isinstance(_kind,  Unset):
            kind = UNSET
        else:
            kind = ApplicationKind(_kind)




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


        def _parse_statistics(data: object) -> DeclaredStatistics | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                statistics_type_0 = DeclaredStatistics.from_dict(data)



                return statistics_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DeclaredStatistics | None | Unset, data)

        statistics = _parse_statistics(d.pop("statistics", UNSET))


        _user_kinds = d.pop("user_kinds", UNSET)
        user_kinds: list[UserKind] | Unset = UNSET
        if _user_kinds is not UNSET:
            user_kinds = []
            for user_kinds_item_data in _user_kinds:
                user_kinds_item = UserKind(user_kinds_item_data)



                user_kinds.append(user_kinds_item)


        new_application = cls(
            categories=categories,
            data_holders=data_holders,
            justification=justification,
            member_states=member_states,
            organisation=organisation,
            period_end=period_end,
            period_start=period_start,
            privacy_budget=privacy_budget,
            public_body=public_body,
            purposes=purposes,
            research_flags=research_flags,
            title=title,
            datasets=datasets,
            kind=kind,
            optout_exception=optout_exception,
            statistics=statistics,
            user_kinds=user_kinds,
        )


        new_application.additional_properties = d
        return new_application

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
