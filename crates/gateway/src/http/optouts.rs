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
use crate::app::reads::{self, Read};
use crate::{
    app::optouts,
    authz::{Action, Resource},
    fhir::consent,
    store::Tx,
};
use base64::{engine::general_purpose::STANDARD as BASE64, Engine as _};
use ehds_core::oprf::ELEMENT_LEN;
use ehds_core::{
    domain::{
        audit::AuditSubject,
        optout::{FilterPolicy, OptOutEvent, OptOutEventKind},
        time, DataCategory, Errors, FieldError, MemberState, OptOutId, PermitId, PermitState,
        SubjectPseudonym,
    },
    wire::{FilterRequest, FilterResponse, MatchRequest, MatchResponse},
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
        .route(
            "/opt-outs/match",
            post(match_opt_outs).layer(DefaultBodyLimit::max(BULK_BODY_LIMIT)),
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
    let mut tx = state.store.begin().await?;
    let stored = optouts::register(
        &mut *tx,
        &caller.requester(),
        &state.pseudonym_key,
        optouts::Registration {
            subject: subject.expect("checked"),
            member_state: member_state.expect("checked"),
            effective_at: req.effective_from.map(time::normalise).unwrap_or(now),
            channel: channel.expect("checked"),
        },
        now,
    )
    .await?;
    tx.commit().await?;
    // a match value may have been added: answers read before must not outlive it
    state.optout_scopes.clear();
    let record_id = stored.record_id;
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
    reads::record_read(
        &mut *tx,
        &caller.requester(),
        Read::of(action, AuditSubject::OptOut(id)),
    )
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
    let effective_at = req.effective_at.map(time::normalise).unwrap_or(now);
    let mut tx = state.store.begin().await?;
    let events = optouts::withdraw(
        &mut *tx,
        &caller.requester(),
        id,
        effective_at,
        channel,
        now,
    )
    .await
    .map_err(|e| match e {
        optouts::WithdrawError::NotFound => tag(ApiError::not_found("opt-out", id)),
        optouts::WithdrawError::AlreadyWithdrawn => tag(ApiError::new(
            StatusCode::CONFLICT,
            "invalid_transition",
            "the opt-out is already withdrawn",
        )
        .with("current_state", json!("withdrawn"))),
        optouts::WithdrawError::Store(e) => e.into(),
    })?;
    tx.commit().await?;
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
    let report = optouts::import(
        &mut *tx,
        &caller.requester(),
        &state.pseudonym_key,
        items,
        media,
        &channel,
        time::now(),
    )
    .await?;
    tx.commit().await?;
    // match values may have been added: answers read before must not outlive them
    state.optout_scopes.clear();
    Ok(Json(report))
}

/// Loads and checks the scope of an opt-out check (the permit is active and the caller may
/// check it, the categories and the pinned version are valid); `e` holds the request's other
/// field errors, refused together with these.
#[allow(clippy::too_many_arguments)]
async fn check_scope(
    state: &AppState,
    caller: &Caller,
    tx: &mut dyn Tx,
    permit_id: PermitId,
    categories: &[String],
    registry_version: Option<i64>,
    policy: FilterPolicy,
    mut e: Errors,
) -> ApiResult<optouts::CheckScope> {
    let action = Action::OptOutFilter;
    let tag = |e: ApiError| e.action(action).on(AuditSubject::Permit(permit_id));
    let permit = load_permit(&mut *tx, permit_id, action).await?;
    state
        .authorize(caller, action, &Resource::Permit(&permit))
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
    let categories: Vec<DataCategory> = categories
        .iter()
        .enumerate()
        .filter_map(|(i, s)| e.take(format!("categories[{i}]"), DataCategory::parse(s)))
        .collect();
    let current = tx.optout_registry_version().await?;
    let version = registry_version.unwrap_or(current);
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
    Ok(optouts::CheckScope {
        permit,
        holder,
        categories,
        version,
        policy,
        now,
    })
}

/// Which of a data holder's subjects must be excluded from processing under a permit. The
/// holder discloses its cohort to the gateway here; `POST /v1/opt-outs/match` answers the same
/// question without that, and is what the node agent uses.
#[utoipa::path(post, path = "/v1/opt-outs/filter", tag = "opt-outs", request_body = FilterRequest,
    security(("bearer" = [])),
    responses((status = 200, body = FilterResponse), (status = 403, body = Problem), (status = 409, body = Problem)))]
