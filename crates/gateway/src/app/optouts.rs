//! Opt-out registry services: planning and applying a bulk import.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::store::Tx;
use ehds_core::domain::{
    optout::{
        is_excluded, FilterPolicy, NewOptOutEvent, OptOutEvent, OptOutEventKind, PseudonymKey,
    },
    time::{self, Timestamp},
    DataCategory, Errors, FieldError, MemberState, OptOutId, OrgId, Permit, SubjectPseudonym,
};

/// Record ids of imported opt-outs derive from their source id, so re-importing is idempotent.
const IMPORT_NAMESPACE: Uuid = Uuid::from_u128(0x6568_6473_2d6f_7074_2d6f_7574_2d69_6d70);

/// One opt-out or withdrawal parsed from an import.
pub struct ImportItem {
    pub record_id: Option<OptOutId>,
    pub subject: SubjectPseudonym,
    pub member_state: MemberState,
    pub effective_at: Option<chrono::DateTime<chrono::Utc>>,
    pub withdrawn: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NdjsonLine {
    subject_pseudonym: String,
    member_state: Option<String>,
    effective_from: Option<DateTime<Utc>>,
    #[serde(default)]
    withdrawn: bool,
    /// The source system's id of the opt-out; makes re-imports idempotent.
    id: Option<String>,
}

/// The record id of an imported opt-out, derived from its id in the source system.
pub fn import_id(source: &str) -> OptOutId {
    OptOutId(Uuid::new_v5(&IMPORT_NAMESPACE, source.as_bytes()))
}

/// Reads an NDJSON import: one opt-out or withdrawal a line, blank lines skipped.
pub fn parse_ndjson(body: &str, default_state: &str) -> Result<Vec<ImportItem>, Vec<FieldError>> {
    let mut errors = Errors::default();
    let mut items = Vec::new();
    for (n, line) in body
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let field = format!("line {}", n + 1);
        let parsed: NdjsonLine = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                errors.push(&field, "invalid_line", e.to_string());
                continue;
            }
        };
        let subject = errors.take(
            format!("{field}: subject_pseudonym"),
            SubjectPseudonym::parse(&parsed.subject_pseudonym),
        );
        let state = errors.take(
            format!("{field}: member_state"),
            MemberState::parse(parsed.member_state.as_deref().unwrap_or(default_state)),
        );
        if let (Some(subject), Some(member_state)) = (subject, state) {
            items.push(ImportItem {
                record_id: parsed.id.as_deref().map(import_id),
                subject,
                member_state,
                effective_at: parsed.effective_from.map(time::normalise),
                withdrawn: parsed.withdrawn,
            });
        }
    }
    errors.into_result(|| items)
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ImportReport {
    pub registered: usize,
    pub withdrawn: usize,
    /// Rows already in the registry (re-imports of the same source ids).
    pub unchanged: usize,
    pub registry_version: i64,
}

/// Applies a parsed import on `tx`: each item registers a new record, withdraws the open
/// records it names (all of the subject's when it names none), or changes nothing when the
/// registry already holds it. Items without an effective time take effect `now`.
#[tracing::instrument(name = "Importing opt-outs", skip_all, fields(items = items.len()))]
pub async fn import(
    tx: &mut dyn Tx,
    key: &PseudonymKey,
    items: Vec<ImportItem>,
    channel: &str,
    now: Timestamp,
) -> crate::store::Result<ImportReport> {
    let mut report = ImportReport {
        registered: 0,
        withdrawn: 0,
        unchanged: 0,
        registry_version: 0,
    };
    for item in items {
        let subject_key = key.subject_key(&item.subject);
        // An import of a record already held still adds its match value: importing the
        // registry again from its source is how subjects registered before match values
        // were kept become matchable.
        tx.put_optout_match(&subject_key, &key.subject_match(&item.subject))
            .await?;
        let history = tx
            .optout_events_for(std::slice::from_ref(&subject_key), i64::MAX)
            .await?;
        let mut open: BTreeMap<Uuid, bool> = BTreeMap::new();
        for e in &history {
            open.insert(e.record_id.0, e.kind == OptOutEventKind::Registered);
        }
        let targets: Vec<OptOutId> = if item.withdrawn {
            match item.record_id {
                Some(id) => open
                    .get(&id.0)
                    .filter(|o| **o)
                    .map(|_| vec![id])
                    .unwrap_or_default(),
                None => open
                    .iter()
                    .filter(|(_, o)| **o)
                    .map(|(id, _)| OptOutId(*id))
                    .collect(),
            }
        } else {
            match item.record_id {
                Some(id) if open.contains_key(&id.0) => vec![],
                Some(id) => vec![id],
                None => vec![OptOutId::new()],
            }
        };
        if targets.is_empty() {
            report.unchanged += 1;
        }
        for record_id in targets {
            let stored = tx
                .append_optout(NewOptOutEvent {
                    record_id,
                    subject_key: subject_key.clone(),
                    kind: if item.withdrawn {
                        OptOutEventKind::Withdrawn
                    } else {
                        OptOutEventKind::Registered
                    },
                    member_state: item.member_state.clone(),
                    effective_at: item.effective_at.unwrap_or(now),
                    recorded_at: now,
                    channel: channel.to_owned(),
                })
                .await?;
            report.registry_version = stored.seq;
            if item.withdrawn {
                report.withdrawn += 1
            } else {
                report.registered += 1
            }
        }
    }
    if report.registry_version == 0 {
        report.registry_version = tx.optout_registry_version().await?;
    }
    Ok(report)
}

