//! After the last round: every holder evaluates the final model; then the study completes.

use super::{governance, refuse, system_event, Federation, Step};
use crate::federation::Signal;
use crate::store::Tx;
use anyhow::Context;
use ehds_core::domain::{
    audit::AuditAction,
    audit_details::{EvaluationStarted, StudyCompleted},
    study::{RoundPhase, Study, Task, TaskKind, TaskStatus},
    time::Timestamp,
    Permit,
};

/// After the last round: every holder evaluates the final model; then the study completes.
#[tracing::instrument(name = "Evaluating and completing a study", skip_all, fields(study = %study.id))]
pub(super) async fn evaluate_and_complete(
    fed: &Federation,
    mut tx: Box<dyn Tx>,
    mut study: Study,
    permit: Permit,
    now: Timestamp,
) -> anyhow::Result<Step> {
    let last = tx
        .list_rounds(study.id)
        .await?
        .into_iter()
        .rfind(|r| r.phase == RoundPhase::Aggregated && r.round == study.rounds_done)
        .context("the last round is not aggregated")?;
    let evaluations: Vec<Task> = tx
        .round_tasks(last.id)
        .await?
        .into_iter()
        .filter(|t| t.kind == TaskKind::Evaluate)
        .collect();
    let version = study.row_version;
    if evaluations.is_empty() {
        let reasons = governance(fed, &study, &permit, &last.participants, None, now)?;
        if !reasons.is_empty() {
            return refuse(fed, tx, study, last.round, reasons, now).await;
        }
        let deadline = now + chrono::Duration::seconds(study.spec.round_deadline_seconds as i64);
        for holder in &last.participants {
            tx.insert_task(&Task::new(
                &last,
                TaskKind::Evaluate,
                holder.clone(),
                deadline,
                now,
            ))
            .await?;
        }
        study.touch(now);
        tx.update_study(&study, version).await?;
        tx.append_audit(
            system_event(AuditAction::StudyEvaluateStart, &study).details(&EvaluationStarted {
                round: last.round,
                participants: &last.participants,
                deadline,
            }),
        )
        .await?;
        tx.commit().await?;
        fed.signal(Signal::Tasks);
        return Ok(Step::Progressed);
    }
    let pending = evaluations
        .iter()
        .filter(|t| t.status == TaskStatus::Pending)
        .count();
    if pending > 0 && evaluations.iter().all(|t| now < t.deadline) {
        return Ok(Step::Waiting);
    }
    for t in evaluations
        .iter()
        .filter(|t| t.status == TaskStatus::Pending)
    {
        let mut expired = t.clone();
        expired.status = TaskStatus::Expired;
        tx.complete_task(&expired, None).await?;
    }
    study.complete(now)?;
    tx.update_study(&study, version).await?;
    tx.append_audit(
        system_event(AuditAction::StudyComplete, &study).details(&StudyCompleted {
            rounds: study.rounds_done,
            epsilon_spent: study.epsilon_spent,
            evaluations: evaluations.len() - pending,
            missing_evaluations: pending,
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(Step::Done)
}
