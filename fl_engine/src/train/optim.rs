//! Local optimisers over flat per-variable buffers: SGD (momentum), Adam and AdamW.
//!
//! They are written out rather than taken from candle-nn because a study must stop and
//! resume bit-for-bit: the moment buffers and the step counter are plain `Vec<f32>` that
//! serialise with serde, and they stay at the site between rounds (as in FL4Health, where a
//! client's optimiser persists across rounds). Update rules follow PyTorch exactly:
//!
//! * SGD: `g += wd p; b = mu b + g` (b = g at the first step); `p -= lr b`.
//! * Adam: `g += wd p` (L2), then the AdamW step without decay.
//! * AdamW: `p *= 1 - lr wd`; `m = b1 m + (1-b1) g`; `v = b2 v + (1-b2) g^2`;
//!   `p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)`.
//!
//! On a GPU the same rules run as tensor operations on the device ([`DeviceMoments`]), with
//! the moments copied there once per local training run and back once at its end, so a step
//! never moves a gradient or a value through the host.
use std::collections::BTreeMap;

use candle_core::backprop::GradStore;
use candle_core::{Device, Tensor, Var};
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum OptimizerConfig {
    Sgd {
        lr: f64,
        momentum: f64,
        weight_decay: f64,
    },
    Adam {
        lr: f64,
        beta1: f64,
        beta2: f64,
        eps: f64,
        weight_decay: f64,
    },
    AdamW {
        lr: f64,
        beta1: f64,
        beta2: f64,
        eps: f64,
        weight_decay: f64,
    },
}

impl OptimizerConfig {
    pub fn sgd(lr: f64) -> Self {
        OptimizerConfig::Sgd {
            lr,
            momentum: 0.0,
            weight_decay: 0.0,
        }
    }

    /// PyTorch defaults: betas (0.9, 0.999), eps 1e-8, no weight decay.
    pub fn adam(lr: f64) -> Self {
        OptimizerConfig::Adam {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
        }
    }

    /// PyTorch defaults: betas (0.9, 0.999), eps 1e-8, weight decay 0.01.
    pub fn adamw(lr: f64) -> Self {
        OptimizerConfig::AdamW {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
        }
    }

    pub fn lr(&self) -> f64 {
        match self {
            OptimizerConfig::Sgd { lr, .. }
            | OptimizerConfig::Adam { lr, .. }
            | OptimizerConfig::AdamW { lr, .. } => *lr,
        }
    }

    pub fn validate(&self) -> Result<()> {
        let ok = match self {
            OptimizerConfig::Sgd {
                lr,
                momentum,
                weight_decay,
            } => *lr > 0.0 && (0.0..1.0).contains(momentum) && *weight_decay >= 0.0,
            OptimizerConfig::Adam {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
            }
            | OptimizerConfig::AdamW {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
            } => {
                *lr > 0.0
                    && (0.0..1.0).contains(beta1)
                    && (0.0..1.0).contains(beta2)
                    && *eps > 0.0
                    && *weight_decay >= 0.0
            }
        };
        if ok {
            Ok(())
        } else {
            Err(EngineError::InvalidConfig(format!(
                "optimiser settings out of range: {self:?}"
            )))
        }
    }
}

/// Optimiser with its state; serialisable for checkpoint/resume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Optimizer {
    config: OptimizerConfig,
    step: u64,
    /// First moment (Adam) or momentum buffer (SGD), per variable name.
    pub(super) m: BTreeMap<String, Vec<f32>>,
    /// Second moment (Adam only).
    pub(super) v: BTreeMap<String, Vec<f32>>,
}

