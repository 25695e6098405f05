//! The audit trail (GDPR Art. 30, EHDS Art. 73): append-only entries chained by SHA-256.
//!
//! hash_n = SHA-256(prev_hash_n || 0x0a || canonical_n), where canonical_n is the entry's JSON
//! with fields in a fixed order, timestamps in RFC 3339 with microseconds, and `detail` with its
//! keys in the order they were written (stored as text and read back in that order: this crate
//! turns serde_json's `preserve_order` on). The first entry's prev_hash is 64 zeros. Editing,
//! deleting or reordering any
//! entry breaks the chain at that entry, and so does rewriting a stored timestamp into another
//! form of the same instant.
//!
//! What the chain alone cannot show: deleting the **last** entries leaves a shorter chain that
//! still verifies, and whoever can write the table can recompute every hash. Comparing the head
//! (`head_seq`, `head_hash` of a verification) with a head kept outside the database catches
//! both; signed checkpoints that auditors keep are the planned answer.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

pub use super::audit_action::AuditAction;
pub use super::audit_subject::AuditSubject;
use super::time::{self, Timestamp};

pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Denied,
    Failure,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Denied => "denied",
            Self::Failure => "failure",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Success, Self::Denied, Self::Failure]
            .into_iter()
            .find(|o| o.as_str() == s)
    }
}

/// Who acted. `sub` is the token subject (a pseudonymous account id), or `anonymous`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Actor {
    pub sub: String,
    pub roles: Vec<String>,
    pub organisation: Option<String>,
}

impl Actor {
    pub fn anonymous() -> Self {
        Self {
            sub: "anonymous".into(),
            roles: vec![],
            organisation: None,
        }
    }
    pub fn system() -> Self {
        Self {
            sub: "system".into(),
            roles: vec![],
            organisation: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewAuditEvent {
    pub actor: Actor,
    pub action: AuditAction,
    pub outcome: Outcome,
    pub resource_type: String,
    pub resource_id: Option<String>,
    pub permit_id: Option<String>,
    pub request_id: Option<String>,
    pub http_status: Option<u16>,
    pub detail: serde_json::Value,
}

impl NewAuditEvent {
    /// A success entry: `actor` did `action` on `subject`.
    pub fn success(actor: &Actor, action: impl Into<AuditAction>, subject: AuditSubject) -> Self {
        Self {
            actor: actor.clone(),
            action: action.into(),
            outcome: Outcome::Success,
            resource_type: subject.resource_type().into(),
            resource_id: subject.resource_id(),
            permit_id: None,
            request_id: None,
            http_status: None,
            detail: serde_json::Value::Object(Default::default()),
        }
    }
    pub fn permit(mut self, id: impl ToString) -> Self {
        self.permit_id = Some(id.to_string());
        self
    }
    pub fn detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = detail;
        self
    }
    /// The detail from a typed value. serde_json's `preserve_order` is on (this crate's
    /// manifest turns it on), so object keys keep the order they were written in: a struct stores the same bytes as a `json!` object whose keys are listed in
    /// the struct's field order, which is how every detail struct replaces its `json!`.
    pub fn details(mut self, detail: &impl Serialize) -> Self {
        self.detail =
            serde_json::to_value(detail).expect("audit details are plain records with string keys");
        self
    }
    pub fn request(mut self, request_id: Option<String>) -> Self {
        self.request_id = request_id;
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEntry {
    pub seq: i64,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = Uuid))]
    pub id: Uuid,
    pub recorded_at: chrono::DateTime<chrono::Utc>,
    /// Whether the database holds `recorded_at` in the form the gateway wrote (see
    /// `store::StoredForm`); not part of the entry's content.
    #[serde(skip, default = "stored_canonically")]
    pub timestamp_stored_canonically: bool,
    pub actor: Actor,
    // The stored name of an `AuditAction`, kept as stored: the hash covers it, and a trail may
    // hold names of later versions.
    pub action: String,
    pub outcome: Outcome,
    pub resource_type: String,
    pub resource_id: Option<String>,
    pub permit_id: Option<String>,
    pub request_id: Option<String>,
    pub http_status: Option<u16>,
    pub detail: serde_json::Value,
    pub prev_hash: String,
    pub hash: String,
}

fn stored_canonically() -> bool {
    true
}

/// The fields covered by the hash, in their fixed order.
#[derive(Serialize)]
struct Canonical<'a> {
    seq: i64,
    id: String,
    recorded_at: String,
    actor_sub: &'a str,
    actor_roles: &'a [String],
    actor_organisation: Option<&'a str>,
    action: &'a str,
    outcome: &'a str,
    resource_type: &'a str,
    resource_id: Option<&'a str>,
    permit_id: Option<&'a str>,
    request_id: Option<&'a str>,
    http_status: Option<u16>,
    detail: &'a serde_json::Value,
}

