//! The study's privacy: differential privacy at client or record level (or none), its
//! distributed form on the holders under secure aggregation, the secure aggregation itself,
//! and the aggregation rule, checked against the method and the privacy plan.

use fl_engine::{
    dp::{default_orders, sigma_for_target_epsilon, RdpConversion},
    strategy::{dp_steps_per_round, Support},
    train::{Budget, LossKind, OptimizerConfig, RecordDp, TrainConfig},
    StrategyConfig,
};
use secagg::ddg::{
    accounting::epsilon as ddg_epsilon,
    mechanism::{DdgParams, DdgPlan},
};

use super::{positive, DpRequest, StudyRequest};
use crate::domain::{
    study::{Aggregation, DpLevel, DpPlan, SecureAggregation},
    Errors, OrgId,
};

/// The study's secure aggregation, checked against the method, the aggregation rule and the
/// privacy plan (docs/secure-aggregation.md, "Which studies").
pub(super) fn parse_secure_aggregation(
    e: &mut Errors,
    req: &StudyRequest,
    holders: usize,
    strategy: &Option<StrategyConfig>,
    aggregation: &Aggregation,
) -> Option<SecureAggregation> {
    let r = req.secure_aggregation?;
    let field = "secure_aggregation";
    if let Some(s) = strategy {
        if let Support::No(why) = s.secure_aggregation() {
            e.push(
                "strategy.name",
                "strategy_incompatible_with_secure_aggregation",
                format!(
                    "{} reads more of each holder than the mean of the updates ({why}), and \
                     secure aggregation reveals only their sum",
                    s.name()
                ),
            );
        }
    }
    if *aggregation != Aggregation::Mean {
        e.push(
            "aggregation",
            "aggregation_incompatible_with_secure_aggregation",
            "a robust rule reads every holder's update; secure aggregation reveals only their sum",
        );
    }
    if req.dp.level == "record" {
        e.push(
            "dp.level",
            "dp_level_incompatible_with_secure_aggregation",
            "secure aggregation runs with `dp.level` `client` (each holder clips its update and \
             adds its share of the noise before masking) or `none`; record-level DP-SGD is not \
             combined with it",
        );
    }
    let n = u32::try_from(holders).unwrap_or(u32::MAX);
    if n < 3 {
        e.push(
            field,
            "secure_aggregation_needs_three_holders",
            format!("secure aggregation needs at least 3 data holders, the study names {n}"),
        );
        return None;
    }
    let k = r.neighbours.unwrap_or(n - 1);
    let mut ok = true;
    if !(2..n).contains(&k) || (k != n - 1 && k % 2 == 1) {
        e.push(
            format!("{field}.neighbours"),
            "out_of_range",
            format!(
                "must be {} (every other holder) or an even number in 2..{}",
                n - 1,
                n - 1
            ),
        );
        ok = false;
    }
    // more than half the neighbours: a relay that calls half of them dropped and the other
    // half alive cannot collect both secrets of one holder
    let t = r
        .threshold
        .unwrap_or_else(|| (2 * k).div_ceil(3).max(k / 2 + 1));
    if ok && !(2 * t > k && t <= k && t >= 2) {
        e.push(
            format!("{field}.threshold"),
            "out_of_range",
            format!("must lie in {}..={k}", (k / 2 + 1).max(2)),
        );
        ok = false;
    }
    ok.then_some(SecureAggregation {
        threshold: t,
        neighbours: k,
    })
}

/// A study without formal DP takes no DP parameter: each one given is refused by name.
fn parse_no_formal_dp(e: &mut Errors, d: &DpRequest, delta: f64) -> Option<DpPlan> {
    let given = [
        ("dp.clip_norm", !d.clip_norm.is_nan()),
        ("dp.noise_multiplier", d.noise_multiplier.is_some()),
        ("dp.target_epsilon", d.target_epsilon.is_some()),
        ("dp.sampling_rate", d.sampling_rate.is_some()),
        ("dp.noise_seed", d.noise_seed.is_some()),
        ("dp.min_survivors", d.min_survivors.is_some()),
        ("dp.modulus_bits", d.modulus_bits.is_some()),
    ];
    for (field, _) in given.iter().filter(|(_, g)| *g) {
        e.push(
            *field,
            "not_applicable",
            "a study without formal DP clips nothing and adds no noise",
        );
    }
    Some(DpPlan::no_formal_dp(delta))
}

