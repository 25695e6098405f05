//! Federated studies: submission (validated against the permit, with every reason on
//! refusal), reading, per-round figures, cancellation, and the release of the final model
//! after the output check.

use std::collections::BTreeMap;

use axum::{
    extract::State,
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Json, Router,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    applications::{scope_for, ListParams},
    error::{ApiError, ApiResult, Problem},
    extract::{ApiJson, ApiPath, ApiQuery, Caller},
    permits::load_permit,
    AppState,
};
use crate::app::reads::{self, Read};
use crate::federation::Change;
use crate::{
    app::studies::{
        self, CancelError, NoiseKey, NoiseKeyError, ReleaseError, ReleaseSigning, ReleasedModel,
        SubmitError,
    },
    authz::{Action, Resource},
    store::Tx,
};
use ehds_core::domain::{
    audit::AuditSubject,
    data_quality::DataQuality,
    small_cell::SmallCellRule,
    study::{
        DecisionThreshold, DpLevel, Round, RoundPhase, SiteContribution, SiteEvaluation, Study,
        StudySpec, StudyStatus,
    },
    study_request::{parse_study, FederationLimits, OutputFloor, StudyRequest},
    time, OrgId, PermitId, StudyId,
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/studies", post(create).get(list))
        .route("/studies/{id}", get(read))
        .route("/studies/{id}/rounds", get(rounds))
        .route("/studies/{id}/events", get(super::study_events::events))
        .route("/studies/{id}/cancel", post(cancel))
        .route("/studies/{id}/model", get(model))
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StudyView {
    pub id: StudyId,
    pub permit_id: PermitId,
    pub organisation: String,
    pub researcher: String,
    pub status: StudyStatus,
    pub status_reason: Option<String>,
    pub rounds_done: u64,
    pub rounds_planned: u64,
    /// Epsilon spent so far and what the whole plan spends (composed under Rényi DP).
    pub epsilon_spent: f64,
    pub epsilon_planned: f64,
    /// Trainable values of the study's model.
    pub parameter_count: Option<usize>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
    pub spec: StudySpec,
    /// `GET /v1/studies/{id}` only: per data holder, the data-quality summary of its latest
    /// task result (what its records make of the features), counts below the small-cell
    /// threshold withheld; absent until a holder has reported one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub data_quality: Vec<HolderDataQuality>,
}

/// One data holder's data-quality summary, as of one round.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HolderDataQuality {
    pub data_holder: OrgId,
    /// The round of the task that reported it.
    pub round: u64,
    pub quality: DataQuality,
}

/// Each holder's latest data-quality summary in `study`, under the small-cell `rule`.
async fn holders_data_quality(
    tx: &mut dyn Tx,
    study: StudyId,
    rule: SmallCellRule,
) -> crate::store::Result<Vec<HolderDataQuality>> {
    let mut latest = BTreeMap::new();
    // in round and completion order: a later report replaces an earlier one
    for t in tx.reported_tasks(study).await? {
        if let Some(q) = t.report.and_then(|r| r.data_quality) {
            latest.insert(t.data_holder, (t.round, q));
        }
    }
    Ok(latest
        .into_iter()
        .map(|(data_holder, (round, q))| HolderDataQuality {
            data_holder,
            round,
            quality: q.shown(rule),
        })
        .collect())
}

impl StudyView {
    fn new(s: &Study) -> Self {
        Self {
            id: s.id,
            permit_id: s.spec.permit_id,
            organisation: s.organisation.to_string(),
            researcher: s.researcher_sub.clone(),
            status: s.status(),
            status_reason: s.status_reason.clone(),
            rounds_done: s.rounds_done,
            rounds_planned: s.spec.rounds,
            epsilon_spent: s.epsilon_spent,
            epsilon_planned: studies::epsilon_planned(s),
            parameter_count: s
                .spec
                .parameter_count
                .or_else(|| s.spec.model.parameter_count().ok()),
            created_at: s.created_at,
            updated_at: s.updated_at,
            spec: (*s.spec).clone(),
            data_quality: Vec::new(),
        }
    }
}

