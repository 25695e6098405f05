//! PerFCL, personalised federated contrastive learning (Zhang, Xu, Wei, Wang, Li and Shang,
//! "Doubly contrastive representation learning for federated image recognition", Pattern
//! Recognition 2023; no arXiv version).
//!
//! The model is a [`ModelSpec::Fenda`]: a shared extractor under `global.` (sent and
//! FedAvg-averaged through the [`Aggregator`](super::Aggregator)), a personal extractor under
//! `local.` and a head under `head.` on their concatenation (both never leave the site), as in
//! FENDA-FL. On every mini-batch the site minimises
//!
//! ```text
//! L = task(y, head([z_s; z_p])) + mu * l(z_s, z_g, zhat_s) + gamma * l(z_p, zhat_p, z_g)
//! l(z, pos, neg) = -log( e^{sim(z,pos)/T} / (e^{sim(z,pos)/T} + e^{sim(z,neg)/T}) )  (batch mean)
//! ```
//!
//! with `sim` the cosine similarity and
//! * `z_s`, `z_p`: features of the shared and personal extractors being trained;
//! * `z_g`: features of the shared extractor as aggregated by the server and received at the
//!   start of this round (a frozen copy);
//! * `zhat_s`, `zhat_p`: features of the site's shared and personal extractors at the end of
//!   its previous round of local training (frozen copies).
//!
//! The first term keeps the shared features close to the federated ones and away from the
//! site's previous drift; the second keeps the personal features close to their previous
//! values and away from the federated ones, so the two extractors learn different things.
//!
//! Choices:
//! * **Negatives of the personal term** are the received global features `z_g` (frozen), as
//!   in the paper and FL4Health, not the shared extractor's current output; all frozen
//!   features are constants, so each term only moves its own extractor (and nothing moves the
//!   frozen copies).
//! * **First round.** A site without previous extractors (its first round) trains on the task
//!   loss alone, as FL4Health does.
//! * **Defaults** from FL4Health: mu = gamma = 1, temperature 0.5 for both terms (one
//!   temperature here).
//! * The frozen extractors run in evaluation mode (no dropout); cosine similarity and the
//!   stable form of the loss are MOON's (see [`super::moon`]).
//! * The personal term compares personal and shared features directly, so both extractors
//!   must have the same output width ([`MethodSpec::check_model`] refuses otherwise).
//!
//! The previous extractors are the site's private state (`save_state`); the site evaluates its
//! full FENDA model. Record-level DP is refused (the contrastive terms are losses on the
//! forward pass, which the DP-SGD step does not privatise).
use candle_core::Tensor;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::methods::check_train;
use super::moon::{check_temperature, contrastive_loss, feature, CONTRASTIVE_NOT_PRIVATE};
use super::{ClientStrategy, FitIns, FitRes, MethodSpec, Site, Support};
use crate::error::{EngineError, Result};
use crate::model::{ModelOutput, ModelSpec, Net};
use crate::params::{ParameterSet, Selector};
use crate::train::{steps_in, train_step_with, BatchObjective, Batcher, LossKind, TrainReport};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct PerFclConfig {
    /// Weight of the shared-extractor term.
    pub mu: f32,
    /// Weight of the personal-extractor term.
    pub gamma: f32,
    /// Temperature of both contrastive terms.
    pub temperature: f32,
}

impl Default for PerFclConfig {
    fn default() -> Self {
        Self {
            mu: 1.0,
            gamma: 1.0,
            temperature: 0.5,
        }
    }
}

fn check_model(spec: &ModelSpec) -> Result<()> {
    match spec.fenda_widths() {
        Some((g, l)) => {
            if g == l {
                Ok(())
            } else {
                Err(EngineError::InvalidConfig(format!(
                    "PerFCL compares shared and personal features: both extractors need the same \
                     output width, got {g} and {l}"
                )))
            }
        }
        None => Err(EngineError::InvalidConfig(format!(
            "PerFCL needs a Fenda model (shared + personal extractor, head), got {spec:?}"
        ))),
    }
}

/// The task loss plus both contrastive terms.
pub(crate) struct PerFclObjective<'a> {
    /// The received (aggregated) model, for `z_g`.
    pub initial: &'a Net,
    /// The site's model at the end of its previous round, for `zhat_s`, `zhat_p`.
    pub previous: &'a Net,
    pub mu: f32,
    pub gamma: f32,
    pub temperature: f32,
}

