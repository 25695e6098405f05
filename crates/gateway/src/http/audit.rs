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
use chrono::{DateTime, Months, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{
    error::{ApiError, ApiResult, Problem},
    extract::{ApiQuery, Caller},
    AppState,
};
use crate::{
    app::audit::{signed_checkpoint, verify_chain, with_stored_tree},
    authz::{Action, Resource},
    fhir::audit_event,
    store::{AuditFilter, Page, Scope},
};
use ehds_core::domain::{
    audit::{AuditEntry, AuditSubject, Outcome, VerifyReport},
    audit_details::{AuditExported, ChainVerified, Listed, LogProofServed},
    time, DataCategory, Permit,
};

const MAX_EXPORT: i64 = 10_000;

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

#[derive(Debug, Clone, Copy, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    #[default]
    Json,
    Jsonl,
    Csv,
    Fhir,
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
    let limit = q.limit.unwrap_or(1000);
    if !(1..=MAX_EXPORT).contains(&limit) || q.from.zip(q.to).is_some_and(|(f, t)| f >= t) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            format!("limit must be within 1-{MAX_EXPORT} and `from` before `to`"),
        )
        .action(action));
    }
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
        limit,
    };
    let format = q.format.unwrap_or_default();
    // The read is recorded first, with the exact span it returns; the entries are then streamed
    // page by page, so memory stays bounded by a page whatever the export's size.
    let mut tx = state.store.begin().await?;
    let span = tx.audit_span(&filter).await?;
    tx.append_audit(
        caller
            .audit(action, AuditSubject::AuditLog)
            .details(&AuditExported {
                returned: span.count,
                format: format!("{format:?}").to_lowercase(),
                first_seq: span.first_seq,
                last_seq: span.last_seq,
            }),
    )
    .await?;
    tx.commit().await?;
    let public_url = state.settings.public_url();
    let content_type = match format {
        ExportFormat::Json => "application/json",
        ExportFormat::Jsonl => "application/x-ndjson",
        ExportFormat::Csv => "text/csv; charset=utf-8",
        ExportFormat::Fhir => "application/fhir+json",
    };
    let pages = ExportPages {
        store: state.store.clone(),
        filter: AuditFilter {
            after_seq: span.first_seq.map(|s| s - 1),
            until_seq: span.last_seq,
            limit: EXPORT_PAGE,
            ..filter
        },
        format,
        public_url,
        total: span.count,
        written: 0,
        stage: Stage::Opening,
    };
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

/// Entries per page of an export stream.
const EXPORT_PAGE: i64 = 500;

#[derive(Clone, Copy, PartialEq)]
enum Stage {
    Opening,
    Entries,
    Closing,
    Done,
}

/// The state of one export stream: the remaining span and how far the document got.
struct ExportPages {
    store: std::sync::Arc<dyn crate::store::Store>,
    filter: AuditFilter,
    format: ExportFormat,
    public_url: String,
    total: u64,
    written: u64,
    stage: Stage,
}

impl ExportPages {
    fn failed(mut self) -> Self {
        self.stage = Stage::Done;
        self
    }

    async fn next_chunk(&mut self) -> anyhow::Result<Option<axum::body::Bytes>> {
        let mut out = Vec::new();
        match self.stage {
            Stage::Done => return Ok(None),
            Stage::Opening => {
                self.stage = Stage::Entries;
                match self.format {
                    ExportFormat::Json => out.extend_from_slice(b"["),
                    ExportFormat::Jsonl => {}
                    ExportFormat::Csv => out.extend_from_slice(CSV_HEADER.as_bytes()),
                    ExportFormat::Fhir => {
                        let head = json!({
                            "resourceType": "Bundle", "type": "collection",
                            "timestamp": time::canonical(&time::now()), "total": self.total,
                        });
                        let head = serde_json::to_string(&head)?;
                        out.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
                        out.extend_from_slice(b",\"entry\":[");
                    }
                }
                return Ok(Some(out.into()));
            }
            Stage::Closing => {
                self.stage = Stage::Done;
                match self.format {
                    ExportFormat::Json => out.extend_from_slice(b"]"),
                    ExportFormat::Fhir => out.extend_from_slice(b"]}"),
                    ExportFormat::Jsonl | ExportFormat::Csv => return Ok(None),
                }
                return Ok(Some(out.into()));
            }
            Stage::Entries => {}
        }
        let page = if self.written >= self.total {
            vec![]
        } else {
            let mut tx = self.store.begin().await?;
            let page = tx.list_audit(&self.filter).await?;
            drop(tx);
            page
        };
        let Some(last) = page.last() else {
            self.stage = Stage::Closing;
            return Ok(Some(out.into()));
        };
        self.filter.after_seq = Some(last.seq);
        for e in &page {
            let first = self.written == 0;
            self.written += 1;
            match self.format {
                ExportFormat::Json => {
                    if !first {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut out, e)?;
                }
                ExportFormat::Jsonl => {
                    serde_json::to_writer(&mut out, e)?;
                    out.push(b'\n');
                }
                ExportFormat::Csv => out.extend_from_slice(csv_row(e)?.as_bytes()),
                ExportFormat::Fhir => {
                    if !first {
                        out.push(b',');
                    }
                    serde_json::to_writer(
                        &mut out,
                        &json!({
                            "fullUrl": format!("urn:uuid:{}", e.id),
                            "resource": audit_event::from_entry(e, &self.public_url),
                        }),
                    )?;
                }
            }
        }
        Ok(Some(out.into()))
    }
}

