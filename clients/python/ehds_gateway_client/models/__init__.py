""" Contains all the data models used in inputs/outputs """

from .actor import Actor
from .aggregation_type_0 import AggregationType0
from .aggregation_type_0_rule import AggregationType0Rule
from .aggregation_type_1 import AggregationType1
from .aggregation_type_1_rule import AggregationType1Rule
from .aggregation_type_2 import AggregationType2
from .aggregation_type_2_rule import AggregationType2Rule
from .aggregation_type_3 import AggregationType3
from .aggregation_type_3_rule import AggregationType3Rule
from .aggregation_type_4 import AggregationType4
from .aggregation_type_4_rule import AggregationType4Rule
from .aggregation_type_5 import AggregationType5
from .aggregation_type_5_rule import AggregationType5Rule
from .aggregation_type_6 import AggregationType6
from .aggregation_type_6_rule import AggregationType6Rule
from .amend_request import AmendRequest
from .answer_type_0_form import AnswerType0Form
from .answer_type_1_form import AnswerType1Form
from .apfl_config import ApflConfig
from .applicant_request import ApplicantRequest
from .application import Application
from .application_kind import ApplicationKind
from .application_request import ApplicationRequest
from .application_status import ApplicationStatus
from .application_view import ApplicationView
from .assessment_request import AssessmentRequest
from .audit_entry import AuditEntry
from .backbone_request_mlp_norm import BackboneRequestMlpNorm
from .backbone_request_type_0 import BackboneRequestType0
from .backbone_request_type_0_kind import BackboneRequestType0Kind
from .backbone_request_type_1 import BackboneRequestType1
from .backbone_request_type_1_kind import BackboneRequestType1Kind
from .backbone_request_type_2 import BackboneRequestType2
from .backbone_request_type_2_kind import BackboneRequestType2Kind
from .backbone_request_type_3 import BackboneRequestType3
from .backbone_request_type_3_kind import BackboneRequestType3Kind
from .backbone_request_type_4 import BackboneRequestType4
from .backbone_request_type_4_kind import BackboneRequestType4Kind
from .budget_request import BudgetRequest
from .budget_unit import BudgetUnit
from .budget_view import BudgetView
from .cancel_request import CancelRequest
from .catalogue_record_view import CatalogueRecordView
from .category_assessment import CategoryAssessment
from .cell_label_type_0 import CellLabelType0
from .cell_label_type_0_kind import CellLabelType0Kind
from .cell_label_type_1 import CellLabelType1
from .cell_label_type_1_kind import CellLabelType1Kind
from .cell_value_type_0 import CellValueType0
from .cell_value_type_0_kind import CellValueType0Kind
from .cell_value_type_1 import CellValueType1
from .cell_value_type_1_kind import CellValueType1Kind
from .cell_value_type_2_kind import CellValueType2Kind
from .cell_value_type_3_kind import CellValueType3Kind
from .cell_value_type_4_kind import CellValueType4Kind
from .cell_value_type_4_points_item import CellValueType4PointsItem
from .chain_problem_sequence_gap import ChainProblemSequenceGap
from .chain_problem_type_0 import ChainProblemType0
from .chain_problem_type_1 import ChainProblemType1
from .chain_problem_type_2 import ChainProblemType2
from .chain_problem_type_3 import ChainProblemType3
from .charge import Charge
from .check_body import CheckBody
from .check_outcome import CheckOutcome
from .clocks import Clocks
from .confirmation_request import ConfirmationRequest
from .consistency_proof import ConsistencyProof
from .contact_form import ContactForm
from .conversion import Conversion
from .conversion_body import ConversionBody
from .conversion_proposal_body import ConversionProposalBody
from .data_category import DataCategory
from .data_quality import DataQuality
from .dataset_form import DatasetForm
from .dataset_form_description import DatasetFormDescription
from .dataset_form_keywords import DatasetFormKeywords
from .dataset_form_population_coverage import DatasetFormPopulationCoverage
from .dataset_form_provenance import DatasetFormProvenance
from .dataset_form_title import DatasetFormTitle
from .decided_by import DecidedBy
from .decision_kind import DecisionKind
from .decision_request import DecisionRequest
from .decision_response import DecisionResponse
from .decision_threshold_type_0 import DecisionThresholdType0
from .decision_threshold_type_0_rule import DecisionThresholdType0Rule
from .decision_threshold_type_1 import DecisionThresholdType1
from .decision_threshold_type_1_rule import DecisionThresholdType1Rule
from .decision_threshold_type_2 import DecisionThresholdType2
from .decision_threshold_type_2_rule import DecisionThresholdType2Rule
from .declared_statistics import DeclaredStatistics
from .declared_statistics_feature_spec import DeclaredStatisticsFeatureSpec
from .declined_grant import DeclinedGrant
from .deny_reason_type_0 import DenyReasonType0
from .deny_reason_type_0_code import DenyReasonType0Code
from .deny_reason_type_1 import DenyReasonType1
from .deny_reason_type_1_code import DenyReasonType1Code
from .deny_reason_type_2 import DenyReasonType2
from .deny_reason_type_2_code import DenyReasonType2Code
from .deny_reason_type_3 import DenyReasonType3
from .deny_reason_type_3_code import DenyReasonType3Code
from .deny_reason_type_4 import DenyReasonType4
from .deny_reason_type_4_code import DenyReasonType4Code
from .deny_reason_type_5 import DenyReasonType5
from .deny_reason_type_5_code import DenyReasonType5Code
from .deny_reason_type_6 import DenyReasonType6
from .deny_reason_type_6_code import DenyReasonType6Code
from .differencing_reason import DifferencingReason
from .differencing_risk import DifferencingRisk
from .distribution_form import DistributionForm
from .distribution_form_title import DistributionFormTitle
from .ditto_config import DittoConfig
from .dp_form import DpForm
from .dp_level import DpLevel
from .dp_margins import DpMargins
from .dp_plan import DpPlan
from .dp_plan_distributed_type_0 import DpPlanDistributedType0
from .dp_request import DpRequest
from .dp_requirement import DpRequirement
from .dp_value_type_0 import DpValueType0
from .dp_value_type_0_kind import DpValueType0Kind
from .dp_value_type_1 import DpValueType1
from .dp_value_type_1_kind import DpValueType1Kind
from .dp_value_type_2 import DpValueType2
from .dp_value_type_2_kind import DpValueType2Kind
from .dp_value_type_3 import DpValueType3
from .dp_value_type_3_kind import DpValueType3Kind
from .entry_status import EntryStatus
from .evaluation_view import EvaluationView
from .evaluation_view_mean_test import EvaluationViewMeanTest
from .evaluation_view_mean_validation import EvaluationViewMeanValidation
from .exclusion import Exclusion
from .export_format import ExportFormat
from .extend_request import ExtendRequest
from .extension import Extension
from .extension_body import ExtensionBody
from .feature_quality import FeatureQuality
from .fed_adagrad_config import FedAdagradConfig
from .fed_adam_config import FedAdamConfig
from .fed_avg_config import FedAvgConfig
from .fed_decorr_config import FedDecorrConfig
from .fed_dyn_config import FedDynConfig
from .fed_exp_config import FedExpConfig
from .fed_lc_config import FedLcConfig
from .fed_lesam_config import FedLesamConfig
from .fed_map_config import FedMapConfig
from .fed_map_tier import FedMapTier
from .fed_mode_config import FedModeConfig
from .fed_mode_sign import FedModeSign
from .fed_nova_config import FedNovaConfig
from .fed_opt_config import FedOptConfig
from .fed_per_config import FedPerConfig
from .fed_prox_config import FedProxConfig
from .fed_sam_config import FedSamConfig
from .fed_speed_config import FedSpeedConfig
from .fed_yogi_config import FedYogiConfig
from .fee_estimate import FeeEstimate
from .fee_estimate_body import FeeEstimateBody
from .fee_line import FeeLine
from .fenda_fl_config import FendaFlConfig
from .field_error import FieldError
from .filter_form import FilterForm
from .filter_policy import FilterPolicy
from .filter_request import FilterRequest
from .filter_response import FilterResponse
from .first_bad_entry import FirstBadEntry
from .grant_scope import GrantScope
from .group_form import GroupForm
from .holder_cost import HolderCost
from .holder_data_quality import HolderDataQuality
from .hpfl_config import HpflConfig
from .import_report import ImportReport
from .inclusion_proof import InclusionProof
from .information_answer_body import InformationAnswerBody
from .information_request import InformationRequest
from .information_request_body import InformationRequestBody
from .inputs_request_type_0 import InputsRequestType0
from .inputs_request_type_1 import InputsRequestType1
from .inputs_request_type_2 import InputsRequestType2
from .inputs_request_type_3 import InputsRequestType3
from .invoice import Invoice
from .label_statement_form import LabelStatementForm
from .loss_kind_bce_with_logits import LossKindBceWithLogits
from .loss_kind_cross_entropy import LossKindCrossEntropy
from .loss_kind_focal import LossKindFocal
from .loss_kind_multi_label_bce import LossKindMultiLabelBce
from .loss_kind_type_0 import LossKindType0
from .loss_kind_type_1 import LossKindType1
from .loss_kind_type_2 import LossKindType2
from .loss_kind_type_3 import LossKindType3
from .loss_kind_type_4 import LossKindType4
from .match_request import MatchRequest
from .match_response import MatchResponse
from .model_release import ModelRelease
from .model_request import ModelRequest
from .moon_config import MoonConfig
from .nesting import Nesting
from .new_application import NewApplication
from .node_secagg_submit_body import NodeSecaggSubmitBody
from .node_study import NodeStudy
from .node_study_feature_spec import NodeStudyFeatureSpec
from .node_study_model import NodeStudyModel
from .node_study_strategy import NodeStudyStrategy
from .node_study_train import NodeStudyTrain
from .node_task import NodeTask
from .noisy_value import NoisyValue
from .opt_out_event import OptOutEvent
from .opt_out_event_kind import OptOutEventKind
from .opt_out_exception import OptOutException
from .opt_out_record_view import OptOutRecordView
from .opt_out_request import OptOutRequest
from .optimizer_request import OptimizerRequest
from .optional_reason import OptionalReason
from .outcome import Outcome
from .output_check import OutputCheck
from .output_check_request import OutputCheckRequest
from .output_outcome_type_0 import OutputOutcomeType0
from .output_outcome_type_0_outcome import OutputOutcomeType0Outcome
from .output_outcome_type_1 import OutputOutcomeType1
from .output_outcome_type_1_outcome import OutputOutcomeType1Outcome
from .output_outcome_type_2 import OutputOutcomeType2
from .output_outcome_type_2_outcome import OutputOutcomeType2Outcome
from .p_fed_me_config import PFedMeConfig
from .per_fcl_config import PerFclConfig
from .per_fed_avg_config import PerFedAvgConfig
from .period_form import PeriodForm
from .period_request import PeriodRequest
from .permit_state_type_0 import PermitStateType0
from .permit_state_type_0_status import PermitStateType0Status
from .permit_state_type_1 import PermitStateType1
from .permit_state_type_1_status import PermitStateType1Status
from .permit_state_type_2 import PermitStateType2
from .permit_state_type_2_status import PermitStateType2Status
from .permit_state_type_3 import PermitStateType3
from .permit_state_type_3_status import PermitStateType3Status
from .permit_terms import PermitTerms
from .permit_terms_categories_item import PermitTermsCategoriesItem
from .permit_terms_data_holders_item import PermitTermsDataHoldersItem
from .permit_version import PermitVersion
from .permit_view import PermitView
from .privacy_budget import PrivacyBudget
from .problem import Problem
from .procedure import Procedure
from .processing_record import ProcessingRecord
from .proposed_grant import ProposedGrant
from .proposed_grant_terms import ProposedGrantTerms
from .public_decision import PublicDecision
from .public_fee import PublicFee
from .public_permit import PublicPermit
from .publisher_form import PublisherForm
from .purpose import Purpose
from .q_fed_avg_config import QFedAvgConfig
from .quality_label_form import QualityLabelForm
from .query_form import QueryForm
from .range_form import RangeForm
from .reason import Reason
from .reason_request import ReasonRequest
from .recurrent_request import RecurrentRequest
from .register_entry import RegisterEntry
from .register_page import RegisterPage
from .register_summary import RegisterSummary
from .register_summary_by_status import RegisterSummaryByStatus
from .research_flag import ResearchFlag
from .review import Review
from .review_decision import ReviewDecision
from .review_request import ReviewRequest
from .round_phase import RoundPhase
from .round_view import RoundView
from .rounds_view import RoundsView
from .routing import Routing
from .routing_body import RoutingBody
from .run_status import RunStatus
from .scaffold_config import ScaffoldConfig
from .scope_request import ScopeRequest
from .secagg_view import SecaggView
from .secagg_view_config import SecaggViewConfig
from .secagg_view_relayed_type_0 import SecaggViewRelayedType0
from .secure_aggregation import SecureAggregation
from .secure_aggregation_request import SecureAggregationRequest
from .silo_config import SiloConfig
from .site_contribution_view import SiteContributionView
from .site_evaluation_view import SiteEvaluationView
from .site_evaluation_view_test import SiteEvaluationViewTest
from .site_evaluation_view_validation import SiteEvaluationViewValidation
from .statistics_request import StatisticsRequest
from .statistics_request_feature_spec import StatisticsRequestFeatureSpec
from .statistics_result_body import StatisticsResultBody
from .statistics_result_body_partial import StatisticsResultBodyPartial
from .statistics_run_request import StatisticsRunRequest
from .statistics_run_request_feature_spec import StatisticsRunRequestFeatureSpec
from .statistics_run_view import StatisticsRunView
from .statistics_task import StatisticsTask
from .statistics_task_feature_spec import StatisticsTaskFeatureSpec
from .strategy_config_fedadagrad import StrategyConfigFedadagrad
from .strategy_config_fedadagrad_name import StrategyConfigFedadagradName
from .strategy_config_fedadam import StrategyConfigFedadam
from .strategy_config_fedadam_name import StrategyConfigFedadamName
from .strategy_config_fedyogi import StrategyConfigFedyogi
from .strategy_config_fedyogi_name import StrategyConfigFedyogiName
from .strategy_config_type_0 import StrategyConfigType0
from .strategy_config_type_0_name import StrategyConfigType0Name
from .strategy_config_type_1 import StrategyConfigType1
from .strategy_config_type_10 import StrategyConfigType10
from .strategy_config_type_10_name import StrategyConfigType10Name
from .strategy_config_type_11 import StrategyConfigType11
from .strategy_config_type_11_name import StrategyConfigType11Name
from .strategy_config_type_12 import StrategyConfigType12
from .strategy_config_type_12_name import StrategyConfigType12Name
from .strategy_config_type_13 import StrategyConfigType13
from .strategy_config_type_13_name import StrategyConfigType13Name
from .strategy_config_type_14 import StrategyConfigType14
from .strategy_config_type_14_name import StrategyConfigType14Name
from .strategy_config_type_15 import StrategyConfigType15
from .strategy_config_type_15_name import StrategyConfigType15Name
from .strategy_config_type_16 import StrategyConfigType16
from .strategy_config_type_16_name import StrategyConfigType16Name
from .strategy_config_type_17 import StrategyConfigType17
from .strategy_config_type_17_name import StrategyConfigType17Name
from .strategy_config_type_18 import StrategyConfigType18
from .strategy_config_type_18_name import StrategyConfigType18Name
from .strategy_config_type_19 import StrategyConfigType19
from .strategy_config_type_19_name import StrategyConfigType19Name
from .strategy_config_type_1_name import StrategyConfigType1Name
from .strategy_config_type_2 import StrategyConfigType2
from .strategy_config_type_20 import StrategyConfigType20
from .strategy_config_type_20_name import StrategyConfigType20Name
from .strategy_config_type_21 import StrategyConfigType21
from .strategy_config_type_21_name import StrategyConfigType21Name
from .strategy_config_type_22 import StrategyConfigType22
from .strategy_config_type_22_name import StrategyConfigType22Name
from .strategy_config_type_23 import StrategyConfigType23
from .strategy_config_type_23_name import StrategyConfigType23Name
from .strategy_config_type_24 import StrategyConfigType24
from .strategy_config_type_24_name import StrategyConfigType24Name
from .strategy_config_type_25 import StrategyConfigType25
from .strategy_config_type_25_name import StrategyConfigType25Name
from .strategy_config_type_26 import StrategyConfigType26
from .strategy_config_type_26_name import StrategyConfigType26Name
from .strategy_config_type_2_name import StrategyConfigType2Name
from .strategy_config_type_6 import StrategyConfigType6
from .strategy_config_type_6_name import StrategyConfigType6Name
from .strategy_config_type_7 import StrategyConfigType7
from .strategy_config_type_7_name import StrategyConfigType7Name
from .strategy_config_type_8 import StrategyConfigType8
from .strategy_config_type_8_name import StrategyConfigType8Name
from .strategy_config_type_9 import StrategyConfigType9
from .strategy_config_type_9_name import StrategyConfigType9Name
from .study_progress import StudyProgress
from .study_reason_type_0 import StudyReasonType0
from .study_reason_type_0_code import StudyReasonType0Code
from .study_reason_type_1 import StudyReasonType1
from .study_reason_type_1_code import StudyReasonType1Code
from .study_reason_type_2 import StudyReasonType2
from .study_reason_type_2_code import StudyReasonType2Code
from .study_reason_type_3 import StudyReasonType3
from .study_reason_type_3_code import StudyReasonType3Code
from .study_reason_type_4 import StudyReasonType4
from .study_reason_type_4_code import StudyReasonType4Code
from .study_reason_type_5 import StudyReasonType5
from .study_reason_type_5_code import StudyReasonType5Code
from .study_request import StudyRequest
from .study_request_feature_spec import StudyRequestFeatureSpec
from .study_spec import StudySpec
from .study_spec_feature_spec import StudySpecFeatureSpec
from .study_spec_model import StudySpecModel
from .study_spec_strategy import StudySpecStrategy
from .study_spec_train import StudySpecTrain
from .study_status import StudyStatus
from .study_task_multiclass import StudyTaskMulticlass
from .study_task_multilabel import StudyTaskMultilabel
from .study_task_type_0 import StudyTaskType0
from .study_task_type_1 import StudyTaskType1
from .study_task_type_2 import StudyTaskType2
from .study_task_type_3 import StudyTaskType3
from .study_view import StudyView
from .summary import Summary
from .task_kind import TaskKind
from .task_result_body import TaskResultBody
from .task_result_body_evaluation_type_0 import TaskResultBodyEvaluationType0
from .transition import Transition
from .user_kind import UserKind
from .verify_report import VerifyReport
from .warning_code import WarningCode
from .withdraw_request import WithdrawRequest

