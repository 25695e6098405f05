//! The data-holder node protocol: long-poll for tasks, download the global model, upload the
//! result. Every upload is checked before it is stored: the sender must be the node the task
//! was assigned to, the task still open, the permit still active, and the update a well-formed
//! parameter file of exactly the global model's names and shapes, with finite values, within
//! the size limit.

use std::{collections::HashMap, time::Duration};

use axum::{
    extract::{DefaultBodyLimit, State},
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use fl_engine::{load_safetensors, strategy::validate_results, FitIns, FitRes, ParameterSet};
use serde::Deserialize;
use serde_json::json;

use super::{
    error::{ApiError, ApiResult, Problem},
    extract::{ApiJson, ApiPath, ApiQuery, Caller},
    AppState,
};
use crate::{
    authz::{Action, Resource},
    domain::{
        audit::AuditAction,
        study::{Study, StudyStatus, Task, TaskKind, TaskReport, TaskStatus},
        time, PermitState, StudyId, TaskId,
    },
    federation::wire::{
        decode_update, encode_fit_ins, NodeStudy, NodeTask, TaskResultBody, UpdateError,
    },
    store::Tx,
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
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct FetchParams {
    /// Seconds to wait for a task when none is ready (long poll; capped by the gateway).
    pub wait: Option<u64>,
    /// At most this many tasks (1-100, default 10).
    pub limit: Option<i64>,
}

/// The study and permit behind a task, when the task may still be worked on.
async fn live_context(tx: &mut dyn Tx, study_id: StudyId) -> ApiResult<Option<Study>> {
    let Some(study) = tx.get_study(study_id).await? else {
        return Ok(None);
    };
    if study.status() != StudyStatus::Running {
        return Ok(None);
    }
    let active = tx
        .get_permit(study.spec.permit_id)
        .await?
        .is_some_and(|p| p.state(time::now()) == PermitState::Active);
    Ok(active.then_some(study))
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
    let wait = params
        .wait
        .unwrap_or(0)
        .min(state.settings.federation.long_poll_max_seconds);
    let until = tokio::time::Instant::now() + Duration::from_secs(wait);
    loop {
        // Register for wake-ups before looking, so a task created in between is not missed.
        let changed = state.federation.tasks_changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let tasks = open_tasks(&state, &caller, &holder, limit).await?;
        if !tasks.is_empty() || tokio::time::Instant::now() >= until {
            return Ok(Json(tasks));
        }
        tokio::select! {
            _ = &mut changed => {},
            _ = tokio::time::sleep_until(until) => {},
        }
    }
}

async fn open_tasks(
    state: &AppState,
    caller: &Caller,
    holder: &crate::domain::OrgId,
    limit: i64,
) -> ApiResult<Vec<NodeTask>> {
    let mut tx = state.store.begin().await?;
    let pending = tx.pending_tasks_for(holder, time::now(), limit).await?;
    if pending.is_empty() {
        return Ok(vec![]);
    }
    let mut studies: HashMap<StudyId, Option<Study>> = HashMap::new();
    let mut out = Vec::new();
    for t in pending {
        if let std::collections::hash_map::Entry::Vacant(slot) = studies.entry(t.study_id) {
            slot.insert(live_context(&mut *tx, t.study_id).await?);
        }
        let Some(study) = studies.get(&t.study_id).and_then(Option::as_ref) else {
            continue;
        };
        let Some(round) = tx.get_round(t.round_id).await? else {
            continue;
        };
        out.push(NodeTask {
            task_id: t.id,
            study_id: t.study_id,
            permit_id: study.spec.permit_id,
            data_holder: t.data_holder.clone(),
            round: t.round,
            kind: t.kind,
            deadline: t.deadline,
            registry_version: round.registry_version,
            study: NodeStudy::from(&study.spec),
        });
    }
    if !out.is_empty() {
        let ids: Vec<String> = out.iter().map(|t| t.task_id.to_string()).collect();
        tx.append_audit(
            caller
                .audit(Action::NodeTasks, "task", None)
                .detail(json!({ "delivered": ids })),
        )
        .await?;
        tx.commit().await?;
    }
    Ok(out)
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
            .on("task", id)
    })?;
    state
        .authorize(caller, Action::NodeTask, &Resource::Task(&task))
        .map_err(|e| e.action(action).on("task", id))?;
    Ok(task)
}