/// A robust rule must cover everything the method's server learns from a holder, and run on
/// every number of updates a round may aggregate (`min_sites` to every holder). FLTrust's root
/// holder must be one of the study's holders, and its rule is refused under client-level DP
/// (`dp_level` as requested).
pub(super) fn check_aggregation(
    e: &mut Errors,
    aggregation: &Aggregation,
    strategy: &Option<StrategyConfig>,
    min_sites: usize,
    data_holders: &[OrgId],
    dp_level: &str,
) {
    if *aggregation == Aggregation::Mean {
        return;
    }
    if let Some(s) = strategy {
        if let Support::No(why) = s.spec().client_dp() {
            e.push(
                "aggregation",
                "strategy_bypasses_robust_aggregation",
                format!(
                    "{} combines what its holders send outside the aggregator ({why}): a robust \
                     rule would not cover it",
                    s.name()
                ),
            );
        }
    }
    if let Some(root) = aggregation.root_holder() {
        if !data_holders.iter().any(|h| h.as_str() == root) {
            e.push(
                "aggregation.root_holder",
                "root_holder_not_a_study_holder",
                format!(
                    "the root holder `{root}` is not one of the study's data holders: FLTrust's \
                     root update comes from a holder that trains under the permit like the others"
                ),
            );
        }
        if dp_level == "client" {
            e.push(
                "dp.level",
                "fltrust_refuses_client_dp",
                "FLTrust weighs and rescales every update by its root holder's update, which \
                 client-level DP does not privatise: the model would carry what that one \
                 unprivatised update gives away. Use record-level DP (the root holder's update \
                 is then privatised like every other) or another rule",
            );
        }
    }
    let rule = match aggregation.robust_rule(None) {
        Ok(Some(rule)) => rule,
        Ok(None) => return,
        Err(err) => {
            e.push("aggregation", "invalid_aggregation", err.to_string());
            return;
        }
    };
    let holders = data_holders.len();
    let lowest = min_sites.max(1);
    for n in lowest..=holders.max(lowest) {
        if let Err(why) = rule.sensitivity(aggregation.combined(n), 1.0) {
            let detail = match aggregation.root_holder() {
                Some(_) => format!(
                    "fltrust combines the updates of the holders other than its root holder, \
                     and a round of {n} holders leaves {}; a round aggregates between \
                     min_sites = {min_sites} and {holders} holders: {why}",
                    aggregation.combined(n)
                ),
                None => format!(
                    "{} cannot combine {n} updates, and a round aggregates between min_sites = \
                     {min_sites} and {holders} of them: {why}",
                    aggregation.name()
                ),
            };
            e.push("aggregation", "aggregation_needs_more_sites", detail);
            return;
        }
    }
}

