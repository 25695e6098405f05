from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.dp_level import DpLevel
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.dp_plan_distributed_type_0 import DpPlanDistributedType0





T = TypeVar("T", bound="DpPlan")



@_attrs_define
class DpPlan:
    """ The privacy mechanism of a study, resolved at submission: the noise multiplier is fixed
    (derived from a target epsilon when one was asked for) so every round costs the same.

        Attributes:
            clip_norm (float):
            delta (float): The permit's delta.
            level (DpLevel): Which unit differential privacy protects in a study.
            noise_multiplier (float): The noise's standard deviation in the sum of the holders' clipped updates, in units of
                `clip_norm`. Under distributed DP, what the sum of `min_survivors` holders carries.
            sampling_rate (float): Sampling rate of the accounted mechanism: 1 at client level (every selected holder,
                every round), the Poisson rate of DP-SGD at record level.
            steps_per_round (int): Sampled-Gaussian steps one round costs: 1 at client level, the local DP-SGD steps at
                record level.
            distributed (DpPlanDistributedType0 | None | Unset): Client-level DP realised on the holders under secure
                aggregation: each clips its
                update and adds its share of discrete Gaussian noise before masking (Kairouz, Liu and
                Steinke's distributed discrete Gaussian; docs/secure-aggregation.md). Fixed at
                submission: `params` (model entries `dim`, `clip`, `central_stddev` in model units,
                `min_survivors` the noise is planned for, `max_clients`, `modulus_bits` of the ring,
                `k_stddevs` of head-room, rounding bias `beta`, the public `rotation_seed`) and what
                follows from them (`padded_dim`, the granularity `gamma`, each holder's
                `node_variance` in ring units as an exact fraction, the rounded sensitivity
                `l2_bound`). Absent when the gateway adds the noise (or there is none).
            target_epsilon (float | None | Unset): The epsilon the researcher asked the whole study to stay within, if any.
     """

    clip_norm: float
    delta: float
    level: DpLevel
    noise_multiplier: float
    sampling_rate: float
    steps_per_round: int
    distributed: DpPlanDistributedType0 | None | Unset = UNSET
    target_epsilon: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.dp_plan_distributed_type_0 import DpPlanDistributedType0 # noqa: PLC0415
        clip_norm = self.clip_norm

        delta = self.delta

        level = self.level.value

        noise_multiplier = self.noise_multiplier

        sampling_rate = self.sampling_rate

        steps_per_round = self.steps_per_round

        distributed: dict[str, Any] | None | Unset
        if isinstance(self.distributed, Unset):
            distributed = UNSET
        elif isinstance(self.distributed, DpPlanDistributedType0):
            distributed = self.distributed.to_dict()
        else:
            distributed = self.distributed

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
        if distributed is not UNSET:
            field_dict["distributed"] = distributed
        if target_epsilon is not UNSET:
            field_dict["target_epsilon"] = target_epsilon

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.dp_plan_distributed_type_0 import DpPlanDistributedType0 # noqa: PLC0415
        d = dict(src_dict)
        clip_norm = d.pop("clip_norm")

        delta = d.pop("delta")

        level = DpLevel(d.pop("level"))




        noise_multiplier = d.pop("noise_multiplier")

        sampling_rate = d.pop("sampling_rate")

        steps_per_round = d.pop("steps_per_round")

        def _parse_distributed(data: object) -> DpPlanDistributedType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                distributed_type_0 = DpPlanDistributedType0.from_dict(data)



                return distributed_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DpPlanDistributedType0 | None | Unset, data)

        distributed = _parse_distributed(d.pop("distributed", UNSET))


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
            distributed=distributed,
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
