from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.study_status import StudyStatus
from ..types import UNSET, Unset
from typing import cast
from uuid import UUID
import datetime

if TYPE_CHECKING:
  from ..models.holder_data_quality import HolderDataQuality
  from ..models.study_spec import StudySpec





T = TypeVar("T", bound="StudyView")



@_attrs_define
class StudyView:
    """ 
        Attributes:
            created_at (datetime.datetime):
            epsilon_planned (float):
            epsilon_spent (float): Epsilon spent so far and what the whole plan spends (composed under Rényi DP).
            id (UUID): Identifier of a federated study run under a permit.
            organisation (str):
            permit_id (UUID): Identifier of a data permit (Art. 68).
            researcher (str):
            rounds_done (int):
            rounds_planned (int):
            spec (StudySpec): A parsed, validated study. Stored as submitted and sent (in part) to the data holders.
            status (StudyStatus): The lifecycle of a study.
            updated_at (datetime.datetime):
            data_quality (list[HolderDataQuality] | Unset): `GET /v1/studies/{id}` only: per data holder, the data-quality
                summary of its latest
                task result (what its records make of the features), counts below the small-cell
                threshold withheld; absent until a holder has reported one.
            parameter_count (int | None | Unset): Trainable values of the study's model.
            status_reason (None | str | Unset):
     """

    created_at: datetime.datetime
    epsilon_planned: float
    epsilon_spent: float
    id: UUID
    organisation: str
    permit_id: UUID
    researcher: str
    rounds_done: int
    rounds_planned: int
    spec: StudySpec
    status: StudyStatus
    updated_at: datetime.datetime
    data_quality: list[HolderDataQuality] | Unset = UNSET
    parameter_count: int | None | Unset = UNSET
    status_reason: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.holder_data_quality import HolderDataQuality # noqa: PLC0415
        from ..models.study_spec import StudySpec # noqa: PLC0415
        created_at = self.created_at.isoformat()

        epsilon_planned = self.epsilon_planned

        epsilon_spent = self.epsilon_spent

        id = str(self.id)

        organisation = self.organisation

        permit_id = str(self.permit_id)

        researcher = self.researcher

        rounds_done = self.rounds_done

        rounds_planned = self.rounds_planned

        spec = self.spec.to_dict()

        status = self.status.value

        updated_at = self.updated_at.isoformat()

        data_quality: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.data_quality, Unset):
            data_quality = []
            for data_quality_item_data in self.data_quality:
                data_quality_item = data_quality_item_data.to_dict()
                data_quality.append(data_quality_item)



        parameter_count: int | None | Unset
        if isinstance(self.parameter_count, Unset):
            parameter_count = UNSET
        else:
            parameter_count = self.parameter_count

        status_reason: None | str | Unset
        if isinstance(self.status_reason, Unset):
            status_reason = UNSET
        else:
            status_reason = self.status_reason


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "created_at": created_at,
            "epsilon_planned": epsilon_planned,
            "epsilon_spent": epsilon_spent,
            "id": id,
            "organisation": organisation,
            "permit_id": permit_id,
            "researcher": researcher,
            "rounds_done": rounds_done,
            "rounds_planned": rounds_planned,
            "spec": spec,
            "status": status,
            "updated_at": updated_at,
        })
        if data_quality is not UNSET:
            field_dict["data_quality"] = data_quality
        if parameter_count is not UNSET:
            field_dict["parameter_count"] = parameter_count
        if status_reason is not UNSET:
            field_dict["status_reason"] = status_reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.holder_data_quality import HolderDataQuality # noqa: PLC0415
        from ..models.study_spec import StudySpec # noqa: PLC0415
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        epsilon_planned = d.pop("epsilon_planned")

        epsilon_spent = d.pop("epsilon_spent")

        id = UUID(d.pop("id"))




        organisation = d.pop("organisation")

        permit_id = UUID(d.pop("permit_id"))




        researcher = d.pop("researcher")

        rounds_done = d.pop("rounds_done")

        rounds_planned = d.pop("rounds_planned")

        spec = StudySpec.from_dict(d.pop("spec"))




        status = StudyStatus(d.pop("status"))




        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))




        _data_quality = d.pop("data_quality", UNSET)
        data_quality: list[HolderDataQuality] | Unset = UNSET
        if _data_quality is not UNSET:
            data_quality = []
            for data_quality_item_data in _data_quality:
                data_quality_item = HolderDataQuality.from_dict(data_quality_item_data)



                data_quality.append(data_quality_item)


        def _parse_parameter_count(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        parameter_count = _parse_parameter_count(d.pop("parameter_count", UNSET))


        def _parse_status_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        status_reason = _parse_status_reason(d.pop("status_reason", UNSET))


        study_view = cls(
            created_at=created_at,
            epsilon_planned=epsilon_planned,
            epsilon_spent=epsilon_spent,
            id=id,
            organisation=organisation,
            permit_id=permit_id,
            researcher=researcher,
            rounds_done=rounds_done,
            rounds_planned=rounds_planned,
            spec=spec,
            status=status,
            updated_at=updated_at,
            data_quality=data_quality,
            parameter_count=parameter_count,
            status_reason=status_reason,
        )


        study_view.additional_properties = d
        return study_view

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
