//! FedNova (Wang, Liu, Liang, Joshi & Poor 2020, "Tackling the Objective Inconsistency
//! Problem in Heterogeneous Federated Optimization", arXiv:2007.07481).
//!
//! Plain FedAvg weights a site's model change by how much local work it did: a site that
//! takes ten times more local steps pulls the global model ten times further, so FedAvg
//! converges to the optimum of a *different* objective. FedNova normalises every change by
//! the site's own amount of work before averaging.
//!
//! Client k trains from the global `w` for its local budget (`tau_k` optimiser steps, the
//! `report.steps` of the round; under [`Budget::Epochs`](crate::train::Budget) that differs
//! between sites of different sizes) and computes the norm of its aggregation vector,
//! `a_k = ||a_k||_1` in the paper's notation (Sec. 5, Eq. 9 and App. B):
//! * plain SGD: `a_k = tau_k`;
//! * SGD with (heavy-ball) momentum `rho`: the update after `tau` steps is
//!   `sum_t g_t (1 - rho^(tau - t)) / (1 - rho)`, so
//!   `a_k = sum_{j=1..tau_k} (1 - rho^j) / (1 - rho) = [tau_k - rho (1 - rho^tau_k) / (1 - rho)] / (1 - rho)`.
//!
//! It sends `w_k` and `a_k` (in `extras` under [`A_KEY`], a name no model parameter can have).
//! Server, with `p_k = n_k / sum_{j in S} n_j` over the sites `S` that reported:
//! `d_k = (w - w_k) / a_k` (the normalised average gradient times the local lr),
//! `tau_eff = sum_k p_k a_k`, `w <- w - server_lr * tau_eff * sum_k p_k d_k`.
//! `server_lr = 1` is the paper's rule (its Algorithm: `x <- x - tau_eff eta sum p_k d_k`
//! with `d_k` in gradient units; in parameter units the local `eta` cancels).
//! When every `a_k` is equal this is exactly FedAvg.
//!
//! Choices the paper leaves open:
//! * The averaging `sum_k p_k d_k` goes through the study's [`Aggregator`] in parameter
//!   units: it receives `-tau_eff d_k = (w_k - w) tau_eff / a_k` with weights `n_k`, and the
//!   server adds `server_lr` times its output. For a mean (and for the scale-equivariant
//!   robust rules) this is the rule above exactly. Under client-level DP it is what makes the
//!   mechanism meaningful: the clip norm and the noise `sigma C / m` are in the units of a
//!   model change, as in DP-FedAvg. Handing the aggregator the normalised `-d_k` instead
//!   (tiny: a local run of 60 steps shrinks an update 60-fold) leaves them unclipped and then
//!   multiplies the noise by `tau_eff`, which made client-level DP FedNova diverge.
//! * Under client-level DP, `tau_eff` weights the sites uniformly, as DP-FedAvg averages
//!   them: the sample counts are the sites' own unprivatised figures, and the step length
//!   would otherwise carry them into the released model. Otherwise `p_k = n_k / sum n_j`.
//!   The `a_k` are functions of public settings (steps, momentum), not of the records.
//! * Momentum buffers: `a_k` above assumes the buffer starts at zero every round (as in the
//!   paper's analysis), so the client starts every round with a fresh optimiser. Plain SGD has
//!   no other state, so nothing is lost.
//! * SGD weight decay is part of the local objective (`L_k + wd/2 ||w||^2`) and does not
//!   change `a_k`.
//! * Adaptive local optimisers (Adam, AdamW) are refused: their step is not a fixed linear
//!   combination of the gradients, so there is no `a_k` that normalises it (the paper covers
//!   SGD, momentum and proximal updates only).
//! * Record-level DP: supported; DP-SGD steps replace the plain ones and `a_k` depends only on
//!   the step count and momentum, so one local step costs one sampled-Gaussian step.
//! * A site reporting `a_k < 1` (impossible for one or more steps) or zero steps is refused.
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::aggregate::{average, step, validate_results};
use super::fedavg::local_fit;
use super::{
    Aggregated, Aggregator, ClientStrategy, FitIns, FitRes, MethodSpec, ServerStrategy, Site,
    TrainRefusal, TrainSetting,
};
use crate::error::{EngineError, Result};
use crate::params::{ParameterSet, Selector};
use crate::train::{Optimizer, OptimizerConfig, TrainConfig};

/// Name of the `a_k` entry in a site's extras (model parameters never contain `/`).
pub const A_KEY: &str = "fednova/a_k";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FedNovaConfig {
    /// Multiplies the normalised server step (1.0 = the paper's rule).
    pub server_lr: f32,
}

