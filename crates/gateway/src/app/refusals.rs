//! Refused requests on the audit trail. A refusal rolled back whatever it attempted, so its
//! entry is appended in a transaction of its own; refusals nobody vouches for are held back
//! within quotas and recorded as one summary a minute.

use std::collections::BTreeMap;

use crate::store::{Result, Store};
use ehds_core::domain::{
    audit::{Actor, AuditAction, AuditSubject, NewAuditEvent, Outcome},
    audit_details::{Refusal, RefusalsSummarised},
};

/// Longest detail kept in the audit entry of a refusal: details may quote what the caller sent,
/// and the trail must not grow with it.
pub const MAX_STORED_DETAIL: usize = 512;
/// Longest request path kept in the audit entry of a refusal.
pub const MAX_STORED_PATH: usize = 256;

/// One refused request: who asked, what was refused and why.
#[derive(Debug, Clone)]
pub struct RefusedRequest<'a> {
    pub actor: Actor,
    /// The handler's action, where the refusal came from one; else `http.<method>`.
    pub action: Option<AuditAction>,
    pub method: &'a str,
    pub path: &'a str,
    pub request_id: Option<String>,
    pub status: u16,
    pub code: &'a str,
    pub detail: &'a str,
    pub resource_type: Option<&'static str>,
    pub resource_id: Option<String>,
    pub permit_id: Option<String>,
}

/// Appends the entry of `refused` in its own transaction.
pub async fn record_refusal(store: &dyn Store, refused: RefusedRequest<'_>) -> Result<()> {
    let event = NewAuditEvent {
        actor: refused.actor,
        action: refused
            .action
            .unwrap_or_else(|| AuditAction::refused_request(refused.method)),
        outcome: if refused.status >= 500 {
            Outcome::Failure
        } else {
            Outcome::Denied
        },
        resource_type: refused.resource_type.unwrap_or("request").to_owned(),
        resource_id: refused.resource_id,
        permit_id: refused.permit_id,
        request_id: refused.request_id,
        http_status: Some(refused.status),
        detail: serde_json::Value::Null,
    }
    .details(&Refusal {
        code: refused.code,
        detail: bounded(refused.detail, MAX_STORED_DETAIL),
        method: refused.method,
        path: bounded(refused.path, MAX_STORED_PATH),
    });
    let mut tx = store.begin().await?;
    tx.append_audit(event).await?;
    tx.commit().await
}

/// Appends the counts, by code, of the refusals held back from the trail over the last
/// `window_seconds`; nothing when there were none.
pub async fn record_refusal_summary(
    store: &dyn Store,
    by_code: &BTreeMap<&'static str, u64>,
    window_seconds: u64,
) -> Result<()> {
    if by_code.is_empty() {
        return Ok(());
    }
    let mut event = NewAuditEvent::success(
        &Actor::anonymous(),
        AuditAction::HttpRefusalsSummarised,
        AuditSubject::Requests,
    )
    .details(&RefusalsSummarised {
        refusals: by_code.values().sum(),
        by_code,
        window_seconds,
    });
    event.outcome = Outcome::Denied;
    let mut tx = store.begin().await?;
    tx.append_audit(event).await?;
    tx.commit().await
}

/// `text` cut to at most `max` bytes on a character boundary, marked with `…` when cut.
pub fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::bounded;

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        assert_eq!(bounded("short", 10), "short");
        let cut = bounded(&"é".repeat(100), 11);
        assert!(cut.len() <= 11 && cut.ends_with('…'), "{cut}");
        assert_eq!(bounded("abcdefghij", 4), "a…");
    }
}
