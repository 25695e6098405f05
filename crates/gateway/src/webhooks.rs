//! Signed webhooks: study and permit state changes announced to the endpoints the HDAB
//! configures (`[[webhooks.endpoints]]`, docs/webhooks.md).
//!
//! The audit trail is the outbox. A state change and its audit entry commit in one transaction,
//! so each endpoint's dispatcher tails the trail from its cursor (`webhook_cursor`) and announces
//! the entries that are events: nothing is announced for a change that rolled back, and nothing
//! is lost when the gateway stops between a commit and its delivery. Delivery is at least once:
//! after a crash, or with several replicas, an event can arrive twice with the same
//! `webhook-id`, which receivers use to drop repeats.
//!
//! Messages follow the Standard Webhooks specification: `webhook-id`, `webhook-timestamp` and
//! `webhook-signature: v1,<base64 HMAC-SHA256(secret, "<id>.<timestamp>.<body>")>`. The body is
//! a thin event (type, ids, time, the audit entry's sequence number): the receiver reads the
//! rest through the API with its own credentials, so nothing a caller could not read leaves.
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use backon::{ExponentialBuilder, Retryable};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use crate::authz::Action;
pub use crate::configuration::{EndpointSettings, WebhookSettings};
use crate::store::{AuditFilter, Store};
use ehds_core::domain::audit::{AuditAction, AuditEntry, Outcome};

/// The events, each the audit action that records it (with outcome success).
pub const EVENTS: [(&str, AuditAction); 15] = [
    (
        "application.decided",
        AuditAction::Request(Action::ApplicationDecide),
    ),
    ("application.lapsed", AuditAction::ApplicationLapse),
    ("application.deadline", AuditAction::ApplicationDeadline),
    (
        "permit.suspended",
        AuditAction::Request(Action::PermitSuspend),
    ),
    (
        "permit.reinstated",
        AuditAction::Request(Action::PermitReinstate),
    ),
    ("permit.revoked", AuditAction::Request(Action::PermitRevoke)),
    ("permit.amended", AuditAction::Request(Action::PermitAmend)),
    (
        "permit.extended",
        AuditAction::Request(Action::PermitExtend),
    ),
    ("permit.expired", AuditAction::PermitExpire),
    ("study.suspended", AuditAction::StudySuspend),
    ("study.resumed", AuditAction::StudyResume),
    ("study.stopped", AuditAction::StudyStop),
    ("study.cancelled", AuditAction::Request(Action::StudyCancel)),
    ("study.failed", AuditAction::StudyFail),
    ("study.completed", AuditAction::StudyComplete),
];

/// The event an audit entry announces, if any. A refused request (outcome denied) changed
/// nothing; a failed study is recorded with outcome failure.
pub fn event_type(entry: &AuditEntry) -> Option<&'static str> {
    EVENTS.iter().find_map(|(name, action)| {
        let announced = match action {
            AuditAction::StudyFail => entry.outcome == Outcome::Failure,
            _ => entry.outcome == Outcome::Success,
        };
        (announced && entry.action == action.as_str()).then_some(*name)
    })
}

/// The body of a delivery.
#[derive(Debug, Serialize)]
pub struct WebhookEvent<'a> {
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub occurred_at: chrono::DateTime<chrono::Utc>,
    pub audit_seq: i64,
    pub resource_type: &'a str,
    pub resource_id: Option<&'a str>,
    pub permit_id: Option<&'a str>,
}

/// An endpoint ready to deliver to.
#[derive(Clone)]
pub struct Endpoint {
    pub name: String,
    url: reqwest::Url,
    secret: Arc<Vec<u8>>,
    events: Vec<String>,
}

impl Endpoint {
    /// Checks the settings and reads the secret; every problem names the endpoint.
    pub fn load(s: &EndpointSettings) -> anyhow::Result<Self> {
        let name = &s.name;
        anyhow::ensure!(
            !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "webhook endpoint name `{name}`: 1 to 64 letters, digits, `-` or `_`"
        );
        let url = reqwest::Url::parse(&s.url)
            .with_context(|| format!("webhook endpoint `{name}`: invalid url"))?;
        let loopback = match url.host() {
            Some(url::Host::Ipv4(a)) => a.is_loopback(),
            Some(url::Host::Ipv6(a)) => a.is_loopback(),
            Some(url::Host::Domain(d)) => d == "localhost",
            None => false,
        };
        match url.scheme() {
            "https" => {}
            "http" if loopback => {}
            other => bail!(
                "webhook endpoint `{name}`: {other}:// is not allowed (https, or http to a loopback address)"
            ),
        }
        let secret =
            read_secret(&s.secret_file).with_context(|| format!("webhook endpoint `{name}`"))?;
        for pattern in &s.events {
            anyhow::ensure!(
                EVENTS.iter().any(|(e, _)| matches(pattern, e)),
                "webhook endpoint `{name}`: `{pattern}` matches no event type"
            );
        }
        Ok(Self {
            name: name.clone(),
            url,
            secret: Arc::new(secret),
            events: s.events.clone(),
        })
    }

