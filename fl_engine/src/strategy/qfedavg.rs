//! q-FedAvg (Li, Sanjabi, Beirami & Smith 2020, "Fair Resource Allocation in Federated
//! Learning", ICLR 2020, arXiv:1905.10497): the q-FFL objective
//! `min_w sum_k p_k F_k(w)^(q+1) / (q+1)`, which puts more weight on sites where the model does
//! badly (q = 0 is FedAvg's objective, larger q is fairer).
//!
//! Client k receives `w`, computes `F_k = F_k(w)`, its mean task loss on its *whole training
//! set* at `w` (evaluation mode), trains locally to `w_k` as FedAvg does, and sends `w_k` with
//! `F_k` and its Lipschitz estimate `L_k` in `extras` (under [`LOSS_KEY`] and
//! [`LIPSCHITZ_KEY`], names no model parameter can have). Server (the paper's Algorithm 3):
//! `Delta_k = L_k (w - w_k)`, `Delta~_k = F_k^q Delta_k`,
//! `h_k = q F_k^(q-1) ||Delta_k||^2 + L_k F_k^q`, `w <- w - sum_k Delta~_k / sum_k h_k`.
//!
//! With `q = 0`: `Delta~_k = L_k (w - w_k)`, `h_k = L_k`, so for equal `L`
//! `w <- w - L sum_k (w - w_k) / (K L) = (1/K) sum_k w_k`: uniform averaging of the models
//! (the paper's q-FedAvg samples sites with probability `p_k` and then averages uniformly).
//!
//! Choices:
//! * `L = 1 / lr` of the site's local optimiser by default (the paper's estimate, App. C),
//!   or the configured `lipschitz` for every site.
//! * The averaging step goes through the study's [`Aggregator`]: the update is
//!   `w <- w + (sum_k omega_k u_k / sum_k omega_k) (sum_k omega_k / sum_k h_k)` with
//!   `u_k = w_k - w`, `omega_k = L_k F_k^q`; the first factor is the aggregator's weighted
//!   mean with weights `omega_k`. The step scale uses the raw `||Delta_k||^2` and `F_k`; an
//!   aggregator that ignores weights (DP-FedAvg) would lose the q-weighting, so q-FedAvg is
//!   not a client-level-DP method here.
//! * `F_k` is floored at 1e-12 so `F_k^(q-1)` stays finite for q < 1.
//! * Record-level DP is refused: `F_k` is a function of every training record and is sent in
//!   clear, outside DP-SGD's accounting.
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::aggregate::{average, step, validate_results};
use super::fedavg::local_fit;
use super::methods::check_train;
use super::{
    Aggregated, Aggregator, ClientStrategy, FitIns, FitRes, MethodSpec, ServerStrategy, Site,
    Support,
};
use crate::data::Dataset;
use crate::error::{EngineError, Result};
use crate::model::Net;
use crate::params::{ParameterSet, Selector};
use crate::train::LossKind;

/// Name of `F_k` in a site's extras.
pub const LOSS_KEY: &str = "qfedavg/loss";
/// Name of `L_k` in a site's extras.
pub const LIPSCHITZ_KEY: &str = "qfedavg/lipschitz";
/// Floor on `F_k`.
const MIN_LOSS: f64 = 1e-12;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct QFedAvgConfig {
    /// Fairness exponent `q` >= 0 (0 = uniform averaging; the paper tunes over
    /// {0.001, 0.01, 0.1, 1, 2, 5, 15}).
    pub q: f64,
    /// Lipschitz estimate `L`; `None` = `1 / lr` of each site's local optimiser.
    pub lipschitz: Option<f64>,
}

impl Default for QFedAvgConfig {
    fn default() -> Self {
        Self {
            q: 1.0,
            lipschitz: None,
        }
    }
}

