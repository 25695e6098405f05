//! HPFL, hot-pluggable federated learning (Shen, Tang, Wu, Zhang, Chu, Qin and Han,
//! "Hot-pluggable Federated Learning: Bridging General and Personalized FL via Dynamic
//! Selection", ICLR 2025, OpenReview B8akWa62Da).
//!
//! The model is a [`ModelSpec::HeadNet`]: backbone under `global.`, head under `head.`. The
//! paper's procedure has two parts:
//! 1. general FL: the whole model (backbone and a shared head) is trained with FedAvg;
//! 2. each client trains a personal *plug-in* (here: the head) on the frozen shared backbone
//!    with its own data. In the paper the plug-ins are uploaded to a modular store on the
//!    server together with a *marker* (a summary of the client's feature distribution, noised
//!    for DP); at inference a selection algorithm compares the test data's features with the
//!    markers and plugs in the best-matching plug-in, so a client can also serve data that
//!    resembles another client's.
//!
//! Here, each round at each site:
//! ```text
//! receive (w, h) = global backbone and shared head
//! plug-in:  p <- previous plug-in (first round: h); for head_steps mini-batches
//!           p <- opt_p(p, grad_p L(p(w(x)), y))               backbone w frozen
//! federated: (w, h) -> train_local (plain FedAvg local steps on the whole model) -> send
//! ```
//! and the server averages (w, h) like FedAvg through the [`Aggregator`](super::Aggregator).
//!
//! Choices:
//! * **No store, no selection.** Plug-ins stay at their site (they are trained on its records
//!   and are site state, serialised by `save_state`); each site evaluates and checkpoints
//!   *its own* plug-in. That is the selection the paper's algorithm makes when the test data
//!   come from the site's own distribution, which is the per-site evaluation protocol of this
//!   engine; cross-site plug-in selection would need the plug-ins and markers to leave the
//!   sites and is not implemented.
//! * **When the plug-in is trained.** The paper trains plug-ins once, after general FL; here it
//!   is refreshed every round (warm-started from the site's previous plug-in) so that every
//!   round's validation and the local checkpoints see a personalised model.
//! * **Which backbone the plug-in is evaluated with.** A plug-in only fits the backbone it was
//!   trained on, so the site's personalised model is the pair (backbone received this round,
//!   plug-in trained on it); the backbone aggregated at the end of the round gets its plug-in
//!   in the next round. The global checkpoint is the federated model with the shared head.
//! * **Plug-in optimiser:** its own instance of the site's optimiser configuration, kept
//!   across rounds (reset with the site's when `reset_optimizer` is set). `head_steps`
//!   defaults to the round's number of local steps.
//!
//! Record-level DP is refused: the plug-in's extra passes over the records would need their
//! own DP-SGD steps and accounting beyond the per-local-step cost the accountant composes.
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::fedavg::local_fit;
use super::methods::check_train;
use super::{ClientStrategy, FitIns, FitRes, MethodSpec, Site, Support};
use crate::error::{EngineError, Result};
use crate::model::{ModelSpec, Net};
use crate::params::{ParameterSet, Selector};
use crate::train::{apply_gradient, batch_gradient, steps_in, Batcher, Optimizer};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct HpflConfig {
    /// Plug-in (head) training steps per round on the frozen received backbone; `None` = as
    /// many as the round's local steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_steps: Option<usize>,
}

fn check_model(spec: &ModelSpec) -> Result<()> {
    match spec {
        s if s.is_head_net() => Ok(()),
        other => Err(EngineError::InvalidConfig(format!(
            "HPFL needs a HeadNet (backbone + plug-in head), got {other:?}"
        ))),
    }
}

/// The site's personalised model (backbone it was fitted on + plug-in head).
struct PlugIn {
    net: Net,
    optimizer: Optimizer,
}

#[derive(Serialize, Deserialize)]
struct PlugInState {
    spec: ModelSpec,
    params: ParameterSet,
    optimizer: Optimizer,
}

pub struct HpflClient {
    config: HpflConfig,
    plug_in: Option<PlugIn>,
}

