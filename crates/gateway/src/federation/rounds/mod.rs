//! The round loop: a state machine over the study's rows, advanced one transition per
//! transaction, so a gateway killed at any point resumes at the same round when it restarts.
//!
//! ```text
//! no open round ── governance check + Cedar + budget pre-check ──> collecting (tasks out)
//!                  └─ refused ───────────────────────────────────> study stopped
//! collecting ──── all results, or deadline with quorum ─────────> aggregated (DP, budget
//!             │                                                   spent, model checkpointed)
//!             ├── deadline without quorum (or, under FLTrust, ──> failed (next attempt)
//!             │   without the root holder's update)
//!             └── permit revoked / expired / suspended ─────────> discarded
//! last round aggregated ── evaluation tasks ── all back or deadline ─> study completed
//! ```
//!
//! Every transition and its audit entry commit together. The noise of round r is drawn from a
//! generator keyed by the study's secret and r, and the server state comes from the checkpoint
//! of round r-1, so an aggregation redone after a crash gives the same model, and the budget is
//! spent once because the spend commits with the checkpoint.

mod aggregate;
mod collect;
mod complete;
mod start;

use super::Federation;
use crate::federation::Signal;
use crate::store::Tx;
use aggregate::aggregate;
use anyhow::Context;
use collect::{collect, fail_round};
use complete::evaluate_and_complete;
use ehds_core::domain::{
    audit::{Actor, AuditAction, AuditSubject, NewAuditEvent},
    audit_details::{StudyHalted, StudyResumed},
    study::{Checkpoint, Round, RoundPhase, Study, StudyAccountant, StudyStatus, TaskStatus},
    time::{self, Timestamp},
    PermitState, StudyId,
};
use start::{governance, refuse, start_round};

pub use ehds_core::domain::study::{RoundReason, RoundRefusal};

/// What one call to [`advance`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing to do until results arrive, a deadline passes or the permit changes.
    Waiting,
    /// A transition was committed; call again.
    Progressed,
    /// The study is no longer live.
    Done,
}

fn system_event(action: AuditAction, study: &Study) -> NewAuditEvent {
    NewAuditEvent::success(&Actor::system(), action, AuditSubject::Study(study.id))
        .permit(study.spec.permit_id)
}

/// Advances study `id` by at most one transition.
#[tracing::instrument(name = "Advancing a study", skip_all, fields(study = %id))]
pub async fn advance(fed: &Federation, id: StudyId) -> anyhow::Result<Step> {
    let mut tx = fed.store.begin().await?;
    // read after the transaction began: on SQLite `begin` may wait for the writer lock, and a
    // round must not be stamped earlier than the commits it follows
    let now = time::now();
    let Some(mut study) = tx.get_study(id).await? else {
        return Ok(Step::Done);
    };
    if !study.status().is_live() {
        return Ok(Step::Done);
    }
    let permit = tx
        .get_permit(study.spec.permit_id)
        .await?
        .context("a study's permit is missing")?;
    let open = tx.open_round(id).await?;
    let version = study.row_version;

    // Governance first: a permit that stopped covering the study ends or pauses it before
    // anything else happens, and throws away the round in flight.
    let permit_state = permit.state(now);
    let halt = match &permit_state {
        PermitState::Revoked { .. } | PermitState::Expired { .. } => Some(StudyStatus::Stopped),
        PermitState::Suspended { .. } if study.status() == StudyStatus::Running => {
            Some(StudyStatus::Suspended)
        }
        _ => None,
    };
    if let Some(to) = halt {
        let reason = format!("the permit is {}", permit_state.name());
        let discarded = match open {
            Some(round) => Some(discard(&mut *tx, round, &reason, now).await?),
            None => None,
        };
        match to {
            StudyStatus::Suspended => study.suspend(reason.clone(), now)?,
            _ => study.stop(reason.clone(), now)?,
        }
        tx.update_study(&study, version).await?;
        let action = if to == StudyStatus::Suspended {
            AuditAction::StudySuspend
        } else {
            AuditAction::StudyStop
        };
        tx.append_audit(system_event(action, &study).details(&StudyHalted {
            reason: &reason,
            discarded_round: discarded,
            rounds_done: study.rounds_done,
        }))
        .await?;
        tx.commit().await?;
        fed.signal(Signal::Tasks);
        return Ok(Step::Progressed);
    }
    if study.status() == StudyStatus::Suspended {
        if permit_state != PermitState::Active {
            return Ok(Step::Waiting);
        }
        study.resume(now)?;
        tx.update_study(&study, version).await?;
        tx.append_audit(
            system_event(AuditAction::StudyResume, &study).details(&StudyResumed {
                next_round: study.rounds_done + 1,
            }),
        )
        .await?;
        tx.commit().await?;
        return Ok(Step::Progressed);
    }

    match open {
        Some(round) => collect(fed, tx, study, permit, round, now).await,
        None if study.rounds_done < study.spec.rounds => {
            start_round(fed, tx, study, permit, now).await
        }
        None => evaluate_and_complete(fed, tx, study, permit, now).await,
    }
}

/// Closes a collecting round without aggregating it (`Discarded` or `Failed`); its pending
/// tasks are discarded, so no result for them is accepted any more. Returns the round number.
pub async fn close_open_round(
    tx: &mut dyn Tx,
    mut round: Round,
    phase: RoundPhase,
    reason: &str,
    now: Timestamp,
) -> crate::store::Result<u64> {
    round.phase = phase;
    round.closed_at = Some(now);
    round.reason = Some(reason.to_owned());
    tx.close_round(&round).await?;
    tx.close_pending_tasks(round.id, TaskStatus::Discarded)
        .await?;
    tx.delete_secagg(round.id).await?;
    Ok(round.round)
}

async fn discard(
    tx: &mut dyn Tx,
    round: Round,
    reason: &str,
    now: Timestamp,
) -> anyhow::Result<u64> {
    Ok(close_open_round(tx, round, RoundPhase::Discarded, reason, now).await?)
}

fn accountant(checkpoint: &Checkpoint) -> anyhow::Result<StudyAccountant> {
    serde_json::from_value(checkpoint.accountant.clone()).context("stored accountant is invalid")
}
