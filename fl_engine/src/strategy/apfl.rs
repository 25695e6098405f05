//! APFL, adaptive personalised federated learning (Deng, Kamani and Mahdavi 2020,
//! arXiv:2003.13461).
//!
//! The model is a [`ModelSpec::Apfl`]: a global twin w under `global.` (sent and averaged
//! with FedAvg) and a local twin v under `local.` (never leaves the site); the site's
//! personalised prediction mixes the twins' *outputs*, `o = alpha l(v; x) + (1 - alpha) g(w; x)`,
//! with a mixing weight alpha in [0, 1] learnt per site.
//!
//! One local step on one mini-batch (x, y), every gradient taken at the parameters before the
//! step (the simultaneous form of Algorithm 1 of the paper):
//!
//! ```text
//! w     <- opt(w, grad_w L(g(w; x), y))                       global twin, its own output
//! v     <- opt(v, grad_v L(o, y))                             local twin, the mixed output
//! alpha <- clip(alpha - lr_a (dL(o, y)/dalpha + l2 alpha), 0, 1)
//! ```
//!
//! where `L` is the configured task loss (batch mean) and `opt` the site's optimiser (one
//! optimiser over both twins; its per-parameter state makes that the same as two optimisers
//! with one configuration, as in FL4Health). The server averages `global.` through the
//! [`Aggregator`](super::Aggregator) like FedAvg.
//!
//! Choices the paper leaves open, and what this implementation does:
//! * **alpha gradient.** The paper mixes parameters, `v_bar = alpha v + (1 - alpha) w`, and its
//!   alpha gradient is `<v - w, grad f(v_bar)>`. The engine (like FL4Health) mixes outputs, for
//!   which that inner product is not a derivative of anything; this implementation uses the
//!   exact derivative of the mixed loss, `dL/dalpha = <dL/do, l(v; x) - g(w; x)>`, obtained by
//!   automatic differentiation through `o`. For linear twins (logistic regression) output and
//!   parameter mixing coincide and both expressions are equal.
//! * **l2 term.** `l2 alpha` (default 0.02, i.e. a penalty `0.01 alpha^2`) is the regulariser of
//!   the authors' public code, kept by FL4Health; the paper's equations do not have it.
//! * **alpha every step.** alpha is updated after every local step, as in Algorithm 1.
//! * **Initial alpha.** [`ApflConfig::alpha_init`] (paper: 0.5) overrides the `alpha` in the
//!   model spec, which is only the value a freshly built net starts with.
//! * **Reported loss.** The task loss of the mixed (personalised) output.
//!
//! alpha and the local twin are the site's private state: the local twin lives in the site's
//! net (outside the shared selector) and is saved with the site; alpha is this client's state.
//! The site evaluates the mixed model with its own alpha; [`ApflClient::evaluation_net`] returns
//! a net whose spec carries that alpha, so copies and checkpoints of it keep the site's mix.
//!
//! Record-level DP is refused: a step makes three coupled updates from one batch (w, v and
//! alpha, the latter two through the same mixed loss), which the engine's DP-SGD step (one
//! clipped per-example gradient of the task loss) does not cover.
use candle_core::{Tensor, Var};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::methods::check_train;
use super::{ClientStrategy, FitIns, FitRes, MethodSpec, Site, Support};
use crate::error::{EngineError, Result};
use crate::model::{ModelSpec, Net};
use crate::params::{ParameterSet, Selector};
use crate::train::{apply_gradient, steps_in, Batcher, LossKind, Optimizer, TrainReport};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct ApflConfig {
    /// Mixing weight every site starts with (paper: 0.5).
    pub alpha_init: f32,
    /// Step size of the alpha update (FL4Health's Fed-Heart-Disease run: 0.1).
    pub alpha_lr: f32,
    /// Coefficient of the `l2 alpha` term added to the alpha gradient (authors' code: 0.02).
    pub alpha_l2: f32,
}

impl Default for ApflConfig {
    fn default() -> Self {
        Self {
            alpha_init: 0.5,
            alpha_lr: 0.1,
            alpha_l2: 0.02,
        }
    }
}

/// The site's twins with mixing weight `alpha`; an error for models that are not twins.
fn twins_with_alpha(spec: &ModelSpec, alpha: f32) -> Result<ModelSpec> {
    spec.with_alpha(alpha).ok_or_else(|| {
        EngineError::InvalidConfig(format!(
            "APFL needs an Apfl model (global and local twin), got {spec:?}"
        ))
    })
}

/// What one APFL step computed (all at the parameters before the step).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ApflStep {
    /// Task loss of the mixed output.
    pub mixed_loss: f32,
    /// Task loss of the global twin's own output.
    pub global_loss: f32,
    /// `dL(o, y) / dalpha`.
    pub alpha_grad: f32,
}

