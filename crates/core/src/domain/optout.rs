//! The Art. 71 opt-out registry: an append-only log of registrations and withdrawals.
//!
//! A subject is excluded from a permit's processing if an opt-out was in force at the permit's
//! reference time t (issue, or the amendment that added the data). Opt-outs recorded later do not
//! reach back (71(3)); withdrawals recorded later do not re-include; a permit that records the
//! 71(4) exception excludes nobody. The registry stores a keyed HMAC of each pseudonym, never
//! the pseudonym itself, and its match value (an OPRF output, [`PseudonymKey::subject_match`])
//! through which a holder filters its cohort without disclosing it (docs/threat-model.md).

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{time::Timestamp, MemberState, OptOutId, SubjectPseudonym};

#[derive(Clone)]
pub struct PseudonymKey(Vec<u8>);

impl PseudonymKey {
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// The registry key of a subject: HMAC-SHA256 under the gateway's key, hex encoded.
    pub fn subject_key(&self, subject: &SubjectPseudonym) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC accepts any key length");
        mac.update(subject.as_str().as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// The registry's key of the opt-out match protocol ([`crate::oprf`]), derived from the
    /// same secret so a deployment keeps one key file.
    pub fn match_key(&self) -> crate::oprf::OprfKey {
        crate::oprf::OprfKey::derive(&self.0, b"ehds-gateway opt-out match v1")
    }

    /// A subject's match value: the OPRF of its pseudonym under [`PseudonymKey::match_key`],
    /// hex encoded. A holder can compute it for its own subjects only through the gateway,
    /// blinded.
    pub fn subject_match(&self, subject: &SubjectPseudonym) -> String {
        hex::encode(
            self.match_key()
                .evaluate_direct(subject.as_str().as_bytes()),
        )
    }
}

/// Bytes of a [`salted_match`] entry: 128 bits keep accidental collisions out of reach
/// (about 2^-64 for 2^32 entries) at half the size of a whole SHA-256 on the wire.
pub const SALTED_MATCH_LEN: usize = 16;

/// One entry of a match answer: SHA-256 over the answer's fresh salt and a match value,
/// truncated to [`SALTED_MATCH_LEN`] bytes and hex encoded, so entries of two answers cannot
/// be linked to each other.
pub fn salted_match(salt: &[u8], match_value: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(match_value);
    hex::encode(&h.finalize()[..SALTED_MATCH_LEN])
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum OptOutEventKind {
    Registered,
    Withdrawn,
}

impl OptOutEventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Registered => "registered",
            Self::Withdrawn => "withdrawn",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "registered" => Some(Self::Registered),
            "withdrawn" => Some(Self::Withdrawn),
            _ => None,
        }
    }
}

/// One row of the registry. `seq` is the registry version that the row created.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OptOutEvent {
    pub seq: i64,
    pub record_id: OptOutId,
    pub subject_key: String,
    pub kind: OptOutEventKind,
    /// Always `all_secondary_use`: Art. 71 covers all EHDS secondary use.
    pub scope: String,
    pub member_state: MemberState,
    /// When the registration or withdrawal takes effect.
    pub effective_at: chrono::DateTime<chrono::Utc>,
    pub recorded_at: chrono::DateTime<chrono::Utc>,
    pub channel: String,
}

/// A new row, before the store assigns its registry version.
#[derive(Debug, Clone)]
pub struct NewOptOutEvent {
    pub record_id: OptOutId,
    pub subject_key: String,
    pub kind: OptOutEventKind,
    pub member_state: MemberState,
    pub effective_at: chrono::DateTime<chrono::Utc>,
    pub recorded_at: chrono::DateTime<chrono::Utc>,
    pub channel: String,
}

pub const SCOPE_ALL_SECONDARY_USE: &str = "all_secondary_use";

/// Whether opt-out `record_id` was in force at `t`, judging only by what had been recorded by `t`.
pub fn in_force_at(events: &[OptOutEvent], record_id: OptOutId, t: Timestamp) -> bool {
    let known =
        |e: &&OptOutEvent| e.record_id == record_id && e.recorded_at <= t && e.effective_at <= t;
    let registered = events
        .iter()
        .filter(known)
        .any(|e| e.kind == OptOutEventKind::Registered);
    let withdrawn = events
        .iter()
        .filter(known)
        .any(|e| e.kind == OptOutEventKind::Withdrawn);
    registered && !withdrawn
}

