from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="DpRequest")



@_attrs_define
class DpRequest:
    """ 
        Attributes:
            level (str): `client` (DP-FedAvg at the gateway), `record` (DP-SGD at each data holder), or `none`
                (no formal DP: no clipping, no noise, no epsilon spent; only under a permit whose
                `dp_requirement` is `none_allowed`, and then no other `dp` field applies).
            clip_norm (float | Unset): Required at `client` and `record` level.
            min_survivors (int | None | Unset): Client level under secure aggregation only (distributed DP: the holders add
                the noise):
                the fewest holders whose noise shares a round's sum must hold. Each holder adds
                `1/min_survivors` of the planned variance, and a round with fewer survivors is
                discarded before it is unmasked. At least the secure-aggregation threshold, at most the
                number of data holders; default the larger of the threshold and `min_sites`.
            modulus_bits (int | None | Unset): Client level under secure aggregation only: bits of the ring `Z_{2^b}` the
                noisy,
                rounded updates are summed in (2 to 63, default 32). Fewer bits coarsen the rounding,
                which costs epsilon; too few cannot hold the sum at all.
            noise_multiplier (float | None | Unset): Give either the noise multiplier or the epsilon the whole study may
                spend.
            noise_seed (int | None | Unset): Development mode only: derive the aggregation noise from this value instead of
                a fresh
                secret, so that two runs can be compared bit for bit. Anyone who knows it can remove
                the noise, so a production gateway refuses it.
            sampling_rate (float | None | Unset): Record level only: the Poisson sampling rate of DP-SGD.
            target_epsilon (float | None | Unset):
     """

    level: str
    clip_norm: float | Unset = UNSET
    min_survivors: int | None | Unset = UNSET
    modulus_bits: int | None | Unset = UNSET
    noise_multiplier: float | None | Unset = UNSET
    noise_seed: int | None | Unset = UNSET
    sampling_rate: float | None | Unset = UNSET
    target_epsilon: float | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        level = self.level

        clip_norm = self.clip_norm

        min_survivors: int | None | Unset
        if isinstance(self.min_survivors, Unset):
            min_survivors = UNSET
        else:
            min_survivors = self.min_survivors

        modulus_bits: int | None | Unset
        if isinstance(self.modulus_bits, Unset):
            modulus_bits = UNSET
        else:
            modulus_bits = self.modulus_bits

        noise_multiplier: float | None | Unset
        if isinstance(self.noise_multiplier, Unset):
            noise_multiplier = UNSET
        else:
            noise_multiplier = self.noise_multiplier

        noise_seed: int | None | Unset
        if isinstance(self.noise_seed, Unset):
            noise_seed = UNSET
        else:
            noise_seed = self.noise_seed

        sampling_rate: float | None | Unset
        if isinstance(self.sampling_rate, Unset):
            sampling_rate = UNSET
        else:
            sampling_rate = self.sampling_rate

        target_epsilon: float | None | Unset
        if isinstance(self.target_epsilon, Unset):
            target_epsilon = UNSET
        else:
            target_epsilon = self.target_epsilon


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "level": level,
        })
        if clip_norm is not UNSET:
            field_dict["clip_norm"] = clip_norm
        if min_survivors is not UNSET:
            field_dict["min_survivors"] = min_survivors
        if modulus_bits is not UNSET:
            field_dict["modulus_bits"] = modulus_bits
        if noise_multiplier is not UNSET:
            field_dict["noise_multiplier"] = noise_multiplier
        if noise_seed is not UNSET:
            field_dict["noise_seed"] = noise_seed
        if sampling_rate is not UNSET:
            field_dict["sampling_rate"] = sampling_rate
        if target_epsilon is not UNSET:
            field_dict["target_epsilon"] = target_epsilon

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        level = d.pop("level")

        clip_norm = d.pop("clip_norm", UNSET)

        def _parse_min_survivors(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        min_survivors = _parse_min_survivors(d.pop("min_survivors", UNSET))


        def _parse_modulus_bits(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        modulus_bits = _parse_modulus_bits(d.pop("modulus_bits", UNSET))


        def _parse_noise_multiplier(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        noise_multiplier = _parse_noise_multiplier(d.pop("noise_multiplier", UNSET))


        def _parse_noise_seed(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        noise_seed = _parse_noise_seed(d.pop("noise_seed", UNSET))


        def _parse_sampling_rate(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        sampling_rate = _parse_sampling_rate(d.pop("sampling_rate", UNSET))


        def _parse_target_epsilon(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        target_epsilon = _parse_target_epsilon(d.pop("target_epsilon", UNSET))


        dp_request = cls(
            level=level,
            clip_norm=clip_norm,
            min_survivors=min_survivors,
            modulus_bits=modulus_bits,
            noise_multiplier=noise_multiplier,
            noise_seed=noise_seed,
            sampling_rate=sampling_rate,
            target_epsilon=target_epsilon,
        )

        return dp_request