/// One APFL step on `(x, y)`: the global twin on its own loss, the local twin on the mixed
/// loss, both applied with `opt`; returns the losses and the alpha gradient (alpha itself is
/// updated by the caller).
pub(crate) fn apfl_step(
    net: &Net,
    opt: &mut Optimizer,
    loss: &LossKind,
    x: &Tensor,
    y: &[u32],
    alpha: f32,
    rng: &mut ChaCha8Rng,
) -> Result<ApflStep> {
    let out = net.forward_features(x, Some(rng))?;
    let missing = |n: &str| EngineError::InvalidConfig(format!("APFL model has no `{n}` output"));
    let g = out.feature("global").ok_or_else(|| missing("global"))?;
    let l = out.feature("local").ok_or_else(|| missing("local"))?;
    // the mixture rebuilt with alpha as a variable, so backward also gives dL/dalpha
    let a = Var::from_tensor(&Tensor::new(&[alpha], x.device())?)?;
    let one_minus_a = a.as_tensor().affine(-1.0, 1.0)?;
    let mixed = (l.broadcast_mul(a.as_tensor())? + g.broadcast_mul(&one_minus_a)?)?;
    let global_t = loss.compute(g, y)?;
    let mixed_t = loss.compute(&mixed, y)?;
    let global_loss = global_t.to_scalar::<f32>()?;
    let mixed_loss = mixed_t.to_scalar::<f32>()?;
    if !global_loss.is_finite() || !mixed_loss.is_finite() {
        return Err(EngineError::NonFinite("training loss".into()));
    }
    let global_grads = crate::model::backward(&global_t)?;
    let mixed_grads = crate::model::backward(&mixed_t)?;
    let mut grads = ParameterSet::new();
    for (name, var) in net.vars() {
        let source = if name.starts_with("global.") {
            &global_grads
        } else if name.starts_with("local.") {
            &mixed_grads
        } else {
            continue;
        };
        if let Some(gr) = source.get(var.as_tensor()) {
            grads.insert(
                name.clone(),
                var.dims().to_vec(),
                gr.flatten_all()?.to_vec1::<f32>()?,
            )?;
        }
    }
    let alpha_grad = match mixed_grads.get(a.as_tensor()) {
        Some(t) => t.flatten_all()?.to_vec1::<f32>()?.first().copied(),
        None => None,
    }
    .ok_or_else(|| EngineError::NonFinite("APFL alpha gradient".into()))?;
    if !alpha_grad.is_finite() {
        return Err(EngineError::NonFinite("APFL alpha gradient".into()));
    }
    apply_gradient(net, opt, &grads, &[])?;
    Ok(ApflStep {
        mixed_loss,
        global_loss,
        alpha_grad,
    })
}

/// `clip(alpha - lr (grad + l2 alpha), 0, 1)`.
pub(crate) fn next_alpha(alpha: f32, grad: f32, lr: f32, l2: f32) -> f32 {
    (alpha - lr * (grad + l2 * alpha)).clamp(0.0, 1.0)
}

pub struct ApflClient {
    config: ApflConfig,
    /// This site's mixing weight.
    alpha: f32,
    /// The personalised model last handed out by `evaluation_net` (rebuilt on every call).
    eval: Option<Net>,
}

#[derive(Serialize, Deserialize)]
struct ApflState {
    alpha: f32,
}

impl ApflClient {
    pub fn new(config: ApflConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            alpha: config.alpha_init,
            config,
            eval: None,
        })
    }

    /// The site's current mixing weight.
    pub fn alpha(&self) -> f32 {
        self.alpha
    }
}

