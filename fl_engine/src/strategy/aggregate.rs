//! Aggregation building blocks shared by the strategies: validation of site results, the
//! swappable [`Aggregator`] that turns per-site updates into one global update, and
//! [`average`], the one way a server averages its site vectors through it.
//!
//! Aggregators work on flat `f32` slices in canonical name order (see
//! [`ParameterSet::to_flat`]), which is also the interface of the differential-privacy
//! aggregator (clip each update, sum, add Gaussian noise, normalise): plugging
//! [`DpFedAvgAggregator`](super::DpFedAvgAggregator) in through
//! [`crate::sim::Simulation::with_aggregator`] or [`StrategyConfig::server`] makes FedAvg
//! DP-FedAvg. The Byzantine-robust rules of [`super::robust`] (Krum, Multi-Krum, coordinate
//! median, trimmed mean, Bulyan, FLTrust) plug in the same way; [`Aggregator::begin_round`]
//! gives rules that need it (FLTrust) the round's global model.
//!
//! [`StrategyConfig::server`]: super::StrategyConfig::server
use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{DpRobustReport, FitRes, RobustReport};
use crate::dp::DpAggregationReport;
use crate::error::{EngineError, Result};
use crate::params::ParameterSet;

/// What an aggregator does beyond averaging, for the servers whose rule depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregatorKind {
    /// A plain (weighted or uniform) mean.
    Mean,
    /// A Byzantine-robust rule (Krum, median, trimmed mean, Bulyan, FLTrust).
    Robust,
    /// Client-level DP: clipped, noised mean (DP-FedAvg).
    ClientDp,
    /// A robust rule under client-level DP.
    RobustClientDp,
}

impl AggregatorKind {
    /// Whether the aggregate is privatised (clip and noise every site's update).
    pub fn client_dp(self) -> bool {
        matches!(self, Self::ClientDp | Self::RobustClientDp)
    }
}

/// What an aggregator reported about its latest round. It describes individual sites'
/// updates (norms, selections): keep it inside the aggregator's trust boundary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AggregatorReport {
    ClientDp(DpAggregationReport),
    Robust(RobustReport),
    RobustClientDp(DpRobustReport),
}

/// Combines per-site updates `w_k - w` into one update.
pub trait Aggregator: Send {
    fn name(&self) -> &'static str;

    fn kind(&self) -> AggregatorKind;

    /// Called with the current global (shared) parameters before the round's updates are
    /// aggregated, by `aggregate::average`, through which every server aggregates. Rules that need the
    /// global model (FLTrust trains its root update from it) use it; the default ignores it.
    fn begin_round(&mut self, _global: &ParameterSet) -> Result<()> {
        Ok(())
    }

    /// `updates[k]` is site k's flat update, `weights[k]` its sample count.
    fn aggregate(&mut self, updates: &[&[f32]], weights: &[f64]) -> Result<Vec<f32>>;

    /// The report of the latest [`aggregate`](Self::aggregate), for rules that keep one.
    fn report(&self) -> Option<AggregatorReport> {
        None
    }
}

/// What one round's aggregation reported beside the new model (Flower's `metrics`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AggregationMetrics {
    /// The aggregator's report of this round, when it keeps one.
    pub aggregator: Option<AggregatorReport>,
}

/// A round's result: the next global parameters and what the aggregation reported.
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregated {
    pub params: ParameterSet,
    pub metrics: AggregationMetrics,
}

impl Aggregated {
    /// `params` with the metrics of the aggregation in `averaged`.
    pub(crate) fn new(params: ParameterSet, averaged: &Averaged) -> Self {
        Self {
            params,
            metrics: AggregationMetrics {
                aggregator: averaged.report.clone(),
            },
        }
    }
}

/// The output of [`average`]: one flat vector shaped like the global parameters.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Averaged {
    pub update: Vec<f32>,
    pub report: Option<AggregatorReport>,
}

/// FedAvg's example-weighted mean `sum_k n_k u_k / sum_k n_k` (f64 accumulation).
#[derive(Clone, Copy, Debug, Default)]
pub struct WeightedMean;

