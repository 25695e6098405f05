//! What a study is made of, as the round loop writes it: rounds and their summaries, the
//! holders' tasks and evaluations, checkpoints, and the reasons a round is not opened.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::{check::DenyReason, time::Timestamp, OrgId, RoundId, StudyId, TaskId};

/// Where one attempt at a round stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RoundPhase {
    /// Tasks are out; results are being collected.
    Collecting,
    /// Results were aggregated, the budget spent and the model checkpointed.
    Aggregated,
    /// Thrown away before aggregation: the permit stopped covering it, or the study ended.
    Discarded,
    /// The quorum was not reached by the deadline.
    Failed,
}

impl RoundPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Collecting => "collecting",
            Self::Aggregated => "aggregated",
            Self::Discarded => "discarded",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Collecting,
            Self::Aggregated,
            Self::Discarded,
            Self::Failed,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

/// What one data holder contributed to an aggregated round. Counts only: no update leaves the
/// gateway's aggregation step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SiteContribution {
    pub data_holder: OrgId,
    pub samples: u64,
    /// Subjects removed by the opt-out filter before training.
    pub excluded_subjects: u64,
    pub train_loss: Option<f64>,
    /// Whether the update went into the aggregate (false: missed the deadline).
    pub contributed: bool,
}

/// The aggregation step's public figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RoundSummary {
    pub sites: Vec<SiteContribution>,
    /// Client-level DP: the noise std on the mean. (How many updates were clipped is not
    /// published: it derives from the holders' unprivatised update norms. Rounds stored by
    /// earlier versions may still hold a `clipped_updates` key, which is ignored.)
    pub noise_std_on_mean: Option<f64>,
    /// FLTrust: how many of the combined updates got trust 0 (no positive cosine with the root
    /// update) and so did not move the model. A count of holders, never which ones nor their
    /// scores. FLTrust runs without formal DP (no guarantee is claimed) or under record-level
    /// DP, where the count is post-processing of updates privatised at the holders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted_updates: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub id: RoundId,
    pub study_id: StudyId,
    pub round: u64,
    pub attempt: u32,
    pub phase: RoundPhase,
    /// Opt-out registry version pinned for the whole round.
    pub registry_version: i64,
    pub participants: Vec<OrgId>,
    pub opened_at: Timestamp,
    pub deadline: Timestamp,
    pub closed_at: Option<Timestamp>,
    pub reason: Option<String>,
    pub epsilon_round: Option<f64>,
    pub epsilon_total: Option<f64>,
    pub summary: RoundSummary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// Evaluate the received model, then train on it and return the update.
    Fit,
    /// Evaluate the final model only.
    Evaluate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    Completed,
    /// Its round was discarded or the study ended before it completed.
    Discarded,
    /// Its deadline passed without a valid result.
    Expired,
}

/// What a data holder reported besides its update.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskReport {
    pub num_examples: u64,
    pub excluded_subjects: u64,
    pub registry_version: i64,
    pub train_loss: Option<f64>,
    pub local_steps: Option<u64>,
    /// The holder's data-quality summary (reports of older nodes have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_quality: Option<crate::domain::data_quality::DataQuality>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: TaskId,
    pub study_id: StudyId,
    pub round_id: RoundId,
    pub round: u64,
    pub kind: TaskKind,
    pub data_holder: OrgId,
    pub status: TaskStatus,
    pub created_at: Timestamp,
    pub deadline: DateTime<Utc>,
    pub completed_at: Option<Timestamp>,
    pub report: Option<TaskReport>,
}

impl Task {
    pub fn new(
        round: &Round,
        kind: TaskKind,
        data_holder: OrgId,
        deadline: Timestamp,
        now: Timestamp,
    ) -> Self {
        Self {
            id: TaskId::new(),
            study_id: round.study_id,
            round_id: round.id,
            round: round.round,
            kind,
            data_holder,
            status: TaskStatus::Pending,
            created_at: now,
            deadline,
            completed_at: None,
            report: None,
        }
    }
}

/// One data holder's evaluation of the model of a round (on its own validation and test data).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SiteEvaluation {
    pub data_holder: OrgId,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub validation: fl_engine::MetricSummary,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub test: fl_engine::MetricSummary,
}

/// The global model and server state after a round (round 0: the initial model).
#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub study_id: StudyId,
    pub round: u64,
    /// The shared parameters as safetensors.
    pub global: Vec<u8>,
    pub server_state: serde_json::Value,
    pub accountant: serde_json::Value,
}

// ---------------------------------------------------------------------------------------------
// Rounds the gateway refuses to open.

/// Why the gateway refuses to open a round: stored, as JSON, in the `reasons` of the
/// `study.round.refuse` entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum RoundRefusal {
    /// The permit no longer covers the round (its `code` is the check's).
    Permit(DenyReason),
    Round(RoundReason),
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum RoundReason {
    /// The policies no longer let the submitter run the study; `action` is `study.run`.
    PolicyDenied { action: &'static str },
    /// An amendment left fewer permitted holders than the study needs.
    QuorumImpossible {
        permitted_holders: usize,
        min_sites: usize,
    },
    /// An amendment removed FLTrust's root holder from the permit: no round can weigh the
    /// other updates against its root update any more.
    RootHolderRemoved { holder: OrgId },
}

impl RoundRefusal {
    /// Whether only the privacy budget stands in the way (the permit covers the study otherwise).
    pub fn is_budget(&self) -> bool {
        matches!(self, Self::Permit(DenyReason::BudgetExceeded { .. }))
    }
}
