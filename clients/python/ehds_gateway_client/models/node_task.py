from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.task_kind import TaskKind
from typing import cast
from uuid import UUID
import datetime

if TYPE_CHECKING:
  from ..models.node_study import NodeStudy





T = TypeVar("T", bound="NodeTask")



@_attrs_define
class NodeTask:
    """ One task, as `GET /v1/node/tasks` hands it out.

        Attributes:
            data_holder (str): An organisation: an applicant's organisation or a data holder. Matches the organisation claim
                of the caller's token.
            deadline (datetime.datetime):
            kind (TaskKind):
            permit_id (UUID): Identifier of a data permit (Art. 68).
            registry_version (int): The opt-out registry version every holder filters against in this round.
            round_ (int):
            study (NodeStudy): The part of a study a node needs to train: never the other holders' names.
            study_id (UUID): Identifier of a federated study run under a permit.
            task_id (UUID): Identifier of one data holder's task in a round.
     """

    data_holder: str
    deadline: datetime.datetime
    kind: TaskKind
    permit_id: UUID
    registry_version: int
    round_: int
    study: NodeStudy
    study_id: UUID
    task_id: UUID
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.node_study import NodeStudy # noqa: PLC0415
        data_holder = self.data_holder

        deadline = self.deadline.isoformat()

        kind = self.kind.value

        permit_id = str(self.permit_id)

        registry_version = self.registry_version

        round_ = self.round_

        study = self.study.to_dict()

        study_id = str(self.study_id)

        task_id = str(self.task_id)


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "data_holder": data_holder,
            "deadline": deadline,
            "kind": kind,
            "permit_id": permit_id,
            "registry_version": registry_version,
            "round": round_,
            "study": study,
            "study_id": study_id,
            "task_id": task_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.node_study import NodeStudy # noqa: PLC0415
        d = dict(src_dict)
        data_holder = d.pop("data_holder")

        deadline = datetime.datetime.fromisoformat(d.pop("deadline"))




        kind = TaskKind(d.pop("kind"))




        permit_id = UUID(d.pop("permit_id"))




        registry_version = d.pop("registry_version")

        round_ = d.pop("round")

        study = NodeStudy.from_dict(d.pop("study"))




        study_id = UUID(d.pop("study_id"))




        task_id = UUID(d.pop("task_id"))




        node_task = cls(
            data_holder=data_holder,
            deadline=deadline,
            kind=kind,
            permit_id=permit_id,
            registry_version=registry_version,
            round_=round_,
            study=study,
            study_id=study_id,
            task_id=task_id,
        )


        node_task.additional_properties = d
        return node_task

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
