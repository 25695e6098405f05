//! The parsed study: what it predicts, the row its models read, its output check, decision
//! threshold and secure aggregation, and the [`StudySpec`] that holds them all.

pub use fl_engine::request::RowLayout;
use fl_engine::{LossKind, ModelSpec, StrategyConfig, TrainConfig};
use serde::{Deserialize, Serialize};

use super::{Aggregation, DpPlan, ModelRelease};
use crate::domain::{optout::FilterPolicy, DataCategory, OrgId, PermitId, Purpose};

/// What a study predicts. The feature specification's label determines what it can be: a
/// binary label trains a binary classifier (one sigmoid), a two-class softmax
/// (`multiclass` with 2 classes) or one independent sigmoid (`multilabel` with 1 label); a
/// survival label trains a survival model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StudyTask {
    /// One logit, labels 0 / 1.
    #[default]
    Binary,
    /// One logit per class (softmax), labels are class indices.
    Multiclass { classes: u32 },
    /// One logit per label (independent sigmoids), at most 32 labels.
    Multilabel { labels: u32 },
    /// Right-censored (time, event); one output, the Cox risk score.
    Survival,
}

impl StudyTask {
    /// The task of the engine's data sets.
    pub fn engine(self) -> fl_engine::data::Task {
        use fl_engine::data::Task;
        match self {
            Self::Binary | Self::Multiclass { .. } => Task::Classification,
            Self::Multilabel { labels } => Task::MultiLabel { labels },
            Self::Survival => Task::Survival,
        }
    }

    /// The model's output width.
    pub fn outputs(self) -> usize {
        match self {
            Self::Binary | Self::Survival => 1,
            Self::Multiclass { classes } => classes as usize,
            Self::Multilabel { labels } => labels as usize,
        }
    }

    /// The loss a study of this task trains with unless it names one.
    pub fn default_loss(self) -> LossKind {
        match self {
            Self::Binary => LossKind::bce(),
            Self::Multiclass { .. } => LossKind::CrossEntropy {
                class_weights: None,
            },
            Self::Multilabel { .. } => LossKind::MultiLabelBce { pos_weight: None },
            Self::Survival => LossKind::Cox,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Self::Binary => "binary".into(),
            Self::Multiclass { classes } => format!("{classes}-class"),
            Self::Multilabel { labels } => format!("{labels}-label"),
            Self::Survival => "survival".into(),
        }
    }
}

/// The minimum the final aggregate must rest on before it may leave (Art. 73(2) output check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OutputCheck {
    pub min_sites: usize,
    pub min_samples_per_site: u64,
}

/// Where each holder puts the decision threshold of its binary and multi-label metrics
/// (accuracy, balanced accuracy, precision, recall, F1, predicted-positive rate: positive when
/// the probability is above it). A rule chooses it at every holder on the holder's own
/// validation part, for every model it evaluates, and the holder reads its validation and
/// test metrics at it; the metrics report the threshold used. Multi-class (argmax) and
/// survival tasks have none.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "rule", rename_all = "snake_case", deny_unknown_fields)]
pub enum DecisionThreshold {
    /// The same threshold at every holder, in (0, 1).
    Fixed { value: f32 },
    /// The threshold that maximises F1 on the holder's validation part.
    // (braces: an internally tagged unit variant would take any other field silently)
    MaxF1 {},
    /// The threshold that maximises Youden's J = sensitivity + specificity - 1 (equivalently
    /// the balanced accuracy) on the holder's validation part.
    YoudenJ {},
}

impl Default for DecisionThreshold {
    /// 0.5 everywhere, as before the choice existed.
    fn default() -> Self {
        Self::Fixed { value: 0.5 }
    }
}

impl DecisionThreshold {
    /// The engine's rule, for a threshold chosen on validation data.
    pub fn rule(self) -> Option<fl_engine::ThresholdRule> {
        match self {
            Self::Fixed { .. } => None,
            Self::MaxF1 {} => Some(fl_engine::ThresholdRule::MaxF1),
            Self::YoudenJ {} => Some(fl_engine::ThresholdRule::YoudenJ),
        }
    }

