//! Statistics answered by the federation (Art. 69): a researcher asks a query under a permit
//! (a data request's declared queries start when it is granted), reads the released answer;
//! an HDAB officer releases or withholds what the output checker flagged; the holders' nodes
//! fetch their parts and return their partials.

use axum::{
    extract::{DefaultBodyLimit, State},
    http::{header, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use serde::{Deserialize, Serialize};

use super::{
    applications::{scope_for, ListParams},
    error::{ApiError, ApiResult, Problem},
    extract::{ApiJson, ApiPath, ApiQuery, Caller},
    permits::load_permit,
    AppState,
};
use crate::app::reads::{self, Read};
use crate::{
    app::statistics::{self, ResultError, ReviewError, RunError, RunRequest},
    authz::{Action, Resource},
    federation::Change,
    store::{RunFilter, StoredRun, Tx},
};
use ehds_core::{
    domain::{
        audit::{AuditAction, AuditSubject},
        statistics::{
            Answer, Charge, NotCounted, Review, ReviewDecision, RunStatus, StatisticsRun,
        },
        time, ApplicationId, OrgId, PermitId, Purpose, StatisticsRunId, StatisticsTaskId,
    },
    wire::{StatisticsResultBody, StatisticsTask},
};
use ehds_stats::{output_check::DifferencingRisk, QueryForm, Release};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/permits/{id}/statistics", post(create))
        .route("/statistics", get(list))
        .route("/statistics/{id}", get(read))
        .route("/statistics/{id}/review", post(review))
        .route("/node/statistics-tasks", get(statistics_tasks))
        .route(
            "/node/statistics-tasks/{id}/result",
            // a partial is a few numbers per cell: at most 10,000 cells of histograms or
            // survival intervals
            post(statistics_result).layer(DefaultBodyLimit::max(16 * 1024 * 1024)),
        )
}

/// The body of `POST /v1/permits/{id}/statistics`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StatisticsRunRequest {
    /// The Art. 53 purpose the statistics serve (one of the permit's).
    pub purpose: String,
    /// The feature specification defining the query's variables.
    #[schema(value_type = Object)]
    pub feature_spec: serde_json::Value,
    pub query: QueryForm,
    /// The holders to ask (all of the permit's when absent).
    #[serde(default)]
    pub data_holders: Vec<String>,
}

/// A run as the API shows it. `answer` is present once released (only the noisy values under
/// differential privacy); `checked` is the output checker's verdict, shown to HDAB officers
/// while they decide on a flagged answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StatisticsRunView {
    pub id: StatisticsRunId,
    pub permit_id: PermitId,
    /// The Art. 69 data request the run answers.
    pub application_id: Option<ApplicationId>,
    pub organisation: String,
    pub requested_by: String,
    pub purpose: Purpose,
    pub statistic: String,
    pub query: QueryForm,
    pub status: RunStatus,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// The holders' nodes answer by then.
    pub deadline: chrono::DateTime<chrono::Utc>,
    /// Art. 69(4): when the answer to the data request is due.
    pub answer_due: Option<chrono::DateTime<chrono::Utc>>,
    pub overdue: bool,
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Differential privacy charged to the permit's budget.
    pub charge: Option<Charge>,
    pub holders_asked: usize,
    pub holders_answered: Option<usize>,
    pub holders_missing: Vec<OrgId>,
    pub not_counted: Option<NotCounted>,
    /// Why the answer needed an officer, or was withheld.
    pub flags: Vec<String>,
    pub differencing: Vec<DifferencingRisk>,
    pub review: Option<Review>,
    pub answer: Option<Answer>,
    pub checked: Option<Release>,
}

impl StatisticsRunView {
    fn new(run: &StatisticsRun, officer: bool, now: time::Timestamp) -> Self {
        let o = run.outcome.as_ref();
        Self {
            id: run.id,
            permit_id: run.permit_id,
            application_id: run.application_id,
            organisation: run.organisation.to_string(),
            requested_by: run.requested_by.clone(),
            purpose: run.purpose,
            statistic: run.query.statistic().name().to_owned(),
            query: run.query.to_form(),
            status: run.status,
            created_at: run.created_at,
            deadline: run.deadline,
            answer_due: run.answer_due,
            overdue: run.overdue(now),
            finished_at: run.finished_at,
            charge: run.charge,
            holders_asked: run.data_holders.len(),
            holders_answered: o.map(|o| o.holders_answered),
            holders_missing: o.map(|o| o.holders_missing.clone()).unwrap_or_default(),
            not_counted: o.map(|o| o.not_counted.clone()),
            flags: o.map(|o| o.flags.clone()).unwrap_or_default(),
            differencing: o.map(|o| o.differencing.clone()).unwrap_or_default(),
            review: run.review.clone(),
            answer: run.answer(),
            checked: o
                .filter(|_| officer && run.status == RunStatus::UnderReview)
                .map(|o| o.release.clone()),
        }
    }
}

