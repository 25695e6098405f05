from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.filter_policy import FilterPolicy
from ..models.loss_kind_type_4 import LossKindType4
from ..models.model_release import ModelRelease
from ..models.study_task_type_0 import StudyTaskType0
from ..models.study_task_type_3 import StudyTaskType3
from ..types import UNSET, Unset
from typing import cast

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
  from ..models.dp_request import DpRequest
  from ..models.loss_kind_type_0 import LossKindType0
  from ..models.loss_kind_type_1 import LossKindType1
  from ..models.loss_kind_type_2 import LossKindType2
  from ..models.loss_kind_type_3 import LossKindType3
  from ..models.model_request import ModelRequest
  from ..models.optimizer_request import OptimizerRequest
  from ..models.output_check_request import OutputCheckRequest
  from ..models.secure_aggregation_request import SecureAggregationRequest
  from ..models.strategy_config_fedadagrad import StrategyConfigFedadagrad
  from ..models.strategy_config_fedadam import StrategyConfigFedadam
  from ..models.strategy_config_fedyogi import StrategyConfigFedyogi
  from ..models.strategy_config_type_0 import StrategyConfigType0
  from ..models.strategy_config_type_1 import StrategyConfigType1
  from ..models.strategy_config_type_10 import StrategyConfigType10
  from ..models.strategy_config_type_11 import StrategyConfigType11
  from ..models.strategy_config_type_12 import StrategyConfigType12
  from ..models.strategy_config_type_13 import StrategyConfigType13
  from ..models.strategy_config_type_14 import StrategyConfigType14
  from ..models.strategy_config_type_15 import StrategyConfigType15
  from ..models.strategy_config_type_16 import StrategyConfigType16
  from ..models.strategy_config_type_17 import StrategyConfigType17
  from ..models.strategy_config_type_18 import StrategyConfigType18
  from ..models.strategy_config_type_19 import StrategyConfigType19
  from ..models.strategy_config_type_2 import StrategyConfigType2
  from ..models.strategy_config_type_20 import StrategyConfigType20
  from ..models.strategy_config_type_21 import StrategyConfigType21
  from ..models.strategy_config_type_22 import StrategyConfigType22
  from ..models.strategy_config_type_23 import StrategyConfigType23
  from ..models.strategy_config_type_24 import StrategyConfigType24
  from ..models.strategy_config_type_25 import StrategyConfigType25
  from ..models.strategy_config_type_26 import StrategyConfigType26
  from ..models.strategy_config_type_6 import StrategyConfigType6
  from ..models.strategy_config_type_7 import StrategyConfigType7
  from ..models.strategy_config_type_8 import StrategyConfigType8
  from ..models.strategy_config_type_9 import StrategyConfigType9
  from ..models.study_request_feature_spec import StudyRequestFeatureSpec
  from ..models.study_task_type_1 import StudyTaskType1
  from ..models.study_task_type_2 import StudyTaskType2





T = TypeVar("T", bound="StudyRequest")



