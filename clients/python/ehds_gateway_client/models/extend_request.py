from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="ExtendRequest")



@_attrs_define
class ExtendRequest:
    """ 
        Attributes:
            expires_at (datetime.datetime):
            reason (str):
     """

    expires_at: datetime.datetime
    reason: str





    def to_dict(self) -> dict[str, Any]:
        expires_at = self.expires_at.isoformat()

        reason = self.reason


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "expires_at": expires_at,
            "reason": reason,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))




        reason = d.pop("reason")

        extend_request = cls(
            expires_at=expires_at,
            reason=reason,
        )

        return extend_request

