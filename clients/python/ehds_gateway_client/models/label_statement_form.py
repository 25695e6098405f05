from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="LabelStatementForm")



@_attrs_define
class LabelStatementForm:
    """ What the holder submits for one element.

        Attributes:
            statement (str):
            evidence (None | str | Unset): Where the documentation behind the statement is (an `http(s)` URL).
     """

    statement: str
    evidence: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        statement = self.statement

        evidence: None | str | Unset
        if isinstance(self.evidence, Unset):
            evidence = UNSET
        else:
            evidence = self.evidence


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "statement": statement,
        })
        if evidence is not UNSET:
            field_dict["evidence"] = evidence

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        statement = d.pop("statement")

        def _parse_evidence(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        evidence = _parse_evidence(d.pop("evidence", UNSET))


        label_statement_form = cls(
            statement=statement,
            evidence=evidence,
        )

        return label_statement_form

