//! SCAFFOLD (Karimireddy et al. 2020, arXiv:1910.06378), option II control variates.
//!
//! Client k with control variate c_k receives (w, c) and takes K plain-SGD steps
//! `y <- y - lr_l (g(y) - c_k + c)`; then `c_k+ = c_k - c + (w - y) / (K lr_l)` and it sends
//! `y` and `dc_k = c_k+ - c_k`. Server: `w <- w + lr_g Agg_k(y_k - w)`,
//! `c <- c + (|S| / N) mean_k(dc_k)`, means uniform over the |S| participating sites.
//! c_k never leaves the site; the site's optimiser must be SGD without momentum or weight
//! decay, otherwise `(w - y) / (K lr_l)` is not the average corrected gradient.
//!
//! The model step goes through the study's [`Aggregator`] with uniform weights (the paper's
//! mean over participants), so with the default [`WeightedMean`](super::WeightedMean) it is
//! exactly `mean_k(y_k - w)` and robust or DP aggregation rules apply to it as to FedAvg. The
//! control variates stay a plain uniform mean: they are a variance-reduction device whose
//! aggregate only steers the next round's local steps, and a robust rule picking different
//! sites for `y` and `dc` would break the pairing the estimator relies on. A Byzantine site
//! can therefore still bias `c`; its effect on the model passes through the robust model step.
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::aggregate::{aggregate_models_weighted, uniform_mean, validate_results};
use super::fedavg::local_fit;
use super::{
    Aggregated, Aggregator, ClientStrategy, FitIns, FitRes, MethodSpec, ServerStrategy, Site,
    Support, TrainRefusal, TrainSetting, WeightedMean,
};
use crate::error::{EngineError, Result};
use crate::params::{ParameterSet, Selector};
use crate::train::{Correction, OptimizerConfig, TrainConfig};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct ScaffoldConfig {
    /// Global step size `lr_g` (1.0 = plain averaging of the models).
    pub server_lr: f32,
}

impl Default for ScaffoldConfig {
    fn default() -> Self {
        Self { server_lr: 1.0 }
    }
}

/// The local learning rate of plain SGD (no momentum, no weight decay), the only optimiser
/// under which `(w - y) / (K lr)` is the average corrected gradient.
fn plain_sgd_lr(train: &TrainConfig) -> std::result::Result<f64, TrainRefusal> {
    let refuse = |setting, reason: &str| TrainRefusal {
        setting,
        code: match setting {
            TrainSetting::Optimizer => "scaffold_needs_sgd",
            _ => "scaffold_needs_plain_sgd",
        },
        reason: format!("SCAFFOLD's control variates assume plain SGD local steps: {reason}"),
    };
    match train.optimizer {
        OptimizerConfig::Sgd { momentum, .. } if momentum != 0.0 => {
            Err(refuse(TrainSetting::Momentum, "no momentum"))
        }
        OptimizerConfig::Sgd { weight_decay, .. } if weight_decay != 0.0 => {
            Err(refuse(TrainSetting::WeightDecay, "no weight decay"))
        }
        OptimizerConfig::Sgd { lr, .. } => Ok(lr),
        _ => Err(refuse(TrainSetting::Optimizer, "use `sgd`")),
    }
}

pub struct ScaffoldServer {
    config: ScaffoldConfig,
    n_sites: usize,
    /// Combines the model updates `y_k - w` (uniform weights).
    aggregator: Box<dyn Aggregator>,
    /// Server control variate `c`; zeros until the first round fixes its shape.
    c: Option<ParameterSet>,
}

impl ScaffoldServer {
    /// Server whose model step is the plain uniform mean.
    pub fn new(config: ScaffoldConfig, n_sites: usize) -> Result<Self> {
        Self::with_aggregator(config, n_sites, Box::new(WeightedMean))
    }

    /// Server whose model step combines `y_k - w` with `aggregator` (uniform weights).
    pub fn with_aggregator(
        config: ScaffoldConfig,
        n_sites: usize,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            n_sites,
            aggregator,
            c: None,
        })
    }

    fn control(&self, global: &ParameterSet) -> ParameterSet {
        self.c.clone().unwrap_or_else(|| global.zeros_like())
    }
}

impl ServerStrategy for ScaffoldServer {
    fn name(&self) -> &'static str {
        "SCAFFOLD"
    }

    fn configure_fit(&self, round: u64, global: &ParameterSet) -> Result<FitIns> {
        Ok(FitIns {
            round,
            params: global.clone(),
            extras: self.control(global),
        })
    }

    fn aggregate(
        &mut self,
        _round: u64,
        global: &ParameterSet,
        results: &[FitRes],
    ) -> Result<Aggregated> {
        let c = self.control(global);
        validate_results(global, results, Some(&c))?;
        let dcs: Vec<&ParameterSet> = results.iter().map(|r| &r.extras).collect();
        // w + lr_g Agg(y_k - w); the aggregated model is w + Agg(y_k - w)
        let uniform = vec![1.0; results.len()];
        let averaged =
            aggregate_models_weighted(self.aggregator.as_mut(), global, results, &uniform)?;
        let dy = averaged.params.sub(global)?;
        let mut w = global.clone();
        w.add_scaled(&dy, self.config.server_lr)?;
        let mut c_next = c;
        c_next.add_scaled(
            &uniform_mean(&dcs)?,
            results.len() as f32 / self.n_sites as f32,
        )?;
        w.ensure_finite()?;
        c_next.ensure_finite()?;
        self.c = Some(c_next);
        Ok(Aggregated {
            params: w,
            metrics: averaged.metrics,
        })
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(&self.c)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        self.c = serde_json::from_value(state)?;
        Ok(())
    }
}