pub(super) fn parse_dp(
    e: &mut Errors,
    d: &DpRequest,
    strategy: &Option<StrategyConfig>,
    budget: Option<Budget>,
    rounds: u64,
    delta: f64,
) -> Option<DpPlan> {
    let level = match d.level.as_str() {
        "client" => DpLevel::Client,
        "record" => DpLevel::Record,
        "none" => return parse_no_formal_dp(e, d, delta),
        other => {
            e.push(
                "dp.level",
                "unknown_dp_level",
                format!("`{other}` is not one of `client`, `record`, `none`"),
            );
            return None;
        }
    };
    if let Some(s) = strategy {
        let spec = s.spec();
        match (level, spec.record_dp(), spec.client_dp()) {
            (DpLevel::Record, Support::No(why), _) => e.push(
                "dp.level",
                "strategy_refuses_record_dp",
                format!(
                    "{} does not train under record-level DP-SGD: {why}; see docs/fl-methods.md",
                    s.name()
                ),
            ),
            (DpLevel::Client, _, Support::No(why)) => e.push(
                "dp.level",
                "strategy_refuses_client_dp",
                format!(
                    "{} is not covered by client-level DP: {why}; see docs/fl-methods.md",
                    s.name()
                ),
            ),
            _ => {}
        }
    }
    let clip_ok = if d.clip_norm.is_nan() {
        e.push(
            "dp.clip_norm",
            "clip_norm_required",
            "client- and record-level DP clip to `clip_norm`: give it",
        );
        false
    } else {
        positive(e, "dp.clip_norm", d.clip_norm)
    };
    let (sampling_rate, steps_per_round) = match level {
        DpLevel::NoFormalDp => return parse_no_formal_dp(e, d, delta),
        DpLevel::Client => {
            if d.sampling_rate.is_some() {
                e.push(
                    "dp.sampling_rate",
                    "not_applicable",
                    "client-level DP selects every permitted holder each round",
                );
            }
            (1.0, 1)
        }
        DpLevel::Record => {
            let q = d.sampling_rate.unwrap_or(f64::NAN);
            if !(q > 0.0 && q <= 1.0) {
                e.push(
                    "dp.sampling_rate",
                    "invalid_sampling_rate",
                    "record-level DP needs a Poisson sampling rate in (0, 1]",
                );
            }
            let steps = match budget {
                Some(Budget::Steps(s)) => s,
                _ => {
                    e.push(
                        "local_steps",
                        "record_dp_needs_steps",
                        "record-level DP is accounted per step: give `local_steps`",
                    );
                    0
                }
            };
            // the engine's own count: Ditto's personal model trains privately too
            let probe = TrainConfig {
                optimizer: OptimizerConfig::sgd(1.0),
                budget: Budget::Steps(steps),
                batch_size: 1,
                loss: LossKind::bce(),
                record_dp: Some(RecordDp {
                    clip_norm: 1.0,
                    noise_multiplier: 1.0,
                    sampling_rate: 1.0,
                }),
            };
            let steps = strategy
                .as_ref()
                .and_then(|s| dp_steps_per_round(s, &probe))
                .unwrap_or(0);
            (q, steps)
        }
    };
    let sigma = match (d.noise_multiplier, d.target_epsilon) {
        (Some(s), None) => positive(e, "dp.noise_multiplier", s).then_some(s),
        (None, Some(t)) => {
            if !positive(e, "dp.target_epsilon", t) || steps_per_round == 0 || rounds == 0 {
                None
            } else {
                match sigma_for_target_epsilon(
                    t,
                    sampling_rate,
                    steps_per_round * rounds,
                    delta,
                    &default_orders(),
                    RdpConversion::Improved,
                ) {
                    Ok(s) => Some(s),
                    Err(err) => {
                        e.push(
                            "dp.target_epsilon",
                            "target_epsilon_unreachable",
                            err.to_string(),
                        );
                        None
                    }
                }
            }
        }
        _ => {
            e.push(
                "dp.noise_multiplier",
                "noise_required",
                "give exactly one of `noise_multiplier` and `target_epsilon`",
            );
            None
        }
    };
    if !clip_ok || steps_per_round == 0 || !(sampling_rate > 0.0 && sampling_rate <= 1.0) {
        return None;
    }
    Some(DpPlan {
        level,
        clip_norm: d.clip_norm,
        noise_multiplier: sigma?,
        target_epsilon: d.target_epsilon,
        sampling_rate,
        steps_per_round,
        delta,
        distributed: None,
    })
}

/// Ring of the distributed noise's secure sum when the study does not choose one.
pub const DEFAULT_DISTRIBUTED_MODULUS_BITS: u32 = 32;
/// Bound on the probability that any entry of a round's secure sum wraps around the ring; the
/// head-room in standard deviations follows from it and the model's size.
const DISTRIBUTED_WRAP_PROBABILITY: f64 = 1e-9;

/// What the study asks of distributed DP, and what it knows when it asks.
pub(super) struct DistributedRequest<'a> {
    pub(super) dp: &'a DpRequest,
    pub(super) secure_aggregation: SecureAggregation,
    pub(super) holders: u32,
    pub(super) min_sites: usize,
    /// Entries of the update the holders sum.
    pub(super) dim: usize,
    pub(super) rounds: u64,
    pub(super) seed: u64,
}

