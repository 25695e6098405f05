//! FedSpeed (Sun, Shen, Huang, Ding & Tao 2023, "FedSpeed: Larger Local Interval, Less
//! Communication Round, and Higher Generalization Accuracy", ICLR 2023, arXiv:2302.10429).
//!
//! Each site i keeps a prox-correction term `ĝ_i` (zero before its first round, never sent).
//! In a round it receives `x_g`, starts from `x = x_g` and takes K local steps, each on one
//! mini-batch B:
//!
//! ```text
//! g   = ∇ L(x; B)
//! x̆   = x + rho g / ||g||                   (gradient perturbation; x̆ = x when g = 0)
//! g̃   = ∇ L(x̆; B)                           (same batch)
//! g_q = (1 - alpha) g + alpha g̃             (the paper's quasi-gradient)
//! x   = x - eta (g_q - ĝ_i + (x - x_g) / lambda)
//! ```
//!
//! then, with `x_K` the model after the K steps,
//!
//! ```text
//! ĝ_i <- ĝ_i - (x_K - x_g) / lambda
//! x̂_i  = x_K - lambda ĝ_i                   (sent to the server)
//! ```
//!
//! and the server averages the `x̂_i` (FedAvg's step through the study's
//! [`Aggregator`](super::Aggregator)).
//!
//! Choices the paper leaves open or that the engine makes:
//! * `alpha` weighs the perturbed gradient, as in the paper's Algorithm 1: `alpha = 0` is the
//!   plain gradient (and the step takes one forward/backward pass instead of two), `alpha = 1`
//!   the SAM gradient alone.
//! * The perturbation is normalised (`rho g / ||g||`, norm over the whole model), as in SAM,
//!   FedSAM here and the authors' released code.
//! * The step `x - eta (...)` is the site's optimiser consuming `g_q - ĝ_i + (x - x_g)/lambda`
//!   as its gradient: plain SGD gives the paper's rule exactly, any other optimiser (AdamW in
//!   the reproduction) is accepted as for FedDyn.
//! * The paper's server mean is uniform over the sites that reported; here it is FedAvg's
//!   example-weighted mean, as for FedSAM, so robust and DP aggregators apply unchanged. With
//!   equal site sizes the two are the same.
//! * The reported training loss is the task loss at the unperturbed x (first pass).
//! * With every site reporting, equal site sizes and `rho = 0` (or `alpha = 0`) the method is
//!   FedDyn with its `alpha = 1 / lambda`: the site's local objective is the same and the mean
//!   of the `- lambda ĝ_i` the sites add is FedDyn's `- h / alpha` (a test checks it).
//!
//! Defaults: `rho` 0.05 (as FedSAM), `alpha` 0.5 (both gradients weighed equally; the
//! authors' released simulator uses the perturbed gradient alone, i.e. `alpha = 1`) and
//! `lambda` 10 (a proximal weight `1/lambda` of 0.1, FedDyn's tuned weight on
//! Fed-Heart-Disease).
//!
//! Record-level DP is refused, as for FedSAM: the perturbation is a gradient of the batch,
//! so both passes would need privatising. Client-level DP applies: each site sends one vector
//! per round through the aggregator.
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::fedsam::{gradient_at, scaled_to_radius, sequential_fit, shifted};
use super::methods::check_train;
use super::{ClientStrategy, FitIns, FitRes, MethodSpec, Site, Support};
use crate::error::{EngineError, Result};
use crate::params::ParameterSet;
use crate::train::{apply_gradient, LocalObjective};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FedSpeedConfig {
    /// Radius `rho` of the gradient perturbation (>= 0; default 0.05).
    pub rho: f32,
    /// Weight `alpha` of the perturbed gradient in the quasi-gradient
    /// `(1 - alpha) g + alpha g̃` (in [0, 1]; default 0.5).
    pub alpha: f32,
    /// `lambda` (> 0) of the proximal term `(x - x_g) / lambda` and of the prox-correction
    /// update (default 10).
    pub lambda: f32,
}

impl Default for FedSpeedConfig {
    fn default() -> Self {
        Self {
            rho: 0.05,
            alpha: 0.5,
            lambda: 10.0,
        }
    }
}

/// The quasi-gradient at `w`: `(1 - alpha) g + alpha grad(w + rho g/||g||)` with
/// `g = grad(w)`, together with the task loss of the first call. `alpha = 0` makes one call.
pub(crate) fn quasi_gradient(
    w: &ParameterSet,
    rho: f32,
    alpha: f32,
    mut grad: impl FnMut(&ParameterSet) -> Result<(f32, ParameterSet)>,
) -> Result<(f32, ParameterSet)> {
    let (loss, g) = grad(w)?;
    if alpha == 0.0 {
        return Ok((loss, g));
    }
    let (_, perturbed) = grad(&shifted(w, &scaled_to_radius(&g, rho), 1.0)?)?;
    let mut q = g;
    q.scale(1.0 - alpha);
    q.add_scaled(&perturbed, alpha)?;
    Ok((loss, q))
}