fn location(id: StudyId) -> [(header::HeaderName, String); 1] {
    [(header::LOCATION, format!("/v1/studies/{id}"))]
}

/// Submit a federated study under a permit. Refused with every reason when the permit does
/// not cover it (purpose, categories, data holders, state, DP level, budget).
#[utoipa::path(post, path = "/v1/studies", tag = "studies", request_body = StudyRequest,
    security(("bearer" = [])),
    responses((status = 201, body = StudyView), (status = 403, body = Problem), (status = 404, body = Problem),
        (status = 422, body = Problem)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<StudyRequest>,
) -> ApiResult<Response> {
    let action = Action::StudyCreate;
    state.authorize(&caller, action, &Resource::Service)?;
    let permit_id = PermitId::parse(&req.permit_id)
        .map_err(|(code, msg)| ApiError::field("permit_id", code, msg).action(action))?;
    let tag = |e: ApiError| e.action(action).on(AuditSubject::Permit(permit_id));
    let now = time::now();
    let mut tx = state.store.begin().await?;
    let permit = load_permit(&mut *tx, permit_id, action).await?;
    state
        .authorize(&caller, Action::StudyRun, &Resource::Permit(&permit))
        .map_err(tag)?;
    let fed = &state.settings.federation;
    let floor = OutputFloor {
        min_sites: fed.output_min_sites,
        min_samples_per_site: fed.output_min_samples_per_site,
    };
    let key = NoiseKey::new(req.dp.noise_seed, state.dev.is_some()).map_err(|e| match e {
        NoiseKeyError::ReproducibleNotAllowed => tag(ApiError::field(
            "dp.noise_seed",
            "reproducible_noise_not_allowed",
            "reproducible noise offers no privacy; only a development-mode gateway accepts it",
        )),
        NoiseKeyError::Internal(e) => tag(ApiError::internal(e)),
    })?;
    let delta = permit.terms().privacy_budget.delta.value();
    let limits = FederationLimits {
        max_update_bytes: fed.max_update_bytes,
    };
    let spec = parse_study(&req, delta, floor, limits, studies::random_seed()?)
        .map_err(|errors| tag(ApiError::invalid(errors)))?;
    let study = studies::submit(
        &mut *tx,
        &caller.requester(),
        &state.federation.vault,
        &permit,
        spec,
        caller.principal.organisation.clone(),
        &key,
        now,
    )
    .await
    .map_err(|e| match e {
        SubmitError::NotPermitted(reasons) => tag(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "study_not_permitted",
            format!(
                "the permit does not cover this study ({} reasons)",
                reasons.len()
            ),
        )
        .with_reasons(&reasons)),
        SubmitError::NoOrganisation => tag(ApiError::forbidden(action)),
        SubmitError::Store(e) => e.into(),
        SubmitError::Internal(e) => ApiError::internal(e),
    })?;
    let view = StudyView::new(&study);
    tx.commit().await?;
    state.federation.changed(Change::Study);
    Ok((StatusCode::CREATED, location(study.id), Json(view)).into_response())
}

async fn load_study(tx: &mut dyn Tx, id: StudyId, action: Action) -> ApiResult<Study> {
    tx.get_study(id).await?.ok_or_else(|| {
        ApiError::not_found("study", id)
            .action(action)
            .on(AuditSubject::Study(id))
    })
}

/// Loads a study the caller may act on, or the refusal.
pub(super) async fn authorized_study(
    state: &AppState,
    caller: &Caller,
    tx: &mut dyn Tx,
    id: StudyId,
    action: Action,
) -> ApiResult<Study> {
    let study = load_study(tx, id, action).await?;
    state
        .authorize(caller, action, &Resource::Study(&study))
        .map_err(|e| e.on(AuditSubject::Study(id)))?;
    Ok(study)
}

