from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.dp_level import DpLevel
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="DpPlan")



@_attrs_define
class DpPlan:
    """ The privacy mechanism of a study, resolved at submission: the noise multiplier is fixed
    (derived from a target epsilon when one was asked for) so every round costs the same.

        Attributes:
            clip_norm (float):
            delta (float): The permit's delta.
            level (DpLevel): Which unit differential privacy protects in a study.
            noise_multiplier (float):
            sampling_rate (float): Sampling rate of the accounted mechanism: 1 at client level (every selected holder,
                every round), the Poisson rate of DP-SGD at record level.
            steps_per_round (int): Sampled-Gaussian steps one round costs: 1 at client level, the local DP-SGD steps at
                record level.
            target_epsilon (float | None | Unset): The epsilon the researcher asked the whole study to stay within, if any.
     """

    clip_norm: float
    delta: float
    level: DpLevel
    noise_multiplier: float
    sampling_rate: float
    steps_per_round: int
    target_epsilon: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        clip_norm = self.clip_norm

        delta = self.delta

        level = self.level.value

        noise_multiplier = self.noise_multiplier

        sampling_rate = self.sampling_rate

        steps_per_round = self.steps_per_round

        target_epsilon: float | None | Unset
        if isinstance(self.target_epsilon, Unset):
            target_epsilon = UNSET
        else:
            target_epsilon = self.target_epsilon


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "clip_norm": clip_norm,
            "delta": delta,
            "level": level,
            "noise_multiplier": noise_multiplier,
            "sampling_rate": sampling_rate,
            "steps_per_round": steps_per_round,
        })
        if target_epsilon is not UNSET:
            field_dict["target_epsilon"] = target_epsilon

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        clip_norm = d.pop("clip_norm")

        delta = d.pop("delta")

        level = DpLevel(d.pop("level"))




        noise_multiplier = d.pop("noise_multiplier")

        sampling_rate = d.pop("sampling_rate")

        steps_per_round = d.pop("steps_per_round")

        def _parse_target_epsilon(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        target_epsilon = _parse_target_epsilon(d.pop("target_epsilon", UNSET))


        dp_plan = cls(
            clip_norm=clip_norm,
            delta=delta,
            level=level,
            noise_multiplier=noise_multiplier,
            sampling_rate=sampling_rate,
            steps_per_round=steps_per_round,
            target_epsilon=target_epsilon,
        )


        dp_plan.additional_properties = d
        return dp_plan

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
