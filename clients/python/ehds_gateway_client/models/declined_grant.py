from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.proposed_grant import ProposedGrant





T = TypeVar("T", bound="DeclinedGrant")



@_attrs_define
class DeclinedGrant:
    """ A proposal the second officer declined, with their reasons.

        Attributes:
            proposal (ProposedGrant): An approval recorded by one officer, waiting for a second one (the four-eyes rule).
            reasons (str):
     """

    proposal: ProposedGrant
    reasons: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.proposed_grant import ProposedGrant # noqa: PLC0415
        proposal = self.proposal.to_dict()

        reasons = self.reasons


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "proposal": proposal,
            "reasons": reasons,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.proposed_grant import ProposedGrant # noqa: PLC0415
        d = dict(src_dict)
        proposal = ProposedGrant.from_dict(d.pop("proposal"))




        reasons = d.pop("reasons")

        declined_grant = cls(
            proposal=proposal,
            reasons=reasons,
        )


        declined_grant.additional_properties = d
        return declined_grant

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