/// List the studies the caller may see.
#[utoipa::path(get, path = "/v1/studies", tag = "studies", params(ListParams), security(("bearer" = [])),
    responses((status = 200, body = Vec<StudyView>)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<Vec<StudyView>>> {
    state.authorize(&caller, Action::StudyList, &Resource::Service)?;
    let page = params.page()?;
    let mut tx = state.store.begin().await?;
    let rows = tx.list_studies(&scope_for(&caller), page).await?;
    let visible = super::list_visible(
        &state,
        &caller,
        (Action::StudyList, Action::StudyRead),
        AuditSubject::Studies,
        tx,
        rows,
        |s| Resource::Study(s),
        |s| StudyView::new(&s),
    )
    .await?;
    Ok(Json(visible))
}

/// Read one study.
#[utoipa::path(get, path = "/v1/studies/{id}", tag = "studies", security(("bearer" = [])),
    params(("id" = String, Path, description = "Study id")),
    responses((status = 200, body = StudyView), (status = 404, body = Problem)))]
pub async fn read(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<StudyId>,
) -> ApiResult<Json<StudyView>> {
    let mut tx = state.store.begin().await?;
    let study = authorized_study(&state, &caller, &mut *tx, id, Action::StudyRead).await?;
    let data_quality = holders_data_quality(&mut *tx, id, state.small_cells()).await?;
    let read = Read::of(Action::StudyRead, AuditSubject::Study(id)).under(study.spec.permit_id);
    reads::record_read(&mut *tx, &caller.requester(), read).await?;
    tx.commit().await?;
    Ok(Json(StudyView {
        data_quality,
        ..StudyView::new(&study)
    }))
}

/// How the holders judged one round's model on their own data. A holder whose validation or
/// test part is too small to show (the small-cell rule: fewer examples than the threshold)
/// has that part withheld, and the means are over the parts shown. Where the study chooses
/// each holder's decision threshold on its validation part, the holder's test metrics are read
/// at a value derived from the validation rows: they rest on both parts, and a withheld
/// validation part withholds them too.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EvaluationView {
    /// Uniform mean over the holders shown (the FLamby convention).
    pub mean_validation_accuracy: Option<f64>,
    pub mean_test_accuracy: Option<f64>,
    pub mean_test_balanced_accuracy: Option<f64>,
    /// Every metric as the uniform mean over the holders shown (`loss` example-weighted): F1,
    /// AUROC, calibration, the predicted-positive rate that shows a collapse to one class,
    /// C-index for survival, ...
    #[schema(value_type = Object)]
    pub mean_validation: Option<fl_engine::MetricSummary>,
    #[schema(value_type = Object)]
    pub mean_test: Option<fl_engine::MetricSummary>,
    pub sites: Vec<SiteEvaluationView>,
}

/// One holder's evaluation as shown; `null` where the part rests on too few examples.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SiteEvaluationView {
    pub data_holder: OrgId,
    #[schema(value_type = Object)]
    pub validation: Option<fl_engine::MetricSummary>,
    #[schema(value_type = Object)]
    pub test: Option<fl_engine::MetricSummary>,
}

impl EvaluationView {
    fn new(
        sites: Vec<SiteEvaluation>,
        rule: SmallCellRule,
        threshold: Option<DecisionThreshold>,
    ) -> Option<Self> {
        if sites.is_empty() {
            return None;
        }
        let chosen = threshold.is_some_and(DecisionThreshold::chosen_on_validation);
        let shown = |m: fl_engine::MetricSummary| (!rule.hides(m.n as u64)).then_some(m);
        let sites: Vec<SiteEvaluationView> = sites
            .into_iter()
            .map(|s| {
                let validation_hidden = rule.hides(s.validation.n as u64);
                SiteEvaluationView {
                    data_holder: s.data_holder,
                    validation: shown(s.validation),
                    test: shown(s.test).filter(|_| !(chosen && validation_hidden)),
                }
            })
            .collect();
        let validation: Vec<_> = sites.iter().filter_map(|s| s.validation.clone()).collect();
        let test: Vec<_> = sites.iter().filter_map(|s| s.test.clone()).collect();
        let mean = |parts: &[fl_engine::MetricSummary],
                    f: &dyn Fn(&fl_engine::MetricSummary) -> f64| {
            (!parts.is_empty()).then(|| parts.iter().map(f).sum::<f64>() / parts.len() as f64)
        };
        Some(Self {
            mean_validation_accuracy: mean(&validation, &|m| m.accuracy),
            mean_test_accuracy: mean(&test, &|m| m.accuracy),
            mean_test_balanced_accuracy: mean(&test, &|m| m.balanced_accuracy),
            mean_validation: fl_engine::MetricSummary::uniform_mean(&validation),
            mean_test: fl_engine::MetricSummary::uniform_mean(&test),
            sites,
        })
    }
}

