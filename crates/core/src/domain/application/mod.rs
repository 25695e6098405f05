//! Data access applications (Art. 67), their parsing into domain terms, and the procedure on
//! them (Art. 68).

pub mod calendar;
pub mod fees;
pub mod procedure;

pub use procedure::{Clocks, Procedure, Transition, TransitionError};

use std::collections::BTreeSet;

use chrono::{DateTime, Months, Utc};
use serde::{Deserialize, Serialize};

use super::statistics::{DeclaredStatistics, StatisticsRequest};
use super::{
    time::Timestamp, ApplicationId, BudgetUnit, DataCategory, DatasetId, Delta, Epsilon, Errors,
    FieldError, MemberState, OrgId, PermitId, PrivacyBudget, Purpose,
};

/// Art. 68(12): a permit lasts at most ten years.
pub const MAX_PERMIT_MONTHS: u32 = 120;

/// Art. 68(4): the HDAB decides within three months of receiving a complete application (it may
/// extend that once by three months, telling the applicant).
pub const DECISION_MONTHS: u32 = 3;

/// Flags that refine the scientific-research purpose (53(1)(e)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ResearchFlag {
    ProductInnovation,
    AlgorithmTraining,
    /// Research of important public interest: one of the conditions of the 71(4) exception.
    ImportantPublicInterest,
}

impl ResearchFlag {
    pub const ALL: [ResearchFlag; 3] = [
        ResearchFlag::ProductInnovation,
        ResearchFlag::AlgorithmTraining,
        ResearchFlag::ImportantPublicInterest,
    ];
}

/// The Art. 71(4) exception an applicant asks for, and that a permit then records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OptOutException {
    pub justification: String,
    /// The national provision that makes the exception available.
    pub national_law_basis: String,
    pub no_alternative_means: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ApplicantRequest {
    pub organisation: String,
    /// Whether the applicant is a public-sector body or acts on behalf of one (Art. 53(2)).
    pub public_body: bool,
    /// Kinds of user the fee schedule may reduce fees for (Art. 62(1)); a public body counts
    /// as `public_body` without saying so.
    #[serde(default)]
    pub user_kinds: Vec<fees::UserKind>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PeriodRequest {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BudgetRequest {
    pub epsilon: f64,
    pub delta: f64,
    pub unit: String,
}

/// The body of `POST /v1/applications`. Enumerations arrive as strings so that every bad value
/// is reported with its own code and field.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ApplicationRequest {
    pub title: String,
    pub applicant: ApplicantRequest,
    /// Art. 53(1) purpose identifiers.
    pub purposes: Vec<String>,
    #[serde(default)]
    pub research_flags: Vec<ResearchFlag>,
    /// Art. 51(1) category identifiers.
    pub categories: Vec<String>,
    pub data_holders: Vec<String>,
    pub member_states: Vec<String>,
    pub requested_period: PeriodRequest,
    pub privacy_budget: BudgetRequest,
    pub justification: String,
    #[serde(default)]
    pub optout_exception: Option<OptOutException>,
    /// The applicant's explicit declaration that no Art. 54 prohibited use is intended.
    pub declares_no_prohibited_use: bool,
    /// `data_access` (Art. 67, the default) or `data_request` (Art. 69: an answer in
    /// anonymised statistical form only).
    #[serde(default)]
    pub kind: ApplicationKind,
    /// The statistical content of a data request (Art. 69(2)(d)); only for `data_request`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<StatisticsRequest>,
    /// Datasets of the HDAB's catalogue (Art. 77) the application is for: published ones, each
    /// of a holder the application names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub datasets: Vec<String>,
}

/// What is applied for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApplicationKind {
    /// A data access application (Art. 67): a permit for processing, here federated studies.
    #[default]
    DataAccess,
    /// A health data request (Art. 69): answered by the federation's statistics only.
    DataRequest,
}

