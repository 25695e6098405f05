from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.dp_value_type_1_kind import DpValueType1Kind
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.noisy_value import NoisyValue





T = TypeVar("T", bound="DpValueType1")



@_attrs_define
class DpValueType1:
    """ Mean = noisy sum / noisy count (`None` when the noisy count is below 1).

        Attributes:
            kind (DpValueType1Kind):
            n (NoisyValue): A released noisy value with its noise's spread.
            sum_ (NoisyValue): A released noisy value with its noise's spread.
            mean (float | None | Unset):
     """

    kind: DpValueType1Kind
    n: NoisyValue
    sum_: NoisyValue
    mean: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.noisy_value import NoisyValue # noqa: PLC0415
        kind = self.kind.value

        n = self.n.to_dict()

        sum_ = self.sum_.to_dict()

        mean: float | None | Unset
        if isinstance(self.mean, Unset):
            mean = UNSET
        else:
            mean = self.mean


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "kind": kind,
            "n": n,
            "sum": sum_,
        })
        if mean is not UNSET:
            field_dict["mean"] = mean

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.noisy_value import NoisyValue # noqa: PLC0415
        d = dict(src_dict)
        kind = DpValueType1Kind(d.pop("kind"))




        n = NoisyValue.from_dict(d.pop("n"))




        sum_ = NoisyValue.from_dict(d.pop("sum"))




        def _parse_mean(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        mean = _parse_mean(d.pop("mean", UNSET))


        dp_value_type_1 = cls(
            kind=kind,
            n=n,
            sum_=sum_,
            mean=mean,
        )


        dp_value_type_1.additional_properties = d
        return dp_value_type_1

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