impl ClientStrategy for ApflClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        if site.data.train.is_empty() {
            return Err(EngineError::ZeroSamples(site.name().to_string()));
        }
        twins_with_alpha(site.net.spec(), self.alpha)?;
        site.train.validate()?;
        site.begin_round()?;
        site.net.load(&ins.params)?;
        site.net.set_mixing(self.alpha);
        let cfg = &site.train;
        let steps = steps_in(cfg.budget, site.data.train.len(), cfg.batch_size);
        let mut batcher = Batcher::new(&site.data.train, cfg.batch_size)?;
        let mut total = 0.0f64;
        for _ in 0..steps {
            let (x, y) = batcher.next_batch(rng)?;
            let s = apfl_step(
                &site.net,
                &mut site.optimizer,
                &cfg.loss,
                &x,
                y,
                self.alpha,
                rng,
            )?;
            total += s.mixed_loss as f64;
            self.alpha = next_alpha(
                self.alpha,
                s.alpha_grad,
                self.config.alpha_lr,
                self.config.alpha_l2,
            );
            site.net.set_mixing(self.alpha);
        }
        Ok(FitRes {
            site: site.name().to_string(),
            num_examples: site.data.train.len(),
            params: site.net.parameters()?.select(&Selector::prefix("global.")),
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
        site.net.set_mixing(self.alpha);
        let spec = twins_with_alpha(site.net.spec(), self.alpha)?;
        let net = self
            .eval
            .insert(Net::with_parameters(&spec, &site.net.parameters()?)?);
        Ok(net)
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(ApflState { alpha: self.alpha })?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        let s: ApflState = serde_json::from_value(state)?;
        if !(0.0..=1.0).contains(&s.alpha) {
            return Err(EngineError::InvalidConfig(format!(
                "APFL state: alpha {} is outside [0, 1]",
                s.alpha
            )));
        }
        self.alpha = s.alpha;
        self.eval = None;
        Ok(())
    }
}