impl Aggregator for WeightedMean {
    fn name(&self) -> &'static str {
        "weighted-mean"
    }

    fn kind(&self) -> AggregatorKind {
        AggregatorKind::Mean
    }

    fn aggregate(&mut self, updates: &[&[f32]], weights: &[f64]) -> Result<Vec<f32>> {
        let first = updates.first().ok_or(EngineError::NoUpdates)?;
        if updates.len() != weights.len() || updates.iter().any(|u| u.len() != first.len()) {
            return Err(EngineError::InvalidConfig(
                "updates and weights do not line up".into(),
            ));
        }
        let total: f64 = weights.iter().sum();
        if weights.iter().any(|w| !w.is_finite() || *w < 0.0) || total <= 0.0 {
            return Err(EngineError::InvalidConfig(
                "aggregation weights must be >= 0 with a positive sum".into(),
            ));
        }
        let mut acc = vec![0f64; first.len()];
        for (u, w) in updates.iter().zip(weights) {
            for (a, v) in acc.iter_mut().zip(u.iter()) {
                *a += w * *v as f64;
            }
        }
        Ok(acc.into_iter().map(|a| (a / total) as f32).collect())
    }
}

/// Reject anything that must not reach an aggregator: no results, a site reporting twice
/// or with zero samples, parameters that differ in names or shapes from `global`, NaN/Inf,
/// and extras that do not match `extras_template` (when the strategy expects extras).
pub fn validate_results(
    global: &ParameterSet,
    results: &[FitRes],
    extras_template: Option<&ParameterSet>,
) -> Result<()> {
    if results.is_empty() {
        return Err(EngineError::NoUpdates);
    }
    let mut seen = BTreeSet::new();
    for r in results {
        if !seen.insert(r.site.as_str()) {
            return Err(EngineError::InvalidConfig(format!(
                "site `{}` reported twice in one round",
                r.site
            )));
        }
        if r.num_examples == 0 {
            return Err(EngineError::ZeroSamples(r.site.clone()));
        }
        let check = |expected: &ParameterSet, got: &ParameterSet| -> Result<()> {
            expected.check_compatible(got)?;
            got.ensure_finite()
        };
        check(global, &r.params).map_err(|e| e.for_site(&r.site))?;
        match extras_template {
            Some(t) => check(t, &r.extras).map_err(|e| e.for_site(&r.site))?,
            None if !r.extras.is_empty() => {
                return Err(
                    EngineError::UnexpectedParameter(format!("extras from `{}`", r.site))
                        .for_site(&r.site),
                )
            }
            None => {}
        }
    }
    Ok(())
}

/// Averages per-site flat vectors (in [`ParameterSet::to_flat`] order of `global`) through
/// `aggregator`: gives it the round's global model ([`Aggregator::begin_round`]), aggregates
/// with `weights`, checks the result's length and collects the aggregator's report. Every
/// server averages its site vectors here.
pub(crate) fn average(
    aggregator: &mut dyn Aggregator,
    global: &ParameterSet,
    updates: &[Vec<f32>],
    weights: &[f64],
) -> Result<Averaged> {
    aggregator.begin_round(global)?;
    let views: Vec<&[f32]> = updates.iter().map(Vec::as_slice).collect();
    let update = aggregator.aggregate(&views, weights)?;
    let expected = global.to_flat().len();
    if update.len() != expected {
        return Err(EngineError::LengthMismatch {
            expected,
            found: update.len(),
        });
    }
    Ok(Averaged {
        update,
        report: aggregator.report(),
    })
}

/// Each site's model change `w_k - global`, flat.
pub(crate) fn model_deltas(global: &ParameterSet, results: &[FitRes]) -> Vec<Vec<f32>> {
    let base = global.to_flat();
    results
        .iter()
        .map(|r| {
            r.params
                .to_flat()
                .iter()
                .zip(&base)
                .map(|(w, g)| w - g)
                .collect()
        })
        .collect()
}

