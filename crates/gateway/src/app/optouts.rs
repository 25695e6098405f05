//! Opt-out registry services: registration, withdrawal and bulk import, each stored with its
//! audit entry, and the two checks a data holder runs before processing: the filter that
//! takes the cohort's pseudonyms, and the match that takes only blinded elements
//! (docs/threat-model.md, "Opt-out filtering").

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Requester;
use crate::{
    authz::Action,
    store::{StoreError, Tx},
};
use base64::{engine::general_purpose::STANDARD as BASE64, Engine as _};
use ehds_core::domain::{
    audit::AuditSubject,
    audit_details::{
        OptOutRegistered, OptOutWithdrawn, OptOutsFiltered, OptOutsImported, OptOutsMatched,
    },
    optout::{
        is_excluded, salted_match, FilterPolicy, NewOptOutEvent, OptOutEvent, OptOutEventKind,
        PseudonymKey, SALTED_MATCH_LEN,
    },
    time::{self, Timestamp},
    DataCategory, Errors, FieldError, MemberState, OptOutId, OrgId, Permit, PermitId,
    SubjectPseudonym,
};
use ehds_core::oprf;
use ehds_core::wire::{FilterResponse, MatchResponse};

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

/// An opt-out as its registration states it, parsed.
pub struct Registration {
    pub subject: SubjectPseudonym,
    pub member_state: MemberState,
    pub effective_at: Timestamp,
    pub channel: String,
}

/// Registers an opt-out: the registry row, the subject's match value and the audit entry.
#[tracing::instrument(name = "Registering an opt-out", skip_all)]
pub async fn register(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    key: &PseudonymKey,
    registration: Registration,
    now: Timestamp,
) -> crate::store::Result<OptOutEvent> {
    let record_id = OptOutId::new();
    let subject_key = key.subject_key(&registration.subject);
    tx.put_optout_match(&subject_key, &key.subject_match(&registration.subject))
        .await?;
    let stored = tx
        .append_optout(NewOptOutEvent {
            record_id,
            subject_key,
            kind: OptOutEventKind::Registered,
            member_state: registration.member_state,
            effective_at: registration.effective_at,
            recorded_at: now,
            channel: registration.channel,
        })
        .await?;
    tx.append_audit(
        by.audit(Action::OptOutRegister, AuditSubject::OptOut(record_id))
            .details(&OptOutRegistered {
                registry_version: stored.seq,
                effective_at: stored.effective_at,
                channel: &stored.channel,
            }),
    )
    .await?;
    Ok(stored)
}

/// Why a withdrawal was not recorded; nothing was stored.
#[derive(Debug)]
pub enum WithdrawError {
    NotFound,
    AlreadyWithdrawn,
    Store(StoreError),
}

impl From<StoreError> for WithdrawError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Withdraws opt-out `id` (its registration stays in the history); returns the whole history.
#[tracing::instrument(name = "Withdrawing an opt-out", skip_all, fields(record = %id.0))]
pub async fn withdraw(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    id: OptOutId,
    effective_at: Timestamp,
    channel: String,
    now: Timestamp,
) -> Result<Vec<OptOutEvent>, WithdrawError> {
    let mut events = tx.optout_record(id).await?;
    let last = events.last().ok_or(WithdrawError::NotFound)?.clone();
    if last.kind == OptOutEventKind::Withdrawn {
        return Err(WithdrawError::AlreadyWithdrawn);
    }
    let stored = tx
        .append_optout(NewOptOutEvent {
            record_id: id,
            subject_key: last.subject_key,
            kind: OptOutEventKind::Withdrawn,
            member_state: last.member_state,
            effective_at,
            recorded_at: now,
            channel,
        })
        .await?;
    tx.append_audit(
        by.audit(Action::OptOutWithdraw, AuditSubject::OptOut(id))
            .details(&OptOutWithdrawn {
                registry_version: stored.seq,
                effective_at: stored.effective_at,
            }),
    )
    .await?;
    events.push(stored);
    Ok(events)
}

