//! FedDyn (Acar, Zhao, Matas, Mattina, Whatmough & Saligrama 2021, "Federated Learning Based
//! on Dynamic Regularization", ICLR 2021, arXiv:2111.04263).
//!
//! Each site k keeps `g_k`, the gradient of its local loss at the end of its previous round
//! (zero before its first round). In round t, from the received `theta_g`, it minimises
//! `L_k(theta) - <g_k, theta> + (alpha / 2) ||theta - theta_g||^2`,
//! i.e. every gradient of the task loss gets `-g_k + alpha (theta - theta_g)` added (a
//! [`Correction`] by `-g_k` plus a [`Proximal`] pull with `mu = alpha`). After training to
//! `theta_k` the first-order condition of that objective gives the new local gradient:
//! `g_k <- g_k - alpha (theta_k - theta_g)`. Only `theta_k` is sent; `g_k` stays at the site.
//!
//! Server state `h` (zero at the start), with `m` = all sites and `P` the sites that reported:
//! `h <- h - alpha (1/m) sum_{k in P} (theta_k - theta_g)`,
//! `theta_g <- (1/|P|) sum_{k in P} theta_k - h / alpha`.
//!
//! Choices:
//! * The mean over participants is the paper's uniform mean, computed by the study's
//!   [`Aggregator`] on `theta_k - theta_g` with equal weights; the `h` update uses the same
//!   aggregate (`sum_{k in P} = |P| mean`), so a DP or robust aggregator shapes both and no
//!   raw update reaches the server state.
//! * The `g_k` update assumes the local problem is (approximately) solved, as the paper does.
//!   Any local optimiser is accepted; SGD weight decay or AdamW's decoupled decay act as part
//!   of `L_k`. The paper trains with SGD.
//! * Record-level DP: supported. The two added terms are analytic (`g_k` and `theta_g` are
//!   post-processing of earlier privatised steps), so DP-SGD steps privatise the only
//!   record-dependent part and one local step costs one sampled-Gaussian step.
//! * `alpha` default 0.01, the value the paper uses across its experiments (it searches
//!   {0.1, 0.01, 0.001}).
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::aggregate::{average, model_deltas, validate_results};
use super::fedavg::local_fit;
use super::{
    Aggregated, Aggregator, ClientStrategy, FitIns, FitRes, MethodSpec, ServerStrategy, Site,
};
use crate::error::{EngineError, Result};
use crate::params::{ParameterSet, Selector};
use crate::train::{Correction, Proximal};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FedDynConfig {
    /// Dynamic regularisation weight `alpha` (> 0).
    pub alpha: f32,
}

impl Default for FedDynConfig {
    fn default() -> Self {
        Self { alpha: 0.01 }
    }
}

pub struct FedDynServer {
    config: FedDynConfig,
    n_sites: usize,
    aggregator: Box<dyn Aggregator>,
    /// `h`; zeros until the first round fixes its shape.
    h: Option<ParameterSet>,
}

impl FedDynServer {
    pub fn new(
        config: FedDynConfig,
        n_sites: usize,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Self> {
        config.validate()?;
        if n_sites == 0 {
            return Err(EngineError::InvalidConfig(
                "FedDyn needs at least one site".into(),
            ));
        }
        Ok(Self {
            config,
            n_sites,
            aggregator,
            h: None,
        })
    }
}

impl ServerStrategy for FedDynServer {
    fn name(&self) -> &'static str {
        "FedDyn"
    }

