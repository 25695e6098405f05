from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="Actor")



@_attrs_define
class Actor:
    """ Who acted. `sub` is the token subject (a pseudonymous account id), or `anonymous`.

        Attributes:
            roles (list[str]):
            sub (str):
            organisation (None | str | Unset):
     """

    roles: list[str]
    sub: str
    organisation: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        roles = self.roles



        sub = self.sub

        organisation: None | str | Unset
        if isinstance(self.organisation, Unset):
            organisation = UNSET
        else:
            organisation = self.organisation


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "roles": roles,
            "sub": sub,
        })
        if organisation is not UNSET:
            field_dict["organisation"] = organisation

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        roles = cast(list[str], d.pop("roles"))


        sub = d.pop("sub")

        def _parse_organisation(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        organisation = _parse_organisation(d.pop("organisation", UNSET))


        actor = cls(
            roles=roles,
            sub=sub,
            organisation=organisation,
        )


        actor.additional_properties = d
        return actor

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
