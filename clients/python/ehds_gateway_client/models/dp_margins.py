from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.noisy_value import NoisyValue





T = TypeVar("T", bound="DpMargins")



@_attrs_define
class DpMargins:
    """ Noisy margins of a count table (released entries only).

        Attributes:
            columns (list[NoisyValue | None]):
            rows (list[NoisyValue | None]):
            total (NoisyValue | None | Unset):
     """

    columns: list[NoisyValue | None]
    rows: list[NoisyValue | None]
    total: NoisyValue | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.noisy_value import NoisyValue # noqa: PLC0415
        columns = []
        for columns_item_data in self.columns:
            columns_item: dict[str, Any] | None
            if isinstance(columns_item_data, NoisyValue):
                columns_item = columns_item_data.to_dict()
            else:
                columns_item = columns_item_data
            columns.append(columns_item)



        rows = []
        for rows_item_data in self.rows:
            rows_item: dict[str, Any] | None
            if isinstance(rows_item_data, NoisyValue):
                rows_item = rows_item_data.to_dict()
            else:
                rows_item = rows_item_data
            rows.append(rows_item)



        total: dict[str, Any] | None | Unset
        if isinstance(self.total, Unset):
            total = UNSET
        elif isinstance(self.total, NoisyValue):
            total = self.total.to_dict()
        else:
            total = self.total


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "columns": columns,
            "rows": rows,
        })
        if total is not UNSET:
            field_dict["total"] = total

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.noisy_value import NoisyValue # noqa: PLC0415
        d = dict(src_dict)
        columns = []
        _columns = d.pop("columns")
        for columns_item_data in (_columns):
            def _parse_columns_item(data: object) -> NoisyValue | None:
                if data is None:
                    return data
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    columns_item_type_0 = NoisyValue.from_dict(data)



                    return columns_item_type_0
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                return cast(NoisyValue | None, data)

            columns_item = _parse_columns_item(columns_item_data)

            columns.append(columns_item)


        rows = []
        _rows = d.pop("rows")
        for rows_item_data in (_rows):
            def _parse_rows_item(data: object) -> NoisyValue | None:
                if data is None:
                    return data
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    rows_item_type_0 = NoisyValue.from_dict(data)



                    return rows_item_type_0
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                return cast(NoisyValue | None, data)

            rows_item = _parse_rows_item(rows_item_data)

            rows.append(rows_item)


        def _parse_total(data: object) -> NoisyValue | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                total_type_0 = NoisyValue.from_dict(data)



                return total_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(NoisyValue | None | Unset, data)

        total = _parse_total(d.pop("total", UNSET))


        dp_margins = cls(
            columns=columns,
            rows=rows,
            total=total,
        )


        dp_margins.additional_properties = d
        return dp_margins

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
