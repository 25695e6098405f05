from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="OptOutException")



@_attrs_define
class OptOutException:
    """ The Art. 71(4) exception an applicant asks for, and that a permit then records.

        Attributes:
            justification (str):
            national_law_basis (str): The national provision that makes the exception available.
            no_alternative_means (bool):
     """

    justification: str
    national_law_basis: str
    no_alternative_means: bool





    def to_dict(self) -> dict[str, Any]:
        justification = self.justification

        national_law_basis = self.national_law_basis

        no_alternative_means = self.no_alternative_means


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "justification": justification,
            "national_law_basis": national_law_basis,
            "no_alternative_means": no_alternative_means,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        justification = d.pop("justification")

        national_law_basis = d.pop("national_law_basis")

        no_alternative_means = d.pop("no_alternative_means")

        opt_out_exception = cls(
            justification=justification,
            national_law_basis=national_law_basis,
            no_alternative_means=no_alternative_means,
        )

        return opt_out_exception