/// Mean task loss of `net` over all of `data` in evaluation mode.
pub(crate) fn dataset_loss(net: &Net, data: &Dataset, loss: &LossKind) -> Result<f64> {
    if data.is_empty() {
        return Err(EngineError::Data(
            "cannot compute a loss on an empty dataset".into(),
        ));
    }
    let logits = net.forward(
        &net.input(data.features(), data.len(), data.n_features())?,
        None,
    )?;
    let value = loss
        .compute(&logits, data.labels())?
        .to_dtype(candle_core::DType::F32)?
        .to_scalar::<f32>()? as f64;
    if !value.is_finite() {
        return Err(EngineError::NonFinite("dataset loss".into()));
    }
    Ok(value)
}

fn extras_template() -> Result<ParameterSet> {
    let mut t = ParameterSet::new();
    t.insert(LOSS_KEY, vec![1], vec![0.0])?;
    t.insert(LIPSCHITZ_KEY, vec![1], vec![0.0])?;
    Ok(t)
}

fn scalar_extra(r: &FitRes, key: &str) -> Result<f64> {
    r.extras
        .get(key)
        .and_then(|t| t.values.first())
        .map(|v| *v as f64)
        .ok_or_else(|| EngineError::MissingParameter(key.into()).for_site(&r.site))
}

pub struct QFedAvgServer {
    config: QFedAvgConfig,
    aggregator: Box<dyn Aggregator>,
}

impl QFedAvgServer {
    pub fn new(config: QFedAvgConfig, aggregator: Box<dyn Aggregator>) -> Result<Self> {
        config.validate()?;
        Ok(Self { config, aggregator })
    }
}

impl ServerStrategy for QFedAvgServer {
    fn name(&self) -> &'static str {
        "q-FedAvg"
    }

    fn aggregate(
        &mut self,
        _round: u64,
        global: &ParameterSet,
        results: &[FitRes],
    ) -> Result<Aggregated> {
        validate_results(global, results, Some(&extras_template()?))?;
        let q = self.config.q;
        let base = global.to_flat();
        let mut updates = Vec::with_capacity(results.len());
        let mut omega = Vec::with_capacity(results.len());
        let mut h_sum = 0.0f64;
        for r in results {
            let f = scalar_extra(r, LOSS_KEY)?;
            let l = scalar_extra(r, LIPSCHITZ_KEY)?;
            if f < 0.0 || l <= 0.0 {
                return Err(EngineError::InvalidConfig(format!(
                    "q-FedAvg needs a loss >= 0 and a Lipschitz estimate > 0, got {f} and {l}"
                ))
                .for_site(&r.site));
            }
            let f = f.max(MIN_LOSS);
            let u: Vec<f32> = r
                .params
                .to_flat()
                .iter()
                .zip(&base)
                .map(|(w_k, w)| w_k - w)
                .collect();
            // ||Delta_k||^2 = L^2 ||w - w_k||^2
            let sq: f64 = u.iter().map(|v| (*v as f64) * (*v as f64)).sum::<f64>() * l * l;
            let fq = f.powf(q);
            let curvature = if q == 0.0 {
                0.0
            } else {
                q * f.powf(q - 1.0) * sq
            };
            h_sum += curvature + l * fq;
            omega.push(l * fq);
            updates.push(u);
        }
        let omega_sum: f64 = omega.iter().sum();
        if !(h_sum > 0.0 && h_sum.is_finite() && omega_sum > 0.0 && omega_sum.is_finite()) {
            return Err(EngineError::NonFinite("q-FedAvg step normaliser".into()));
        }
        let averaged = average(self.aggregator.as_mut(), global, &updates, &omega)?;
        let scale = omega_sum / h_sum;
        let next = step(global, &averaged.update, |w, u| {
            (w as f64 + scale * u as f64) as f32
        })?;
        Ok(Aggregated::new(next, &averaged))
    }
}

pub struct QFedAvgClient {
    config: QFedAvgConfig,
}

impl QFedAvgClient {
    pub fn new(config: QFedAvgConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { config })
    }
}

