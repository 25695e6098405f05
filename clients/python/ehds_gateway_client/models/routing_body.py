from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="RoutingBody")



@_attrs_define
class RoutingBody:
    """ 
        Attributes:
            data_holder (str): The trusted health data holder (Art. 72) that assesses the request for its data.
            reasons (str):
     """

    data_holder: str
    reasons: str





    def to_dict(self) -> dict[str, Any]:
        data_holder = self.data_holder

        reasons = self.reasons


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "data_holder": data_holder,
            "reasons": reasons,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        data_holder = d.pop("data_holder")

        reasons = d.pop("reasons")

        routing_body = cls(
            data_holder=data_holder,
            reasons=reasons,
        )

        return routing_body

