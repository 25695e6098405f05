//! Ditto (Li et al. 2021, arXiv:2012.04221).
//!
//! Each site trains the global model w exactly as FedAvg and, on the same mini-batches, a
//! personal model v on `L_k(v) + (lambda / 2) ||v - w_t||^2`, where w_t is the global model
//! received this round (two backward passes per step, as in FL4Health). Only w is sent; v
//! and its optimiser stay at the site and v is what the site evaluates. v starts from the
//! first global model the site receives.
//!
//! Under record-level DP ([`TrainConfig::record_dp`](crate::train::TrainConfig)) both models
//! train with DP-SGD, and each step draws *two independent* Poisson batches, one per model.
//! A round then costs `2 x steps` sampled-Gaussian steps at the configured (q, σ), which is what
//! [`dp_steps_per_round`](super::dp_steps_per_round) returns. Sharing one batch would not be
//! covered by that count: when a record is in the shared batch it moves both gradients at once,
//! so the pair is one sampled Gaussian with sensitivity √2·C (multiplier σ/√2), whose RDP
//! exceeds that of two independent steps whenever q < 1. The personal model is accounted
//! although it never leaves the site, because its predictions or an export could.
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, FitIns, FitRes, MethodSpec, Site};
use crate::error::{EngineError, Result};
use crate::model::{ModelSpec, Net};
use crate::params::ParameterSet;
use crate::train::{
    dp_train_step, missing_noise, steps_in, train_step, Batcher, Optimizer, PoissonBatch, Proximal,
    TrainReport,
};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct DittoConfig {
    /// Pull of the personal model towards the global one.
    pub lambda: f32,
}

impl Default for DittoConfig {
    fn default() -> Self {
        Self { lambda: 0.01 }
    }
}

struct Personal {
    net: Net,
    optimizer: Optimizer,
}

#[derive(Serialize, Deserialize)]
struct PersonalState {
    spec: ModelSpec,
    params: ParameterSet,
    optimizer: Optimizer,
}

pub struct DittoClient {
    config: DittoConfig,
    personal: Option<Personal>,
}

impl DittoClient {
    pub fn new(config: DittoConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            personal: None,
        })
    }
}

impl ClientStrategy for DittoClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        if site.data.train.is_empty() {
            return Err(EngineError::ZeroSamples(site.name().to_string()));
        }
        site.begin_round()?;
        site.net.load(&ins.params)?;
        if self.personal.is_none() {
            let net = site.net.duplicate()?;
            self.personal = Some(Personal {
                net,
                optimizer: Optimizer::new(site.train.optimizer.clone())?,
            });
        }
        let personal = self.personal.as_mut().ok_or(EngineError::NoUpdates)?;
        if site.reset_optimizer {
            personal.optimizer = Optimizer::new(site.train.optimizer.clone())?;
        }
        let cfg = &site.train;
        cfg.validate()?;
        let steps = steps_in(cfg.budget, site.data.train.len(), cfg.batch_size);
        let prox = Proximal {
            center: &ins.params,
            mu: self.config.lambda,
        };
        let mut total = 0.0f64;
        if let Some(dp) = &cfg.record_dp {
            // DP-SGD for both models on independent Poisson batches; losses are not reported.
            let noise = site.noise.as_mut().ok_or_else(missing_noise)?;
            let data = &site.data.train;
            for _ in 0..steps {
                let batch = PoissonBatch::draw(data, dp, noise)?;
                dp_train_step(
                    &site.net,
                    &mut site.optimizer,
                    &cfg.loss,
                    &batch,
                    &[],
                    rng,
                    noise,
                )?;
                let batch = PoissonBatch::draw(data, dp, noise)?;
                dp_train_step(
                    &personal.net,
                    &mut personal.optimizer,
                    &cfg.loss,
                    &batch,
                    &[&prox],
                    rng,
                    noise,
                )?;
            }
        } else {
            let mut batcher = Batcher::new(&site.data.train, cfg.batch_size)?;
            for _ in 0..steps {
                let (x, y) = batcher.next_batch(rng)?;
                total +=
                    train_step(&site.net, &mut site.optimizer, &cfg.loss, &x, y, &[], rng)? as f64;
                train_step(
                    &personal.net,
                    &mut personal.optimizer,
                    &cfg.loss,
                    &x,
                    y,
                    &[&prox],
                    rng,
                )?;
            }
        }
        Ok(FitRes {
            site: site.name().to_string(),
            num_examples: site.data.train.len(),
            params: site.net.parameters()?,
            extras: ParameterSet::new(),
            report: TrainReport {
                steps,
                mean_loss: if steps > 0 { total / steps as f64 } else { 0.0 },
            },
        })
    }

    fn evaluation_net<'a>(
        &'a mut self,
        site: &'a mut Site,
        global: &ParameterSet,
    ) -> Result<&'a Net> {
        site.net.load(global)?;
        Ok(match &self.personal {
            Some(p) => &p.net,
            // before the first round the personal model would be the global one
            None => &site.net,
        })
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        let state = match &self.personal {
            None => None,
            Some(p) => Some(PersonalState {
                spec: p.net.spec().clone(),
                params: p.net.parameters()?,
                optimizer: p.optimizer.clone(),
            }),
        };
        Ok(serde_json::to_value(state)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        let state: Option<PersonalState> = serde_json::from_value(state)?;
        self.personal = match state {
            None => None,
            Some(s) => Some(Personal {
                net: Net::with_parameters(&s.spec, &s.params)?,
                optimizer: s.optimizer,
            }),
        };
        Ok(())
    }
}

impl MethodSpec for DittoConfig {
    fn name(&self) -> &'static str {
        "Ditto"
    }

    fn validate(&self) -> Result<()> {
        if !(self.lambda >= 0.0 && self.lambda.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "Ditto lambda must be >= 0, got {}",
                self.lambda
            )));
        }
        Ok(())
    }

    fn personalised(&self) -> bool {
        true
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(DittoClient::new(self.clone())?))
    }

    /// Two independent Poisson batches per step (see the module documentation).
    fn dp_steps_per_local_step(&self) -> u64 {
        2
    }
}
