from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.dp_level import DpLevel
from ..models.round_phase import RoundPhase
from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.evaluation_view import EvaluationView
  from ..models.site_contribution_view import SiteContributionView





T = TypeVar("T", bound="RoundView")



@_attrs_define
class RoundView:
    """ 
        Attributes:
            attempt (int):
            deadline (datetime.datetime):
            dp (DpLevel): Which unit differential privacy protects in a study.
            opened_at (datetime.datetime):
            participants (list[str]):
            phase (RoundPhase): Where one attempt at a round stands.
            registry_version (int):
            round_ (int):
            sites (list[SiteContributionView]):
            closed_at (datetime.datetime | None | Unset):
            epsilon_round (float | None | Unset):
            epsilon_total (float | None | Unset): The study's epsilon after this round.
            evaluation (EvaluationView | None | Unset):
            excluded_subjects (int | None | Unset):
            noise_std_on_mean (float | None | Unset):
            reason (None | str | Unset):
            samples (int | None | Unset): Over the contributing holders; `null` where it would give back a withheld count.
            untrusted_updates (int | None | Unset): FLTrust: how many of the combined updates got trust 0 and did not move
                the model (a
                count of holders, never which ones; `null` for the other rules).
     """

    attempt: int
    deadline: datetime.datetime
    dp: DpLevel
    opened_at: datetime.datetime
    participants: list[str]
    phase: RoundPhase
    registry_version: int
    round_: int
    sites: list[SiteContributionView]
    closed_at: datetime.datetime | None | Unset = UNSET
    epsilon_round: float | None | Unset = UNSET
    epsilon_total: float | None | Unset = UNSET
    evaluation: EvaluationView | None | Unset = UNSET
    excluded_subjects: int | None | Unset = UNSET
    noise_std_on_mean: float | None | Unset = UNSET
    reason: None | str | Unset = UNSET
    samples: int | None | Unset = UNSET
    untrusted_updates: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.evaluation_view import EvaluationView # noqa: PLC0415
        from ..models.site_contribution_view import SiteContributionView # noqa: PLC0415
        attempt = self.attempt

        deadline = self.deadline.isoformat()

        dp = self.dp.value

        opened_at = self.opened_at.isoformat()

        participants = self.participants



        phase = self.phase.value

        registry_version = self.registry_version

        round_ = self.round_

        sites = []
        for sites_item_data in self.sites:
            sites_item = sites_item_data.to_dict()
            sites.append(sites_item)



        closed_at: None | str | Unset
        if isinstance(self.closed_at, Unset):
            closed_at = UNSET
        elif isinstance(self.closed_at, datetime.datetime):
            closed_at = self.closed_at.isoformat()
        else:
            closed_at = self.closed_at

        epsilon_round: float | None | Unset
        if isinstance(self.epsilon_round, Unset):
            epsilon_round = UNSET
        else:
            epsilon_round = self.epsilon_round

        epsilon_total: float | None | Unset
        if isinstance(self.epsilon_total, Unset):
            epsilon_total = UNSET
        else:
            epsilon_total = self.epsilon_total

        evaluation: dict[str, Any] | None | Unset
        if isinstance(self.evaluation, Unset):
            evaluation = UNSET
        elif isinstance(self.evaluation, EvaluationView):
            evaluation = self.evaluation.to_dict()
        else:
            evaluation = self.evaluation

        excluded_subjects: int | None | Unset
        if isinstance(self.excluded_subjects, Unset):
            excluded_subjects = UNSET
        else:
            excluded_subjects = self.excluded_subjects

        noise_std_on_mean: float | None | Unset
        if isinstance(self.noise_std_on_mean, Unset):
            noise_std_on_mean = UNSET
        else:
            noise_std_on_mean = self.noise_std_on_mean

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        samples: int | None | Unset
        if isinstance(self.samples, Unset):
            samples = UNSET
        else:
            samples = self.samples

        untrusted_updates: int | None | Unset
        if isinstance(self.untrusted_updates, Unset):
            untrusted_updates = UNSET
        else:
            untrusted_updates = self.untrusted_updates


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "attempt": attempt,
            "deadline": deadline,
            "dp": dp,
            "opened_at": opened_at,
            "participants": participants,
            "phase": phase,
            "registry_version": registry_version,
            "round": round_,
            "sites": sites,
        })
        if closed_at is not UNSET:
            field_dict["closed_at"] = closed_at
        if epsilon_round is not UNSET:
            field_dict["epsilon_round"] = epsilon_round
        if epsilon_total is not UNSET:
            field_dict["epsilon_total"] = epsilon_total
        if evaluation is not UNSET:
            field_dict["evaluation"] = evaluation
        if excluded_subjects is not UNSET:
            field_dict["excluded_subjects"] = excluded_subjects
        if noise_std_on_mean is not UNSET:
            field_dict["noise_std_on_mean"] = noise_std_on_mean
        if reason is not UNSET:
            field_dict["reason"] = reason
        if samples is not UNSET:
            field_dict["samples"] = samples
        if untrusted_updates is not UNSET:
            field_dict["untrusted_updates"] = untrusted_updates

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.evaluation_view import EvaluationView # noqa: PLC0415
        from ..models.site_contribution_view import SiteContributionView # noqa: PLC0415
        d = dict(src_dict)
        attempt = d.pop("attempt")

        deadline = datetime.datetime.fromisoformat(d.pop("deadline"))




        dp = DpLevel(d.pop("dp"))




        opened_at = datetime.datetime.fromisoformat(d.pop("opened_at"))




        participants = cast(list[str], d.pop("participants"))


        phase = RoundPhase(d.pop("phase"))




        registry_version = d.pop("registry_version")

        round_ = d.pop("round")

        sites = []
        _sites = d.pop("sites")
        for sites_item_data in (_sites):
            sites_item = SiteContributionView.from_dict(sites_item_data)



            sites.append(sites_item)


        def _parse_closed_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                closed_at_type_0 = datetime.datetime.fromisoformat(data)



                return closed_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        closed_at = _parse_closed_at(d.pop("closed_at", UNSET))


        def _parse_epsilon_round(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        epsilon_round = _parse_epsilon_round(d.pop("epsilon_round", UNSET))


        def _parse_epsilon_total(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        epsilon_total = _parse_epsilon_total(d.pop("epsilon_total", UNSET))


        def _parse_evaluation(data: object) -> EvaluationView | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                evaluation_type_0 = EvaluationView.from_dict(data)



                return evaluation_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EvaluationView | None | Unset, data)

        evaluation = _parse_evaluation(d.pop("evaluation", UNSET))


        def _parse_excluded_subjects(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        excluded_subjects = _parse_excluded_subjects(d.pop("excluded_subjects", UNSET))


        def _parse_noise_std_on_mean(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        noise_std_on_mean = _parse_noise_std_on_mean(d.pop("noise_std_on_mean", UNSET))


        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        def _parse_samples(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        samples = _parse_samples(d.pop("samples", UNSET))


        def _parse_untrusted_updates(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        untrusted_updates = _parse_untrusted_updates(d.pop("untrusted_updates", UNSET))


        round_view = cls(
            attempt=attempt,
            deadline=deadline,
            dp=dp,
            opened_at=opened_at,
            participants=participants,
            phase=phase,
            registry_version=registry_version,
            round_=round_,
            sites=sites,
            closed_at=closed_at,
            epsilon_round=epsilon_round,
            epsilon_total=epsilon_total,
            evaluation=evaluation,
            excluded_subjects=excluded_subjects,
            noise_std_on_mean=noise_std_on_mean,
            reason=reason,
            samples=samples,
            untrusted_updates=untrusted_updates,
        )


        round_view.additional_properties = d
        return round_view

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