impl Optimizer {
    pub fn new(config: OptimizerConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            config,
            step: 0,
            m: BTreeMap::new(),
            v: BTreeMap::new(),
        })
    }

    pub fn config(&self) -> &OptimizerConfig {
        &self.config
    }

    pub fn steps_taken(&self) -> u64 {
        self.step
    }

    /// Start counting a new step; call once before the per-variable `update`s of that step.
    pub fn begin_step(&mut self) {
        self.step += 1;
    }

    /// Update `param` in place from `grad` (already including any local objective terms).
    pub fn update(&mut self, name: &str, param: &mut [f32], grad: &mut [f32]) -> Result<()> {
        self.update_from(name, param, grad)
    }

    /// [`Optimizer::update`] with a read-only gradient. A value the step would make
    /// non-finite keeps its old value, and after the whole variable the update answers
    /// [`EngineError::NonFinite`]: callers update the model's own buffers in place, and a
    /// diverging step must not leave infinities or NaNs in a model.
    pub fn update_from(&mut self, name: &str, param: &mut [f32], grad: &[f32]) -> Result<()> {
        if param.len() != grad.len() {
            return Err(EngineError::LengthMismatch {
                expected: param.len(),
                found: grad.len(),
            });
        }
        if self.step == 0 {
            return Err(EngineError::InvalidConfig(
                "Optimizer::update before begin_step".into(),
            ));
        }
        let n = param.len();
        // look up before inserting: no name allocation on every step
        let first = !self.m.contains_key(name);
        if first {
            self.m.insert(name.to_owned(), vec![0.0; n]);
        }
        let m = self.m.get_mut(name).expect("inserted above");
        if m.len() != n {
            return Err(EngineError::LengthMismatch {
                expected: m.len(),
                found: n,
            });
        }
        let diverged = match self.config {
            OptimizerConfig::Sgd {
                lr,
                momentum,
                weight_decay,
            } => {
                let rule = SgdRule {
                    lr: lr as f32,
                    mu: momentum as f32,
                    wd: weight_decay as f32,
                    first,
                };
                in_parts(param, grad, m, None, &|p, g, m, _| rule.apply(p, g, m))
            }
            OptimizerConfig::Adam {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
            }
            | OptimizerConfig::AdamW {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
            } => {
                let decoupled = matches!(self.config, OptimizerConfig::AdamW { .. });
                if !self.v.contains_key(name) {
                    self.v.insert(name.to_owned(), vec![0.0; n]);
                }
                let v = self.v.get_mut(name).expect("inserted above");
                if v.len() != n {
                    return Err(EngineError::LengthMismatch {
                        expected: v.len(),
                        found: n,
                    });
                }
                let (step_size, bc2_sqrt) = adam_scales(self.step, lr, beta1, beta2);
                let (wd, lr) = (weight_decay as f32, lr as f32);
                // (decay factor, L2 coefficient): at most one of them acts
                let (decay, l2) = match (wd != 0.0, decoupled) {
                    (false, _) => (None, 0.0),
                    (true, true) => (Some(1.0 - lr * wd), 0.0),
                    (true, false) => (None, wd),
                };
                let rule = AdamRule {
                    step_size: step_size as f32,
                    bc2_sqrt: bc2_sqrt as f32,
                    b1: beta1 as f32,
                    b2: beta2 as f32,
                    eps: eps as f32,
                    decay,
                    l2,
                };
                in_parts(param, grad, m, Some(v), &|p, g, m, v| {
                    rule.apply(p, g, m, v.expect("Adam keeps a second moment"))
                })
            }
        };
        if diverged {
            return Err(EngineError::NonFinite(name.to_owned()));
        }
        Ok(())
    }
}

/// Variables of at least this many values are updated in parts on rayon's threads (when
/// there are several). Past the caches the element loops are bound by memory, and each core
/// adds its own bandwidth; below this size waking another thread costs more than it saves.
/// Chosen on a 2-vCPU guest (docs/benchmarks.md, "Optimiser and weight gradients"): 2^15
/// made the 512/256 MLP's loop no faster, 2^18 made the loops of the 1M- to 9.5M-parameter
/// MLPs 10-20 % faster. Results do not depend on the split: every value is updated on its own.
const PARALLEL_FROM: usize = 1 << 18;

