//! Data permits: reading, the lifecycle (suspend, reinstate, revoke, amend, extend) with
//! optimistic concurrency (ETag / If-Match), and the governance check.

use axum::{
    extract::State,
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    applications::{scope_for, ListParams},
    error::{ApiError, ApiResult, Problem},
    extract::{ApiJson, ApiPath, ApiQuery, Caller},
    AppState,
};
use crate::app::reads::{self, Read};
use crate::federation::Change;
use crate::{
    app::permits::{self, PermitError},
    authz::{Action, Resource},
    store::{PermitVersion, Tx},
};
use ehds_core::domain::{
    application::parse_list,
    audit::AuditSubject,
    check::{CheckOutcome, CheckRequest},
    permit::{Amendment, PermitTerms},
    time::{self, Timestamp},
    ApplicationId, BudgetUnit, DataCategory, DpRequirement, Epsilon, Errors, MemberState, OrgId,
    Permit, PermitId, PermitState, Purpose,
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/permits", get(list))
        .route("/permits/{id}", get(read))
        .route("/permits/{id}/versions", get(versions))
        .route("/permits/{id}/suspend", post(suspend))
        .route("/permits/{id}/reinstate", post(reinstate))
        .route("/permits/{id}/revoke", post(revoke))
        .route("/permits/{id}/amend", post(amend))
        .route("/permits/{id}/extend", post(extend))
        .route("/permits/{id}/check", post(check_permit))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BudgetView {
    pub epsilon_total: f64,
    pub epsilon_spent: f64,
    pub epsilon_remaining: f64,
    pub delta: f64,
    pub unit: BudgetUnit,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PermitView {
    pub id: PermitId,
    pub application_id: ApplicationId,
    pub organisation: OrgId,
    pub principal_investigator: String,
    pub public_body: bool,
    pub issued_at: chrono::DateTime<chrono::Utc>,
    pub valid_from: chrono::DateTime<chrono::Utc>,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub extended_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The state now; `expired` is derived from time.
    pub status: String,
    pub state: PermitState,
    pub terms: PermitTerms,
    pub terms_version: i64,
    /// The value to send back in `If-Match`.
    pub etag: String,
    pub privacy_budget: BudgetView,
}

impl PermitView {
    pub fn new(p: &Permit, now: Timestamp) -> Self {
        let r = p.record();
        let state = p.state(now);
        Self {
            id: r.id,
            application_id: r.application_id,
            organisation: r.organisation.clone(),
            principal_investigator: r.principal_investigator.clone(),
            public_body: r.public_body,
            issued_at: r.issued_at,
            valid_from: r.valid_from,
            expires_at: r.expires_at,
            extended_at: r.extended_at,
            status: state.name().to_owned(),
            state,
            terms: r.terms.clone(),
            terms_version: r.terms_version,
            etag: etag(p),
            privacy_budget: BudgetView {
                epsilon_total: r.terms.privacy_budget.epsilon.value(),
                epsilon_spent: r.epsilon_spent,
                epsilon_remaining: p.epsilon_remaining(),
                delta: r.terms.privacy_budget.delta.value(),
                unit: r.terms.privacy_budget.unit,
            },
        }
    }
}

fn etag(p: &Permit) -> String {
    format!("\"{}\"", p.row_version())
}

fn with_etag(p: &Permit, body: impl Serialize) -> Response {
    let mut response = Json(body).into_response();
    if let Ok(v) = HeaderValue::from_str(&etag(p)) {
        response.headers_mut().insert(header::ETAG, v);
    }
    response
}

pub async fn load_permit(tx: &mut dyn Tx, id: PermitId, action: Action) -> ApiResult<Permit> {
    tx.get_permit(id).await?.ok_or_else(|| {
        ApiError::not_found("permit", id)
            .action(action)
            .on(AuditSubject::Permit(id))
    })
}

/// List the permits the caller may see.
#[utoipa::path(get, path = "/v1/permits", tag = "permits", params(ListParams), security(("bearer" = [])),
    responses((status = 200, body = Vec<PermitView>)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<Vec<PermitView>>> {
    state.authorize(&caller, Action::PermitList, &Resource::Service)?;
    let page = params.page()?;
    let now = time::now();
    let mut tx = state.store.begin().await?;
    let rows = tx.list_permits(&scope_for(&caller), page).await?;
    let visible = super::list_visible(
        &state,
        &caller,
        (Action::PermitList, Action::PermitRead),
        AuditSubject::Permits,
        tx,
        rows,
        |p| Resource::Permit(p),
        |p| PermitView::new(&p, now),
    )
    .await?;
    Ok(Json(visible))
}

/// Read one permit. The `ETag` header carries its version for `If-Match`.
#[utoipa::path(get, path = "/v1/permits/{id}", tag = "permits", security(("bearer" = [])),
    params(("id" = String, Path, description = "Permit id")),
    responses((status = 200, body = PermitView), (status = 404, body = Problem)))]
pub async fn read(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<PermitId>,
) -> ApiResult<Response> {
    let mut tx = state.store.begin().await?;
    let p = load_permit(&mut *tx, id, Action::PermitRead).await?;
    state
        .authorize(&caller, Action::PermitRead, &Resource::Permit(&p))
        .map_err(|e| e.on(AuditSubject::Permit(id)))?;
    let read = Read::of(Action::PermitRead, AuditSubject::Permit(id)).under(id);
    reads::record_read(&mut *tx, &caller.requester(), read).await?;
    tx.commit().await?;
    Ok(with_etag(&p, PermitView::new(&p, time::now())))
}

/// Every version of the permit's terms, oldest first.
#[utoipa::path(get, path = "/v1/permits/{id}/versions", tag = "permits", security(("bearer" = [])),
    params(("id" = String, Path, description = "Permit id")),
    responses((status = 200, body = Vec<PermitVersion>), (status = 404, body = Problem)))]
