from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.dp_value_type_2_kind import DpValueType2Kind
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.noisy_value import NoisyValue





T = TypeVar("T", bound="DpValueType2")



@_attrs_define
class DpValueType2:
    """ 
        Attributes:
            bins (list[NoisyValue | None]):
            kind (DpValueType2Kind):
            above (NoisyValue | None | Unset):
            below (NoisyValue | None | Unset):
     """

    bins: list[NoisyValue | None]
    kind: DpValueType2Kind
    above: NoisyValue | None | Unset = UNSET
    below: NoisyValue | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.noisy_value import NoisyValue # noqa: PLC0415
        bins = []
        for bins_item_data in self.bins:
            bins_item: dict[str, Any] | None
            if isinstance(bins_item_data, NoisyValue):
                bins_item = bins_item_data.to_dict()
            else:
                bins_item = bins_item_data
            bins.append(bins_item)



        kind = self.kind.value

        above: dict[str, Any] | None | Unset
        if isinstance(self.above, Unset):
            above = UNSET
        elif isinstance(self.above, NoisyValue):
            above = self.above.to_dict()
        else:
            above = self.above

        below: dict[str, Any] | None | Unset
        if isinstance(self.below, Unset):
            below = UNSET
        elif isinstance(self.below, NoisyValue):
            below = self.below.to_dict()
        else:
            below = self.below


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "bins": bins,
            "kind": kind,
        })
        if above is not UNSET:
            field_dict["above"] = above
        if below is not UNSET:
            field_dict["below"] = below

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.noisy_value import NoisyValue # noqa: PLC0415
        d = dict(src_dict)
        bins = []
        _bins = d.pop("bins")
        for bins_item_data in (_bins):
            def _parse_bins_item(data: object) -> NoisyValue | None:
                if data is None:
                    return data
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    bins_item_type_0 = NoisyValue.from_dict(data)



                    return bins_item_type_0
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                return cast(NoisyValue | None, data)

            bins_item = _parse_bins_item(bins_item_data)

            bins.append(bins_item)


        kind = DpValueType2Kind(d.pop("kind"))




        def _parse_above(data: object) -> NoisyValue | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                above_type_0 = NoisyValue.from_dict(data)



                return above_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(NoisyValue | None | Unset, data)

        above = _parse_above(d.pop("above", UNSET))


        def _parse_below(data: object) -> NoisyValue | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                below_type_0 = NoisyValue.from_dict(data)



                return below_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(NoisyValue | None | Unset, data)

        below = _parse_below(d.pop("below", UNSET))


        dp_value_type_2 = cls(
            bins=bins,
            kind=kind,
            above=above,
            below=below,
        )


        dp_value_type_2.additional_properties = d
        return dp_value_type_2

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
