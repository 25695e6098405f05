//! Opt-out registry services: planning and applying a bulk import.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};

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
use ehds_core::oprf;

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
#[derive(Debug, Clone)]
pub struct ScopedExclusions {
    pub reference_time: Timestamp,
    pub exception_applied: bool,
    /// One per excluded subject.
    pub match_values: Arc<Vec<[u8; oprf::OUTPUT_LEN]>>,
    /// Excluded subjects without a match value (registered before they were kept).
    pub unmatchable: usize,
}

/// The registry read at one version for one reference time: every holder of a round asks for
/// the same set, so it is read once, not once per holder.
type ScopeKey = (i64, Timestamp);

/// The last few scoped sets under [`FilterPolicy::AtIssue`] (the `strict` policy also depends
/// on the time of asking and is never cached). Rows up to a version never change; a match
/// value written later (an import filling in an old subject's) clears the cache of the
/// replica that wrote it, and can only make another replica's cached set report a subject as
/// unmatchable that has since become matchable: the node then checks with the disclosing
/// filter, which still excludes it. The cache never errs toward inclusion.
#[derive(Default)]
pub struct ScopeCache(Mutex<VecDeque<(ScopeKey, Arc<Vec<[u8; oprf::OUTPUT_LEN]>>, usize)>>);

const SCOPE_CACHE_ENTRIES: usize = 8;

impl ScopeCache {
    /// Forgets every set: this process has just written match values.
    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    fn get(&self, key: &ScopeKey) -> Option<(Arc<Vec<[u8; oprf::OUTPUT_LEN]>>, usize)> {
        let entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, v, n)| (v.clone(), *n))
    }

    fn put(&self, key: ScopeKey, values: Arc<Vec<[u8; oprf::OUTPUT_LEN]>>, unmatchable: usize) {
        let mut entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if entries.iter().any(|(k, _, _)| *k == key) {
            return;
        }
        if entries.len() == SCOPE_CACHE_ENTRIES {
            entries.pop_front();
        }
        entries.push_back((key, values, unmatchable));
    }
}

/// The registry's excluded subjects in a permit's scope (see [`ScopedExclusions`]).
#[allow(clippy::too_many_arguments)]
#[tracing::instrument(name = "Scoping opt-outs", skip_all,
    fields(permit = %permit.id(), version = version))]
pub async fn scoped_exclusions(
    tx: &mut dyn Tx,
    cache: &ScopeCache,
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
        match_values: Arc::default(),
        unmatchable: 0,
    };
    if exception_applied {
        return Ok(out);
    }
    let key = (version, reference_time);
    if policy == FilterPolicy::AtIssue {
        if let Some((values, unmatchable)) = cache.get(&key) {
            out.match_values = values;
            out.unmatchable = unmatchable;
            return Ok(out);
        }
    }
    let mut by_key: BTreeMap<String, (Vec<OptOutEvent>, Option<String>)> = BTreeMap::new();
    for (event, match_value) in tx.optout_scope(version).await? {
        let entry = by_key.entry(event.subject_key.clone()).or_default();
        entry.0.push(event);
        entry.1 = entry.1.take().or(match_value);
    }
    let mut values = Vec::new();
    for (events, match_value) in by_key.into_values() {
        if is_excluded(&events, reference_time, now, policy) {
            match match_value.as_deref().and_then(decode_match_value) {
                Some(m) => values.push(m),
                None => out.unmatchable += 1,
            }
        }
    }
    out.match_values = Arc::new(values);
    if policy == FilterPolicy::AtIssue {
        cache.put(key, out.match_values.clone(), out.unmatchable);
    }
    Ok(out)
}

/// A stored match value; one that does not decode counts as unmatchable, never as absent.
fn decode_match_value(hex_text: &str) -> Option<[u8; oprf::OUTPUT_LEN]> {
    hex::decode(hex_text).ok()?.try_into().ok()
}
