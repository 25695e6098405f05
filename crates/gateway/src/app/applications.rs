//! Application services: submission (Art. 67), the HDAB's decision with the issuance of the
//! permit (Art. 68), and withdrawal.

use super::Requester;
use crate::{
    authz::Action,
    store::{StoreError, Tx},
};
use ehds_core::domain::{
    application::ApplicationTransitionError,
    audit::AuditSubject,
    audit_details::{ApplicationCreated, ApplicationDecided, PermitIssued},
    time::Timestamp,
    Application, ApplicationId, ApplicationStatus, DpRequirement, NewApplication, Permit,
};

/// Stores a new application, submitted by `by`.
#[tracing::instrument(name = "Submitting an application", skip_all)]
pub async fn create(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    request: NewApplication,
    now: Timestamp,
) -> Result<Application, StoreError> {
    let app = Application {
        id: ApplicationId::new(),
        applicant_sub: by.principal.sub.clone(),
        status: ApplicationStatus::Submitted,
        submitted_at: now,
        decided_at: None,
        decided_by: None,
        decision_reason: None,
        permit_id: None,
        request,
    };
    tx.insert_application(&app).await?;
    tx.append_audit(
        by.audit(Action::ApplicationCreate, AuditSubject::Application(app.id))
            .details(&ApplicationCreated {
                title: &app.request.title,
                purposes: &app.request.purposes,
                categories: &app.request.categories,
            }),
    )
    .await?;
    Ok(app)
}

/// The HDAB's decision on an application.
#[derive(Debug)]
pub enum Decision {
    /// Approve, issuing a permit with these conditions; grant the Art. 71(4) exception the
    /// application asked for, or not.
    Approve {
        grant_optout_exception: bool,
        conditions: Option<String>,
        /// Which privacy plans the permit's studies may use.
        dp_requirement: DpRequirement,
        /// Whether the permit's studies must use secure aggregation.
        require_secure_aggregation: bool,
    },
    Reject,
}

/// Why a decision was not recorded; nothing was stored.
#[derive(Debug)]
pub enum DecideError {
    /// A rejection must state its reasons (Art. 68(9)).
    ReasonRequired,
    /// The exception was granted, but the application did not ask for it.
    ExceptionNotRequested,
    /// The requested period has already ended.
    PeriodEnded,
    /// The application is no longer open to a decision.
    Transition(ApplicationTransitionError),
    Store(StoreError),
}

impl From<StoreError> for DecideError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Records `decision` on `app` with `reason` (required for a rejection). An approval issues the
/// permit; it is returned, and audited on the permit before the decision is on the application.
#[tracing::instrument(name = "Deciding an application", skip_all, fields(application = %app.id))]
pub async fn decide(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    app: &mut Application,
    decision: Decision,
    reason: Option<String>,
    now: Timestamp,
) -> Result<Option<Permit>, DecideError> {
    let id = app.id;
    let decided_by = by.principal.sub.clone();
    let permit = match decision {
        Decision::Reject => {
            let reason = reason.ok_or(DecideError::ReasonRequired)?;
            app.reject(&decided_by, reason, now)
                .map_err(DecideError::Transition)?;
            None
        }
        Decision::Approve {
            grant_optout_exception,
            conditions,
            dp_requirement,
            require_secure_aggregation,
        } => {
            if grant_optout_exception && app.request.optout_exception.is_none() {
                return Err(DecideError::ExceptionNotRequested);
            }
            if app.request.period_end <= now {
                return Err(DecideError::PeriodEnded);
            }
            let permit = Permit::issue(
                id,
                &app.applicant_sub,
                &app.request,
                grant_optout_exception,
                conditions,
                dp_requirement,
                now,
            )
            .requiring_secure_aggregation(require_secure_aggregation);
            app.approve(&decided_by, permit.id(), reason, now)
                .map_err(DecideError::Transition)?;
            tx.insert_permit(&permit, &decided_by, now).await?;
            Some(permit)
        }
    };
    tx.update_application(app).await?;
    let action = Action::ApplicationDecide;
    let mut event = by
        .audit(action, AuditSubject::Application(id))
        .details(&ApplicationDecided {
            decision: app.status.as_str(),
            reason: app.decision_reason.as_deref(),
        });
    if let Some(p) = &permit {
        event = event.permit(p.id());
        tx.append_audit(
            by.audit(action, AuditSubject::Permit(p.id()))
                .permit(p.id())
                .details(&PermitIssued::new(
                    id,
                    p.record().expires_at,
                    p.terms().optout_exception.is_some(),
                    p.terms().dp_requirement,
                )),
        )
        .await?;
    }
    tx.append_audit(event).await?;
    Ok(permit)
}

/// Why a withdrawal was not recorded.
#[derive(Debug)]
pub enum WithdrawError {
    /// The application was already decided or withdrawn.
    Transition(ApplicationTransitionError),
    Store(StoreError),
}

/// Withdraws `app` on its applicant's request, before it is decided.
#[tracing::instrument(name = "Withdrawing an application", skip_all, fields(application = %app.id))]
pub async fn withdraw(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    app: &mut Application,
    now: Timestamp,
) -> Result<(), WithdrawError> {
    app.withdraw(&by.principal.sub, now)
        .map_err(WithdrawError::Transition)?;
    tx.update_application(app)
        .await
        .map_err(WithdrawError::Store)?;
    tx.append_audit(by.audit(
        Action::ApplicationWithdraw,
        AuditSubject::Application(app.id),
    ))
    .await
    .map_err(WithdrawError::Store)?;
    Ok(())
}