/// One holder's part in a round as shown: counts below the small-cell threshold are `null`,
/// and so is the training loss where it rests on such a count or was not privatised.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SiteContributionView {
    pub data_holder: OrgId,
    pub samples: Option<u64>,
    /// Subjects removed by the opt-out filter before training.
    pub excluded_subjects: Option<u64>,
    /// Only for studies without formal DP (under DP it is not privatised).
    pub train_loss: Option<f64>,
    /// Whether the update went into the aggregate (false: missed the deadline).
    pub contributed: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RoundView {
    pub round: u64,
    /// The study's DP level: `client`, `record`, or `none` (no formal DP: nothing clipped or
    /// noised, no epsilon spent).
    pub dp: DpLevel,
    pub attempt: u32,
    pub phase: RoundPhase,
    pub registry_version: i64,
    pub participants: Vec<String>,
    pub opened_at: chrono::DateTime<chrono::Utc>,
    pub deadline: chrono::DateTime<chrono::Utc>,
    pub closed_at: Option<chrono::DateTime<chrono::Utc>>,
    pub reason: Option<String>,
    pub epsilon_round: Option<f64>,
    /// The study's epsilon after this round.
    pub epsilon_total: Option<f64>,
    /// Over the contributing holders; `null` where it would give back a withheld count.
    pub samples: Option<u64>,
    pub excluded_subjects: Option<u64>,
    pub sites: Vec<SiteContributionView>,
    pub noise_std_on_mean: Option<f64>,
    /// FLTrust: how many of the combined updates got trust 0 and did not move the model (a
    /// count of holders, never which ones; `null` for the other rules).
    pub untrusted_updates: Option<usize>,
    /// The holders' evaluation of the model this round produced (aggregated rounds only).
    pub evaluation: Option<EvaluationView>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RoundsView {
    pub study_id: StudyId,
    pub status: StudyStatus,
    /// The study's DP level: `client`, `record`, or `none` (no formal DP).
    pub dp: DpLevel,
    pub epsilon_spent: f64,
    /// Per-holder counts between 1 and this minus 1 are withheld (`null`), with any total
    /// that would give them back (`federation.small_cell_threshold`).
    pub small_cell_threshold: u64,
    /// The holders' evaluation of the initial model.
    pub initial_evaluation: Option<EvaluationView>,
    pub rounds: Vec<RoundView>,
}

fn round_view(
    r: Round,
    dp: DpLevel,
    evaluation: Option<EvaluationView>,
    rule: SmallCellRule,
) -> RoundView {
    let contributed: Vec<&SiteContribution> =
        r.summary.sites.iter().filter(|s| s.contributed).collect();
    let samples = rule.column(&contributed.iter().map(|s| s.samples).collect::<Vec<_>>());
    let excluded = rule.column(
        &contributed
            .iter()
            .map(|s| s.excluded_subjects)
            .collect::<Vec<_>>(),
    );
    let sites = r
        .summary
        .sites
        .into_iter()
        .map(|s| SiteContributionView {
            samples: rule.cell(s.samples),
            excluded_subjects: rule.cell(s.excluded_subjects),
            // rounds stored before the loss was withheld under DP may still hold one
            train_loss: s
                .train_loss
                .filter(|_| dp == DpLevel::NoFormalDp && !rule.hides(s.samples)),
            contributed: s.contributed,
            data_holder: s.data_holder,
        })
        .collect();
    RoundView {
        round: r.round,
        dp,
        attempt: r.attempt,
        phase: r.phase,
        registry_version: r.registry_version,
        participants: r.participants.iter().map(ToString::to_string).collect(),
        opened_at: r.opened_at,
        deadline: r.deadline,
        closed_at: r.closed_at,
        reason: r.reason,
        epsilon_round: r.epsilon_round,
        epsilon_total: r.epsilon_total,
        samples: samples.total,
        excluded_subjects: excluded.total,
        noise_std_on_mean: r.summary.noise_std_on_mean,
        untrusted_updates: r.summary.untrusted_updates,
        sites,
        evaluation,
    }
}

/// Every round attempt of the study with its participants, samples, opt-out exclusions,
/// epsilon and the holders' evaluation of the resulting model.
#[utoipa::path(get, path = "/v1/studies/{id}/rounds", tag = "studies", security(("bearer" = [])),
    params(("id" = String, Path, description = "Study id")),
    responses((status = 200, body = RoundsView), (status = 404, body = Problem)))]
