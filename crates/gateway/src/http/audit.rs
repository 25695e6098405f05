//! The audit trail for auditors: filtered export (JSON, JSON Lines, CSV, FHIR R4 AuditEvent
//! Bundle), chain verification, and the GDPR Art. 30 records of processing. Every read of audit
//! data is itself audited.

use axum::{
    extract::State,
    http::{header, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
    Json, Router,
};
use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::{
    error::{ApiError, ApiResult, Problem},
    extract::{ApiQuery, Caller},
    AppState,
};
use crate::{
    app::{
        audit::{self as service, ConsistencyProof, InclusionProof, ProofError},
        audit_exports::{self, ExportFormat, ExportRequest, ProcessingRecord},
    },
    authz::{Action, Resource},
    store::{AuditFilter, Page},
};
use ehds_core::domain::{
    audit::{AuditEntry, Outcome, VerifyReport},
    time,
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/audit/events", get(events))
        .route("/audit/verify", get(verify))
        .route("/audit/records-of-processing", get(records_of_processing))
        .route("/audit/log/checkpoint", get(log_checkpoint))
        .route("/audit/log/key", get(log_key))
        .route("/audit/log/inclusion", get(log_inclusion))
        .route("/audit/log/consistency", get(log_consistency))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct EventQuery {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub actor: Option<String>,
    pub action: Option<String>,
    pub outcome: Option<Outcome>,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    pub permit_id: Option<String>,
    /// Return entries after this sequence number (paging).
    pub after_seq: Option<i64>,
    /// 1-10000, default 1000.
    #[param(minimum = 1, maximum = 10000)]
    pub limit: Option<i64>,
    pub format: Option<ExportFormat>,
}

/// Export audit entries.
#[utoipa::path(get, path = "/v1/audit/events", tag = "audit", params(EventQuery), security(("bearer" = [])),
    responses((status = 200, description = "The entries in the `format` asked for", content(
            (Vec<AuditEntry> = "application/json"), (String = "application/x-ndjson"),
            (String = "text/csv"), (serde_json::Value = "application/fhir+json"))),
        (status = 400, body = Problem), (status = 403, body = Problem)))]
pub async fn events(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<EventQuery>,
) -> ApiResult<Response> {
    let action = Action::AuditRead;
    state.authorize(&caller, action, &Resource::AuditLog)?;
    let filter = AuditFilter {
        from: q.from.map(time::normalise),
        to: q.to.map(time::normalise),
        actor: q.actor,
        action: q.action,
        outcome: q.outcome,
        resource_type: q.resource_type,
        resource_id: q.resource_id,
        permit_id: q.permit_id,
        after_seq: q.after_seq,
        until_seq: None,
        limit: q.limit.unwrap_or(1000),
    };
    let request = ExportRequest::new(filter, q.format.unwrap_or_default()).map_err(|detail| {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", detail).action(action)
    })?;
    let content_type = request.format().content_type();
    // The read is recorded first, with the exact span it returns; the entries are then streamed
    // page by page, so memory stays bounded by a page whatever the export's size.
    let mut tx = state.store.begin().await?;
    let pages = audit_exports::open_export(
        &mut *tx,
        &caller.requester(),
        request,
        state.store.clone(),
        state.settings.public_url(),
    )
    .await?;
    tx.commit().await?;
    // Fused: the gzip layer polls once more after the end, which a bare `unfold` answers with a
    // panic (the connection then dies before the compressed trailer is sent).
    let body = axum::body::Body::from_stream(futures_util::StreamExt::fuse(
        futures_util::stream::unfold(pages, |mut pages| async move {
            match pages.next_chunk().await {
                Ok(Some(chunk)) => Some((Ok::<_, std::io::Error>(chunk), pages)),
                Ok(None) => None,
                Err(e) => {
                    // The status is sent; cutting the body short makes the client see the failure.
                    tracing::error!(error = %e, "audit export failed part-way");
                    Some((
                        Err(std::io::Error::other("audit export failed")),
                        pages.failed(),
                    ))
                }
            }
        }),
    ));
    Ok(([(header::CONTENT_TYPE, content_type)], body).into_response())
}

/// Verify the whole hash chain.
#[utoipa::path(get, path = "/v1/audit/verify", tag = "audit", security(("bearer" = [])),
    responses((status = 200, body = VerifyReport), (status = 403, body = Problem)))]
pub async fn verify(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<VerifyReport>> {
    state.authorize(&caller, Action::AuditVerify, &Resource::AuditLog)?;
    let mut tx = state.store.begin().await?;
    let report = service::verify(&mut *tx, &caller.requester()).await?;
    tx.commit().await?;
    Ok(Json(report))
}

/// GDPR Art. 30 records of processing, one per permit.
#[utoipa::path(get, path = "/v1/audit/records-of-processing", tag = "audit", security(("bearer" = [])),
    params(super::applications::ListParams),
    responses((status = 200, body = Vec<ProcessingRecord>), (status = 403, body = Problem)))]
