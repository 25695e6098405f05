//! Data access applications (Art. 67) and the HDAB's decision (Art. 68).

use axum::{
    extract::State,
    http::{header, StatusCode},
    response::IntoResponse,
    routing::{get, post},
    Json, Router,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    error::{ApiError, ApiResult, Problem},
    extract::{ApiJson, ApiPath, ApiQuery, Caller},
    permits::PermitView,
    AppState,
};
use crate::{
    app::applications::{self, DecideError, Decision, WithdrawError},
    authz::{Action, Resource},
    store::{Page, Scope},
};
use ehds_core::domain::{
    application::{ApplicationRequest, ApplicationTransitionError},
    audit::AuditSubject,
    audit_details::Listed,
    time, Application, ApplicationId, DpRequirement, NewApplication,
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/applications", post(create).get(list))
        .route("/applications/{id}", get(read))
        .route("/applications/{id}/decision", post(decide))
        .route("/applications/{id}/withdraw", post(withdraw))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// At most this many items (1-500, default 100).
    pub limit: Option<i64>,
    pub offset: Option<i64>,
}

impl ListParams {
    pub fn page(&self) -> ApiResult<Page> {
        let limit = self.limit.unwrap_or(100);
        let offset = self.offset.unwrap_or(0);
        if !(1..=500).contains(&limit) || offset < 0 {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                "limit must be within 1-500 and offset non-negative",
            ));
        }
        Ok(Page { limit, offset })
    }
}

/// The rows a caller may list: officers and admins all, researchers their organisation's, data
/// holders those naming them. Cedar still decides on each row.
pub fn scope_for(caller: &Caller) -> Scope {
    use crate::auth::Role;
    let p = &caller.principal;
    match (
        &p.organisation,
        p.has(Role::HdabOfficer) || p.has(Role::Admin),
    ) {
        (_, true) => Scope::All,
        (Some(org), false) if p.has(Role::Researcher) => Scope::Organisation(org.clone()),
        (Some(org), false) => Scope::DataHolder(org.clone()),
        (None, false) => Scope::Nothing,
    }
}

fn location(id: ApplicationId) -> [(header::HeaderName, String); 1] {
    [(header::LOCATION, format!("/v1/applications/{id}"))]
}

/// Submit a data access application.
#[utoipa::path(post, path = "/v1/applications", tag = "applications", request_body = ApplicationRequest,
    security(("bearer" = [])),
    responses((status = 201, body = Application), (status = 422, body = Problem), (status = 403, body = Problem)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<ApplicationRequest>,
) -> ApiResult<impl IntoResponse> {
    state.authorize(&caller, Action::ApplicationCreate, &Resource::Service)?;
    let action = Action::ApplicationCreate;
    let org = caller.principal.organisation.clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "organisation_required",
            "the caller's token names no organisation",
        )
        .action(action)
    })?;
    let now = time::now();
    let request =
        NewApplication::parse(req, &org, now).map_err(|e| ApiError::invalid(e).action(action))?;
    let mut tx = state.store.begin().await?;
    let app = applications::create(&mut *tx, &caller.requester(), request, now).await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, location(app.id), Json(app)))
}

