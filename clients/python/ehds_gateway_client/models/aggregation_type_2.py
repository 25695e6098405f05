from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.aggregation_type_2_rule import AggregationType2Rule
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="AggregationType2")



@_attrs_define
class AggregationType2:
    """ Multi-Krum: the mean of the `m` best-scored updates (default n - f); n >= 2f + 3.

        Attributes:
            f (int):
            rule (AggregationType2Rule):
            m (int | None | Unset):
     """

    f: int
    rule: AggregationType2Rule
    m: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        f = self.f

        rule = self.rule.value

        m: int | None | Unset
        if isinstance(self.m, Unset):
            m = UNSET
        else:
            m = self.m


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "f": f,
            "rule": rule,
        })
        if m is not UNSET:
            field_dict["m"] = m

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        f = d.pop("f")

        rule = AggregationType2Rule(d.pop("rule"))




        def _parse_m(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        m = _parse_m(d.pop("m", UNSET))


        aggregation_type_2 = cls(
            f=f,
            rule=rule,
            m=m,
        )


        aggregation_type_2.additional_properties = d
        return aggregation_type_2

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