pub async fn records_of_processing(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<super::applications::ListParams>,
) -> ApiResult<Json<Vec<ProcessingRecord>>> {
    state.authorize(&caller, Action::AuditRecords, &Resource::AuditLog)?;
    let page: Page = params.page()?;
    let mut tx = state.store.begin().await?;
    let records = audit_exports::records_of_processing(
        &mut *tx,
        &caller.requester(),
        &state.settings.hdab,
        page,
        time::now(),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(records))
}

// The verifiable log: signed checkpoints and Merkle proofs (docs/verifiable-log.md).

const TEXT_PLAIN: &str = "text/plain; charset=utf-8";

/// The latest signed checkpoint of the audit log.
///
/// A C2SP `tlog-checkpoint` (origin, tree size, base64 root hash) signed as a C2SP signed note
/// with the gateway's Ed25519 log key (`GET /v1/audit/log/key`). Entry `seq` is leaf `seq - 1`;
/// the read is itself audited, and the checkpoint covers its own entry. Auditors keep
/// checkpoints and later prove with `/v1/audit/log/consistency` (or `ehds-gateway audit verify
/// --checkpoint`) that the log still extends them.
#[utoipa::path(get, path = "/v1/audit/log/checkpoint", tag = "audit", security(("bearer" = [])),
    responses((status = 200, description = "The signed checkpoint note", content_type = "text/plain", body = String),
               (status = 403, body = Problem)))]
pub async fn log_checkpoint(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    state.authorize(&caller, Action::AuditProof, &Resource::AuditLog)?;
    let mut tx = state.store.begin().await?;
    let note = service::serve_checkpoint(&mut *tx, &caller.requester(), &state.log_signer).await?;
    tx.commit().await?;
    Ok(([(header::CONTENT_TYPE, TEXT_PLAIN)], note).into_response())
}

/// The verifier key of the audit log's checkpoints, for auditors and witnesses to pin.
///
/// `<origin>+<key id>+<base64(0x01 || Ed25519 public key)>`, the verifier key format of C2SP
/// signed notes. Reading it is not audited: it holds no audit data.
#[utoipa::path(get, path = "/v1/audit/log/key", tag = "audit", security(("bearer" = [])),
    responses((status = 200, description = "The verifier key", content_type = "text/plain", body = String),
               (status = 403, body = Problem)))]
pub async fn log_key(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    state.authorize(&caller, Action::AuditProof, &Resource::AuditLog)?;
    let key = state.log_signer.verifier().to_key_string() + "\n";
    Ok(([(header::CONTENT_TYPE, TEXT_PLAIN)], key).into_response())
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct InclusionQuery {
    /// Leaf index: the entry's `seq` minus 1.
    pub index: u64,
    /// Tree size of the checkpoint to prove against.
    pub size: u64,
}

/// Inclusion proof of one audit entry in the tree of a checkpoint.
///
/// Bad parameters: `index_out_of_range` (index not below size), `size_beyond_tree` (size larger
/// than the log).
#[utoipa::path(get, path = "/v1/audit/log/inclusion", tag = "audit", params(InclusionQuery), security(("bearer" = [])),
    responses((status = 200, body = InclusionProof), (status = 400, body = Problem), (status = 403, body = Problem)))]
pub async fn log_inclusion(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<InclusionQuery>,
) -> ApiResult<Json<InclusionProof>> {
    let action = Action::AuditProof;
    state.authorize(&caller, action, &Resource::AuditLog)?;
    let mut tx = state.store.begin().await?;
    let proof = service::prove_inclusion(&mut *tx, &caller.requester(), q.index, q.size)
        .await
        .map_err(|e| refused(e, action))?;
    tx.commit().await?;
    Ok(Json(proof))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ConsistencyQuery {
    /// Tree size of the older checkpoint.
    pub from: u64,
    /// Tree size of the newer checkpoint.
    pub to: u64,
}

/// Consistency proof between two tree sizes of the audit log.
///
/// Bad parameters: `sizes_out_of_order` (`from` larger than `to`), `size_beyond_tree` (`to`
/// larger than the log).
#[utoipa::path(get, path = "/v1/audit/log/consistency", tag = "audit", params(ConsistencyQuery), security(("bearer" = [])),
    responses((status = 200, body = ConsistencyProof), (status = 400, body = Problem), (status = 403, body = Problem)))]
pub async fn log_consistency(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<ConsistencyQuery>,
) -> ApiResult<Json<ConsistencyProof>> {
    let action = Action::AuditProof;
    state.authorize(&caller, action, &Resource::AuditLog)?;
    let mut tx = state.store.begin().await?;
    let proof = service::prove_consistency(&mut *tx, &caller.requester(), q.from, q.to)
        .await
        .map_err(|e| refused(e, action))?;
    tx.commit().await?;
    Ok(Json(proof))
}

/// A proof the parameters make impossible, as a 400 with a stable code.
fn refused(e: ProofError, action: Action) -> ApiError {
    match e {
        ProofError::Impossible { code, detail } => {
            ApiError::new(StatusCode::BAD_REQUEST, code, detail).action(action)
        }
        ProofError::Store(e) => e.into(),
    }
}
