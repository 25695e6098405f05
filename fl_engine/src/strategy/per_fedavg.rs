//! Per-FedAvg, first-order variant (Fallah, Mokhtari and Ozdaglar 2020, "Personalized
//! Federated Learning: A Meta-Learning Approach", arXiv:2002.07948; Per-FedAvg (FO)).
//!
//! The federation learns a starting point w from which one (or a few) gradient steps on a
//! site's own data give a good personal model: the MAML objective
//! `F(w) = (1/n) sum_k f_k(w - alpha ∇f_k(w))`. Each local step draws two independent
//! mini-batches D (support) and D' (query) from the site's training data and does
//!
//! ```text
//! temp = w - alpha ∇L(w; D)
//! w    = w - beta ∇L(temp; D')        (first-order: the Hessian term is dropped)
//! ```
//!
//! with beta the site optimiser: the query gradient, taken at `temp`, is handed to the site's
//! optimiser at the unadapted w (with `OptimizerConfig::Sgd { lr: beta }` this is the paper's
//! rule; another optimiser adapts the outer step). The server is FedAvg through the configured
//! [`Aggregator`](super::Aggregator).
//!
//! Evaluation (personalised): the site starts from the current global model and takes
//! `eval_steps` plain SGD steps `w <- w - alpha ∇L(w; B)` on mini-batches of its training data
//! (batch size of the site's training configuration), then evaluates that model. The batches
//! and any dropout masks come from a ChaCha8 stream seeded by a value drawn from the round's
//! training stream at the end of `fit` (kept in the client state), so the personalised model
//! is a deterministic function of the round seed and the global model: validation, the
//! `Latest` checkpoint and a restored study all see the same model.
//!
//! Choices the paper leaves open:
//! * one local step consumes two consecutive batches of the site's shuffled pass (D then D'),
//!   so the step budget counts meta-steps;
//! * the reported training loss is the task loss of the support batch at w;
//! * defaults: alpha = 0.01, eval_steps = 1 (the paper evaluates after one step of local SGD;
//!   alpha and beta are tuned per data set there).
//!
//! Record-level DP is refused: a private version needs two privatised gradients per step at
//! two different points (and a private fine-tuning step at evaluation).
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::fedsam::{gradient_at, sequential_fit, shifted};
use super::methods::check_train;
use super::{ClientStrategy, FitIns, FitRes, MethodSpec, Site, Support};
use crate::error::{EngineError, Result};
use crate::model::Net;
use crate::params::ParameterSet;
use crate::train::{apply_gradient, Batcher};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct PerFedAvgConfig {
    /// Step size `alpha` of the inner (adaptation) step, in training and at evaluation.
    pub alpha: f32,
    /// Plain SGD steps from the global model before a site evaluates (default 1).
    pub eval_steps: usize,
}

impl Default for PerFedAvgConfig {
    fn default() -> Self {
        Self {
            alpha: 0.01,
            eval_steps: 1,
        }
    }
}

/// The first-order meta-gradient at `w`: `grad(w - alpha grad(w, D), D')`. `grad(at, 0)` is
/// the support-batch gradient, `grad(at, 1)` the query-batch one. Returns the support loss.
pub(crate) fn meta_gradient(
    w: &ParameterSet,
    alpha: f32,
    mut grad: impl FnMut(&ParameterSet, usize) -> Result<(f32, ParameterSet)>,
) -> Result<(f32, ParameterSet)> {
    let (loss, g) = grad(w, 0)?;
    let temp = shifted(w, &g, -alpha)?;
    let (_, q) = grad(&temp, 1)?;
    Ok((loss, q))
}

/// `steps` plain gradient steps `w <- w - alpha grad(w)`.
pub(crate) fn adapt(
    w: &ParameterSet,
    alpha: f32,
    steps: usize,
    mut grad: impl FnMut(&ParameterSet) -> Result<ParameterSet>,
) -> Result<ParameterSet> {
    let mut w = w.clone();
    for _ in 0..steps {
        let g = grad(&w)?;
        w = shifted(&w, &g, -alpha)?;
    }
    Ok(w)
}

pub struct PerFedAvgClient {
    config: PerFedAvgConfig,
    /// Seed of the evaluation fine-tuning stream, drawn from the last round's stream.
    eval_seed: Option<u64>,
}

impl PerFedAvgClient {
    pub fn new(config: PerFedAvgConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            eval_seed: None,
        })
    }
}