fn closed(task: &Task, action: AuditAction) -> Option<ApiError> {
    let (code, detail) = match task.status {
        TaskStatus::Pending if time::now() >= task.deadline => (
            "task_deadline_passed",
            "the task's deadline has passed".to_owned(),
        ),
        TaskStatus::Pending => return None,
        TaskStatus::Completed => (
            "task_already_completed",
            "a result for this task was already accepted".to_owned(),
        ),
        other => ("task_closed", format!("the task is {}", other.as_str())),
    };
    Some(
        ApiError::new(StatusCode::CONFLICT, code, detail)
            .with("current_state", json!(task.status.as_str()))
            .action(action)
            .on("task", task.id),
    )
}

/// What the server sends for the task: the global model of the previous round with the
/// strategy's extras (fit), or the final model (evaluate).
async fn fit_ins(tx: &mut dyn Tx, study: &Study, task: &Task) -> ApiResult<FitIns> {
    let checkpoint = tx
        .latest_checkpoint(study.id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("study without checkpoint")))?;
    let expected = match task.kind {
        TaskKind::Fit => task.round - 1,
        TaskKind::Evaluate => task.round,
    };
    if checkpoint.round != expected {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "task_closed",
            "the task's round is no longer the study's current round",
        ));
    }
    let (global, _) = load_safetensors(&checkpoint.global).map_err(ApiError::internal)?;
    let mut server = study
        .spec
        .strategy
        .server(
            study.spec.data_holders.len(),
            Box::new(fl_engine::strategy::WeightedMean),
        )
        .map_err(ApiError::internal)?;
    server
        .load_state(checkpoint.server_state)
        .map_err(ApiError::internal)?;
    server
        .configure_fit(task.round, &global)
        .map_err(ApiError::internal)
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
    if let Some(e) = closed(&task, ACTION) {
        return Err(e);
    }
    let study = live_context(&mut *tx, task.study_id)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::CONFLICT,
                "permit_not_active",
                "the study or its permit is not active",
            )
            .action(ACTION)
            .on("task", id)
        })?;
    let ins = fit_ins(&mut *tx, &study, &task)
        .await
        .map_err(|e| e.action(ACTION).on("task", id))?;
    let bytes = encode_fit_ins(&ins, study.id).map_err(ApiError::internal)?;
    tx.append_audit(
        task_event(&caller, ACTION, id)
            .permit(study.spec.permit_id)
            .detail(json!({ "study": study.id, "round": task.round, "bytes": bytes.len() })),
    )
    .await?;
    tx.commit().await?;
    let mut response = bytes.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    Ok(response)
}

/// A success entry for a node's work on one task, under the name of what it did.
fn task_event(
    caller: &Caller,
    action: AuditAction,
    id: TaskId,
) -> crate::domain::audit::NewAuditEvent {
    let mut event = caller.audit(Action::NodeTask, "task", Some(id.to_string()));
    event.action = action;
    event
}

