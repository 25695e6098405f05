from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.strategy_config_type_9_name import StrategyConfigType9Name
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="StrategyConfigType9")



@_attrs_define
class StrategyConfigType9:
    """ 
        Attributes:
            name (StrategyConfigType9Name):
            lipschitz (float | None | Unset): Lipschitz estimate `L`; `None` = `1 / lr` of each site's local optimiser.
            q (float | Unset): Fairness exponent `q` >= 0 (0 = uniform averaging; the paper tunes over
                {0.001, 0.01, 0.1, 1, 2, 5, 15}). Default: 1.0.
     """

    name: StrategyConfigType9Name
    lipschitz: float | None | Unset = UNSET
    q: float | Unset = 1.0





    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        lipschitz: float | None | Unset
        if isinstance(self.lipschitz, Unset):
            lipschitz = UNSET
        else:
            lipschitz = self.lipschitz

        q = self.q


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if lipschitz is not UNSET:
            field_dict["lipschitz"] = lipschitz
        if q is not UNSET:
            field_dict["q"] = q

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = StrategyConfigType9Name(d.pop("name"))




        def _parse_lipschitz(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        lipschitz = _parse_lipschitz(d.pop("lipschitz", UNSET))


        q = d.pop("q", UNSET)

        strategy_config_type_9 = cls(
            name=name,
            lipschitz=lipschitz,
            q=q,
        )

        return strategy_config_type_9

