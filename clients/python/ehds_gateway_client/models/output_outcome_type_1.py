from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.output_outcome_type_1_outcome import OutputOutcomeType1Outcome
from ..models.reason import Reason
from typing import cast






T = TypeVar("T", bound="OutputOutcomeType1")



@_attrs_define
class OutputOutcomeType1:
    """ 
        Attributes:
            outcome (OutputOutcomeType1Outcome):
            reasons (list[Reason]):
     """

    outcome: OutputOutcomeType1Outcome
    reasons: list[Reason]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        outcome = self.outcome.value

        reasons = []
        for reasons_item_data in self.reasons:
            reasons_item = reasons_item_data.value
            reasons.append(reasons_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "outcome": outcome,
            "reasons": reasons,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        outcome = OutputOutcomeType1Outcome(d.pop("outcome"))




        reasons = []
        _reasons = d.pop("reasons")
        for reasons_item_data in (_reasons):
            reasons_item = Reason(reasons_item_data)



            reasons.append(reasons_item)


        output_outcome_type_1 = cls(
            outcome=outcome,
            reasons=reasons,
        )


        output_outcome_type_1.additional_properties = d
        return output_outcome_type_1

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