fn metric_ok(m: &fl_engine::MetricSummary) -> bool {
    let unit = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
    // the multi-class Brier score sums over the classes: at most 2
    let brier = |v: f64| v.is_finite() && (0.0..=2.0).contains(&v);
    unit(m.accuracy)
        && unit(m.balanced_accuracy)
        && m.loss.is_finite()
        && m.auroc.is_none_or(unit)
        && m.auprc.is_none_or(unit)
        && m.f1.is_none_or(unit)
        && m.precision.is_none_or(unit)
        && m.recall.is_none_or(unit)
        && m.brier.is_none_or(brier)
        && m.ece.is_none_or(unit)
        && m.predicted_positive_rate.is_none_or(unit)
        && m.threshold.is_none_or(|t| unit(f64::from(t)))
        && m.c_index.is_none_or(unit)
        && m.integrated_brier.is_none_or(unit)
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
    let tag = |e: ApiError| e.action(ACTION).on("task", id);
    let now = time::now();
    let mut tx = state.store.begin().await?;
    let mut task = assigned_task(&state, &caller, &mut *tx, id, ACTION).await?;
    if let Some(e) = closed(&task, ACTION) {
        return Err(e);
    }
    let study = live_context(&mut *tx, task.study_id)
        .await?
        .ok_or_else(|| {
            tag(ApiError::new(
                StatusCode::CONFLICT,
                "permit_not_active",
                "the study or its permit is not active",
            ))
        })?;
    let round = tx
        .get_round(task.round_id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("task without round")))?;
    if body.registry_version != round.registry_version {
        return Err(tag(ApiError::field(
            "registry_version",
            "registry_version_mismatch",
            format!(
                "the round filters against opt-out registry version {}",
                round.registry_version
            ),
        )));
    }
    if body.num_examples == 0 {
        return Err(tag(ApiError::field(
            "num_examples",
            "zero_samples",
            "an update needs at least one training example",
        )));
    }
    if let Some(ev) = &body.evaluation {
        if !metric_ok(&ev.validation) || !metric_ok(&ev.test) {
            return Err(tag(ApiError::field(
                "evaluation",
                "invalid_metrics",
                "metrics must be finite, rates within [0, 1]",
            )));
        }
    }
    let limit = state.settings.federation.max_update_bytes;
    let stored = match (task.kind, &body.parameters) {
        (TaskKind::Fit, None) => {
            return Err(tag(ApiError::field(
                "parameters",
                "parameters_required",
                "a fit task's result carries the update",
            )))
        }
        (TaskKind::Evaluate, Some(_)) => {
            return Err(tag(ApiError::field(
                "parameters",
                "unexpected_parameters",
                "an evaluation returns no update",
            )))
        }
        (TaskKind::Evaluate, None) => None,
        (TaskKind::Fit, Some(b64)) => {
            let (bytes, params, extras) =
                decode_update(b64, limit, study.id, task.round, &task.data_holder)
                    .map_err(|e| tag(update_problem(e)))?;
            let ins = fit_ins(&mut *tx, &study, &task).await.map_err(tag)?;
            let res = FitRes {
                site: task.data_holder.to_string(),
                num_examples: body.num_examples as usize,
                params,
                extras,
                report: Default::default(),
            };
            let template: Option<&ParameterSet> = (!ins.extras.is_empty()).then_some(&ins.extras);
            validate_results(&ins.params, std::slice::from_ref(&res), template).map_err(|e| {
                tag(ApiError::field(
                    "parameters",
                    "invalid_update",
                    e.to_string(),
                ))
            })?;
            Some(bytes)
        }
    };
    task.status = TaskStatus::Completed;
    task.completed_at = Some(now);
    task.report = Some(TaskReport {
        num_examples: body.num_examples,
        excluded_subjects: body.excluded_subjects,
        registry_version: body.registry_version,
        train_loss: body.train_loss.filter(|l| l.is_finite()),
        local_steps: body.local_steps,
    });
    tx.complete_task(&task, stored.as_deref())
        .await
        .map_err(|_| {
            tag(ApiError::new(
                StatusCode::CONFLICT,
                "task_already_completed",
                "a result for this task was already accepted",
            ))
        })?;
    if let Some(ev) = body.evaluation {
        // a fit task evaluates the model it received: the previous round's
        let evaluated = match task.kind {
            TaskKind::Fit => task.round - 1,
            TaskKind::Evaluate => task.round,
        };
        tx.insert_evaluation(
            study.id,
            evaluated,
            &ev.for_holder(task.data_holder.clone()),
            now,
        )
        .await?;
    }
    tx.append_audit(
        task_event(&caller, ACTION, id)
            .permit(study.spec.permit_id)
            .detail(json!({ "study": study.id, "round": task.round, "kind": task.kind.as_str(),
                            "num_examples": body.num_examples, "excluded_subjects": body.excluded_subjects,
                            "bytes": stored.as_ref().map(Vec::len) })),
    )
    .await?;
    tx.commit().await?;
    state.federation.wake.notify_one();
    Ok(Json(json!({ "task_id": id, "status": "completed" })))
}