    fn aggregate(
        &mut self,
        _round: u64,
        global: &ParameterSet,
        results: &[FitRes],
    ) -> Result<Aggregated> {
        validate_results(global, results, None)?;
        if results.len() > self.n_sites {
            return Err(EngineError::InvalidConfig(format!(
                "{} FedDyn results from a federation of {} sites",
                results.len(),
                self.n_sites
            )));
        }
        let averaged = average(
            self.aggregator.as_mut(),
            global,
            &model_deltas(global, results),
            &vec![1.0; results.len()],
        )?;
        let mean = ParameterSet::from_flat(global, &averaged.update)?;
        let alpha = self.config.alpha;
        // h <- h - alpha (|P| / m) mean_k(theta_k - theta_g)
        let mut h = self.h.clone().unwrap_or_else(|| global.zeros_like());
        h.check_compatible(global)?;
        h.add_scaled(&mean, -alpha * results.len() as f32 / self.n_sites as f32)?;
        // theta_g <- theta_g + mean_k(theta_k - theta_g) - h / alpha
        let mut next = global.clone();
        next.add_scaled(&mean, 1.0)?;
        next.add_scaled(&h, -1.0 / alpha)?;
        next.ensure_finite()?;
        h.ensure_finite()?;
        self.h = Some(h);
        Ok(Aggregated::new(next, &averaged))
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(&self.h)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        self.h = serde_json::from_value(state)?;
        Ok(())
    }
}

/// `g_k - alpha (theta_k - theta_g)`.
pub(crate) fn next_local_gradient(
    g_k: &ParameterSet,
    theta_k: &ParameterSet,
    theta_g: &ParameterSet,
    alpha: f32,
) -> Result<ParameterSet> {
    let mut out = g_k.clone();
    out.add_scaled(&theta_k.sub(theta_g)?, -alpha)?;
    Ok(out)
}

pub struct FedDynClient {
    config: FedDynConfig,
    /// `g_k`; private to the site.
    g_k: Option<ParameterSet>,
}

impl FedDynClient {
    pub fn new(config: FedDynConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { config, g_k: None })
    }
}

impl super::GlobalClient for FedDynClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        let g_k = self.g_k.clone().unwrap_or_else(|| ins.params.zeros_like());
        ins.params.check_compatible(&g_k)?;
        let mut minus_g = g_k.clone();
        minus_g.scale(-1.0);
        let linear = Correction { delta: &minus_g };
        let prox = Proximal {
            center: &ins.params,
            mu: self.config.alpha,
        };
        let res = local_fit(site, ins, &Selector::All, &[&linear, &prox], rng)?;
        let next = next_local_gradient(&g_k, &res.params, &ins.params, self.config.alpha)?;
        next.ensure_finite()?;
        self.g_k = Some(next);
        Ok(res)
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(&self.g_k)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        self.g_k = serde_json::from_value(state)?;
        Ok(())
    }
}

