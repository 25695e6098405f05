//! The data-holder node protocol: long-poll for tasks, download the global model, upload the
//! result. The sender must be the node the task was assigned to (checked here); everything
//! else about an upload is checked by `app::node_tasks` before anything is stored.

use std::time::Duration;

use axum::{
    extract::{DefaultBodyLimit, State},
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use serde::Deserialize;
use serde_json::json;

use super::{
    error::{ApiError, ApiResult, Problem},
    extract::{ApiJson, ApiPath, ApiQuery, Caller},
    AppState,
};
use crate::federation::Change;
use crate::{
    app::node_tasks::{self, SetupError, TaskError},
    authz::{Action, Resource},
    store::Tx,
};
use ehds_core::{
    domain::{
        audit::{AuditAction, AuditSubject},
        study::Task,
        time, TaskId,
    },
    secure_aggregation::{self as sa, NodeMessage, SecaggView},
    wire::{NodeTask, TaskResultBody, UpdateError},
};

pub fn router(max_update_bytes: usize) -> Router<AppState> {
    // base64 makes the upload a third larger than the update, plus the JSON around it
    let body_limit = max_update_bytes / 3 * 4 + 64 * 1024;
    Router::new()
        .route("/node/tasks", get(fetch))
        .route("/node/tasks/{id}/parameters", get(parameters))
        .route(
            "/node/tasks/{id}/result",
            post(result).layer(DefaultBodyLimit::max(body_limit)),
        )
        .route(
            "/node/tasks/{id}/secagg",
            // a masked input: one JSON integer of up to 20 digits per 4-byte parameter, and
            // under distributed DP up to twice as many entries (padded to a power of two) of
            // at most 19 digits in a ring of at most 2^63
            get(secagg_view)
                .post(secagg_submit)
                .layer(DefaultBodyLimit::max(max_update_bytes / 2 * 20 + 64 * 1024)),
        )
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FetchParams {
    /// Seconds to wait for a task when none is ready (long poll; capped by the gateway).
    pub wait: Option<u64>,
    /// At most this many tasks (1-100, default 10).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
}

/// The caller's open tasks. With `wait`, holds the request until a task appears or the wait
/// ends (then answers an empty list).
#[utoipa::path(get, path = "/v1/node/tasks", tag = "node", params(FetchParams), security(("bearer" = [])),
    responses((status = 200, body = Vec<NodeTask>), (status = 403, body = Problem)))]
pub async fn fetch(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<FetchParams>,
) -> ApiResult<Json<Vec<NodeTask>>> {
    let action = Action::NodeTasks;
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
    let (state, caller, holder) = (&state, &caller, &holder);
    let tasks = long_poll(
        state,
        &state.federation.fleet.waiters.tasks,
        params.wait,
        move || open_tasks(state, caller, holder, limit),
        |tasks| !tasks.is_empty(),
    )
    .await?;
    Ok(Json(tasks))
}

/// Answers with what `look` finds once `ready` says that is the answer, or when `wait`
/// seconds (capped by the gateway) have passed: a long poll, woken by `changed` rather than
/// polling. It registers for the wake-up before each look, so a change in between is not
/// missed.
pub(super) async fn long_poll<T, Found>(
    state: &AppState,
    changed: &tokio::sync::Notify,
    wait: Option<u64>,
    look: impl Fn() -> Found,
    mut ready: impl FnMut(&T) -> bool,
) -> ApiResult<T>
where
    Found: std::future::Future<Output = ApiResult<T>>,
{
    let wait = wait.unwrap_or(0);
    // every integer of the contract is an int64
    if wait > i64::MAX as u64 {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            "wait is a number of seconds within the int64 range",
        ));
    }
    let wait = wait.min(state.settings.federation.long_poll_max_seconds);
    let until = tokio::time::Instant::now() + Duration::from_secs(wait);
    loop {
        let notified = changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let found = look().await?;
        if ready(&found) || tokio::time::Instant::now() >= until {
            return Ok(found);
        }
        tokio::select! {
            _ = &mut notified => {},
            _ = tokio::time::sleep_until(until) => {},
        }
    }
}

