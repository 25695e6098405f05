from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="OptOutRequest")



@_attrs_define
class OptOutRequest:
    """ 
        Attributes:
            member_state (str):
            subject_pseudonym (str): The subject's pseudonym (never a national identifier).
            channel (None | str | Unset): How the opt-out reached the registry (portal, letter, ...).
            effective_from (datetime.datetime | None | Unset): When the opt-out takes effect; defaults to now.
            scope (None | str | Unset): Only `all_secondary_use`: Art. 71 covers all secondary use.
     """

    member_state: str
    subject_pseudonym: str
    channel: None | str | Unset = UNSET
    effective_from: datetime.datetime | None | Unset = UNSET
    scope: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        member_state = self.member_state

        subject_pseudonym = self.subject_pseudonym

        channel: None | str | Unset
        if isinstance(self.channel, Unset):
            channel = UNSET
        else:
            channel = self.channel

        effective_from: None | str | Unset
        if isinstance(self.effective_from, Unset):
            effective_from = UNSET
        elif isinstance(self.effective_from, datetime.datetime):
            effective_from = self.effective_from.isoformat()
        else:
            effective_from = self.effective_from

        scope: None | str | Unset
        if isinstance(self.scope, Unset):
            scope = UNSET
        else:
            scope = self.scope


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "member_state": member_state,
            "subject_pseudonym": subject_pseudonym,
        })
        if channel is not UNSET:
            field_dict["channel"] = channel
        if effective_from is not UNSET:
            field_dict["effective_from"] = effective_from
        if scope is not UNSET:
            field_dict["scope"] = scope

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        member_state = d.pop("member_state")

        subject_pseudonym = d.pop("subject_pseudonym")

        def _parse_channel(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        channel = _parse_channel(d.pop("channel", UNSET))


        def _parse_effective_from(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                effective_from_type_0 = datetime.datetime.fromisoformat(data)



                return effective_from_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        effective_from = _parse_effective_from(d.pop("effective_from", UNSET))


        def _parse_scope(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        scope = _parse_scope(d.pop("scope", UNSET))


        opt_out_request = cls(
            member_state=member_state,
            subject_pseudonym=subject_pseudonym,
            channel=channel,
            effective_from=effective_from,
            scope=scope,
        )

        return opt_out_request

