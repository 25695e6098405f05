//! FedExP (Jhunjhunwala, Wang & Joshi 2023, "FedExP: Speeding Up Federated Averaging via
//! Extrapolation", ICLR 2023, arXiv:2301.09604).
//!
//! Clients are plain FedAvg clients. The server treats the average update as a step of a
//! projection method (POCS) and extrapolates it with an adaptive global step size:
//! `d_k = w_k - w`, `dbar = mean_k d_k`,
//! `eta_g = max(1, sum_k ||d_k||^2 / (2 K (||dbar||^2 + eps)))`, `w <- w + eta_g dbar`
//! (the paper's Algorithm 1 with `K = |S|` participating sites). `eta_g = 1` is FedAvg; when the
//! sites' updates disagree (`||dbar||` small against the individual `||d_k||`) the step is
//! larger.
//!
//! Choices and their reasons:
//! * Weighting: the paper averages uniformly (`p_k = 1/K`), which is the default. With
//!   `example_weighted` the mean uses `p_k = n_k / n` and the numerator becomes
//!   `sum_k p_k ||d_k||^2` (the same formula with `1/K` replaced by `p_k`).
//! * `dbar` is computed by the study's [`Aggregator`] (so robust or DP aggregation shapes the
//!   direction and its norm), but `sum_k ||d_k||^2` is taken from the raw updates. Under a
//!   client-level DP aggregator that sum is *not* privatised: it is a function of every
//!   site's raw update, so client-level DP is supported only with the step fixed
//!   (`max_step <= 1`, which is DP-FedAvg); otherwise compute `eta_g` from clipped and noised
//!   quantities outside this strategy.
//! * `max_step` optionally clamps `eta_g` from above (the paper has no clamp; `None` is the
//!   paper's rule).
//! * `eps` defaults to 1e-3, the paper's value for neural networks (it uses 0 only for linear
//!   regression). When both the numerator and `||dbar||^2 + eps` are 0 (every site returned
//!   the global model, `eps = 0`), `eta_g = 1`.
//! * The paper reports the average of the last two global iterates as its final model, because
//!   the extrapolated iterates oscillate. The engine's global model is the iterate itself; the
//!   best-global checkpoint on validation loss plays that smoothing role here.
use serde::{Deserialize, Serialize};

use super::aggregate::{average, model_deltas, step, validate_results};
use super::{
    Aggregated, Aggregator, ClientStrategy, FedAvgClient, FitRes, MethodSpec, ServerStrategy,
    Support,
};
use crate::error::{EngineError, Result};
use crate::params::{ParameterSet, Selector};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FedExpConfig {
    /// `eps` in the denominator of `eta_g` (paper: 1e-3 for neural networks).
    pub eps: f64,
    /// Upper bound on `eta_g` (`None`: the paper's unbounded rule).
    pub max_step: Option<f64>,
    /// Example-weighted mean instead of the paper's uniform mean.
    pub example_weighted: bool,
}

impl Default for FedExpConfig {
    fn default() -> Self {
        Self {
            eps: 1e-3,
            max_step: None,
            example_weighted: false,
        }
    }
}

impl FedExpConfig {
    /// `eta_g` from the weighted squared norms of the updates and the aggregate's norm.
    /// `p` are the normalised weights (summing to 1), `sq_norms[k] = ||d_k||^2`.
    pub fn step_size(&self, p: &[f64], sq_norms: &[f64], mean_sq_norm: f64) -> f64 {
        let num: f64 = p.iter().zip(sq_norms).map(|(p, s)| p * s).sum();
        let den = 2.0 * (mean_sq_norm + self.eps);
        let raw = if den > 0.0 { num / den } else { 1.0 };
        let eta = raw.max(1.0);
        match self.max_step {
            Some(m) => eta.min(m),
            None => eta,
        }
    }
}

pub struct FedExpServer {
    config: FedExpConfig,
    aggregator: Box<dyn Aggregator>,
}

impl FedExpServer {
    pub fn new(config: FedExpConfig, aggregator: Box<dyn Aggregator>) -> Result<Self> {
        config.validate()?;
        Ok(Self { config, aggregator })
    }
}

