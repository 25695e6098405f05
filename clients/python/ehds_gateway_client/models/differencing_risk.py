from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.differencing_reason import DifferencingReason
from ..models.nesting import Nesting
from typing import cast






T = TypeVar("T", bound="DifferencingRisk")



@_attrs_define
class DifferencingRisk:
    """ A pair of counts whose difference discloses a small group.

        Attributes:
            difference (int): |earlier count − new count|.
            earlier (int): Position in `earlier`.
            nesting (Nesting): How two populations are nested.
            new (int): Position in `new`.
            reasons (list[DifferencingReason]):
     """

    difference: int
    earlier: int
    nesting: Nesting
    new: int
    reasons: list[DifferencingReason]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        difference = self.difference

        earlier = self.earlier

        nesting = self.nesting.value

        new = self.new

        reasons = []
        for reasons_item_data in self.reasons:
            reasons_item = reasons_item_data.value
            reasons.append(reasons_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "difference": difference,
            "earlier": earlier,
            "nesting": nesting,
            "new": new,
            "reasons": reasons,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        difference = d.pop("difference")

        earlier = d.pop("earlier")

        nesting = Nesting(d.pop("nesting"))




        new = d.pop("new")

        reasons = []
        _reasons = d.pop("reasons")
        for reasons_item_data in (_reasons):
            reasons_item = DifferencingReason(reasons_item_data)



            reasons.append(reasons_item)


        differencing_risk = cls(
            difference=difference,
            earlier=earlier,
            nesting=nesting,
            new=new,
            reasons=reasons,
        )


        differencing_risk.additional_properties = d
        return differencing_risk

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
