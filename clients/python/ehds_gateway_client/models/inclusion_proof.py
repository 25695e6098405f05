from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="InclusionProof")



@_attrs_define
class InclusionProof:
    """ An audit path (RFC 9162 §2.1.3): the leaf's hash and the sibling hashes from the leaf up.

        Attributes:
            hashes (list[str]): Base64 SHA-256 hashes, leaf to root.
            index (int):
            leaf_hash (str): `SHA-256(0x00 || canonical entry)`, base64; recompute it from the exported entry.
            size (int):
     """

    hashes: list[str]
    index: int
    leaf_hash: str
    size: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        hashes = self.hashes



        index = self.index

        leaf_hash = self.leaf_hash

        size = self.size


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "hashes": hashes,
            "index": index,
            "leaf_hash": leaf_hash,
            "size": size,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        hashes = cast(list[str], d.pop("hashes"))


        index = d.pop("index")

        leaf_hash = d.pop("leaf_hash")

        size = d.pop("size")

        inclusion_proof = cls(
            hashes=hashes,
            index=index,
            leaf_hash=leaf_hash,
            size=size,
        )


        inclusion_proof.additional_properties = d
        return inclusion_proof

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
