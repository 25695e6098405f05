from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.data_quality import DataQuality





T = TypeVar("T", bound="HolderDataQuality")



@_attrs_define
class HolderDataQuality:
    """ One data holder's data-quality summary, as of one round.

        Attributes:
            data_holder (str): An organisation: an applicant's organisation or a data holder. Matches the organisation claim
                of the caller's token.
            quality (DataQuality): One holder's data-quality summary.
            round_ (int): The round of the task that reported it.
     """

    data_holder: str
    quality: DataQuality
    round_: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.data_quality import DataQuality # noqa: PLC0415
        data_holder = self.data_holder

        quality = self.quality.to_dict()

        round_ = self.round_


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "data_holder": data_holder,
            "quality": quality,
            "round": round_,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.data_quality import DataQuality # noqa: PLC0415
        d = dict(src_dict)
        data_holder = d.pop("data_holder")

        quality = DataQuality.from_dict(d.pop("quality"))




        round_ = d.pop("round")

        holder_data_quality = cls(
            data_holder=data_holder,
            quality=quality,
            round_=round_,
        )


        holder_data_quality.additional_properties = d
        return holder_data_quality

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