impl MethodSpec for ApflConfig {
    fn name(&self) -> &'static str {
        "APFL"
    }

    fn validate(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.alpha_init) {
            return Err(EngineError::InvalidConfig(format!(
                "APFL alpha_init must be in [0, 1], got {}",
                self.alpha_init
            )));
        }
        if !(self.alpha_lr >= 0.0 && self.alpha_lr.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "APFL alpha_lr must be finite and >= 0, got {}",
                self.alpha_lr
            )));
        }
        if !(self.alpha_l2 >= 0.0 && self.alpha_l2.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "APFL alpha_l2 must be finite and >= 0, got {}",
                self.alpha_l2
            )));
        }
        Ok(())
    }

    fn shared(&self) -> Selector {
        Selector::prefix("global.")
    }

    fn personalised(&self) -> bool {
        true
    }

    fn check_model(&self, spec: &ModelSpec) -> Result<()> {
        self.validate()?;
        twins_with_alpha(spec, 0.5).map(|_| ())
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(ApflClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No(
            "each step updates the global twin, the local twin and alpha from one batch, \
             and the DP-SGD step only privatises one per-example task-loss gradient",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Dataset, SiteData};
    use crate::model::MlpConfig;
    use crate::train::{Budget, OptimizerConfig, TrainConfig};
    use candle_core::Device;
    use rand::SeedableRng;

    fn linear_twins() -> ModelSpec {
        ModelSpec::Apfl {
            twin: MlpConfig {
                inputs: 1,
                hidden: vec![],
                outputs: 1,
                dropout: 0.0,
            },
            alpha: 0.5,
        }
    }

    fn set(net: &Net, w: f32, bw: f32, v: f32, bv: f32) {
        let mut p = ParameterSet::new();
        p.insert("global.out.weight", vec![1, 1], vec![w]).unwrap();
        p.insert("global.out.bias", vec![1], vec![bw]).unwrap();
        p.insert("local.out.weight", vec![1, 1], vec![v]).unwrap();
        p.insert("local.out.bias", vec![1], vec![bv]).unwrap();
        net.load(&p).unwrap();
    }

    fn value(p: &ParameterSet, name: &str) -> f32 {
        p.get(name).unwrap().values[0]
    }

    #[test]
    fn one_step_by_hand() {
        // Linear twins, x = 1, y = 1, BCE, SGD lr 0.1, alpha 0.5, lr_a 0.1, l2 0.02.
        // w = 1, b_w = 0: g = 1;  v = 3, b_v = 0: l = 3;  o = 0.5*3 + 0.5*1 = 2.
        // grad_w = grad_bw = sigmoid(1) - 1 = -0.26894142
        // grad_v = grad_bv = alpha (sigmoid(2) - 1) = 0.5 * -0.11920292 = -0.05960146
        // dL/dalpha = (sigmoid(2) - 1)(l - g) = -0.11920292 * 2 = -0.23840584
        //   (= the paper's <v - w, grad f(v_bar)> = (2, 0).(-0.1192, -0.1192): linear twins)
        // w = 1.026894142, b_w = 0.026894142, v = 3.005960146, b_v = 0.005960146
        // alpha = 0.5 - 0.1 (-0.23840584 + 0.02 * 0.5) = 0.522840584
        let net = Net::new(&linear_twins(), 0).unwrap();
        set(&net, 1.0, 0.0, 3.0, 0.0);
        net.set_mixing(0.5);
        let mut opt = Optimizer::new(OptimizerConfig::sgd(0.1)).unwrap();
        let x = Tensor::new(&[[1.0f32]], &Device::Cpu).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let s = apfl_step(&net, &mut opt, &LossKind::bce(), &x, &[1], 0.5, &mut rng).unwrap();
        assert!((s.alpha_grad + 0.238_405_84).abs() < 1e-6, "{s:?}");
        assert!((s.global_loss - 0.313_261_7).abs() < 1e-6); // softplus(-1)
        assert!((s.mixed_loss - 0.126_928_01).abs() < 1e-6); // softplus(-2)
        let p = net.parameters().unwrap();
        for (name, want) in [
            ("global.out.weight", 1.026_894_1),
            ("global.out.bias", 0.026_894_142),
            ("local.out.weight", 3.005_96),
            ("local.out.bias", 0.005_960_146),
        ] {
            assert!((value(&p, name) - want).abs() < 1e-6, "{name}");
        }
        let a = next_alpha(0.5, s.alpha_grad, 0.1, 0.02);
        assert!((a - 0.522_840_6).abs() < 1e-6);
        // projection onto [0, 1]
        assert_eq!(next_alpha(0.9, -10.0, 0.1, 0.0), 1.0);
        assert_eq!(next_alpha(0.1, 10.0, 0.1, 0.0), 0.0);
    }

    #[test]
    fn config_is_validated() {
        assert!(ApflConfig::default().validate().is_ok());
        for bad in [
            ApflConfig {
                alpha_init: 1.5,
                ..Default::default()
            },
            ApflConfig {
                alpha_lr: -0.1,
                ..Default::default()
            },
            ApflConfig {
                alpha_l2: f32::NAN,
                ..Default::default()
            },
        ] {
            assert!(matches!(
                ApflClient::new(bad.clone()),
                Err(EngineError::InvalidConfig(_))
            ));
            assert!(bad.check_model(&linear_twins()).is_err());
        }
        assert!(ApflConfig::default()
            .check_model(&ModelSpec::logistic(2, 1))
            .is_err());
    }

    fn site(record_dp: bool) -> Site {
        let rows = |n: usize| {
            let x: Vec<f32> = (0..n).map(|i| i as f32 / n as f32 - 0.5).collect();
            let y = x.iter().map(|v| u32::from(*v > 0.0)).collect();
            Dataset::new(1, x, y).unwrap()
        };
        let train = TrainConfig {
            optimizer: OptimizerConfig::sgd(0.1),
            budget: Budget::Steps(5),
            batch_size: 4,
            loss: LossKind::bce(),
            record_dp: record_dp.then_some(crate::train::RecordDp {
                clip_norm: 1.0,
                noise_multiplier: 1.0,
                sampling_rate: 0.1,
            }),
        };
        let data = SiteData {
            name: "a".into(),
            train: rows(16),
            val: rows(4),
            test: rows(4),
        };
        Site::new(data, &linear_twins(), train, 3).unwrap()
    }

    #[test]
    fn state_round_trips_and_evaluation_uses_the_sites_alpha() {
        let mut site = site(false);
        let mut client = ApflClient::new(ApflConfig::default()).unwrap();
        let global = site
            .net
            .parameters()
            .unwrap()
            .select(&Selector::prefix("global."));
        let ins = FitIns {
            round: 1,
            params: global.clone(),
            extras: ParameterSet::new(),
        };
        let res = client
            .fit(&mut site, &ins, &mut ChaCha8Rng::seed_from_u64(1))
            .unwrap();
        assert!(res.params.names().all(|n| n.starts_with("global.")));
        assert_ne!(client.alpha(), 0.5);
        let alpha = client.alpha();
        let eval = client.evaluation_net(&mut site, &res.params).unwrap();
        assert_eq!(
            eval.spec(),
            &twins_with_alpha(&linear_twins(), alpha).unwrap()
        );
        let eval_params = eval.parameters().unwrap();
        let mut other = ApflClient::new(ApflConfig::default()).unwrap();
        other.load_state(client.save_state().unwrap()).unwrap();
        assert_eq!(other.alpha.to_bits(), client.alpha.to_bits());
        let again = other.evaluation_net(&mut site, &res.params).unwrap();
        assert_eq!(again.parameters().unwrap(), eval_params);
        assert!(other
            .load_state(serde_json::json!({ "alpha": 2.0 }))
            .is_err());
    }

    #[test]
    fn record_dp_is_refused() {
        let mut site = site(true);
        let mut client = ApflClient::new(ApflConfig::default()).unwrap();
        let ins = FitIns {
            round: 1,
            params: ParameterSet::new(),
            extras: ParameterSet::new(),
        };
        assert!(matches!(
            client.fit(&mut site, &ins, &mut ChaCha8Rng::seed_from_u64(1)),
            Err(EngineError::InvalidConfig(_))
        ));
    }
}
