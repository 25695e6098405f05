//! Statistics answered by the federation (Art. 69 health data requests, and statistics a permit
//! holder asks under a permit): one [`StatisticsRun`] per declared query, from dispatch to the
//! data holders' nodes to the released, output-checked answer.
//!
//! The run's life: `computing` (each named holder's node computes its partial over its own,
//! opt-out-filtered records) → the gateway pools the partials and checks the output
//! (`ehds_stats::check`, the rules of trusted research environments) → `released` when nothing
//! is flagged, `under_review` when the checker flagged values (an officer releases what the
//! checker let out, or withholds all of it, with a recorded justification), `withheld` when the
//! answer would difference an earlier one of the same organisation (refused with every reason),
//! `failed` when no holder answered in time. Values the checker suppressed are never released,
//! not even by an officer: Art. 69(1) allows an answer in anonymised statistical form only.
//!
//! A query that declares differential privacy charges its budget to the permit when the run is
//! created (the one budget that the permit's studies spend as well), and the applicant sees
//! only the noisy values.

use chrono::{DateTime, Months, Utc};
use rand::{CryptoRng, Rng};
use serde::{Deserialize, Serialize};

use ehds_stats::{
    noise::{zcdp_to_epsilon, DpRelease},
    output_check::{CheckedCount, DifferencingRisk, ReleasedCount},
    query::DpBudget,
    Partial, Query, QueryForm, Release, Rules,
};

use super::{
    feature_spec::features::{FeatureSpec, Task},
    optout::FilterPolicy,
    time::Timestamp,
    ApplicationId, DataCategory, Errors, OrgId, PermitId, Purpose, StatisticsRunId,
    StatisticsTaskId,
};

/// Art. 69(4): the answer follows within three months of the request's approval.
pub const ANSWER_MONTHS: u32 = 3;

/// Most queries one request may declare.
pub const MAX_QUERIES: usize = 20;

/// The suffix of a survival label's follow-up time column (the label's own column holds the
/// event indicator).
pub const TIME_SUFFIX: &str = "_days";

/// The variables a query may name over `spec`: every model input column, the label (its code:
/// 0/1, the class index, or a survival label's event indicator) and, for a survival label, the
/// follow-up time in days as `<label>_days`. The node builds its table with exactly these
/// columns ([`variables`] is the one place that names them).
pub fn variables(spec: &FeatureSpec) -> Vec<String> {
    let mut out = spec.columns();
    out.push(spec.label.name.clone());
    if spec.task() == Task::Survival {
        out.push(format!("{}{TIME_SUFFIX}", spec.label.name));
    }
    out
}

/// The statistical content an applicant declares (Art. 69(2)(d)): the variables, as a feature
/// specification the holders' nodes read, and the queries over them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StatisticsRequest {
    /// The feature specification (docs/feature-specifications.md) defining the variables.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub feature_spec: serde_json::Value,
    /// One query per statistic asked for.
    pub queries: Vec<QueryForm>,
}

/// Declared statistical content, parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeclaredStatistics {
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub feature_spec: serde_json::Value,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<QueryForm>))]
    pub queries: Vec<Query>,
}

/// Parses `spec` as a feature specification reading only `categories`; the variables it
/// defines. Problems go to `errors` under `field`.
pub fn parse_spec(
    errors: &mut Errors,
    field: &str,
    spec: &serde_json::Value,
    categories: &[DataCategory],
) -> Option<FeatureSpec> {
    let parsed = match FeatureSpec::from_json(&spec.to_string()) {
        Ok(s) => s,
        Err(e) => {
            errors.push(field, "invalid_feature_spec", e.to_string());
            return None;
        }
    };
    for c in parsed.data_categories() {
        if !categories.contains(&c) {
            errors.push(
                field,
                "category_not_covered",
                format!(
                    "the specification reads `{}` data, which the request does not cover",
                    c.as_str()
                ),
            );
        }
    }
    Some(parsed)
}

/// Parses one query over `spec`'s variables; problems go to `errors` under `field`.
pub fn parse_query(
    errors: &mut Errors,
    field: &str,
    form: QueryForm,
    spec: Option<&FeatureSpec>,
) -> Option<Query> {
    match Query::parse(form, &ehds_stats::Limits::default()) {
        Ok(q) => {
            if let Some(spec) = spec {
                let known = variables(spec);
                for c in q.columns() {
                    if !known.iter().any(|k| k == c) {
                        errors.push(
                            field,
                            "unknown_variable",
                            format!(
                                "`{c}` is not a variable of the feature specification (known: {})",
                                known.join(", ")
                            ),
                        );
                    }
                }
            }
            Some(q)
        }
        Err(e) => {
            for fe in e.errors {
                let path = if fe.path.is_empty() {
                    field.to_owned()
                } else {
                    format!("{field}.{}", fe.path)
                };
                errors.push(path, fe.code.as_str(), fe.message);
            }
            None
        }
    }
}