impl AuditEntry {
    /// Seals a new event as entry `seq` after `prev_hash`.
    pub fn seal(event: NewAuditEvent, seq: i64, prev_hash: String, recorded_at: Timestamp) -> Self {
        Self::seal_canonical(event, seq, prev_hash, recorded_at).0
    }

    /// `seal`, also returning the entry's canonical bytes (its Merkle leaf data), encoded once.
    pub fn seal_canonical(
        event: NewAuditEvent,
        seq: i64,
        prev_hash: String,
        recorded_at: Timestamp,
    ) -> (Self, Vec<u8>) {
        let mut entry = AuditEntry {
            seq,
            id: Uuid::now_v7(),
            recorded_at: time::normalise(recorded_at),
            timestamp_stored_canonically: true,
            actor: event.actor,
            action: event.action.as_str().to_owned(),
            outcome: event.outcome,
            resource_type: event.resource_type,
            resource_id: event.resource_id,
            permit_id: event.permit_id,
            request_id: event.request_id,
            http_status: event.http_status,
            detail: event.detail,
            prev_hash,
            hash: String::new(),
        };
        let canonical = entry.canonical_bytes();
        entry.hash = chain_hash(&entry.prev_hash, &canonical);
        (entry, canonical)
    }

    pub fn canonical_bytes(&self) -> Vec<u8> {
        // `detail` keeps its keys in written order (`preserve_order` is on, and both stores keep
        // the text as written), so the bytes hashed at append are the bytes hashed at verify.
        serde_json::to_vec(&Canonical {
            seq: self.seq,
            id: self.id.to_string(),
            recorded_at: time::canonical(&self.recorded_at),
            actor_sub: &self.actor.sub,
            actor_roles: &self.actor.roles,
            actor_organisation: self.actor.organisation.as_deref(),
            action: &self.action,
            outcome: self.outcome.as_str(),
            resource_type: &self.resource_type,
            resource_id: self.resource_id.as_deref(),
            permit_id: self.permit_id.as_deref(),
            request_id: self.request_id.as_deref(),
            http_status: self.http_status,
            detail: &self.detail,
        })
        .expect("canonical audit encoding cannot fail")
    }

    /// The action the entry records; `None` for a name this version does not know.
    pub fn audit_action(&self) -> Option<AuditAction> {
        AuditAction::parse(&self.action)
    }

    pub fn compute_hash(&self) -> String {
        chain_hash(&self.prev_hash, &self.canonical_bytes())
    }
}

/// `SHA-256(prev_hash || 0x0a || canonical)`, hex.
fn chain_hash(prev_hash: &str, canonical: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(prev_hash.as_bytes());
    h.update(b"\n");
    h.update(canonical);
    hex::encode(h.finalize())
}

/// What is wrong with the first bad entry of a chain.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ChainProblem {
    /// The entry's content no longer matches its hash: it was edited.
    HashMismatch,
    /// The entry does not point at its predecessor: entries were deleted, inserted or reordered.
    BrokenLink,
    /// A sequence number is missing or out of order before this entry.
    SequenceGap { expected: i64 },
    /// The entry's timestamp was rewritten into another form of the same instant (another UTC
    /// offset): the hash still matches, but time-window queries no longer find the entry.
    NonCanonicalTimestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FirstBadEntry {
    pub seq: i64,
    pub problem: ChainProblem,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VerifyReport {
    pub valid: bool,
    pub entries_checked: u64,
    pub head_seq: Option<i64>,
    pub head_hash: String,
    pub first_bad: Option<FirstBadEntry>,
}

/// Verifies a chain fed in sequence order, one page at a time.
pub struct ChainVerifier {
    expected_seq: i64,
    prev_hash: String,
    checked: u64,
    first_bad: Option<FirstBadEntry>,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        Self {
            expected_seq: 1,
            prev_hash: GENESIS_HASH.into(),
            checked: 0,
            first_bad: None,
        }
    }
}

impl ChainVerifier {
    /// Checks one entry; returns false once the chain is known to be broken.
    pub fn feed(&mut self, entry: &AuditEntry) -> bool {
        if self.first_bad.is_some() {
            return false;
        }
        let problem = if entry.compute_hash() != entry.hash {
            Some(ChainProblem::HashMismatch)
        } else if !entry.timestamp_stored_canonically {
            Some(ChainProblem::NonCanonicalTimestamp)
        } else if entry.seq != self.expected_seq {
            Some(ChainProblem::SequenceGap {
                expected: self.expected_seq,
            })
        } else if entry.prev_hash != self.prev_hash {
            Some(ChainProblem::BrokenLink)
        } else {
            None
        };
        if let Some(problem) = problem {
            self.first_bad = Some(FirstBadEntry {
                seq: entry.seq,
                problem,
            });
            return false;
        }
        self.checked += 1;
        self.expected_seq = entry.seq + 1;
        self.prev_hash = entry.hash.clone();
        true
    }

