//! The public register (Art. 57(1)(j)(ii)-(iv), Art. 58(1)(f)): applications as received,
//! decisions with their reasons once published, the permits they issued and the measures taken
//! on them. Only what the regulation makes public: organisations, never persons (no applicant
//! or officer account, no justification text), and counts under the small-cell rule.

use serde::Serialize;

use crate::store::{ApplicationFilter, Page, Scope, StoreError, Tx};
use ehds_core::domain::{
    application::ApplicationKind, permit::PermitState, small_cell::SmallCellRule, time::Timestamp,
    Application, ApplicationId, ApplicationStatus, DataCategory, MemberState, OrgId, PermitId,
    Purpose,
};

/// One application as the public sees it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RegisterEntry {
    pub application_id: ApplicationId,
    /// `data_access` (Art. 67) or `data_request` (Art. 69, answered by statistics only).
    pub kind: ApplicationKind,
    pub received_at: chrono::DateTime<chrono::Utc>,
    pub title: String,
    pub applicant_organisation: OrgId,
    pub public_body: bool,
    pub purposes: Vec<Purpose>,
    pub categories: Vec<DataCategory>,
    pub data_holders: Vec<OrgId>,
    pub member_states: Vec<MemberState>,
    pub requested_period_start: chrono::DateTime<chrono::Utc>,
    pub requested_period_end: chrono::DateTime<chrono::Utc>,
    /// `received` until a decision is published; then the decision's outcome, or
    /// `withdrawn` / `lapsed`.
    pub status: &'static str,
    /// When the decision period was extended, and by how many months.
    pub extended_months: Option<u32>,
    pub decision: Option<PublicDecision>,
    /// The last change the public can see, for feeds.
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

/// A published decision.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PublicDecision {
    /// `approved`, `partially_approved` or `rejected`.
    pub outcome: &'static str,
    pub decided_at: chrono::DateTime<chrono::Utc>,
    pub published_at: chrono::DateTime<chrono::Utc>,
    pub reasons: Option<String>,
    /// The categories granted (after data minimisation).
    pub granted_categories: Vec<DataCategory>,
    pub granted_data_holders: Vec<OrgId>,
    pub permit: Option<PublicPermit>,
    /// The fee the applicant accepted (Art. 62), in minor units.
    pub fee: Option<PublicFee>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PublicPermit {
    pub permit_id: PermitId,
    pub valid_from: chrono::DateTime<chrono::Utc>,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    /// `active`, `suspended`, `revoked` or `expired`.
    pub status: &'static str,
    /// The measure taken on the permit (Art. 63), with its stated reason.
    pub measure_since: Option<chrono::DateTime<chrono::Utc>>,
    pub measure_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PublicFee {
    pub currency: String,
    pub total_minor: i64,
}

/// Applications per state, small counts withheld.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RegisterSummary {
    /// State -> count; `null` where the count is below the small-cell threshold.
    pub by_status: std::collections::BTreeMap<&'static str, Option<u64>>,
    pub small_cell_threshold: u64,
}

fn public_status(app: &Application) -> &'static str {
    match app.status {
        _ if app.is_decided() && app.procedure.published_at.is_some() => app.status.as_str(),
        ApplicationStatus::Withdrawn | ApplicationStatus::Lapsed => app.status.as_str(),
        _ => "received",
    }
}

/// The register's entries, newest application first.
pub async fn entries(
    tx: &mut dyn Tx,
    page: Page,
    now: Timestamp,
) -> Result<Vec<RegisterEntry>, StoreError> {
    let apps = tx
        .list_applications(&Scope::All, &ApplicationFilter::default(), page)
        .await?;
    let mut out = Vec::with_capacity(apps.len());
    for app in apps {
        out.push(entry(tx, app, now).await?);
    }
    Ok(out)
}

pub async fn entry(
    tx: &mut dyn Tx,
    app: Application,
    now: Timestamp,
) -> Result<RegisterEntry, StoreError> {
    let status = public_status(&app);
    let published = app.procedure.published_at.filter(|_| app.is_decided());
    let mut decision = None;
    let mut updated_at = app.submitted_at;
    if let (Some(published_at), Some(decided_at)) = (published, app.decided_at) {
        updated_at = published_at;
        let permit = match app.permit_id {
            Some(id) => tx.get_permit(id).await?,
            None => None,
        };
        let (granted_categories, granted_data_holders) = match &permit {
            Some(p) => (
                p.terms().categories.iter().map(|g| g.value).collect(),
                p.terms()
                    .data_holders
                    .iter()
                    .map(|g| g.value.clone())
                    .collect(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let permit = permit.map(|p| {
            let r = p.record();
            let (measure_since, measure_reason) = match p.state(now) {
                PermitState::Suspended { since, reason } => (Some(since), Some(reason)),
                PermitState::Revoked { at, reason } => (Some(at), Some(reason)),
                PermitState::Expired { at } => (Some(at), None),
                PermitState::Active => (None, None),
            };
            if let Some(since) = measure_since {
                updated_at = updated_at.max(since.min(now));
            }
            PublicPermit {
                permit_id: r.id,
                valid_from: r.valid_from,
                expires_at: r.expires_at,
                status: p.state(now).name(),
                measure_since,
                measure_reason,
            }
        });
        decision = Some(PublicDecision {
            outcome: app.status.as_str(),
            decided_at,
            published_at,
            reasons: app.decision_reason.clone(),
            granted_categories,
            granted_data_holders,
            permit,
            fee: app
                .procedure
                .fee_estimate
                .as_ref()
                .filter(|f| f.accepted_at.is_some())
                .map(|f| PublicFee {
                    currency: f.currency.clone(),
                    total_minor: f.total_minor,
                }),
        });
    } else if matches!(
        app.status,
        ApplicationStatus::Withdrawn | ApplicationStatus::Lapsed
    ) {
        updated_at = app.decided_at.unwrap_or(app.submitted_at);
    }
    let r = app.request;
    Ok(RegisterEntry {
        application_id: app.id,
        kind: r.kind,
        received_at: app.submitted_at,
        title: r.title,
        applicant_organisation: r.organisation,
        public_body: r.public_body,
        purposes: r.purposes,
        categories: r.categories,
        data_holders: r.data_holders,
        member_states: r.member_states,
        requested_period_start: r.period_start,
        requested_period_end: r.period_end,
        status,
        extended_months: app.procedure.extension.as_ref().map(|e| e.months),
        decision,
        updated_at,
    })
}

/// The register's counts per public state, under the small-cell rule.
pub async fn summary(tx: &mut dyn Tx, rule: SmallCellRule) -> Result<RegisterSummary, StoreError> {
    let mut by_status = std::collections::BTreeMap::new();
    for (status, n) in tx.count_applications_by_status().await? {
        let key = match status {
            ApplicationStatus::Approved
            | ApplicationStatus::PartiallyApproved
            | ApplicationStatus::Rejected
            | ApplicationStatus::Withdrawn
            | ApplicationStatus::Lapsed => status.as_str(),
            _ => "open",
        };
        *by_status.entry(key).or_insert(0u64) += n;
    }
    Ok(RegisterSummary {
        by_status: by_status
            .into_iter()
            .map(|(k, n)| (k, rule.cell(n)))
            .collect(),
        small_cell_threshold: rule.threshold(),
    })
}