fn is_officer(caller: &Caller) -> bool {
    caller.principal.has(crate::auth::Role::HdabOfficer)
}

/// Ask the federation for statistics under a permit: the governance check of a round
/// (purpose, categories, holders, state, budget), then every holder's node computes its part
/// over its opt-out-filtered records; the answer is released after output checking. Under a
/// permit issued for an Art. 69 data request, only the request's declared queries run.
#[utoipa::path(post, path = "/v1/permits/{id}/statistics", tag = "statistics",
    request_body = StatisticsRunRequest, security(("bearer" = [])),
    params(("id" = String, Path, description = "Permit id")),
    responses((status = 201, body = StatisticsRunView), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 422, body = Problem)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(permit_id): ApiPath<PermitId>,
    ApiJson(req): ApiJson<StatisticsRunRequest>,
) -> ApiResult<Response> {
    let action = Action::StatisticsRequest;
    let tag = |e: ApiError| e.action(action).on(AuditSubject::Permit(permit_id));
    let now = time::now();
    let mut tx = state.store.begin().await?;
    tx.take_write_order().await?;
    let mut permit = load_permit(&mut *tx, permit_id, action).await?;
    state
        .authorize(&caller, action, &Resource::Permit(&permit))
        .map_err(tag)?;
    let mut errors = ehds_core::domain::Errors::default();
    let purpose = errors.take("purpose", Purpose::parse(&req.purpose));
    let holders: Vec<OrgId> = req
        .data_holders
        .iter()
        .enumerate()
        .filter_map(|(i, h)| errors.take(format!("data_holders[{i}]"), OrgId::parse(h)))
        .collect();
    let Some(purpose) = purpose.filter(|_| errors.0.is_empty()) else {
        return Err(tag(ApiError::invalid(errors.0)));
    };
    let run = statistics::start(
        &mut *tx,
        &caller.requester(),
        &mut permit,
        RunRequest {
            purpose,
            query: req.query,
            feature_spec: req.feature_spec,
            data_holders: holders,
        },
        None,
        &state.procedure.statistics,
        now,
    )
    .await
    .map_err(|e| run_refusal(e, tag))?;
    tx.commit().await?;
    state.federation.changed(Change::Statistics);
    let view = StatisticsRunView::new(&run, is_officer(&caller), now);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, format!("/v1/statistics/{}", run.id))],
        Json(view),
    )
        .into_response())
}