pub async fn filter(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<FilterRequest>,
) -> ApiResult<Json<FilterResponse>> {
    let mut e = Errors::default();
    let subjects: BTreeSet<String> = req
        .subjects
        .iter()
        .enumerate()
        .filter_map(|(i, s)| e.take(format!("subjects[{i}]"), SubjectPseudonym::parse(s)))
        .map(|s| s.as_str().to_owned())
        .collect();
    let mut tx = state.store.begin().await?;
    let scope = check_scope(
        &state,
        &caller,
        &mut *tx,
        req.permit_id,
        &req.categories,
        req.registry_version,
        req.policy,
        e,
    )
    .await?;
    let answer = optouts::filter(
        &mut *tx,
        &caller.requester(),
        &state.pseudonym_key,
        &scope,
        &subjects,
    )
    .await?;
    tx.commit().await?;
    Ok(Json(answer))
}

/// Blinded elements one match request may carry: the largest cohort a holder may check at
/// once.
const MAX_BLINDED: usize = 1_000_000;

/// The opt-out check without disclosure (docs/threat-model.md, "Opt-out filtering"): the
/// holder sends its pseudonyms blinded, the gateway multiplies them by the registry's key and
/// returns them with the salted match values of every opted-out subject in the permit's scope;
/// the holder unblinds, salts and intersects locally. The gateway learns how many elements were
/// sent (the holder pads), never which subjects they are or how many were excluded.
#[utoipa::path(post, path = "/v1/opt-outs/match", tag = "opt-outs", request_body = MatchRequest,
    security(("bearer" = [])),
    responses((status = 200, body = MatchResponse), (status = 403, body = Problem),
        (status = 404, body = Problem), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn match_opt_outs(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<MatchRequest>,
) -> ApiResult<Json<MatchResponse>> {
    let mut e = Errors::default();
    if req.blinded.len() > MAX_BLINDED {
        e.push(
            "blinded",
            "too_many_elements",
            format!("at most {MAX_BLINDED} elements a request"),
        );
    }
    let key = state.pseudonym_key.match_key();
    let evaluated: Vec<[u8; ELEMENT_LEN]> = req
        .blinded
        .iter()
        .take(MAX_BLINDED)
        .enumerate()
        .filter_map(|(i, b)| {
            let evaluated = BASE64
                .decode(b)
                .map_err(|_| ("invalid_element", "not base64".to_owned()))
                .and_then(|bytes| {
                    key.evaluate(&bytes)
                        .map_err(|err| ("invalid_element", err.to_string()))
                });
            e.take(format!("blinded[{i}]"), evaluated)
        })
        .collect();
    let mut tx = state.store.begin().await?;
    let scope = check_scope(
        &state,
        &caller,
        &mut *tx,
        req.permit_id,
        &req.categories,
        req.registry_version,
        req.policy,
        e,
    )
    .await?;
    let answer = optouts::answer_match(
        &mut *tx,
        &caller.requester(),
        &state.pseudonym_key,
        &state.optout_scopes,
        &scope,
        evaluated,
    )
    .await
    .map_err(|e| match e {
        optouts::MatchError::Random => {
            ApiError::internal(anyhow::anyhow!("the system's random source failed"))
        }
        optouts::MatchError::Store(e) => e.into(),
    })?;
    tx.commit().await?;
    Ok(Json(answer))
}