impl ServerStrategy for FedExpServer {
    fn name(&self) -> &'static str {
        "FedExP"
    }

    fn aggregate(
        &mut self,
        _round: u64,
        global: &ParameterSet,
        results: &[FitRes],
    ) -> Result<Aggregated> {
        validate_results(global, results, None)?;
        let updates = model_deltas(global, results);
        let weights: Vec<f64> = if self.config.example_weighted {
            results.iter().map(|r| r.num_examples as f64).collect()
        } else {
            vec![1.0; results.len()]
        };
        let averaged = average(self.aggregator.as_mut(), global, &updates, &weights)?;
        let total: f64 = weights.iter().sum();
        let p: Vec<f64> = weights.iter().map(|w| w / total).collect();
        let sq = |v: &[f32]| v.iter().map(|x| (*x as f64) * (*x as f64)).sum::<f64>();
        let sq_norms: Vec<f64> = updates.iter().map(|u| sq(u)).collect();
        let eta = self.config.step_size(&p, &sq_norms, sq(&averaged.update));
        let next = step(global, &averaged.update, |w, d| {
            (w as f64 + eta * d as f64) as f32
        })?;
        Ok(Aggregated::new(next, &averaged))
    }
}

impl MethodSpec for FedExpConfig {
    fn name(&self) -> &'static str {
        "FedExP"
    }

    fn validate(&self) -> Result<()> {
        if !(self.eps >= 0.0 && self.eps.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "FedExP eps must be >= 0, got {}",
                self.eps
            )));
        }
        if let Some(m) = self.max_step {
            if !(m >= 1.0 && m.is_finite()) {
                return Err(EngineError::InvalidConfig(format!(
                    "FedExP max_step must be >= 1 (eta_g is never below 1), got {m}"
                )));
            }
        }
        Ok(())
    }

    fn server(
        &self,
        _n_sites: usize,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Box<dyn ServerStrategy>> {
        Ok(Box::new(FedExpServer::new(self.clone(), aggregator)?))
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        self.validate()?;
        Ok(Box::new(FedAvgClient::new(Selector::All)))
    }

    fn client_dp(&self) -> Support {
        if self.max_step.is_some_and(|m| m <= 1.0) {
            Support::Yes
        } else {
            Support::No(
                "the step size reads the raw update norms; only a step capped at 1 \
                 (`max_step` <= 1, plain averaging of the privatised mean) stays covered",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::WeightedMean;
    use crate::train::TrainReport;

    fn vec_set(v: Vec<f32>) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![v.len()], v).unwrap();
        p
    }

    fn res(site: &str, n: usize, v: Vec<f32>) -> FitRes {
        FitRes {
            site: site.into(),
            num_examples: n,
            params: vec_set(v),
            extras: ParameterSet::new(),
            report: TrainReport::default(),
        }
    }

    /// The next global model and the step `eta_g` it implies (`(w+ - w) / dbar` on the
    /// first coordinate whose `dbar` is not 0).
    fn run(cfg: FedExpConfig, global: Vec<f32>, results: &[FitRes]) -> (Vec<f32>, f64) {
        let mut s = FedExpServer::new(cfg.clone(), Box::new(WeightedMean)).unwrap();
        let g = vec_set(global.clone());
        let w = s.aggregate_fit(1, &g, results, 0).unwrap().unwrap().params;
        let sets: Vec<&ParameterSet> = results.iter().map(|r| &r.params).collect();
        let weights: Vec<f64> = results
            .iter()
            .map(|r| {
                if cfg.example_weighted {
                    r.num_examples as f64
                } else {
                    1.0
                }
            })
            .collect();
        let dbar = ParameterSet::weighted_average(&sets, &weights)
            .unwrap()
            .sub(&g)
            .unwrap()
            .to_flat();
        let w = w.to_flat();
        let eta = dbar
            .iter()
            .zip(w.iter().zip(&global))
            .find(|(d, _)| d.abs() > 1e-6)
            .map(|(d, (w1, w0))| ((w1 - w0) / d) as f64)
            .unwrap_or(1.0);
        (w, eta)
    }

    fn no_eps() -> FedExpConfig {
        FedExpConfig {
            eps: 0.0,
            ..FedExpConfig::default()
        }
    }

    #[test]
    fn two_orthogonal_updates_give_fedavg() {
        // d = e1, e2: dbar = (.5, .5), ||dbar||^2 = .5, sum ||d||^2 = 2,
        // eta = 2 / (2 * 2 * (.5 + 1e-3)) = 1 / 1.002 < 1 -> 1: plain averaging
        let (w, eta) = run(
            FedExpConfig::default(),
            vec![0.0, 0.0],
            &[res("a", 1, vec![1.0, 0.0]), res("b", 9, vec![0.0, 1.0])],
        );
        assert!((eta - 1.0).abs() < 1e-6);
        assert_eq!(w, vec![0.5, 0.5]);
    }

    #[test]
    fn three_orthogonal_updates_extrapolate_by_half() {
        // d = e1, e2, e3 from w = (1, 1, 1): dbar = (1/3, 1/3, 1/3), ||dbar||^2 = 1/3,
        // eta = 3 / (2 * 3 * 1/3) = 1.5 (eps = 0); w = 1 + 1.5 / 3 = 1.5 everywhere
        let (w, eta) = run(
            no_eps(),
            vec![1.0, 1.0, 1.0],
            &[
                res("a", 1, vec![2.0, 1.0, 1.0]),
                res("b", 1, vec![1.0, 2.0, 1.0]),
                res("c", 1, vec![1.0, 1.0, 2.0]),
            ],
        );
        assert!((eta - 1.5).abs() < 1e-6, "{eta}");
        for v in w {
            assert!((v - 1.5).abs() < 1e-6);
        }
    }

    #[test]
    fn disagreeing_updates_by_hand_with_eps() {
        // d = 2, -1 (1-d): dbar = .5, ||dbar||^2 = .25, sum = 5,
        // eta = 5 / (2 * 2 * (.25 + 1e-3)) = 5 / 1.004 = 4.98008; w = 0 + 4.98008 * .5 = 2.49004
        let (w, eta) = run(
            FedExpConfig::default(),
            vec![0.0],
            &[res("a", 1, vec![2.0]), res("b", 1, vec![-1.0])],
        );
        assert!((eta - 5.0 / 1.004).abs() < 1e-5);
        assert!((w[0] - 2.490_04).abs() < 1e-5);
        // the clamp caps the step
        let capped = FedExpConfig {
            max_step: Some(2.0),
            ..FedExpConfig::default()
        };
        let (w, eta) = run(
            capped,
            vec![0.0],
            &[res("a", 1, vec![2.0]), res("b", 1, vec![-1.0])],
        );
        assert!((eta - 2.0).abs() < 1e-6);
        assert!((w[0] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn example_weighting_by_hand() {
        // n = 3, 1; d = 2, -2: dbar = (6 - 2) / 4 = 1, sum p ||d||^2 = 4,
        // eta = 4 / (2 * (1 + 0)) = 2; w = 2
        let cfg = FedExpConfig {
            example_weighted: true,
            ..no_eps()
        };
        let (w, eta) = run(
            cfg,
            vec![0.0],
            &[res("a", 3, vec![2.0]), res("b", 1, vec![-2.0])],
        );
        assert!((eta - 2.0).abs() < 1e-6);
        assert!((w[0] - 2.0).abs() < 1e-6);
        // all sites return the global model, eps = 0: no division by zero
        let (w, eta) = run(no_eps(), vec![0.5], &[res("a", 1, vec![0.5])]);
        assert_eq!((w, eta), (vec![0.5], 1.0));
    }

    #[test]
    fn config_validation_and_state() {
        for bad in [
            FedExpConfig {
                eps: -1.0,
                ..FedExpConfig::default()
            },
            FedExpConfig {
                max_step: Some(0.5),
                ..FedExpConfig::default()
            },
            FedExpConfig {
                eps: f64::NAN,
                ..FedExpConfig::default()
            },
        ] {
            assert!(FedExpServer::new(bad.clone(), Box::new(WeightedMean)).is_err());
            assert!(bad.client().is_err());
        }
        let mut s = FedExpServer::new(FedExpConfig::default(), Box::new(WeightedMean)).unwrap();
        let state = s.save_state().unwrap();
        s.load_state(state).unwrap();
        assert!(s
            .aggregate_fit(1, &vec_set(vec![0.0]), &[res("a", 1, vec![f32::NAN])], 0)
            .is_err());
        // the step-size rule on its own: sum p ||d||^2 = 0.5 * 4 + 0.5 * 0 = 2,
        // 2 / (2 * (0.25 + 0.25)) = 2, capped at 1.5
        let capped = FedExpConfig {
            eps: 0.25,
            max_step: Some(1.5),
            example_weighted: false,
        };
        assert!(
            (FedExpConfig {
                max_step: None,
                ..capped.clone()
            }
            .step_size(&[0.5, 0.5], &[4.0, 0.0], 0.25)
                - 2.0)
                .abs()
                < 1e-12
        );
        assert!((capped.step_size(&[0.5, 0.5], &[4.0, 0.0], 0.25) - 1.5).abs() < 1e-12);
    }
}
