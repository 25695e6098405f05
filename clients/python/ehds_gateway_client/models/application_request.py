from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.application_kind import ApplicationKind
from ..models.research_flag import ResearchFlag
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.applicant_request import ApplicantRequest
  from ..models.budget_request import BudgetRequest
  from ..models.opt_out_exception import OptOutException
  from ..models.period_request import PeriodRequest
  from ..models.statistics_request import StatisticsRequest





T = TypeVar("T", bound="ApplicationRequest")



@_attrs_define
class ApplicationRequest:
    """ The body of `POST /v1/applications`. Enumerations arrive as strings so that every bad value
    is reported with its own code and field.

        Attributes:
            applicant (ApplicantRequest):
            categories (list[str]): Art. 51(1) category identifiers.
            data_holders (list[str]):
            declares_no_prohibited_use (bool): The applicant's explicit declaration that no Art. 54 prohibited use is
                intended.
            justification (str):
            member_states (list[str]):
            privacy_budget (BudgetRequest):
            purposes (list[str]): Art. 53(1) purpose identifiers.
            requested_period (PeriodRequest):
            title (str):
            datasets (list[str] | Unset): Datasets of the HDAB's catalogue (Art. 77) the application is for: published ones,
                each
                of a holder the application names.
            kind (ApplicationKind | Unset): What is applied for.
            optout_exception (None | OptOutException | Unset):
            research_flags (list[ResearchFlag] | Unset):
            statistics (None | StatisticsRequest | Unset):
     """

    applicant: ApplicantRequest
    categories: list[str]
    data_holders: list[str]
    declares_no_prohibited_use: bool
    justification: str
    member_states: list[str]
    privacy_budget: BudgetRequest
    purposes: list[str]
    requested_period: PeriodRequest
    title: str
    datasets: list[str] | Unset = UNSET
    kind: ApplicationKind | Unset = UNSET
    optout_exception: None | OptOutException | Unset = UNSET
    research_flags: list[ResearchFlag] | Unset = UNSET
    statistics: None | StatisticsRequest | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.applicant_request import ApplicantRequest # noqa: PLC0415
        from ..models.budget_request import BudgetRequest # noqa: PLC0415
        from ..models.opt_out_exception import OptOutException # noqa: PLC0415
        from ..models.period_request import PeriodRequest # noqa: PLC0415
        from ..models.statistics_request import StatisticsRequest # noqa: PLC0415
        applicant = self.applicant.to_dict()

        categories = self.categories



        data_holders = self.data_holders



        declares_no_prohibited_use = self.declares_no_prohibited_use

        justification = self.justification

        member_states = self.member_states



        privacy_budget = self.privacy_budget.to_dict()

        purposes = self.purposes



        requested_period = self.requested_period.to_dict()

        title = self.title

        datasets: list[str] | Unset = UNSET
        if not isinstance(self.datasets, Unset):
            datasets = self.datasets



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

        research_flags: list[str] | Unset = UNSET
        if not isinstance(self.research_flags, Unset):
            research_flags = []
            for research_flags_item_data in self.research_flags:
                research_flags_item = research_flags_item_data.value
                research_flags.append(research_flags_item)



        statistics: dict[str, Any] | None | Unset
        if isinstance(self.statistics, Unset):
            statistics = UNSET
        elif isinstance(self.statistics, StatisticsRequest):
            statistics = self.statistics.to_dict()
        else:
            statistics = self.statistics


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "applicant": applicant,
            "categories": categories,
            "data_holders": data_holders,
            "declares_no_prohibited_use": declares_no_prohibited_use,
            "justification": justification,
            "member_states": member_states,
            "privacy_budget": privacy_budget,
            "purposes": purposes,
            "requested_period": requested_period,
            "title": title,
        })
        if datasets is not UNSET:
            field_dict["datasets"] = datasets
        if kind is not UNSET:
            field_dict["kind"] = kind
        if optout_exception is not UNSET:
            field_dict["optout_exception"] = optout_exception
        if research_flags is not UNSET:
            field_dict["research_flags"] = research_flags
        if statistics is not UNSET:
            field_dict["statistics"] = statistics

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.applicant_request import ApplicantRequest # noqa: PLC0415
        from ..models.budget_request import BudgetRequest # noqa: PLC0415
        from ..models.opt_out_exception import OptOutException # noqa: PLC0415
        from ..models.period_request import PeriodRequest # noqa: PLC0415
        from ..models.statistics_request import StatisticsRequest # noqa: PLC0415
        d = dict(src_dict)
        applicant = ApplicantRequest.from_dict(d.pop("applicant"))




        categories = cast(list[str], d.pop("categories"))


        data_holders = cast(list[str], d.pop("data_holders"))


        declares_no_prohibited_use = d.pop("declares_no_prohibited_use")

        justification = d.pop("justification")

        member_states = cast(list[str], d.pop("member_states"))


        privacy_budget = BudgetRequest.from_dict(d.pop("privacy_budget"))




        purposes = cast(list[str], d.pop("purposes"))


        requested_period = PeriodRequest.from_dict(d.pop("requested_period"))




        title = d.pop("title")

        datasets = cast(list[str], d.pop("datasets", UNSET))


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


        _research_flags = d.pop("research_flags", UNSET)
        research_flags: list[ResearchFlag] | Unset = UNSET
        if _research_flags is not UNSET:
            research_flags = []
            for research_flags_item_data in _research_flags:
                research_flags_item = ResearchFlag(research_flags_item_data)



                research_flags.append(research_flags_item)


        def _parse_statistics(data: object) -> None | StatisticsRequest | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                statistics_type_0 = StatisticsRequest.from_dict(data)



                return statistics_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StatisticsRequest | Unset, data)

        statistics = _parse_statistics(d.pop("statistics", UNSET))


        application_request = cls(
            applicant=applicant,
            categories=categories,
            data_holders=data_holders,
            declares_no_prohibited_use=declares_no_prohibited_use,
            justification=justification,
            member_states=member_states,
            privacy_budget=privacy_budget,
            purposes=purposes,
            requested_period=requested_period,
            title=title,
            datasets=datasets,
            kind=kind,
            optout_exception=optout_exception,
            research_flags=research_flags,
            statistics=statistics,
        )

        return application_request