const CSV_HEADER: &str = "seq,recorded_at,actor_sub,actor_roles,actor_organisation,action,outcome,resource_type,resource_id,permit_id,request_id,http_status,detail,prev_hash,hash\n";

fn csv_row(e: &AuditEntry) -> anyhow::Result<String> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.write_record([
        e.seq.to_string(),
        time::canonical(&e.recorded_at),
        e.actor.sub.clone(),
        e.actor.roles.join(" "),
        e.actor.organisation.clone().unwrap_or_default(),
        e.action.clone(),
        e.outcome.as_str().to_owned(),
        e.resource_type.clone(),
        e.resource_id.clone().unwrap_or_default(),
        e.permit_id.clone().unwrap_or_default(),
        e.request_id.clone().unwrap_or_default(),
        e.http_status.map(|s| s.to_string()).unwrap_or_default(),
        e.detail.to_string(),
        e.prev_hash.clone(),
        e.hash.clone(),
    ])?;
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    Ok(String::from_utf8(bytes)?)
}

/// Verify the whole hash chain.
#[utoipa::path(get, path = "/v1/audit/verify", tag = "audit", security(("bearer" = [])),
    responses((status = 200, body = VerifyReport), (status = 403, body = Problem)))]
pub async fn verify(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<VerifyReport>> {
    let action = Action::AuditVerify;
    state.authorize(&caller, action, &Resource::AuditLog)?;
    let mut tx = state.store.begin().await?;
    let report = verify_chain(&mut *tx).await?;
    tx.append_audit(
        caller
            .audit(action, AuditSubject::AuditLog)
            .details(&ChainVerified {
                valid: report.valid,
                entries_checked: report.entries_checked,
                first_bad: report.first_bad.as_ref(),
            }),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(report))
}

/// GDPR Art. 30(1) record of one processing activity: a permit.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProcessingRecord {
    pub permit_id: String,
    pub status: String,
    pub controller: Value,
    /// Art. 74: the HDAB is controller for permit management and processor for the user in the SPE.
    pub roles: Value,
    pub purposes: Vec<String>,
    pub categories_of_data_subjects: Vec<String>,
    pub categories_of_personal_data: Vec<Value>,
    pub recipients: Vec<String>,
    pub member_states: Vec<String>,
    pub third_country_transfers: String,
    pub erasure: Value,
    pub security_measures: Vec<String>,
    pub optout_exception: bool,
    pub terms_version: i64,
}

