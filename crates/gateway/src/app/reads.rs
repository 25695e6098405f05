//! Reads and lists of governed records as the audit trail records them: who looked at which
//! record, under which permit, in the transaction that read it (a read that cannot be recorded
//! is not served).

use super::Requester;
use crate::store::{Result, Tx};
use ehds_core::domain::{
    audit::{AuditAction, AuditSubject},
    audit_details::{Listed, StudyViewed},
    ids::PermitId,
};

/// One read of one record: the action that allowed it, the record, the permit the record falls
/// under and, for records with several views, the view that was read.
#[derive(Debug, Clone)]
pub struct Read {
    action: AuditAction,
    subject: AuditSubject,
    permit: Option<PermitId>,
    view: Option<&'static str>,
}

impl Read {
    pub fn of(action: impl Into<AuditAction>, subject: AuditSubject) -> Self {
        Self {
            action: action.into(),
            subject,
            permit: None,
            view: None,
        }
    }

    /// The permit the record falls under, so that the permit's own trail shows the read.
    pub fn under(mut self, permit: PermitId) -> Self {
        self.permit = Some(permit);
        self
    }

    /// One of the record's views (a study's `rounds` or `events`).
    pub fn view(mut self, view: &'static str) -> Self {
        self.view = Some(view);
        self
    }
}

/// Appends the entry of `read` by `by` to `tx`.
pub async fn record_read(tx: &mut dyn Tx, by: &Requester<'_>, read: Read) -> Result<()> {
    let mut event = by.audit(read.action, read.subject);
    if let Some(permit) = read.permit {
        event = event.permit(permit);
    }
    if let Some(view) = read.view {
        event = event.details(&StudyViewed { view });
    }
    tx.append_audit(event).await?;
    Ok(())
}

/// Appends the entry of a listing by `by` that returned `returned` records (after the policy
/// dropped those the caller may not read).
pub async fn record_list(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    action: impl Into<AuditAction>,
    subject: AuditSubject,
    returned: usize,
) -> Result<()> {
    tx.append_audit(by.audit(action, subject).details(&Listed { returned }))
        .await?;
    Ok(())
}