/// What the opt-out filter decided for a permit's processing at one data holder.
#[derive(Debug, Clone, PartialEq)]
pub struct Exclusions {
    /// The time the registry is read at (the permit's issue, or the amendment that added what
    /// the processing uses).
    pub reference_time: Timestamp,
    /// The permit holds an Art. 71(4) exception: nobody is excluded.
    pub exception_applied: bool,
    /// The subjects to leave out, in order.
    pub exclude: Vec<String>,
}

/// Which of `subjects` (valid pseudonyms) the processing of `categories` under `permit` at
/// `holder` must leave out, reading the registry at `version`.
#[allow(clippy::too_many_arguments)]
#[tracing::instrument(name = "Filtering opt-outs", skip_all,
    fields(permit = %permit.id(), subjects = subjects.len(), version = version))]
pub async fn exclusions(
    tx: &mut dyn Tx,
    key: &PseudonymKey,
    permit: &Permit,
    holder: &OrgId,
    categories: &[DataCategory],
    subjects: &BTreeSet<String>,
    version: i64,
    policy: FilterPolicy,
    now: Timestamp,
) -> crate::store::Result<Exclusions> {
    let reference_time = permit.optout_reference_time(holder, categories);
    let exception_applied = permit.terms().optout_exception.is_some();
    let mut exclude = Vec::new();
    if !exception_applied {
        let keys: Vec<(String, String)> = subjects
            .iter()
            .map(|s| {
                (
                    key.subject_key(&SubjectPseudonym::parse(s).expect("parsed above")),
                    s.clone(),
                )
            })
            .collect();
        let key_list: Vec<String> = keys.iter().map(|(k, _)| k.clone()).collect();
        let mut by_key: BTreeMap<String, Vec<OptOutEvent>> = BTreeMap::new();
        for ev in tx.optout_events_for(&key_list, version).await? {
            by_key.entry(ev.subject_key.clone()).or_default().push(ev);
        }
        for (subject_key, subject) in keys {
            if by_key
                .get(&subject_key)
                .is_some_and(|evs| is_excluded(evs, reference_time, now, policy))
            {
                exclude.push(subject);
            }
        }
    }
    Ok(Exclusions {
        reference_time,
        exception_applied,
        exclude,
    })
}

/// What `POST /v1/opt-outs/match` answers from: the match values of every subject the
/// processing of `categories` under `permit` at `holder` must leave out, reading the registry
/// at `version`, without knowing which subjects the holder has.
pub struct ScopedExclusions {
    pub reference_time: Timestamp,
    pub exception_applied: bool,
    /// Hex-encoded match values, one per excluded subject.
    pub match_values: Vec<String>,
    /// Excluded subjects without a match value (registered before they were kept).
    pub unmatchable: usize,
}

/// The registry's excluded subjects in a permit's scope (see [`ScopedExclusions`]).
#[tracing::instrument(name = "Scoping opt-outs", skip_all,
    fields(permit = %permit.id(), version = version))]
pub async fn scoped_exclusions(
    tx: &mut dyn Tx,
    permit: &Permit,
    holder: &OrgId,
    categories: &[DataCategory],
    version: i64,
    policy: FilterPolicy,
    now: Timestamp,
) -> crate::store::Result<ScopedExclusions> {
    let reference_time = permit.optout_reference_time(holder, categories);
    let exception_applied = permit.terms().optout_exception.is_some();
    let mut out = ScopedExclusions {
        reference_time,
        exception_applied,
        match_values: Vec::new(),
        unmatchable: 0,
    };
    if exception_applied {
        return Ok(out);
    }
    let mut by_key: BTreeMap<String, (Vec<OptOutEvent>, Option<String>)> = BTreeMap::new();
    for (event, match_value) in tx.optout_scope(version).await? {
        let entry = by_key.entry(event.subject_key.clone()).or_default();
        entry.0.push(event);
        entry.1 = entry.1.take().or(match_value);
    }
    for (events, match_value) in by_key.into_values() {
        if is_excluded(&events, reference_time, now, policy) {
            match match_value {
                Some(m) => out.match_values.push(m),
                None => out.unmatchable += 1,
            }
        }
    }
    Ok(out)
}
