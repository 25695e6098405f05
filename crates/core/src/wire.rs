//! What travels between the gateway and a data-holder node: the task a node fetches, the
//! opt-out filter it asks for, the parameters it trains from, and the result it returns.
//!
//! Parameters travel as safetensors (see `fl_engine::io`): the header names the study, round and
//! sender and carries a SHA-256 digest of the values, so a truncated, tampered or misdirected
//! file is refused before it can reach the aggregator. A strategy's extras (SCAFFOLD's control
//! variates) travel in the same file under the [`EXTRAS_PREFIX`].

use base64::Engine as _;
use chrono::{DateTime, Utc};
use fl_engine::{
    load_safetensors, save_safetensors, EngineError, FitIns, ModelSpec, ParameterSet,
    StrategyConfig, TrainConfig,
};
use serde::{Deserialize, Serialize};

use crate::domain::{
    optout::FilterPolicy,
    study::{
        DecisionThreshold, DpPlan, SecureAggregation, SiteEvaluation, StudySpec, StudyTask,
        TaskKind,
    },
    DataCategory, OrgId, PermitId, Purpose, StudyId, TaskId,
};

/// Names of extras inside a parameter file.
pub const EXTRAS_PREFIX: &str = "extras/";

/// The part of a study a node needs to train: never the other holders' names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeStudy {
    pub title: String,
    pub purpose: Purpose,
    pub categories: Vec<DataCategory>,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub feature_spec: serde_json::Value,
    /// What the node's data set holds (absent from older gateways: binary).
    #[serde(default)]
    pub task: StudyTask,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub model: ModelSpec,
    /// The method as `{"<name>": {<settings>}}` (see `fl_engine::strategy::stored`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    #[serde(with = "fl_engine::strategy::stored")]
    pub strategy: StrategyConfig,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub train: TrainConfig,
    /// Where the node puts the decision threshold of its metrics (absent from older gateways
    /// and for tasks without one: 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<DecisionThreshold>,
    pub seed: u64,
    pub validation_fraction: f64,
    /// Share of the holder's patients the node holds out for testing where its records carry
    /// no split tags (absent from older gateways: the default).
    #[serde(default = "crate::domain::study::default_test_fraction")]
    pub test_fraction: f64,
    pub optout_policy: FilterPolicy,
    /// The study's privacy plan, which the node's policy checks and its own accountant counts
    /// (docs/node-policy.md); absent from older gateways.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dp: Option<DpPlan>,
    /// The update travels only masked, through the secure-aggregation relay
    /// (docs/secure-aggregation.md); absent when the study sends it in clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure_aggregation: Option<SecureAggregation>,
}

impl From<&StudySpec> for NodeStudy {
    fn from(s: &StudySpec) -> Self {
        Self {
            title: s.title.clone(),
            purpose: s.purpose,
            categories: s.categories.clone(),
            feature_spec: s.feature_spec.clone(),
            task: s.task,
            model: s.model.clone(),
            strategy: s.strategy.clone(),
            train: s.train.clone(),
            threshold: s.threshold,
            seed: s.seed,
            validation_fraction: s.validation_fraction,
            test_fraction: s.test_fraction,
            optout_policy: s.optout_policy,
            dp: Some(s.dp),
            secure_aggregation: s.secure_aggregation,
        }
    }
}