impl StatisticsRequest {
    /// Parses the declared content of a request covering `categories`, every problem reported
    /// under `field`.
    pub fn parse(
        self,
        errors: &mut Errors,
        field: &str,
        categories: &[DataCategory],
    ) -> Option<DeclaredStatistics> {
        let before = errors.0.len();
        let spec = parse_spec(
            errors,
            &format!("{field}.feature_spec"),
            &self.feature_spec,
            categories,
        );
        if self.queries.is_empty() {
            errors.push(
                format!("{field}.queries"),
                "empty_list",
                "a data request declares at least one query",
            );
        } else if self.queries.len() > MAX_QUERIES {
            errors.push(
                format!("{field}.queries"),
                "too_many_queries",
                format!("a data request declares at most {MAX_QUERIES} queries"),
            );
        }
        let queries: Vec<Query> = self
            .queries
            .into_iter()
            .enumerate()
            .filter_map(|(i, form)| {
                parse_query(
                    errors,
                    &format!("{field}.queries[{i}]"),
                    form,
                    spec.as_ref(),
                )
            })
            .collect();
        (spec.is_some() && errors.0.len() == before).then_some(DeclaredStatistics {
            feature_spec: self.feature_spec,
            queries,
        })
    }
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The holders' nodes are computing their partials.
    Computing,
    /// The output checker flagged values: an officer releases or withholds the answer.
    UnderReview,
    /// The answer is released to the applicant.
    Released,
    /// Nothing is released: refused by the checker (differencing) or by an officer.
    Withheld,
    /// No holder answered before the deadline.
    Failed,
}

impl RunStatus {
    pub const ALL: [RunStatus; 5] = [
        Self::Computing,
        Self::UnderReview,
        Self::Released,
        Self::Withheld,
        Self::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Computing => "computing",
            Self::UnderReview => "under_review",
            Self::Released => "released",
            Self::Withheld => "withheld",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// No further step changes the run.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Released | Self::Withheld | Self::Failed)
    }
}

/// Whether an officer sees every answer before release, or only those the checker flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewPolicy {
    /// Answers with nothing flagged are released at once.
    #[default]
    Flagged,
    /// Every answer waits for an officer.
    Always,
}

/// Records that did not count, over all holders, checked like any released count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NotCounted {
    /// Subjects the Art. 71 opt-out filter removed before the computation.
    pub opted_out: CheckedCount,
    /// Subjects left out because a variable without an imputation rule was missing.
    pub incomplete: CheckedCount,
}

/// What the gateway made of the partials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunOutcome {
    /// The checked output: what the applicant receives, unless `dp` is present.
    pub release: Release,
    /// The noisy values, when the query declares differential privacy: then this is all the
    /// applicant receives.
    pub dp: Option<DpRelease>,
    pub holders_answered: usize,
    /// Holders whose node did not answer before the deadline.
    pub holders_missing: Vec<OrgId>,
    pub not_counted: NotCounted,
    /// Pairs of counts with an earlier answer of the same organisation whose difference would
    /// disclose a small group: any makes the run withheld.
    pub differencing: Vec<DifferencingRisk>,
    /// Why the run needs an officer, or was withheld, in words.
    pub flags: Vec<String>,
}

/// An officer's decision on a flagged answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ReviewDecision {
    /// Release what the checker let out (suppressed values stay suppressed).
    Release,
    /// Release nothing.
    Withhold,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Review {
    pub decision: ReviewDecision,
    pub by: String,
    pub at: DateTime<Utc>,
    pub justification: String,
}

/// A step the run's state does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the run is {}, which does not allow this step", .0.as_str())]
pub struct RunStateError(pub RunStatus);

/// The differential privacy a run charged to its permit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Charge {
    /// ε at the permit's δ, as the permit's budget counts it.
    pub epsilon: f64,
}

/// Why a query's differential privacy cannot be charged to a permit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChargeError {
    #[error("the query's δ {query} is above the permit's δ {permit}")]
    DeltaAbovePermit { query: f64, permit: f64 },
    #[error("distributed noise is not offered: declare `placement: central`, and the gateway adds the noise once, after pooling")]
    DistributedNotOffered,
}