    pub fn finish(self) -> VerifyReport {
        VerifyReport {
            valid: self.first_bad.is_none(),
            entries_checked: self.checked,
            head_seq: (self.checked > 0).then_some(self.expected_seq - 1),
            head_hash: self.prev_hash,
            first_bad: self.first_bad,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: i64) -> Vec<AuditEntry> {
        let mut prev = GENESIS_HASH.to_string();
        (1..=n)
            .map(|seq| {
                let e = AuditEntry::seal(
                    NewAuditEvent::success(
                        &Actor::system(),
                        AuditAction::PermitExpire,
                        AuditSubject::Permit(crate::domain::PermitId::new()),
                    )
                    .detail(serde_json::json!({"z": 1, "a": [1.5, "x"]})),
                    seq,
                    prev.clone(),
                    time::now(),
                );
                prev = e.hash.clone();
                e
            })
            .collect()
    }

    fn verify(entries: &[AuditEntry]) -> VerifyReport {
        let mut v = ChainVerifier::default();
        for e in entries {
            v.feed(e);
        }
        v.finish()
    }

    #[test]
    fn an_untouched_chain_verifies() {
        let c = chain(5);
        let r = verify(&c);
        assert!(r.valid);
        assert_eq!((r.entries_checked, r.head_seq), (5, Some(5)));
        assert_eq!(r.head_hash, c[4].hash);
    }

    #[test]
    fn edits_deletions_and_reorderings_name_the_first_bad_entry() {
        let mut edited = chain(5);
        edited[2].action = "forged".into();
        assert_eq!(
            verify(&edited).first_bad,
            Some(FirstBadEntry {
                seq: 3,
                problem: ChainProblem::HashMismatch
            })
        );

        let mut deleted = chain(5);
        deleted.remove(1);
        assert_eq!(
            verify(&deleted).first_bad,
            Some(FirstBadEntry {
                seq: 3,
                problem: ChainProblem::SequenceGap { expected: 2 }
            })
        );

        let mut reordered = chain(5);
        reordered.swap(1, 2);
        assert_eq!(verify(&reordered).first_bad.unwrap().seq, 3);

        // Renumbering after a deletion still breaks the link.
        let mut renumbered = chain(5);
        renumbered.remove(1);
        for e in renumbered.iter_mut().skip(1) {
            e.seq -= 1;
            e.hash = e.compute_hash();
        }
        assert_eq!(
            verify(&renumbered).first_bad,
            Some(FirstBadEntry {
                seq: 2,
                problem: ChainProblem::BrokenLink
            })
        );
    }

    #[test]
    fn a_typed_detail_stores_the_same_json_as_the_object_it_replaces() {
        #[derive(Serialize)]
        struct Detail<'a> {
            z: u32,
            code: &'a str,
            a: Option<f64>,
        }
        let typed = NewAuditEvent::success(
            &Actor::system(),
            AuditAction::PermitExpire,
            AuditSubject::AuditLog,
        )
        .details(&Detail {
            z: 1,
            code: "x",
            a: None,
        });
        let untyped = serde_json::json!({"z": 1, "code": "x", "a": null});
        assert_eq!(typed.detail, untyped);
        assert_eq!(
            serde_json::to_string(&typed.detail).unwrap(),
            serde_json::to_string(&untyped).unwrap()
        );
    }

    #[test]
    fn the_hash_survives_a_json_round_trip_of_detail() {
        let e = &chain(1)[0];
        let text = serde_json::to_string(&e.detail).unwrap();
        let mut again = e.clone();
        again.detail = serde_json::from_str(&text).unwrap();
        assert_eq!(again.compute_hash(), e.hash);
    }

    /// Entries a gateway wrote (tests/data/audit-canonical, taken from the legacy database
    /// fixture) hash exactly the canonical bytes pinned beside them, which were recomputed and
    /// checked against the stored hashes independently of this code. Their details keep keys
    /// out of alphabetical order, so a build whose serde_json sorts object keys fails here.
    #[test]
    fn stored_entries_hash_their_pinned_canonical_bytes() {
        let entries = include_str!("../../../../tests/data/audit-canonical/entries.jsonl");
        let pinned = include_str!("../../../../tests/data/audit-canonical/canonical.jsonl");
        assert_eq!(entries.lines().count(), pinned.lines().count());
        let mut verifier = ChainVerifier::default();
        for (line, canonical) in entries.lines().zip(pinned.lines()) {
            let entry: AuditEntry = serde_json::from_str(line).unwrap();
            assert_eq!(
                String::from_utf8(entry.canonical_bytes()).unwrap(),
                canonical,
                "entry {}",
                entry.seq
            );
            assert_eq!(entry.compute_hash(), entry.hash, "entry {}", entry.seq);
            assert!(verifier.feed(&entry), "entry {}", entry.seq);
        }
        let report = verifier.finish();
        assert!(report.valid);
        assert_eq!(report.entries_checked, 13);
    }
}
