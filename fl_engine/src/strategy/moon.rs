//! MOON, model-contrastive federated learning (Li, He and Song 2021, arXiv:2103.16257).
//!
//! A global method: the whole model is sent and averaged with FedAvg (through the
//! [`Aggregator`](super::Aggregator)). Each site minimises, on every mini-batch,
//!
//! ```text
//! L = CE(y, logits) + mu * l_con
//! l_con = -log( exp(sim(z, z_glob)/T) / (exp(sim(z, z_glob)/T) + exp(sim(z, z_prev)/T)) )
//!       = softplus( (sim(z, z_prev) - sim(z, z_glob)) / T )          (per example, batch mean)
//! ```
//!
//! with `sim` the cosine similarity, `z` the representation of the model being trained,
//! `z_glob` that of the global model received this round (frozen) and `z_prev` that of the
//! site's own model at the end of its previous round of local training (frozen). `CE` is the
//! configured task loss. The frozen models run in evaluation mode (no dropout) and their
//! representations are constants (no gradient flows into them).
//!
//! Choices:
//! * **Representation.** `"global"` (extractor output) of a [`ModelSpec::HeadNet`], or
//!   `"hidden"` (last hidden layer) of an [`ModelSpec::Mlp`] with hidden layers and an
//!   output layer. The paper puts a projection head before the output layer and uses its
//!   output; these models have no projection head, so the last hidden representation is used.
//! * **First round.** A site that has no previous local model yet (its first round) trains on
//!   the task loss alone. The authors' code does the same in effect: with an empty pool of
//!   previous models the only logit is the positive one and the contrastive term is 0.
//! * **Defaults.** mu = 1 (the paper uses 1 or 5 depending on the data set), T = 0.5.
//! * **Cosine similarity.** `a.b / (sqrt(|a|^2 + 1e-12) sqrt(|b|^2 + 1e-12))`: the small
//!   constant keeps the gradient finite when a ReLU representation is all zeros (its
//!   similarity is then 0), where PyTorch clamps the norm product instead.
//!
//! The previous local model is the site's private state (serialised by `save_state`). MOON
//! is not personalised: the site evaluates the global model.
//!
//! Record-level DP is refused: the contrastive term is a loss on the forward pass
//! ([`BatchObjective`]) and the engine's DP-SGD step clips per-example gradients of the task
//! loss only, so it would silently drop the term or, worse, leave it unprivatised.
use candle_core::Tensor;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::methods::check_train;
use super::{ClientStrategy, FitIns, FitRes, MethodSpec, Site, Support};
use crate::error::{EngineError, Result};
use crate::model::{ModelOutput, ModelSpec, Net};
use crate::params::ParameterSet;
use crate::train::{steps_in, train_step_with, BatchObjective, Batcher, LossKind, TrainReport};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct MoonConfig {
    /// Weight of the model-contrastive term.
    pub mu: f32,
    /// Temperature of the contrastive term.
    pub temperature: f32,
}

impl Default for MoonConfig {
    fn default() -> Self {
        Self {
            mu: 1.0,
            temperature: 0.5,
        }
    }
}

pub(crate) fn check_temperature(method: &str, t: f32) -> Result<()> {
    if t > 0.0 && t.is_finite() {
        Ok(())
    } else {
        Err(EngineError::InvalidConfig(format!(
            "{method} temperature must be finite and > 0, got {t}"
        )))
    }
}

/// Why the contrastive methods (MOON, PerFCL) refuse record-level DP.
pub(crate) const CONTRASTIVE_NOT_PRIVATE: &str = "its contrastive term is a loss on the forward \
     pass, and the DP-SGD step only clips and noises per-example gradients of the task loss";

/// Row-wise cosine similarity of `[b, d]` tensors, `[b]`.
pub(crate) fn cosine(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    const EPS: f64 = 1e-12;
    let dot = a.mul(b)?.sum(1)?;
    let na = (a.sqr()?.sum(1)? + EPS)?.sqrt()?;
    let nb = (b.sqr()?.sum(1)? + EPS)?.sqrt()?;
    Ok(dot.div(&na.mul(&nb)?)?)
}

