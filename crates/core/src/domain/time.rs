//! Timestamps are truncated to microseconds at creation so that they survive a round trip through
//! PostgreSQL and SQLite unchanged: the audit hash chain depends on it.

use chrono::{DateTime, SubsecRound, Utc};

pub type Timestamp = DateTime<Utc>;

pub fn now() -> Timestamp {
    Utc::now().trunc_subsecs(6)
}

pub fn normalise(t: Timestamp) -> Timestamp {
    t.trunc_subsecs(6)
}

/// Canonical text form used in hashes and exports: RFC 3339, microseconds, `Z`.
pub fn canonical(t: &Timestamp) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
