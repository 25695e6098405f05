//! Opening a round: the governance check, the Cedar policy and the budget pre-check before any
//! task goes out; a refusal stops the study.

use super::{accountant, system_event, Federation, RoundReason, RoundRefusal, Step};
use crate::federation::Signal;
use crate::{
    auth::{Principal, Role},
    authz::{Action, Resource},
    store::Tx,
};
use anyhow::Context;
use ehds_core::domain::{
    audit::{AuditAction, Outcome},
    audit_details::{RoundRefused, RoundStarted},
    check::{check, CheckRequest},
    study::{Round, RoundPhase, RoundSummary, Study, Task, TaskKind},
    time::Timestamp,
    Epsilon, Permit, RoundId,
};
use ehds_core::secure_aggregation::{self as sa};
use fl_engine::load_safetensors;

/// The researcher who submitted the study, as the policies see them.
pub(super) fn submitter(study: &Study) -> Principal {
    Principal {
        sub: study.researcher_sub.clone(),
        roles: [Role::Researcher].into(),
        organisation: Some(study.organisation.clone()),
    }
}

/// The governance check the round must pass, with every failed condition.
pub(super) fn governance(
    fed: &Federation,
    study: &Study,
    permit: &Permit,
    participants: &[ehds_core::domain::OrgId],
    epsilon: Option<Epsilon>,
    now: Timestamp,
) -> anyhow::Result<Vec<RoundRefusal>> {
    let outcome = check(
        permit,
        &CheckRequest {
            purpose: study.spec.purpose,
            categories: study.spec.categories.clone(),
            data_holders: participants.to_vec(),
            epsilon,
        },
        now,
    );
    let mut reasons: Vec<RoundRefusal> = outcome
        .reasons
        .into_iter()
        .map(RoundRefusal::Permit)
        .collect();
    if !fed.authz.is_allowed(
        &submitter(study),
        Action::StudyRun,
        &Resource::Permit(permit),
    )? {
        reasons.push(RoundRefusal::Round(RoundReason::PolicyDenied {
            action: Action::StudyRun.name(),
        }));
    }
    Ok(reasons)
}

#[tracing::instrument(name = "Refusing a round", skip_all, fields(study = %study.id, round = round))]
pub(super) async fn refuse(
    fed: &Federation,
    mut tx: Box<dyn Tx>,
    mut study: Study,
    round: u64,
    reasons: Vec<RoundRefusal>,
    now: Timestamp,
) -> anyhow::Result<Step> {
    let version = study.row_version;
    let budget_only = reasons.iter().all(RoundRefusal::is_budget);
    let reason = if budget_only {
        "the privacy budget cannot pay for another round".to_owned()
    } else {
        "the permit no longer covers the study".to_owned()
    };
    study.stop(reason.clone(), now)?;
    tx.update_study(&study, version).await?;
    let mut event = system_event(AuditAction::StudyRoundRefuse, &study).details(&RoundRefused {
        round,
        reason: &reason,
        reasons: &reasons,
    });
    event.outcome = Outcome::Denied;
    tx.append_audit(event).await?;
    tx.commit().await?;
    fed.signal(Signal::Tasks);
    Ok(Step::Progressed)
}