impl ApplicationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DataAccess => "data_access",
            Self::DataRequest => "data_request",
        }
    }
}

/// A parsed, internally consistent application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewApplication {
    pub title: String,
    pub organisation: OrgId,
    pub public_body: bool,
    /// Kinds of user the fee schedule may reduce fees for (absent from older records).
    #[serde(default)]
    pub user_kinds: Vec<fees::UserKind>,
    pub purposes: Vec<Purpose>,
    pub research_flags: Vec<ResearchFlag>,
    pub categories: Vec<DataCategory>,
    pub data_holders: Vec<OrgId>,
    pub member_states: Vec<MemberState>,
    pub period_start: chrono::DateTime<chrono::Utc>,
    pub period_end: chrono::DateTime<chrono::Utc>,
    pub privacy_budget: PrivacyBudget,
    pub justification: String,
    pub optout_exception: Option<OptOutException>,
    /// Absent from records written before data requests: a data access application.
    #[serde(default)]
    pub kind: ApplicationKind,
    /// The declared statistical content of a data request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<DeclaredStatistics>,
    /// The catalogue datasets (Art. 77) the application is for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub datasets: Vec<DatasetId>,
}

pub fn parse_list<T: Ord + Clone>(
    errors: &mut Errors,
    field: &str,
    raw: &[String],
    parse: impl Fn(&str) -> super::ParseResult<T>,
) -> Vec<T> {
    if raw.is_empty() {
        errors.push(
            field,
            "empty_list",
            format!("`{field}` must name at least one value"),
        );
    }
    let mut seen = BTreeSet::new();
    for (i, s) in raw.iter().enumerate() {
        if let Some(v) = errors.take(format!("{field}[{i}]"), parse(s)) {
            if !seen.insert(v) {
                errors.push(
                    format!("{field}[{i}]"),
                    "duplicate_value",
                    format!("`{s}` is listed twice"),
                );
            }
        }
    }
    seen.into_iter().collect()
}

/// A required free text: not blank, within `max` characters.
pub fn non_blank(errors: &mut Errors, field: &str, value: &str, max: usize) {
    if value.trim().is_empty() {
        errors.push(field, "required", format!("`{field}` must not be blank"));
    } else if value.chars().count() > max {
        errors.push(
            field,
            "too_long",
            format!("`{field}` is limited to {max} characters"),
        );
    }
}

/// Checks the Art. 71(4) conditions that can be checked from the application itself.
pub fn validate_optout_exception(
    errors: &mut Errors,
    exception: &OptOutException,
    public_body: bool,
    purposes: &[Purpose],
    flags: &[ResearchFlag],
) {
    if !public_body {
        errors.push("optout_exception", "optout_exception_requires_public_body",
            "the Art. 71(4) exception is available only to public-sector bodies or those acting for them");
    }
    for p in purposes {
        let eligible = p.reserved_for_public_bodies()
            || (*p == Purpose::ScientificResearch
                && flags.contains(&ResearchFlag::ImportantPublicInterest));
        if !eligible {
            errors.push("optout_exception", "optout_exception_purpose_not_eligible", format!(
                "purpose `{}` does not qualify for the Art. 71(4) exception (only 53(1)(a)-(c) or research of important public interest)",
                p.as_str()));
        }
    }
    if !exception.no_alternative_means {
        errors.push(
            "optout_exception.no_alternative_means",
            "optout_exception_alternative_exists",
            "the Art. 71(4) exception requires that no alternative means exist",
        );
    }
    non_blank(
        errors,
        "optout_exception.justification",
        &exception.justification,
        10_000,
    );
    non_blank(
        errors,
        "optout_exception.national_law_basis",
        &exception.national_law_basis,
        1_000,
    );
}

