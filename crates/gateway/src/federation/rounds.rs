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

use super::Federation;
use crate::{
    app::secagg_relay as relay,
    auth::{Principal, Role},
    authz::{Action, Resource},
    store::Tx,
};
use anyhow::Context;
use ehds_core::domain::{
    audit::{Actor, AuditAction, AuditSubject, NewAuditEvent, Outcome},
    audit_details::{
        EvaluationStarted, RoundAggregated, RoundFailed, RoundRefused, RoundStarted, RoundUnpaid,
        SecaggStageClosed, StudyCompleted, StudyHalted, StudyResumed,
    },
    check::{check, CheckRequest},
    study::{
        Checkpoint, DpLevel, DpPlan, Round, RoundPhase, RoundSummary, SiteContribution, Study,
        StudyAccountant, StudyStatus, Task, TaskKind, TaskStatus,
    },
    time::{self, Timestamp},
    Epsilon, OrgId, Permit, PermitState, RoundId, StudyId,
};
use ehds_core::{
    secure_aggregation::{self as sa, Relayed},
    wire::split_extras,
};
use fl_engine::{
    dp::{DpFedAvgConfig, NoiseRng},
    load_safetensors, save_safetensors,
    strategy::{
        Aggregator, AggregatorReport, DpFedAvgAggregator, DpRobust, UniformMean, WeightedMean,
    },
    train::TrainReport,
    FitRes, ParameterSet,
};

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
        fed.tasks_changed.notify_waiters();
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

/// The researcher who submitted the study, as the policies see them.
fn submitter(study: &Study) -> Principal {
    Principal {
        sub: study.researcher_sub.clone(),
        roles: [Role::Researcher].into(),
        organisation: Some(study.organisation.clone()),
    }
}

fn accountant(checkpoint: &Checkpoint) -> anyhow::Result<StudyAccountant> {
    serde_json::from_value(checkpoint.accountant.clone()).context("stored accountant is invalid")
}