async fn open_tasks(
    state: &AppState,
    caller: &Caller,
    holder: &ehds_core::domain::OrgId,
    limit: i64,
) -> ApiResult<Vec<NodeTask>> {
    // most polls find nothing: look beside the writer first, and take the write turn (the
    // delivery is audited) only when there is something to deliver
    let pending = {
        let mut look = state.store.read().await?;
        look.pending_tasks_for(holder, time::now(), 1).await?
    };
    if pending.is_empty() {
        return Ok(vec![]);
    }
    let mut tx = state.store.begin().await?;
    let tasks =
        node_tasks::open_tasks(&mut *tx, &caller.requester(), holder, limit, time::now()).await?;
    if !tasks.is_empty() {
        tx.commit().await?;
    }
    Ok(tasks)
}

/// Loads a task the caller is assigned to, or the refusal (a task of another node is 403).
async fn assigned_task(
    state: &AppState,
    caller: &Caller,
    tx: &mut dyn Tx,
    id: TaskId,
    action: AuditAction,
) -> ApiResult<Task> {
    let task = tx.get_task(id).await?.ok_or_else(|| {
        ApiError::not_found("task", id)
            .action(action.clone())
            .on(AuditSubject::Task(id))
    })?;
    state
        .authorize(caller, Action::NodeTask, &Resource::Task(&task))
        .map_err(|e| e.action(action).on(AuditSubject::Task(id)))?;
    Ok(task)
}

/// The refusal of a node's request on task `id` under `action`. Refusals about the task are
/// tagged with the action and the task; a store or internal failure outside the task's set-up
/// is not.
fn task_refusal(action: AuditAction, id: TaskId) -> impl Fn(TaskError) -> ApiError {
    move |e| {
        let tag = |e: ApiError| e.action(action.clone()).on(AuditSubject::Task(id));
        match e {
            TaskError::Closed {
                code,
                detail,
                current_state,
            } => tag(ApiError::new(StatusCode::CONFLICT, code, detail)
                .with("current_state", json!(current_state.as_str()))),
            TaskError::NotLive => tag(ApiError::new(
                StatusCode::CONFLICT,
                "permit_not_active",
                "the study or its permit is not active",
            )),
            TaskError::Setup(SetupError::RoundMoved) => tag(ApiError::new(
                StatusCode::CONFLICT,
                "task_closed",
                "the task's round is no longer the study's current round",
            )),
            TaskError::Setup(SetupError::Store(e)) => tag(e.into()),
            TaskError::Setup(SetupError::Internal(e)) => tag(ApiError::internal(e)),
            TaskError::RegistryVersionMismatch { expected } => tag(ApiError::field(
                "registry_version",
                "registry_version_mismatch",
                format!("the round filters against opt-out registry version {expected}"),
            )),
            TaskError::ZeroSamples => tag(ApiError::field(
                "num_examples",
                "zero_samples",
                "an update needs at least one training example",
            )),
            TaskError::InvalidMetrics => tag(ApiError::field(
                "evaluation",
                "invalid_metrics",
                "metrics must be finite, rates within [0, 1]",
            )),
            TaskError::ParametersRequired => tag(ApiError::field(
                "parameters",
                "parameters_required",
                "a fit task's result carries the update",
            )),
            TaskError::UnexpectedParameters => tag(ApiError::field(
                "parameters",
                "unexpected_parameters",
                "an evaluation returns no update",
            )),
            TaskError::Update(e) => tag(update_problem(e)),
            TaskError::InvalidUpdate(message) => {
                tag(ApiError::field("parameters", "invalid_update", message))
            }
            TaskError::AlreadyCompleted => tag(ApiError::new(
                StatusCode::CONFLICT,
                "task_already_completed",
                "a result for this task was already accepted",
            )),
            TaskError::ClearUpdateRefused => tag(ApiError::field(
                "parameters",
                "clear_update_refused",
                "the study runs secure aggregation: the update travels only masked, through \
                 /v1/node/tasks/{id}/secagg",
            )),
            TaskError::NotSecure => tag(ApiError::new(
                StatusCode::CONFLICT,
                "secure_aggregation_not_used",
                "the task is not a fit task of a study under secure aggregation",
            )),
            // the gateway's own stored sum or messages do not fit its session: not the
            // holder's fault
            TaskError::Secagg(e @ (secagg::Error::BadSum(_) | secagg::Error::BadStored(_))) => {
                ApiError::internal(e)
            }
            // a retried delivery of an accepted message; another session or stage, a second
            // different message, or a holder dropped from the session: nothing changed
            TaskError::Secagg(e) if e.is_routing() => tag(ApiError::new(
                StatusCode::CONFLICT,
                sa::refusal_code(&e),
                e.to_string(),
            )),
            TaskError::Secagg(e) => tag(ApiError::field(
                "message",
                sa::refusal_code(&e),
                e.to_string(),
            )),
            TaskError::SecaggSender => tag(ApiError::field(
                "message.from",
                "secagg_wrong_sender",
                "the message names another holder than the task's",
            )),
            TaskError::Store(e) => e.into(),
            TaskError::Internal(e) => ApiError::internal(e),
        }
    }
}