impl HpflClient {
    pub fn new(config: HpflConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            plug_in: None,
        })
    }

    /// Train the plug-in head on the frozen backbone of `site.net` (the received model).
    fn train_plug_in(&mut self, site: &Site, steps: usize, rng: &mut ChaCha8Rng) -> Result<()> {
        let net = site.net.duplicate()?;
        let head = Selector::prefix("head.");
        let optimizer = match self.plug_in.take() {
            Some(old) => {
                net.load(&old.net.parameters()?.select(&head))?;
                if site.reset_optimizer {
                    Optimizer::new(site.train.optimizer.clone())?
                } else {
                    old.optimizer
                }
            }
            None => Optimizer::new(site.train.optimizer.clone())?,
        };
        let mut plug = PlugIn { net, optimizer };
        let cfg = &site.train;
        let mut batcher = Batcher::new(&site.data.train, cfg.batch_size)?;
        for _ in 0..steps {
            let (x, y) = batcher.next_batch(rng)?;
            let g = batch_gradient(&plug.net, &cfg.loss, &x, y, None, rng)?;
            apply_gradient(&plug.net, &mut plug.optimizer, &g.grads.select(&head), &[])?;
        }
        self.plug_in = Some(plug);
        Ok(())
    }
}

impl ClientStrategy for HpflClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        if site.data.train.is_empty() {
            return Err(EngineError::ZeroSamples(site.name().to_string()));
        }
        check_model(site.net.spec())?;
        site.train.validate()?;
        site.net.load(&ins.params)?;
        let cfg = &site.train;
        let local_steps = steps_in(cfg.budget, site.data.train.len(), cfg.batch_size);
        let head_steps = self.config.head_steps.unwrap_or(local_steps);
        self.train_plug_in(site, head_steps, rng)?;
        local_fit(site, ins, &Selector::All, &[], rng)
    }

    fn evaluation_net<'a>(
        &'a mut self,
        site: &'a mut Site,
        global: &ParameterSet,
    ) -> Result<&'a Net> {
        site.net.load(global)?;
        Ok(match &self.plug_in {
            Some(p) => &p.net,
            // before the first round the plug-in would be the shared head
            None => &site.net,
        })
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        let state = match &self.plug_in {
            None => None,
            Some(p) => Some(PlugInState {
                spec: p.net.spec().clone(),
                params: p.net.parameters()?,
                optimizer: p.optimizer.clone(),
            }),
        };
        Ok(serde_json::to_value(state)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        let state: Option<PlugInState> = serde_json::from_value(state)?;
        self.plug_in = match state {
            None => None,
            Some(s) => {
                check_model(&s.spec)?;
                Some(PlugIn {
                    net: Net::with_parameters(&s.spec, &s.params)?,
                    optimizer: s.optimizer,
                })
            }
        };
        Ok(())
    }
}