/// `c_k - c + (w - y) / (K lr)`.
pub(crate) fn next_control(
    c_k: &ParameterSet,
    c: &ParameterSet,
    w: &ParameterSet,
    y: &ParameterSet,
    steps: usize,
    lr: f64,
) -> Result<ParameterSet> {
    let mut out = c_k.sub(c)?;
    out.add_scaled(&w.sub(y)?, (1.0 / (steps as f64 * lr)) as f32)?;
    Ok(out)
}

pub struct ScaffoldClient {
    /// Site control variate `c_k`; private to the site.
    c_k: Option<ParameterSet>,
}

impl ScaffoldClient {
    pub fn new(_config: ScaffoldConfig) -> Self {
        Self { c_k: None }
    }
}

impl super::GlobalClient for ScaffoldClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        let lr = plain_sgd_lr(&site.train).map_err(|r| EngineError::InvalidConfig(r.reason))?;
        ins.params.check_compatible(&ins.extras)?;
        let c_k = self.c_k.clone().unwrap_or_else(|| ins.params.zeros_like());
        let correction = ins.extras.sub(&c_k)?;
        let mut res = local_fit(
            site,
            ins,
            &Selector::All,
            &[&Correction { delta: &correction }],
            rng,
        )?;
        if res.report.steps == 0 {
            return Err(EngineError::InvalidConfig(
                "SCAFFOLD needs at least one local step".into(),
            ));
        }
        let c_next = next_control(
            &c_k,
            &ins.extras,
            &ins.params,
            &res.params,
            res.report.steps,
            lr,
        )?;
        c_next.ensure_finite()?;
        res.extras = c_next.sub(&c_k)?;
        self.c_k = Some(c_next);
        Ok(res)
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(&self.c_k)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        self.c_k = serde_json::from_value(state)?;
        Ok(())
    }
}

impl MethodSpec for ScaffoldConfig {
    fn name(&self) -> &'static str {
        "SCAFFOLD"
    }

    fn validate(&self) -> Result<()> {
        if !(self.server_lr > 0.0 && self.server_lr.is_finite()) {
            return Err(EngineError::InvalidConfig(
                "SCAFFOLD server_lr must be > 0".into(),
            ));
        }
        Ok(())
    }

    fn check_train(&self, train: &TrainConfig) -> std::result::Result<(), TrainRefusal> {
        plain_sgd_lr(train).map(|_| ())
    }

    fn server(
        &self,
        n_sites: usize,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Box<dyn ServerStrategy>> {
        Ok(Box::new(ScaffoldServer::with_aggregator(
            self.clone(),
            n_sites,
            aggregator,
        )?))
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(ScaffoldClient::new(self.clone())))
    }

    fn client_dp(&self) -> Support {
        Support::No("the control-variate changes travel and are averaged outside the aggregator")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::TrainReport;

    fn one(v: f32) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![1], vec![v]).unwrap();
        p
    }

    #[test]
    fn control_variate_update_by_hand() {
        // c_k = 0.1, c = 0.3, w = 1, y = 0.5, K = 10, lr = 0.05: 0.1 - 0.3 + 0.5 / 0.5 = 0.8
        let next = next_control(&one(0.1), &one(0.3), &one(1.0), &one(0.5), 10, 0.05).unwrap();
        assert!((next.to_flat()[0] - 0.8).abs() < 1e-6);
    }

    #[test]
    fn server_step_by_hand() {
        // w = 0; y = {1, 3}; dc = {0.2, 0.4}; lr_g = 0.5; N = 4 sites, 2 participate:
        // w = 0 + 0.5 * 2 = 1; c = 0 + (2/4) * 0.3 = 0.15
        let mut s = ScaffoldServer::new(ScaffoldConfig { server_lr: 0.5 }, 4).unwrap();
        let r = |site: &str, y: f32, dc: f32| FitRes {
            site: site.into(),
            num_examples: 5,
            params: one(y),
            extras: one(dc),
            report: TrainReport::default(),
        };
        let w = s
            .aggregate_fit(1, &one(0.0), &[r("a", 1.0, 0.2), r("b", 3.0, 0.4)], 0)
            .unwrap()
            .unwrap()
            .params;
        assert!((w.to_flat()[0] - 1.0).abs() < 1e-6);
        let ins = s.configure_fit(2, &w).unwrap();
        assert!((ins.extras.to_flat()[0] - 0.15).abs() < 1e-6);
        // a site that omits its control-variate change is rejected
        let mut bad = r("a", 1.0, 0.2);
        bad.extras = ParameterSet::new();
        assert!(s.aggregate_fit(2, &w, &[bad], 0).is_err());
    }
}