/// The parameters to start the task from, as safetensors.
#[utoipa::path(get, path = "/v1/node/tasks/{id}/parameters", tag = "node", security(("bearer" = [])),
    params(("id" = String, Path, description = "Task id")),
    responses((status = 200, description = "safetensors", content_type = "application/octet-stream"),
        (status = 403, body = Problem), (status = 409, body = Problem)))]
pub async fn parameters(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<TaskId>,
) -> ApiResult<Response> {
    const ACTION: AuditAction = AuditAction::NodeTaskParameters;
    let mut tx = state.store.begin().await?;
    let task = assigned_task(&state, &caller, &mut *tx, id, ACTION).await?;
    let files = &state.federation.parameter_files;
    let bytes = node_tasks::parameters(&mut *tx, &caller.requester(), &task, files, time::now())
        .await
        .map_err(task_refusal(ACTION, id))?;
    tx.commit().await?;
    let mut response = bytes.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    Ok(response)
}

fn update_problem(e: UpdateError) -> ApiError {
    match e {
        UpdateError::TooLarge { .. } => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "update_too_large",
            e.to_string(),
        ),
        UpdateError::Encoding => ApiError::field("parameters", "invalid_encoding", e.to_string()),
        UpdateError::Invalid(_) => ApiError::field("parameters", "invalid_update", e.to_string()),
        UpdateError::Misdirected { .. } => {
            ApiError::field("parameters", "update_misdirected", e.to_string())
        }
    }
}

/// Upload the result of a task: the update (fit), the holder's evaluation of the model it
/// received, and counts. Refused unless everything about it checks out; nothing is stored then.
#[utoipa::path(post, path = "/v1/node/tasks/{id}/result", tag = "node", request_body = TaskResultBody,
    security(("bearer" = [])), params(("id" = String, Path, description = "Task id")),
    responses((status = 200, description = "accepted"), (status = 403, body = Problem), (status = 409, body = Problem),
        (status = 413, body = Problem), (status = 422, body = Problem)))]
