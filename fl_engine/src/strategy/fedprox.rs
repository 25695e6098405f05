//! FedProx (Li et al. 2020, arXiv:1812.06127).
//!
//! Client: minimise `L_k(w) + (mu / 2) ||w - w_global||^2`, i.e. add `mu (w - w_global)` to
//! every gradient of a shared parameter. Server: FedAvg. `mu = 0` is FedAvg exactly.
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::fedavg::local_fit;
use super::{ClientStrategy, FitIns, FitRes, MethodSpec, Site};
use crate::error::{EngineError, Result};
use crate::params::Selector;
use crate::train::Proximal;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FedProxConfig {
    /// Proximal weight `mu` (0.01 is the usual starting point).
    pub mu: f32,
}

impl Default for FedProxConfig {
    fn default() -> Self {
        Self { mu: 0.01 }
    }
}

pub struct FedProxClient {
    config: FedProxConfig,
}

impl FedProxClient {
    pub fn new(config: FedProxConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { config })
    }
}

impl super::GlobalClient for FedProxClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        // the centre is the global model as received, fixed for the whole round
        let prox = Proximal {
            center: &ins.params,
            mu: self.config.mu,
        };
        local_fit(site, ins, &Selector::All, &[&prox], rng)
    }
}

impl MethodSpec for FedProxConfig {
    fn name(&self) -> &'static str {
        "FedProx"
    }

    fn validate(&self) -> Result<()> {
        if !(self.mu >= 0.0 && self.mu.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "FedProx mu must be >= 0, got {}",
                self.mu
            )));
        }
        Ok(())
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedProxClient::new(self.clone())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParameterSet;
    use crate::train::LocalObjective;

    #[test]
    fn proximal_gradient_by_hand() {
        // d/dw (mu/2)(w - c)^2 = mu (w - c): mu 0.5, w 3, c 1 -> 1.0 added to the gradient
        let mut center = ParameterSet::new();
        center.insert("w", vec![1], vec![1.0]).unwrap();
        let prox = Proximal {
            center: &center,
            mu: 0.5,
        };
        let mut g = [0.25f32];
        prox.add_gradient("w", &[3.0], &mut g);
        assert_eq!(g, [1.25]);
        // parameters the centre does not name (a local head) are untouched
        let mut h = [0.25f32];
        prox.add_gradient("head.w", &[3.0], &mut h);
        assert_eq!(h, [0.25]);
    }

    #[test]
    fn negative_mu_rejected() {
        assert!(FedProxClient::new(FedProxConfig { mu: -1.0 }).is_err());
    }
}