#[tracing::instrument(name = "Opening a round", skip_all, fields(study = %study.id, round = study.rounds_done + 1))]
pub(super) async fn start_round(
    fed: &Federation,
    mut tx: Box<dyn Tx>,
    mut study: Study,
    permit: Permit,
    now: Timestamp,
) -> anyhow::Result<Step> {
    let r = study.rounds_done + 1;
    if now < permit.record().valid_from {
        return Ok(Step::Waiting);
    }
    let checkpoint = tx
        .latest_checkpoint(study.id)
        .await?
        .context("a running study has no checkpoint")?;
    // The budget pre-check: what this round would add to the study's epsilon, asked of the
    // accountant before any task goes out.
    // A study without formal DP spends nothing, so there is no epsilon to check.
    // Under distributed DP it is the distributed mechanism's, for the minimum survivors.
    let (epsilon, cost) = if study.spec.dp.is_formal() {
        let after = accountant(&checkpoint)?.epsilon_after_round(&study.spec.dp)?;
        let cost = (after - study.epsilon_spent).max(f64::MIN_POSITIVE);
        let epsilon = Epsilon::parse(cost).map_err(|e| anyhow::anyhow!(e.1))?;
        (Some(epsilon), cost)
    } else {
        (None, 0.0)
    };
    // Holders an amendment removed from the permit drop out; the rest must still be a quorum.
    let participants: Vec<_> = study
        .spec
        .data_holders
        .iter()
        .filter(|h| permit.terms().has_data_holder(h))
        .cloned()
        .collect();
    let mut reasons = governance(fed, &study, &permit, &participants, epsilon, now)?;
    if let Some(root) = study.spec.root_holder() {
        if !participants.contains(root) {
            reasons.push(RoundRefusal::Round(RoundReason::RootHolderRemoved {
                holder: root.clone(),
            }));
        }
    }
    if participants.len() < study.spec.min_sites {
        reasons.push(RoundRefusal::Round(RoundReason::QuorumImpossible {
            permitted_holders: participants.len(),
            min_sites: study.spec.min_sites,
        }));
    }
    let round_id = RoundId::new();
    // under secure aggregation the relay's session opens with the round
    let mut relay = None;
    if let Some(plan) = study.spec.secure_aggregation {
        let (global, _) = load_safetensors(&checkpoint.global)?;
        let len = global.to_flat().len();
        if let Some(ddg) = &study.spec.dp.distributed {
            anyhow::ensure!(
                ddg.params.dim == len,
                "the distributed DP plan is for {} entries, the model has {len}",
                ddg.params.dim
            );
            // the noise is planned for this many survivors: fewer holders can never pay
            let least = ddg.params.min_survivors as usize;
            if participants.len() < least {
                reasons.push(RoundRefusal::Round(RoundReason::QuorumImpossible {
                    permitted_holders: participants.len(),
                    min_sites: study.spec.min_sites.max(least),
                }));
            }
        }
        let clients = u32::try_from(participants.len())?;
        match sa::session_config(plan, round_id, clients, sa::ring(&study.spec.dp, len)) {
            Ok(config) => relay = Some(serde_json::to_vec(&secagg::Server::new(config)?)?),
            // too few holders left for the study's threshold on any graph
            Err(_) => reasons.push(RoundRefusal::Round(RoundReason::QuorumImpossible {
                permitted_holders: participants.len(),
                min_sites: study.spec.min_sites.max(plan.threshold as usize + 1),
            })),
        }
    }
    if !reasons.is_empty() {
        return refuse(fed, tx, study, r, reasons, now).await;
    }
    let earlier = tx
        .list_rounds(study.id)
        .await?
        .iter()
        .filter(|x| x.round == r)
        .count();
    let registry_version = tx.optout_registry_version().await?;
    let round = Round {
        id: round_id,
        study_id: study.id,
        round: r,
        attempt: u32::try_from(earlier + 1).unwrap_or(u32::MAX),
        phase: RoundPhase::Collecting,
        registry_version,
        participants: participants.clone(),
        opened_at: now,
        deadline: now + chrono::Duration::seconds(study.spec.round_deadline_seconds as i64),
        closed_at: None,
        reason: None,
        epsilon_round: None,
        epsilon_total: None,
        summary: RoundSummary::default(),
    };
    tx.insert_round(&round).await?;
    if let Some(state) = &relay {
        tx.insert_secagg_session(round.id, state).await?;
    }
    for holder in &participants {
        tx.insert_task(&Task::new(
            &round,
            TaskKind::Fit,
            holder.clone(),
            round.deadline,
            now,
        ))
        .await?;
    }
    // Touch the study so a concurrent driver of the same study conflicts instead of
    // opening a second round.
    let version = study.row_version;
    study.touch(now);
    tx.update_study(&study, version).await?;
    tx.append_audit(
        system_event(AuditAction::StudyRoundStart, &study).details(&RoundStarted {
            round: r,
            attempt: round.attempt,
            participants: &participants,
            registry_version,
            epsilon_round: cost,
            epsilon_remaining: permit.epsilon_remaining(),
            deadline: round.deadline,
        }),
    )
    .await?;
    tx.commit().await?;
    fed.signal(Signal::Tasks);
    Ok(Step::Progressed)
}
