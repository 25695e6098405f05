from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_22_name import StrategyConfigType22Name
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="StrategyConfigType22")



@_attrs_define
class StrategyConfigType22:
    """ 
        Attributes:
            name (StrategyConfigType22Name):
            head_steps (int | None | Unset): Plug-in (head) training steps per round on the frozen received backbone; `None`
                = as
                many as the round's local steps.
     """

    name: StrategyConfigType22Name
    head_steps: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        head_steps: int | None | Unset
        if isinstance(self.head_steps, Unset):
            head_steps = UNSET
        else:
            head_steps = self.head_steps


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if head_steps is not UNSET:
            field_dict["head_steps"] = head_steps

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType22Name(d.pop("name"))




        def _parse_head_steps(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        head_steps = _parse_head_steps(d.pop("head_steps", UNSET))


        strategy_config_type_22 = cls(
            name=name,
            head_steps=head_steps,
        )

        return strategy_config_type_22