/// Batch mean of `-log(e^{sim(z,pos)/T} / (e^{sim(z,pos)/T} + e^{sim(z,neg)/T}))`, computed as
/// the stable softplus of `(sim(z,neg) - sim(z,pos)) / T`. `pos` and `neg` are used as given
/// (detach them to keep gradients out).
pub(crate) fn contrastive_loss(z: &Tensor, pos: &Tensor, neg: &Tensor, t: f32) -> Result<Tensor> {
    if z.dims() != pos.dims() || z.dims() != neg.dims() || z.rank() != 2 {
        return Err(EngineError::InvalidConfig(format!(
            "contrastive representations disagree in shape: {:?}, {:?}, {:?}",
            z.dims(),
            pos.dims(),
            neg.dims()
        )));
    }
    let d = ((cosine(z, neg)? - cosine(z, pos)?)? / t as f64)?;
    // softplus(d) = max(d, 0) + log(1 + exp(-|d|))
    let sp = (d.relu()? + (d.abs()?.neg()?.exp()? + 1.0)?.log()?)?;
    Ok(sp.mean_all()?)
}

pub(crate) fn feature<'a>(out: &'a ModelOutput, name: &str) -> Result<&'a Tensor> {
    out.feature(name)
        .ok_or_else(|| EngineError::InvalidConfig(format!("the model has no `{name}` features")))
}

/// Name of the representation MOON contrasts for this model.
fn representation(spec: &ModelSpec) -> Result<&'static str> {
    match spec {
        ModelSpec::HeadNet { .. } | ModelSpec::BackboneHeadNet { .. } => Ok("global"),
        ModelSpec::BackboneNet { .. } => Ok("hidden"),
        ModelSpec::Mlp(c) if !c.hidden.is_empty() && c.outputs > 0 => Ok("hidden"),
        other => Err(EngineError::InvalidConfig(format!(
            "MOON needs a representation: a HeadNet or an MLP with hidden layers, got {other:?}"
        ))),
    }
}

struct MoonObjective<'a> {
    feature: &'static str,
    global: &'a Net,
    prev: &'a Net,
    mu: f32,
    temperature: f32,
}

impl BatchObjective for MoonObjective<'_> {
    fn loss(&self, out: &ModelOutput, x: &Tensor, y: &[u32], task: &LossKind) -> Result<Tensor> {
        let ce = task.compute(&out.logits, y)?;
        let z = feature(out, self.feature)?;
        let zg = feature(&self.global.forward_features(x, None)?, self.feature)?.detach();
        let zp = feature(&self.prev.forward_features(x, None)?, self.feature)?.detach();
        let con = contrastive_loss(z, &zg, &zp, self.temperature)?;
        Ok((ce + (con * self.mu as f64)?)?)
    }
}

pub struct MoonClient {
    config: MoonConfig,
    /// The site's model at the end of its previous local training.
    prev: Option<ParameterSet>,
}

impl MoonClient {
    pub fn new(config: MoonConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { config, prev: None })
    }
}

impl super::GlobalClient for MoonClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        if site.data.train.is_empty() {
            return Err(EngineError::ZeroSamples(site.name().to_string()));
        }
        let feature = representation(site.net.spec())?;
        site.train.validate()?;
        site.begin_round()?;
        site.net.load(&ins.params)?;
        // frozen copy of the received global model (MOON shares every parameter)
        let global = site.net.duplicate()?;
        let prev = match &self.prev {
            Some(p) => Some(Net::with_parameters(site.net.spec(), p)?),
            None => None,
        };
        let objective = prev.as_ref().map(|prev| MoonObjective {
            feature,
            global: &global,
            prev,
            mu: self.config.mu,
            temperature: self.config.temperature,
        });
        let cfg = &site.train;
        let steps = steps_in(cfg.budget, site.data.train.len(), cfg.batch_size);
        let mut batcher = Batcher::new(&site.data.train, cfg.batch_size)?;
        let mut total = 0.0f64;
        for _ in 0..steps {
            let (x, y) = batcher.next_batch(rng)?;
            total += train_step_with(
                &site.net,
                &mut site.optimizer,
                &cfg.loss,
                &x,
                y,
                objective.as_ref().map(|o| o as &dyn BatchObjective),
                &[],
                rng,
            )? as f64;
        }
        let params = site.net.parameters()?;
        self.prev = Some(params.clone());
        Ok(FitRes {
            site: site.name().to_string(),
            num_examples: site.data.train.len(),
            params,
            extras: ParameterSet::new(),
            report: TrainReport {
                steps,
                mean_loss: if steps > 0 { total / steps as f64 } else { 0.0 },
            },
        })
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(&self.prev)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        let prev: Option<ParameterSet> = serde_json::from_value(state)?;
        if let Some(p) = &prev {
            p.ensure_finite()?;
        }
        self.prev = prev;
        Ok(())
    }
}

