from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.filter_policy import FilterPolicy
from ..types import UNSET, Unset
from typing import cast
from uuid import UUID






T = TypeVar("T", bound="MatchRequest")



@_attrs_define
class MatchRequest:
    """ 
        Attributes:
            blinded (list[str]): The holder's subject pseudonyms, each blinded with a fresh random scalar
                (ristretto255, 32 bytes, base64), padded with random elements.
            permit_id (UUID): Identifier of a data permit (Art. 68).
            categories (list[str] | Unset): The categories about to be processed. Empty means all of the permit's
                categories.
            policy (FilterPolicy | Unset): Which opt-outs count for a permit's processing.
            registry_version (int | None | Unset): Pin an earlier registry version (for reproducible rounds); defaults to
                the current one.
     """

    blinded: list[str]
    permit_id: UUID
    categories: list[str] | Unset = UNSET
    policy: FilterPolicy | Unset = UNSET
    registry_version: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        blinded = self.blinded



        permit_id = str(self.permit_id)

        categories: list[str] | Unset = UNSET
        if not isinstance(self.categories, Unset):
            categories = self.categories



        policy: str | Unset = UNSET
        if not isinstance(self.policy, Unset):
            policy = self.policy.value


        registry_version: int | None | Unset
        if isinstance(self.registry_version, Unset):
            registry_version = UNSET
        else:
            registry_version = self.registry_version


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "blinded": blinded,
            "permit_id": permit_id,
        })
        if categories is not UNSET:
            field_dict["categories"] = categories
        if policy is not UNSET:
            field_dict["policy"] = policy
        if registry_version is not UNSET:
            field_dict["registry_version"] = registry_version

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        blinded = cast(list[str], d.pop("blinded"))


        permit_id = UUID(d.pop("permit_id"))




        categories = cast(list[str], d.pop("categories", UNSET))


        _policy = d.pop("policy", UNSET)
        policy: FilterPolicy | Unset
        if isinstance(_policy,  Unset):
            policy = UNSET
        else:
            policy = FilterPolicy(_policy)




        def _parse_registry_version(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        registry_version = _parse_registry_version(d.pop("registry_version", UNSET))


        match_request = cls(
            blinded=blinded,
            permit_id=permit_id,
            categories=categories,
            policy=policy,
            registry_version=registry_version,
        )

        return match_request