pub async fn versions(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<PermitId>,
) -> ApiResult<Json<Vec<PermitVersion>>> {
    let mut tx = state.store.begin().await?;
    let p = load_permit(&mut *tx, id, Action::PermitVersions).await?;
    state
        .authorize(&caller, Action::PermitVersions, &Resource::Permit(&p))
        .map_err(|e| e.on(AuditSubject::Permit(id)))?;
    let versions = tx.list_permit_versions(id).await?;
    let read = Read::of(Action::PermitVersions, AuditSubject::Permit(id)).under(id);
    reads::record_read(&mut *tx, &caller.requester(), read).await?;
    tx.commit().await?;
    Ok(Json(versions))
}

/// Refuses a change made against an outdated read of the permit.
fn check_if_match(headers: &HeaderMap, p: &Permit, required: bool) -> ApiResult<()> {
    match headers
        .get(header::IF_MATCH)
        .map(|v| v.to_str().unwrap_or(""))
    {
        None if required => Err(ApiError::new(
            StatusCode::PRECONDITION_REQUIRED,
            "precondition_required",
            "send the permit's ETag in `If-Match` to change its terms",
        )),
        None => Ok(()),
        Some(v) if v.trim() == "*" || v.split(',').any(|t| t.trim() == etag(p)) => Ok(()),
        Some(_) => Err(ApiError::new(
            StatusCode::PRECONDITION_FAILED,
            "stale_etag",
            "the permit changed since it was read",
        )
        .with("current_etag", json!(etag(p)))),
    }
}

/// Loads and authorises the permit and checks `If-Match`: the common start of every
/// transition. Returns the transaction, the permit and the time of the change.
async fn begin_transition(
    state: &AppState,
    caller: &Caller,
    id: PermitId,
    headers: &HeaderMap,
    action: Action,
    if_match_required: bool,
) -> ApiResult<(Box<dyn Tx>, Permit, Timestamp)> {
    let mut tx = state.store.begin().await?;
    let permit = load_permit(&mut *tx, id, action).await?;
    state
        .authorize(caller, action, &Resource::Permit(&permit))
        .map_err(tagged(action, id))?;
    check_if_match(headers, &permit, if_match_required).map_err(tagged(action, id))?;
    Ok((tx, permit, time::now()))
}