pub fn validate_public_body_purposes(
    errors: &mut Errors,
    field: &str,
    purposes: &[Purpose],
    public_body: bool,
) {
    if public_body {
        return;
    }
    for p in purposes.iter().filter(|p| p.reserved_for_public_bodies()) {
        errors.push(
            field,
            "purpose_reserved_for_public_bodies",
            format!(
                "purpose `{}` is reserved for public-sector bodies (Art. 53(2))",
                p.as_str()
            ),
        );
    }
}

/// Validates a period: start before end, end in the future, at most ten years long.
pub fn validate_period(
    errors: &mut Errors,
    field: &str,
    start: Timestamp,
    end: Timestamp,
    now: Timestamp,
) {
    if end <= start {
        errors.push(
            field,
            "invalid_period",
            "the period must end after it starts",
        );
    } else if end <= now {
        errors.push(field, "period_in_past", "the period must end in the future");
    } else if start < now - chrono::Duration::days(1) {
        errors.push(
            field,
            "period_in_past",
            "the period must not start in the past",
        );
    } else if start
        .checked_add_months(Months::new(MAX_PERMIT_MONTHS))
        .is_none_or(|max| end > max)
    {
        errors.push(
            field,
            "duration_exceeds_maximum",
            "a permit lasts at most ten years (Art. 68(12))",
        );
    }
}

impl NewApplication {
    /// Parses a request from a caller of organisation `caller_org`, reporting every problem.
    pub fn parse(
        req: ApplicationRequest,
        caller_org: &OrgId,
        now: Timestamp,
    ) -> Result<Self, Vec<FieldError>> {
        let mut e = Errors::default();
        non_blank(&mut e, "title", &req.title, 300);
        non_blank(&mut e, "justification", &req.justification, 20_000);
        let organisation = e.take(
            "applicant.organisation",
            OrgId::parse(&req.applicant.organisation),
        );
        if organisation.as_ref().is_some_and(|o| o != caller_org) {
            e.push(
                "applicant.organisation",
                "organisation_mismatch",
                "an application can only be made on behalf of the caller's own organisation",
            );
        }
        let purposes = parse_list(&mut e, "purposes", &req.purposes, Purpose::parse);
        validate_public_body_purposes(&mut e, "purposes", &purposes, req.applicant.public_body);
        let categories = parse_list(&mut e, "categories", &req.categories, DataCategory::parse);
        let data_holders = parse_list(&mut e, "data_holders", &req.data_holders, OrgId::parse);
        let member_states = parse_list(
            &mut e,
            "member_states",
            &req.member_states,
            MemberState::parse,
        );
        let start = super::time::normalise(req.requested_period.start);
        let end = super::time::normalise(req.requested_period.end);
        validate_period(&mut e, "requested_period", start, end, now);
        let epsilon = e.take(
            "privacy_budget.epsilon",
            Epsilon::parse(req.privacy_budget.epsilon),
        );
        let delta = e.take(
            "privacy_budget.delta",
            Delta::parse(req.privacy_budget.delta),
        );
        let unit = e.take(
            "privacy_budget.unit",
            BudgetUnit::parse(&req.privacy_budget.unit),
        );
        if !req.declares_no_prohibited_use {
            e.push(
                "declares_no_prohibited_use",
                "prohibited_use_not_excluded",
                "the applicant must declare that no Art. 54 prohibited use is intended",
            );
        }
        if let Some(ex) = &req.optout_exception {
            validate_optout_exception(
                &mut e,
                ex,
                req.applicant.public_body,
                &purposes,
                &req.research_flags,
            );
        }
        let statistics = match (req.kind, req.statistics) {
            (ApplicationKind::DataRequest, Some(st)) => st.parse(&mut e, "statistics", &categories),
            (ApplicationKind::DataRequest, None) => {
                e.push(
                    "statistics",
                    "statistics_required",
                    "a data request declares its statistical content (Art. 69(2)(d))",
                );
                None
            }
            (ApplicationKind::DataAccess, Some(_)) => {
                e.push(
                    "statistics",
                    "statistics_only_in_data_request",
                    "statistical content is declared by a data request (`kind: data_request`)",
                );
                None
            }
            (ApplicationKind::DataAccess, None) => None,
        };
        let mut datasets: Vec<DatasetId> = Vec::new();
        for (i, raw) in req.datasets.iter().enumerate() {
            let field = format!("datasets[{i}]");
            if let Some(id) = e.take(field.clone(), DatasetId::parse(raw)) {
                if datasets.contains(&id) {
                    e.push(field, "duplicate_value", format!("`{raw}` is listed twice"));
                } else {
                    datasets.push(id);
                }
            }
        }
        let mut research_flags = req.research_flags.clone();
        research_flags.sort();
        research_flags.dedup();
        if !research_flags.is_empty() && !purposes.contains(&Purpose::ScientificResearch) {
            e.push(
                "research_flags",
                "research_flags_without_research",
                "research flags refine the scientific_research purpose, which is not requested",
            );
        }
        e.into_result(|| NewApplication {
            title: req.title.trim().to_owned(),
            organisation: organisation.expect("checked"),
            public_body: req.applicant.public_body,
            user_kinds: {
                let mut kinds = req.applicant.user_kinds.clone();
                if req.applicant.public_body {
                    kinds.push(fees::UserKind::PublicBody);
                }
                kinds.sort_by_key(|k| *k as u8);
                kinds.dedup();
                kinds
            },
            purposes,
            research_flags,
            categories,
            data_holders,
            member_states,
            period_start: start,
            period_end: end,
            privacy_budget: PrivacyBudget {
                epsilon: epsilon.expect("checked"),
                delta: delta.expect("checked"),
                unit: unit.expect("checked"),
            },
            justification: req.justification,
            optout_exception: req.optout_exception,
            kind: req.kind,
            statistics,
            datasets,
        })
    }
}

