from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.chain_problem_sequence_gap import ChainProblemSequenceGap





T = TypeVar("T", bound="ChainProblemType2")



@_attrs_define
class ChainProblemType2:
    """ A sequence number is missing or out of order before this entry.

        Attributes:
            sequence_gap (ChainProblemSequenceGap): A sequence number is missing or out of order before this entry.
     """

    sequence_gap: ChainProblemSequenceGap
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.chain_problem_sequence_gap import ChainProblemSequenceGap # noqa: PLC0415
        sequence_gap = self.sequence_gap.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "sequence_gap": sequence_gap,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.chain_problem_sequence_gap import ChainProblemSequenceGap # noqa: PLC0415
        d = dict(src_dict)
        sequence_gap = ChainProblemSequenceGap.from_dict(d.pop("sequence_gap"))




        chain_problem_type_2 = cls(
            sequence_gap=sequence_gap,
        )


        chain_problem_type_2.additional_properties = d
        return chain_problem_type_2

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