/// The ε a query's declared privacy costs at the permit's δ (record level), if it declares any.
pub fn charge(query: &Query, permit_delta: f64) -> Result<Option<Charge>, ChargeError> {
    let Some(dp) = query.dp() else {
        return Ok(None);
    };
    if dp.placement == ehds_stats::query::Placement::Distributed {
        return Err(ChargeError::DistributedNotOffered);
    }
    let epsilon = match dp.budget {
        DpBudget::GaussianZcdp { rho } => zcdp_to_epsilon(rho, permit_delta),
        DpBudget::GaussianApprox { epsilon, delta } => {
            if delta > permit_delta {
                return Err(ChargeError::DeltaAbovePermit {
                    query: delta,
                    permit: permit_delta,
                });
            }
            epsilon
        }
        DpBudget::Laplace { epsilon } => epsilon,
    };
    Ok(Some(Charge { epsilon }))
}

/// One run: a query answered by the federation under a permit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatisticsRun {
    pub id: StatisticsRunId,
    pub permit_id: PermitId,
    /// The Art. 69 data request this run answers, when it answers one.
    pub application_id: Option<ApplicationId>,
    pub organisation: OrgId,
    pub requested_by: String,
    pub purpose: Purpose,
    #[cfg_attr(feature = "openapi", schema(value_type = QueryForm))]
    pub query: Query,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub feature_spec: serde_json::Value,
    pub categories: Vec<DataCategory>,
    pub data_holders: Vec<OrgId>,
    pub optout_policy: FilterPolicy,
    /// The opt-out registry version every holder filters against.
    pub registry_version: i64,
    pub rules: Rules,
    pub charge: Option<Charge>,
    pub status: RunStatus,
    pub created_at: DateTime<Utc>,
    /// The holders' nodes answer by then; the gateway answers with what arrived.
    pub deadline: DateTime<Utc>,
    /// Art. 69(4): when the answer is due, for a run answering a data request.
    pub answer_due: Option<DateTime<Utc>>,
    pub outcome: Option<RunOutcome>,
    pub review: Option<Review>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// What one holder's node sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contribution {
    pub holder: OrgId,
    pub partial: Partial,
    pub opted_out: u64,
    pub incomplete: u64,
}

/// A new run's settings.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub permit_id: PermitId,
    pub application_id: Option<ApplicationId>,
    pub organisation: OrgId,
    pub requested_by: String,
    pub purpose: Purpose,
    pub query: Query,
    pub feature_spec: serde_json::Value,
    pub categories: Vec<DataCategory>,
    pub data_holders: Vec<OrgId>,
    pub optout_policy: FilterPolicy,
    pub registry_version: i64,
    pub rules: Rules,
    pub charge: Option<Charge>,
    pub deadline: DateTime<Utc>,
    /// When the data request it answers was approved.
    pub approved_at: Option<DateTime<Utc>>,
}

impl StatisticsRun {
    pub fn new(n: NewRun, now: Timestamp) -> Self {
        Self {
            id: StatisticsRunId::new(),
            permit_id: n.permit_id,
            application_id: n.application_id,
            organisation: n.organisation,
            requested_by: n.requested_by,
            purpose: n.purpose,
            query: n.query,
            feature_spec: n.feature_spec,
            categories: n.categories,
            data_holders: n.data_holders,
            optout_policy: n.optout_policy,
            registry_version: n.registry_version,
            rules: n.rules,
            charge: n.charge,
            status: RunStatus::Computing,
            created_at: now,
            deadline: n.deadline,
            answer_due: n
                .approved_at
                .and_then(|a| a.checked_add_months(Months::new(ANSWER_MONTHS))),
            outcome: None,
            review: None,
            finished_at: None,
        }
    }

    /// Whether the Art. 69(4) answer is late: due, and not answered by then.
    pub fn overdue(&self, now: Timestamp) -> bool {
        self.answer_due.is_some_and(|due| {
            let answered = self.finished_at.filter(|_| self.status.is_final());
            answered.map_or(now > due, |at| at > due)
        })
    }

