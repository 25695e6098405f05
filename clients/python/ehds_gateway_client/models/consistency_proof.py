from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="ConsistencyProof")



@_attrs_define
class ConsistencyProof:
    """ A consistency proof (RFC 9162 §2.1.4): the tree of `from` leaves is a prefix of the tree of
    `to` leaves. Empty when `from` is 0 or equal to `to`.

        Attributes:
            from_ (int):
            hashes (list[str]): Base64 SHA-256 hashes.
            to (int):
     """

    from_: int
    hashes: list[str]
    to: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from_ = self.from_

        hashes = self.hashes



        to = self.to


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "from": from_,
            "hashes": hashes,
            "to": to,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        from_ = d.pop("from")

        hashes = cast(list[str], d.pop("hashes"))


        to = d.pop("to")

        consistency_proof = cls(
            from_=from_,
            hashes=hashes,
            to=to,
        )


        consistency_proof.additional_properties = d
        return consistency_proof

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