pub async fn rounds(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<StudyId>,
) -> ApiResult<Json<RoundsView>> {
    let mut tx = state.store.begin().await?;
    let study = authorized_study(&state, &caller, &mut *tx, id, Action::StudyRead).await?;
    let view = rounds_view(&mut *tx, &study, state.small_cells()).await?;
    let read = Read::of(Action::StudyRead, AuditSubject::Study(id))
        .under(study.spec.permit_id)
        .view("rounds");
    reads::record_read(&mut *tx, &caller.requester(), read).await?;
    tx.commit().await?;
    Ok(Json(view))
}

/// Every round of `study` as researchers see it (under the small-cell `rule`).
pub(super) async fn rounds_view(
    tx: &mut dyn Tx,
    study: &Study,
    rule: SmallCellRule,
) -> crate::store::Result<RoundsView> {
    let id = study.id;
    let mut by_round: BTreeMap<u64, Vec<SiteEvaluation>> = BTreeMap::new();
    for (round, e) in tx.list_evaluations(id).await? {
        by_round.entry(round).or_default().push(e);
    }
    let rounds = tx
        .list_rounds(id)
        .await?
        .into_iter()
        .map(|r| {
            let eval = (r.phase == RoundPhase::Aggregated)
                .then(|| by_round.get(&r.round).cloned())
                .flatten()
                .and_then(|e| EvaluationView::new(e, rule, study.spec.threshold));
            round_view(r, study.spec.dp.level, eval, rule)
        })
        .collect();
    Ok(RoundsView {
        study_id: id,
        status: study.status(),
        dp: study.spec.dp.level,
        epsilon_spent: study.epsilon_spent,
        small_cell_threshold: rule.threshold(),
        initial_evaluation: by_round
            .remove(&0)
            .and_then(|e| EvaluationView::new(e, rule, study.spec.threshold)),
        rounds,
    })
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    pub reason: String,
}

/// Cancel a running or suspended study; the round in flight is discarded.
#[utoipa::path(post, path = "/v1/studies/{id}/cancel", tag = "studies", request_body = CancelRequest,
    security(("bearer" = [])), params(("id" = String, Path, description = "Study id")),
    responses((status = 200, body = StudyView), (status = 409, body = Problem)))]
pub async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<StudyId>,
    ApiJson(req): ApiJson<CancelRequest>,
) -> ApiResult<Json<StudyView>> {
    let action = Action::StudyCancel;
    let tag = |e: ApiError| e.action(action).on(AuditSubject::Study(id));
    let now = time::now();
    let mut tx = state.store.begin().await?;
    let mut study = authorized_study(&state, &caller, &mut *tx, id, action).await?;
    if req.reason.trim().is_empty() {
        return Err(tag(ApiError::field(
            "reason",
            "required",
            "a reason is required",
        )));
    }
    ehds_core::domain::within_length(
        "reason",
        req.reason.trim(),
        ehds_core::domain::MAX_REASON_CHARS,
    )
    .map_err(|f| tag(ApiError::invalid(vec![f])))?;
    studies::cancel(
        &mut *tx,
        &caller.requester(),
        &mut study,
        req.reason.trim(),
        now,
    )
    .await
    .map_err(|e| match e {
        CancelError::Transition(e) => tag(ApiError::conflict(e)),
        CancelError::Store(e) => e.into(),
    })?;
    tx.commit().await?;
    state.federation.changed(Change::Study);
    Ok(Json(StudyView::new(&study)))
}