/// Applies a parsed import on `tx`: each item registers a new record, withdraws the open
/// records it names (all of the subject's when it names none), or changes nothing when the
/// registry already holds it. Items without an effective time take effect `now`.
#[tracing::instrument(name = "Importing opt-outs", skip_all, fields(items = items.len()))]
pub async fn import(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    key: &PseudonymKey,
    items: Vec<ImportItem>,
    format: &str,
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
    tx.append_audit(
        by.audit(Action::OptOutImport, AuditSubject::OptOutImport)
            .details(&OptOutsImported {
                format,
                registered: report.registered,
                withdrawn: report.withdrawn,
                unchanged: report.unchanged,
                registry_version: report.registry_version,
            }),
    )
    .await?;
    Ok(report)
}

/// What an opt-out check is about, established and authorised by its front end: an active
/// permit, the holder asking, the categories about to be processed, the registry version.
pub struct CheckScope {
    pub permit: Permit,
    pub holder: OrgId,
    pub categories: Vec<DataCategory>,
    pub version: i64,
    pub policy: FilterPolicy,
    pub now: Timestamp,
}

impl CheckScope {
    fn permit_id(&self) -> PermitId {
        self.permit.id()
    }
}

/// Which of `subjects` (valid pseudonyms) the processing in `scope` must leave out; the
/// audit entry records the counts, never a pseudonym.
#[tracing::instrument(name = "Filtering opt-outs", skip_all,
    fields(permit = %scope.permit.id(), subjects = subjects.len(), version = scope.version))]
pub async fn filter(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    key: &PseudonymKey,
    scope: &CheckScope,
    subjects: &BTreeSet<String>,
) -> crate::store::Result<FilterResponse> {
    let reference_time = scope
        .permit
        .optout_reference_time(&scope.holder, &scope.categories);
    let exception_applied = scope.permit.terms().optout_exception.is_some();
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
        for ev in tx.optout_events_for(&key_list, scope.version).await? {
            by_key.entry(ev.subject_key.clone()).or_default().push(ev);
        }
        for (subject_key, subject) in keys {
            if by_key
                .get(&subject_key)
                .is_some_and(|evs| is_excluded(evs, reference_time, scope.now, scope.policy))
            {
                exclude.push(subject);
            }
        }
    }
    let id = scope.permit_id();
    tx.append_audit(
        by.audit(Action::OptOutFilter, AuditSubject::Permit(id))
            .permit(id)
            .details(&OptOutsFiltered {
                registry_version: scope.version,
                reference_time,
                policy: scope.policy,
                exception_applied,
                checked: subjects.len(),
                excluded: exclude.len(),
            }),
    )
    .await?;
    Ok(FilterResponse {
        permit_id: id,
        registry_version: scope.version,
        reference_time,
        policy: scope.policy,
        exception_applied,
        checked: subjects.len(),
        exclude,
    })
}

/// The smallest match answer: a registry with few opt-outs in scope does not say how few.
const MIN_MATCH_ENTRIES: usize = 64;

/// Why a match was not answered.
#[derive(Debug)]
pub enum MatchError {
    /// The system's random source failed (no salt, no padding).
    Random,
    Store(StoreError),
}

impl From<StoreError> for MatchError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

fn random_bytes<const N: usize>() -> Result<[u8; N], MatchError> {
    ehds_core::key_file::random_bytes().map_err(|_| MatchError::Random)
}

/// The opt-out check without disclosure: each of the holder's blinded `elements` (already
/// checked to be valid group elements, [`oprf::OprfKey::evaluate`]) times the registry's key,
/// and the salted, padded match values of every subject excluded in `scope`. The audit entry
/// records what was evaluated and sent, never whom.
#[tracing::instrument(name = "Matching opt-outs", skip_all,
    fields(permit = %scope.permit.id(), elements = evaluated.len(), version = scope.version))]