impl Default for FedNovaConfig {
    fn default() -> Self {
        Self { server_lr: 1.0 }
    }
}

/// `a_k` of `steps` local steps with `optimizer` (see the module documentation).
pub fn normaliser(optimizer: &OptimizerConfig, steps: usize) -> Result<f64> {
    match optimizer {
        OptimizerConfig::Sgd { momentum, .. } => {
            let rho = *momentum;
            if !(0.0..1.0).contains(&rho) {
                return Err(EngineError::InvalidConfig(format!(
                    "SGD momentum must be in [0, 1), got {rho}"
                )));
            }
            let tau = steps as f64;
            if rho == 0.0 {
                Ok(tau)
            } else {
                let closed = (tau - rho * (1.0 - rho.powf(tau)) / (1.0 - rho)) / (1.0 - rho);
                Ok(closed)
            }
        }
        OptimizerConfig::Adam { .. } | OptimizerConfig::AdamW { .. } => {
            Err(EngineError::InvalidConfig(
                "FedNova needs local SGD (with or without momentum): an adaptive optimiser's \
                 (Adam/AdamW) step is not a fixed combination of gradients, so it has no \
                 normalising factor a_k"
                    .into(),
            ))
        }
    }
}

fn a_template() -> Result<ParameterSet> {
    let mut t = ParameterSet::new();
    t.insert(A_KEY, vec![1], vec![0.0])?;
    Ok(t)
}

pub struct FedNovaServer {
    config: FedNovaConfig,
    aggregator: Box<dyn Aggregator>,
}

impl FedNovaServer {
    pub fn new(config: FedNovaConfig, aggregator: Box<dyn Aggregator>) -> Result<Self> {
        config.validate()?;
        Ok(Self { config, aggregator })
    }
}

impl ServerStrategy for FedNovaServer {
    fn name(&self) -> &'static str {
        "FedNova"
    }

    fn aggregate(
        &mut self,
        _round: u64,
        global: &ParameterSet,
        results: &[FitRes],
    ) -> Result<Aggregated> {
        validate_results(global, results, Some(&a_template()?))?;
        let mut a = Vec::with_capacity(results.len());
        for r in results {
            let a_k = r
                .extras
                .get(A_KEY)
                .and_then(|t| t.values.first().copied())
                .unwrap_or(0.0) as f64;
            if a_k < 1.0 {
                return Err(EngineError::InvalidUpdate {
                    site: r.site.clone(),
                    source: Box::new(EngineError::InvalidConfig(format!(
                        "FedNova normaliser a_k = {a_k} < 1 (no local step?)"
                    ))),
                });
            }
            a.push(a_k);
        }
        let n: Vec<f64> = results.iter().map(|r| r.num_examples as f64).collect();
        let tau_eff = if self.aggregator.kind().client_dp() {
            a.iter().sum::<f64>() / a.len() as f64
        } else {
            n.iter().zip(&a).map(|(n, a)| n * a).sum::<f64>() / n.iter().sum::<f64>()
        };
        let base = global.to_flat();
        let updates: Vec<Vec<f32>> = results
            .iter()
            .zip(&a)
            .map(|(r, a_k)| {
                let scale = tau_eff / a_k;
                r.params
                    .to_flat()
                    .iter()
                    .zip(&base)
                    .map(|(w_k, w)| ((*w_k as f64 - *w as f64) * scale) as f32)
                    .collect()
            })
            .collect();
        let averaged = average(self.aggregator.as_mut(), global, &updates, &n)?;
        let server_lr = self.config.server_lr as f64;
        let next = step(global, &averaged.update, |w, u| {
            (w as f64 + server_lr * u as f64) as f32
        })?;
        Ok(Aggregated::new(next, &averaged))
    }
}

/// Stateless client: a fresh optimiser each round, local SGD, report `a_k`.
pub struct FedNovaClient;

impl super::GlobalClient for FedNovaClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        // refuse adaptive optimisers before any training happens
        normaliser(&site.train.optimizer, 1)?;
        // a_k assumes the momentum buffer starts at zero every round
        site.optimizer = Optimizer::new(site.train.optimizer.clone())?;
        let mut res = local_fit(site, ins, &Selector::All, &[], rng)?;
        if res.report.steps == 0 {
            return Err(EngineError::InvalidConfig(
                "FedNova needs at least one local step per round".into(),
            ));
        }
        let a_k = normaliser(&site.train.optimizer, res.report.steps)?;
        let mut extras = ParameterSet::new();
        extras.insert(A_KEY, vec![1], vec![a_k as f32])?;
        res.extras = extras;
        Ok(res)
    }
}

