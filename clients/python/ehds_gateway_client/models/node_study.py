from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.data_category import DataCategory
from ..models.filter_policy import FilterPolicy
from ..models.purpose import Purpose
from ..models.study_task_type_0 import StudyTaskType0
from ..models.study_task_type_3 import StudyTaskType3
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.decision_threshold_type_0 import DecisionThresholdType0
  from ..models.decision_threshold_type_1 import DecisionThresholdType1
  from ..models.decision_threshold_type_2 import DecisionThresholdType2
  from ..models.dp_plan import DpPlan
  from ..models.node_study_feature_spec import NodeStudyFeatureSpec
  from ..models.node_study_model import NodeStudyModel
  from ..models.node_study_strategy import NodeStudyStrategy
  from ..models.node_study_train import NodeStudyTrain
  from ..models.secure_aggregation import SecureAggregation
  from ..models.study_task_type_1 import StudyTaskType1
  from ..models.study_task_type_2 import StudyTaskType2





T = TypeVar("T", bound="NodeStudy")



@_attrs_define
class NodeStudy:
    """ The part of a study a node needs to train: never the other holders' names.

        Attributes:
            categories (list[DataCategory]):
            feature_spec (NodeStudyFeatureSpec):
            model (NodeStudyModel):
            optout_policy (FilterPolicy): Which opt-outs count for a permit's processing.
            purpose (Purpose):
            seed (int):
            strategy (NodeStudyStrategy): The method as `{"<name>": {<settings>}}` (see `fl_engine::strategy::stored`).
            title (str):
            train (NodeStudyTrain):
            validation_fraction (float):
            dp (DpPlan | None | Unset):
            secure_aggregation (None | SecureAggregation | Unset):
            task (StudyTaskType0 | StudyTaskType1 | StudyTaskType2 | StudyTaskType3 | Unset): What a study predicts. The
                feature specification's label determines what it can be: a
                binary label trains a binary classifier (one sigmoid), a two-class softmax
                (`multiclass` with 2 classes) or one independent sigmoid (`multilabel` with 1 label); a
                survival label trains a survival model.
            test_fraction (float | Unset): Share of the holder's patients the node holds out for testing where its records
                carry
                no split tags (absent from older gateways: the default).
            threshold (DecisionThresholdType0 | DecisionThresholdType1 | DecisionThresholdType2 | None | Unset):
     """

    categories: list[DataCategory]
    feature_spec: NodeStudyFeatureSpec
    model: NodeStudyModel
    optout_policy: FilterPolicy
    purpose: Purpose
    seed: int
    strategy: NodeStudyStrategy
    title: str
    train: NodeStudyTrain
    validation_fraction: float
    dp: DpPlan | None | Unset = UNSET
    secure_aggregation: None | SecureAggregation | Unset = UNSET
    task: StudyTaskType0 | StudyTaskType1 | StudyTaskType2 | StudyTaskType3 | Unset = UNSET
    test_fraction: float | Unset = UNSET
    threshold: DecisionThresholdType0 | DecisionThresholdType1 | DecisionThresholdType2 | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.decision_threshold_type_0 import DecisionThresholdType0 # noqa: PLC0415
        from ..models.decision_threshold_type_1 import DecisionThresholdType1 # noqa: PLC0415
        from ..models.decision_threshold_type_2 import DecisionThresholdType2 # noqa: PLC0415
        from ..models.dp_plan import DpPlan # noqa: PLC0415
        from ..models.node_study_feature_spec import NodeStudyFeatureSpec # noqa: PLC0415
        from ..models.node_study_model import NodeStudyModel # noqa: PLC0415
        from ..models.node_study_strategy import NodeStudyStrategy # noqa: PLC0415
        from ..models.node_study_train import NodeStudyTrain # noqa: PLC0415
        from ..models.secure_aggregation import SecureAggregation # noqa: PLC0415
        from ..models.study_task_type_1 import StudyTaskType1 # noqa: PLC0415
        from ..models.study_task_type_2 import StudyTaskType2 # noqa: PLC0415
        categories = []
        for categories_item_data in self.categories:
            categories_item = categories_item_data.value
            categories.append(categories_item)



        feature_spec = self.feature_spec.to_dict()

        model = self.model.to_dict()

        optout_policy = self.optout_policy.value

        purpose = self.purpose.value

        seed = self.seed

        strategy = self.strategy.to_dict()

        title = self.title

        train = self.train.to_dict()

        validation_fraction = self.validation_fraction

        dp: dict[str, Any] | None | Unset
        if isinstance(self.dp, Unset):
            dp = UNSET
        elif isinstance(self.dp, DpPlan):
            dp = self.dp.to_dict()
        else:
            dp = self.dp

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
            "feature_spec": feature_spec,
            "model": model,
            "optout_policy": optout_policy,
            "purpose": purpose,
            "seed": seed,
            "strategy": strategy,
            "title": title,
            "train": train,
            "validation_fraction": validation_fraction,
        })
        if dp is not UNSET:
            field_dict["dp"] = dp
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
        from ..models.decision_threshold_type_0 import DecisionThresholdType0 # noqa: PLC0415
        from ..models.decision_threshold_type_1 import DecisionThresholdType1 # noqa: PLC0415
        from ..models.decision_threshold_type_2 import DecisionThresholdType2 # noqa: PLC0415
        from ..models.dp_plan import DpPlan # noqa: PLC0415
        from ..models.node_study_feature_spec import NodeStudyFeatureSpec # noqa: PLC0415
        from ..models.node_study_model import NodeStudyModel # noqa: PLC0415
        from ..models.node_study_strategy import NodeStudyStrategy # noqa: PLC0415
        from ..models.node_study_train import NodeStudyTrain # noqa: PLC0415
        from ..models.secure_aggregation import SecureAggregation # noqa: PLC0415
        from ..models.study_task_type_1 import StudyTaskType1 # noqa: PLC0415
        from ..models.study_task_type_2 import StudyTaskType2 # noqa: PLC0415
        d = dict(src_dict)
        categories = []
        _categories = d.pop("categories")
        for categories_item_data in (_categories):
            categories_item = DataCategory(categories_item_data)



            categories.append(categories_item)


        feature_spec = NodeStudyFeatureSpec.from_dict(d.pop("feature_spec"))




        model = NodeStudyModel.from_dict(d.pop("model"))




        optout_policy = FilterPolicy(d.pop("optout_policy"))




        purpose = Purpose(d.pop("purpose"))




        seed = d.pop("seed")

        strategy = NodeStudyStrategy.from_dict(d.pop("strategy"))




        title = d.pop("title")

        train = NodeStudyTrain.from_dict(d.pop("train"))




        validation_fraction = d.pop("validation_fraction")

        def _parse_dp(data: object) -> DpPlan | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                dp_type_0 = DpPlan.from_dict(data)



                return dp_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(DpPlan | None | Unset, data)

        dp = _parse_dp(d.pop("dp", UNSET))


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


        node_study = cls(
            categories=categories,
            feature_spec=feature_spec,
            model=model,
            optout_policy=optout_policy,
            purpose=purpose,
            seed=seed,
            strategy=strategy,
            title=title,
            train=train,
            validation_fraction=validation_fraction,
            dp=dp,
            secure_aggregation=secure_aggregation,
            task=task,
            test_fraction=test_fraction,
            threshold=threshold,
        )


        node_study.additional_properties = d
        return node_study

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