pub async fn answer_match(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    key: &PseudonymKey,
    cache: &ScopeCache,
    scope: &CheckScope,
    evaluated: Vec<[u8; oprf::ELEMENT_LEN]>,
) -> Result<MatchResponse, MatchError> {
    let found = scoped_exclusions(tx, cache, scope).await?;
    let salt = random_bytes::<32>()?;
    let mut opted_out: Vec<String> = found
        .match_values
        .iter()
        .map(|m| salted_match(&salt, m))
        .collect();
    let in_scope = opted_out.len();
    // Random entries up to a power of two hide the exact count; a holder's own values never
    // equal one of them (they are SHA-256 outputs, these fresh randomness).
    let padded = in_scope.max(MIN_MATCH_ENTRIES).next_power_of_two();
    while opted_out.len() < padded {
        opted_out.push(hex::encode(random_bytes::<{ SALTED_MATCH_LEN }>()?));
    }
    opted_out.sort_unstable();
    let id = scope.permit_id();
    tx.append_audit(
        by.audit(Action::OptOutFilter, AuditSubject::Permit(id))
            .permit(id)
            .details(&OptOutsMatched {
                registry_version: scope.version,
                reference_time: found.reference_time,
                policy: scope.policy,
                exception_applied: found.exception_applied,
                evaluated: evaluated.len(),
                in_scope,
                sent: opted_out.len(),
                unmatchable: found.unmatchable,
            }),
    )
    .await?;
    Ok(MatchResponse {
        permit_id: id,
        registry_version: scope.version,
        reference_time: found.reference_time,
        policy: scope.policy,
        exception_applied: found.exception_applied,
        evaluated: evaluated.iter().map(|z| BASE64.encode(z)).collect(),
        key_id: key.match_key().key_id(),
        salt: BASE64.encode(salt),
        opted_out,
        unmatchable: found.unmatchable,
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
    pub match_values: MatchValues,
    /// Excluded subjects without a match value (registered before they were kept).
    pub unmatchable: usize,
}

/// The registry read at one version for one reference time: every holder of a round asks for
/// the same set, so it is read once, not once per holder.
type ScopeKey = (i64, Timestamp);

/// The match values of one scope, shared between the cache and the answers read from it.
type MatchValues = Arc<Vec<[u8; oprf::OUTPUT_LEN]>>;

/// The last few scoped sets under [`FilterPolicy::AtIssue`] (the `strict` policy also depends
/// on the time of asking and is never cached). Rows up to a version never change; a match
/// value written later (an import filling in an old subject's) clears the cache of the
/// replica that wrote it, and can only make another replica's cached set report a subject as
/// unmatchable that has since become matchable: the node then checks with the disclosing
/// filter, which still excludes it. The cache never errs toward inclusion.
#[derive(Default)]
pub struct ScopeCache(Mutex<VecDeque<(ScopeKey, MatchValues, usize)>>);

const SCOPE_CACHE_ENTRIES: usize = 8;

impl ScopeCache {
    /// Forgets every set: this process has just written match values.
    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    fn get(&self, key: &ScopeKey) -> Option<(MatchValues, usize)> {
        let entries = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, v, n)| (v.clone(), *n))
    }

    fn put(&self, key: ScopeKey, values: MatchValues, unmatchable: usize) {
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

/// The registry's excluded subjects in a check's scope (see [`ScopedExclusions`]).
#[tracing::instrument(name = "Scoping opt-outs", skip_all,
    fields(permit = %scope.permit.id(), version = scope.version))]
async fn scoped_exclusions(
    tx: &mut dyn Tx,
    cache: &ScopeCache,
    scope: &CheckScope,
) -> crate::store::Result<ScopedExclusions> {
    let CheckScope {
        permit,
        holder,
        categories,
        version,
        policy,
        now,
    } = scope;
    let (version, policy, now) = (*version, *policy, *now);
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