impl super::GlobalClient for QFedAvgClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        let lipschitz = match self.config.lipschitz {
            Some(l) => l,
            None => 1.0 / site.train.optimizer.lr(),
        };
        site.net.load(&ins.params)?;
        let f_k = dataset_loss(&site.net, &site.data.train, &site.train.loss)?;
        let mut res = local_fit(site, ins, &Selector::All, &[], rng)?;
        let mut extras = ParameterSet::new();
        extras.insert(LOSS_KEY, vec![1], vec![f_k as f32])?;
        extras.insert(LIPSCHITZ_KEY, vec![1], vec![lipschitz as f32])?;
        res.extras = extras;
        Ok(res)
    }
}

impl MethodSpec for QFedAvgConfig {
    fn name(&self) -> &'static str {
        "q-FedAvg"
    }

    fn validate(&self) -> Result<()> {
        if !(self.q >= 0.0 && self.q.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "q-FedAvg q must be >= 0, got {}",
                self.q
            )));
        }
        if let Some(l) = self.lipschitz {
            if !(l > 0.0 && l.is_finite()) {
                return Err(EngineError::InvalidConfig(format!(
                    "q-FedAvg lipschitz must be > 0, got {l}"
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
        Ok(Box::new(QFedAvgServer::new(self.clone(), aggregator)?))
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(QFedAvgClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No(
            "each site sends its training loss in clear, which record-level DP does not cover",
        )
    }

    fn client_dp(&self) -> Support {
        Support::No("each site sends its training loss F_k in clear")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::SiteData;
    use crate::model::ModelSpec;
    use crate::strategy::WeightedMean;
    use crate::train::{Budget, OptimizerConfig, RecordDp, TrainConfig, TrainReport};
    use rand::SeedableRng;

    fn one(v: f32) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![1], vec![v]).unwrap();
        p
    }

    fn res(site: &str, w: f32, f: f32, l: f32) -> FitRes {
        let mut extras = ParameterSet::new();
        extras.insert(LOSS_KEY, vec![1], vec![f]).unwrap();
        extras.insert(LIPSCHITZ_KEY, vec![1], vec![l]).unwrap();
        FitRes {
            site: site.into(),
            num_examples: 5,
            params: one(w),
            extras,
            report: TrainReport::default(),
        }
    }

    fn step(q: f64, results: &[FitRes]) -> f32 {
        let cfg = QFedAvgConfig { q, lipschitz: None };
        let mut s = QFedAvgServer::new(cfg, Box::new(WeightedMean)).unwrap();
        s.aggregate_fit(1, &one(0.0), results, 0)
            .unwrap()
            .unwrap()
            .params
            .to_flat()[0]
    }

    #[test]
    fn q_zero_is_uniform_averaging() {
        // q = 0, L = 10: Delta~ = 10 (0 - 1), 10 (0 - 3); h = 10, 10;
        // w = 0 - (-10 - 30) / 20 = 2 = (1 + 3) / 2, whatever the losses
        let w = step(0.0, &[res("a", 1.0, 0.5, 10.0), res("b", 3.0, 2.0, 10.0)]);
        assert!((w - 2.0).abs() < 1e-6);
    }

    #[test]
    fn q_one_by_hand() {
        // q = 1, L = 10, w = 0, w_k = 1, 3, F = 0.5, 2:
        // Delta = -10, -30; Delta~ = -5, -60; h = 1 * 1 * 100 + 10 * 0.5 = 105,
        // 1 * 1 * 900 + 10 * 2 = 920; w = 65 / 1025 = 0.0634146
        let w = step(1.0, &[res("a", 1.0, 0.5, 10.0), res("b", 3.0, 2.0, 10.0)]);
        assert!((w - 65.0 / 1025.0).abs() < 1e-7);
        // q = 2, same inputs: Delta~ = .25 * -10, 4 * -30 = -2.5, -120;
        // h = 2 * .5 * 100 + 10 * .25 = 102.5, 2 * 2 * 900 + 10 * 4 = 3640;
        // w = 122.5 / 3742.5 = 0.0327321: the site with the larger loss pulls harder
        let w2 = step(2.0, &[res("a", 1.0, 0.5, 10.0), res("b", 3.0, 2.0, 10.0)]);
        assert!((w2 - 122.5 / 3742.5).abs() < 1e-7);
    }

    #[test]
    fn rejects_bad_reports_and_config() {
        let mut s = QFedAvgServer::new(QFedAvgConfig::default(), Box::new(WeightedMean)).unwrap();
        let g = one(0.0);
        assert!(s
            .aggregate_fit(1, &g, &[res("a", 1.0, -1.0, 10.0)], 0)
            .is_err());
        assert!(s
            .aggregate_fit(1, &g, &[res("a", 1.0, 1.0, 0.0)], 0)
            .is_err());
        assert!(s
            .aggregate_fit(1, &g, &[res("a", 1.0, f32::NAN, 1.0)], 0)
            .is_err());
        let mut missing = res("a", 1.0, 1.0, 1.0);
        missing.extras = ParameterSet::new();
        assert!(s.aggregate_fit(1, &g, &[missing], 0).is_err());
        assert!(QFedAvgClient::new(QFedAvgConfig {
            q: -1.0,
            lipschitz: None
        })
        .is_err());
        assert!(QFedAvgClient::new(QFedAvgConfig {
            q: 1.0,
            lipschitz: Some(0.0)
        })
        .is_err());
        let state = s.save_state().unwrap();
        s.load_state(state).unwrap();
    }

    fn site(record_dp: Option<RecordDp>) -> Site {
        let x: Vec<f32> = (0..20).map(|i| i as f32 / 10.0 - 1.0).collect();
        let y: Vec<u32> = x.iter().map(|v| u32::from(*v > 0.0)).collect();
        let data = Dataset::new(1, x, y).unwrap();
        let d = SiteData {
            name: "s".into(),
            train: data.clone(),
            val: data.clone(),
            test: data,
        };
        let train = TrainConfig {
            optimizer: OptimizerConfig::sgd(0.25),
            budget: Budget::Steps(3),
            batch_size: 4,
            loss: LossKind::bce(),
            record_dp,
        };
        Site::new(d, &ModelSpec::logistic(1, 1), train, 5).unwrap()
    }

    #[test]
    fn client_reports_loss_at_the_received_model_and_one_over_lr() {
        let mut s = site(None);
        let zero = s.net.parameters().unwrap().zeros_like();
        let ins = FitIns {
            round: 1,
            params: zero,
            extras: ParameterSet::new(),
        };
        let mut c = QFedAvgClient::new(QFedAvgConfig::default()).unwrap();
        let out = c
            .fit(&mut s, &ins, &mut ChaCha8Rng::seed_from_u64(1))
            .unwrap();
        // at w = 0 every logit is 0, so the BCE is ln 2 on every row
        let f = out.extras.get(LOSS_KEY).unwrap().values[0];
        assert!((f - std::f32::consts::LN_2).abs() < 1e-6);
        assert_eq!(out.extras.get(LIPSCHITZ_KEY).unwrap().values[0], 4.0);
        assert_ne!(out.params, ins.params);
    }

    #[test]
    fn record_dp_is_refused() {
        let dp = RecordDp {
            clip_norm: 1.0,
            noise_multiplier: 1.0,
            sampling_rate: 0.2,
        };
        let mut s = site(Some(dp));
        let ins = FitIns {
            round: 1,
            params: s.net.parameters().unwrap(),
            extras: ParameterSet::new(),
        };
        let mut c = QFedAvgClient::new(QFedAvgConfig::default()).unwrap();
        let err = c
            .fit(&mut s, &ins, &mut ChaCha8Rng::seed_from_u64(1))
            .unwrap_err();
        assert!(matches!(err, EngineError::InvalidConfig(_)));
    }
}
