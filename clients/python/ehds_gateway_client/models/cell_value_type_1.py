from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.cell_value_type_1_kind import CellValueType1Kind
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="CellValueType1")



@_attrs_define
class CellValueType1:
    """ 
        Attributes:
            kind (CellValueType1Kind):
            n (int):
            mean (float | None | Unset):
            sd (float | None | Unset):
     """

    kind: CellValueType1Kind
    n: int
    mean: float | None | Unset = UNSET
    sd: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        kind = self.kind.value

        n = self.n

        mean: float | None | Unset
        if isinstance(self.mean, Unset):
            mean = UNSET
        else:
            mean = self.mean

        sd: float | None | Unset
        if isinstance(self.sd, Unset):
            sd = UNSET
        else:
            sd = self.sd


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "kind": kind,
            "n": n,
        })
        if mean is not UNSET:
            field_dict["mean"] = mean
        if sd is not UNSET:
            field_dict["sd"] = sd

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        kind = CellValueType1Kind(d.pop("kind"))




        n = d.pop("n")

        def _parse_mean(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        mean = _parse_mean(d.pop("mean", UNSET))


        def _parse_sd(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        sd = _parse_sd(d.pop("sd", UNSET))


        cell_value_type_1 = cls(
            kind=kind,
            n=n,
            mean=mean,
            sd=sd,
        )


        cell_value_type_1.additional_properties = d
        return cell_value_type_1

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