/// `rule` over `(param, grad, m, v)`, in halves on rayon's threads down to parts below
/// [`PARALLEL_FROM`] values. Answers whether any value would have turned non-finite.
fn in_parts<F>(p: &mut [f32], g: &[f32], m: &mut [f32], v: Option<&mut [f32]>, rule: &F) -> bool
where
    F: Fn(&mut [f32], &[f32], &mut [f32], Option<&mut [f32]>) -> bool + Sync,
{
    if p.len() < PARALLEL_FROM || rayon::current_num_threads() < 2 {
        return rule(p, g, m, v);
    }
    let mid = p.len() / 2;
    let (p0, p1) = p.split_at_mut(mid);
    let (g0, g1) = g.split_at(mid);
    let (m0, m1) = m.split_at_mut(mid);
    let (v0, v1) = match v {
        Some(v) => {
            let (a, b) = v.split_at_mut(mid);
            (Some(a), Some(b))
        }
        None => (None, None),
    };
    let (a, b) = rayon::join(
        || in_parts(p0, g0, m0, v0, rule),
        || in_parts(p1, g1, m1, v1, rule),
    );
    a | b
}

/// SGD's element loop, constants in `f32`. Branch-free per element (a value that would
/// turn non-finite is kept by a select), so it vectorises.
#[derive(Clone, Copy)]
struct SgdRule {
    lr: f32,
    mu: f32,
    wd: f32,
    /// The variable's first step: the momentum buffer starts as the gradient.
    first: bool,
}

impl SgdRule {
    fn apply(&self, param: &mut [f32], grad: &[f32], m: &mut [f32]) -> bool {
        let Self { lr, mu, wd, first } = *self;
        let mut diverged = false;
        for ((p, &g), m) in param.iter_mut().zip(grad).zip(m.iter_mut()) {
            let mut g = g;
            if wd != 0.0 {
                g += wd * *p;
            }
            if mu != 0.0 {
                *m = if first {
                    g
                } else {
                    flush_subnormal(mu * *m + g)
                };
                g = *m;
            }
            let new = *p - lr * g;
            diverged |= !new.is_finite();
            *p = if new.is_finite() { new } else { *p };
        }
        diverged
    }
}

/// Adam's and AdamW's element loop, constants in `f32`, the arithmetic of the module doc;
/// branch-free like [`SgdRule`]'s.
#[derive(Clone, Copy)]
struct AdamRule {
    step_size: f32,
    bc2_sqrt: f32,
    b1: f32,
    b2: f32,
    eps: f32,
    /// AdamW's decoupled decay factor `1 - lr wd`.
    decay: Option<f32>,
    /// Adam's L2 coefficient.
    l2: f32,
}

impl AdamRule {
    fn apply(&self, param: &mut [f32], grad: &[f32], m: &mut [f32], v: &mut [f32]) -> bool {
        let Self {
            step_size,
            bc2_sqrt,
            b1,
            b2,
            eps,
            decay,
            l2,
        } = *self;
        let mut diverged = false;
        for (((p, &g), m), v) in param
            .iter_mut()
            .zip(grad)
            .zip(m.iter_mut())
            .zip(v.iter_mut())
        {
            let mut g = g;
            let mut new = *p;
            if let Some(d) = decay {
                new *= d;
            }
            if l2 != 0.0 {
                g += l2 * new;
            }
            *m = flush_subnormal(b1 * *m + (1.0 - b1) * g);
            *v = flush_subnormal(b2 * *v + (1.0 - b2) * g * g);
            let denom = v.sqrt() / bc2_sqrt + eps;
            new -= step_size * *m / denom;
            diverged |= !new.is_finite();
            *p = if new.is_finite() { new } else { *p };
        }
        diverged
    }
}

/// Adam's bias corrections at step `t`: the step size `lr / (1 - b1^t)` and `sqrt(1 - b2^t)`,
/// which divides `sqrt(v)`.
fn adam_scales(t: u64, lr: f64, beta1: f64, beta2: f64) -> (f64, f64) {
    let t = t as i32;
    (lr / (1.0 - beta1.powi(t)), (1.0 - beta2.powi(t)).sqrt())
}

