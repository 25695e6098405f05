from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.data_quality import DataQuality
  from ..models.task_result_body_evaluation_type_0 import TaskResultBodyEvaluationType0





T = TypeVar("T", bound="TaskResultBody")



@_attrs_define
class TaskResultBody:
    """ The body of `POST /v1/node/tasks/{id}/result`.

        Attributes:
            excluded_subjects (int): Subjects the opt-out filter removed before training.
            num_examples (int): Training examples behind the update (after opt-out filtering).
            registry_version (int): The registry version the node filtered against (must be the task's).
            data_quality (DataQuality | None | Unset):
            evaluation (None | TaskResultBodyEvaluationType0 | Unset): The node's evaluation of the model it received
                (before training).
            local_steps (int | None | Unset):
            parameters (None | str | Unset): Base64 of the safetensors update; required for `fit` tasks, absent for
                `evaluate`.
            train_loss (float | None | Unset):
     """

    excluded_subjects: int
    num_examples: int
    registry_version: int
    data_quality: DataQuality | None | Unset = UNSET
    evaluation: None | TaskResultBodyEvaluationType0 | Unset = UNSET
    local_steps: int | None | Unset = UNSET
    parameters: None | str | Unset = UNSET
    train_loss: float | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.data_quality import DataQuality # noqa: PLC0415
        from ..models.task_result_body_evaluation_type_0 import TaskResultBodyEvaluationType0 # noqa: PLC0415
        excluded_subjects = self.excluded_subjects

        num_examples = self.num_examples

        registry_version = self.registry_version

        data_quality: dict[str, Any] | None | Unset
        if isinstance(self.data_quality, Unset):
            data_quality = UNSET
        elif isinstance(self.data_quality, DataQuality):
            data_quality = self.data_quality.to_dict()
        else:
            data_quality = self.data_quality

        evaluation: dict[str, Any] | None | Unset
        if isinstance(self.evaluation, Unset):
            evaluation = UNSET
        elif isinstance(self.evaluation, TaskResultBodyEvaluationType0):
            evaluation = self.evaluation.to_dict()
        else:
            evaluation = self.evaluation

        local_steps: int | None | Unset
        if isinstance(self.local_steps, Unset):
            local_steps = UNSET
        else:
            local_steps = self.local_steps

        parameters: None | str | Unset
        if isinstance(self.parameters, Unset):
            parameters = UNSET
        else:
            parameters = self.parameters

        train_loss: float | None | Unset
        if isinstance(self.train_loss, Unset):
            train_loss = UNSET
        else:
            train_loss = self.train_loss


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "excluded_subjects": excluded_subjects,
            "num_examples": num_examples,
            "registry_version": registry_version,
        })
        if data_quality is not UNSET:
            field_dict["data_quality"] = data_quality
        if evaluation is not UNSET:
            field_dict["evaluation"] = evaluation
        if local_steps is not UNSET:
            field_dict["local_steps"] = local_steps
        if parameters is not UNSET:
            field_dict["parameters"] = parameters
        if train_loss is not UNSET:
            field_dict["train_loss"] = train_loss

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.data_quality import DataQuality # noqa: PLC0415
        from ..models.task_result_body_evaluation_type_0 import TaskResultBodyEvaluationType0 # noqa: PLC0415
        d = dict(src_dict)
        excluded_subjects = d.pop("excluded_subjects")

        num_examples = d.pop("num_examples")

        registry_version = d.pop("registry_version")

        def _parse_data_quality(data: object) -> DataQuality | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_quality_type_0 = DataQuality.from_dict(data)



                return data_quality_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DataQuality | None | Unset, data)

        data_quality = _parse_data_quality(d.pop("data_quality", UNSET))


        def _parse_evaluation(data: object) -> None | TaskResultBodyEvaluationType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                evaluation_type_0 = TaskResultBodyEvaluationType0.from_dict(data)



                return evaluation_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TaskResultBodyEvaluationType0 | Unset, data)

        evaluation = _parse_evaluation(d.pop("evaluation", UNSET))


        def _parse_local_steps(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        local_steps = _parse_local_steps(d.pop("local_steps", UNSET))


        def _parse_parameters(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        parameters = _parse_parameters(d.pop("parameters", UNSET))


        def _parse_train_loss(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        train_loss = _parse_train_loss(d.pop("train_loss", UNSET))


        task_result_body = cls(
            excluded_subjects=excluded_subjects,
            num_examples=num_examples,
            registry_version=registry_version,
            data_quality=data_quality,
            evaluation=evaluation,
            local_steps=local_steps,
            parameters=parameters,
            train_loss=train_loss,
        )

        return task_result_body

