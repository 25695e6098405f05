from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.data_category import DataCategory
from ..models.filter_policy import FilterPolicy
from ..models.model_release import ModelRelease
from ..models.purpose import Purpose
from ..models.study_task_type_0 import StudyTaskType0
from ..models.study_task_type_3 import StudyTaskType3
from ..types import UNSET, Unset
from typing import cast
from uuid import UUID

if TYPE_CHECKING:
  from ..models.aggregation_type_0 import AggregationType0
  from ..models.aggregation_type_1 import AggregationType1
  from ..models.aggregation_type_2 import AggregationType2
  from ..models.aggregation_type_3 import AggregationType3
  from ..models.aggregation_type_4 import AggregationType4
  from ..models.aggregation_type_5 import AggregationType5
  from ..models.aggregation_type_6 import AggregationType6
  from ..models.decision_threshold_type_0 import DecisionThresholdType0
  from ..models.decision_threshold_type_1 import DecisionThresholdType1
  from ..models.decision_threshold_type_2 import DecisionThresholdType2
  from ..models.dp_plan import DpPlan
  from ..models.output_check import OutputCheck
  from ..models.secure_aggregation import SecureAggregation
  from ..models.study_spec_feature_spec import StudySpecFeatureSpec
  from ..models.study_spec_model import StudySpecModel
  from ..models.study_spec_strategy import StudySpecStrategy
  from ..models.study_spec_train import StudySpecTrain
  from ..models.study_task_type_1 import StudyTaskType1
  from ..models.study_task_type_2 import StudyTaskType2





T = TypeVar("T", bound="StudySpec")



