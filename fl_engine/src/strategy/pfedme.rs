//! pFedMe: personalised federated learning with Moreau envelopes (Dinh, Tran and Nguyen 2020,
//! "Personalized Federated Learning with Moreau Envelopes", NeurIPS 2020, arXiv:2006.08907).
//!
//! Site k keeps a personal model theta_k tied to its local copy w of the global model by the
//! Moreau envelope `F_k(w) = min_theta f_k(theta) + (lambda/2)||theta - w||^2`. A round at a
//! site (Algorithm 1 of the paper), starting from `w = w_g` and `theta = w_g`:
//!
//! ```text
//! for each local step: sample a mini-batch B
//!     repeat K times:  theta <- theta - personal_lr (∇f(theta; B) + lambda (theta - w))
//!     w <- w - eta lambda (w - theta)          (∇F_k(w) = lambda (w - theta*))
//! send w
//! ```
//!
//! and the server moves the global model towards the sites' models,
//! `w_g <- (1 - beta) w_g + beta avg_k(w_k) = w_g + beta Agg({w_k - w_g})`, with the average
//! taken by the configured [`Aggregator`](super::Aggregator) (so robust and DP aggregation
//! apply; beta = 1 is FedAvg's averaging). The site evaluates its personal model theta_k (the
//! last approximate inner solution), which never leaves the site.
//!
//! Choices:
//! * `eta` is the site optimiser: the outer step hands the gradient `lambda (w - theta)` to it
//!   (with `OptimizerConfig::Sgd { lr: eta }` this is the paper's update exactly);
//! * the inner problem is solved with K plain gradient steps on the same batch (the paper's
//!   "K iterations of gradient descent"), warm-started from the previous step's theta; theta is
//!   reset to the received global model at the start of each round, as in the authors' code;
//! * a parameter the batch loss does not reach has `∇f = 0` in the inner steps;
//! * the reported training loss is the personal model's task loss on the batch at the first
//!   inner iteration;
//! * defaults lambda = 15, K = 5, personal_lr = 0.01, beta = 1 (the paper's synthetic-data
//!   setting; it uses beta in {1, 2}).
//!
//! Record-level DP is refused: each local step would need K + 1 privatised gradients, which
//! the engine's DP-SGD step and the per-step accounting do not cover.
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::fedavg::FedAvgServer;
use super::fedsam::{gradient_at, sequential_fit, shifted};
use super::methods::check_train;
use super::{
    Aggregated, Aggregator, ClientStrategy, FitIns, FitRes, MethodSpec, ServerStrategy, Site,
    Support,
};
use crate::error::{EngineError, Result};
use crate::model::{ModelSpec, Net};
use crate::params::ParameterSet;
use crate::train::apply_gradient;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct PFedMeConfig {
    /// Strength `lambda` of the tie between personal and local model.
    pub lambda: f32,
    /// Gradient steps `K` on the inner (personal) problem per local step.
    pub inner_steps: usize,
    /// Step size of the inner gradient steps.
    pub personal_lr: f32,
    /// Server step `beta` towards the average of the site models (1 = FedAvg averaging).
    pub beta: f32,
}

impl Default for PFedMeConfig {
    fn default() -> Self {
        Self {
            lambda: 15.0,
            inner_steps: 5,
            personal_lr: 0.01,
            beta: 1.0,
        }
    }
}

/// K gradient steps on `f(theta) + (lambda/2)||theta - w||^2` from the current `theta`;
/// `grad(theta)` returns the batch loss and `∇f(theta)`. Returns the first loss.
pub(crate) fn moreau_inner(
    theta: &mut ParameterSet,
    w: &ParameterSet,
    lambda: f32,
    lr: f32,
    k: usize,
    mut grad: impl FnMut(&ParameterSet) -> Result<(f32, ParameterSet)>,
) -> Result<f32> {
    theta.check_compatible(w)?;
    let mut first = 0.0;
    for i in 0..k {
        let (loss, g) = grad(theta)?;
        if i == 0 {
            first = loss;
        }
        // full gradient of the inner objective: ∇f (0 where the loss does not reach) + pull
        let mut total = theta.sub(w)?;
        total.scale(lambda);
        let mut grad_f = theta.zeros_like();
        grad_f.overlay(&g)?;
        total.add_scaled(&grad_f, 1.0)?;
        *theta = shifted(theta, &total, -lr)?;
    }
    Ok(first)
}

