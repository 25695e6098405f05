//! Aggregating a round: the updates combined as the study's [`Combination`] says (clipping and
//! noise, robust rule or secure sum), the budget spent, the model checkpointed, all in one
//! transaction.

use super::{accountant, discard, fail_round, system_event, Federation, Step};
use crate::federation::engine::{self, Combination};
use crate::federation::Signal;
use crate::store::Tx;
use anyhow::Context;
use ehds_core::domain::{
    audit::{AuditAction, Outcome},
    audit_details::{RoundAggregated, RoundUnpaid},
    study::{
        Checkpoint, DpLevel, DpPlan, Round, RoundPhase, RoundSummary, SiteContribution, Study,
        Task, TaskKind, TaskStatus,
    },
    time::Timestamp,
    OrgId, Permit,
};
use ehds_core::{secure_aggregation as sa, wire::split_extras};
use fl_engine::{
    dp::NoiseRng, load_safetensors, save_safetensors, strategy::AggregatorReport,
    train::TrainReport, FitRes, ParameterSet,
};

#[tracing::instrument(name = "Aggregating a round", skip_all, fields(study = %study.id, round = round.round, attempt = round.attempt))]
pub(super) async fn aggregate(
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
    if let Some(root) = spec.root_holder() {
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
        if spec.root_holder() == Some(&t.data_holder) {
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
    let combination = Combination::of(&spec)?;
    if spec.aggregation.root_holder().is_some() {
        anyhow::ensure!(
            root_update.is_some(),
            "FLTrust aggregates only with its root holder's update"
        );
    }
    anyhow::ensure!(
        (combination == Combination::SecureSum) == secure.is_some(),
        "a round under secure aggregation aggregates its unmasked sum, and only such a round"
    );
    // the study's sealed noise key, read only where the gateway adds noise
    let noise_key = match combination {
        Combination::CentralClientDp { .. } => Some(tx.study_noise_key(study.id).await?),
        _ => None,
    };
    let rule = spec.aggregation.robust_rule(root_update)?;
    let aggregator = combination.aggregator(rule, &spec.dp, round.participants.len(), || {
        let sealed = noise_key.context("no noise key was read for a study with central noise")?;
        let key = fed.vault.open(study.id.to_string().as_bytes(), &sealed)?;
        round_noise(&key, round.round)
    })?;
    let mut server = engine::server_at(&spec, round.participants.len(), aggregator, &checkpoint)?;
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
    fed.signal(Signal::Tasks);
    Ok(Step::Progressed)
}

/// The unmasked sum of a round as one result the method's server averages: the global model
/// plus the mean of the contributors' updates (uniform weights: the relay learns no holder's
/// sample count inside the sum). Under distributed DP the sum is of clipped, noised updates,
/// and it is divided by the number of holders invited, fixed before the round as DP-FedAvg's
/// divisor is; without DP by the number of contributors.
pub(super) fn secure_mean(
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
pub(super) fn round_noise(key: &[u8], round: u64) -> anyhow::Result<NoiseRng> {
    let key: [u8; 32] = key
        .try_into()
        .map_err(|_| anyhow::anyhow!("the study's noise key is not 32 bytes"))?;
    Ok(NoiseRng::from_secret(
        &key,
        format!("round/{round}").as_bytes(),
    ))
}
