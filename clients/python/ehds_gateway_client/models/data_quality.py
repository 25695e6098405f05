from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.decided_by import DecidedBy
from ..models.warning_code import WarningCode
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.feature_quality import FeatureQuality





T = TypeVar("T", bound="DataQuality")



@_attrs_define
class DataQuality:
    """ One holder's data-quality summary.

        Attributes:
            features (list[FeatureQuality]):
            flags (list[WarningCode]): The preflight's warnings about the label and the split.
            split (DecidedBy | None | Unset):
     """

    features: list[FeatureQuality]
    flags: list[WarningCode]
    split: DecidedBy | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.feature_quality import FeatureQuality # noqa: PLC0415
        features = []
        for features_item_data in self.features:
            features_item = features_item_data.to_dict()
            features.append(features_item)



        flags = []
        for flags_item_data in self.flags:
            flags_item = flags_item_data.value
            flags.append(flags_item)



        split: None | str | Unset
        if isinstance(self.split, Unset):
            split = UNSET
        elif isinstance(self.split, DecidedBy):
            split = self.split.value
        else:
            split = self.split


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "features": features,
            "flags": flags,
        })
        if split is not UNSET:
            field_dict["split"] = split

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.feature_quality import FeatureQuality # noqa: PLC0415
        d = dict(src_dict)
        features = []
        _features = d.pop("features")
        for features_item_data in (_features):
            features_item = FeatureQuality.from_dict(features_item_data)



            features.append(features_item)


        flags = []
        _flags = d.pop("flags")
        for flags_item_data in (_flags):
            flags_item = WarningCode(flags_item_data)



            flags.append(flags_item)


        def _parse_split(data: object) -> DecidedBy | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                split_type_0 = DecidedBy(data)



                return split_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DecidedBy | None | Unset, data)

        split = _parse_split(d.pop("split", UNSET))


        data_quality = cls(
            features=features,
            flags=flags,
            split=split,
        )


        data_quality.additional_properties = d
        return data_quality

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