// The body of `POST /v1/opt-outs/filter`: which of these subjects must a holder leave out?
// (A plain comment: a doc comment would change the published schema.)
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FilterRequest {
    pub permit_id: PermitId,
    /// The data holder's subject pseudonyms to check.
    pub subjects: Vec<String>,
    /// The categories about to be processed: data added by an amendment is judged at the
    /// amendment's time. Empty means all of the permit's categories.
    #[serde(default)]
    pub categories: Vec<String>,
    #[serde(default)]
    pub policy: FilterPolicy,
    /// Pin an earlier registry version (for reproducible rounds); defaults to the current one.
    pub registry_version: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FilterResponse {
    pub permit_id: PermitId,
    pub registry_version: i64,
    /// The time whose opt-outs bind this processing (permit issue or the amendment adding the data).
    pub reference_time: DateTime<Utc>,
    pub policy: FilterPolicy,
    /// True when the permit records the Art. 71(4) exception: nobody is excluded.
    pub exception_applied: bool,
    pub checked: usize,
    /// The pseudonyms to exclude before training.
    pub exclude: Vec<String>,
}

// The body of `POST /v1/opt-outs/match`: the opt-out check in which the holder sends no
// pseudonym, only blinded elements (RFC 9497 OPRF, `crate::oprf`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MatchRequest {
    pub permit_id: PermitId,
    /// The holder's subject pseudonyms, each blinded with a fresh random scalar
    /// (ristretto255, 32 bytes, base64), padded with random elements.
    pub blinded: Vec<String>,
    /// The categories about to be processed. Empty means all of the permit's categories.
    #[serde(default)]
    pub categories: Vec<String>,
    #[serde(default)]
    pub policy: FilterPolicy,
    /// Pin an earlier registry version (for reproducible rounds); defaults to the current one.
    pub registry_version: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MatchResponse {
    pub permit_id: PermitId,
    pub registry_version: i64,
    /// The time whose opt-outs bind this processing (permit issue or the amendment adding the data).
    pub reference_time: DateTime<Utc>,
    pub policy: FilterPolicy,
    /// True when the permit records the Art. 71(4) exception: nobody is excluded.
    pub exception_applied: bool,
    /// Each blinded element times the registry's key, in request order (base64).
    pub evaluated: Vec<String>,
    /// Names the registry's key (SHA-256 of its public element): a holder may keep the
    /// unblinded values of its subjects and send only new subjects next time, for as long as
    /// this stays the same.
    pub key_id: String,
    /// This answer's fresh random salt (base64).
    pub salt: String,
    /// SHA-256(salt ‖ match value), truncated to 128 bits, of every opted-out subject in the
    /// permit's scope, with random entries added up to a power of two, sorted (hex).
    pub opted_out: Vec<String>,
    /// In-scope opt-outs registered before the registry kept match values: only
    /// `POST /v1/opt-outs/filter` can match them, until the registry is re-imported.
    pub unmatchable: usize,
}

/// One task, as `GET /v1/node/tasks` hands it out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeTask {
    pub task_id: TaskId,
    pub study_id: StudyId,
    pub permit_id: PermitId,
    pub data_holder: OrgId,
    pub round: u64,
    pub kind: TaskKind,
    pub deadline: DateTime<Utc>,
    /// The opt-out registry version every holder filters against in this round.
    pub registry_version: i64,
    pub study: NodeStudy,
}

/// The body of `POST /v1/node/tasks/{id}/result`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TaskResultBody {
    /// Training examples behind the update (after opt-out filtering).
    pub num_examples: u64,
    /// Subjects the opt-out filter removed before training.
    pub excluded_subjects: u64,
    /// The registry version the node filtered against (must be the task's).
    pub registry_version: i64,
    /// Base64 of the safetensors update; required for `fit` tasks, absent for `evaluate`.
    pub parameters: Option<String>,
    pub train_loss: Option<f64>,
    pub local_steps: Option<u64>,
    /// The node's evaluation of the model it received (before training).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub evaluation: Option<NodeEvaluation>,
    /// What the holder's records make of the study's features: flags and counts, small
    /// counts already withheld (absent from older nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_quality: Option<crate::domain::data_quality::DataQuality>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEvaluation {
    pub validation: fl_engine::MetricSummary,
    pub test: fl_engine::MetricSummary,
}

impl NodeEvaluation {
    pub fn for_holder(self, data_holder: OrgId) -> SiteEvaluation {
        SiteEvaluation {
            data_holder,
            validation: self.validation,
            test: self.test,
        }
    }
}

fn merged(params: &ParameterSet, extras: &ParameterSet) -> fl_engine::Result<ParameterSet> {
    let mut all = params.clone();
    for (name, t) in extras.iter() {
        all.insert(
            format!("{EXTRAS_PREFIX}{name}"),
            t.shape.clone(),
            t.values.clone(),
        )?;
    }
    Ok(all)
}

/// Splits a parameter file's tensors into the model part and the extras.
pub fn split_extras(all: &ParameterSet) -> fl_engine::Result<(ParameterSet, ParameterSet)> {
    let (mut params, mut extras) = (ParameterSet::new(), ParameterSet::new());
    for (name, t) in all.iter() {
        match name.strip_prefix(EXTRAS_PREFIX) {
            Some(n) => extras.insert(n, t.shape.clone(), t.values.clone())?,
            None => params.insert(name.clone(), t.shape.clone(), t.values.clone())?,
        }
    }
    Ok((params, extras))
}