pub struct PFedMeServer {
    beta: f32,
    fedavg: FedAvgServer,
}

impl PFedMeServer {
    pub fn new(config: &PFedMeConfig, aggregator: Box<dyn Aggregator>) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            beta: config.beta,
            fedavg: FedAvgServer::new("pFedMe", aggregator),
        })
    }
}

impl ServerStrategy for PFedMeServer {
    fn name(&self) -> &'static str {
        "pFedMe"
    }

    fn aggregate(
        &mut self,
        _round: u64,
        global: &ParameterSet,
        results: &[FitRes],
    ) -> Result<Aggregated> {
        let averaged = self.fedavg.average(global, results)?;
        let next = shifted(global, &averaged.params.sub(global)?, self.beta)?;
        next.ensure_finite()?;
        Ok(Aggregated {
            params: next,
            metrics: averaged.metrics,
        })
    }
}

#[derive(Serialize, Deserialize)]
struct PersonalState {
    spec: ModelSpec,
    params: ParameterSet,
}

pub struct PFedMeClient {
    config: PFedMeConfig,
    /// The personal model theta (evaluated by the site, never sent).
    personal: Option<Net>,
}

impl PFedMeClient {
    pub fn new(config: PFedMeConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            personal: None,
        })
    }
}

impl ClientStrategy for PFedMeClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        if self.personal.is_none() {
            self.personal = Some(Net::new(site.net.spec(), 0)?);
        }
        let personal = self.personal.as_ref().ok_or(EngineError::NoUpdates)?;
        let c = self.config.clone();
        let mut theta = ins.params.clone();
        let res = sequential_fit(site, ins, rng, &mut |net, opt, loss, batcher, rng| {
            let (x, y) = batcher.next_batch(rng)?;
            let w = net.parameters()?;
            let task = moreau_inner(
                &mut theta,
                &w,
                c.lambda,
                c.personal_lr,
                c.inner_steps,
                |at| gradient_at(personal, at, loss, &x, y, rng),
            )?;
            // ∇F_k(w) = lambda (w - theta)
            let mut g = w.sub(&theta)?;
            g.scale(c.lambda);
            apply_gradient(net, opt, &g, &[])?;
            Ok(task)
        })?;
        personal.load(&theta)?;
        Ok(res)
    }

    fn evaluation_net<'a>(
        &'a mut self,
        site: &'a mut Site,
        global: &ParameterSet,
    ) -> Result<&'a Net> {
        site.net.load(global)?;
        Ok(match &self.personal {
            Some(p) => p,
            // before the first round the personal model would be the global one
            None => &site.net,
        })
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        let state = match &self.personal {
            None => None,
            Some(p) => Some(PersonalState {
                spec: p.spec().clone(),
                params: p.parameters()?,
            }),
        };
        Ok(serde_json::to_value(state)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        let state: Option<PersonalState> = serde_json::from_value(state)?;
        self.personal = match state {
            None => None,
            Some(s) => Some(Net::with_parameters(&s.spec, &s.params)?),
        };
        Ok(())
    }
}

