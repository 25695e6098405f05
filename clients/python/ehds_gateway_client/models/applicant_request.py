from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.user_kind import UserKind
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ApplicantRequest")



@_attrs_define
class ApplicantRequest:
    """ 
        Attributes:
            organisation (str):
            public_body (bool): Whether the applicant is a public-sector body or acts on behalf of one (Art. 53(2)).
            user_kinds (list[UserKind] | Unset): Kinds of user the fee schedule may reduce fees for (Art. 62(1)); a public
                body counts
                as `public_body` without saying so.
     """

    organisation: str
    public_body: bool
    user_kinds: list[UserKind] | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        organisation = self.organisation

        public_body = self.public_body

        user_kinds: list[str] | Unset = UNSET
        if not isinstance(self.user_kinds, Unset):
            user_kinds = []
            for user_kinds_item_data in self.user_kinds:
                user_kinds_item = user_kinds_item_data.value
                user_kinds.append(user_kinds_item)




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "organisation": organisation,
            "public_body": public_body,
        })
        if user_kinds is not UNSET:
            field_dict["user_kinds"] = user_kinds

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        organisation = d.pop("organisation")

        public_body = d.pop("public_body")

        _user_kinds = d.pop("user_kinds", UNSET)
        user_kinds: list[UserKind] | Unset = UNSET
        if _user_kinds is not UNSET:
            user_kinds = []
            for user_kinds_item_data in _user_kinds:
                user_kinds_item = UserKind(user_kinds_item_data)



                user_kinds.append(user_kinds_item)


        applicant_request = cls(
            organisation=organisation,
            public_body=public_body,
            user_kinds=user_kinds,
        )

        return applicant_request