impl MethodSpec for FedDynConfig {
    fn name(&self) -> &'static str {
        "FedDyn"
    }

    fn validate(&self) -> Result<()> {
        if !(self.alpha > 0.0 && self.alpha.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "FedDyn alpha must be > 0 (the server divides by it), got {}",
                self.alpha
            )));
        }
        Ok(())
    }

    fn server(
        &self,
        n_sites: usize,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Box<dyn ServerStrategy>> {
        Ok(Box::new(FedDynServer::new(
            self.clone(),
            n_sites,
            aggregator,
        )?))
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedDynClient::new(self.clone())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::strategy::WeightedMean;
    use crate::train::{LocalObjective, TrainReport};
    use rand::SeedableRng;

    fn one(v: f32) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![1], vec![v]).unwrap();
        p
    }

    fn res(site: &str, n: usize, v: f32) -> FitRes {
        FitRes {
            site: site.into(),
            num_examples: n,
            params: one(v),
            extras: ParameterSet::new(),
            report: TrainReport::default(),
        }
    }

    #[test]
    fn local_gradient_update_by_hand() {
        // g = 0.5, alpha = 0.1, theta_k = 3, theta_g = 1: 0.5 - 0.1 * 2 = 0.3
        let g = next_local_gradient(&one(0.5), &one(3.0), &one(1.0), 0.1).unwrap();
        assert!((g.to_flat()[0] - 0.3).abs() < 1e-7);
    }

    #[test]
    fn local_objective_gradient_by_hand() {
        // task gradient 0.2 at theta = 2, g_k = 0.5, theta_g = 1, alpha = 0.1:
        // 0.2 - 0.5 + 0.1 * (2 - 1) = -0.2
        let minus_g = one(-0.5);
        let centre = one(1.0);
        let terms: [&dyn LocalObjective; 2] = [
            &Correction { delta: &minus_g },
            &Proximal {
                center: &centre,
                mu: 0.1,
            },
        ];
        let mut grad = [0.2f32];
        for t in terms {
            t.add_gradient("w", &[2.0], &mut grad);
        }
        assert!((grad[0] - -0.2).abs() < 1e-7);
    }

    #[test]
    fn server_update_by_hand_over_two_rounds() {
        // m = 4 sites, 2 report; alpha = 0.5; theta_g = 0; theta = {1, 3}:
        // h = 0 - 0.5 * (1 + 3) / 4 = -0.5; theta_g = 2 - (-0.5 / 0.5) = 3.
        // Round 2 from 3 with theta = {3, 5}: h = -0.5 - 0.5 * (0 + 2) / 4 = -0.75;
        // theta_g = 4 + 1.5 = 5.5.
        let mut s =
            FedDynServer::new(FedDynConfig { alpha: 0.5 }, 4, Box::new(WeightedMean)).unwrap();
        let w = s
            .aggregate_fit(1, &one(0.0), &[res("a", 1, 1.0), res("b", 7, 3.0)], 0)
            .unwrap()
            .unwrap()
            .params;
        assert!((w.to_flat()[0] - 3.0).abs() < 1e-6);
        // the state survives serialisation
        let mut t =
            FedDynServer::new(FedDynConfig { alpha: 0.5 }, 4, Box::new(WeightedMean)).unwrap();
        t.load_state(s.save_state().unwrap()).unwrap();
        let w2 = t
            .aggregate_fit(2, &w, &[res("a", 1, 3.0), res("b", 7, 5.0)], 0)
            .unwrap()
            .unwrap()
            .params;
        assert!((w2.to_flat()[0] - 5.5).abs() < 1e-6);
        let h: Option<ParameterSet> = serde_json::from_value(t.save_state().unwrap()).unwrap();
        assert!((h.unwrap().to_flat()[0] - -0.75).abs() < 1e-6);
    }

    #[test]
    fn config_and_update_validation() {
        assert!(FedDynClient::new(FedDynConfig { alpha: 0.0 }).is_err());
        assert!(FedDynClient::new(FedDynConfig {
            alpha: f32::INFINITY
        })
        .is_err());
        assert!(FedDynServer::new(FedDynConfig::default(), 0, Box::new(WeightedMean)).is_err());
        let mut s = FedDynServer::new(FedDynConfig::default(), 1, Box::new(WeightedMean)).unwrap();
        assert!(s
            .aggregate_fit(1, &one(0.0), &[res("a", 1, 1.0), res("b", 1, 1.0)], 0)
            .is_err());
        assert!(s
            .aggregate_fit(1, &one(0.0), &[res("a", 1, f32::NAN)], 0)
            .is_err());
        // a rejected round leaves h untouched
        assert_eq!(s.save_state().unwrap(), serde_json::Value::Null);
    }

    #[test]
    fn client_state_round_trips_and_tracks_the_local_gradient() {
        let (mut site, ins) = super::super::test_site::one_feature(32, 0.1, 5, 8, 3);
        let cfg = FedDynConfig { alpha: 0.1 };
        let mut c = FedDynClient::new(cfg.clone()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let out = c.fit(&mut site, &ins, &mut rng).unwrap();
        // after the first round g_k = -alpha (theta_k - theta_g)
        let mut expected = out.params.sub(&ins.params).unwrap();
        expected.scale(-0.1);
        let g: Option<ParameterSet> = serde_json::from_value(c.save_state().unwrap()).unwrap();
        assert_eq!(g.clone().unwrap(), expected);
        let mut d = FedDynClient::new(cfg).unwrap();
        d.load_state(c.save_state().unwrap()).unwrap();
        assert_eq!(d.save_state().unwrap(), c.save_state().unwrap());
    }
}
