//! Application services between the front ends (HTTP API, command line) and the store: each
//! does one piece of the gateway's work on a transaction the caller owns, and appends the audit
//! entry of that work to the same transaction. The caller authorises first and commits after.

pub mod applications;
pub mod audit;
pub mod audit_exports;
pub mod catalogue;
pub mod node_tasks;
pub mod optouts;
pub mod permits;
pub mod reads;
pub mod refusals;
pub mod register;
pub mod secagg_relay;
pub mod statistics;
pub mod studies;
pub mod sweeps;

use crate::auth::Principal;
use ehds_core::domain::audit::{AuditAction, AuditSubject, NewAuditEvent};

/// Who asked for the work, as its audit entry records them: the authenticated principal and
/// the request's id.
#[derive(Debug, Clone, Copy)]
pub struct Requester<'a> {
    pub principal: &'a Principal,
    pub request_id: Option<&'a str>,
}

impl Requester<'_> {
    /// A success entry for `action` on `subject` by this requester.
    pub fn audit(&self, action: impl Into<AuditAction>, subject: AuditSubject) -> NewAuditEvent {
        NewAuditEvent::success(&self.principal.actor(), action, subject)
            .request(self.request_id.map(str::to_owned))
    }
}