/// The released global model as safetensors: the study's `release` choice (by default the round
/// with the lowest example-weighted validation loss, else the last), named in the
/// `x-model-round`, `x-model-selection` and `x-model-validation-loss` headers. Only for a
/// completed study, while the permit is active and covers the study's purpose, and only after
/// the output check (minimum sites and samples per site) on the released round. The file's
/// metadata carries the gateway's signed provenance statement (permit, study, method, round,
/// privacy spend, contributors, the audit log's tree head), which `ehds-gateway model verify`
/// checks with the audit log's verifier key. The release is audited.
#[utoipa::path(get, path = "/v1/studies/{id}/model", tag = "studies", security(("bearer" = [])),
    params(("id" = String, Path, description = "Study id")),
    responses((status = 200, description = "safetensors", content_type = "application/octet-stream",
            headers(("x-model-round" = u64, description = "The round whose global model this is"),
                ("x-model-selection" = String, description = "`best_validation` or `last`"),
                ("x-model-validation-loss" = f64, description = "Example-weighted validation loss of this model, where holders evaluated it"),
                ("x-model-digest" = String, description = "Hex SHA-256 of the parameters' canonical bytes"))),
        (status = 403, body = Problem), (status = 409, body = Problem)))]
pub async fn model(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<StudyId>,
) -> ApiResult<Response> {
    let action = Action::StudyModel;
    let tag = |e: ApiError| e.action(action).on(AuditSubject::Study(id));
    let now = time::now();
    let mut tx = state.store.begin().await?;
    let study = authorized_study(&state, &caller, &mut *tx, id, action).await?;
    let ReleasedModel {
        bytes,
        digest,
        choice,
        ..
    } = studies::release_model(
        &mut *tx,
        &caller.requester(),
        &study,
        &ReleaseSigning {
            signer: &state.log_signer,
            small_cells: state.small_cells(),
        },
        now,
    )
    .await
    .map_err(|e| match e {
        ReleaseError::NotCompleted(status) => tag(ApiError::new(
            StatusCode::CONFLICT,
            "study_not_completed",
            format!(
                "the study is {}; only a completed study's model is released",
                status.as_str()
            ),
        )
        .with("current_state", json!(status.as_str()))),
        ReleaseError::PermitMissing(permit) => ApiError::not_found("permit", permit)
            .action(action)
            .on(AuditSubject::Permit(permit)),
        ReleaseError::NotPermitted(reasons) => tag(ApiError::new(
            StatusCode::CONFLICT,
            "release_not_permitted",
            "the permit no longer covers releasing this study's model",
        )
        .with_reasons(&reasons)),
        ReleaseError::NoAggregatedRound => tag(ApiError::new(
            StatusCode::CONFLICT,
            "no_model",
            "no round was aggregated",
        )),
        ReleaseError::OutputCheck(reasons) => tag(ApiError::new(
            StatusCode::CONFLICT,
            "output_check_failed",
            "the final aggregate rests on too few sites or samples to leave",
        )
        .with_reasons(&reasons)),
        ReleaseError::NoCheckpoint => tag(ApiError::new(
            StatusCode::CONFLICT,
            "no_model",
            "no checkpoint",
        )),
        ReleaseError::Store(e) => e.into(),
        ReleaseError::Internal(e) => ApiError::internal(e),
    })?;
    tx.commit().await?;
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    if let Ok(v) =
        HeaderValue::from_str(&format!("attachment; filename=\"study-{id}.safetensors\""))
    {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    if let Ok(v) = HeaderValue::from_str(&digest) {
        headers.insert("x-model-digest", v);
    }
    headers.insert("x-model-round", HeaderValue::from(choice.round));
    headers.insert(
        "x-model-selection",
        HeaderValue::from_static(choice.selection.as_str()),
    );
    if let Some(loss) = choice.validation_loss {
        if let Ok(v) = HeaderValue::from_str(&loss.to_string()) {
            headers.insert("x-model-validation-loss", v);
        }
    }
    Ok(response)
}
