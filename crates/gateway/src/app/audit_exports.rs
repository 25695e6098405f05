//! What auditors take away from the trail: a filtered span of audit entries as JSON, JSON
//! Lines, CSV or a FHIR R4 AuditEvent Bundle, streamed a page at a time, and the GDPR Art. 30
//! records of processing, one per permit. Each read is audited in the reader's transaction,
//! with exactly what it returns.

use std::sync::Arc;

use chrono::Months;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::Requester;
use crate::{
    authz::Action,
    configuration::HdabSettings,
    fhir::audit_event,
    store::{AuditFilter, Page, Scope, Store, StoreError, Tx},
};
use ehds_core::domain::{
    audit::{AuditEntry, AuditSubject},
    audit_details::{AuditExported, Listed},
    time, DataCategory, Permit,
};

/// Most entries one export returns; a larger span is read in several, by `after_seq`.
pub const MAX_EXPORT: i64 = 10_000;

/// Entries per page of an export stream: memory holds one page whatever the export's size.
const EXPORT_PAGE: i64 = 500;

#[derive(Debug, Clone, Copy, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    #[default]
    Json,
    Jsonl,
    Csv,
    Fhir,
}

impl ExportFormat {
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Json => "application/json",
            Self::Jsonl => "application/x-ndjson",
            Self::Csv => "text/csv; charset=utf-8",
            Self::Fhir => "application/fhir+json",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Jsonl => "jsonl",
            Self::Csv => "csv",
            Self::Fhir => "fhir",
        }
    }
}

/// An export an auditor may ask for: at most [`MAX_EXPORT`] entries, a window that is not
/// empty by construction.
#[derive(Debug)]
pub struct ExportRequest {
    filter: AuditFilter,
    format: ExportFormat,
}

impl ExportRequest {
    /// Refused (with the reason) when `filter.limit` is outside 1-[`MAX_EXPORT`] or `from` is
    /// not before `to`.
    pub fn new(filter: AuditFilter, format: ExportFormat) -> Result<Self, String> {
        let ordered = filter.from.zip(filter.to).is_none_or(|(f, t)| f < t);
        if !(1..=MAX_EXPORT).contains(&filter.limit) || !ordered {
            return Err(format!(
                "limit must be within 1-{MAX_EXPORT} and `from` before `to`"
            ));
        }
        Ok(Self { filter, format })
    }

    pub fn format(&self) -> ExportFormat {
        self.format
    }
}

/// Records the export with the exact span of entries it returns, in `tx`, and gives the pages
/// of that span to stream once the caller has committed: entries appended meanwhile are not
/// part of it.
#[tracing::instrument(name = "Opening an audit export", skip_all)]
pub async fn open_export(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    request: ExportRequest,
    store: Arc<dyn Store>,
    public_url: String,
) -> Result<ExportPages, StoreError> {
    let ExportRequest { filter, format } = request;
    let span = tx.audit_span(&filter).await?;
    tx.append_audit(
        by.audit(Action::AuditRead, AuditSubject::AuditLog)
            .details(&AuditExported {
                returned: span.count,
                format: format.name().to_owned(),
                first_seq: span.first_seq,
                last_seq: span.last_seq,
            }),
    )
    .await?;
    Ok(ExportPages {
        store,
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
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Stage {
    Opening,
    Entries,
    Closing,
    Done,
}

/// One export's document, a chunk at a time: the opening, the entries a page at a time (each
/// page read in a transaction of its own), the closing.
pub struct ExportPages {
    store: Arc<dyn Store>,
    filter: AuditFilter,
    format: ExportFormat,
    public_url: String,
    total: u64,
    written: u64,
    stage: Stage,
}

impl ExportPages {
    /// Ends the stream after a failed chunk.
    pub fn failed(mut self) -> Self {
        self.stage = Stage::Done;
        self
    }

    /// The next chunk of the document, `None` at its end.
    pub async fn next_chunk(&mut self) -> anyhow::Result<Option<bytes::Bytes>> {
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

impl ProcessingRecord {
    fn of(p: &Permit, hdab: &HdabSettings, now: time::Timestamp) -> Self {
        let r = p.record();
        let holders: Vec<String> = p.terms().data_holder_ids().map(|h| h.to_string()).collect();
        Self {
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
}

/// The records of processing of a page of permits, the read audited with how many it returned.
#[tracing::instrument(name = "Listing records of processing", skip_all)]
pub async fn records_of_processing(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    hdab: &HdabSettings,
    page: Page,
    now: time::Timestamp,
) -> Result<Vec<ProcessingRecord>, StoreError> {
    let permits = tx.list_permits(&Scope::All, page).await?;
    let records: Vec<ProcessingRecord> = permits
        .iter()
        .map(|p| ProcessingRecord::of(p, hdab, now))
        .collect();
    tx.append_audit(
        by.audit(Action::AuditRecords, AuditSubject::AuditLog)
            .details(&Listed {
                returned: records.len(),
            }),
    )
    .await?;
    Ok(records)
}
