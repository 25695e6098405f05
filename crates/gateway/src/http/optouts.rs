//! The Art. 71 opt-out registry: registration, withdrawal (history kept), bulk import from NDJSON
//! or a FHIR R4 Bundle of Consent resources, and the filter data holders run before training.

use std::collections::BTreeSet;

use axum::{
    body::Bytes,
    extract::{rejection::BytesRejection, DefaultBodyLimit, State},
    http::{header, HeaderMap, StatusCode},
    routing::{get, post},
    Json, Router,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    error::{ApiError, ApiResult, Problem},
    extract::{ApiJson, ApiPath, ApiQuery, Caller},
    permits::load_permit,
    AppState,
};
pub use crate::app::optouts::ImportReport;
use crate::{
    app::optouts,
    authz::{Action, Resource},
    fhir::consent,
    store::Tx,
};
use ehds_core::{
    domain::{
        audit::AuditSubject,
        audit_details::{OptOutRegistered, OptOutWithdrawn, OptOutsFiltered, OptOutsImported},
        optout::{NewOptOutEvent, OptOutEvent, OptOutEventKind},
        time, DataCategory, Errors, FieldError, MemberState, OptOutId, PermitState,
        SubjectPseudonym,
    },
    wire::{FilterRequest, FilterResponse},
};

/// Bulk imports and filters carry whole cohorts.
const BULK_BODY_LIMIT: usize = 64 * 1024 * 1024;

pub fn router(_default_limit: usize) -> Router<AppState> {
    Router::new()
        .route("/opt-outs", post(register))
        .route("/opt-outs/{id}", get(read))
        .route("/opt-outs/{id}/withdraw", post(withdraw))
        .route(
            "/opt-outs/import",
            post(import).layer(DefaultBodyLimit::max(BULK_BODY_LIMIT)),
        )
        .route(
            "/opt-outs/filter",
            post(filter).layer(DefaultBodyLimit::max(BULK_BODY_LIMIT)),
        )
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OptOutRequest {
    /// The subject's pseudonym (never a national identifier).
    pub subject_pseudonym: String,
    pub member_state: String,
    /// When the opt-out takes effect; defaults to now.
    pub effective_from: Option<DateTime<Utc>>,
    /// How the opt-out reached the registry (portal, letter, ...).
    pub channel: Option<String>,
    /// Only `all_secondary_use`: Art. 71 covers all secondary use.
    pub scope: Option<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct OptOutRecordView {
    pub record_id: OptOutId,
    /// HMAC of the pseudonym: the registry never stores the pseudonym itself.
    pub subject_key: String,
    pub status: OptOutEventKind,
    pub events: Vec<OptOutEvent>,
    pub registry_version: i64,
}

impl OptOutRecordView {
    fn new(record_id: OptOutId, events: Vec<OptOutEvent>) -> Self {
        let last = events.last();
        Self {
            record_id,
            subject_key: last.map(|e| e.subject_key.clone()).unwrap_or_default(),
            status: last.map(|e| e.kind).unwrap_or(OptOutEventKind::Registered),
            registry_version: last.map(|e| e.seq).unwrap_or_default(),
            events,
        }
    }
}

fn channel(raw: Option<&str>, default: &str) -> Result<String, FieldError> {
    let c = raw.unwrap_or(default).trim();
    if c.is_empty() || c.len() > 64 {
        return Err(FieldError::new(
            "channel",
            "invalid_channel",
            "channel must be 1-64 characters",
        ));
    }
    Ok(c.to_owned())
}

/// Register an opt-out.
#[utoipa::path(post, path = "/v1/opt-outs", tag = "opt-outs", request_body = OptOutRequest, security(("bearer" = [])),
    responses((status = 201, body = OptOutRecordView), (status = 422, body = Problem)))]
pub async fn register(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<OptOutRequest>,
) -> ApiResult<(
    StatusCode,
    [(header::HeaderName, String); 1],
    Json<OptOutRecordView>,
)> {
    let action = Action::OptOutRegister;
    state.authorize(&caller, action, &Resource::OptOutRegistry)?;
    let now = time::now();
    let mut e = Errors::default();
    let subject = e.take(
        "subject_pseudonym",
        SubjectPseudonym::parse(&req.subject_pseudonym),
    );
    let member_state = e.take("member_state", MemberState::parse(&req.member_state));
    if req
        .scope
        .as_deref()
        .is_some_and(|s| s != ehds_core::domain::optout::SCOPE_ALL_SECONDARY_USE)
    {
        e.push(
            "scope",
            "invalid_scope",
            "an Art. 71 opt-out covers `all_secondary_use`",
        );
    }
    let channel = channel(req.channel.as_deref(), "api")
        .map_err(|f| e.0.push(f))
        .ok();
    if !e.0.is_empty() {
        return Err(ApiError::invalid(e.0).action(action));
    }
    let record_id = OptOutId::new();
    let event = NewOptOutEvent {
        record_id,
        subject_key: state.pseudonym_key.subject_key(&subject.expect("checked")),
        kind: OptOutEventKind::Registered,
        member_state: member_state.expect("checked"),
        effective_at: req.effective_from.map(time::normalise).unwrap_or(now),
        recorded_at: now,
        channel: channel.expect("checked"),
    };
    let mut tx = state.store.begin().await?;
    let stored = tx.append_optout(event).await?;
    tx.append_audit(
        caller
            .audit(action, AuditSubject::OptOut(record_id))
            .details(&OptOutRegistered {
                registry_version: stored.seq,
                effective_at: stored.effective_at,
                channel: &stored.channel,
            }),
    )
    .await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, format!("/v1/opt-outs/{record_id}"))],
        Json(OptOutRecordView::new(record_id, vec![stored])),
    ))
}

