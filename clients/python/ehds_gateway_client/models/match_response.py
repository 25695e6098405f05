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






T = TypeVar("T", bound="MatchResponse")



@_attrs_define
class MatchResponse:
    """ 
        Attributes:
            evaluated (list[str]): Each blinded element times the registry's key, in request order (base64).
            exception_applied (bool): True when the permit records the Art. 71(4) exception: nobody is excluded.
            key_id (str): Names the registry's key (SHA-256 of its public element): a holder may keep the
                unblinded values of its subjects and send only new subjects next time, for as long as
                this stays the same.
            opted_out (list[str]): SHA-256(salt ‖ match value), truncated to 128 bits, of every opted-out subject in the
                permit's scope, with random entries added up to a power of two, sorted (hex).
            permit_id (UUID): Identifier of a data permit (Art. 68).
            policy (FilterPolicy): Which opt-outs count for a permit's processing.
            reference_time (datetime.datetime): The time whose opt-outs bind this processing (permit issue or the amendment
                adding the data).
            registry_version (int):
            salt (str): This answer's fresh random salt (base64).
            unmatchable (int): In-scope opt-outs registered before the registry kept match values: only
                `POST /v1/opt-outs/filter` can match them, until the registry is re-imported.
     """

    evaluated: list[str]
    exception_applied: bool
    key_id: str
    opted_out: list[str]
    permit_id: UUID
    policy: FilterPolicy
    reference_time: datetime.datetime
    registry_version: int
    salt: str
    unmatchable: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        evaluated = self.evaluated



        exception_applied = self.exception_applied

        key_id = self.key_id

        opted_out = self.opted_out



        permit_id = str(self.permit_id)

        policy = self.policy.value

        reference_time = self.reference_time.isoformat()

        registry_version = self.registry_version

        salt = self.salt

        unmatchable = self.unmatchable


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "evaluated": evaluated,
            "exception_applied": exception_applied,
            "key_id": key_id,
            "opted_out": opted_out,
            "permit_id": permit_id,
            "policy": policy,
            "reference_time": reference_time,
            "registry_version": registry_version,
            "salt": salt,
            "unmatchable": unmatchable,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        evaluated = cast(list[str], d.pop("evaluated"))


        exception_applied = d.pop("exception_applied")

        key_id = d.pop("key_id")

        opted_out = cast(list[str], d.pop("opted_out"))


        permit_id = UUID(d.pop("permit_id"))




        policy = FilterPolicy(d.pop("policy"))




        reference_time = datetime.datetime.fromisoformat(d.pop("reference_time"))




        registry_version = d.pop("registry_version")

        salt = d.pop("salt")

        unmatchable = d.pop("unmatchable")

        match_response = cls(
            evaluated=evaluated,
            exception_applied=exception_applied,
            key_id=key_id,
            opted_out=opted_out,
            permit_id=permit_id,
            policy=policy,
            reference_time=reference_time,
            registry_version=registry_version,
            salt=salt,
            unmatchable=unmatchable,
        )


        match_response.additional_properties = d
        return match_response

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