impl PerFclObjective<'_> {
    /// `(l_shared, l_personal)` for this batch.
    pub(crate) fn terms(&self, out: &ModelOutput, x: &Tensor) -> Result<(Tensor, Tensor)> {
        let zs = feature(out, "global")?;
        let zp = feature(out, "local")?;
        let zg = feature(&self.initial.forward_features(x, None)?, "global")?.detach();
        let old = self.previous.forward_features(x, None)?;
        let zs_hat = feature(&old, "global")?.detach();
        let zp_hat = feature(&old, "local")?.detach();
        Ok((
            contrastive_loss(zs, &zg, &zs_hat, self.temperature)?,
            contrastive_loss(zp, &zp_hat, &zg, self.temperature)?,
        ))
    }
}

impl BatchObjective for PerFclObjective<'_> {
    fn loss(&self, out: &ModelOutput, x: &Tensor, y: &[u32], task: &LossKind) -> Result<Tensor> {
        let task = task.compute(&out.logits, y)?;
        let (shared, personal) = self.terms(out, x)?;
        Ok(((task + (shared * self.mu as f64)?)? + (personal * self.gamma as f64)?)?)
    }
}

pub struct PerFclClient {
    config: PerFclConfig,
    /// The site's whole model at the end of its previous local training.
    previous: Option<ParameterSet>,
}

impl PerFclClient {
    pub fn new(config: PerFclConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            previous: None,
        })
    }
}

impl super::GlobalClient for PerFclClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        if site.data.train.is_empty() {
            return Err(EngineError::ZeroSamples(site.name().to_string()));
        }
        check_model(site.net.spec())?;
        site.train.validate()?;
        site.begin_round()?;
        site.net.load(&ins.params)?;
        let (initial, previous) = match &self.previous {
            Some(p) => (
                Some(site.net.duplicate()?),
                Some(Net::with_parameters(site.net.spec(), p)?),
            ),
            None => (None, None),
        };
        let objective = match (&initial, &previous) {
            (Some(initial), Some(previous)) => Some(PerFclObjective {
                initial,
                previous,
                mu: self.config.mu,
                gamma: self.config.gamma,
                temperature: self.config.temperature,
            }),
            _ => None,
        };
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
        let shared = params.select(&Selector::prefix("global."));
        self.previous = Some(params);
        Ok(FitRes {
            site: site.name().to_string(),
            num_examples: site.data.train.len(),
            params: shared,
            extras: ParameterSet::new(),
            report: TrainReport {
                steps,
                mean_loss: if steps > 0 { total / steps as f64 } else { 0.0 },
            },
        })
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(&self.previous)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        let previous: Option<ParameterSet> = serde_json::from_value(state)?;
        if let Some(p) = &previous {
            p.ensure_finite()?;
        }
        self.previous = previous;
        Ok(())
    }
}