/// `global + aggregator({w_k - global}, {n_k})`, i.e. the aggregated model.
pub(crate) fn aggregate_models(
    aggregator: &mut dyn Aggregator,
    global: &ParameterSet,
    results: &[FitRes],
) -> Result<Aggregated> {
    let weights: Vec<f64> = results.iter().map(|r| r.num_examples as f64).collect();
    aggregate_models_weighted(aggregator, global, results, &weights)
}

/// [`aggregate_models`] with caller-chosen weights (SCAFFOLD: uniform).
pub(crate) fn aggregate_models_weighted(
    aggregator: &mut dyn Aggregator,
    global: &ParameterSet,
    results: &[FitRes],
    weights: &[f64],
) -> Result<Aggregated> {
    let averaged = average(aggregator, global, &model_deltas(global, results), weights)?;
    let next = step(global, &averaged.update, |g, u| g + u)?;
    Ok(Aggregated::new(next, &averaged))
}

/// `global` moved coordinate by coordinate by `update` through `rule(g, u)`; checked finite.
pub(crate) fn step(
    global: &ParameterSet,
    update: &[f32],
    rule: impl Fn(f32, f32) -> f32,
) -> Result<ParameterSet> {
    let next: Vec<f32> = global
        .to_flat()
        .iter()
        .zip(update)
        .map(|(g, u)| rule(*g, *u))
        .collect();
    let next = ParameterSet::from_flat(global, &next)?;
    next.ensure_finite()?;
    Ok(next)
}

/// Unweighted mean of flat vectors (SCAFFOLD averages uniformly over participants).
pub(crate) fn uniform_mean(sets: &[&ParameterSet]) -> Result<ParameterSet> {
    ParameterSet::weighted_average(sets, &vec![1.0; sets.len()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::TrainReport;

    fn res(site: &str, n: usize, v: Vec<f32>) -> FitRes {
        let mut params = ParameterSet::new();
        params.insert("w", vec![v.len()], v).unwrap();
        FitRes {
            site: site.into(),
            num_examples: n,
            params,
            extras: ParameterSet::new(),
            report: TrainReport::default(),
        }
    }

    #[test]
    fn weighted_mean_of_updates_by_hand() {
        let mut agg = WeightedMean;
        let out = agg
            .aggregate(&[&[1.0, 0.0], &[4.0, 2.0]], &[2.0, 1.0])
            .unwrap();
        assert_eq!(out, vec![2.0, 2.0 / 3.0]);
        assert!(agg.aggregate(&[], &[]).is_err());
        assert!(agg.aggregate(&[&[1.0]], &[0.0]).is_err());
    }

    #[test]
    fn validation_rejects_each_kind_of_bad_update() {
        let global = res("g", 1, vec![0.0, 0.0]).params;
        assert!(matches!(
            validate_results(&global, &[], None),
            Err(EngineError::NoUpdates)
        ));
        let zero = res("a", 0, vec![1.0, 1.0]);
        assert!(matches!(
            validate_results(&global, &[zero], None),
            Err(EngineError::ZeroSamples(_))
        ));
        let nan = res("a", 3, vec![f32::NAN, 1.0]);
        let err = validate_results(&global, &[nan], None).unwrap_err();
        assert!(matches!(err, EngineError::InvalidUpdate { ref site, .. } if site == "a"));
        let shape = res("a", 3, vec![1.0]);
        assert!(validate_results(&global, &[shape], None).is_err());
        let twice = [res("a", 1, vec![1.0, 1.0]), res("a", 1, vec![1.0, 1.0])];
        assert!(validate_results(&global, &twice, None).is_err());
        let mut empty = res("b", 3, vec![]);
        empty.params = ParameterSet::new();
        assert!(matches!(
            validate_results(&global, &[empty], None),
            Err(EngineError::InvalidUpdate { .. })
        ));
        assert!(validate_results(&global, &[res("a", 1, vec![1.0, 1.0])], None).is_ok());
    }
}