/// The optimiser's moments as tensors on the model's device for one local training run:
/// [`Optimizer::moments_on`] copies them there, [`Optimizer::step_on_device`] updates them
/// and the variables with device operations, [`Optimizer::keep_moments`] copies them back
/// into the optimiser's serialisable state. Flat, one tensor per variable name.
pub(crate) struct DeviceMoments {
    device: Device,
    m: BTreeMap<String, Tensor>,
    v: BTreeMap<String, Tensor>,
}

impl Optimizer {
    /// The moments so far, copied to `device`.
    pub(crate) fn moments_on(&self, device: &Device) -> Result<DeviceMoments> {
        let upload = |state: &BTreeMap<String, Vec<f32>>| -> Result<BTreeMap<String, Tensor>> {
            state
                .iter()
                .map(|(name, values)| {
                    Ok((
                        name.clone(),
                        Tensor::from_slice(values, values.len(), device)?,
                    ))
                })
                .collect()
        };
        Ok(DeviceMoments {
            device: device.clone(),
            m: upload(&self.m)?,
            v: upload(&self.v)?,
        })
    }

    /// Copies the moments back into the optimiser's own state (one transfer per variable).
    pub(crate) fn keep_moments(&mut self, moments: DeviceMoments) -> Result<()> {
        for (name, t) in moments.m {
            self.m.insert(name, t.to_vec1::<f32>()?);
        }
        for (name, t) in moments.v {
            self.v.insert(name, t.to_vec1::<f32>()?);
        }
        Ok(())
    }

    /// One step of every variable that `grads` reaches, as device operations: the rules of
    /// the module doc without the subnormal flush (a GPU has no slow path for them). The new
    /// values are checked together, with one read-back per step; a step that would make any
    /// value non-finite changes no variable and answers [`EngineError::NonFinite`]. Call
    /// [`Optimizer::begin_step`] first.
    pub(crate) fn step_on_device(
        &mut self,
        moments: &mut DeviceMoments,
        vars: &[(String, Var)],
        grads: &GradStore,
    ) -> Result<()> {
        if self.step == 0 {
            return Err(EngineError::InvalidConfig(
                "Optimizer::step_on_device before begin_step".into(),
            ));
        }
        let mut updated = Vec::with_capacity(vars.len());
        for (name, var) in vars {
            let Some(g) = grads.get(var.as_tensor()) else {
                continue;
            };
            let p = var.as_tensor().flatten_all()?;
            let g = g.flatten_all()?;
            let new = self.device_rule(moments, name, &p, g)?;
            updated.push((name, var, new));
        }
        if updated.is_empty() {
            return Ok(());
        }
        // NaN and infinities survive a sum; so does an overflow of the sum, which a
        // diverging model is no further from
        let sums = updated
            .iter()
            .map(|(_, _, new)| new.sum_all())
            .collect::<candle_core::Result<Vec<_>>>()?;
        let total = Tensor::stack(&sums, 0)?.sum_all()?.to_scalar::<f32>()?;
        if !total.is_finite() {
            let names: Vec<&str> = updated.iter().map(|(n, _, _)| n.as_str()).collect();
            return Err(EngineError::NonFinite(names.join(", ")));
        }
        for (_, var, new) in updated {
            var.set(&new.reshape(var.shape())?)?;
        }
        Ok(())
    }

