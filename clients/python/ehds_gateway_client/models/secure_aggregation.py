from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="SecureAggregation")



@_attrs_define
class SecureAggregation:
    """ The public parameters of a study's secure aggregation (SecAgg / SecAgg+), fixed when the
    study is submitted for every round.

        Attributes:
            neighbours (int): Each holder masks with and shares its secrets among this many others: all other
                holders (Bonawitz et al.) or, when fewer, an even number on the SecAgg+ graph.
            threshold (int): Holders that must stay to the end of every protocol stage: fewer survivors and the
                round fails, nothing revealed. Also the Shamir threshold of every holder's secrets.
     """

    neighbours: int
    threshold: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        neighbours = self.neighbours

        threshold = self.threshold


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "neighbours": neighbours,
            "threshold": threshold,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        neighbours = d.pop("neighbours")

        threshold = d.pop("threshold")

        secure_aggregation = cls(
            neighbours=neighbours,
            threshold=threshold,
        )


        secure_aggregation.additional_properties = d
        return secure_aggregation

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
