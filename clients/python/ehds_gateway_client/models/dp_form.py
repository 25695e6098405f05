from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="DpForm")



@_attrs_define
class DpForm:
    """ Differential privacy requested for a release. `mechanism` is `gaussian` (with `rho` for
    ρ-zCDP, or `epsilon` and `delta`) or `laplace` (with `epsilon`). `placement` is `central`
    (default: the gateway adds the noise once) or `distributed` (each node adds its share).

        Attributes:
            mechanism (str):
            delta (float | None | Unset):
            epsilon (float | None | Unset):
            placement (None | str | Unset):
            rho (float | None | Unset):
     """

    mechanism: str
    delta: float | None | Unset = UNSET
    epsilon: float | None | Unset = UNSET
    placement: None | str | Unset = UNSET
    rho: float | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        mechanism = self.mechanism

        delta: float | None | Unset
        if isinstance(self.delta, Unset):
            delta = UNSET
        else:
            delta = self.delta

        epsilon: float | None | Unset
        if isinstance(self.epsilon, Unset):
            epsilon = UNSET
        else:
            epsilon = self.epsilon

        placement: None | str | Unset
        if isinstance(self.placement, Unset):
            placement = UNSET
        else:
            placement = self.placement

        rho: float | None | Unset
        if isinstance(self.rho, Unset):
            rho = UNSET
        else:
            rho = self.rho


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "mechanism": mechanism,
        })
        if delta is not UNSET:
            field_dict["delta"] = delta
        if epsilon is not UNSET:
            field_dict["epsilon"] = epsilon
        if placement is not UNSET:
            field_dict["placement"] = placement
        if rho is not UNSET:
            field_dict["rho"] = rho

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        mechanism = d.pop("mechanism")

        def _parse_delta(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        delta = _parse_delta(d.pop("delta", UNSET))


        def _parse_epsilon(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        epsilon = _parse_epsilon(d.pop("epsilon", UNSET))


        def _parse_placement(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        placement = _parse_placement(d.pop("placement", UNSET))


        def _parse_rho(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        rho = _parse_rho(d.pop("rho", UNSET))


        dp_form = cls(
            mechanism=mechanism,
            delta=delta,
            epsilon=epsilon,
            placement=placement,
            rho=rho,
        )

        return dp_form