/// Where an application stands in the procedure (see [`procedure`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApplicationStatus {
    /// Written, not yet submitted: the HDAB does not see it.
    Draft,
    /// Received; the completeness check is pending.
    Submitted,
    /// Waiting for the applicant's answer to a request for information.
    Incomplete,
    /// Complete: the decision clock runs (Art. 68(4)).
    Assessing,
    /// A fee estimate waits for the applicant's acceptance (Art. 62).
    FeePending,
    /// A grant waits for a second officer's confirmation (four-eyes rule).
    AwaitingConfirmation,
    Approved,
    /// Granted for part of what was asked, with reasons.
    PartiallyApproved,
    Rejected,
    Withdrawn,
    /// Not completed within four weeks of a request for information (Art. 68(4)).
    Lapsed,
}

impl ApplicationStatus {
    pub const ALL: [ApplicationStatus; 11] = [
        Self::Draft,
        Self::Submitted,
        Self::Incomplete,
        Self::Assessing,
        Self::FeePending,
        Self::AwaitingConfirmation,
        Self::Approved,
        Self::PartiallyApproved,
        Self::Rejected,
        Self::Withdrawn,
        Self::Lapsed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Submitted => "submitted",
            Self::Incomplete => "incomplete",
            Self::Assessing => "assessing",
            Self::FeePending => "fee_pending",
            Self::AwaitingConfirmation => "awaiting_confirmation",
            Self::Approved => "approved",
            Self::PartiallyApproved => "partially_approved",
            Self::Rejected => "rejected",
            Self::Withdrawn => "withdrawn",
            Self::Lapsed => "lapsed",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Application {
    pub id: ApplicationId,
    pub applicant_sub: String,
    pub status: ApplicationStatus,
    pub submitted_at: chrono::DateTime<chrono::Utc>,
    pub decided_at: Option<chrono::DateTime<chrono::Utc>>,
    pub decided_by: Option<String>,
    pub decision_reason: Option<String>,
    pub permit_id: Option<PermitId>,
    pub request: NewApplication,
    /// Every step of the procedure so far.
    #[serde(default)]
    pub procedure: Procedure,
}