impl ClientStrategy for PerFedAvgClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        let alpha = self.config.alpha;
        let res = sequential_fit(site, ins, rng, &mut |net, opt, loss, batcher, rng| {
            let (x1, y1) = batcher.next_batch(rng)?;
            let y1 = y1.to_vec();
            let (x2, y2) = batcher.next_batch(rng)?;
            let w = net.parameters()?;
            let (task, g) = meta_gradient(&w, alpha, |at, which| match which {
                0 => gradient_at(net, at, loss, &x1, &y1, rng),
                _ => gradient_at(net, at, loss, &x2, y2, rng),
            })?;
            net.load(&w)?;
            apply_gradient(net, opt, &g, &[])?;
            Ok(task)
        })?;
        self.eval_seed = Some(rng.random());
        Ok(res)
    }

    fn evaluation_net<'a>(
        &'a mut self,
        site: &'a mut Site,
        global: &ParameterSet,
    ) -> Result<&'a Net> {
        site.net.load(global)?;
        if self.config.eval_steps == 0 {
            return Ok(&site.net);
        }
        // before the first round there is no round seed: 0 stands in for it
        let mut rng = ChaCha8Rng::seed_from_u64(self.eval_seed.unwrap_or(0));
        let mut batcher = Batcher::new(&site.data.train, site.train.batch_size)?;
        let net = &site.net;
        let loss = &site.train.loss;
        let start = net.parameters()?;
        let adapted = adapt(&start, self.config.alpha, self.config.eval_steps, |at| {
            let (x, y) = batcher.next_batch(&mut rng)?;
            Ok(gradient_at(net, at, loss, &x, y, &mut rng)?.1)
        })?;
        net.load(&adapted)?;
        Ok(net)
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(self.eval_seed)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        self.eval_seed = serde_json::from_value(state)?;
        Ok(())
    }
}

impl MethodSpec for PerFedAvgConfig {
    fn name(&self) -> &'static str {
        "Per-FedAvg"
    }

    fn validate(&self) -> Result<()> {
        if !(self.alpha >= 0.0 && self.alpha.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "Per-FedAvg alpha must be finite and >= 0, got {}",
                self.alpha
            )));
        }
        Ok(())
    }

    fn personalised(&self) -> bool {
        true
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(PerFedAvgClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No("each step needs two privatised gradients at two different points")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::{Optimizer, OptimizerConfig};

    fn one(v: f32) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![1], vec![v]).unwrap();
        p
    }

    fn val(p: &ParameterSet) -> f32 {
        p.get("w").unwrap().values[0]
    }

    /// Batch `which` has loss 0.5 a (w - c)^2: support (a 1, c 0), query (a 2, c 1).
    fn quad(at: &ParameterSet, which: usize) -> Result<(f32, ParameterSet)> {
        let (a, c) = if which == 0 { (1.0, 0.0) } else { (2.0, 1.0) };
        let w = val(at);
        Ok((0.5 * a * (w - c) * (w - c), one(a * (w - c))))
    }

    #[test]
    fn first_order_step_on_a_quadratic_by_hand() {
        // w = 1, alpha = 0.1: support gradient 1 -> temp = 0.9; query gradient at temp
        // = 2 (0.9 - 1) = -0.2; support loss 0.5. With SGD(beta = 0.5): w = 1 + 0.1 = 1.1
        let (loss, g) = meta_gradient(&one(1.0), 0.1, quad).unwrap();
        assert_eq!(loss, 0.5);
        assert!((val(&g) + 0.2).abs() < 1e-6);
        let mut opt = Optimizer::new(OptimizerConfig::sgd(0.5)).unwrap();
        let mut p = [1.0f32];
        let mut gv = [val(&g)];
        opt.begin_step();
        opt.update("w", &mut p, &mut gv).unwrap();
        assert!((p[0] - 1.1).abs() < 1e-6);
        // alpha = 0 is FedAvg's gradient, taken on the query batch
        let (_, g0) = meta_gradient(&one(1.0), 0.0, quad).unwrap();
        assert_eq!(val(&g0), 0.0);
    }

    #[test]
    fn evaluation_adaptation_by_hand() {
        // gradient w (a 1, c 0), alpha 0.1: 1 -> 0.9 -> 0.81
        let g = |at: &ParameterSet| Ok(one(val(at)));
        assert!((val(&adapt(&one(1.0), 0.1, 2, g).unwrap()) - 0.81).abs() < 1e-6);
        assert_eq!(adapt(&one(1.0), 0.1, 0, g).unwrap(), one(1.0));
    }

    #[test]
    fn state_round_trips_and_config_is_validated() {
        assert!(PerFedAvgClient::new(PerFedAvgConfig {
            alpha: -0.1,
            eval_steps: 1
        })
        .is_err());
        let mut a = PerFedAvgClient::new(PerFedAvgConfig::default()).unwrap();
        a.eval_seed = Some(42);
        let mut b = PerFedAvgClient::new(PerFedAvgConfig::default()).unwrap();
        b.load_state(a.save_state().unwrap()).unwrap();
        assert_eq!(b.eval_seed, Some(42));
    }
}