/// Which opt-outs count for a permit's processing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FilterPolicy {
    /// Opt-outs in force at the permit's reference time (Art. 71(3)).
    #[default]
    AtIssue,
    /// Also opt-outs in force now: stricter than the Regulation requires.
    Strict,
}

/// Whether a subject with these registry rows is excluded.
pub fn is_excluded(
    events: &[OptOutEvent],
    reference_time: Timestamp,
    now: Timestamp,
    policy: FilterPolicy,
) -> bool {
    let mut records: Vec<OptOutId> = events.iter().map(|e| e.record_id).collect();
    records.sort_by_key(|r| r.0);
    records.dedup();
    records.into_iter().any(|r| {
        in_force_at(events, r, reference_time)
            || (policy == FilterPolicy::Strict && in_force_at(events, r, now))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn ev(
        record: OptOutId,
        kind: OptOutEventKind,
        effective: Timestamp,
        recorded: Timestamp,
    ) -> OptOutEvent {
        OptOutEvent {
            seq: 0,
            record_id: record,
            subject_key: "k".into(),
            kind,
            scope: SCOPE_ALL_SECONDARY_USE.into(),
            member_state: MemberState::parse("DE").unwrap(),
            effective_at: effective,
            recorded_at: recorded,
            channel: "api".into(),
        }
    }

    #[test]
    fn opt_outs_bind_from_their_recording_and_effect_and_never_reach_back() {
        let t0 = crate::domain::time::now();
        let r = OptOutId::new();
        let reg = ev(r, OptOutEventKind::Registered, t0, t0);
        let events = vec![reg.clone()];
        assert!(!in_force_at(&events, r, t0 - Duration::seconds(1)));
        assert!(in_force_at(&events, r, t0));
        // Backdated but recorded later: does not affect a permit issued before the recording.
        let late = vec![ev(
            r,
            OptOutEventKind::Registered,
            t0 - Duration::days(10),
            t0,
        )];
        assert!(!in_force_at(&late, r, t0 - Duration::days(1)));
    }

    #[test]
    fn withdrawal_ends_the_opt_out_only_from_its_own_time() {
        let t0 = crate::domain::time::now();
        let r = OptOutId::new();
        let t1 = t0 + Duration::days(5);
        let events = vec![
            ev(r, OptOutEventKind::Registered, t0, t0),
            ev(r, OptOutEventKind::Withdrawn, t1, t1),
        ];
        assert!(in_force_at(&events, r, t0 + Duration::days(1)));
        assert!(!in_force_at(&events, r, t1));
        // A permit issued while the opt-out was in force keeps excluding the subject...
        assert!(is_excluded(
            &events,
            t0 + Duration::days(1),
            t1 + Duration::days(1),
            FilterPolicy::AtIssue
        ));
        // ...and one issued after the withdrawal does not.
        assert!(!is_excluded(&events, t1, t1, FilterPolicy::AtIssue));
    }

    #[test]
    fn strict_policy_also_honours_opt_outs_made_after_issue() {
        let t0 = crate::domain::time::now();
        let r = OptOutId::new();
        let events = vec![ev(r, OptOutEventKind::Registered, t0, t0)];
        let issued = t0 - Duration::days(1);
        assert!(!is_excluded(&events, issued, t0, FilterPolicy::AtIssue));
        assert!(is_excluded(&events, issued, t0, FilterPolicy::Strict));
    }

    #[test]
    fn subject_keys_are_keyed_and_stable() {
        let s = SubjectPseudonym::parse("psn-abcdef-0123456789").unwrap();
        let a = PseudonymKey::new(vec![1; 32]);
        let b = PseudonymKey::new(vec![2; 32]);
        assert_eq!(a.subject_key(&s), a.subject_key(&s));
        assert_ne!(a.subject_key(&s), b.subject_key(&s));
        assert_eq!(a.subject_key(&s).len(), 64);
    }
}