pub async fn result(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<TaskId>,
    ApiJson(body): ApiJson<TaskResultBody>,
) -> ApiResult<Json<serde_json::Value>> {
    const ACTION: AuditAction = AuditAction::NodeTaskResult;
    let now = time::now();
    let mut tx = state.store.begin().await?;
    let mut task = assigned_task(&state, &caller, &mut *tx, id, ACTION).await?;
    let limit = state.settings.federation.max_update_bytes;
    node_tasks::accept_result(&mut *tx, &caller.requester(), &mut task, body, limit, now)
        .await
        .map_err(task_refusal(ACTION, id))?;
    tx.commit().await?;
    state.federation.changed(Change::NodeResult);
    Ok(Json(json!({ "task_id": id, "status": "completed" })))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SecaggViewParams {
    /// Seconds to hold the request while the caller has nothing to do: it is not awaited in
    /// the current stage and the stage has not moved on (long poll; capped by the gateway).
    pub wait: Option<u64>,
}

/// Where the secure aggregation of the task's round stands for the caller, and what the last
/// closed stage relayed to it (studies under secure aggregation; docs/secure-aggregation.md).
/// With `wait`, answers once the caller is awaited or the stage moved on (the round loop
/// wakes the request when it closes a stage), or when the wait ends: a holder that sent its
/// message learns of the close at once, without polling.
#[utoipa::path(get, path = "/v1/node/tasks/{id}/secagg", tag = "node", security(("bearer" = [])),
    params(("id" = String, Path, description = "Task id"), SecaggViewParams),
    responses((status = 200, body = SecaggView), (status = 403, body = Problem), (status = 409, body = Problem)))]
pub async fn secagg_view(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<TaskId>,
    ApiQuery(params): ApiQuery<SecaggViewParams>,
) -> ApiResult<Json<SecaggView>> {
    const ACTION: AuditAction = AuditAction::NodeTaskSecagg;
    // answers once the caller is awaited, or once the stage differs from the first look's
    let mut first_stage: Option<String> = None;
    let (state, caller) = (&state, &caller);
    let view = long_poll(
        state,
        &state.federation.fleet.waiters.secagg,
        params.wait,
        move || async move {
            let mut tx = state.store.begin().await?;
            let task = assigned_task(state, caller, &mut *tx, id, ACTION).await?;
            node_tasks::secagg_view(&mut *tx, &task, time::now())
                .await
                .map_err(task_refusal(ACTION, id))
        },
        |view: &SecaggView| {
            let moved = first_stage.as_ref().is_some_and(|s| *s != view.stage);
            first_stage.get_or_insert_with(|| view.stage.clone());
            view.awaited || moved
        },
    )
    .await?;
    Ok(Json(view))
}

/// The caller's protocol message of the current stage (`{"kind": "advertise_keys" |
/// "share_keys" | "masked_input" | "unmask", ...}`), handed to the round's relay. Refused,
/// with nothing stored, unless the relay accepts it.
#[utoipa::path(post, path = "/v1/node/tasks/{id}/secagg", tag = "node", security(("bearer" = [])),
    request_body(content = Object, description = "secagg message"),
    params(("id" = String, Path, description = "Task id")),
    responses((status = 200, description = "accepted"), (status = 403, body = Problem), (status = 409, body = Problem),
        (status = 413, body = Problem), (status = 422, body = Problem)))]
pub async fn secagg_submit(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<TaskId>,
    ApiJson(message): ApiJson<NodeMessage>,
) -> ApiResult<Json<serde_json::Value>> {
    const ACTION: AuditAction = AuditAction::NodeTaskSecagg;
    let now = time::now();
    let mut tx = state.store.begin().await?;
    let task = assigned_task(&state, &caller, &mut *tx, id, ACTION).await?;
    let stage = message.stage();
    node_tasks::secagg_submit(&mut *tx, &caller.requester(), &task, message, now)
        .await
        .map_err(task_refusal(ACTION, id))?;
    tx.commit().await?;
    // the stage may now be complete: let the round loop close it
    state.federation.changed(Change::SecaggMessage);
    Ok(Json(json!({
        "task_id": id,
        "stage": ehds_core::secure_aggregation::stage_name(stage),
        "status": "accepted",
    })))
}