    fn wants(&self, kind: &str) -> bool {
        self.events.is_empty() || self.events.iter().any(|p| matches(p, kind))
    }
}

fn matches(pattern: &str, kind: &str) -> bool {
    match pattern.strip_suffix(".*") {
        Some(family) => kind.split_once('.').is_some_and(|(f, _)| f == family),
        None => pattern == kind,
    }
}

fn read_secret(path: &Path) -> anyhow::Result<Vec<u8>> {
    let text = std::fs::read(path)
        .with_context(|| format!("failed to read the secret file {}", path.display()))?;
    let trimmed = String::from_utf8_lossy(&text).trim().to_owned();
    let secret = match trimmed.strip_prefix("whsec_") {
        Some(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .context("a whsec_ secret must be base64")?,
        None => trimmed.into_bytes(),
    };
    anyhow::ensure!(
        secret.len() >= 16,
        "the secret in {} must have at least 16 bytes",
        path.display()
    );
    Ok(secret)
}

/// `v1,<base64 HMAC-SHA256(secret, "<id>.<timestamp>.<body>")>` (Standard Webhooks).
pub fn signature(secret: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// Why one attempt did not deliver.
#[derive(Debug, thiserror::Error)]
enum AttemptError {
    /// Worth another attempt: no answer, 408, 429 or 5xx.
    #[error("{0}")]
    Transient(String),
    /// The receiver refused the message itself (any other 4xx); repeating it will not help.
    #[error("{0}")]
    Permanent(String),
}

/// Checks every endpoint's settings and starts the cursor of a new one at the end of the trail
/// (a new endpoint hears of what happens from now on). At start-up, before anything is served,
/// so a bad endpoint stops the gateway there and no change slips past a new cursor.
pub async fn prepare(
    store: &dyn Store,
    settings: &WebhookSettings,
) -> anyhow::Result<Vec<Endpoint>> {
    let mut names = std::collections::BTreeSet::new();
    let mut endpoints = Vec::new();
    for s in &settings.endpoints {
        let endpoint = Endpoint::load(s)?;
        anyhow::ensure!(
            names.insert(endpoint.name.clone()),
            "webhook endpoint `{}` is configured twice",
            endpoint.name
        );
        let mut tx = store.begin().await?;
        // ordered with the appends, so the size read is the trail's end
        tx.take_write_order().await?;
        if tx.webhook_cursor(&endpoint.name).await?.is_none() {
            let end = tx.audit_tree_size().await? as i64;
            tx.advance_webhook_cursor(&endpoint.name, end).await?;
        }
        tx.commit().await?;
        endpoints.push(endpoint);
    }
    Ok(endpoints)
}

/// Runs one dispatcher per endpoint (from [`prepare`]) until the process stops.
pub fn spawn(
    store: Arc<dyn Store>,
    fleet: Arc<crate::federation::fleet::Fleet>,
    settings: &WebhookSettings,
    endpoints: Vec<Endpoint>,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let client = ehds_http::builder()
        .timeout(Duration::from_secs(settings.timeout_seconds.max(1)))
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    Ok(endpoints
        .into_iter()
        .map(|endpoint| {
            let dispatcher = Dispatcher {
                store: store.clone(),
                fleet: fleet.clone(),
                client: client.clone(),
                endpoint,
                settings: settings.clone(),
            };
            tokio::spawn(dispatcher.run())
        })
        .collect())
}

/// Entries read per look at the trail.
const BATCH: i64 = 100;

struct Dispatcher {
    store: Arc<dyn Store>,
    /// One replica of a fleet delivers an endpoint's events, so each goes out once.
    fleet: Arc<crate::federation::fleet::Fleet>,
    client: reqwest::Client,
    endpoint: Endpoint,
    settings: WebhookSettings,
}

impl Dispatcher {
    async fn run(self) {
        let idle = Duration::from_millis(self.settings.poll_millis.max(10));
        let lease = format!("webhook:{}", self.endpoint.name);
        loop {
            let served = match self.fleet.hold(&lease).await {
                Ok(true) => self.serve_batch().await,
                Ok(false) => Ok(false),
                Err(e) => Err(e.into()),
            };
            match served {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(error = %e, endpoint = %self.endpoint.name, "webhook dispatcher failed")
                }
            }
            tokio::time::sleep(idle).await;
        }
    }

    /// Serves the entries after the cursor; whether there may be more.
    async fn serve_batch(&self) -> anyhow::Result<bool> {
        let mut tx = self.store.begin().await?;
        let cursor = tx
            .webhook_cursor(&self.endpoint.name)
            .await?
            .context("the endpoint's cursor was set up at start-up")?;
        let entries = tx
            .list_audit(&AuditFilter {
                after_seq: Some(cursor),
                limit: BATCH,
                ..Default::default()
            })
            .await?;
        drop(tx);
        let more = entries.len() as i64 == BATCH;
        for entry in &entries {
            if let Some(kind) = event_type(entry).filter(|k| self.endpoint.wants(k)) {
                self.deliver(kind, entry).await;
                // once per event, so a restart repeats at most the one in flight
                self.advance_cursor(entry.seq).await?;
            }
        }
        // the entries that are no event for this endpoint move the cursor once per page
        if let Some(last) = entries.last() {
            self.advance_cursor(last.seq).await?;
        }
        Ok(more)
    }

    async fn advance_cursor(&self, seq: i64) -> anyhow::Result<()> {
        let mut tx = self.store.begin().await?;
        tx.advance_webhook_cursor(&self.endpoint.name, seq).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Delivers one event, retrying with exponential backoff; gives up after `max_attempts`.
    async fn deliver(&self, kind: &str, entry: &AuditEntry) {
        let body = serde_json::to_vec(&WebhookEvent {
            kind,
            occurred_at: entry.recorded_at,
            audit_seq: entry.seq,
            resource_type: &entry.resource_type,
            resource_id: entry.resource_id.as_deref(),
            permit_id: entry.permit_id.as_deref(),
        })
        .expect("the event serialises");
        // stable across attempts and replicas: the receiver's key for dropping repeats
        let id = format!("{}-{}", entry.id, self.endpoint.name);
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(self.settings.retry_min_delay_ms))
            .with_max_delay(Duration::from_millis(self.settings.retry_max_delay_ms))
            .with_max_times(self.settings.max_attempts.saturating_sub(1));
        let outcome = (|| self.attempt(&id, &body))
            .retry(backoff)
            .when(|e| matches!(e, AttemptError::Transient(_)))
            .notify(|e, wait| {
                tracing::warn!(endpoint = %self.endpoint.name, event = kind, error = %e, retry_in = ?wait, "webhook delivery failed; retrying")
            })
            .await;
        let label = match &outcome {
            Ok(()) => "delivered",
            Err(e) => {
                tracing::error!(endpoint = %self.endpoint.name, event = kind, audit_seq = entry.seq, error = %e, "webhook event given up");
                "given_up"
            }
        };
        crate::observability::webhook_delivery(&self.endpoint.name, label);
    }

    async fn attempt(&self, id: &str, body: &[u8]) -> Result<(), AttemptError> {
        let timestamp = chrono::Utc::now().timestamp();
        let response = self
            .client
            .post(self.endpoint.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header(
                "webhook-signature",
                signature(&self.endpoint.secret, id, timestamp, body),
            )
            .body(body.to_vec())
            .send()
            .await
            .map_err(|e| AttemptError::Transient(e.to_string()))?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else if status.is_server_error()
            || status == reqwest::StatusCode::TOO_MANY_REQUESTS
            || status == reqwest::StatusCode::REQUEST_TIMEOUT
        {
            Err(AttemptError::Transient(format!("answered {status}")))
        } else {
            Err(AttemptError::Permanent(format!("answered {status}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification (its reference libraries test the
    /// same values): secret `whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw`, id
    /// `msg_p5jXN8AQM9LWM0D4loKWxJek`, timestamp 1614265330, body `{"test": 2432232314}`.
    #[test]
    fn signatures_match_the_standard_webhooks_example() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        std::fs::write(&file, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n").unwrap();
        let secret = read_secret(&file).unwrap();
        assert_eq!(
            signature(
                &secret,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn every_event_is_an_audit_action_and_patterns_select_families() {
        for (name, action) in EVENTS {
            assert!(
                AuditAction::parse(action.as_str()).is_some(),
                "{name}: {action}"
            );
        }
        assert!(matches("permit.*", "permit.revoked"));
        assert!(!matches("permit.*", "study.completed"));
        assert!(matches("study.failed", "study.failed"));
        assert!(!matches("study", "study.failed"));
    }

    #[test]
    fn endpoint_settings_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "a-shared-secret-of-enough-bytes").unwrap();
        let ok = EndpointSettings {
            name: "hospital-it".into(),
            url: "https://hooks.example.eu/ehds".into(),
            secret_file: secret.clone(),
            events: vec!["permit.*".into(), "study.completed".into()],
        };
        let e = Endpoint::load(&ok).unwrap();
        assert!(e.wants("permit.suspended") && e.wants("study.completed"));
        assert!(!e.wants("study.failed"));
        for (edit, why) in [
            (
                EndpointSettings {
                    url: "http://hooks.example.eu/".into(),
                    ..ok.clone()
                },
                "http:// is not allowed",
            ),
            (
                EndpointSettings {
                    events: vec!["permits.*".into()],
                    ..ok.clone()
                },
                "matches no event type",
            ),
            (
                EndpointSettings {
                    name: "has space".into(),
                    ..ok.clone()
                },
                "letters, digits",
            ),
        ] {
            let err = format!("{:#}", Endpoint::load(&edit).err().unwrap());
            assert!(err.contains(why), "{err}");
        }
        assert!(Endpoint::load(&EndpointSettings {
            url: "http://127.0.0.1:9/hook".into(),
            ..ok.clone()
        })
        .is_ok());
        std::fs::write(&secret, "short").unwrap();
        assert!(Endpoint::load(&ok).is_err());
    }
}