/// The governance check the round must pass, with every failed condition.
fn governance(
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

async fn refuse(
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
    fed.tasks_changed.notify_waiters();
    Ok(Step::Progressed)
}

async fn start_round(
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
    if let Some(root) = study.spec.aggregation.root_holder() {
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
    fed.tasks_changed.notify_waiters();
    Ok(Step::Progressed)
}

async fn collect(
    fed: &Federation,
    mut tx: Box<dyn Tx>,
    study: Study,
    permit: Permit,
    round: Round,
    now: Timestamp,
) -> anyhow::Result<Step> {
    if study.spec.secure_aggregation.is_some() {
        let step = collect_secure(fed, tx, study, permit, round, now).await?;
        if matches!(step, Step::Progressed) {
            fed.secagg_changed.notify_waiters();
        }
        return Ok(step);
    }
    let tasks: Vec<Task> = tx
        .round_tasks(round.id)
        .await?
        .into_iter()
        .filter(|t| t.kind == TaskKind::Fit)
        .collect();
    let done: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Completed)
        .collect();
    let all_in = done.len() == tasks.len();
    if !all_in && now < round.deadline {
        return Ok(Step::Waiting);
    }
    if done.len() < study.spec.min_sites {
        let reason = format!(
            "{} of {} results by the deadline; {} needed",
            done.len(),
            tasks.len(),
            study.spec.min_sites
        );
        return fail_round(fed, tx, study, round, reason, now).await;
    }
    aggregate(fed, tx, study, permit, round, now, None).await
}

/// Closes a round that cannot aggregate (a missed quorum, a secure aggregation that stopped,
/// FLTrust without its root update): nothing aggregated, nothing spent; the study fails once
/// the round failed `max_round_attempts` times, with the last attempt's reason, and tries
/// again otherwise.
async fn fail_round(
    fed: &Federation,
    mut tx: Box<dyn Tx>,
    mut study: Study,
    mut round: Round,
    reason: String,
    now: Timestamp,
) -> anyhow::Result<Step> {
    let version = study.row_version;
    round.phase = RoundPhase::Failed;
    round.closed_at = Some(now);
    round.reason = Some(reason);
    tx.close_round(&round).await?;
    tx.delete_secagg(round.id).await?;
    tx.close_pending_tasks(round.id, TaskStatus::Expired)
        .await?;
    let failed = tx
        .list_rounds(study.id)
        .await?
        .iter()
        .filter(|x| x.round == round.round && x.phase == RoundPhase::Failed)
        .count();
    if failed >= fed.settings.max_round_attempts as usize {
        study.fail(
            format!(
                "round {} failed at attempt {failed} of {}: {}",
                round.round,
                fed.settings.max_round_attempts,
                round.reason.as_deref().unwrap_or("no reason recorded")
            ),
            now,
        )?;
    } else {
        study.touch(now);
    }
    tx.update_study(&study, version).await?;
    let mut event = system_event(AuditAction::StudyRoundFail, &study).details(&RoundFailed {
        round: round.round,
        attempt: round.attempt,
        reason: round.reason.as_deref(),
        study_status: study.status().as_str(),
    });
    event.outcome = Outcome::Failure;
    tx.append_audit(event).await?;
    tx.commit().await?;
    Ok(Step::Progressed)
}

/// A round under secure aggregation: closes the relay's current stage once every holder still
/// in has answered, or at the stage's deadline, and relays what the close sends each holder;
/// after the last stage, aggregates the unmasked sum. Fewer holders than the threshold at any
/// stage, or than `min_sites` in the sum, fail the round like a missed quorum.
async fn collect_secure(
    fed: &Federation,
    mut tx: Box<dyn Tx>,
    study: Study,
    permit: Permit,
    round: Round,
    now: Timestamp,
) -> anyhow::Result<Step> {
    use secagg::messages::{ShareKeys, UnmaskResponse};
    use secagg::Round as Stage;
    let mut server = relay::lock_relay(tx.as_mut(), round.id).await?;
    let stage = server.round();
    if !server.awaiting().is_empty() && now < sa::stage_deadline(&round, stage) {
        return Ok(Step::Waiting);
    }
    let to = |m: &Relayed| match m {
        Relayed::Keys(k) => k.to.0,
        Relayed::Shares(s) => s.to.0,
        Relayed::Unmask(u) => u.to.0,
    };
    let relayed: Result<Vec<Relayed>, secagg::Error> = match stage {
        Stage::AdvertiseKeys => server
            .close_advertise()
            .map(|m| m.into_iter().map(Relayed::Keys).collect()),
        Stage::ShareKeys => {
            let shared: Vec<ShareKeys> =
                relay::kept(tx.as_mut(), round.id, relay::SHARE_KEYS_KEPT).await?;
            server
                .close_share_keys(shared)
                .map(|m| m.into_iter().map(Relayed::Shares).collect())
        }
        Stage::MaskedInputCollection => server
            .close_masked_input()
            .map(|m| m.into_iter().map(Relayed::Unmask).collect()),
        Stage::Unmasking => {
            let masked = relay::masked_sum(tx.as_mut(), round.id, &server).await?;
            let answers: Vec<UnmaskResponse> =
                relay::kept(tx.as_mut(), round.id, relay::UNMASK_KEPT).await?;
            let sum = match server.finish(masked, answers) {
                Ok(sum) => sum,
                Err(e) => {
                    let reason = format!("secure aggregation failed at unmasking: {e}");
                    return fail_round(fed, tx, study, round, reason, now).await;
                }
            };
            if let Some(reason) = too_few_in_sum(&study, &round, sum.contributors.len()) {
                return fail_round(fed, tx, study, round, reason, now).await;
            }
            return aggregate(fed, tx, study, permit, round, now, Some(sum)).await;
        }
        Stage::Finished => anyhow::bail!("the relay of round {} already finished", round.id),
    };
    let relayed = match relayed {
        Ok(m) => m,
        Err(e) => {
            let reason = format!(
                "secure aggregation stopped at stage {}: {e}",
                sa::stage_name(stage)
            );
            return fail_round(fed, tx, study, round, reason, now).await;
        }
    };
    // The survivor list is final once the masked inputs are in: a sum that could not be
    // used is never unmasked, so the gateway never learns it (under distributed DP, a sum of
    // fewer holders than planned carries less noise than the accounting counts).
    if let Some(Relayed::Unmask(request)) = relayed.first() {
        if let Some(reason) = too_few_in_sum(&study, &round, request.survivors.len()) {
            return fail_round(fed, tx, study, round, reason, now).await;
        }
    }
    let kind = sa::relayed_kind(stage).context("a closed stage relays nothing")?;
    let messages = relayed
        .iter()
        .map(|m| Ok((to(m), serde_json::to_vec(m)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    tx.insert_secagg_messages(round.id, kind, &messages).await?;
    if stage == Stage::ShareKeys {
        // relayed: the ciphertexts now wait in each recipient's message
        tx.delete_secagg_received(round.id, relay::SHARE_KEYS_KEPT)
            .await?;
    }
    tx.update_secagg_session(round.id, &serde_json::to_vec(&server)?)
        .await?;
    tx.append_audit(system_event(AuditAction::StudyRoundSecagg, &study).details(
        &SecaggStageClosed {
            round: round.round,
            attempt: round.attempt,
            stage: sa::stage_name(stage),
            continuing: messages.len(),
        },
    ))
    .await?;
    tx.commit().await?;
    Ok(Step::Progressed)
}

/// Why a secure sum of `survivors` holders may not be used: fewer than `min_sites`, or, under
/// distributed DP, fewer than the noise was planned for (`DdgPlan::check_survivors`).
fn too_few_in_sum(study: &Study, round: &Round, survivors: usize) -> Option<String> {
    let spec = &study.spec;
    if let Some(plan) = &spec.dp.distributed {
        if let Err(e) = plan.check_survivors(survivors) {
            return Some(format!(
                "{survivors} of {} holders in the securely aggregated sum, and the holders' noise \
                 was planned for at least {} (dp.min_survivors): the round is discarded before its \
                 sum is unmasked ({e})",
                round.participants.len(),
                plan.params.min_survivors
            ));
        }
    }
    (survivors < spec.min_sites).then(|| {
        format!(
            "{survivors} of {} holders in the securely aggregated sum; {} needed",
            round.participants.len(),
            spec.min_sites
        )
    })
}

/// The unmasked sum of a round as one result the method's server averages: the global model
/// plus the mean of the contributors' updates (uniform weights: the relay learns no holder's
/// sample count inside the sum). Under distributed DP the sum is of clipped, noised updates,
/// and it is divided by the number of holders invited, fixed before the round as DP-FedAvg's
/// divisor is; without DP by the number of contributors.
fn secure_mean(
    global: &ParameterSet,
    sum: &secagg::Aggregate,
    dp: &DpPlan,
    participants: usize,
    samples: u64,
) -> anyhow::Result<FitRes> {
    let (decoded, m): (Vec<f64>, f64) = match &dp.distributed {
        Some(plan) => (
            plan.decode(&sum.sum)?.into_iter().map(f64::from).collect(),
            participants.max(1) as f64,
        ),
        None => (
            sa::encoding(u32::try_from(participants)?)?.decode(&sum.sum),
            sum.contributors.len().max(1) as f64,
        ),
    };
    let base = global.to_flat();
    anyhow::ensure!(
        decoded.len() == base.len(),
        "the secure sum has {} entries, the model {}",
        decoded.len(),
        base.len()
    );
    let flat: Vec<f32> = base
        .iter()
        .zip(&decoded)
        .map(|(g, s)| (f64::from(*g) + s / m) as f32)
        .collect();
    Ok(FitRes {
        site: "secure-aggregation".to_owned(),
        num_examples: usize::try_from(samples.max(1))?,
        params: ParameterSet::from_flat(global, &flat)?,
        extras: ParameterSet::new(),
        report: TrainReport {
            steps: 0,
            mean_loss: 0.0,
        },
    })
}

/// The noise generator of round `round`: keyed by the study's own secret, so a redone
/// aggregation draws the same noise and nobody without the key can predict it.
fn round_noise(key: &[u8], round: u64) -> anyhow::Result<NoiseRng> {
    let key: [u8; 32] = key
        .try_into()
        .map_err(|_| anyhow::anyhow!("the study's noise key is not 32 bytes"))?;
    Ok(NoiseRng::from_secret(
        &key,
        format!("round/{round}").as_bytes(),
    ))
}

async fn aggregate(
    fed: &Federation,
    mut tx: Box<dyn Tx>,
    mut study: Study,
    mut permit: Permit,
    mut round: Round,
    now: Timestamp,
    secure: Option<secagg::Aggregate>,
) -> anyhow::Result<Step> {
    let spec = study.spec.clone();
    let tasks: Vec<Task> = tx
        .round_tasks(round.id)
        .await?
        .into_iter()
        .filter(|t| t.kind == TaskKind::Fit)
        .collect();
    let checkpoint = tx
        .latest_checkpoint(study.id)
        .await?
        .context("a running study has no checkpoint")?;
    let (global, _) = load_safetensors(&checkpoint.global)?;
    // FLTrust weighs every update against its root holder's: without it nothing can be
    // combined (no other rule stands in), so the round fails like one that missed its quorum
    if let Some(root) = spec.aggregation.root_holder() {
        let sent = tasks
            .iter()
            .any(|t| &t.data_holder == root && t.status == TaskStatus::Completed);
        if !sent {
            let reason = format!(
                "the root holder {root} sent no update by the deadline: FLTrust has no root \
                 update to weigh the round's other updates by"
            );
            return fail_round(fed, tx, study, round, reason, now).await;
        }
    }
    let mut results = Vec::new();
    let mut root_update: Option<Vec<f32>> = None;
    let mut sites = Vec::new();
    // A holder's training loss is computed on its records without noise: under either DP level
    // it would disclose what the study's epsilon does not cover, so it is only kept (and shown)
    // for studies without formal DP. The aggregation still receives it.
    let publish_train_loss = spec.dp.level == DpLevel::NoFormalDp;
    // under secure aggregation a holder contributed when its masked input is in the sum
    let in_sum: Option<Vec<OrgId>> = secure.as_ref().map(|a| {
        a.contributors
            .iter()
            .filter_map(|c| round.participants.get((c.0 as usize).checked_sub(1)?))
            .cloned()
            .collect()
    });
    let (mut contributors, mut samples) = (0usize, 0u64);
    for t in &tasks {
        let rep = t.report.clone().unwrap_or_default();
        let contributed = match &in_sum {
            Some(holders) => holders.contains(&t.data_holder),
            None => t.status == TaskStatus::Completed,
        };
        if contributed {
            contributors += 1;
            samples += rep.num_examples;
        }
        sites.push(SiteContribution {
            data_holder: t.data_holder.clone(),
            samples: rep.num_examples,
            excluded_subjects: rep.excluded_subjects,
            train_loss: rep.train_loss.filter(|_| publish_train_loss),
            contributed,
        });
        if !contributed || secure.is_some() {
            continue;
        }
        let bytes = tx
            .task_result(t.id)
            .await?
            .context("a completed task has no result")?;
        let (all, _) = load_safetensors(&bytes)?;
        let (params, extras) = split_extras(&all)?;
        if spec.aggregation.root_holder() == Some(&t.data_holder) {
            // FLTrust's root update g0 = w_root - w, as the engine's server-trained one; it
            // weighs the others and is not itself combined
            global
                .check_compatible(&params)
                .and_then(|()| params.ensure_finite())
                .map_err(|e| e.for_site(t.data_holder.as_str()))?;
            root_update = Some(
                params
                    .to_flat()
                    .iter()
                    .zip(global.to_flat())
                    .map(|(w, g)| w - g)
                    .collect(),
            );
            continue;
        }
        results.push(FitRes {
            site: t.data_holder.to_string(),
            num_examples: usize::try_from(rep.num_examples)?,
            params,
            extras,
            report: TrainReport {
                steps: rep.local_steps.unwrap_or(0) as usize,
                mean_loss: rep.train_loss.unwrap_or(0.0),
            },
        });
    }
    if let Some(sum) = &secure {
        results.push(secure_mean(
            &global,
            sum,
            &spec.dp,
            round.participants.len(),
            samples,
        )?);
    }
    if spec.aggregation.root_holder().is_some() {
        // both refused at submission: FLTrust's root update is not covered by central noise
        anyhow::ensure!(
            spec.dp.level != DpLevel::Client && secure.is_none(),
            "FLTrust runs without client-level DP and secure aggregation"
        );
        anyhow::ensure!(
            root_update.is_some(),
            "FLTrust aggregates only with its root holder's update"
        );
    }
    let rule = spec.aggregation.robust_rule(root_update)?;
    let aggregator: Box<dyn Aggregator> = match spec.dp.level {
        // the sum is already the only thing revealed: its mean enters as one result
        // (under distributed DP the holders' noise is in it: none is added here)
        _ if secure.is_some() => {
            anyhow::ensure!(
                (spec.dp.level == DpLevel::NoFormalDp || spec.dp.distributed.is_some())
                    && rule.is_none(),
                "secure aggregation runs without central noise and robust rules"
            );
            Box::new(UniformMean::new())
        }
        DpLevel::Client => {
            let noise = round_noise(
                &fed.vault.open(
                    study.id.to_string().as_bytes(),
                    &tx.study_noise_key(study.id).await?,
                )?,
                round.round,
            )?;
            match rule {
                None => Box::new(DpFedAvgAggregator::new(
                    DpFedAvgConfig {
                        clip_norm: spec.dp.clip_norm,
                        noise_multiplier: spec.dp.noise_multiplier,
                        // fixed before the round: dividing by the realised count would make
                        // the divisor itself depend on who answered
                        expected_sites: Some(round.participants.len() as f64),
                        parallel: true,
                    },
                    noise,
                )),
                // clipped updates, the robust rule, noise scaled to its replace-one sensitivity
                Some(rule) => Box::new(DpRobust::new(
                    rule,
                    spec.dp.clip_norm,
                    spec.dp.noise_multiplier,
                    noise,
                )?),
            }
        }
        // record-level noise was added at the holders; equal weights, because the holders'
        // sample counts are self-reported and not covered by their DP-SGD
        DpLevel::Record => match rule {
            Some(rule) => rule,
            None => Box::new(UniformMean::new()),
        },
        // without formal DP nothing is clipped or noised anywhere
        DpLevel::NoFormalDp => match rule {
            Some(rule) => rule,
            None => Box::new(WeightedMean),
        },
    };
    let mut server = spec.strategy.server(round.participants.len(), aggregator)?;
    server.load_state(checkpoint.server_state.clone())?;
    let failures = tasks.len() - contributors;
    let aggregated = server.aggregate_fit(round.round, &global, &results, failures)?;
    // the noise scale is public; the clip count and the per-site norms stay here
    let noise_std_on_mean = match aggregated
        .as_ref()
        .and_then(|a| a.metrics.aggregator.as_ref())
    {
        Some(AggregatorReport::ClientDp(r)) => Some(r.noise_std / r.divisor),
        // the robust rule's output is already a combined update: its noise is on it directly
        Some(AggregatorReport::RobustClientDp(r)) => Some(r.noise_std),
        // the holders' shares in the sum, over the fixed divisor (public: plan and count)
        _ => match (&spec.dp.distributed, &secure) {
            (Some(plan), Some(sum)) => Some(
                plan.central_variance(u32::try_from(sum.contributors.len())?)
                    .sqrt()
                    / round.participants.len().max(1) as f64,
            ),
            _ => None,
        },
    };
    // FLTrust: how many updates got no trust, a count only (never whose, nor the scores);
    // client-level DP, which would not cover it, is refused for FLTrust at submission
    let untrusted_updates = match aggregated
        .as_ref()
        .and_then(|a| a.metrics.aggregator.as_ref())
    {
        Some(AggregatorReport::Robust(r))
            if spec.aggregation.root_holder().is_some() && spec.dp.level != DpLevel::Client =>
        {
            Some(r.trust.iter().filter(|t| **t == 0.0).count())
        }
        _ => None,
    };
    let next = aggregated.map_or(global, |a| a.params);

    let mut acc = accountant(&checkpoint)?;
    let (total, cost) = if spec.dp.is_formal() {
        let total = acc.spend(&spec.dp)?;
        (total, total - study.epsilon_spent)
    } else {
        // still paid through the permit (0): a permit no longer active refuses the round
        (0.0, 0.0)
    };
    let permit_version = permit.row_version();
    if let Err(e) = permit.spend_epsilon(cost, now) {
        // Another study on the permit spent the rest first: this round must not be paid for.
        let reason = format!(
            "the permit's budget cannot pay for round {}: {e}",
            round.round
        );
        discard(&mut *tx, round, &reason, now).await?;
        let version = study.row_version;
        study.stop(reason.clone(), now)?;
        tx.update_study(&study, version).await?;
        let mut event = system_event(AuditAction::StudyRoundRefuse, &study).details(&RoundUnpaid {
            reason: &reason,
            epsilon_round: cost,
        });
        event.outcome = Outcome::Denied;
        tx.append_audit(event).await?;
        tx.commit().await?;
        return Ok(Step::Progressed);
    }
    tx.update_permit(&permit, permit_version).await?;
    let (model, digest) = save_safetensors(&next, &study.id.to_string(), round.round, None)?;
    tx.insert_checkpoint(
        &Checkpoint {
            study_id: study.id,
            round: round.round,
            global: model,
            server_state: server.save_state()?,
            accountant: serde_json::to_value(&acc)?,
        },
        now,
    )
    .await?;
    round.phase = RoundPhase::Aggregated;
    round.closed_at = Some(now);
    round.epsilon_round = Some(cost);
    round.epsilon_total = Some(total);
    round.summary = RoundSummary {
        sites,
        noise_std_on_mean,
        untrusted_updates,
    };
    tx.close_round(&round).await?;
    tx.close_pending_tasks(round.id, TaskStatus::Expired)
        .await?;
    tx.delete_secagg(round.id).await?;
    let version = study.row_version;
    study.record_round(round.round, total, now)?;
    tx.update_study(&study, version).await?;
    tx.append_audit(
        system_event(AuditAction::StudyRoundAggregate, &study).details(&RoundAggregated {
            round: round.round,
            attempt: round.attempt,
            contributors,
            missing: failures,
            samples: usize::try_from(samples)?,
            epsilon_round: cost,
            epsilon_total: total,
            permit_epsilon_spent: permit.record().epsilon_spent,
            // how many updates were clipped derives from the holders' unprivatised update
            // norms: never recorded (the key stays, so entries keep one shape)
            clipped_updates: None,
            model_digest: &digest,
        }),
    )
    .await?;
    tx.commit().await?;
    fed.tasks_changed.notify_waiters();
    Ok(Step::Progressed)
}

/// After the last round: every holder evaluates the final model; then the study completes.
async fn evaluate_and_complete(
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
        fed.tasks_changed.notify_waiters();
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

/// Claims the study's first checkpoint (round 0): the initial global model and server state.
pub fn initial_checkpoint(study: &Study) -> anyhow::Result<Checkpoint> {
    let spec = &study.spec;
    let global = fl_engine::Net::new(
        &spec.model,
        fl_engine::seeds::stream_seed(spec.seed, u64::MAX, 0),
    )?
    .parameters()?
    .select(&spec.strategy.shared());
    let server = spec
        .strategy
        .server(spec.data_holders.len(), Box::new(WeightedMean))?;
    Ok(Checkpoint {
        study_id: study.id,
        round: 0,
        global: save_safetensors(&global, &study.id.to_string(), 0, None)?.0,
        server_state: server.save_state()?,
        accountant: serde_json::to_value(StudyAccountant::new(&spec.dp))?,
    })
}
