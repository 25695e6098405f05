//! What keeps callers without valid credentials from growing the audit trail or starving other
//! callers: request-id hygiene, the request-head size check, the client address, and the limits
//! on unauthenticated refusals.
//!
//! Every refusal is on the record, but a refusal of a caller without valid credentials is
//! recorded one entry each only while two quotas allow it: one per source address (beyond it the
//! source is answered 429 at once) and one for all sources together. Refusals beyond either are
//! counted, and the counts are appended as one `http.refusals_summarised` entry per minute, so the
//! trail grows by at most `unauthenticated_audited_per_minute + 1` bounded entries a minute
//! whatever the attacker does.

use std::{
    collections::BTreeMap,
    net::{IpAddr, SocketAddr},
    num::NonZeroU32,
    sync::Mutex,
    time::Duration,
};

use axum::{
    extract::{ConnectInfo, Request},
    http::{HeaderMap, HeaderValue},
};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::configuration::HttpSettings;

pub const REQUEST_ID_MAX: usize = 64;

/// A client-supplied request id is kept only if it is 1-64 characters of `[A-Za-z0-9._:-]`
/// (UUIDs, ULIDs, W3C trace ids); anything else is replaced by a generated one.
pub fn is_well_formed_request_id(v: &HeaderValue) -> bool {
    let b = v.as_bytes();
    !b.is_empty()
        && b.len() <= REQUEST_ID_MAX
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'))
}

/// Bytes of the request head as sent: request line and `name: value\r\n` per header.
pub fn head_bytes(req: &Request) -> usize {
    let line = req.method().as_str().len()
        + req.uri().path_and_query().map_or(1, |p| p.as_str().len())
        + " HTTP/1.1\r\n".len()
        + 1;
    line + req
        .headers()
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len() + 4)
        .sum::<usize>()
}

/// The address a request came from: the peer, or the last hop of the configured proxy header.
pub fn client_ip(req: &Request, settings: &HttpSettings) -> Option<IpAddr> {
    if let Some(name) = &settings.client_ip_header {
        if let Some(ip) = forwarded_ip(req.headers(), name) {
            return Some(ip);
        }
    }
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
}

fn forwarded_ip(headers: &HeaderMap, name: &str) -> Option<IpAddr> {
    let value = headers.get_all(name).iter().next_back()?.to_str().ok()?;
    value.rsplit(',').next()?.trim().parse().ok()
}

/// The two quotas on unauthenticated refusals and the counts of those not audited one by one.
pub struct UnauthenticatedLimits {
    per_source: DefaultKeyedRateLimiter<IpAddr>,
    audited: DefaultDirectRateLimiter,
    summarised: Mutex<BTreeMap<&'static str, u64>>,
    hold: Duration,
    held: tokio::sync::Semaphore,
}

/// What to do with a request whose credentials failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceVerdict {
    /// Answer the refusal as usual.
    Refuse,
    /// The source exceeded its quota: answer 429.
    Throttle,
}

impl UnauthenticatedLimits {
    pub fn new(settings: &HttpSettings) -> Self {
        // `n` a minute, refilled evenly; a burst of up to `n` when the quota is full. Over any
        // T minutes at most n·(T + 1) pass.
        let per_minute =
            |n: u32| Quota::per_minute(NonZeroU32::new(n.max(1)).expect("at least one"));
        Self {
            per_source: RateLimiter::keyed(per_minute(
                settings.unauthenticated_per_source_per_minute,
            )),
            audited: RateLimiter::direct(per_minute(settings.unauthenticated_audited_per_minute)),
            summarised: Mutex::new(BTreeMap::new()),
            hold: Duration::from_millis(settings.throttled_hold_ms),
            held: tokio::sync::Semaphore::new(settings.throttled_held_max),
        }
    }

    /// Waits out the hold of a throttled source's answer, unless as many answers as allowed
    /// are already held. Waiting costs a timer, not CPU: the flood slows to the pace of its
    /// connections.
    pub async fn hold_throttled(&self) {
        if self.hold.is_zero() {
            return;
        }
        if let Ok(_slot) = self.held.try_acquire() {
            tokio::time::sleep(self.hold).await;
        }
    }

    /// Charges one unauthenticated request to its source.
    pub fn charge_source(&self, ip: Option<IpAddr>) -> SourceVerdict {
        match ip {
            Some(ip) if self.per_source.check_key(&ip).is_err() => SourceVerdict::Throttle,
            _ => SourceVerdict::Refuse,
        }
    }

    /// Whether this refusal may have an audit entry of its own; if not, it is counted under
    /// `code` for the next summary.
    pub fn audit_individually(&self, code: &'static str) -> bool {
        if self.audited.check().is_ok() {
            return true;
        }
        let mut counts = self.summarised.lock().unwrap_or_else(|p| p.into_inner());
        *counts.entry(code).or_default() += 1;
        false
    }

