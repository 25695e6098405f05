from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.filter_policy import FilterPolicy
from typing import cast
from uuid import UUID
import datetime






T = TypeVar("T", bound="FilterResponse")



@_attrs_define
class FilterResponse:
    """ 
        Attributes:
            checked (int):
            exception_applied (bool): True when the permit records the Art. 71(4) exception: nobody is excluded.
            exclude (list[str]): The pseudonyms to exclude before training.
            permit_id (UUID): Identifier of a data permit (Art. 68).
            policy (FilterPolicy): Which opt-outs count for a permit's processing.
            reference_time (datetime.datetime): The time whose opt-outs bind this processing (permit issue or the amendment
                adding the data).
            registry_version (int):
     """

    checked: int
    exception_applied: bool
    exclude: list[str]
    permit_id: UUID
    policy: FilterPolicy
    reference_time: datetime.datetime
    registry_version: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        checked = self.checked

        exception_applied = self.exception_applied

        exclude = self.exclude



        permit_id = str(self.permit_id)

        policy = self.policy.value

        reference_time = self.reference_time.isoformat()

        registry_version = self.registry_version


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "checked": checked,
            "exception_applied": exception_applied,
            "exclude": exclude,
            "permit_id": permit_id,
            "policy": policy,
            "reference_time": reference_time,
            "registry_version": registry_version,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        checked = d.pop("checked")

        exception_applied = d.pop("exception_applied")

        exclude = cast(list[str], d.pop("exclude"))


        permit_id = UUID(d.pop("permit_id"))




        policy = FilterPolicy(d.pop("policy"))




        reference_time = datetime.datetime.fromisoformat(d.pop("reference_time"))




        registry_version = d.pop("registry_version")

        filter_response = cls(
            checked=checked,
            exception_applied=exception_applied,
            exclude=exclude,
            permit_id=permit_id,
            policy=policy,
            reference_time=reference_time,
            registry_version=registry_version,
        )


        filter_response.additional_properties = d
        return filter_response

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
