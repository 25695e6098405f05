//! FedLESAM: federated SAM with a locally estimated global perturbation (Fan et al. 2024,
//! "Locally Estimated Global Perturbations are Better than Local Perturbations for Federated
//! Sharpness-aware Minimization", ICML 2024, arXiv:2405.18890).
//!
//! FedSAM perturbs along the site's own batch gradient; FedLESAM instead takes the direction
//! of the *global* loss ascent, estimated without any extra pass from the last change of the
//! global model the site has seen:
//!
//! ```text
//! e  = rho (w_prev - w_g) / ||w_prev - w_g||   (fixed for the whole round)
//! every local step on a mini-batch B at the site's current w:
//! g' = ∇ L(w + e; B)                             (one forward/backward pass)
//! w  = optimiser(w, g')                          (from the unperturbed w)
//! ```
//!
//! where `w_g` is the global model received this round and `w_prev` the one the site received
//! at its previous participation (kept in the client state, never sent). The server is
//! FedAvg through the configured [`Aggregator`](super::Aggregator). Choices:
//! * the site's first participation has no `w_prev`: e = 0, i.e. a plain local step (the
//!   paper's algorithm starts from a previous global model; we do not invent one);
//! * `w_prev = w_g` (no global change) also gives e = 0;
//! * the reported training loss is the task loss at the perturbed point `w + e` (the only
//!   pass taken).
//!
//! Record-level DP is refused: the engine's DP-SGD step applies its update at the point where
//! it takes the per-example gradients, and here the two points differ (w + e vs w).
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::fedsam::{gradient_at, scaled_to_radius, sequential_fit, shifted};
use super::methods::check_train;
use super::{ClientStrategy, FitIns, FitRes, MethodSpec, Site, Support};
use crate::error::{EngineError, Result};
use crate::params::ParameterSet;
use crate::train::apply_gradient;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FedLesamConfig {
    /// Radius `rho` of the perturbation (default 0.05, as for FedSAM).
    pub rho: f32,
}

impl Default for FedLesamConfig {
    fn default() -> Self {
        Self { rho: 0.05 }
    }
}

/// The round's perturbation `rho (prev - global) / ||prev - global||`; zero without `prev`.
pub(crate) fn global_perturbation(
    prev: Option<&ParameterSet>,
    global: &ParameterSet,
    rho: f32,
) -> Result<ParameterSet> {
    match prev {
        None => Ok(global.zeros_like()),
        Some(prev) => Ok(scaled_to_radius(&prev.sub(global)?, rho)),
    }
}

pub struct FedLesamClient {
    config: FedLesamConfig,
    /// Global model received at this site's previous participation.
    prev_global: Option<ParameterSet>,
}

impl FedLesamClient {
    pub fn new(config: FedLesamConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            prev_global: None,
        })
    }
}

impl super::GlobalClient for FedLesamClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        let e = global_perturbation(self.prev_global.as_ref(), &ins.params, self.config.rho)?;
        let res = sequential_fit(site, ins, rng, &mut |net, opt, loss, batcher, rng| {
            let (x, y) = batcher.next_batch(rng)?;
            let w = net.parameters()?;
            let (task, g) = gradient_at(net, &shifted(&w, &e, 1.0)?, loss, &x, y, rng)?;
            net.load(&w)?;
            apply_gradient(net, opt, &g, &[])?;
            Ok(task)
        })?;
        self.prev_global = Some(ins.params.clone());
        Ok(res)
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(&self.prev_global)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        let prev: Option<ParameterSet> = serde_json::from_value(state)?;
        if let Some(p) = &prev {
            p.ensure_finite()?;
        }
        self.prev_global = prev;
        Ok(())
    }
}

impl MethodSpec for FedLesamConfig {
    fn name(&self) -> &'static str {
        "FedLESAM"
    }

    fn validate(&self) -> Result<()> {
        if !(self.rho >= 0.0 && self.rho.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "FedLESAM rho must be finite and >= 0, got {}",
                self.rho
            )));
        }
        Ok(())
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedLesamClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No(
            "DP-SGD updates at the point of its per-example gradients, FedLESAM at another one",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two(a: f32, b: f32) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![2], vec![a, b]).unwrap();
        p
    }

    #[test]
    fn perturbation_follows_the_last_global_change_by_hand() {
        // prev = (1, 5), global = (4, 1): prev - global = (-3, 4), norm 5, rho 0.1
        // -> e = (-0.06, 0.08)
        let e = global_perturbation(Some(&two(1.0, 5.0)), &two(4.0, 1.0), 0.1).unwrap();
        let v = &e.get("w").unwrap().values;
        assert!(
            (v[0] + 0.06).abs() < 1e-7 && (v[1] - 0.08).abs() < 1e-7,
            "{v:?}"
        );
        // first participation and an unchanged global model: no perturbation
        let none = global_perturbation(None, &two(4.0, 1.0), 0.1).unwrap();
        assert_eq!(none, two(0.0, 0.0));
        let same = global_perturbation(Some(&two(4.0, 1.0)), &two(4.0, 1.0), 0.1).unwrap();
        assert_eq!(same, two(0.0, 0.0));
        // a previous model of another shape is an error, not a silent zero
        let mut other = ParameterSet::new();
        other.insert("v", vec![1], vec![0.0]).unwrap();
        assert!(global_perturbation(Some(&other), &two(4.0, 1.0), 0.1).is_err());
    }

    #[test]
    fn state_round_trips_and_config_is_validated() {
        assert!(FedLesamClient::new(FedLesamConfig { rho: -1.0 }).is_err());
        let mut a = FedLesamClient::new(FedLesamConfig::default()).unwrap();
        a.prev_global = Some(two(1.0, 2.0));
        let mut b = FedLesamClient::new(FedLesamConfig::default()).unwrap();
        b.load_state(a.save_state().unwrap()).unwrap();
        assert_eq!(b.prev_global, a.prev_global);
        let mut c = FedLesamClient::new(FedLesamConfig::default()).unwrap();
        c.load_state(serde_json::Value::Null).unwrap();
        assert_eq!(c.prev_global, None);
    }
}