/// Client-level DP under secure aggregation as the distributed discrete Gaussian: `central`'s
/// clip and noise, split among at least `min_survivors` holders, in the ring the study
/// chose. With a target epsilon, the noise is found again by the distributed mechanism's own
/// accounting (rounding makes it slightly dearer than the Gaussian's).
pub(super) fn plan_distributed(
    e: &mut Errors,
    r: &DistributedRequest,
    central: &DpPlan,
) -> Option<(DdgPlan, f64)> {
    let d = r.dp;
    if d.noise_seed.is_some() {
        e.push(
            "dp.noise_seed",
            "not_applicable",
            "under secure aggregation the holders draw the noise; the gateway adds none",
        );
    }
    let t = r.secure_aggregation.threshold;
    let floor = u32::try_from(r.min_sites).unwrap_or(u32::MAX).max(t);
    let min_survivors = d.min_survivors.unwrap_or(floor);
    let mut ok = true;
    if min_survivors > r.holders {
        e.push(
            "dp.min_survivors",
            "min_survivors_above_holders",
            format!(
                "noise planned for {min_survivors} surviving holders: the study names only {}, so \
                 no round could carry it",
                r.holders
            ),
        );
        ok = false;
    } else if min_survivors < t {
        e.push(
            "dp.min_survivors",
            "min_survivors_below_threshold",
            format!(
                "a round never sums fewer than the secure-aggregation threshold of {t} holders; \
                 planning the noise for {min_survivors} would add noise the accounting never \
                 counts"
            ),
        );
        ok = false;
    }
    let bits = d.modulus_bits.unwrap_or(DEFAULT_DISTRIBUTED_MODULUS_BITS);
    if !(2..=63).contains(&bits) {
        e.push(
            "dp.modulus_bits",
            "out_of_range",
            format!("must lie in [2, 63], got {bits}"),
        );
        ok = false;
    }
    if !ok || r.dim == 0 {
        return None;
    }
    let padded = r.dim.next_power_of_two() as f64;
    let k_stddevs = (2.0 * (2.0 * padded / DISTRIBUTED_WRAP_PROBABILITY).ln()).sqrt();
    // the sum of the holders' rounding errors alone must fit k standard deviations into half
    // the ring (the modular clipping bound of docs/secure-aggregation.md)
    let needed = k_stddevs * f64::from(r.holders).sqrt();
    if 2f64.powi(bits as i32) <= needed {
        let least = needed.log2().floor() as u32 + 1;
        e.push(
            "dp.modulus_bits",
            "modulus_too_small",
            format!(
                "a ring of 2^{bits} cannot hold the sum of {} holders' rounded updates within \
                 {k_stddevs:.1} standard deviations: the sum could wrap around; at least {least} \
                 bits are needed",
                r.holders
            ),
        );
        return None;
    }
    let rotation_seed: [u8; 32] = {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"ehds-gateway/distributed-dp/rotation");
        h.update(r.seed.to_le_bytes());
        h.finalize().into()
    };
    let plan = |multiplier: f64| {
        DdgPlan::new(DdgParams {
            dim: r.dim,
            clip: central.clip_norm,
            central_stddev: multiplier * central.clip_norm,
            min_survivors,
            max_clients: r.holders,
            modulus_bits: bits,
            k_stddevs,
            beta: (-0.5f64).exp(),
            rotation_seed,
        })
    };
    let infeasible = |e: &mut Errors, err: secagg::Error| {
        e.push(
            "dp",
            "distributed_dp_infeasible",
            format!("the holders' noise cannot be planned: {err}"),
        );
    };
    let multiplier = match d.target_epsilon {
        None => central.noise_multiplier,
        Some(target) => {
            let rounds = u32::try_from(r.rounds).unwrap_or(u32::MAX);
            let epsilon = |z: f64| -> Result<f64, secagg::Error> {
                Ok(ddg_epsilon(&plan(z)?, rounds, central.delta)?.epsilon)
            };
            // epsilon falls as the noise grows: bracket the target, then bisect
            let mut hi = central.noise_multiplier;
            let mut found = false;
            for _ in 0..40 {
                match epsilon(hi) {
                    Ok(eps) if eps <= target => {
                        found = true;
                        break;
                    }
                    Ok(_) => hi *= 2.0,
                    Err(err) => {
                        infeasible(e, err);
                        return None;
                    }
                }
            }
            if !found {
                e.push(
                    "dp.target_epsilon",
                    "target_epsilon_unreachable",
                    format!(
                        "no noise the ring of 2^{bits} can carry brings {} rounds of distributed \
                         DP under epsilon {target}",
                        r.rounds
                    ),
                );
                return None;
            }
            let mut lo = hi / 2.0;
            while (hi - lo) / hi > 1e-9 {
                let mid = (lo + hi) / 2.0;
                match epsilon(mid) {
                    Ok(eps) if eps <= target => hi = mid,
                    _ => lo = mid,
                }
            }
            hi
        }
    };
    match plan(multiplier) {
        Ok(p) => Some((p, multiplier)),
        Err(err) => {
            infeasible(e, err);
            None
        }
    }
}
