from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="DpPlanDistributedType0")



@_attrs_define
class DpPlanDistributedType0:
    """ Client-level DP realised on the holders under secure aggregation: each clips its
    update and adds its share of discrete Gaussian noise before masking (Kairouz, Liu and
    Steinke's distributed discrete Gaussian; docs/secure-aggregation.md). Fixed at
    submission: `params` (model entries `dim`, `clip`, `central_stddev` in model units,
    `min_survivors` the noise is planned for, `max_clients`, `modulus_bits` of the ring,
    `k_stddevs` of head-room, rounding bias `beta`, the public `rotation_seed`) and what
    follows from them (`padded_dim`, the granularity `gamma`, each holder's
    `node_variance` in ring units as an exact fraction, the rounded sensitivity
    `l2_bound`). Absent when the gateway adds the noise (or there is none).

     """

    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        
        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        dp_plan_distributed_type_0 = cls(
        )


        dp_plan_distributed_type_0.additional_properties = d
        return dp_plan_distributed_type_0

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