impl MethodSpec for HpflConfig {
    fn name(&self) -> &'static str {
        "HPFL"
    }

    fn validate(&self) -> Result<()> {
        if self.head_steps == Some(0) {
            return Err(EngineError::InvalidConfig(
                "HPFL head_steps must be positive (or absent for the round's local steps)".into(),
            ));
        }
        Ok(())
    }

    fn personalised(&self) -> bool {
        true
    }

    fn check_model(&self, spec: &ModelSpec) -> Result<()> {
        self.validate()?;
        check_model(spec)
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(HpflClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No(
            "training the plug-in head makes extra passes over the records that the \
             per-local-step DP-SGD accounting does not cover",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MlpConfig;
    use crate::strategy::moon::tests::binary_site;
    use crate::train::{LossKind, OptimizerConfig};
    use candle_core::{Device, Tensor};
    use rand::SeedableRng;

    fn headnet(inputs: usize, hidden: usize) -> ModelSpec {
        ModelSpec::HeadNet {
            body: MlpConfig {
                inputs,
                hidden: vec![hidden],
                outputs: 0,
                dropout: 0.0,
            },
            outputs: 1,
        }
    }

    #[test]
    fn plug_in_step_by_hand_leaves_the_backbone_alone() {
        // Backbone 1 -> 1: fc0.weight = 2, bias = 0, ReLU; head: weight 0.5, bias 0.
        // x = 1, y = 1: feature f = 2, logit = 1, dBCE/dlogit = sigmoid(1) - 1 = -0.26894142.
        // Head grads: weight -0.26894142 * 2 = -0.53788284, bias -0.26894142.
        // SGD lr 0.1: head weight 0.55378828, head bias 0.026894142; backbone unchanged.
        let spec = headnet(1, 1);
        let mut site = binary_site(&spec, 1, false, 1);
        site.train.optimizer = OptimizerConfig::sgd(0.1);
        site.data.train = crate::data::Dataset::new(1, vec![1.0], vec![1]).unwrap();
        site.train.batch_size = 1;
        let mut p = site.net.parameters().unwrap();
        p.insert("global.fc0.weight", vec![1, 1], vec![2.0])
            .unwrap();
        p.insert("global.fc0.bias", vec![1], vec![0.0]).unwrap();
        p.insert("head.out.weight", vec![1, 1], vec![0.5]).unwrap();
        p.insert("head.out.bias", vec![1], vec![0.0]).unwrap();
        site.net.load(&p).unwrap();
        let mut client = HpflClient::new(HpflConfig::default()).unwrap();
        client
            .train_plug_in(&site, 1, &mut ChaCha8Rng::seed_from_u64(0))
            .unwrap();
        let q = client.plug_in.as_ref().unwrap().net.parameters().unwrap();
        let v = |n: &str| q.get(n).unwrap().values[0];
        assert!((v("head.out.weight") - 0.553_788_3).abs() < 1e-6);
        assert!((v("head.out.bias") - 0.026_894_142).abs() < 1e-6);
        assert_eq!(v("global.fc0.weight"), 2.0);
        assert_eq!(v("global.fc0.bias"), 0.0);
        assert_eq!(site.net.parameters().unwrap(), p, "site model untouched");
        let x = Tensor::new(&[[1.0f32]], &Device::Cpu).unwrap();
        let logit = client
            .plug_in
            .as_ref()
            .unwrap()
            .net
            .forward(&x, None)
            .unwrap();
        let loss = LossKind::bce().compute(&logit, &[1]).unwrap();
        assert!(loss.to_scalar::<f32>().unwrap() < 0.313_261_7); // below softplus(-1)
    }

    #[test]
    fn round_sends_whole_model_keeps_plug_in_and_state_round_trips() {
        let spec = headnet(3, 4);
        let mut a = binary_site(&spec, 3, false, 2);
        let ins = FitIns {
            round: 1,
            params: a.net.parameters().unwrap(),
            extras: ParameterSet::new(),
        };
        let mut client = HpflClient::new(HpflConfig {
            head_steps: Some(3),
        })
        .unwrap();
        let res = client
            .fit(&mut a, &ins, &mut ChaCha8Rng::seed_from_u64(4))
            .unwrap();
        assert_eq!(
            res.params.names().count(),
            4,
            "backbone and shared head travel"
        );
        let head = Selector::prefix("head.");
        let backbone = Selector::prefix("global.");
        let global = res.params.clone();
        let eval = client
            .evaluation_net(&mut a, &global)
            .unwrap()
            .parameters()
            .unwrap();
        // personalised model: the received backbone and the site's own head
        assert_eq!(eval.select(&backbone), ins.params.select(&backbone));
        assert_ne!(eval.select(&head), global.select(&head));
        assert_ne!(eval.select(&head), ins.params.select(&head));

        let mut copy = HpflClient::new(HpflConfig {
            head_steps: Some(3),
        })
        .unwrap();
        copy.load_state(client.save_state().unwrap()).unwrap();
        let mut b = binary_site(&spec, 3, false, 2);
        b.restore(a.snapshot().unwrap()).unwrap();
        let ins2 = FitIns {
            round: 2,
            params: global,
            extras: ParameterSet::new(),
        };
        let ra = client
            .fit(&mut a, &ins2, &mut ChaCha8Rng::seed_from_u64(5))
            .unwrap();
        let rb = copy
            .fit(&mut b, &ins2, &mut ChaCha8Rng::seed_from_u64(5))
            .unwrap();
        assert_eq!(ra.params, rb.params);
        assert_eq!(client.save_state().unwrap(), copy.save_state().unwrap());
    }

    #[test]
    fn config_model_and_record_dp_are_checked() {
        assert!(HpflConfig::default().check_model(&headnet(3, 4)).is_ok());
        assert!(HpflConfig::default()
            .check_model(&ModelSpec::logistic(3, 1))
            .is_err());
        assert!(matches!(
            HpflClient::new(HpflConfig {
                head_steps: Some(0)
            }),
            Err(EngineError::InvalidConfig(_))
        ));
        let spec = headnet(3, 4);
        let mut site = binary_site(&spec, 3, true, 2);
        let ins = FitIns {
            round: 1,
            params: site.net.parameters().unwrap(),
            extras: ParameterSet::new(),
        };
        let mut client = HpflClient::new(HpflConfig::default()).unwrap();
        assert!(matches!(
            client.fit(&mut site, &ins, &mut ChaCha8Rng::seed_from_u64(1)),
            Err(EngineError::InvalidConfig(_))
        ));
    }
}
