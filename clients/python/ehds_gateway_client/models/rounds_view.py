from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.dp_level import DpLevel
from ..models.study_status import StudyStatus
from ..types import UNSET, Unset
from typing import cast
from uuid import UUID

if TYPE_CHECKING:
  from ..models.evaluation_view import EvaluationView
  from ..models.round_view import RoundView





T = TypeVar("T", bound="RoundsView")



@_attrs_define
class RoundsView:
    """ 
        Attributes:
            dp (DpLevel): Which unit differential privacy protects in a study.
            epsilon_spent (float):
            rounds (list[RoundView]):
            small_cell_threshold (int): Per-holder counts between 1 and this minus 1 are withheld (`null`), with any total
                that would give them back (`federation.small_cell_threshold`).
            status (StudyStatus): The lifecycle of a study.
            study_id (UUID): Identifier of a federated study run under a permit.
            initial_evaluation (EvaluationView | None | Unset):
     """

    dp: DpLevel
    epsilon_spent: float
    rounds: list[RoundView]
    small_cell_threshold: int
    status: StudyStatus
    study_id: UUID
    initial_evaluation: EvaluationView | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.evaluation_view import EvaluationView # noqa: PLC0415
        from ..models.round_view import RoundView # noqa: PLC0415
        dp = self.dp.value

        epsilon_spent = self.epsilon_spent

        rounds = []
        for rounds_item_data in self.rounds:
            rounds_item = rounds_item_data.to_dict()
            rounds.append(rounds_item)



        small_cell_threshold = self.small_cell_threshold

        status = self.status.value

        study_id = str(self.study_id)

        initial_evaluation: dict[str, Any] | None | Unset
        if isinstance(self.initial_evaluation, Unset):
            initial_evaluation = UNSET
        elif isinstance(self.initial_evaluation, EvaluationView):
            initial_evaluation = self.initial_evaluation.to_dict()
        else:
            initial_evaluation = self.initial_evaluation


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "dp": dp,
            "epsilon_spent": epsilon_spent,
            "rounds": rounds,
            "small_cell_threshold": small_cell_threshold,
            "status": status,
            "study_id": study_id,
        })
        if initial_evaluation is not UNSET:
            field_dict["initial_evaluation"] = initial_evaluation

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.evaluation_view import EvaluationView # noqa: PLC0415
        from ..models.round_view import RoundView # noqa: PLC0415
        d = dict(src_dict)
        dp = DpLevel(d.pop("dp"))




        epsilon_spent = d.pop("epsilon_spent")

        rounds = []
        _rounds = d.pop("rounds")
        for rounds_item_data in (_rounds):
            rounds_item = RoundView.from_dict(rounds_item_data)



            rounds.append(rounds_item)


        small_cell_threshold = d.pop("small_cell_threshold")

        status = StudyStatus(d.pop("status"))




        study_id = UUID(d.pop("study_id"))




        def _parse_initial_evaluation(data: object) -> EvaluationView | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                initial_evaluation_type_0 = EvaluationView.from_dict(data)



                return initial_evaluation_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EvaluationView | None | Unset, data)

        initial_evaluation = _parse_initial_evaluation(d.pop("initial_evaluation", UNSET))


        rounds_view = cls(
            dp=dp,
            epsilon_spent=epsilon_spent,
            rounds=rounds,
            small_cell_threshold=small_cell_threshold,
            status=status,
            study_id=study_id,
            initial_evaluation=initial_evaluation,
        )


        rounds_view.additional_properties = d
        return rounds_view

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