impl MethodSpec for FedNovaConfig {
    fn name(&self) -> &'static str {
        "FedNova"
    }

    fn validate(&self) -> Result<()> {
        if !(self.server_lr > 0.0 && self.server_lr.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "FedNova server_lr must be > 0, got {}",
                self.server_lr
            )));
        }
        Ok(())
    }

    /// The normaliser `a_k` exists for SGD (with or without momentum) only.
    fn check_train(&self, train: &TrainConfig) -> std::result::Result<(), TrainRefusal> {
        normaliser(&train.optimizer, 1)
            .map(|_| ())
            .map_err(|e| TrainRefusal {
                setting: match train.optimizer {
                    OptimizerConfig::Sgd { .. } => TrainSetting::Momentum,
                    _ => TrainSetting::Optimizer,
                },
                code: "fednova_needs_sgd",
                reason: e.to_string(),
            })
    }

    fn server(
        &self,
        _n_sites: usize,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Box<dyn ServerStrategy>> {
        Ok(Box::new(FedNovaServer::new(self.clone(), aggregator)?))
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        self.validate()?;
        Ok(Box::new(FedNovaClient))
    }

    // client_dp: the side value a_k is a function of the site's optimiser settings and step
    // count, which the sample count (sent in clear) already determines; the model part goes
    // through the aggregator.
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::{FedAvgServer, WeightedMean};
    use crate::train::TrainReport;

    fn one(v: f32) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![1], vec![v]).unwrap();
        p
    }

    fn res(site: &str, n: usize, w: f32, a: f32) -> FitRes {
        let mut extras = ParameterSet::new();
        extras.insert(A_KEY, vec![1], vec![a]).unwrap();
        FitRes {
            site: site.into(),
            num_examples: n,
            params: one(w),
            extras,
            report: TrainReport::default(),
        }
    }

    fn server() -> FedNovaServer {
        FedNovaServer::new(FedNovaConfig::default(), Box::new(WeightedMean)).unwrap()
    }

    #[test]
    fn normaliser_by_hand() {
        let sgd = OptimizerConfig::sgd(0.1);
        assert_eq!(normaliser(&sgd, 4).unwrap(), 4.0);
        // rho = 0.5, tau = 3: (1 - .5)/.5 + (1 - .25)/.5 + (1 - .125)/.5 = 1 + 1.5 + 1.75 = 4.25
        let mom = OptimizerConfig::Sgd {
            lr: 0.1,
            momentum: 0.5,
            weight_decay: 0.0,
        };
        assert!((normaliser(&mom, 3).unwrap() - 4.25).abs() < 1e-12);
        assert!((normaliser(&mom, 1).unwrap() - 1.0).abs() < 1e-12);
        assert!(normaliser(&OptimizerConfig::adamw(1e-3), 3).is_err());
        assert!(normaliser(&OptimizerConfig::adam(1e-3), 3).is_err());
    }

    #[test]
    fn two_sites_one_and_four_steps_by_hand() {
        // w = 0; site a: n = 1, tau = 1, w_a = 1; site b: n = 3, tau = 4, w_b = 2.
        // d_a = -1, d_b = -0.5; p = (1/4, 3/4); sum p d = -0.25 - 0.375 = -0.625;
        // tau_eff = 0.25 * 1 + 0.75 * 4 = 3.25; w = 0 + 3.25 * 0.625 = 2.03125.
        // (FedAvg would give 0.25 * 1 + 0.75 * 2 = 1.75.)
        let w = server()
            .aggregate_fit(
                1,
                &one(0.0),
                &[res("a", 1, 1.0, 1.0), res("b", 3, 2.0, 4.0)],
                0,
            )
            .unwrap()
            .unwrap()
            .params;
        assert!((w.to_flat()[0] - 2.03125).abs() < 1e-6);
    }

    #[test]
    fn equal_work_is_fedavg() {
        let results = [res("a", 2, 1.5, 3.0), res("b", 5, -0.5, 3.0)];
        let global = one(0.25);
        let nova = server()
            .aggregate_fit(1, &global, &results, 0)
            .unwrap()
            .unwrap()
            .params;
        let mut plain: Vec<FitRes> = results.to_vec();
        plain
            .iter_mut()
            .for_each(|r| r.extras = ParameterSet::new());
        let avg = FedAvgServer::new("FedAvg", Box::new(WeightedMean))
            .aggregate_fit(1, &global, &plain, 0)
            .unwrap()
            .unwrap()
            .params;
        assert!((nova.to_flat()[0] - avg.to_flat()[0]).abs() < 1e-6);
    }

    /// Under client-level DP the clip norm and the noise act on model changes, as in
    /// DP-FedAvg: with equal work FedNova is DP-FedAvg draw for draw, however many local steps
    /// (before, the noise was scaled up by `tau_eff` = 50 here).
    #[test]
    fn equal_work_under_client_dp_is_dp_fedavg() {
        use crate::dp::{DpFedAvgConfig, NoiseRng};
        use crate::strategy::DpFedAvgAggregator;
        let dp = || {
            Box::new(DpFedAvgAggregator::new(
                DpFedAvgConfig::new(0.5, 1.0),
                NoiseRng::from_seed_for_reproducible_runs([3; 32]),
            ))
        };
        let results = [res("a", 2, 1.5, 50.0), res("b", 5, -0.5, 50.0)];
        let global = one(0.25);
        let nova = FedNovaServer::new(FedNovaConfig::default(), dp())
            .unwrap()
            .aggregate_fit(1, &global, &results, 0)
            .unwrap()
            .unwrap()
            .params;
        let mut plain: Vec<FitRes> = results.to_vec();
        plain
            .iter_mut()
            .for_each(|r| r.extras = ParameterSet::new());
        let avg = FedAvgServer::new("FedAvg", dp())
            .aggregate_fit(1, &global, &plain, 0)
            .unwrap()
            .unwrap()
            .params;
        assert!((nova.to_flat()[0] - avg.to_flat()[0]).abs() < 1e-5);
        // and the noise is of DP-FedAvg's size: std sigma C / m = 0.25 around the clipped mean
        assert!((avg.to_flat()[0] - 0.25).abs() < 2.0);
    }

    /// Uniform step length under client-level DP: the sites' unprivatised sample counts do
    /// not reach the model through `tau_eff`.
    #[test]
    fn client_dp_step_length_ignores_sample_counts() {
        use crate::dp::{DpFedAvgConfig, NoiseRng};
        use crate::strategy::DpFedAvgAggregator;
        let run = |n_b: usize| {
            FedNovaServer::new(
                FedNovaConfig::default(),
                Box::new(DpFedAvgAggregator::new(
                    DpFedAvgConfig::new(10.0, 1e-9),
                    NoiseRng::from_seed_for_reproducible_runs([4; 32]),
                )),
            )
            .unwrap()
            .aggregate_fit(
                1,
                &one(0.0),
                &[res("a", 1, 1.0, 1.0), res("b", n_b, 2.0, 4.0)],
                0,
            )
            .unwrap()
            .unwrap()
            .params
            .to_flat()[0]
        };
        // tau_eff = (1 + 4) / 2 = 2.5; updates 2.5 * 1 / 1 and 2.5 * 2 / 4; mean 1.875 (the
        // noise, same draw in both runs, is negligible)
        assert!((run(3) - 1.875).abs() < 1e-6);
        assert_eq!(run(3), run(300));
    }

    #[test]
    fn rejects_bad_reports_and_config() {
        let mut s = server();
        assert!(s
            .aggregate_fit(1, &one(0.0), &[res("a", 1, 1.0, 0.0)], 0)
            .is_err());
        assert!(s
            .aggregate_fit(1, &one(0.0), &[res("a", 1, 1.0, f32::NAN)], 0)
            .is_err());
        let mut missing = res("a", 1, 1.0, 1.0);
        missing.extras = ParameterSet::new();
        assert!(s.aggregate_fit(1, &one(0.0), &[missing], 0).is_err());
        assert_eq!(s.aggregate_fit(1, &one(0.0), &[], 1).unwrap(), None);
        assert!(
            FedNovaServer::new(FedNovaConfig { server_lr: 0.0 }, Box::new(WeightedMean)).is_err()
        );
        assert!(FedNovaConfig {
            server_lr: f32::NAN
        }
        .client()
        .is_err());
    }

    #[test]
    fn state_round_trips() {
        let mut s = server();
        let state = s.save_state().unwrap();
        s.load_state(state.clone()).unwrap();
        assert_eq!(s.save_state().unwrap(), state);
        let c = FedNovaClient;
        assert_eq!(c.save_state().unwrap(), serde_json::Value::Null);
    }
}