    /// Counts a refusal that is never audited one by one (429 answers to throttled sources).
    pub fn count(&self, code: &'static str) {
        let mut counts = self.summarised.lock().unwrap_or_else(|p| p.into_inner());
        *counts.entry(code).or_default() += 1;
    }

    /// Takes the counts since the last summary (empty when nothing was held back).
    pub fn take_summary(&self) -> BTreeMap<&'static str, u64> {
        std::mem::take(&mut *self.summarised.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Forgets sources whose quota has refilled, so the table stays as small as the set of
    /// recently active sources.
    pub fn forget_idle_sources(&self) {
        self.per_source.retain_recent();
        self.per_source.shrink_to_fit();
    }
}

/// The quota of each authenticated caller: `per_principal_per_second`, refilled evenly, with a
/// bucket of `per_principal_burst`, keyed by the token's subject, so that one caller (a runaway
/// script, a node agent in a retry loop) cannot take the gateway's capacity from the others.
pub struct PrincipalLimits {
    per_principal: Option<DefaultKeyedRateLimiter<String>>,
}

impl PrincipalLimits {
    pub fn new(settings: &HttpSettings) -> Self {
        let per_principal = NonZeroU32::new(settings.per_principal_per_second).map(|rate| {
            let burst = NonZeroU32::new(settings.per_principal_burst).unwrap_or(rate);
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst.max(rate)))
        });
        Self { per_principal }
    }

    /// Charges one request to `subject`; over its quota, the whole seconds until its next
    /// request would pass (at least 1), for `Retry-After`.
    pub fn charge(&self, subject: &str) -> Result<(), u64> {
        use governor::clock::Clock;
        let Some(limiter) = &self.per_principal else {
            return Ok(());
        };
        limiter.check_key(&subject.to_owned()).map_err(|not_until| {
            let wait = not_until.wait_time_from(limiter.clock().now());
            wait.as_secs_f64().ceil().max(1.0) as u64
        })
    }

    /// Forgets callers whose quota has refilled.
    pub fn forget_idle(&self) {
        if let Some(limiter) = &self.per_principal {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_over_its_quota_waits_and_others_do_not() {
        let mut s = crate::configuration::Settings::default().http;
        s.per_principal_per_second = 1;
        s.per_principal_burst = 3;
        let limits = PrincipalLimits::new(&s);
        for _ in 0..3 {
            assert_eq!(limits.charge("alice"), Ok(()));
        }
        assert_eq!(limits.charge("alice"), Err(1));
        assert_eq!(limits.charge("bob"), Ok(()));
        s.per_principal_per_second = 0;
        let unlimited = PrincipalLimits::new(&s);
        assert!((0..10_000).all(|_| unlimited.charge("alice").is_ok()));
    }

    #[test]
    fn request_ids_are_kept_only_when_well_formed() {
        let ok = |s: &str| is_well_formed_request_id(&HeaderValue::from_str(s).unwrap());
        assert!(ok("0192f3a4-7c1e-7d2b-9f00-1234567890ab"));
        assert!(ok("trace:abc.def_1"));
        assert!(!ok(""));
        assert!(!ok(&"a".repeat(65)));
        assert!(!ok("has space"));
        assert!(!ok("semi;colon"));
    }

    #[test]
    fn a_source_over_its_quota_is_throttled_and_others_are_not() {
        let mut s = crate::configuration::Settings::default().http;
        s.unauthenticated_per_source_per_minute = 1;
        s.unauthenticated_audited_per_minute = 1;
        let limits = UnauthenticatedLimits::new(&s);
        let a = Some("10.0.0.1".parse().unwrap());
        let b = Some("10.0.0.2".parse().unwrap());
        assert_eq!(limits.charge_source(a), SourceVerdict::Refuse);
        assert_eq!(limits.charge_source(a), SourceVerdict::Throttle);
        assert_eq!(limits.charge_source(b), SourceVerdict::Refuse);
        assert!(limits.audit_individually("invalid_token"));
        assert!(!limits.audit_individually("invalid_token"));
        limits.count("too_many_requests");
        let summary = limits.take_summary();
        assert_eq!(summary.get("invalid_token"), Some(&1));
        assert_eq!(summary.get("too_many_requests"), Some(&1));
        assert!(limits.take_summary().is_empty());
    }

    #[test]
    fn the_last_hop_of_the_proxy_header_is_the_client() {
        let mut h = HeaderMap::new();
        h.insert(
            "x-forwarded-for",
            "203.0.113.9, 198.51.100.7".parse().unwrap(),
        );
        assert_eq!(
            forwarded_ip(&h, "x-forwarded-for"),
            Some("198.51.100.7".parse().unwrap())
        );
        h.insert("x-forwarded-for", "garbage".parse().unwrap());
        assert_eq!(forwarded_ip(&h, "x-forwarded-for"), None);
    }
}