    /// Pools what the holders sent, checks the output, and moves the run on: `released`,
    /// `under_review` or `withheld` (or `failed` when nobody answered). `earlier` are the counts
    /// the organisation's earlier answers released (the differencing check); `rng` draws the
    /// noise of a query that declares differential privacy.
    pub fn complete<R: Rng + CryptoRng>(
        &mut self,
        contributions: &[Contribution],
        earlier: &[ReleasedCount],
        policy: ReviewPolicy,
        rng: &mut R,
        now: Timestamp,
    ) -> Result<(), RunStateError> {
        if self.status != RunStatus::Computing {
            return Err(RunStateError(self.status));
        }
        self.finished_at = Some(now);
        if contributions.is_empty() {
            self.status = RunStatus::Failed;
            return Ok(());
        }
        let partials: Vec<Partial> = contributions.iter().map(|c| c.partial.clone()).collect();
        // Contributions were checked against the query on arrival, so they pool.
        let combined = match ehds_stats::combine(&self.query, &partials) {
            Ok(c) => c,
            Err(_) => {
                self.status = RunStatus::Failed;
                return Ok(());
            }
        };
        let release = ehds_stats::check(&self.query, &combined, &self.rules);
        let count = |n: u64| ehds_stats::output_check::check_count(n, &self.rules);
        let not_counted = NotCounted {
            opted_out: count(contributions.iter().map(|c| c.opted_out).sum()),
            incomplete: count(contributions.iter().map(|c| c.incomplete).sum()),
        };
        let differencing = ehds_stats::differencing(
            earlier,
            &release.released_counts(&self.query),
            self.rules.min_cell_count,
        );
        let mut flags = Vec::new();
        if release.summary.suppressed > 0 {
            flags.push(format!(
                "{} value(s) suppressed by the output rules",
                release.summary.suppressed
            ));
        }
        if release.summary.review > 0 {
            flags.push(format!(
                "{} value(s) flagged for review (zero counts)",
                release.summary.review
            ));
        }
        for d in &differencing {
            flags.push(format!(
                "a count differs from an earlier released count by {} (below the minimum of {})",
                d.difference, self.rules.min_cell_count
            ));
        }
        let dp = match self.query.dp() {
            Some(_) => ehds_stats::privatize(&self.query, &combined, &release, rng).ok(),
            None => None,
        };
        let dp_failed = self.query.dp().is_some() && dp.is_none();
        if dp_failed {
            flags.push("the declared differential privacy could not be applied".into());
        }
        let holders_missing = self
            .data_holders
            .iter()
            .filter(|h| !contributions.iter().any(|c| &c.holder == *h))
            .cloned()
            .collect();
        self.status = if !differencing.is_empty() || dp_failed {
            RunStatus::Withheld
        } else if !flags.is_empty() || policy == ReviewPolicy::Always {
            RunStatus::UnderReview
        } else {
            RunStatus::Released
        };
        self.outcome = Some(RunOutcome {
            release,
            dp,
            holders_answered: contributions.len(),
            holders_missing,
            not_counted,
            differencing,
            flags,
        });
        Ok(())
    }

    /// An officer's decision on an answer under review.
    pub fn review(
        &mut self,
        decision: ReviewDecision,
        by: &str,
        justification: String,
        now: Timestamp,
    ) -> Result<(), RunStateError> {
        if self.status != RunStatus::UnderReview {
            return Err(RunStateError(self.status));
        }
        self.status = match decision {
            ReviewDecision::Release => RunStatus::Released,
            ReviewDecision::Withhold => RunStatus::Withheld,
        };
        self.finished_at = Some(now);
        self.review = Some(Review {
            decision,
            by: by.to_owned(),
            at: now,
            justification,
        });
        Ok(())
    }

    /// The counts this run released, for the differencing check of later runs.
    pub fn released_counts(&self) -> Vec<ReleasedCount> {
        match (&self.outcome, self.status) {
            (Some(o), RunStatus::Released) => o.release.released_counts(&self.query),
            _ => Vec::new(),
        }
    }

    /// What the applicant may see of the answer: nothing before release, and only the noisy
    /// values of a query under differential privacy.
    pub fn answer(&self) -> Option<Answer> {
        let o = self
            .outcome
            .as_ref()
            .filter(|_| self.status == RunStatus::Released)?;
        Some(match &o.dp {
            Some(dp) => Answer::Noisy(dp.clone()),
            None => Answer::Checked(o.release.clone()),
        })
    }
}

/// A released answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "form", content = "values", rename_all = "snake_case")]
pub enum Answer {
    /// Output-checked exact values.
    Checked(Release),
    /// Output-checked values with differential-privacy noise.
    Noisy(DpRelease),
}

/// One holder's part of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatisticsTaskRecord {
    pub id: StatisticsTaskId,
    pub run_id: StatisticsRunId,
    pub data_holder: OrgId,
    pub deadline: DateTime<Utc>,
    /// The contribution, once the node answered.
    pub contribution: Option<Contribution>,
}

#[cfg(test)]
mod tests;
