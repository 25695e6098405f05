from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_hpfl_name import StrategyConfigHpflName
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="StrategyConfigHpfl")



@_attrs_define
class StrategyConfigHpfl:
    """ 
        Attributes:
            name (StrategyConfigHpflName):
            head_steps (int | None | Unset): Plug-in (head) training steps per round on the frozen received backbone; `None`
                = as
                many as the round's local steps.
     """

    name: StrategyConfigHpflName
    head_steps: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        head_steps: int | None | Unset
        if isinstance(self.head_steps, Unset):
            head_steps = UNSET
        else:
            head_steps = self.head_steps


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
        })
        if head_steps is not UNSET:
            field_dict["head_steps"] = head_steps

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigHpflName(d.pop("name"))




        def _parse_head_steps(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        head_steps = _parse_head_steps(d.pop("head_steps", UNSET))


        strategy_config_hpfl = cls(
            name=name,
            head_steps=head_steps,
        )


        strategy_config_hpfl.additional_properties = d
        return strategy_config_hpfl

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