impl MethodSpec for MoonConfig {
    fn name(&self) -> &'static str {
        "MOON"
    }

    fn validate(&self) -> Result<()> {
        if !(self.mu >= 0.0 && self.mu.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "MOON mu must be finite and >= 0, got {}",
                self.mu
            )));
        }
        check_temperature("MOON", self.temperature)
    }

    fn check_model(&self, spec: &ModelSpec) -> Result<()> {
        self.validate()?;
        representation(spec).map(|_| ())
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(MoonClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No(CONTRASTIVE_NOT_PRIVATE)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::data::{Dataset, SiteData};
    use crate::model::MlpConfig;
    use crate::params::Selector;
    use crate::strategy::FedAvgClient;
    use crate::train::{Budget, OptimizerConfig, RecordDp, TrainConfig};
    use candle_core::Device;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn contrastive_loss_by_hand() {
        // T = 0.5.  Row 1: z = (1,0), pos = (1,0), neg = (0,1): sims 1 and 0,
        //   l = log(1 + e^{(0 - 1)/0.5}) = log(1 + e^-2) = 0.12692801
        // Row 2: z = (1,1), pos = (1,0), neg = (1,1): sims 1/sqrt2 and 1,
        //   l = log(1 + e^{(1 - 0.70710678)/0.5}) = log(1 + e^0.58578644) = 1.02833402
        // mean = 0.57763101
        let t = |v: &[f32]| Tensor::from_slice(v, (2, 2), &Device::Cpu).unwrap();
        let z = t(&[1.0, 0.0, 1.0, 1.0]);
        let pos = t(&[1.0, 0.0, 1.0, 0.0]);
        let neg = t(&[0.0, 1.0, 1.0, 1.0]);
        let l = contrastive_loss(&z, &pos, &neg, 0.5)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!((l - 0.577_631).abs() < 1e-5, "{l}");
        // an all-zero representation has similarity 0 and a finite gradient
        let zero = candle_core::Var::from_tensor(&t(&[0.0; 4])).unwrap();
        let l0 = contrastive_loss(zero.as_tensor(), &pos, &neg, 0.5).unwrap();
        assert!((l0.to_scalar::<f32>().unwrap() - 2f32.ln()).abs() < 1e-6);
        let g = crate::model::backward(&l0).unwrap();
        let g = g.get(zero.as_tensor()).unwrap().flatten_all().unwrap();
        assert!(g.to_vec1::<f32>().unwrap().iter().all(|v| v.is_finite()));
        assert!(contrastive_loss(&z, &pos, &t(&[0.0; 4]).narrow(1, 0, 1).unwrap(), 0.5).is_err());
    }

    pub(crate) fn binary_site(spec: &ModelSpec, d: usize, record_dp: bool, seed: u64) -> Site {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut rows = |n: usize| {
            let x: Vec<f32> = (0..n * d).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            let y = x.chunks_exact(d).map(|r| u32::from(r[0] > 0.0)).collect();
            Dataset::new(d, x, y).unwrap()
        };
        let data = SiteData {
            name: "a".into(),
            train: rows(24),
            val: rows(8),
            test: rows(8),
        };
        let train = TrainConfig {
            optimizer: OptimizerConfig::adamw(0.01),
            budget: Budget::Steps(4),
            batch_size: 8,
            loss: LossKind::bce(),
            record_dp: record_dp.then_some(RecordDp {
                clip_norm: 1.0,
                noise_multiplier: 1.0,
                sampling_rate: 0.2,
            }),
        };
        Site::new(data, spec, train, seed).unwrap()
    }

    fn mlp() -> ModelSpec {
        ModelSpec::Mlp(MlpConfig {
            inputs: 3,
            hidden: vec![4],
            outputs: 1,
            dropout: 0.0,
        })
    }

    fn ins(site: &Site, round: u64) -> FitIns {
        FitIns {
            round,
            params: site.net.parameters().unwrap(),
            extras: ParameterSet::new(),
        }
    }

    #[test]
    fn first_round_is_fedavg_then_the_term_acts_and_state_round_trips() {
        let mut a = binary_site(&mlp(), 3, false, 5);
        let mut b = binary_site(&mlp(), 3, false, 5);
        let start = ins(&a, 1);
        let mut moon = MoonClient::new(MoonConfig::default()).unwrap();
        let mut avg = FedAvgClient::new(Selector::All);
        let ra = moon
            .fit(&mut a, &start, &mut ChaCha8Rng::seed_from_u64(9))
            .unwrap();
        let rb = avg
            .fit(&mut b, &start, &mut ChaCha8Rng::seed_from_u64(9))
            .unwrap();
        assert_eq!(ra.params, rb.params, "no previous model: plain task loss");
        assert_eq!(moon.prev.as_ref(), Some(&ra.params));

        // Round 2, the global model being the round-1 start (a global equal to the previous
        // local model would make z_glob = z_prev, where the term is constant): with mu > 0 the
        // update differs from mu = 0.
        let mut state_copy = MoonClient::new(MoonConfig::default()).unwrap();
        state_copy.load_state(moon.save_state().unwrap()).unwrap();
        assert_eq!(state_copy.prev, moon.prev);
        let mut no_term = MoonClient::new(MoonConfig {
            mu: 0.0,
            ..Default::default()
        })
        .unwrap();
        no_term.load_state(moon.save_state().unwrap()).unwrap();
        let next = FitIns {
            round: 2,
            params: start.params.clone(),
            extras: ParameterSet::new(),
        };
        let mut c = binary_site(&mlp(), 3, false, 5);
        let mut d = binary_site(&mlp(), 3, false, 5);
        let mut e = binary_site(&mlp(), 3, false, 5);
        let r1 = moon
            .fit(&mut c, &next, &mut ChaCha8Rng::seed_from_u64(10))
            .unwrap();
        let r2 = state_copy
            .fit(&mut d, &next, &mut ChaCha8Rng::seed_from_u64(10))
            .unwrap();
        let r0 = no_term
            .fit(&mut e, &next, &mut ChaCha8Rng::seed_from_u64(10))
            .unwrap();
        assert_eq!(r1.params, r2.params, "restored state trains identically");
        assert_ne!(
            r1.params, r0.params,
            "the contrastive term changes the update"
        );
    }

    #[test]
    fn config_model_and_record_dp_are_checked() {
        assert!(MoonConfig::default().check_model(&mlp()).is_ok());
        let headnet = ModelSpec::HeadNet {
            body: MlpConfig {
                inputs: 3,
                hidden: vec![4],
                outputs: 0,
                dropout: 0.0,
            },
            outputs: 1,
        };
        assert!(MoonConfig::default().check_model(&headnet).is_ok());
        assert!(MoonConfig::default()
            .check_model(&ModelSpec::logistic(3, 1))
            .is_err());
        for bad in [
            MoonConfig {
                mu: -1.0,
                ..Default::default()
            },
            MoonConfig {
                temperature: 0.0,
                ..Default::default()
            },
        ] {
            assert!(matches!(
                MoonClient::new(bad),
                Err(EngineError::InvalidConfig(_))
            ));
        }
        let mut site = binary_site(&mlp(), 3, true, 1);
        let start = ins(&site, 1);
        let mut moon = MoonClient::new(MoonConfig::default()).unwrap();
        assert!(matches!(
            moon.fit(&mut site, &start, &mut ChaCha8Rng::seed_from_u64(1)),
            Err(EngineError::InvalidConfig(_))
        ));
    }
}