impl MethodSpec for PerFclConfig {
    fn name(&self) -> &'static str {
        "PerFCL"
    }

    fn validate(&self) -> Result<()> {
        for (name, v) in [("mu", self.mu), ("gamma", self.gamma)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(EngineError::InvalidConfig(format!(
                    "PerFCL {name} must be finite and >= 0, got {v}"
                )));
            }
        }
        check_temperature("PerFCL", self.temperature)
    }

    fn shared(&self) -> Selector {
        Selector::prefix("global.")
    }

    fn personalised(&self) -> bool {
        true
    }

    fn check_model(&self, spec: &ModelSpec) -> Result<()> {
        self.validate()?;
        check_model(spec)
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(PerFclClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No(CONTRASTIVE_NOT_PRIVATE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MlpConfig;
    use crate::strategy::moon::tests::binary_site;
    use candle_core::Device;
    use rand::SeedableRng;

    fn extractor(h: usize) -> MlpConfig {
        MlpConfig {
            inputs: 2,
            hidden: vec![h],
            outputs: 0,
            dropout: 0.0,
        }
    }

    fn fenda(g: usize, l: usize) -> ModelSpec {
        ModelSpec::Fenda {
            global: extractor(g),
            local: extractor(l),
            outputs: 1,
        }
    }

    /// Identity-like extractors on 2 inputs: fc0.weight = `w` (2x2), bias 0, so the ReLU
    /// features of a positive input are `w x`.
    fn with_extractors(g: [f32; 4], l: [f32; 4]) -> Net {
        let net = Net::new(&fenda(2, 2), 0).unwrap();
        let mut p = net.parameters().unwrap();
        p.insert("global.fc0.weight", vec![2, 2], g.to_vec())
            .unwrap();
        p.insert("global.fc0.bias", vec![2], vec![0.0, 0.0])
            .unwrap();
        p.insert("local.fc0.weight", vec![2, 2], l.to_vec())
            .unwrap();
        p.insert("local.fc0.bias", vec![2], vec![0.0, 0.0]).unwrap();
        net.load(&p).unwrap();
        net
    }

    #[test]
    fn both_terms_by_hand() {
        // x = (1, 0), T = 0.5.
        // current: z_s = (1, 0), z_p = (1, 1);  received: z_g = (1, 0);
        // previous: zhat_s = (0, 1), zhat_p = (1, 1).
        // shared term:   sim(z_s, z_g) = 1, sim(z_s, zhat_s) = 0
        //   l = log(1 + e^{(0 - 1)/0.5}) = log(1 + e^-2) = 0.12692801
        // personal term: sim(z_p, zhat_p) = 1, sim(z_p, z_g) = 1/sqrt2
        //   l = log(1 + e^{(0.70710678 - 1)/0.5}) = log(1 + e^-0.58578644) = 0.44254755
        let current = with_extractors([1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0]);
        let initial = with_extractors([1.0, 0.0, 0.0, 0.0], [0.0; 4]);
        let previous = with_extractors([0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]);
        let x = Tensor::new(&[[1.0f32, 0.0]], &Device::Cpu).unwrap();
        let objective = PerFclObjective {
            initial: &initial,
            previous: &previous,
            mu: 1.0,
            gamma: 1.0,
            temperature: 0.5,
        };
        let out = current.forward_features(&x, None).unwrap();
        let (s, p) = objective.terms(&out, &x).unwrap();
        let s = s.to_scalar::<f32>().unwrap();
        let p = p.to_scalar::<f32>().unwrap();
        assert!((s - 0.126_928_01).abs() < 1e-5, "{s}");
        assert!((p - 0.442_547_55).abs() < 1e-5, "{p}");
        // weighted total = task + 2 s + 3 p
        let weighted = PerFclObjective {
            mu: 2.0,
            gamma: 3.0,
            ..objective
        };
        let task = LossKind::bce().compute(&out.logits, &[1]).unwrap();
        let total = weighted
            .loss(&out, &x, &[1], &LossKind::bce())
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        let want = task.to_scalar::<f32>().unwrap() + 2.0 * s + 3.0 * p;
        assert!((total - want).abs() < 1e-5);
    }

    #[test]
    fn config_and_model_are_checked() {
        assert!(PerFclConfig::default().check_model(&fenda(3, 3)).is_ok());
        assert!(PerFclConfig::default().check_model(&fenda(3, 4)).is_err());
        assert!(PerFclConfig::default()
            .check_model(&ModelSpec::logistic(2, 1))
            .is_err());
        for bad in [
            PerFclConfig {
                mu: f32::INFINITY,
                ..Default::default()
            },
            PerFclConfig {
                gamma: -0.5,
                ..Default::default()
            },
            PerFclConfig {
                temperature: -1.0,
                ..Default::default()
            },
        ] {
            assert!(matches!(
                PerFclClient::new(bad),
                Err(EngineError::InvalidConfig(_))
            ));
        }
    }

    #[test]
    fn sends_only_the_shared_extractor_and_state_round_trips() {
        let spec = fenda(3, 3);
        let mut a = binary_site(&spec, 2, false, 4);
        let global = a
            .net
            .parameters()
            .unwrap()
            .select(&Selector::prefix("global."));
        let ins = FitIns {
            round: 1,
            params: global.clone(),
            extras: ParameterSet::new(),
        };
        let mut client = PerFclClient::new(PerFclConfig::default()).unwrap();
        let r1 = client
            .fit(&mut a, &ins, &mut ChaCha8Rng::seed_from_u64(2))
            .unwrap();
        assert_eq!(r1.params.names().collect::<Vec<_>>().len(), 2);
        assert!(r1.params.names().all(|n| n.starts_with("global.")));
        // round 2 (contrastive terms active) from a restored copy trains identically
        let mut b = binary_site(&spec, 2, false, 4);
        b.restore(a.snapshot().unwrap()).unwrap();
        let mut copy = PerFclClient::new(PerFclConfig::default()).unwrap();
        copy.load_state(client.save_state().unwrap()).unwrap();
        let ins2 = FitIns { round: 2, ..ins };
        let r2a = client
            .fit(&mut a, &ins2, &mut ChaCha8Rng::seed_from_u64(3))
            .unwrap();
        let r2b = copy
            .fit(&mut b, &ins2, &mut ChaCha8Rng::seed_from_u64(3))
            .unwrap();
        assert_eq!(r2a.params, r2b.params);
        assert_eq!(a.net.parameters().unwrap(), b.net.parameters().unwrap());
        // record DP is refused
        let mut dp = binary_site(&spec, 2, true, 4);
        assert!(matches!(
            client.fit(&mut dp, &ins2, &mut ChaCha8Rng::seed_from_u64(3)),
            Err(EngineError::InvalidConfig(_))
        ));
    }
}
