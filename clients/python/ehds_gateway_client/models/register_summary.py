from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.register_summary_by_status import RegisterSummaryByStatus





T = TypeVar("T", bound="RegisterSummary")



@_attrs_define
class RegisterSummary:
    """ Applications per state, small counts withheld.

        Attributes:
            by_status (RegisterSummaryByStatus): State -> count; `null` where the count is below the small-cell threshold.
            small_cell_threshold (int):
     """

    by_status: RegisterSummaryByStatus
    small_cell_threshold: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.register_summary_by_status import RegisterSummaryByStatus # noqa: PLC0415
        by_status = self.by_status.to_dict()

        small_cell_threshold = self.small_cell_threshold


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "by_status": by_status,
            "small_cell_threshold": small_cell_threshold,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.register_summary_by_status import RegisterSummaryByStatus # noqa: PLC0415
        d = dict(src_dict)
        by_status = RegisterSummaryByStatus.from_dict(d.pop("by_status"))




        small_cell_threshold = d.pop("small_cell_threshold")

        register_summary = cls(
            by_status=by_status,
            small_cell_threshold=small_cell_threshold,
        )


        register_summary.additional_properties = d
        return register_summary

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
