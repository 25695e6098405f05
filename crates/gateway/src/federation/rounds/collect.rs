//! Collecting a round: the holders' results until all are in or the deadline passes, the
//! secure-aggregation stages under secure aggregation, and a round that fails its quorum.

use super::{aggregate, system_event, Federation, Step};
use crate::federation::Signal;
use crate::{app::secagg_relay as relay, store::Tx};
use anyhow::Context;
use ehds_core::domain::{
    audit::{AuditAction, Outcome},
    audit_details::{RoundFailed, SecaggStageClosed},
    study::{Round, RoundPhase, Study, TaskStatus},
    time::Timestamp,
    Permit,
};
use ehds_core::secure_aggregation::{self as sa, Relayed};

#[tracing::instrument(name = "Collecting a round", skip_all, fields(study = %study.id, round = round.round, attempt = round.attempt))]
pub(super) async fn collect(
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
            fed.signal(Signal::Secagg);
        }
        return Ok(step);
    }
    // counted, not read: every upload wakes the loop, and a round may have thousands of tasks
    let (tasks, done) = tx.count_fit_results(round.id).await?;
    let all_in = done == tasks;
    if !all_in && now < round.deadline {
        return Ok(Step::Waiting);
    }
    if (done as usize) < study.spec.min_sites {
        let reason = format!(
            "{done} of {tasks} results by the deadline; {} needed",
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
#[tracing::instrument(name = "Failing a round", skip_all, fields(study = %study.id, round = round.round, attempt = round.attempt))]
pub(super) async fn fail_round(
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
#[tracing::instrument(name = "Relaying a secure-aggregation stage", skip_all, fields(study = %study.id, round = round.round, attempt = round.attempt))]
pub(super) async fn collect_secure(
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
pub(super) fn too_few_in_sum(study: &Study, round: &Round, survivors: usize) -> Option<String> {
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