/// Commits a transition, wakes the round loop (the permit's studies answer to it before their
/// next step) and answers with the permit after it.
async fn finish_transition(
    state: &AppState,
    tx: Box<dyn Tx>,
    permit: &Permit,
    now: Timestamp,
) -> ApiResult<Response> {
    tx.commit().await?;
    state.federation.changed(Change::Permit);
    Ok(with_etag(permit, PermitView::new(permit, now)))
}

/// Tags a refusal with the action and the permit it was about.
fn tagged(action: Action, id: PermitId) -> impl Fn(ApiError) -> ApiError {
    move |e| e.action(action).on(AuditSubject::Permit(id))
}

/// The refusal of a transition's service: a refused transition or change is tagged with the
/// action and the permit; a store failure is not.
fn refused(action: Action, id: PermitId) -> impl Fn(PermitError) -> ApiError {
    move |e| match e {
        PermitError::Transition(t) => tagged(action, id)(ApiError::conflict(t)),
        PermitError::Invalid(errors) => tagged(action, id)(ApiError::invalid(errors)),
        PermitError::Store(e) => e.into(),
    }
}

fn required_reason(reason: &str) -> ApiResult<String> {
    let r = reason.trim();
    if r.is_empty() {
        return Err(ApiError::field(
            "reason",
            "reason_required",
            "a reason is required",
        ));
    }
    ehds_core::domain::within_length("reason", r, ehds_core::domain::MAX_REASON_CHARS)
        .map_err(|e| ApiError::invalid(vec![e]))?;
    Ok(r.to_owned())
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasonRequest {
    pub reason: String,
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OptionalReason {
    pub reason: Option<String>,
}

/// Suspend an active permit while a non-compliance procedure runs (Art. 63).
#[utoipa::path(post, path = "/v1/permits/{id}/suspend", tag = "permits", request_body = ReasonRequest,
    security(("bearer" = [])), params(("id" = String, Path, description = "Permit id"),
        ("If-Match" = Option<String>, Header, description = "ETag from the last read")),
    responses((status = 200, body = PermitView), (status = 409, body = Problem), (status = 412, body = Problem)))]
pub async fn suspend(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<PermitId>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<ReasonRequest>,
) -> ApiResult<Response> {
    let action = Action::PermitSuspend;
    let (mut tx, mut permit, now) =
        begin_transition(&state, &caller, id, &headers, action, false).await?;
    let reason = required_reason(&req.reason).map_err(tagged(action, id))?;
    permits::suspend(&mut *tx, &caller.requester(), &mut permit, reason, now)
        .await
        .map_err(refused(action, id))?;
    finish_transition(&state, tx, &permit, now).await
}

/// Lift a suspension.
#[utoipa::path(post, path = "/v1/permits/{id}/reinstate", tag = "permits", request_body = OptionalReason,
    security(("bearer" = [])), params(("id" = String, Path, description = "Permit id"),
        ("If-Match" = Option<String>, Header, description = "ETag from the last read")),
    responses((status = 200, body = PermitView), (status = 409, body = Problem), (status = 412, body = Problem)))]
pub async fn reinstate(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<PermitId>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<OptionalReason>,
) -> ApiResult<Response> {
    let action = Action::PermitReinstate;
    let (mut tx, mut permit, now) =
        begin_transition(&state, &caller, id, &headers, action, false).await?;
    permits::reinstate(&mut *tx, &caller.requester(), &mut permit, req.reason, now)
        .await
        .map_err(refused(action, id))?;
    finish_transition(&state, tx, &permit, now).await
}