@_attrs_define
class StudySpec:
    """ A parsed, validated study. Stored as submitted and sent (in part) to the data holders.

        Attributes:
            categories (list[DataCategory]):
            data_holders (list[str]):
            dp (DpPlan): The privacy mechanism of a study, resolved at submission: the noise multiplier is fixed
                (derived from a target epsilon when one was asked for) so every round costs the same.
            feature_spec (StudySpecFeatureSpec): The node's feature specification (see `node::features`), as submitted.
            min_sites (int):
            model (StudySpecModel):
            optout_policy (FilterPolicy): Which opt-outs count for a permit's processing.
            output_check (OutputCheck): The minimum the final aggregate must rest on before it may leave (Art. 73(2) output
                check).
            permit_id (UUID): Identifier of a data permit (Art. 68).
            purpose (Purpose):
            round_deadline_seconds (int):
            rounds (int):
            seed (int):
            strategy (StudySpecStrategy): The method as `{"<name>": {<settings>}}` (see `fl_engine::strategy::stored`).
            title (str):
            train (StudySpecTrain):
            validation_fraction (float):
            aggregation (AggregationType0 | AggregationType1 | AggregationType2 | AggregationType3 | AggregationType4 |
                AggregationType5 | AggregationType6 | Unset): How the gateway combines the holders' updates each round. `mean`
                is the method's own
                averaging (DP-FedAvg under client-level DP, an equal-weight mean under record-level DP, the
                example-weighted mean without formal DP). The Byzantine-robust rules (fl_engine's
                `strategy::robust`) count holders, not examples, so a holder cannot buy influence by
                reporting a large sample count; under client-level DP each runs on updates clipped to the
                plan's norm, with Gaussian noise scaled to the rule's replace-one sensitivity. FLTrust needs
                a clean root data set; the gateway holds no patient data, so the study names one of its own
                holders as the root holder (e.g. a node of the HDAB that holds a reference data set it
                curates), whose update is each round's root update. It is not offered under client-level
                DP: the trust scores and the norm every update is rescaled to come from the root holder's
                unprivatised update, which the client-level noise does not cover.
            parameter_count (int | None | Unset): Trainable values of the model (`ModelSpec::parameter_count`).
            release (ModelRelease | Unset): Which global model a completed study releases (FL4Health's checkpointing
                protocol).
            secure_aggregation (None | SecureAggregation | Unset):
            task (StudyTaskType0 | StudyTaskType1 | StudyTaskType2 | StudyTaskType3 | Unset): What a study predicts. The
                feature specification's label determines what it can be: a
                binary label trains a binary classifier (one sigmoid), a two-class softmax
                (`multiclass` with 2 classes) or one independent sigmoid (`multilabel` with 1 label); a
                survival label trains a survival model.
            test_fraction (float | Unset): Share of each holder's patients held out for testing where its records carry no
                split
                tags (studies stored before the choice: [`DEFAULT_TEST_FRACTION`]).
            threshold (DecisionThresholdType0 | DecisionThresholdType1 | DecisionThresholdType2 | None | Unset):
     """

    categories: list[DataCategory]
    data_holders: list[str]
    dp: DpPlan
    feature_spec: StudySpecFeatureSpec
    min_sites: int
    model: StudySpecModel
    optout_policy: FilterPolicy
    output_check: OutputCheck
    permit_id: UUID
    purpose: Purpose
    round_deadline_seconds: int
    rounds: int
    seed: int
    strategy: StudySpecStrategy
    title: str
    train: StudySpecTrain
    validation_fraction: float
    aggregation: AggregationType0 | AggregationType1 | AggregationType2 | AggregationType3 | AggregationType4 | AggregationType5 | AggregationType6 | Unset = UNSET
    parameter_count: int | None | Unset = UNSET
    release: ModelRelease | Unset = UNSET
    secure_aggregation: None | SecureAggregation | Unset = UNSET
    task: StudyTaskType0 | StudyTaskType1 | StudyTaskType2 | StudyTaskType3 | Unset = UNSET
    test_fraction: float | Unset = UNSET
    threshold: DecisionThresholdType0 | DecisionThresholdType1 | DecisionThresholdType2 | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.aggregation_type_0 import AggregationType0 # noqa: PLC0415
        from ..models.aggregation_type_1 import AggregationType1 # noqa: PLC0415
        from ..models.aggregation_type_2 import AggregationType2 # noqa: PLC0415
        from ..models.aggregation_type_3 import AggregationType3 # noqa: PLC0415
        from ..models.aggregation_type_4 import AggregationType4 # noqa: PLC0415
        from ..models.aggregation_type_5 import AggregationType5 # noqa: PLC0415
        from ..models.aggregation_type_6 import AggregationType6 # noqa: PLC0415
        from ..models.decision_threshold_type_0 import DecisionThresholdType0 # noqa: PLC0415
        from ..models.decision_threshold_type_1 import DecisionThresholdType1 # noqa: PLC0415
        from ..models.decision_threshold_type_2 import DecisionThresholdType2 # noqa: PLC0415
        from ..models.dp_plan import DpPlan # noqa: PLC0415
        from ..models.output_check import OutputCheck # noqa: PLC0415
        from ..models.secure_aggregation import SecureAggregation # noqa: PLC0415
        from ..models.study_spec_feature_spec import StudySpecFeatureSpec # noqa: PLC0415
        from ..models.study_spec_model import StudySpecModel # noqa: PLC0415
        from ..models.study_spec_strategy import StudySpecStrategy # noqa: PLC0415
        from ..models.study_spec_train import StudySpecTrain # noqa: PLC0415
        from ..models.study_task_type_1 import StudyTaskType1 # noqa: PLC0415
        from ..models.study_task_type_2 import StudyTaskType2 # noqa: PLC0415
        categories = []
        for categories_item_data in self.categories:
            categories_item = categories_item_data.value
            categories.append(categories_item)



        data_holders = self.data_holders



        dp = self.dp.to_dict()

        feature_spec = self.feature_spec.to_dict()

        min_sites = self.min_sites

        model = self.model.to_dict()

        optout_policy = self.optout_policy.value

        output_check = self.output_check.to_dict()

        permit_id = str(self.permit_id)

        purpose = self.purpose.value

        round_deadline_seconds = self.round_deadline_seconds

        rounds = self.rounds

        seed = self.seed

        strategy = self.strategy.to_dict()

        title = self.title

        train = self.train.to_dict()

        validation_fraction = self.validation_fraction

        aggregation: dict[str, Any] | Unset
        if isinstance(self.aggregation, Unset):
            aggregation = UNSET
        elif isinstance(self.aggregation, AggregationType0):
            aggregation = self.aggregation.to_dict()
        elif isinstance(self.aggregation, AggregationType1):
            aggregation = self.aggregation.to_dict()
        elif isinstance(self.aggregation, AggregationType2):
            aggregation = self.aggregation.to_dict()
        elif isinstance(self.aggregation, AggregationType3):
            aggregation = self.aggregation.to_dict()
        elif isinstance(self.aggregation, AggregationType4):
            aggregation = self.aggregation.to_dict()
        elif isinstance(self.aggregation, AggregationType5):
            aggregation = self.aggregation.to_dict()
        else:
            aggregation = self.aggregation.to_dict()


        parameter_count: int | None | Unset
        if isinstance(self.parameter_count, Unset):
            parameter_count = UNSET
        else:
            parameter_count = self.parameter_count

        release: str | Unset = UNSET
        if not isinstance(self.release, Unset):
            release = self.release.value


        secure_aggregation: dict[str, Any] | None | Unset
        if isinstance(self.secure_aggregation, Unset):
            secure_aggregation = UNSET
        elif isinstance(self.secure_aggregation, SecureAggregation):
            secure_aggregation = self.secure_aggregation.to_dict()
        else:
            secure_aggregation = self.secure_aggregation

        task: dict[str, Any] | str | Unset
        if isinstance(self.task, Unset):
            task = UNSET
        elif isinstance(self.task, StudyTaskType0):
            task = self.task.value
        elif isinstance(self.task, StudyTaskType1):
            task = self.task.to_dict()
        elif isinstance(self.task, StudyTaskType2):
            task = self.task.to_dict()
        else:
            task = self.task.value


        test_fraction = self.test_fraction

        threshold: dict[str, Any] | None | Unset
        if isinstance(self.threshold, Unset):
            threshold = UNSET
        elif isinstance(self.threshold, DecisionThresholdType0):
            threshold = self.threshold.to_dict()
        elif isinstance(self.threshold, DecisionThresholdType1):
            threshold = self.threshold.to_dict()
        elif isinstance(self.threshold, DecisionThresholdType2):
            threshold = self.threshold.to_dict()
        else:
            threshold = self.threshold


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "categories": categories,
            "data_holders": data_holders,
            "dp": dp,
            "feature_spec": feature_spec,
            "min_sites": min_sites,
            "model": model,
            "optout_policy": optout_policy,
            "output_check": output_check,
            "permit_id": permit_id,
            "purpose": purpose,
            "round_deadline_seconds": round_deadline_seconds,
            "rounds": rounds,
            "seed": seed,
            "strategy": strategy,
            "title": title,
            "train": train,
            "validation_fraction": validation_fraction,
        })
        if aggregation is not UNSET:
            field_dict["aggregation"] = aggregation
        if parameter_count is not UNSET:
            field_dict["parameter_count"] = parameter_count
        if release is not UNSET:
            field_dict["release"] = release
        if secure_aggregation is not UNSET:
            field_dict["secure_aggregation"] = secure_aggregation
        if task is not UNSET:
            field_dict["task"] = task
        if test_fraction is not UNSET:
            field_dict["test_fraction"] = test_fraction
        if threshold is not UNSET:
            field_dict["threshold"] = threshold

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.aggregation_type_0 import AggregationType0 # noqa: PLC0415
        from ..models.aggregation_type_1 import AggregationType1 # noqa: PLC0415
        from ..models.aggregation_type_2 import AggregationType2 # noqa: PLC0415
        from ..models.aggregation_type_3 import AggregationType3 # noqa: PLC0415
        from ..models.aggregation_type_4 import AggregationType4 # noqa: PLC0415
        from ..models.aggregation_type_5 import AggregationType5 # noqa: PLC0415
        from ..models.aggregation_type_6 import AggregationType6 # noqa: PLC0415
        from ..models.decision_threshold_type_0 import DecisionThresholdType0 # noqa: PLC0415
        from ..models.decision_threshold_type_1 import DecisionThresholdType1 # noqa: PLC0415
        from ..models.decision_threshold_type_2 import DecisionThresholdType2 # noqa: PLC0415
        from ..models.dp_plan import DpPlan # noqa: PLC0415
        from ..models.output_check import OutputCheck # noqa: PLC0415
        from ..models.secure_aggregation import SecureAggregation # noqa: PLC0415
        from ..models.study_spec_feature_spec import StudySpecFeatureSpec # noqa: PLC0415
        from ..models.study_spec_model import StudySpecModel # noqa: PLC0415
        from ..models.study_spec_strategy import StudySpecStrategy # noqa: PLC0415
        from ..models.study_spec_train import StudySpecTrain # noqa: PLC0415
        from ..models.study_task_type_1 import StudyTaskType1 # noqa: PLC0415
        from ..models.study_task_type_2 import StudyTaskType2 # noqa: PLC0415
        d = dict(src_dict)
        categories = []
        _categories = d.pop("categories")
        for categories_item_data in (_categories):
            categories_item = DataCategory(categories_item_data)



            categories.append(categories_item)


        data_holders = cast(list[str], d.pop("data_holders"))


        dp = DpPlan.from_dict(d.pop("dp"))




        feature_spec = StudySpecFeatureSpec.from_dict(d.pop("feature_spec"))




        min_sites = d.pop("min_sites")

        model = StudySpecModel.from_dict(d.pop("model"))




        optout_policy = FilterPolicy(d.pop("optout_policy"))




        output_check = OutputCheck.from_dict(d.pop("output_check"))




        permit_id = UUID(d.pop("permit_id"))




        purpose = Purpose(d.pop("purpose"))




        round_deadline_seconds = d.pop("round_deadline_seconds")

        rounds = d.pop("rounds")

        seed = d.pop("seed")

        strategy = StudySpecStrategy.from_dict(d.pop("strategy"))




        title = d.pop("title")

        train = StudySpecTrain.from_dict(d.pop("train"))




        validation_fraction = d.pop("validation_fraction")

        def _parse_aggregation(data: object) -> AggregationType0 | AggregationType1 | AggregationType2 | AggregationType3 | AggregationType4 | AggregationType5 | AggregationType6 | Unset:
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_aggregation_type_0 = AggregationType0.from_dict(data)



                return componentsschemas_aggregation_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_aggregation_type_1 = AggregationType1.from_dict(data)



                return componentsschemas_aggregation_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_aggregation_type_2 = AggregationType2.from_dict(data)



                return componentsschemas_aggregation_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_aggregation_type_3 = AggregationType3.from_dict(data)



                return componentsschemas_aggregation_type_3
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_aggregation_type_4 = AggregationType4.from_dict(data)



                return componentsschemas_aggregation_type_4
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_aggregation_type_5 = AggregationType5.from_dict(data)



                return componentsschemas_aggregation_type_5
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            componentsschemas_aggregation_type_6 = AggregationType6.from_dict(data)



            return componentsschemas_aggregation_type_6

        aggregation = _parse_aggregation(d.pop("aggregation", UNSET))


        def _parse_parameter_count(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        parameter_count = _parse_parameter_count(d.pop("parameter_count", UNSET))


        _release = d.pop("release", UNSET)
        release: ModelRelease | Unset
        if isinstance(_release,  Unset):
            release = UNSET
        else:
            release = ModelRelease(_release)




        def _parse_secure_aggregation(data: object) -> None | SecureAggregation | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                secure_aggregation_type_0 = SecureAggregation.from_dict(data)



                return secure_aggregation_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SecureAggregation | Unset, data)

        secure_aggregation = _parse_secure_aggregation(d.pop("secure_aggregation", UNSET))


        def _parse_task(data: object) -> StudyTaskType0 | StudyTaskType1 | StudyTaskType2 | StudyTaskType3 | Unset:
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                componentsschemas_study_task_type_0 = StudyTaskType0(data)



                return componentsschemas_study_task_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_study_task_type_1 = StudyTaskType1.from_dict(data)



                return componentsschemas_study_task_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_study_task_type_2 = StudyTaskType2.from_dict(data)



                return componentsschemas_study_task_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, str):
                raise TypeError()
            componentsschemas_study_task_type_3 = StudyTaskType3(data)



            return componentsschemas_study_task_type_3

        task = _parse_task(d.pop("task", UNSET))


        test_fraction = d.pop("test_fraction", UNSET)

        def _parse_threshold(data: object) -> DecisionThresholdType0 | DecisionThresholdType1 | DecisionThresholdType2 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_decision_threshold_type_0 = DecisionThresholdType0.from_dict(data)



                return componentsschemas_decision_threshold_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_decision_threshold_type_1 = DecisionThresholdType1.from_dict(data)



                return componentsschemas_decision_threshold_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_decision_threshold_type_2 = DecisionThresholdType2.from_dict(data)



                return componentsschemas_decision_threshold_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DecisionThresholdType0 | DecisionThresholdType1 | DecisionThresholdType2 | None | Unset, data)

        threshold = _parse_threshold(d.pop("threshold", UNSET))


        study_spec = cls(
            categories=categories,
            data_holders=data_holders,
            dp=dp,
            feature_spec=feature_spec,
            min_sites=min_sites,
            model=model,
            optout_policy=optout_policy,
            output_check=output_check,
            permit_id=permit_id,
            purpose=purpose,
            round_deadline_seconds=round_deadline_seconds,
            rounds=rounds,
            seed=seed,
            strategy=strategy,
            title=title,
            train=train,
            validation_fraction=validation_fraction,
            aggregation=aggregation,
            parameter_count=parameter_count,
            release=release,
            secure_aggregation=secure_aggregation,
            task=task,
            test_fraction=test_fraction,
            threshold=threshold,
        )


        study_spec.additional_properties = d
        return study_spec

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