/// The refusal of a run that was not started.
pub(crate) fn run_refusal(e: RunError, tag: impl Fn(ApiError) -> ApiError) -> ApiError {
    match e {
        RunError::Invalid(errors) => tag(ApiError::invalid(errors)),
        RunError::Denied(reasons) => tag(
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "statistics_not_permitted",
                format!(
                    "the permit does not cover these statistics ({} reasons)",
                    reasons.len()
                ),
            )
            .with_reasons(&reasons),
        ),
        RunError::NotDeclared => tag(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "query_not_declared",
            "the permit was issued for a data request: only the statistics it declared are answered under it",
        )),
        RunError::Store(e) => e.into(),
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunListParams {
    #[param(format = Uuid)]
    pub permit_id: Option<String>,
    #[param(format = Uuid)]
    pub application_id: Option<String>,
    /// Comma-separated states.
    pub status: Option<String>,
    /// At most this many items (1-500, default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// List the statistics runs the caller may see, newest first.
#[utoipa::path(get, path = "/v1/statistics", tag = "statistics", params(RunListParams),
    security(("bearer" = [])),
    responses((status = 200, body = Vec<StatisticsRunView>), (status = 400, body = Problem)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<RunListParams>,
) -> ApiResult<Json<Vec<StatisticsRunView>>> {
    let action = Action::StatisticsList;
    state.authorize(&caller, action, &Resource::Service)?;
    let bad = |m: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", m).action(action);
    let page = ListParams {
        limit: params.limit,
        offset: params.offset,
    }
    .page()
    .map_err(|e| e.action(action))?;
    let mut filter = RunFilter::default();
    if let Some(p) = &params.permit_id {
        filter.permit_id = Some(PermitId::parse(p).map_err(|(_, m)| bad(m))?);
    }
    if let Some(a) = &params.application_id {
        filter.application_id = Some(ApplicationId::parse(a).map_err(|(_, m)| bad(m))?);
    }
    if let Some(list) = &params.status {
        for s in list.split(',').filter(|s| !s.is_empty()) {
            filter.statuses.push(
                RunStatus::parse(s).ok_or_else(|| bad(format!("`{s}` is not a run status")))?,
            );
        }
    }
    let now = time::now();
    let officer = is_officer(&caller);
    let mut tx = state.store.begin().await?;
    let mut visible = Vec::new();
    for StoredRun { run, .. } in tx
        .list_statistics_runs(&scope_for(&caller), &filter, page)
        .await?
    {
        if state.allows(
            &caller,
            Action::StatisticsRead,
            &Resource::StatisticsRun(&run),
        )? {
            visible.push(StatisticsRunView::new(&run, officer, now));
        }
    }
    let subject = AuditSubject::StatisticsRuns;
    reads::record_list(
        &mut *tx,
        &caller.requester(),
        action,
        subject,
        visible.len(),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(visible))
}

async fn authorized_run(
    state: &AppState,
    caller: &Caller,
    tx: &mut dyn Tx,
    id: StatisticsRunId,
    action: Action,
) -> ApiResult<StoredRun> {
    let stored = tx.get_statistics_run(id).await?.ok_or_else(|| {
        ApiError::not_found("statistics run", id)
            .action(action)
            .on(AuditSubject::StatisticsRun(id))
    })?;
    state
        .authorize(caller, action, &Resource::StatisticsRun(&stored.run))
        .map_err(|e| e.on(AuditSubject::StatisticsRun(id)))?;
    Ok(stored)
}

/// Read one run, with its answer once released.
#[utoipa::path(get, path = "/v1/statistics/{id}", tag = "statistics", security(("bearer" = [])),
    params(("id" = String, Path, description = "Statistics run id")),
    responses((status = 200, body = StatisticsRunView), (status = 403, body = Problem),
        (status = 404, body = Problem)))]
pub async fn read(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<StatisticsRunId>,
) -> ApiResult<Json<StatisticsRunView>> {
    let action = Action::StatisticsRead;
    let mut tx = state.store.begin().await?;
    let StoredRun { run, .. } = authorized_run(&state, &caller, &mut *tx, id, action).await?;
    let read = Read::of(action, AuditSubject::StatisticsRun(id)).under(run.permit_id);
    reads::record_read(&mut *tx, &caller.requester(), read).await?;
    tx.commit().await?;
    Ok(Json(StatisticsRunView::new(
        &run,
        is_officer(&caller),
        time::now(),
    )))
}

/// The body of `POST /v1/statistics/{id}/review`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewRequest {
    /// `release` (what the checker let out; suppressed values stay suppressed) or `withhold`.
    pub decision: ReviewDecision,
    /// Why: recorded with the decision and in the audit trail.
    pub justification: String,
}