/// Revoke a permit (Art. 63); final.
#[utoipa::path(post, path = "/v1/permits/{id}/revoke", tag = "permits", request_body = ReasonRequest,
    security(("bearer" = [])), params(("id" = String, Path, description = "Permit id"),
        ("If-Match" = Option<String>, Header, description = "ETag from the last read")),
    responses((status = 200, body = PermitView), (status = 409, body = Problem), (status = 412, body = Problem)))]
pub async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<PermitId>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<ReasonRequest>,
) -> ApiResult<Response> {
    let action = Action::PermitRevoke;
    let (mut tx, mut permit, now) =
        begin_transition(&state, &caller, id, &headers, action, false).await?;
    let reason = required_reason(&req.reason).map_err(tagged(action, id))?;
    permits::revoke(&mut *tx, &caller.requester(), &mut permit, reason, now)
        .await
        .map_err(refused(action, id))?;
    finish_transition(&state, tx, &permit, now).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AmendRequest {
    pub purposes: Option<Vec<String>>,
    pub categories: Option<Vec<String>>,
    pub data_holders: Option<Vec<String>>,
    pub member_states: Option<Vec<String>>,
    pub epsilon: Option<f64>,
    pub conditions: Option<String>,
    /// The privacy requirement for the permit's studies from now on: `client`, `record`,
    /// `client_or_record` or `none_allowed`. Studies already accepted keep their plan.
    pub dp_requirement: Option<String>,
    /// Whether the permit's studies must use secure aggregation from now on. Studies already
    /// accepted keep how they run.
    pub require_secure_aggregation: Option<bool>,
    pub reason: String,
}

/// Amend the permit's terms; the previous terms are kept as a version. Requires `If-Match`.
#[utoipa::path(post, path = "/v1/permits/{id}/amend", tag = "permits", request_body = AmendRequest,
    security(("bearer" = [])), params(("id" = String, Path, description = "Permit id"),
        ("If-Match" = String, Header, description = "ETag from the last read")),
    responses((status = 200, body = PermitView), (status = 409, body = Problem), (status = 412, body = Problem),
        (status = 422, body = Problem), (status = 428, body = Problem)))]
pub async fn amend(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<PermitId>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<AmendRequest>,
) -> ApiResult<Response> {
    let action = Action::PermitAmend;
    let tag = tagged(action, id);
    let (mut tx, mut permit, now) =
        begin_transition(&state, &caller, id, &headers, action, true).await?;
    let reason = required_reason(&req.reason).map_err(&tag)?;
    let change = {
        let mut e = Errors::default();
        let change = Amendment {
            purposes: req
                .purposes
                .as_deref()
                .map(|v| parse_list(&mut e, "purposes", v, Purpose::parse)),
            categories: req
                .categories
                .as_deref()
                .map(|v| parse_list(&mut e, "categories", v, DataCategory::parse)),
            data_holders: req
                .data_holders
                .as_deref()
                .map(|v| parse_list(&mut e, "data_holders", v, OrgId::parse)),
            member_states: req
                .member_states
                .as_deref()
                .map(|v| parse_list(&mut e, "member_states", v, MemberState::parse)),
            epsilon: req
                .epsilon
                .and_then(|v| e.take("epsilon", Epsilon::parse(v))),
            conditions: req.conditions.clone(),
            dp_requirement: req.dp_requirement.as_deref().and_then(|v| {
                let parsed = DpRequirement::parse(v);
                if parsed.is_none() {
                    e.push(
                        "dp_requirement",
                        "unknown_dp_requirement",
                        format!(
                            "`{v}` is not one of `client`, `record`, `client_or_record`, `none_allowed`"
                        ),
                    );
                }
                parsed
            }),
            require_secure_aggregation: req.require_secure_aggregation,
        };
        if let Some(c) = &req.conditions {
            if let Err(f) = ehds_core::domain::within_length(
                "conditions",
                c,
                ehds_core::domain::MAX_CONDITIONS_CHARS,
            ) {
                e.0.push(f);
            }
        }
        if !e.0.is_empty() {
            return Err(tag(ApiError::invalid(e.0)));
        }
        change
    };
    permits::amend(
        &mut *tx,
        &caller.requester(),
        &mut permit,
        change,
        reason,
        now,
    )
    .await
    .map_err(refused(action, id))?;
    finish_transition(&state, tx, &permit, now).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtendRequest {
    pub expires_at: DateTime<Utc>,
    pub reason: String,
}

/// Extend the permit once, at least a month before expiry (Art. 68(13)). Requires `If-Match`.
#[utoipa::path(post, path = "/v1/permits/{id}/extend", tag = "permits", request_body = ExtendRequest,
    security(("bearer" = [])), params(("id" = String, Path, description = "Permit id"),
        ("If-Match" = String, Header, description = "ETag from the last read")),
    responses((status = 200, body = PermitView), (status = 409, body = Problem), (status = 412, body = Problem),
        (status = 422, body = Problem), (status = 428, body = Problem)))]