/// List the applications the caller may see.
#[utoipa::path(get, path = "/v1/applications", tag = "applications", params(ListParams), security(("bearer" = [])),
    responses((status = 200, body = Vec<Application>)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<Vec<Application>>> {
    state.authorize(&caller, Action::ApplicationList, &Resource::Service)?;
    let page = params.page()?;
    let mut tx = state.store.begin().await?;
    let mut visible = Vec::new();
    for app in tx.list_applications(&scope_for(&caller), page).await? {
        if state.allows(
            &caller,
            Action::ApplicationRead,
            &Resource::Application(&app),
        )? {
            visible.push(app);
        }
    }
    tx.append_audit(
        caller
            .audit(Action::ApplicationList, AuditSubject::Applications)
            .details(&Listed {
                returned: visible.len(),
            }),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(visible))
}

/// Read one application.
#[utoipa::path(get, path = "/v1/applications/{id}", tag = "applications", security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = Application), (status = 404, body = Problem)))]
pub async fn read(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
) -> ApiResult<Json<Application>> {
    let mut tx = state.store.begin().await?;
    let app = load(&mut *tx, id, Action::ApplicationRead).await?;
    state
        .authorize(
            &caller,
            Action::ApplicationRead,
            &Resource::Application(&app),
        )
        .map_err(|e| e.on(AuditSubject::Application(id)))?;
    tx.append_audit(caller.audit(Action::ApplicationRead, AuditSubject::Application(id)))
        .await?;
    tx.commit().await?;
    Ok(Json(app))
}

async fn load(
    tx: &mut dyn crate::store::Tx,
    id: ApplicationId,
    action: Action,
) -> ApiResult<Application> {
    tx.get_application(id).await?.ok_or_else(|| {
        ApiError::not_found("application", id)
            .action(action)
            .on(AuditSubject::Application(id))
    })
}

#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    Approve,
    Reject,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    pub decision: DecisionKind,
    /// Required for a rejection (Art. 68(9)); an optional note for an approval.
    pub reason: Option<String>,
    /// Conditions attached to the permit.
    pub conditions: Option<String>,
    /// Whether the HDAB grants the Art. 71(4) exception the application asked for.
    #[serde(default)]
    pub grant_optout_exception: bool,
    /// Which privacy plans studies under the permit may use: `client`, `record`,
    /// `client_or_record` (the default) or `none_allowed` (studies may also run without formal
    /// DP; the output check still applies). Approval only.
    #[serde(default)]
    pub dp_requirement: DpRequirement,
    /// Studies under the permit must use secure aggregation, so that the gateway never sees
    /// one holder's update (default false). Approval only.
    #[serde(default)]
    pub require_secure_aggregation: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DecisionResponse {
    pub application: Application,
    pub permit: Option<PermitView>,
}

/// Approve (issuing a permit) or reject (with reasons) a submitted application.
#[utoipa::path(post, path = "/v1/applications/{id}/decision", tag = "applications", request_body = DecisionRequest,
    security(("bearer" = [])), params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = DecisionResponse), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn decide(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
    ApiJson(req): ApiJson<DecisionRequest>,
) -> ApiResult<Json<DecisionResponse>> {
    let action = Action::ApplicationDecide;
    let mut tx = state.store.begin().await?;
    let mut app = load(&mut *tx, id, action).await?;
    state
        .authorize(&caller, action, &Resource::Application(&app))
        .map_err(|e| e.on(AuditSubject::Application(id)))?;
    let now = time::now();
    let lengths: Vec<_> = [
        req.reason.as_deref().map(|r| {
            ehds_core::domain::within_length(
                "reason",
                r.trim(),
                ehds_core::domain::MAX_REASON_CHARS,
            )
        }),
        req.conditions.as_deref().map(|c| {
            ehds_core::domain::within_length(
                "conditions",
                c,
                ehds_core::domain::MAX_CONDITIONS_CHARS,
            )
        }),
    ]
    .into_iter()
    .flatten()
    .filter_map(Result::err)
    .collect();
    if !lengths.is_empty() {
        return Err(ApiError::invalid(lengths)
            .action(action)
            .on(AuditSubject::Application(id)));
    }
    let reason = req
        .reason
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty());
    let decision = match req.decision {
        DecisionKind::Reject => Decision::Reject,
        DecisionKind::Approve => Decision::Approve {
            grant_optout_exception: req.grant_optout_exception,
            conditions: req.conditions,
            dp_requirement: req.dp_requirement,
            require_secure_aggregation: req.require_secure_aggregation,
        },
    };
    let permit = applications::decide(
        &mut *tx,
        &caller.requester(),
        &mut app,
        decision,
        reason,
        now,
    )
    .await
    .map_err(|e| match e {
        DecideError::ReasonRequired => tagged(action, id)(ApiError::field(
            "reason",
            "reason_required",
            "a rejection must state its reasons (Art. 68(9))",
        )),
        DecideError::ExceptionNotRequested => tagged(action, id)(ApiError::field(
            "grant_optout_exception",
            "optout_exception_not_requested",
            "the application did not ask for the Art. 71(4) exception",
        )),
        DecideError::PeriodEnded => tagged(action, id)(ApiError::field(
            "requested_period",
            "period_in_past",
            "the requested period has already ended",
        )),
        DecideError::Transition(e) => invalid_transition(action, id, e),
        DecideError::Store(e) => e.into(),
    })?;
    tx.commit().await?;
    Ok(Json(DecisionResponse {
        application: app,
        permit: permit.map(|p| PermitView::new(&p, now)),
    }))
}

/// Tags a refusal with the action and the application it was about.
fn tagged(action: Action, id: ApplicationId) -> impl Fn(ApiError) -> ApiError {
    move |e| e.action(action).on(AuditSubject::Application(id))
}

/// The refusal of a transition the application's state does not allow.
fn invalid_transition(
    action: Action,
    id: ApplicationId,
    e: ApplicationTransitionError,
) -> ApiError {
    tagged(action, id)(
        ApiError::new(StatusCode::CONFLICT, "invalid_transition", e.to_string())
            .with("current_state", json!(e.current.as_str())),
    )
}

/// Withdraw one's own application before it is decided.
#[utoipa::path(post, path = "/v1/applications/{id}/withdraw", tag = "applications", security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = Application), (status = 409, body = Problem)))]
pub async fn withdraw(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
) -> ApiResult<Json<Application>> {
    let action = Action::ApplicationWithdraw;
    let mut tx = state.store.begin().await?;
    let mut app = load(&mut *tx, id, action).await?;
    state
        .authorize(&caller, action, &Resource::Application(&app))
        .map_err(|e| e.on(AuditSubject::Application(id)))?;
    applications::withdraw(&mut *tx, &caller.requester(), &mut app, time::now())
        .await
        .map_err(|e| match e {
            WithdrawError::Transition(e) => invalid_transition(action, id, e),
            WithdrawError::Store(e) => e.into(),
        })?;
    tx.commit().await?;
    Ok(Json(app))
}