/// The two terms FedSpeed adds to the quasi-gradient: `- ĝ + (x - x_g) / lambda`.
pub(crate) struct ProxCorrection<'a> {
    pub g_hat: &'a ParameterSet,
    pub global: &'a ParameterSet,
    pub lambda: f32,
}

impl LocalObjective for ProxCorrection<'_> {
    fn add_gradient(&self, name: &str, param: &[f32], grad: &mut [f32]) {
        if let Some(h) = self.g_hat.get(name) {
            grad.iter_mut().zip(&h.values).for_each(|(g, h)| *g -= h);
        }
        if let Some(c) = self.global.get(name) {
            for ((g, p), c) in grad.iter_mut().zip(param).zip(&c.values) {
                *g += (p - c) / self.lambda;
            }
        }
    }
}

/// `ĝ - (x_K - x_g) / lambda`.
pub(crate) fn next_correction(
    g_hat: &ParameterSet,
    x_k: &ParameterSet,
    x_g: &ParameterSet,
    lambda: f32,
) -> Result<ParameterSet> {
    let mut out = g_hat.clone();
    out.add_scaled(&x_k.sub(x_g)?, -1.0 / lambda)?;
    Ok(out)
}

/// What a site sends: `x_K - lambda ĝ` (with the updated `ĝ`).
pub(crate) fn sent_model(
    x_k: &ParameterSet,
    g_hat: &ParameterSet,
    lambda: f32,
) -> Result<ParameterSet> {
    let mut out = x_k.clone();
    out.add_scaled(g_hat, -lambda)?;
    Ok(out)
}

pub struct FedSpeedClient {
    config: FedSpeedConfig,
    /// `ĝ_i`; private to the site.
    g_hat: Option<ParameterSet>,
}

impl FedSpeedClient {
    pub fn new(config: FedSpeedConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            g_hat: None,
        })
    }
}

impl super::GlobalClient for FedSpeedClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        let FedSpeedConfig { rho, alpha, lambda } = self.config;
        let g_hat = self
            .g_hat
            .clone()
            .unwrap_or_else(|| ins.params.zeros_like());
        ins.params.check_compatible(&g_hat)?;
        let terms = ProxCorrection {
            g_hat: &g_hat,
            global: &ins.params,
            lambda,
        };
        let mut res = sequential_fit(site, ins, rng, &mut |net, opt, loss, batcher, rng| {
            let (x, y) = batcher.next_batch(rng)?;
            let w = net.parameters()?;
            let (task, g) =
                quasi_gradient(&w, rho, alpha, |at| gradient_at(net, at, loss, &x, y, rng))?;
            net.load(&w)?;
            apply_gradient(net, opt, &g, &[&terms])?;
            Ok(task)
        })?;
        let next = next_correction(&g_hat, &res.params, &ins.params, lambda)?;
        next.ensure_finite()?;
        let sent = sent_model(&res.params, &next, lambda)?;
        sent.ensure_finite()?;
        self.g_hat = Some(next);
        res.params = sent;
        Ok(res)
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(&self.g_hat)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        let g_hat: Option<ParameterSet> = serde_json::from_value(state)?;
        if let Some(g) = &g_hat {
            g.ensure_finite()?;
        }
        self.g_hat = g_hat;
        Ok(())
    }
}

