from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="SecureAggregationRequest")



@_attrs_define
class SecureAggregationRequest:
    """ 
        Attributes:
            neighbours (int | None | Unset): Holders each one masks with (default: all the others, the complete graph);
                fewer must
                be even (the SecAgg+ graph).
            threshold (int | None | Unset): Holders that must stay to the end of every protocol stage (default: two thirds
                of
                `neighbours`, rounded up); more than half of `neighbours`, at most `neighbours`.
     """

    neighbours: int | None | Unset = UNSET
    threshold: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        neighbours: int | None | Unset
        if isinstance(self.neighbours, Unset):
            neighbours = UNSET
        else:
            neighbours = self.neighbours

        threshold: int | None | Unset
        if isinstance(self.threshold, Unset):
            threshold = UNSET
        else:
            threshold = self.threshold


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if neighbours is not UNSET:
            field_dict["neighbours"] = neighbours
        if threshold is not UNSET:
            field_dict["threshold"] = threshold

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_neighbours(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        neighbours = _parse_neighbours(d.pop("neighbours", UNSET))


        def _parse_threshold(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        threshold = _parse_threshold(d.pop("threshold", UNSET))


        secure_aggregation_request = cls(
            neighbours=neighbours,
            threshold=threshold,
        )

        return secure_aggregation_request