async fn load_record(tx: &mut dyn Tx, id: OptOutId, action: Action) -> ApiResult<Vec<OptOutEvent>> {
    let events = tx.optout_record(id).await?;
    if events.is_empty() {
        return Err(ApiError::not_found("opt-out", id)
            .action(action)
            .on(AuditSubject::OptOut(id)));
    }
    Ok(events)
}

/// Read an opt-out record with its whole history.
#[utoipa::path(get, path = "/v1/opt-outs/{id}", tag = "opt-outs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Opt-out record id")),
    responses((status = 200, body = OptOutRecordView), (status = 404, body = Problem)))]
pub async fn read(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<OptOutId>,
) -> ApiResult<Json<OptOutRecordView>> {
    let action = Action::OptOutRead;
    state.authorize(&caller, action, &Resource::OptOutRegistry)?;
    let mut tx = state.store.begin().await?;
    let events = load_record(&mut *tx, id, action).await?;
    tx.append_audit(caller.audit(action, AuditSubject::OptOut(id)))
        .await?;
    tx.commit().await?;
    Ok(Json(OptOutRecordView::new(id, events)))
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WithdrawRequest {
    /// When the withdrawal takes effect; defaults to now.
    pub effective_at: Option<DateTime<Utc>>,
    pub channel: Option<String>,
}

/// Withdraw an opt-out. The registration stays in the history.
#[utoipa::path(post, path = "/v1/opt-outs/{id}/withdraw", tag = "opt-outs", request_body = WithdrawRequest,
    security(("bearer" = [])), params(("id" = String, Path, description = "Opt-out record id")),
    responses((status = 200, body = OptOutRecordView), (status = 409, body = Problem)))]
pub async fn withdraw(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<OptOutId>,
    ApiJson(req): ApiJson<WithdrawRequest>,
) -> ApiResult<Json<OptOutRecordView>> {
    let action = Action::OptOutWithdraw;
    state.authorize(&caller, action, &Resource::OptOutRegistry)?;
    let tag = |e: ApiError| e.action(action).on(AuditSubject::OptOut(id));
    let channel =
        channel(req.channel.as_deref(), "api").map_err(|f| tag(ApiError::invalid(vec![f])))?;
    let now = time::now();
    let mut tx = state.store.begin().await?;
    let mut events = load_record(&mut *tx, id, action).await?;
    let last = events.last().expect("non-empty").clone();
    if last.kind == OptOutEventKind::Withdrawn {
        return Err(tag(ApiError::new(
            StatusCode::CONFLICT,
            "invalid_transition",
            "the opt-out is already withdrawn",
        )
        .with("current_state", json!("withdrawn"))));
    }
    let stored = tx
        .append_optout(NewOptOutEvent {
            record_id: id,
            subject_key: last.subject_key,
            kind: OptOutEventKind::Withdrawn,
            member_state: last.member_state,
            effective_at: req.effective_at.map(time::normalise).unwrap_or(now),
            recorded_at: now,
            channel,
        })
        .await?;
    tx.append_audit(
        caller
            .audit(action, AuditSubject::OptOut(id))
            .details(&OptOutWithdrawn {
                registry_version: stored.seq,
                effective_at: stored.effective_at,
            }),
    )
    .await?;
    tx.commit().await?;
    events.push(stored);
    Ok(Json(OptOutRecordView::new(id, events)))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ImportParams {
    /// Member state of imported opt-outs that do not name one; defaults to the HDAB's.
    pub member_state: Option<String>,
    /// Channel recorded for the imported rows.
    pub channel: Option<String>,
}

/// Bulk import, all or nothing: NDJSON (`application/x-ndjson`) or a FHIR R4 Bundle of Consent
/// (`application/fhir+json`).
#[utoipa::path(post, path = "/v1/opt-outs/import", tag = "opt-outs", params(ImportParams), security(("bearer" = [])),
    request_body(content = String, content_type = "application/x-ndjson"),
    responses((status = 200, body = ImportReport), (status = 415, body = Problem), (status = 422, body = Problem)))]
