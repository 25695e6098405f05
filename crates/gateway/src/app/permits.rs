//! Permit services: the lifecycle transitions (suspend, reinstate, revoke, amend, extend), each
//! stored with its audit entry (and, for an amendment, the previous terms as a version), and
//! the governance check.

use super::Requester;
use crate::{
    authz::Action,
    store::{StoreError, Tx},
};
use ehds_core::domain::{
    audit::{AuditSubject, Outcome},
    audit_details::{PermitChange, PermitChecked, PermitTransition},
    check::{check, CheckOutcome, CheckRequest},
    permit::{Amendment, ChangeError, TransitionError},
    time::Timestamp,
    FieldError, Permit,
};

/// Why a lifecycle transition was not applied; nothing was stored.
#[derive(Debug)]
pub enum PermitError {
    /// The permit's state does not allow the transition.
    Transition(TransitionError),
    /// The change itself is invalid (an amendment's or extension's terms).
    Invalid(Vec<FieldError>),
    Store(StoreError),
}

impl From<StoreError> for PermitError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<ChangeError> for PermitError {
    fn from(e: ChangeError) -> Self {
        match e {
            ChangeError::Transition(t) => Self::Transition(t),
            ChangeError::Invalid(errors) => Self::Invalid(errors),
        }
    }
}

/// Stores `permit` after a transition from row version `before`, with the terms version it
/// opened (if any) and the audit entry: the common end of every transition.
#[allow(clippy::too_many_arguments)]
async fn record(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    action: Action,
    permit: &Permit,
    before: i64,
    change: PermitChange<'_>,
    version_reason: Option<&str>,
    now: Timestamp,
) -> Result<(), StoreError> {
    tx.update_permit(permit, before).await?;
    if let Some(reason) = version_reason {
        tx.insert_permit_version(permit, &by.principal.sub, Some(reason), now)
            .await?;
    }
    let id = permit.id();
    tx.append_audit(
        by.audit(action, AuditSubject::Permit(id))
            .permit(id)
            .details(&PermitTransition {
                from: before,
                to: permit.row_version(),
                status: permit.state(now).name(),
                change,
            }),
    )
    .await?;
    Ok(())
}

/// Suspends an active permit while a non-compliance procedure runs (Art. 63).
#[tracing::instrument(name = "Suspending a permit", skip_all, fields(permit = %permit.id()))]
pub async fn suspend(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    permit: &mut Permit,
    reason: String,
    now: Timestamp,
) -> Result<(), PermitError> {
    let before = permit.row_version();
    permit
        .suspend(reason.clone(), now)
        .map_err(PermitError::Transition)?;
    let change = PermitChange::Suspended { reason: &reason };
    record(
        tx,
        by,
        Action::PermitSuspend,
        permit,
        before,
        change,
        None,
        now,
    )
    .await?;
    Ok(())
}

/// Lifts a suspension.
#[tracing::instrument(name = "Reinstating a permit", skip_all, fields(permit = %permit.id()))]
pub async fn reinstate(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    permit: &mut Permit,
    reason: Option<String>,
    now: Timestamp,
) -> Result<(), PermitError> {
    let before = permit.row_version();
    permit.reinstate(now).map_err(PermitError::Transition)?;
    let change = PermitChange::Reinstated {
        reason: reason.as_deref(),
    };
    record(
        tx,
        by,
        Action::PermitReinstate,
        permit,
        before,
        change,
        None,
        now,
    )
    .await?;
    Ok(())
}

/// Revokes a permit (Art. 63); final.
#[tracing::instrument(name = "Revoking a permit", skip_all, fields(permit = %permit.id()))]
pub async fn revoke(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    permit: &mut Permit,
    reason: String,
    now: Timestamp,
) -> Result<(), PermitError> {
    let before = permit.row_version();
    permit
        .revoke(reason.clone(), now)
        .map_err(PermitError::Transition)?;
    let change = PermitChange::Revoked { reason: &reason };
    record(
        tx,
        by,
        Action::PermitRevoke,
        permit,
        before,
        change,
        None,
        now,
    )
    .await?;
    Ok(())
}

/// Amends the permit's terms; the terms before it are kept as a version.
#[tracing::instrument(name = "Amending a permit", skip_all, fields(permit = %permit.id()))]
pub async fn amend(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    permit: &mut Permit,
    amendment: Amendment,
    reason: String,
    now: Timestamp,
) -> Result<(), PermitError> {
    let before = permit.row_version();
    let previous_terms = permit.terms().clone();
    permit.amend(amendment, now)?;
    let change = PermitChange::Amended {
        reason: &reason,
        terms_version: permit.record().terms_version,
        previous_terms: &previous_terms,
    };
    record(
        tx,
        by,
        Action::PermitAmend,
        permit,
        before,
        change,
        Some(&reason),
        now,
    )
    .await?;
    Ok(())
}

/// Extends the permit once, at least a month before expiry (Art. 68(13)).
#[tracing::instrument(name = "Extending a permit", skip_all, fields(permit = %permit.id()))]
pub async fn extend(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    permit: &mut Permit,
    expires_at: Timestamp,
    reason: String,
    now: Timestamp,
) -> Result<(), PermitError> {
    let before = permit.row_version();
    let previous_expires_at = permit.record().expires_at;
    permit.extend(expires_at, now)?;
    let change = PermitChange::Extended {
        reason: &reason,
        previous_expires_at,
        expires_at: permit.record().expires_at,
    };
    record(
        tx,
        by,
        Action::PermitExtend,
        permit,
        before,
        change,
        None,
        now,
    )
    .await?;
    Ok(())
}

/// May `permit` cover the processing `req` describes now? Every failed condition is in the
/// outcome; a refusal is audited as denied.
#[tracing::instrument(name = "Checking a permit", skip_all, fields(permit = %permit.id()))]
pub async fn check_processing(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    permit: &Permit,
    req: &CheckRequest,
    now: Timestamp,
) -> Result<CheckOutcome, StoreError> {
    let outcome = check(permit, req, now);
    let id = permit.id();
    let mut event = by
        .audit(Action::PermitCheck, AuditSubject::Permit(id))
        .permit(id)
        .details(&PermitChecked {
            allowed: outcome.allowed,
            reasons: &outcome.reasons,
            purpose: req.purpose,
            categories: &req.categories,
            data_holders: &req.data_holders,
            epsilon: req.epsilon.map(f64::from),
        });
    if !outcome.allowed {
        event.outcome = Outcome::Denied;
    }
    tx.append_audit(event).await?;
    Ok(outcome)
}