    /// The new flat values of one variable from its flat values `p` and gradient `g`,
    /// advancing its moments in `moments`.
    fn device_rule(
        &self,
        moments: &mut DeviceMoments,
        name: &str,
        p: &Tensor,
        mut g: Tensor,
    ) -> Result<Tensor> {
        let n = p.elem_count();
        let zeros = || Tensor::zeros(n, candle_core::DType::F32, &moments.device);
        let check = |t: &Tensor| {
            if t.elem_count() == n {
                Ok(())
            } else {
                Err(EngineError::LengthMismatch {
                    expected: t.elem_count(),
                    found: n,
                })
            }
        };
        match self.config {
            OptimizerConfig::Sgd {
                lr,
                momentum,
                weight_decay,
            } => {
                if weight_decay != 0.0 {
                    g = (g + p.affine(weight_decay, 0.0)?)?;
                }
                if momentum != 0.0 {
                    let b = match moments.m.get(name) {
                        Some(m) => {
                            check(m)?;
                            (m.affine(momentum, 0.0)? + &g)?
                        }
                        None => g,
                    };
                    moments.m.insert(name.to_owned(), b.clone());
                    g = b;
                }
                Ok((p - g.affine(lr, 0.0)?)?)
            }
            OptimizerConfig::Adam {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
            }
            | OptimizerConfig::AdamW {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
            } => {
                let decoupled = matches!(self.config, OptimizerConfig::AdamW { .. });
                let mut p = p.clone();
                if weight_decay != 0.0 {
                    if decoupled {
                        p = p.affine(1.0 - lr * weight_decay, 0.0)?;
                    } else {
                        g = (g + p.affine(weight_decay, 0.0)?)?;
                    }
                }
                let m = match moments.m.get(name) {
                    Some(m) => m.clone(),
                    None => zeros()?,
                };
                let v = match moments.v.get(name) {
                    Some(v) => v.clone(),
                    None => zeros()?,
                };
                check(&m)?;
                check(&v)?;
                let m = (m.affine(beta1, 0.0)? + g.affine(1.0 - beta1, 0.0)?)?;
                let v = (v.affine(beta2, 0.0)? + g.sqr()?.affine(1.0 - beta2, 0.0)?)?;
                let (step_size, bc2_sqrt) = adam_scales(self.step, lr, beta1, beta2);
                let denom = v.sqrt()?.affine(1.0 / bc2_sqrt, eps)?;
                let new = (p - (m.affine(step_size, 0.0)? / denom)?)?;
                moments.m.insert(name.to_owned(), m);
                moments.v.insert(name.to_owned(), v);
                Ok(new)
            }
        }
    }
}

