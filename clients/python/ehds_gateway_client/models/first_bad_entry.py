from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.chain_problem_type_0 import ChainProblemType0
from ..models.chain_problem_type_1 import ChainProblemType1
from ..models.chain_problem_type_3 import ChainProblemType3
from typing import cast

if TYPE_CHECKING:
  from ..models.chain_problem_type_2 import ChainProblemType2





T = TypeVar("T", bound="FirstBadEntry")



@_attrs_define
class FirstBadEntry:
    """ 
        Attributes:
            problem (ChainProblemType0 | ChainProblemType1 | ChainProblemType2 | ChainProblemType3): What is wrong with the
                first bad entry of a chain.
            seq (int):
     """

    problem: ChainProblemType0 | ChainProblemType1 | ChainProblemType2 | ChainProblemType3
    seq: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.chain_problem_type_2 import ChainProblemType2 # noqa: PLC0415
        problem: dict[str, Any] | str
        if isinstance(self.problem, ChainProblemType0):
            problem = self.problem.value
        elif isinstance(self.problem, ChainProblemType1):
            problem = self.problem.value
        elif isinstance(self.problem, ChainProblemType2):
            problem = self.problem.to_dict()
        else:
            problem = self.problem.value


        seq = self.seq


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "problem": problem,
            "seq": seq,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.chain_problem_type_2 import ChainProblemType2 # noqa: PLC0415
        d = dict(src_dict)
        def _parse_problem(data: object) -> ChainProblemType0 | ChainProblemType1 | ChainProblemType2 | ChainProblemType3:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                componentsschemas_chain_problem_type_0 = ChainProblemType0(data)



                return componentsschemas_chain_problem_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                componentsschemas_chain_problem_type_1 = ChainProblemType1(data)



                return componentsschemas_chain_problem_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_chain_problem_type_2 = ChainProblemType2.from_dict(data)



                return componentsschemas_chain_problem_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, str):
                raise TypeError()
            componentsschemas_chain_problem_type_3 = ChainProblemType3(data)



            return componentsschemas_chain_problem_type_3

        problem = _parse_problem(d.pop("problem"))


        seq = d.pop("seq")

        first_bad_entry = cls(
            problem=problem,
            seq=seq,
        )


        first_bad_entry.additional_properties = d
        return first_bad_entry

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