@_attrs_define
class StudyRequest:
    """ The body of `POST /v1/studies`.

        Attributes:
            batch_size (int):
            categories (list[str]): The Art. 51(1) categories it processes; must cover every feature's category.
            data_holders (list[str]):
            dp (DpRequest):
            feature_spec (StudyRequestFeatureSpec): The feature specification the data holders extract model inputs with.
            min_sites (int): Results needed to aggregate a round; at most the number of data holders.
            model (ModelRequest):
            optimizer (OptimizerRequest):
            permit_id (str):
            purpose (str): The Art. 53(1) purpose this study serves.
            round_deadline_seconds (int):
            rounds (int):
            strategy (StrategyConfigFedadagrad | StrategyConfigFedadam | StrategyConfigFedyogi | StrategyConfigType0 |
                StrategyConfigType1 | StrategyConfigType10 | StrategyConfigType11 | StrategyConfigType12 | StrategyConfigType13
                | StrategyConfigType14 | StrategyConfigType15 | StrategyConfigType16 | StrategyConfigType17 |
                StrategyConfigType18 | StrategyConfigType19 | StrategyConfigType2 | StrategyConfigType20 | StrategyConfigType21
                | StrategyConfigType22 | StrategyConfigType23 | StrategyConfigType24 | StrategyConfigType25 |
                StrategyConfigType26 | StrategyConfigType6 | StrategyConfigType7 | StrategyConfigType8 | StrategyConfigType9):
                The method a study runs, with its settings. Serialised as the request names it:
                `{"name": "<method>", <setting>: <value>, ...}`; settings left out take the
                method's defaults.
            title (str):
            aggregation (AggregationType0 | AggregationType1 | AggregationType2 | AggregationType3 | AggregationType4 |
                AggregationType5 | AggregationType6 | None | Unset):
            local_epochs (int | None | Unset):
            local_steps (int | None | Unset): Local work per round: steps or epochs (exactly one).
            loss (LossKindType0 | LossKindType1 | LossKindType2 | LossKindType3 | LossKindType4 | None | Unset):
            optout_policy (FilterPolicy | Unset): Which opt-outs count for a permit's processing.
            output_check (None | OutputCheckRequest | Unset):
            release (ModelRelease | None | Unset):
            secure_aggregation (None | SecureAggregationRequest | Unset):
            seed (int | None | Unset):
            task (None | StudyTaskType0 | StudyTaskType1 | StudyTaskType2 | StudyTaskType3 | Unset):
            test_fraction (float | None | Unset): Share of each holder's patients held out for testing where its records
                carry no
                train/test split tags (default 0.2): the node splits them itself, patient by patient,
                stratified by the label, seeded by the study (docs/federated-studies.md).
            threshold (DecisionThresholdType0 | DecisionThresholdType1 | DecisionThresholdType2 | None | Unset):
            validation_fraction (float | None | Unset): Share of each holder's training rows kept for validation (default
                0.2).
     """

    batch_size: int
    categories: list[str]
    data_holders: list[str]
    dp: DpRequest
    feature_spec: StudyRequestFeatureSpec
    min_sites: int
    model: ModelRequest
    optimizer: OptimizerRequest
    permit_id: str
    purpose: str
    round_deadline_seconds: int
    rounds: int
    strategy: StrategyConfigFedadagrad | StrategyConfigFedadam | StrategyConfigFedyogi | StrategyConfigType0 | StrategyConfigType1 | StrategyConfigType10 | StrategyConfigType11 | StrategyConfigType12 | StrategyConfigType13 | StrategyConfigType14 | StrategyConfigType15 | StrategyConfigType16 | StrategyConfigType17 | StrategyConfigType18 | StrategyConfigType19 | StrategyConfigType2 | StrategyConfigType20 | StrategyConfigType21 | StrategyConfigType22 | StrategyConfigType23 | StrategyConfigType24 | StrategyConfigType25 | StrategyConfigType26 | StrategyConfigType6 | StrategyConfigType7 | StrategyConfigType8 | StrategyConfigType9
    title: str
    aggregation: AggregationType0 | AggregationType1 | AggregationType2 | AggregationType3 | AggregationType4 | AggregationType5 | AggregationType6 | None | Unset = UNSET
    local_epochs: int | None | Unset = UNSET
    local_steps: int | None | Unset = UNSET
    loss: LossKindType0 | LossKindType1 | LossKindType2 | LossKindType3 | LossKindType4 | None | Unset = UNSET
    optout_policy: FilterPolicy | Unset = UNSET
    output_check: None | OutputCheckRequest | Unset = UNSET
    release: ModelRelease | None | Unset = UNSET
    secure_aggregation: None | SecureAggregationRequest | Unset = UNSET
    seed: int | None | Unset = UNSET
    task: None | StudyTaskType0 | StudyTaskType1 | StudyTaskType2 | StudyTaskType3 | Unset = UNSET
    test_fraction: float | None | Unset = UNSET
    threshold: DecisionThresholdType0 | DecisionThresholdType1 | DecisionThresholdType2 | None | Unset = UNSET
    validation_fraction: float | None | Unset = UNSET





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
        from ..models.dp_request import DpRequest # noqa: PLC0415
        from ..models.loss_kind_type_0 import LossKindType0 # noqa: PLC0415
        from ..models.loss_kind_type_1 import LossKindType1 # noqa: PLC0415
        from ..models.loss_kind_type_2 import LossKindType2 # noqa: PLC0415
        from ..models.loss_kind_type_3 import LossKindType3 # noqa: PLC0415
        from ..models.model_request import ModelRequest # noqa: PLC0415
        from ..models.optimizer_request import OptimizerRequest # noqa: PLC0415
        from ..models.output_check_request import OutputCheckRequest # noqa: PLC0415
        from ..models.secure_aggregation_request import SecureAggregationRequest # noqa: PLC0415
        from ..models.strategy_config_fedadagrad import StrategyConfigFedadagrad # noqa: PLC0415
        from ..models.strategy_config_fedadam import StrategyConfigFedadam # noqa: PLC0415
        from ..models.strategy_config_fedyogi import StrategyConfigFedyogi # noqa: PLC0415
        from ..models.strategy_config_type_0 import StrategyConfigType0 # noqa: PLC0415
        from ..models.strategy_config_type_1 import StrategyConfigType1 # noqa: PLC0415
        from ..models.strategy_config_type_10 import StrategyConfigType10 # noqa: PLC0415
        from ..models.strategy_config_type_11 import StrategyConfigType11 # noqa: PLC0415
        from ..models.strategy_config_type_12 import StrategyConfigType12 # noqa: PLC0415
        from ..models.strategy_config_type_13 import StrategyConfigType13 # noqa: PLC0415
        from ..models.strategy_config_type_14 import StrategyConfigType14 # noqa: PLC0415
        from ..models.strategy_config_type_15 import StrategyConfigType15 # noqa: PLC0415
        from ..models.strategy_config_type_16 import StrategyConfigType16 # noqa: PLC0415
        from ..models.strategy_config_type_17 import StrategyConfigType17 # noqa: PLC0415
        from ..models.strategy_config_type_18 import StrategyConfigType18 # noqa: PLC0415
        from ..models.strategy_config_type_19 import StrategyConfigType19 # noqa: PLC0415
        from ..models.strategy_config_type_2 import StrategyConfigType2 # noqa: PLC0415
        from ..models.strategy_config_type_20 import StrategyConfigType20 # noqa: PLC0415
        from ..models.strategy_config_type_21 import StrategyConfigType21 # noqa: PLC0415
        from ..models.strategy_config_type_22 import StrategyConfigType22 # noqa: PLC0415
        from ..models.strategy_config_type_23 import StrategyConfigType23 # noqa: PLC0415
        from ..models.strategy_config_type_24 import StrategyConfigType24 # noqa: PLC0415
        from ..models.strategy_config_type_25 import StrategyConfigType25 # noqa: PLC0415
        from ..models.strategy_config_type_26 import StrategyConfigType26 # noqa: PLC0415
        from ..models.strategy_config_type_6 import StrategyConfigType6 # noqa: PLC0415
        from ..models.strategy_config_type_7 import StrategyConfigType7 # noqa: PLC0415
        from ..models.strategy_config_type_8 import StrategyConfigType8 # noqa: PLC0415
        from ..models.strategy_config_type_9 import StrategyConfigType9 # noqa: PLC0415
        from ..models.study_request_feature_spec import StudyRequestFeatureSpec # noqa: PLC0415
        from ..models.study_task_type_1 import StudyTaskType1 # noqa: PLC0415
        from ..models.study_task_type_2 import StudyTaskType2 # noqa: PLC0415
        batch_size = self.batch_size

        categories = self.categories



        data_holders = self.data_holders



        dp = self.dp.to_dict()

        feature_spec = self.feature_spec.to_dict()

        min_sites = self.min_sites

        model = self.model.to_dict()

        optimizer = self.optimizer.to_dict()

        permit_id = self.permit_id

        purpose = self.purpose

        round_deadline_seconds = self.round_deadline_seconds

        rounds = self.rounds

        strategy: dict[str, Any]
        if isinstance(self.strategy, StrategyConfigType0):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType1):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType2):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigFedadam):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigFedyogi):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigFedadagrad):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType6):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType7):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType8):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType9):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType10):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType11):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType12):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType13):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType14):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType15):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType16):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType17):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType18):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType19):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType20):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType21):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType22):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType23):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType24):
            strategy = self.strategy.to_dict()
        elif isinstance(self.strategy, StrategyConfigType25):
            strategy = self.strategy.to_dict()
        else:
            strategy = self.strategy.to_dict()


        title = self.title

        aggregation: dict[str, Any] | None | Unset
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
        elif isinstance(self.aggregation, AggregationType6):
            aggregation = self.aggregation.to_dict()
        else:
            aggregation = self.aggregation

        local_epochs: int | None | Unset
        if isinstance(self.local_epochs, Unset):
            local_epochs = UNSET
        else:
            local_epochs = self.local_epochs

        local_steps: int | None | Unset
        if isinstance(self.local_steps, Unset):
            local_steps = UNSET
        else:
            local_steps = self.local_steps

        loss: dict[str, Any] | None | str | Unset
        if isinstance(self.loss, Unset):
            loss = UNSET
        elif isinstance(self.loss, LossKindType0):
            loss = self.loss.to_dict()
        elif isinstance(self.loss, LossKindType1):
            loss = self.loss.to_dict()
        elif isinstance(self.loss, LossKindType2):
            loss = self.loss.to_dict()
        elif isinstance(self.loss, LossKindType3):
            loss = self.loss.to_dict()
        elif isinstance(self.loss, LossKindType4):
            loss = self.loss.value
        else:
            loss = self.loss

        optout_policy: str | Unset = UNSET
        if not isinstance(self.optout_policy, Unset):
            optout_policy = self.optout_policy.value


        output_check: dict[str, Any] | None | Unset
        if isinstance(self.output_check, Unset):
            output_check = UNSET
        elif isinstance(self.output_check, OutputCheckRequest):
            output_check = self.output_check.to_dict()
        else:
            output_check = self.output_check

        release: None | str | Unset
        if isinstance(self.release, Unset):
            release = UNSET
        elif isinstance(self.release, ModelRelease):
            release = self.release.value
        else:
            release = self.release

        secure_aggregation: dict[str, Any] | None | Unset
        if isinstance(self.secure_aggregation, Unset):
            secure_aggregation = UNSET
        elif isinstance(self.secure_aggregation, SecureAggregationRequest):
            secure_aggregation = self.secure_aggregation.to_dict()
        else:
            secure_aggregation = self.secure_aggregation

        seed: int | None | Unset
        if isinstance(self.seed, Unset):
            seed = UNSET
        else:
            seed = self.seed

        task: dict[str, Any] | None | str | Unset
        if isinstance(self.task, Unset):
            task = UNSET
        elif isinstance(self.task, StudyTaskType0):
            task = self.task.value
        elif isinstance(self.task, StudyTaskType1):
            task = self.task.to_dict()
        elif isinstance(self.task, StudyTaskType2):
            task = self.task.to_dict()
        elif isinstance(self.task, StudyTaskType3):
            task = self.task.value
        else:
            task = self.task

        test_fraction: float | None | Unset
        if isinstance(self.test_fraction, Unset):
            test_fraction = UNSET
        else:
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

        validation_fraction: float | None | Unset
        if isinstance(self.validation_fraction, Unset):
            validation_fraction = UNSET
        else:
            validation_fraction = self.validation_fraction


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "batch_size": batch_size,
            "categories": categories,
            "data_holders": data_holders,
            "dp": dp,
            "feature_spec": feature_spec,
            "min_sites": min_sites,
            "model": model,
            "optimizer": optimizer,
            "permit_id": permit_id,
            "purpose": purpose,
            "round_deadline_seconds": round_deadline_seconds,
            "rounds": rounds,
            "strategy": strategy,
            "title": title,
        })
        if aggregation is not UNSET:
            field_dict["aggregation"] = aggregation
        if local_epochs is not UNSET:
            field_dict["local_epochs"] = local_epochs
        if local_steps is not UNSET:
            field_dict["local_steps"] = local_steps
        if loss is not UNSET:
            field_dict["loss"] = loss
        if optout_policy is not UNSET:
            field_dict["optout_policy"] = optout_policy
        if output_check is not UNSET:
            field_dict["output_check"] = output_check
        if release is not UNSET:
            field_dict["release"] = release
        if secure_aggregation is not UNSET:
            field_dict["secure_aggregation"] = secure_aggregation
        if seed is not UNSET:
            field_dict["seed"] = seed
        if task is not UNSET:
            field_dict["task"] = task
        if test_fraction is not UNSET:
            field_dict["test_fraction"] = test_fraction
        if threshold is not UNSET:
            field_dict["threshold"] = threshold
        if validation_fraction is not UNSET:
            field_dict["validation_fraction"] = validation_fraction

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
        from ..models.dp_request import DpRequest # noqa: PLC0415
        from ..models.loss_kind_type_0 import LossKindType0 # noqa: PLC0415
        from ..models.loss_kind_type_1 import LossKindType1 # noqa: PLC0415
        from ..models.loss_kind_type_2 import LossKindType2 # noqa: PLC0415
        from ..models.loss_kind_type_3 import LossKindType3 # noqa: PLC0415
        from ..models.model_request import ModelRequest # noqa: PLC0415
        from ..models.optimizer_request import OptimizerRequest # noqa: PLC0415
        from ..models.output_check_request import OutputCheckRequest # noqa: PLC0415
        from ..models.secure_aggregation_request import SecureAggregationRequest # noqa: PLC0415
        from ..models.strategy_config_fedadagrad import StrategyConfigFedadagrad # noqa: PLC0415
        from ..models.strategy_config_fedadam import StrategyConfigFedadam # noqa: PLC0415
        from ..models.strategy_config_fedyogi import StrategyConfigFedyogi # noqa: PLC0415
        from ..models.strategy_config_type_0 import StrategyConfigType0 # noqa: PLC0415
        from ..models.strategy_config_type_1 import StrategyConfigType1 # noqa: PLC0415
        from ..models.strategy_config_type_10 import StrategyConfigType10 # noqa: PLC0415
        from ..models.strategy_config_type_11 import StrategyConfigType11 # noqa: PLC0415
        from ..models.strategy_config_type_12 import StrategyConfigType12 # noqa: PLC0415
        from ..models.strategy_config_type_13 import StrategyConfigType13 # noqa: PLC0415
        from ..models.strategy_config_type_14 import StrategyConfigType14 # noqa: PLC0415
        from ..models.strategy_config_type_15 import StrategyConfigType15 # noqa: PLC0415
        from ..models.strategy_config_type_16 import StrategyConfigType16 # noqa: PLC0415
        from ..models.strategy_config_type_17 import StrategyConfigType17 # noqa: PLC0415
        from ..models.strategy_config_type_18 import StrategyConfigType18 # noqa: PLC0415
        from ..models.strategy_config_type_19 import StrategyConfigType19 # noqa: PLC0415
        from ..models.strategy_config_type_2 import StrategyConfigType2 # noqa: PLC0415
        from ..models.strategy_config_type_20 import StrategyConfigType20 # noqa: PLC0415
        from ..models.strategy_config_type_21 import StrategyConfigType21 # noqa: PLC0415
        from ..models.strategy_config_type_22 import StrategyConfigType22 # noqa: PLC0415
        from ..models.strategy_config_type_23 import StrategyConfigType23 # noqa: PLC0415
        from ..models.strategy_config_type_24 import StrategyConfigType24 # noqa: PLC0415
        from ..models.strategy_config_type_25 import StrategyConfigType25 # noqa: PLC0415
        from ..models.strategy_config_type_26 import StrategyConfigType26 # noqa: PLC0415
        from ..models.strategy_config_type_6 import StrategyConfigType6 # noqa: PLC0415
        from ..models.strategy_config_type_7 import StrategyConfigType7 # noqa: PLC0415
        from ..models.strategy_config_type_8 import StrategyConfigType8 # noqa: PLC0415
        from ..models.strategy_config_type_9 import StrategyConfigType9 # noqa: PLC0415
        from ..models.study_request_feature_spec import StudyRequestFeatureSpec # noqa: PLC0415
        from ..models.study_task_type_1 import StudyTaskType1 # noqa: PLC0415
        from ..models.study_task_type_2 import StudyTaskType2 # noqa: PLC0415
        d = dict(src_dict)
        batch_size = d.pop("batch_size")

        categories = cast(list[str], d.pop("categories"))


        data_holders = cast(list[str], d.pop("data_holders"))


        dp = DpRequest.from_dict(d.pop("dp"))




        feature_spec = StudyRequestFeatureSpec.from_dict(d.pop("feature_spec"))




        min_sites = d.pop("min_sites")

        model = ModelRequest.from_dict(d.pop("model"))




        optimizer = OptimizerRequest.from_dict(d.pop("optimizer"))




        permit_id = d.pop("permit_id")

        purpose = d.pop("purpose")

        round_deadline_seconds = d.pop("round_deadline_seconds")

        rounds = d.pop("rounds")

        def _parse_strategy(data: object) -> StrategyConfigFedadagrad | StrategyConfigFedadam | StrategyConfigFedyogi | StrategyConfigType0 | StrategyConfigType1 | StrategyConfigType10 | StrategyConfigType11 | StrategyConfigType12 | StrategyConfigType13 | StrategyConfigType14 | StrategyConfigType15 | StrategyConfigType16 | StrategyConfigType17 | StrategyConfigType18 | StrategyConfigType19 | StrategyConfigType2 | StrategyConfigType20 | StrategyConfigType21 | StrategyConfigType22 | StrategyConfigType23 | StrategyConfigType24 | StrategyConfigType25 | StrategyConfigType26 | StrategyConfigType6 | StrategyConfigType7 | StrategyConfigType8 | StrategyConfigType9:
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_0 = StrategyConfigType0.from_dict(data)



                return componentsschemas_strategy_config_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_1 = StrategyConfigType1.from_dict(data)



                return componentsschemas_strategy_config_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_2 = StrategyConfigType2.from_dict(data)



                return componentsschemas_strategy_config_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_3 = StrategyConfigFedadam.from_dict(data)



                return componentsschemas_strategy_config_type_3
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_4 = StrategyConfigFedyogi.from_dict(data)



                return componentsschemas_strategy_config_type_4
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_5 = StrategyConfigFedadagrad.from_dict(data)



                return componentsschemas_strategy_config_type_5
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_6 = StrategyConfigType6.from_dict(data)



                return componentsschemas_strategy_config_type_6
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_7 = StrategyConfigType7.from_dict(data)



                return componentsschemas_strategy_config_type_7
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_8 = StrategyConfigType8.from_dict(data)



                return componentsschemas_strategy_config_type_8
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_9 = StrategyConfigType9.from_dict(data)



                return componentsschemas_strategy_config_type_9
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_10 = StrategyConfigType10.from_dict(data)



                return componentsschemas_strategy_config_type_10
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_11 = StrategyConfigType11.from_dict(data)



                return componentsschemas_strategy_config_type_11
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_12 = StrategyConfigType12.from_dict(data)



                return componentsschemas_strategy_config_type_12
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_13 = StrategyConfigType13.from_dict(data)



                return componentsschemas_strategy_config_type_13
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_14 = StrategyConfigType14.from_dict(data)



                return componentsschemas_strategy_config_type_14
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_15 = StrategyConfigType15.from_dict(data)



                return componentsschemas_strategy_config_type_15
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_16 = StrategyConfigType16.from_dict(data)



                return componentsschemas_strategy_config_type_16
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_17 = StrategyConfigType17.from_dict(data)



                return componentsschemas_strategy_config_type_17
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_18 = StrategyConfigType18.from_dict(data)



                return componentsschemas_strategy_config_type_18
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_19 = StrategyConfigType19.from_dict(data)



                return componentsschemas_strategy_config_type_19
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_20 = StrategyConfigType20.from_dict(data)



                return componentsschemas_strategy_config_type_20
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_21 = StrategyConfigType21.from_dict(data)



                return componentsschemas_strategy_config_type_21
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_22 = StrategyConfigType22.from_dict(data)



                return componentsschemas_strategy_config_type_22
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_23 = StrategyConfigType23.from_dict(data)



                return componentsschemas_strategy_config_type_23
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_24 = StrategyConfigType24.from_dict(data)



                return componentsschemas_strategy_config_type_24
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_strategy_config_type_25 = StrategyConfigType25.from_dict(data)



                return componentsschemas_strategy_config_type_25
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            if not isinstance(data, dict):
                raise TypeError()
            componentsschemas_strategy_config_type_26 = StrategyConfigType26.from_dict(data)



            return componentsschemas_strategy_config_type_26

        strategy = _parse_strategy(d.pop("strategy"))


        title = d.pop("title")

        def _parse_aggregation(data: object) -> AggregationType0 | AggregationType1 | AggregationType2 | AggregationType3 | AggregationType4 | AggregationType5 | AggregationType6 | None | Unset:
            if data is None:
                return data
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
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_aggregation_type_6 = AggregationType6.from_dict(data)



                return componentsschemas_aggregation_type_6
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AggregationType0 | AggregationType1 | AggregationType2 | AggregationType3 | AggregationType4 | AggregationType5 | AggregationType6 | None | Unset, data)

        aggregation = _parse_aggregation(d.pop("aggregation", UNSET))


        def _parse_local_epochs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        local_epochs = _parse_local_epochs(d.pop("local_epochs", UNSET))


        def _parse_local_steps(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        local_steps = _parse_local_steps(d.pop("local_steps", UNSET))


        def _parse_loss(data: object) -> LossKindType0 | LossKindType1 | LossKindType2 | LossKindType3 | LossKindType4 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_loss_kind_type_0 = LossKindType0.from_dict(data)



                return componentsschemas_loss_kind_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_loss_kind_type_1 = LossKindType1.from_dict(data)



                return componentsschemas_loss_kind_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_loss_kind_type_2 = LossKindType2.from_dict(data)



                return componentsschemas_loss_kind_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_loss_kind_type_3 = LossKindType3.from_dict(data)



                return componentsschemas_loss_kind_type_3
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                componentsschemas_loss_kind_type_4 = LossKindType4(data)



                return componentsschemas_loss_kind_type_4
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LossKindType0 | LossKindType1 | LossKindType2 | LossKindType3 | LossKindType4 | None | Unset, data)

        loss = _parse_loss(d.pop("loss", UNSET))


        _optout_policy = d.pop("optout_policy", UNSET)
        optout_policy: FilterPolicy | Unset
        if isinstance(_optout_policy,  Unset):
            optout_policy = UNSET
        else:
            optout_policy = FilterPolicy(_optout_policy)




        def _parse_output_check(data: object) -> None | OutputCheckRequest | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                output_check_type_0 = OutputCheckRequest.from_dict(data)



                return output_check_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OutputCheckRequest | Unset, data)

        output_check = _parse_output_check(d.pop("output_check", UNSET))


        def _parse_release(data: object) -> ModelRelease | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                release_type_0 = ModelRelease(data)



                return release_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ModelRelease | None | Unset, data)

        release = _parse_release(d.pop("release", UNSET))


        def _parse_secure_aggregation(data: object) -> None | SecureAggregationRequest | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                secure_aggregation_type_0 = SecureAggregationRequest.from_dict(data)



                return secure_aggregation_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SecureAggregationRequest | Unset, data)

        secure_aggregation = _parse_secure_aggregation(d.pop("secure_aggregation", UNSET))


        def _parse_seed(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        seed = _parse_seed(d.pop("seed", UNSET))


        def _parse_task(data: object) -> None | StudyTaskType0 | StudyTaskType1 | StudyTaskType2 | StudyTaskType3 | Unset:
            if data is None:
                return data
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
            try:
                if not isinstance(data, str):
                    raise TypeError()
                componentsschemas_study_task_type_3 = StudyTaskType3(data)



                return componentsschemas_study_task_type_3
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StudyTaskType0 | StudyTaskType1 | StudyTaskType2 | StudyTaskType3 | Unset, data)

        task = _parse_task(d.pop("task", UNSET))


        def _parse_test_fraction(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        test_fraction = _parse_test_fraction(d.pop("test_fraction", UNSET))


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


        def _parse_validation_fraction(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        validation_fraction = _parse_validation_fraction(d.pop("validation_fraction", UNSET))


        study_request = cls(
            batch_size=batch_size,
            categories=categories,
            data_holders=data_holders,
            dp=dp,
            feature_spec=feature_spec,
            min_sites=min_sites,
            model=model,
            optimizer=optimizer,
            permit_id=permit_id,
            purpose=purpose,
            round_deadline_seconds=round_deadline_seconds,
            rounds=rounds,
            strategy=strategy,
            title=title,
            aggregation=aggregation,
            local_epochs=local_epochs,
            local_steps=local_steps,
            loss=loss,
            optout_policy=optout_policy,
            output_check=output_check,
            release=release,
            secure_aggregation=secure_aggregation,
            seed=seed,
            task=task,
            test_fraction=test_fraction,
            threshold=threshold,
            validation_fraction=validation_fraction,
        )

        return study_request