pub async fn import(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ImportParams>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Json<ImportReport>> {
    let action = Action::OptOutImport;
    state.authorize(&caller, action, &Resource::OptOutRegistry)?;
    let tag = |e: ApiError| e.action(action).on(AuditSubject::OptOutImport);
    let body = body.map_err(|e| {
        tag(if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the import exceeds the size limit",
            )
        } else {
            ApiError::new(e.status(), "invalid_body", e.body_text())
        })
    })?;
    let default_state = params
        .member_state
        .clone()
        .unwrap_or_else(|| state.settings.hdab.member_state.clone());
    let channel = channel(params.channel.as_deref(), "import")
        .map_err(|f| tag(ApiError::invalid(vec![f])))?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    let items = match media {
        "application/x-ndjson" | "application/ndjson" => {
            let text = std::str::from_utf8(&body).map_err(|_| {
                tag(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_encoding",
                    "NDJSON must be UTF-8",
                ))
            })?;
            optouts::parse_ndjson(text, &default_state)
        }
        "application/fhir+json" | "application/json" => {
            consent::parse_opt_out_bundle(&body, &default_state)
        }
        _ => {
            return Err(tag(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send application/x-ndjson or application/fhir+json",
            )))
        }
    }
    .map_err(|e| tag(ApiError::invalid(e)))?;

    let mut tx = state.store.begin().await?;
    let report =
        optouts::import(&mut *tx, &state.pseudonym_key, items, &channel, time::now()).await?;
    tx.append_audit(
        caller
            .audit(action, AuditSubject::OptOutImport)
            .details(&OptOutsImported {
                format: media,
                registered: report.registered,
                withdrawn: report.withdrawn,
                unchanged: report.unchanged,
                registry_version: report.registry_version,
            }),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(report))
}

/// Which of a data holder's subjects must be excluded from processing under a permit.
#[utoipa::path(post, path = "/v1/opt-outs/filter", tag = "opt-outs", request_body = FilterRequest,
    security(("bearer" = [])),
    responses((status = 200, body = FilterResponse), (status = 403, body = Problem), (status = 409, body = Problem)))]
pub async fn filter(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<FilterRequest>,
) -> ApiResult<Json<FilterResponse>> {
    let action = Action::OptOutFilter;
    let tag = |e: ApiError| e.action(action).on(AuditSubject::Permit(req.permit_id));
    let mut tx = state.store.begin().await?;
    let permit = load_permit(&mut *tx, req.permit_id, action).await?;
    state
        .authorize(&caller, action, &Resource::Permit(&permit))
        .map_err(tag)?;
    let now = time::now();
    let permit_state = permit.state(now);
    if permit_state != PermitState::Active {
        return Err(tag(ApiError::new(
            StatusCode::CONFLICT,
            "permit_not_active",
            format!(
                "the permit is {}; no processing may be prepared",
                permit_state.name()
            ),
        )
        .with("current_state", json!(permit_state.name()))));
    }
    let mut e = Errors::default();
    let subjects: BTreeSet<String> = req
        .subjects
        .iter()
        .enumerate()
        .filter_map(|(i, s)| e.take(format!("subjects[{i}]"), SubjectPseudonym::parse(s)))
        .map(|s| s.as_str().to_owned())
        .collect();
    let categories: Vec<DataCategory> = req
        .categories
        .iter()
        .enumerate()
        .filter_map(|(i, s)| e.take(format!("categories[{i}]"), DataCategory::parse(s)))
        .collect();
    let current = tx.optout_registry_version().await?;
    let version = req.registry_version.unwrap_or(current);
    if !(0..=current).contains(&version) {
        e.push(
            "registry_version",
            "unknown_registry_version",
            format!("the registry is at version {current}"),
        );
    }
    if !e.0.is_empty() {
        return Err(tag(ApiError::invalid(e.0)));
    }
    let holder = caller
        .principal
        .organisation
        .clone()
        .ok_or_else(|| tag(ApiError::forbidden(action)))?;
    let optouts::Exclusions {
        reference_time,
        exception_applied,
        exclude,
    } = optouts::exclusions(
        &mut *tx,
        &state.pseudonym_key,
        &permit,
        &holder,
        &categories,
        &subjects,
        version,
        req.policy,
        now,
    )
    .await?;
    tx.append_audit(
        caller
            .audit(action, AuditSubject::Permit(req.permit_id))
            .permit(req.permit_id)
            .details(&OptOutsFiltered {
                registry_version: version,
                reference_time,
                policy: req.policy,
                exception_applied,
                checked: subjects.len(),
                excluded: exclude.len(),
            }),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(FilterResponse {
        permit_id: req.permit_id,
        registry_version: version,
        reference_time,
        policy: req.policy,
        exception_applied,
        checked: subjects.len(),
        exclude,
    }))
}