    /// Whether each holder derives its threshold from its validation part (so what is read
    /// at it rests on the validation rows too).
    pub fn chosen_on_validation(self) -> bool {
        self.rule().is_some()
    }

    /// The threshold a holder reads `net`'s metrics at: the fixed value, or the one the rule
    /// picks on `validation` (0.5 where it cannot pick: no validation rows, or one class).
    pub fn at(
        self,
        net: &fl_engine::Net,
        validation: &fl_engine::data::Dataset,
    ) -> fl_engine::Result<f32> {
        Ok(match self {
            Self::Fixed { value } => value,
            _ => self
                .rule()
                .map(|rule| fl_engine::train::choose_threshold_on(net, validation, rule))
                .transpose()?
                .flatten()
                .unwrap_or(0.5),
        })
    }
}

/// Share of a holder's training rows kept for validation when a study names none.
pub const DEFAULT_VALIDATION_FRACTION: f64 = 0.2;

/// Share of a holder's patients held out for testing when a study names none (and its records
/// carry no split tags).
pub const DEFAULT_TEST_FRACTION: f64 = 0.2;

pub fn default_test_fraction() -> f64 {
    DEFAULT_TEST_FRACTION
}

/// A parsed, validated study. Stored as submitted and sent (in part) to the data holders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StudySpec {
    pub title: String,
    pub permit_id: PermitId,
    pub purpose: Purpose,
    pub categories: Vec<DataCategory>,
    pub data_holders: Vec<OrgId>,
    /// The node's feature specification (see `node::features`), as submitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub feature_spec: serde_json::Value,
    /// What the study predicts (stored studies from before tasks were offered are binary).
    #[serde(default)]
    pub task: StudyTask,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub model: ModelSpec,
    /// Trainable values of the model (`ModelSpec::parameter_count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_count: Option<usize>,
    /// The method as `{"<name>": {<settings>}}` (see `fl_engine::strategy::stored`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    #[serde(with = "fl_engine::strategy::stored")]
    pub strategy: StrategyConfig,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub train: TrainConfig,
    pub rounds: u64,
    pub min_sites: usize,
    pub round_deadline_seconds: u64,
    pub dp: DpPlan,
    pub output_check: OutputCheck,
    /// Where the holders put the decision threshold of their metrics (binary and multi-label
    /// tasks; absent for the others, and in studies stored before the choice: 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<DecisionThreshold>,
    /// Which round's global model is released.
    #[serde(default = "ModelRelease::stored_default")]
    pub release: ModelRelease,
    /// How each round's updates are combined (stored studies before the choice: `mean`).
    #[serde(default)]
    pub aggregation: Aggregation,
    pub seed: u64,
    pub validation_fraction: f64,
    /// Share of each holder's patients held out for testing where its records carry no split
    /// tags (studies stored before the choice: [`DEFAULT_TEST_FRACTION`]).
    #[serde(default = "default_test_fraction")]
    pub test_fraction: f64,
    pub optout_policy: FilterPolicy,
    /// The holders' updates are summed under secure aggregation: the gateway relays the
    /// protocol and only ever sees the sum (docs/secure-aggregation.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure_aggregation: Option<SecureAggregation>,
}

impl StudySpec {
    /// FLTrust's root holder, as the data holder of the study it names (checked at submission
    /// to be one of them).
    pub fn root_holder(&self) -> Option<&OrgId> {
        let root = self.aggregation.root_holder()?;
        self.data_holders.iter().find(|h| h.as_str() == root)
    }
}

/// The public parameters of a study's secure aggregation (SecAgg / SecAgg+), fixed when the
/// study is submitted for every round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecureAggregation {
    /// Holders that must stay to the end of every protocol stage: fewer survivors and the
    /// round fails, nothing revealed. Also the Shamir threshold of every holder's secrets.
    pub threshold: u32,
    /// Each holder masks with and shares its secrets among this many others: all other
    /// holders (Bonawitz et al.) or, when fewer, an even number on the SecAgg+ graph.
    pub neighbours: u32,
}