/// The safetensors a node downloads for a task.
pub fn encode_fit_ins(ins: &FitIns, study: StudyId) -> fl_engine::Result<Vec<u8>> {
    Ok(save_safetensors(
        &merged(&ins.params, &ins.extras)?,
        &study.to_string(),
        ins.round,
        None,
    )?
    .0)
}

pub fn decode_fit_ins(bytes: &[u8], study: StudyId, round: u64) -> fl_engine::Result<FitIns> {
    let (all, meta) = load_safetensors(bytes)?;
    if meta.study != study.to_string() || meta.round != round || meta.site.is_some() {
        return Err(EngineError::Serialization(
            "the parameter file is not this task's global model".into(),
        ));
    }
    let (params, extras) = split_extras(&all)?;
    Ok(FitIns {
        round,
        params,
        extras,
    })
}

/// A node's update as it uploads it: base64 of safetensors naming study, round and holder.
pub fn encode_update(
    params: &ParameterSet,
    extras: &ParameterSet,
    study: StudyId,
    round: u64,
    holder: &OrgId,
) -> fl_engine::Result<String> {
    let (bytes, _) = save_safetensors(
        &merged(params, extras)?,
        &study.to_string(),
        round,
        Some(holder.as_str()),
    )?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Why an uploaded update was refused.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    #[error("`parameters` is not base64")]
    Encoding,
    #[error("the update is {size} bytes; the limit is {limit}")]
    TooLarge { size: usize, limit: usize },
    #[error("the update is not a valid parameter file: {0}")]
    Invalid(EngineError),
    #[error("the update names study {study}, round {round}, sender {site:?}; this task is study {want_study}, round {want_round}, sender {want_site}")]
    Misdirected {
        study: String,
        round: u64,
        site: Option<String>,
        want_study: StudyId,
        want_round: u64,
        want_site: OrgId,
    },
}

/// Decodes and checks an upload against the task it answers. Names, shapes and finiteness
/// against the global model are the aggregator's check (`fl_engine::strategy::validate_results`).
pub fn decode_update(
    b64: &str,
    limit: usize,
    study: StudyId,
    round: u64,
    holder: &OrgId,
) -> Result<(Vec<u8>, ParameterSet, ParameterSet), UpdateError> {
    // base64 grows data by 4/3: refuse before decoding anything oversized
    if b64.len() / 4 * 3 > limit {
        return Err(UpdateError::TooLarge {
            size: b64.len() / 4 * 3,
            limit,
        });
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|_| UpdateError::Encoding)?;
    if bytes.len() > limit {
        return Err(UpdateError::TooLarge {
            size: bytes.len(),
            limit,
        });
    }
    let (all, meta) = load_safetensors(&bytes).map_err(UpdateError::Invalid)?;
    if meta.study != study.to_string()
        || meta.round != round
        || meta.site.as_deref() != Some(holder.as_str())
    {
        return Err(UpdateError::Misdirected {
            study: meta.study,
            round: meta.round,
            site: meta.site,
            want_study: study,
            want_round: round,
            want_site: holder.clone(),
        });
    }
    let (params, extras) = split_extras(&all).map_err(UpdateError::Invalid)?;
    Ok((bytes, params, extras))
}

/// One holder's part of a statistics run, as `GET /v1/node/statistics-tasks` hands it out:
/// the query and the variables it reads, never the other holders' names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatisticsTask {
    pub task_id: crate::domain::StatisticsTaskId,
    pub run_id: crate::domain::StatisticsRunId,
    pub permit_id: PermitId,
    pub data_holder: OrgId,
    pub purpose: Purpose,
    pub categories: Vec<DataCategory>,
    /// The feature specification defining the query's variables
    /// (`ehds_core::domain::statistics::variables`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub feature_spec: serde_json::Value,
    pub query: ehds_stats::QueryForm,
    pub optout_policy: FilterPolicy,
    /// The opt-out registry version the node filters against.
    pub registry_version: i64,
    pub deadline: DateTime<Utc>,
}

/// The body of `POST /v1/node/statistics-tasks/{id}/result`: the node's sufficient statistics
/// for the query (counts, moments, bin counts; never a record) and what did not count.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StatisticsResultBody {
    /// The registry version the node filtered against (must be the task's).
    pub registry_version: i64,
    /// Subjects the opt-out filter removed.
    pub opted_out: u64,
    /// Subjects left out because a variable without an imputation rule was missing.
    pub incomplete: u64,
    /// `ehds_stats::Partial` as JSON.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub partial: ehds_stats::Partial,
}