impl MethodSpec for FedSpeedConfig {
    fn name(&self) -> &'static str {
        "FedSpeed"
    }

    fn validate(&self) -> Result<()> {
        if !(self.rho >= 0.0 && self.rho.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "FedSpeed rho must be finite and >= 0, got {}",
                self.rho
            )));
        }
        if !(0.0..=1.0).contains(&self.alpha) {
            return Err(EngineError::InvalidConfig(format!(
                "FedSpeed alpha must be in [0, 1], got {}",
                self.alpha
            )));
        }
        if !(self.lambda > 0.0 && self.lambda.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "FedSpeed lambda must be finite and > 0 (the proximal term divides by it), got {}",
                self.lambda
            )));
        }
        Ok(())
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedSpeedClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No(
            "its perturbation is a gradient of the batch, so both passes would need privatising",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::train::{Optimizer, OptimizerConfig};
    use rand::SeedableRng;

    fn one(v: f32) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![1], vec![v]).unwrap();
        p
    }

    fn two(a: f32, b: f32) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![2], vec![a, b]).unwrap();
        p
    }

    fn values(p: &ParameterSet) -> Vec<f32> {
        p.get("w").unwrap().values.clone()
    }

    fn close(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(a, b)| (a - b).abs() < 1e-6)
    }

    /// L(w) = 0.5 (w1^2 + 4 w2^2), gradient (w1, 4 w2).
    fn quad2(at: &ParameterSet) -> Result<(f32, ParameterSet)> {
        let v = values(at);
        Ok((
            0.5 * (v[0] * v[0] + 4.0 * v[1] * v[1]),
            two(v[0], 4.0 * v[1]),
        ))
    }

    /// L(x) = x^2, gradient 2x.
    fn square(at: &ParameterSet) -> Result<(f32, ParameterSet)> {
        let x = values(at)[0];
        Ok((x * x, one(2.0 * x)))
    }

    #[test]
    fn quasi_gradient_on_a_quadratic_by_hand() {
        // w = (3, 1): g = (3, 4), ||g|| = 5; rho = 0.5 -> perturbation (0.3, 0.4),
        // w + e = (3.3, 1.4), g̃ = (3.3, 5.6); the loss reported is L(w) = 0.5 (9 + 4) = 6.5.
        // alpha = 0.5: (1.5, 2) + (1.65, 2.8) = (3.15, 4.8)
        let (loss, q) = quasi_gradient(&two(3.0, 1.0), 0.5, 0.5, quad2).unwrap();
        assert_eq!(loss, 6.5);
        assert!(close(&values(&q), &[3.15, 4.8]), "{q:?}");
        // alpha = 1 is the SAM gradient, alpha = 0 the plain one (one call only)
        let (_, sam) = quasi_gradient(&two(3.0, 1.0), 0.5, 1.0, quad2).unwrap();
        assert!(close(&values(&sam), &[3.3, 5.6]), "{sam:?}");
        let mut calls = 0;
        let (_, plain) = quasi_gradient(&two(3.0, 1.0), 0.5, 0.0, |at| {
            calls += 1;
            quad2(at)
        })
        .unwrap();
        assert_eq!((values(&plain), calls), (vec![3.0, 4.0], 1));
        // a zero gradient is not perturbed
        let (_, z) = quasi_gradient(&two(0.0, 0.0), 0.5, 0.5, quad2).unwrap();
        assert_eq!(z, two(0.0, 0.0));
    }

    /// The client's local step with plain SGD: the quasi-gradient, the prox-correction terms
    /// and the engine's optimiser, as in `FedSpeedClient::fit`.
    fn sgd_steps(
        x_g: &ParameterSet,
        g_hat: &ParameterSet,
        cfg: &FedSpeedConfig,
        lr: f64,
        steps: usize,
    ) -> ParameterSet {
        let mut opt = Optimizer::new(OptimizerConfig::sgd(lr)).unwrap();
        let terms = ProxCorrection {
            g_hat,
            global: x_g,
            lambda: cfg.lambda,
        };
        let mut x = x_g.clone();
        for _ in 0..steps {
            let (_, q) = quasi_gradient(&x, cfg.rho, cfg.alpha, square).unwrap();
            let mut p = values(&x);
            let mut g = values(&q);
            terms.add_gradient("w", &p, &mut g);
            opt.begin_step();
            opt.update("w", &mut p, &mut g).unwrap();
            x = one(p[0]);
        }
        x
    }

    #[test]
    fn one_and_two_local_steps_the_correction_and_the_sent_model_by_hand() {
        // L(x) = x^2, x_g = 1, ĝ = 0.25, rho 0.5, alpha 0.5, lambda 2, eta 0.1.
        let cfg = FedSpeedConfig {
            rho: 0.5,
            alpha: 0.5,
            lambda: 2.0,
        };
        let (x_g, g_hat) = (one(1.0), one(0.25));
        // step 1 at x = 1: g = 2, x̆ = 1.5, g̃ = 3, g_q = 2.5; prox (1 - 1)/2 = 0;
        // direction 2.5 - 0.25 + 0 = 2.25 -> x = 1 - 0.225 = 0.775
        let x1 = sgd_steps(&x_g, &g_hat, &cfg, 0.1, 1);
        assert!(close(&values(&x1), &[0.775]), "{x1:?}");
        // step 2 at x = 0.775: g = 1.55, x̆ = 1.275, g̃ = 2.55, g_q = 2.05;
        // prox (0.775 - 1)/2 = -0.1125; direction 2.05 - 0.25 - 0.1125 = 1.6875
        // -> x = 0.775 - 0.16875 = 0.60625
        let x2 = sgd_steps(&x_g, &g_hat, &cfg, 0.1, 2);
        assert!(close(&values(&x2), &[0.60625]), "{x2:?}");
        // ĝ <- 0.25 - (0.60625 - 1)/2 = 0.446875; sent 0.60625 - 2 * 0.446875 = -0.2875
        let next = next_correction(&g_hat, &x2, &x_g, 2.0).unwrap();
        assert!(close(&values(&next), &[0.446875]), "{next:?}");
        let sent = sent_model(&x2, &next, 2.0).unwrap();
        assert!(close(&values(&sent), &[-0.2875]), "{sent:?}");
    }

    #[test]
    fn prox_correction_leaves_parameters_it_does_not_name() {
        let (g_hat, centre) = (one(0.5), one(1.0));
        let t = ProxCorrection {
            g_hat: &g_hat,
            global: &centre,
            lambda: 4.0,
        };
        // 0.2 - 0.5 + (3 - 1)/4 = 0.2
        let mut g = [0.2f32];
        t.add_gradient("w", &[3.0], &mut g);
        assert!((g[0] - 0.2).abs() < 1e-7, "{g:?}");
        let mut h = [0.2f32];
        t.add_gradient("head.w", &[3.0], &mut h);
        assert_eq!(h, [0.2]);
    }

    #[test]
    fn settings_are_validated_with_their_reason() {
        let err = |c: FedSpeedConfig| c.validate().unwrap_err().to_string();
        let d = FedSpeedConfig::default();
        assert!(err(FedSpeedConfig {
            rho: -0.1,
            ..d.clone()
        })
        .contains("rho must be finite and >= 0, got -0.1"));
        assert!(err(FedSpeedConfig {
            rho: f32::NAN,
            ..d.clone()
        })
        .contains("rho"));
        assert!(err(FedSpeedConfig {
            alpha: 1.5,
            ..d.clone()
        })
        .contains("alpha must be in [0, 1], got 1.5"));
        assert!(err(FedSpeedConfig {
            alpha: f32::NAN,
            ..d.clone()
        })
        .contains("alpha"));
        assert!(err(FedSpeedConfig {
            lambda: 0.0,
            ..d.clone()
        })
        .contains("lambda must be finite and > 0"));
        assert!(err(FedSpeedConfig {
            lambda: f32::INFINITY,
            ..d.clone()
        })
        .contains("lambda"));
        assert!(FedSpeedClient::new(FedSpeedConfig {
            lambda: -1.0,
            ..d.clone()
        })
        .is_err());
        for ok in [
            d.clone(),
            FedSpeedConfig {
                rho: 0.0,
                alpha: 0.0,
                lambda: 1e-3,
            },
            FedSpeedConfig { alpha: 1.0, ..d },
        ] {
            ok.validate().unwrap();
        }
    }

    #[test]
    fn a_round_keeps_the_correction_and_sends_the_corrected_model() {
        let (mut site, ins) = super::super::test_site::one_feature(32, 0.1, 5, 8, 3);
        let cfg = FedSpeedConfig {
            lambda: 4.0,
            ..FedSpeedConfig::default()
        };
        let mut c = FedSpeedClient::new(cfg.clone()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let out = c.fit(&mut site, &ins, &mut rng).unwrap();
        // after the first round ĝ = -(x_K - x_g)/lambda and the site sends
        // x_K - lambda ĝ = 2 x_K - x_g
        let x_k = site.net.parameters().unwrap();
        assert_ne!(x_k, ins.params);
        let mut expected = x_k.sub(&ins.params).unwrap();
        expected.scale(-0.25);
        let g: Option<ParameterSet> = serde_json::from_value(c.save_state().unwrap()).unwrap();
        let g = g.unwrap();
        assert!(close(&g.to_flat(), &expected.to_flat()), "{g:?}");
        let mut sent = x_k.clone();
        sent.add_scaled(&x_k.sub(&ins.params).unwrap(), 1.0)
            .unwrap();
        let (a, b) = (out.params.to_flat(), sent.to_flat());
        assert!(
            a.iter().zip(&b).all(|(a, b)| (a - b).abs() < 1e-5),
            "{a:?} {b:?}"
        );
        // the state survives serialisation; a non-finite one is refused
        let mut d = FedSpeedClient::new(cfg.clone()).unwrap();
        d.load_state(c.save_state().unwrap()).unwrap();
        assert_eq!(d.save_state().unwrap(), c.save_state().unwrap());
        let mut e = FedSpeedClient::new(cfg).unwrap();
        e.load_state(serde_json::Value::Null).unwrap();
        assert_eq!(e.g_hat, None);
        let bad = serde_json::to_value(Some(one(f32::NAN))).unwrap();
        assert!(e.load_state(bad).is_err());
    }
}
