from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.study_status import StudyStatus
from uuid import UUID






T = TypeVar("T", bound="StudyProgress")



@_attrs_define
class StudyProgress:
    """ The `study` event.

        Attributes:
            epsilon_spent (float):
            rounds (int):
            rounds_done (int):
            status (StudyStatus): The lifecycle of a study.
            study_id (UUID): Identifier of a federated study run under a permit.
     """

    epsilon_spent: float
    rounds: int
    rounds_done: int
    status: StudyStatus
    study_id: UUID
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        epsilon_spent = self.epsilon_spent

        rounds = self.rounds

        rounds_done = self.rounds_done

        status = self.status.value

        study_id = str(self.study_id)


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "epsilon_spent": epsilon_spent,
            "rounds": rounds,
            "rounds_done": rounds_done,
            "status": status,
            "study_id": study_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        epsilon_spent = d.pop("epsilon_spent")

        rounds = d.pop("rounds")

        rounds_done = d.pop("rounds_done")

        status = StudyStatus(d.pop("status"))




        study_id = UUID(d.pop("study_id"))




        study_progress = cls(
            epsilon_spent=epsilon_spent,
            rounds=rounds,
            rounds_done=rounds_done,
            status=status,
            study_id=study_id,
        )


        study_progress.additional_properties = d
        return study_progress

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