fn processing_record(p: &Permit, state: &AppState, now: time::Timestamp) -> ProcessingRecord {
    let r = p.record();
    let hdab = &state.settings.hdab;
    let holders: Vec<String> = p.terms().data_holder_ids().map(|h| h.to_string()).collect();
    ProcessingRecord {
        permit_id: r.id.to_string(),
        status: p.state(now).name().to_owned(),
        controller: json!({"name": hdab.name, "contact": hdab.contact, "dpo_contact": hdab.dpo_contact,
                           "member_state": hdab.member_state}),
        roles: json!({"hdab": "controller for the assessment and permit management; processor for the data user inside the secure processing environment (Art. 74)",
                      "data_user": {"organisation": r.organisation, "principal_investigator": r.principal_investigator,
                                    "role": "controller of the processing inside the secure processing environment (Art. 74)"}}),
        purposes: p.terms().purposes.iter().map(|x| x.as_str().to_owned()).collect(),
        categories_of_data_subjects: vec![format!(
            "Natural persons whose electronic health data are held by {} and who had not opted out (Art. 71) at the reference time{}",
            holders.join(", "),
            if p.terms().optout_exception.is_some() { " (Art. 71(4) exception recorded)" } else { "" })],
        categories_of_personal_data: p.terms().categories.iter().map(|g| {
            let c: DataCategory = g.value;
            json!({"category": c.as_str(), "article": format!("51(1)({})", c.article_point()), "since": g.added_at})
        }).collect(),
        recipients: vec![format!("{} (data user, inside the secure processing environment; only anonymous, DP-protected aggregates leave)", r.organisation)],
        member_states: p.terms().member_states.iter().map(|m| m.as_str().to_owned()).collect(),
        third_country_transfers: "none: processing stays in the secure processing environments of the listed member states".into(),
        erasure: json!({"permit_expires_at": r.expires_at,
                        "delete_spe_data_by": r.expires_at.checked_add_months(Months::new(6)),
                        "rule": "data in the secure processing environment are deleted within 6 months of expiry (Art. 68(12))"}),
        security_measures: hdab.security_measures.clone(),
        optout_exception: p.terms().optout_exception.is_some(),
        terms_version: r.terms_version,
    }
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
    let action = Action::AuditRecords;
    state.authorize(&caller, action, &Resource::AuditLog)?;
    let page: Page = params.page()?;
    let now = time::now();
    let mut tx = state.store.begin().await?;
    let permits = tx.list_permits(&Scope::All, page).await?;
    let records: Vec<ProcessingRecord> = permits
        .iter()
        .map(|p| processing_record(p, &state, now))
        .collect();
    tx.append_audit(
        caller
            .audit(action, AuditSubject::AuditLog)
            .details(&Listed {
                returned: records.len(),
            }),
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
    let action = Action::AuditProof;
    state.authorize(&caller, action, &Resource::AuditLog)?;
    let mut tx = state.store.begin().await?;
    tx.append_audit(
        caller
            .audit(action, AuditSubject::AuditLog)
            .details(&LogProofServed {
                proof: "checkpoint",
                index: None,
                from: None,
                size: None,
            }),
    )
    .await?;
    let (_, note) = signed_checkpoint(&mut *tx, &state.log_signer).await?;
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

/// An audit path (RFC 9162 §2.1.3): the leaf's hash and the sibling hashes from the leaf up.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct InclusionProof {
    pub index: u64,
    pub size: u64,
    /// `SHA-256(0x00 || canonical entry)`, base64; recompute it from the exported entry.
    pub leaf_hash: String,
    /// Base64 SHA-256 hashes, leaf to root.
    pub hashes: Vec<String>,
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
    let (index, size) = (q.index, q.size);
    let answer = with_stored_tree(&mut *tx, |t| {
        Ok((
            translog::inclusion_proof(t, index, size)?,
            t.perfect(0, index)?,
        ))
    })
    .await?;
    let (hashes, leaf) = answer.map_err(|e| proof_error(e, action))?;
    tx.append_audit(
        caller
            .audit(action, AuditSubject::AuditLog)
            .details(&LogProofServed {
                proof: "inclusion",
                index: Some(index),
                from: None,
                size: Some(size),
            }),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(InclusionProof {
        index,
        size,
        leaf_hash: b64(&leaf),
        hashes: hashes.iter().map(b64).collect(),
    }))
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

/// A consistency proof (RFC 9162 §2.1.4): the tree of `from` leaves is a prefix of the tree of
/// `to` leaves. Empty when `from` is 0 or equal to `to`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ConsistencyProof {
    pub from: u64,
    pub to: u64,
    /// Base64 SHA-256 hashes.
    pub hashes: Vec<String>,
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
    let (from, to) = (q.from, q.to);
    let hashes = with_stored_tree(&mut *tx, |t| translog::consistency_proof(t, from, to))
        .await?
        .map_err(|e| proof_error(e, action))?;
    tx.append_audit(
        caller
            .audit(action, AuditSubject::AuditLog)
            .details(&LogProofServed {
                proof: "consistency",
                index: None,
                from: Some(from),
                size: Some(to),
            }),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(ConsistencyProof {
        from,
        to,
        hashes: hashes.iter().map(b64).collect(),
    }))
}

fn b64(hash: &translog::Hash) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(hash)
}

/// A proof the parameters make impossible, as a 400 with a stable code.
fn proof_error(e: translog::Error, action: Action) -> ApiError {
    let code = match &e {
        translog::Error::IndexOutOfRange { .. } => "index_out_of_range",
        translog::Error::SizesOutOfOrder { .. } => "sizes_out_of_order",
        translog::Error::TreeTooSmall { .. } => "size_beyond_tree",
        _ => return ApiError::internal(anyhow::anyhow!("audit log proof: {e}")),
    };
    ApiError::new(StatusCode::BAD_REQUEST, code, e.to_string()).action(action)
}