/// Zero for a subnormal moment. A weight whose gradient stays zero (a dead ReLU unit, a
/// dropped input) has moments that decay geometrically into the subnormal range, where every
/// multiply and divide on them takes a slow microcode path: a 512/256 MLP spent most of its
/// step there. A subnormal first moment moves a weight by at most about `lr * 1e-30`, far
/// below the resolution of any weight that is not itself that small.
#[inline(always)]
fn flush_subnormal(x: f32) -> f32 {
    if x.abs() < f32::MIN_POSITIVE {
        0.0
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_step(cfg: OptimizerConfig, p: f32, g: f32) -> f32 {
        let mut opt = Optimizer::new(cfg).unwrap();
        let mut param = [p];
        opt.begin_step();
        opt.update("w", &mut param, &mut [g]).unwrap();
        param[0]
    }

    #[test]
    fn sgd_step_and_momentum() {
        assert!((one_step(OptimizerConfig::sgd(0.1), 1.0, 2.0) - 0.8).abs() < 1e-7);
        // torch.optim.SGD([p], lr=0.1, momentum=0.9) with grads 1 then 1: buf 1 then 1.9
        let mut opt = Optimizer::new(OptimizerConfig::Sgd {
            lr: 0.1,
            momentum: 0.9,
            weight_decay: 0.0,
        })
        .unwrap();
        let mut p = [0.0f32];
        for _ in 0..2 {
            opt.begin_step();
            opt.update("w", &mut p, &mut [1.0]).unwrap();
        }
        assert!((p[0] + 0.29).abs() < 1e-6);
    }

    #[test]
    fn adam_first_step_moves_by_lr() {
        // Bias correction makes the first Adam step exactly lr * sign(g) (up to eps).
        assert!((one_step(OptimizerConfig::adam(0.01), 1.0, 5.0) - 0.99).abs() < 1e-6);
        assert!((one_step(OptimizerConfig::adam(0.01), 1.0, -0.001) - 1.01).abs() < 1e-5);
    }

    #[test]
    fn adamw_decays_decoupled() {
        // torch.optim.AdamW([p=1.0], lr=0.1, weight_decay=0.01), grad 2.0:
        // p = 1 * (1 - 0.001) - 0.1 = 0.899
        let p = one_step(OptimizerConfig::adamw(0.1), 1.0, 2.0);
        assert!((p - 0.899).abs() < 1e-6);
    }

    #[test]
    fn state_round_trips_through_json() {
        let mut opt = Optimizer::new(OptimizerConfig::adamw(0.1)).unwrap();
        let mut p = [1.0f32, 2.0];
        opt.begin_step();
        opt.update("w", &mut p, &mut [0.3, -0.7]).unwrap();
        let back: Optimizer = serde_json::from_str(&serde_json::to_string(&opt).unwrap()).unwrap();
        assert_eq!(back, opt);
    }

    #[test]
    fn a_diverging_step_keeps_the_old_values_and_is_an_error() {
        let mut opt = Optimizer::new(OptimizerConfig::sgd(1e38)).unwrap();
        let mut p = [1.0f32, 2.0];
        opt.begin_step();
        let err = opt.update_from("w", &mut p, &[1e10, 0.0]).unwrap_err();
        assert!(
            matches!(err, EngineError::NonFinite(ref n) if n == "w"),
            "{err:?}"
        );
        assert_eq!(p, [1.0, 2.0]);
    }

    #[test]
    fn moments_never_turn_subnormal() {
        let mut opt = Optimizer::new(OptimizerConfig::adam(0.01)).unwrap();
        let mut p = [1.0f32];
        for step in 0..2000 {
            opt.begin_step();
            // one gradient, then none: the moments decay geometrically
            let g = if step == 0 { 1e-3 } else { 0.0 };
            opt.update_from("w", &mut p, &[g]).unwrap();
        }
        let (m, v) = (opt.m["w"][0], opt.v["w"][0]);
        assert!(m == 0.0 || m.is_normal(), "{m:e}");
        assert!(v == 0.0 || v.is_normal(), "{v:e}");
        assert_eq!(m, 0.0, "0.9^2000 * 1e-4 is far below the normal range");
    }

    /// A variable large enough to be updated in parts on several threads ends where one
    /// thread leaves it, value for value, moments included, and a value that would turn
    /// non-finite in the second part is kept and reported as on one thread.
    #[test]
    fn an_update_in_parts_matches_one_thread() {
        let n = 3 * PARALLEL_FROM + 7;
        let grads = |step: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * 31 + step * 17) % 101) as f32 / 50.0 - 1.0)
                .collect()
        };
        let configs = [
            OptimizerConfig::adam(0.01),
            OptimizerConfig::adamw(0.01),
            OptimizerConfig::Adam {
                lr: 0.01,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: 0.1,
            },
            OptimizerConfig::Sgd {
                lr: 0.1,
                momentum: 0.9,
                weight_decay: 0.01,
            },
        ];
        for cfg in configs {
            let run = |threads: usize| {
                crate::device::on_threads(threads, || {
                    let mut opt = Optimizer::new(cfg.clone()).unwrap();
                    let mut p: Vec<f32> = (0..n).map(|i| (i % 13) as f32 / 13.0).collect();
                    for step in 0..3 {
                        opt.begin_step();
                        opt.update_from("w", &mut p, &grads(step)).unwrap();
                    }
                    // one infinite gradient, in the last part
                    let mut g = grads(3);
                    g[n - 3] = f32::INFINITY;
                    opt.begin_step();
                    let diverged = opt.update_from("w", &mut p, &g).is_err();
                    (p, opt, diverged)
                })
            };
            let (one, opt_one, diverged_one) = run(1);
            let (four, opt_four, diverged_four) = run(4);
            assert!(
                one.iter()
                    .zip(&four)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{cfg:?}"
            );
            assert_eq!(opt_one, opt_four, "{cfg:?}");
            assert!(diverged_one && diverged_four, "{cfg:?}");
            assert!(four[n - 3].is_finite(), "{cfg:?}");
        }
    }

    #[test]
    fn invalid_settings_rejected() {
        assert!(Optimizer::new(OptimizerConfig::sgd(-1.0)).is_err());
        assert!(Optimizer::new(OptimizerConfig::Adam {
            lr: 0.1,
            beta1: 1.0,
            beta2: 0.9,
            eps: 1e-8,
            weight_decay: 0.0
        })
        .is_err());
    }
}