/// An officer's decision on an answer the output checker flagged.
#[utoipa::path(post, path = "/v1/statistics/{id}/review", tag = "statistics",
    request_body = ReviewRequest, security(("bearer" = [])),
    params(("id" = String, Path, description = "Statistics run id")),
    responses((status = 200, body = StatisticsRunView), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn review(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<StatisticsRunId>,
    ApiJson(req): ApiJson<ReviewRequest>,
) -> ApiResult<Json<StatisticsRunView>> {
    let action = Action::StatisticsReview;
    let tag = |e: ApiError| e.action(action).on(AuditSubject::StatisticsRun(id));
    let now = time::now();
    let mut tx = state.store.begin().await?;
    tx.take_write_order().await?;
    let stored = authorized_run(&state, &caller, &mut *tx, id, action).await?;
    let mut errors = ehds_core::domain::Errors::default();
    ehds_core::domain::application::non_blank(
        &mut errors,
        "justification",
        &req.justification,
        ehds_core::domain::MAX_REASON_CHARS,
    );
    if !errors.0.is_empty() {
        return Err(tag(ApiError::invalid(errors.0)));
    }
    let run = statistics::review(
        &mut *tx,
        &caller.requester(),
        stored,
        req.decision,
        req.justification,
        now,
    )
    .await
    .map_err(|e| match e {
        ReviewError::State(s) => {
            tag(
                ApiError::new(StatusCode::CONFLICT, "invalid_transition", s.to_string())
                    .with("current_state", serde_json::json!(s.0.as_str())),
            )
        }
        ReviewError::Store(e) => e.into(),
    })?;
    tx.commit().await?;
    Ok(Json(StatisticsRunView::new(&run, true, now)))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatisticsFetchParams {
    /// Seconds to wait for a task when none is ready (long poll; capped by the gateway).
    pub wait: Option<u64>,
    /// At most this many tasks (1-100, default 10).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

/// The caller's open parts of statistics runs. With `wait`, holds the request until one
/// appears or the wait ends.
#[utoipa::path(get, path = "/v1/node/statistics-tasks", tag = "node", params(StatisticsFetchParams),
    security(("bearer" = [])),
    responses((status = 200, body = Vec<StatisticsTask>), (status = 400, body = Problem),
        (status = 403, body = Problem)))]
pub async fn statistics_tasks(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<StatisticsFetchParams>,
) -> ApiResult<Json<Vec<StatisticsTask>>> {
    let action = Action::NodeStatistics;
    state.authorize(&caller, action, &Resource::Service)?;
    let holder = caller
        .principal
        .organisation
        .clone()
        .ok_or_else(|| ApiError::forbidden(action))?;
    let limit = params.limit.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            "limit must be within 1-100",
        )
        .action(action));
    }
    crate::observability::node_seen(&holder);
    let (state_ref, holder_ref) = (&state, &holder);
    let tasks = super::node_tasks::long_poll(
        &state,
        &state.federation.fleet.waiters.tasks,
        params.wait,
        move || async move {
            let mut tx = state_ref.store.begin().await?;
            Ok(statistics::open_tasks(&mut *tx, holder_ref, limit, time::now()).await?)
        },
        |tasks: &Vec<StatisticsTask>| !tasks.is_empty(),
    )
    .await?;
    Ok(Json(tasks))
}

/// A node's part of a run: its partial over its own records. When it is the last part, the
/// gateway pools the parts and checks the output.
#[utoipa::path(post, path = "/v1/node/statistics-tasks/{id}/result", tag = "node",
    request_body = StatisticsResultBody, security(("bearer" = [])),
    params(("id" = String, Path, description = "Statistics task id")),
    responses((status = 204), (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn statistics_result(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<StatisticsTaskId>,
    ApiJson(body): ApiJson<StatisticsResultBody>,
) -> ApiResult<StatusCode> {
    let action = AuditAction::NodeStatisticsResult;
    let tag = |e: ApiError| {
        e.action(action.clone())
            .on(AuditSubject::StatisticsTask(id))
    };
    state
        .authorize(&caller, Action::NodeStatistics, &Resource::Service)
        .map_err(tag)?;
    let holder = caller
        .principal
        .organisation
        .clone()
        .ok_or_else(|| tag(ApiError::forbidden(action.clone())))?;
    let mut tx = state.store.begin().await?;
    tx.take_write_order().await?;
    statistics::accept_result(
        &mut *tx,
        &caller.requester(),
        &holder,
        id,
        body,
        &state.procedure.statistics,
        time::now(),
    )
    .await
    .map_err(|e| match e {
        ResultError::NotFound => tag(ApiError::not_found("statistics task", id)),
        ResultError::NotYours => tag(ApiError::forbidden(action.clone())),
        ResultError::Closed => tag(ApiError::new(
            StatusCode::CONFLICT,
            "task_closed",
            "the task was answered already, its deadline passed, or its run is over",
        )),
        ResultError::PermitInactive => tag(ApiError::new(
            StatusCode::CONFLICT,
            "permit_not_active",
            "the permit is no longer active: nothing more is computed under it",
        )),
        ResultError::WrongRegistryVersion { expected } => tag(ApiError::field(
            "registry_version",
            "wrong_registry_version",
            format!("the task pins opt-out registry version {expected}"),
        )
        .with("expected", serde_json::json!(expected))),
        ResultError::Malformed(detail) => {
            tag(ApiError::field("partial", "partial_mismatch", detail))
        }
        ResultError::Store(e) => e.into(),
    })?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}