pub async fn extend(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<PermitId>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<ExtendRequest>,
) -> ApiResult<Response> {
    let action = Action::PermitExtend;
    let (mut tx, mut permit, now) =
        begin_transition(&state, &caller, id, &headers, action, true).await?;
    let reason = required_reason(&req.reason).map_err(tagged(action, id))?;
    let expires_at = time::normalise(req.expires_at);
    permits::extend(
        &mut *tx,
        &caller.requester(),
        &mut permit,
        expires_at,
        reason,
        now,
    )
    .await
    .map_err(refused(action, id))?;
    finish_transition(&state, tx, &permit, now).await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckBody {
    pub purpose: String,
    #[serde(default)]
    pub categories: Vec<String>,
    #[serde(default)]
    pub data_holders: Vec<String>,
    /// Privacy budget the processing would spend.
    pub epsilon: Option<f64>,
}

impl CheckBody {
    pub fn parse(&self) -> ApiResult<CheckRequest> {
        let mut e = Errors::default();
        let purpose = e.take("purpose", Purpose::parse(&self.purpose));
        let mut list = |field: &str, raw: &[String]| {
            raw.iter()
                .enumerate()
                .filter_map(|(i, s)| e.take(format!("{field}[{i}]"), OrgId::parse(s)))
                .collect::<Vec<_>>()
        };
        let data_holders = list("data_holders", &self.data_holders);
        let categories = self
            .categories
            .iter()
            .enumerate()
            .filter_map(|(i, s)| e.take(format!("categories[{i}]"), DataCategory::parse(s)))
            .collect();
        let epsilon = self
            .epsilon
            .and_then(|v| e.take("epsilon", Epsilon::parse(v)));
        e.into_result(|| CheckRequest {
            purpose: purpose.expect("checked"),
            categories,
            data_holders,
            epsilon,
        })
        .map_err(ApiError::invalid)
    }
}

/// May this permit cover this processing now? Answers with every failed condition. Federated
/// rounds call the same function.
#[utoipa::path(post, path = "/v1/permits/{id}/check", tag = "permits", request_body = CheckBody,
    security(("bearer" = [])), params(("id" = String, Path, description = "Permit id")),
    responses((status = 200, body = CheckOutcome), (status = 422, body = Problem)))]
pub async fn check_permit(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<PermitId>,
    ApiJson(body): ApiJson<CheckBody>,
) -> ApiResult<Json<CheckOutcome>> {
    let action = Action::PermitCheck;
    let mut tx = state.store.begin().await?;
    let permit = load_permit(&mut *tx, id, action).await?;
    let tag = tagged(action, id);
    state
        .authorize(&caller, action, &Resource::Permit(&permit))
        .map_err(&tag)?;
    let req = body.parse().map_err(&tag)?;
    let outcome =
        permits::check_processing(&mut *tx, &caller.requester(), &permit, &req, time::now())
            .await?;
    tx.commit().await?;
    Ok(Json(outcome))
}