__all__ = (
    "Actor",
    "AggregationType0",
    "AggregationType0Rule",
    "AggregationType1",
    "AggregationType1Rule",
    "AggregationType2",
    "AggregationType2Rule",
    "AggregationType3",
    "AggregationType3Rule",
    "AggregationType4",
    "AggregationType4Rule",
    "AggregationType5",
    "AggregationType5Rule",
    "AggregationType6",
    "AggregationType6Rule",
    "AmendRequest",
    "AnswerType0Form",
    "AnswerType1Form",
    "ApflConfig",
    "ApplicantRequest",
    "Application",
    "ApplicationKind",
    "ApplicationRequest",
    "ApplicationStatus",
    "ApplicationView",
    "AssessmentRequest",
    "AuditEntry",
    "BackboneRequestMlpNorm",
    "BackboneRequestType0",
    "BackboneRequestType0Kind",
    "BackboneRequestType1",
    "BackboneRequestType1Kind",
    "BackboneRequestType2",
    "BackboneRequestType2Kind",
    "BackboneRequestType3",
    "BackboneRequestType3Kind",
    "BackboneRequestType4",
    "BackboneRequestType4Kind",
    "BudgetRequest",
    "BudgetUnit",
    "BudgetView",
    "CancelRequest",
    "CatalogueRecordView",
    "CategoryAssessment",
    "CellLabelType0",
    "CellLabelType0Kind",
    "CellLabelType1",
    "CellLabelType1Kind",
    "CellValueType0",
    "CellValueType0Kind",
    "CellValueType1",
    "CellValueType1Kind",
    "CellValueType2Kind",
    "CellValueType3Kind",
    "CellValueType4Kind",
    "CellValueType4PointsItem",
    "ChainProblemSequenceGap",
    "ChainProblemType0",
    "ChainProblemType1",
    "ChainProblemType2",
    "ChainProblemType3",
    "Charge",
    "CheckBody",
    "CheckOutcome",
    "Clocks",
    "ConfirmationRequest",
    "ConsistencyProof",
    "ContactForm",
    "Conversion",
    "ConversionBody",
    "ConversionProposalBody",
    "DataCategory",
    "DataQuality",
    "DatasetForm",
    "DatasetFormDescription",
    "DatasetFormKeywords",
    "DatasetFormPopulationCoverage",
    "DatasetFormProvenance",
    "DatasetFormTitle",
    "DecidedBy",
    "DecisionKind",
    "DecisionRequest",
    "DecisionResponse",
    "DecisionThresholdType0",
    "DecisionThresholdType0Rule",
    "DecisionThresholdType1",
    "DecisionThresholdType1Rule",
    "DecisionThresholdType2",
    "DecisionThresholdType2Rule",
    "DeclaredStatistics",
    "DeclaredStatisticsFeatureSpec",
    "DeclinedGrant",
    "DenyReasonType0",
    "DenyReasonType0Code",
    "DenyReasonType1",
    "DenyReasonType1Code",
    "DenyReasonType2",
    "DenyReasonType2Code",
    "DenyReasonType3",
    "DenyReasonType3Code",
    "DenyReasonType4",
    "DenyReasonType4Code",
    "DenyReasonType5",
    "DenyReasonType5Code",
    "DenyReasonType6",
    "DenyReasonType6Code",
    "DifferencingReason",
    "DifferencingRisk",
    "DistributionForm",
    "DistributionFormTitle",
    "DittoConfig",
    "DpForm",
    "DpLevel",
    "DpMargins",
    "DpPlan",
    "DpPlanDistributedType0",
    "DpRequest",
    "DpRequirement",
    "DpValueType0",
    "DpValueType0Kind",
    "DpValueType1",
    "DpValueType1Kind",
    "DpValueType2",
    "DpValueType2Kind",
    "DpValueType3",
    "DpValueType3Kind",
    "EntryStatus",
    "EvaluationView",
    "EvaluationViewMeanTest",
    "EvaluationViewMeanValidation",
    "Exclusion",
    "ExportFormat",
    "ExtendRequest",
    "Extension",
    "ExtensionBody",
    "FeatureQuality",
    "FedAdagradConfig",
    "FedAdamConfig",
    "FedAvgConfig",
    "FedDecorrConfig",
    "FedDynConfig",
    "FedExpConfig",
    "FedLcConfig",
    "FedLesamConfig",
    "FedMapConfig",
    "FedMapTier",
    "FedModeConfig",
    "FedModeSign",
    "FedNovaConfig",
    "FedOptConfig",
    "FedPerConfig",
    "FedProxConfig",
    "FedSamConfig",
    "FedSpeedConfig",
    "FedYogiConfig",
    "FeeEstimate",
    "FeeEstimateBody",
    "FeeLine",
    "FendaFlConfig",
    "FieldError",
    "FilterForm",
    "FilterPolicy",
    "FilterRequest",
    "FilterResponse",
    "FirstBadEntry",
    "GrantScope",
    "GroupForm",
    "HolderCost",
    "HolderDataQuality",
    "HpflConfig",
    "ImportReport",
    "InclusionProof",
    "InformationAnswerBody",
    "InformationRequest",
    "InformationRequestBody",
    "InputsRequestType0",
    "InputsRequestType1",
    "InputsRequestType2",
    "InputsRequestType3",
    "Invoice",
    "LabelStatementForm",
    "LossKindBceWithLogits",
    "LossKindCrossEntropy",
    "LossKindFocal",
    "LossKindMultiLabelBce",
    "LossKindType0",
    "LossKindType1",
    "LossKindType2",
    "LossKindType3",
    "LossKindType4",
    "MatchRequest",
    "MatchResponse",
    "ModelRelease",
    "ModelRequest",
    "MoonConfig",
    "Nesting",
    "NewApplication",
    "NodeSecaggSubmitBody",
    "NodeStudy",
    "NodeStudyFeatureSpec",
    "NodeStudyModel",
    "NodeStudyStrategy",
    "NodeStudyTrain",
    "NodeTask",
    "NoisyValue",
    "OptimizerRequest",
    "OptionalReason",
    "OptOutEvent",
    "OptOutEventKind",
    "OptOutException",
    "OptOutRecordView",
    "OptOutRequest",
    "Outcome",
    "OutputCheck",
    "OutputCheckRequest",
    "OutputOutcomeType0",
    "OutputOutcomeType0Outcome",
    "OutputOutcomeType1",
    "OutputOutcomeType1Outcome",
    "OutputOutcomeType2",
    "OutputOutcomeType2Outcome",
    "PerFclConfig",
    "PerFedAvgConfig",
    "PeriodForm",
    "PeriodRequest",
    "PermitStateType0",
    "PermitStateType0Status",
    "PermitStateType1",
    "PermitStateType1Status",
    "PermitStateType2",
    "PermitStateType2Status",
    "PermitStateType3",
    "PermitStateType3Status",
    "PermitTerms",
    "PermitTermsCategoriesItem",
    "PermitTermsDataHoldersItem",
    "PermitVersion",
    "PermitView",
    "PFedMeConfig",
    "PrivacyBudget",
    "Problem",
    "Procedure",
    "ProcessingRecord",
    "ProposedGrant",
    "ProposedGrantTerms",
    "PublicDecision",
    "PublicFee",
    "PublicPermit",
    "PublisherForm",
    "Purpose",
    "QFedAvgConfig",
    "QualityLabelForm",
    "QueryForm",
    "RangeForm",
    "Reason",
    "ReasonRequest",
    "RecurrentRequest",
    "RegisterEntry",
    "RegisterPage",
    "RegisterSummary",
    "RegisterSummaryByStatus",
    "ResearchFlag",
    "Review",
    "ReviewDecision",
    "ReviewRequest",
    "RoundPhase",
    "RoundsView",
    "RoundView",
    "Routing",
    "RoutingBody",
    "RunStatus",
    "ScaffoldConfig",
    "ScopeRequest",
    "SecaggView",
    "SecaggViewConfig",
    "SecaggViewRelayedType0",
    "SecureAggregation",
    "SecureAggregationRequest",
    "SiloConfig",
    "SiteContributionView",
    "SiteEvaluationView",
    "SiteEvaluationViewTest",
    "SiteEvaluationViewValidation",
    "StatisticsRequest",
    "StatisticsRequestFeatureSpec",
    "StatisticsResultBody",
    "StatisticsResultBodyPartial",
    "StatisticsRunRequest",
    "StatisticsRunRequestFeatureSpec",
    "StatisticsRunView",
    "StatisticsTask",
    "StatisticsTaskFeatureSpec",
    "StrategyConfigFedadagrad",
    "StrategyConfigFedadagradName",
    "StrategyConfigFedadam",
    "StrategyConfigFedadamName",
    "StrategyConfigFedyogi",
    "StrategyConfigFedyogiName",
    "StrategyConfigType0",
    "StrategyConfigType0Name",
    "StrategyConfigType1",
    "StrategyConfigType10",
    "StrategyConfigType10Name",
    "StrategyConfigType11",
    "StrategyConfigType11Name",
    "StrategyConfigType12",
    "StrategyConfigType12Name",
    "StrategyConfigType13",
    "StrategyConfigType13Name",
    "StrategyConfigType14",
    "StrategyConfigType14Name",
    "StrategyConfigType15",
    "StrategyConfigType15Name",
    "StrategyConfigType16",
    "StrategyConfigType16Name",
    "StrategyConfigType17",
    "StrategyConfigType17Name",
    "StrategyConfigType18",
    "StrategyConfigType18Name",
    "StrategyConfigType19",
    "StrategyConfigType19Name",
    "StrategyConfigType1Name",
    "StrategyConfigType2",
    "StrategyConfigType20",
    "StrategyConfigType20Name",
    "StrategyConfigType21",
    "StrategyConfigType21Name",
    "StrategyConfigType22",
    "StrategyConfigType22Name",
    "StrategyConfigType23",
    "StrategyConfigType23Name",
    "StrategyConfigType24",
    "StrategyConfigType24Name",
    "StrategyConfigType25",
    "StrategyConfigType25Name",
    "StrategyConfigType26",
    "StrategyConfigType26Name",
    "StrategyConfigType2Name",
    "StrategyConfigType6",
    "StrategyConfigType6Name",
    "StrategyConfigType7",
    "StrategyConfigType7Name",
    "StrategyConfigType8",
    "StrategyConfigType8Name",
    "StrategyConfigType9",
    "StrategyConfigType9Name",
    "StudyProgress",
    "StudyReasonType0",
    "StudyReasonType0Code",
    "StudyReasonType1",
    "StudyReasonType1Code",
    "StudyReasonType2",
    "StudyReasonType2Code",
    "StudyReasonType3",
    "StudyReasonType3Code",
    "StudyReasonType4",
    "StudyReasonType4Code",
    "StudyReasonType5",
    "StudyReasonType5Code",
    "StudyRequest",
    "StudyRequestFeatureSpec",
    "StudySpec",
    "StudySpecFeatureSpec",
    "StudySpecModel",
    "StudySpecStrategy",
    "StudySpecTrain",
    "StudyStatus",
    "StudyTaskMulticlass",
    "StudyTaskMultilabel",
    "StudyTaskType0",
    "StudyTaskType1",
    "StudyTaskType2",
    "StudyTaskType3",
    "StudyView",
    "Summary",
    "TaskKind",
    "TaskResultBody",
    "TaskResultBodyEvaluationType0",
    "Transition",
    "UserKind",
    "VerifyReport",
    "WarningCode",
    "WithdrawRequest",
)