impl MethodSpec for PFedMeConfig {
    fn name(&self) -> &'static str {
        "pFedMe"
    }

    fn validate(&self) -> Result<()> {
        let finite_pos = |v: f32| v.is_finite() && v > 0.0;
        if !finite_pos(self.lambda) || !finite_pos(self.personal_lr) || !finite_pos(self.beta) {
            return Err(EngineError::InvalidConfig(format!(
                "pFedMe lambda, personal_lr and beta must be finite and > 0, got {self:?}"
            )));
        }
        if self.inner_steps == 0 {
            return Err(EngineError::InvalidConfig(
                "pFedMe needs at least one inner step (K >= 1)".into(),
            ));
        }
        Ok(())
    }

    fn personalised(&self) -> bool {
        true
    }

    fn server(
        &self,
        _n_sites: usize,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Box<dyn ServerStrategy>> {
        Ok(Box::new(PFedMeServer::new(self, aggregator)?))
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(PFedMeClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No("each local step takes K + 1 gradients of the batch, not one DP-SGD step")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::WeightedMean;
    use crate::train::TrainReport;

    fn one(v: f32) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![1], vec![v]).unwrap();
        p
    }

    fn val(p: &ParameterSet) -> f32 {
        p.get("w").unwrap().values[0]
    }

    /// f(theta) = 0.5 (theta - 2)^2.
    fn quad(at: &ParameterSet) -> Result<(f32, ParameterSet)> {
        let t = val(at);
        Ok((0.5 * (t - 2.0) * (t - 2.0), one(t - 2.0)))
    }

    #[test]
    fn inner_solution_on_a_quadratic_approaches_the_closed_form() {
        // argmin 0.5 (t - 2)^2 + (15/2)(t - 0)^2 = 2 / 16 = 0.125. GD with lr 0.01 from
        // t = w = 0 contracts the error by 1 - 0.01 * 16 = 0.84 per step:
        // after K = 5, t = 0.125 (1 - 0.84^5) = 0.125 * 0.5818 = 0.07272
        let mut theta = one(0.0);
        let loss = moreau_inner(&mut theta, &one(0.0), 15.0, 0.01, 5, quad).unwrap();
        assert_eq!(loss, 2.0);
        let expect = 0.125 * (1.0 - 0.84f32.powi(5));
        assert!((val(&theta) - expect).abs() < 1e-6, "{}", val(&theta));
        assert!((expect - 0.07272).abs() < 1e-4);
        let mut theta = one(0.0);
        moreau_inner(&mut theta, &one(0.0), 15.0, 0.01, 200, quad).unwrap();
        assert!((val(&theta) - 0.125).abs() < 1e-6, "{}", val(&theta));
        // the outer gradient lambda (w - theta*) = 15 (0 - 0.125) = -1.875 = ∇F(w) of the
        // Moreau envelope, which for this quadratic is (lambda/(1+lambda)) (w - 2)
        assert!((15.0 * (0.0 - val(&theta)) - (15.0 / 16.0) * (0.0 - 2.0)).abs() < 1e-4);
    }

    fn res(site: &str, n: usize, w: f32) -> FitRes {
        FitRes {
            site: site.into(),
            num_examples: n,
            params: one(w),
            extras: ParameterSet::new(),
            report: TrainReport::default(),
        }
    }

    #[test]
    fn server_step_by_hand() {
        // sites (n 1, w 2) and (n 3, w 6): average 5; from w_g = 1:
        // beta 1 -> 5, beta 2 -> 1 + 2 * 4 = 9, beta 0.5 -> 3
        for (beta, expect) in [(1.0, 5.0), (2.0, 9.0), (0.5, 3.0)] {
            let cfg = PFedMeConfig {
                beta,
                ..PFedMeConfig::default()
            };
            let mut s = PFedMeServer::new(&cfg, Box::new(WeightedMean)).unwrap();
            let next = s
                .aggregate_fit(1, &one(1.0), &[res("a", 1, 2.0), res("b", 3, 6.0)], 0)
                .unwrap()
                .unwrap()
                .params;
            assert!((val(&next) - expect).abs() < 1e-6, "beta {beta}");
            assert!(s
                .aggregate_fit(1, &one(1.0), &[res("a", 1, f32::NAN)], 0)
                .is_err());
        }
    }

    #[test]
    fn config_validation_and_state_round_trip() {
        let bad = [
            PFedMeConfig {
                lambda: 0.0,
                ..PFedMeConfig::default()
            },
            PFedMeConfig {
                inner_steps: 0,
                ..PFedMeConfig::default()
            },
            PFedMeConfig {
                personal_lr: f32::NAN,
                ..PFedMeConfig::default()
            },
            PFedMeConfig {
                beta: -1.0,
                ..PFedMeConfig::default()
            },
        ];
        for c in bad {
            assert!(PFedMeClient::new(c.clone()).is_err(), "{c:?}");
        }
        let spec = ModelSpec::logistic(3, 1);
        let mut a = PFedMeClient::new(PFedMeConfig::default()).unwrap();
        a.personal = Some(Net::new(&spec, 5).unwrap());
        let mut b = PFedMeClient::new(PFedMeConfig::default()).unwrap();
        b.load_state(a.save_state().unwrap()).unwrap();
        assert_eq!(
            b.personal.unwrap().parameters().unwrap(),
            a.personal.unwrap().parameters().unwrap()
        );
    }
}
