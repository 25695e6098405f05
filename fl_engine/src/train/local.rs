//! The local step loop.
//!
//! A step is: forward on one mini-batch, task loss, candle backward, then for each variable
//! (in canonical name order) the gradient is read out, the strategy's local objective terms
//! add their analytic gradients (proximal pull, control-variate correction), and the
//! optimiser updates the values in place. Adding `mu (w - w_g)` directly is exactly the
//! gradient of `(mu/2)||w - w_g||^2` and saves building that graph on every step.
//!
//! Mini-batches follow PyTorch's `DataLoader(shuffle=True, drop_last=False)`: a fresh
//! permutation per pass, the last batch may be short. Every random draw (shuffling,
//! dropout) comes from the caller's seeded ChaCha stream.
//!
//! With [`TrainConfig::record_dp`] set, [`train_local`] runs DP-SGD instead (see `dp_step`):
//! Poisson batches and per-example clipping, with sampling and noise drawn from a ChaCha20
//! [`NoiseRng`] the caller passes in; the objective terms and optimiser are the same.
use candle_core::backprop::GradStore;
use candle_core::{Tensor, Var};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::dp_step::{missing_noise, train_private, RecordDp};
use super::loss::{scalar, LossKind};
use super::optim::{Optimizer, OptimizerConfig};
use crate::data::{Dataset, Task};
use crate::dp::NoiseRng;
use crate::error::{EngineError, Result};
use crate::metrics::{
    choose_threshold, cox_partial_nll, MetricSummary, SurvivalData, ThresholdRule,
};
use crate::model::{ModelOutput, Net};
use crate::params::{with_values, with_values_mut, ParameterSet};

/// How much local work one round does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Budget {
    Steps(usize),
    Epochs(usize),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    pub optimizer: OptimizerConfig,
    pub budget: Budget,
    /// Mini-batch size; not used under `record_dp` (batches are Poisson samples there).
    pub batch_size: usize,
    pub loss: LossKind,
    /// Record-level DP-SGD for every local step. Requires a [`Budget::Steps`] budget, so a
    /// round's privacy cost does not depend on the site's size. Absent in older serialised
    /// configs (read as `None`) and omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_dp: Option<RecordDp>,
}

impl TrainConfig {
    pub fn validate(&self) -> Result<()> {
        self.optimizer.validate()?;
        match &self.record_dp {
            None if self.batch_size == 0 => Err(EngineError::InvalidConfig(
                "batch size must be positive".into(),
            )),
            None => Ok(()),
            Some(_) if !self.loss.decomposes() => Err(EngineError::InvalidConfig(format!(
                "record-level DP-SGD clips each example's gradient, and the {:?} loss has no \
                 per-example loss (each event's risk set is the whole batch, so one record \
                 changes every other record's term); use client-level DP instead",
                self.loss
            ))),
            Some(dp) => {
                dp.validate()?;
                match self.budget {
                    Budget::Steps(_) => Ok(()),
                    Budget::Epochs(_) => Err(EngineError::InvalidConfig(
                        "record-level DP needs a budget in steps (Budget::Steps): the privacy \
                         accountant must know a round's steps independently of the site's size"
                            .into(),
                    )),
                }
            }
        }
    }
}

/// Number of optimiser steps `budget` means for `n` training rows.
pub fn steps_in(budget: Budget, n: usize, batch_size: usize) -> usize {
    match budget {
        Budget::Steps(s) => s,
        Budget::Epochs(e) => e * n.div_ceil(batch_size.max(1)),
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainReport {
    pub steps: usize,
    /// Mean task loss over the steps (without the objective terms). Always 0 under record-level
    /// DP: the losses are functions of the records and are not privatised.
    pub mean_loss: f64,
}

/// An extra term of a site's local objective, given by its gradient.
pub trait LocalObjective: Sync {
    /// Add this term's gradient with respect to parameter `name` (current values `param`).
    fn add_gradient(&self, name: &str, param: &[f32], grad: &mut [f32]);
}

/// `(mu / 2) ||w - center||^2` over the parameters named in `center` (FedProx, Ditto).
pub struct Proximal<'a> {
    pub center: &'a ParameterSet,
    pub mu: f32,
}

impl LocalObjective for Proximal<'_> {
    fn add_gradient(&self, name: &str, param: &[f32], grad: &mut [f32]) {
        if let Some(c) = self.center.get(name) {
            for ((g, p), c) in grad.iter_mut().zip(param).zip(&c.values) {
                *g += self.mu * (p - c);
            }
        }
    }
}

/// A constant added to the gradient of the parameters it names (SCAFFOLD's `c - c_k`).
pub struct Correction<'a> {
    pub delta: &'a ParameterSet,
}

impl LocalObjective for Correction<'_> {
    fn add_gradient(&self, name: &str, _param: &[f32], grad: &mut [f32]) {
        if let Some(d) = self.delta.get(name) {
            grad.iter_mut().zip(&d.values).for_each(|(g, d)| *g += d);
        }
    }
}

/// Shuffled mini-batches over one dataset, reshuffling at the end of every pass.
pub struct Batcher<'a> {
    data: &'a Dataset,
    order: Vec<usize>,
    cursor: usize,
    batch_size: usize,
    x: Vec<f32>,
    y: Vec<u32>,
    device: candle_core::Device,
}

impl<'a> Batcher<'a> {
    pub fn new(data: &'a Dataset, batch_size: usize) -> Result<Self> {
        if data.is_empty() || batch_size == 0 {
            return Err(EngineError::Data(
                "cannot draw batches from an empty dataset".into(),
            ));
        }
        let order = (0..data.len()).collect();
        // cursor at the end forces a shuffle before the first batch
        Ok(Self {
            data,
            order,
            cursor: data.len(),
            batch_size,
            x: vec![],
            y: vec![],
            device: candle_core::Device::Cpu,
        })
    }

    /// Batches for `net`: on its device.
    pub fn for_net(net: &Net, data: &'a Dataset, batch_size: usize) -> Result<Self> {
        Ok(Self {
            device: net.device().clone(),
            ..Self::new(data, batch_size)?
        })
    }

    /// Next batch as `(features [b, d], labels)`.
    pub fn next_batch(&mut self, rng: &mut ChaCha8Rng) -> Result<(Tensor, &[u32])> {
        if self.cursor >= self.order.len() {
            self.order.shuffle(rng);
            self.cursor = 0;
        }
        let end = (self.cursor + self.batch_size).min(self.order.len());
        self.data
            .gather(&self.order[self.cursor..end], &mut self.x, &mut self.y);
        self.cursor = end;
        let x = Tensor::from_slice(
            &self.x,
            (self.y.len(), self.data.n_features()),
            &self.device,
        )?;
        Ok((x, &self.y))
    }
}

/// A loss built on the forward pass that replaces the configured task loss for the backward
/// pass: logit calibration (FedLC), contrastive terms on representations (MOON, PerFCL),
/// decorrelation (FedDecorr). Unlike a [`LocalObjective`] it sees the batch, so it is a
/// function of the records: methods using one refuse record-level DP unless they show that
/// the loss decomposes over examples.
pub trait BatchObjective: Sync {
    /// Loss to differentiate for this batch. `out` is the training-mode forward pass of `x`,
    /// `task` the configured task loss.
    fn loss(&self, out: &ModelOutput, x: &Tensor, y: &[u32], task: &LossKind) -> Result<Tensor>;
}

/// Gradient of one batch's loss at the net's current parameters, one entry per variable that
/// the loss reaches (canonical order), with the task loss on the plain logits.
pub struct BatchGradient {
    pub task_loss: f32,
    pub grads: ParameterSet,
}

/// Forward and backward on one batch without changing the parameters. `objective` replaces
/// the task loss for the backward pass when given.
pub fn batch_gradient(
    net: &Net,
    loss: &LossKind,
    x: &Tensor,
    y: &[u32],
    objective: Option<&dyn BatchObjective>,
    rng: &mut ChaCha8Rng,
) -> Result<BatchGradient> {
    let (task_loss, backprop) = forward_backward(net, loss, x, y, objective, rng)?;
    let mut grads = ParameterSet::new();
    for (name, var) in net.vars() {
        // like PyTorch, a parameter outside the graph (no gradient) is left alone
        let Some(g) = backprop.get(var.as_tensor()) else {
            continue;
        };
        grads.insert(
            name.clone(),
            var.dims().to_vec(),
            g.flatten_all()?.to_vec1::<f32>()?,
        )?;
    }
    Ok(BatchGradient { task_loss, grads })
}

/// The task loss on the plain logits and candle's gradients of the loss to differentiate.
fn forward_backward(
    net: &Net,
    loss: &LossKind,
    x: &Tensor,
    y: &[u32],
    objective: Option<&dyn BatchObjective>,
    rng: &mut ChaCha8Rng,
) -> Result<(f32, GradStore)> {
    let out = net.forward_features(x, Some(rng))?;
    let task_t = loss.compute(&out.logits, y)?;
    let task_loss = scalar(&task_t)?;
    let loss_t = match objective {
        Some(o) => o.loss(&out, x, y, loss)?,
        None => task_t,
    };
    let value = scalar(&loss_t)?;
    if !value.is_finite() || !task_loss.is_finite() {
        return Err(EngineError::NonFinite("training loss".into()));
    }
    Ok((task_loss, crate::model::backward(&loss_t)?))
}

/// One optimiser step with `grads` (plus the objective terms' gradients) on the variables it
/// names; the others are left alone.
pub fn apply_gradient(
    net: &Net,
    opt: &mut Optimizer,
    grads: &ParameterSet,
    terms: &[&dyn LocalObjective],
) -> Result<()> {
    opt.begin_step();
    let mut scratch = Vec::new();
    for (name, var) in net.vars() {
        let Some(g) = grads.get(name) else {
            continue;
        };
        if g.values.len() != var.elem_count() {
            return Err(EngineError::LengthMismatch {
                expected: var.elem_count(),
                found: g.values.len(),
            });
        }
        update_var(opt, name, var, &g.values, terms, &mut scratch)?;
    }
    Ok(())
}

/// The optimiser's update of one variable, in the variable's own buffer, with gradient
/// `grad` plus the objective terms' (added in `scratch`, so `grad` itself is never copied
/// when there are none). A step that would make a value non-finite is an error and leaves
/// that value as it was (see [`Optimizer::update_from`]).
pub(crate) fn update_var(
    opt: &mut Optimizer,
    name: &str,
    var: &Var,
    grad: &[f32],
    terms: &[&dyn LocalObjective],
    scratch: &mut Vec<f32>,
) -> Result<()> {
    with_values_mut(var, |p| {
        if terms.is_empty() {
            return opt.update_from(name, p, grad);
        }
        scratch.clear();
        scratch.extend_from_slice(grad);
        for t in terms {
            t.add_gradient(name, p, scratch);
        }
        opt.update_from(name, p, scratch)
    })
}

/// One optimiser step on one batch; returns the task loss.
pub fn train_step(
    net: &Net,
    opt: &mut Optimizer,
    loss: &LossKind,
    x: &Tensor,
    y: &[u32],
    terms: &[&dyn LocalObjective],
    rng: &mut ChaCha8Rng,
) -> Result<f32> {
    train_step_with(net, opt, loss, x, y, None, terms, rng)
}

/// [`train_step`] whose backward pass uses `objective` instead of the task loss when given;
/// returns the task loss on the plain logits. The same as [`batch_gradient`] then
/// [`apply_gradient`], with the gradients read where backprop left them.
#[allow(clippy::too_many_arguments)]
pub fn train_step_with(
    net: &Net,
    opt: &mut Optimizer,
    loss: &LossKind,
    x: &Tensor,
    y: &[u32],
    objective: Option<&dyn BatchObjective>,
    terms: &[&dyn LocalObjective],
    rng: &mut ChaCha8Rng,
) -> Result<f32> {
    let (task_loss, backprop) = forward_backward(net, loss, x, y, objective, rng)?;
    opt.begin_step();
    let mut scratch = Vec::new();
    for (name, var) in net.vars() {
        let Some(g) = backprop.get(var.as_tensor()) else {
            continue;
        };
        with_values(g, |g| update_var(opt, name, var, g, terms, &mut scratch))??;
    }
    Ok(task_loss)
}

/// Train `net` on `data` for the configured budget.
///
/// Under `cfg.record_dp` this is DP-SGD and `noise` must be `Some` (otherwise
/// [`EngineError::InvalidConfig`]); the report's `mean_loss` is then 0, since the batch losses
/// are not privatised. Without `record_dp`, `noise` is ignored.
pub fn train_local(
    net: &Net,
    opt: &mut Optimizer,
    data: &Dataset,
    cfg: &TrainConfig,
    terms: &[&dyn LocalObjective],
    rng: &mut ChaCha8Rng,
    noise: Option<&mut NoiseRng>,
) -> Result<TrainReport> {
    cfg.validate()?;
    cfg.loss.check_task(data.task(), net.spec().outputs())?;
    if let Some(dp) = &cfg.record_dp {
        let noise = noise.ok_or_else(missing_noise)?;
        let steps = steps_in(cfg.budget, data.len(), cfg.batch_size);
        return train_private(net, opt, data, &cfg.loss, dp, steps, terms, rng, noise);
    }
    let steps = steps_in(cfg.budget, data.len(), cfg.batch_size);
    let mut batcher = Batcher::for_net(net, data, cfg.batch_size)?;
    // off the CPU the optimiser runs on the device, unless objective terms (which work on
    // host buffers) take part
    let total = if !net.device().is_cpu() && terms.is_empty() {
        train_with_moments_on_device(net, opt, &mut batcher, steps, &cfg.loss, rng)?
    } else {
        let mut total = 0.0f64;
        for _ in 0..steps {
            let (x, y) = batcher.next_batch(rng)?;
            total += train_step(net, opt, &cfg.loss, &x, y, terms, rng)? as f64;
        }
        total
    };
    Ok(TrainReport {
        steps,
        mean_loss: if steps > 0 { total / steps as f64 } else { 0.0 },
    })
}

/// `steps` steps of [`train_local`]'s loop with the optimiser's moments on the net's device
/// (see [`Optimizer::moments_on`]); they come back into `opt` at the end, also when a step
/// fails. Returns the sum of the task losses.
fn train_with_moments_on_device(
    net: &Net,
    opt: &mut Optimizer,
    batcher: &mut Batcher,
    steps: usize,
    loss: &LossKind,
    rng: &mut ChaCha8Rng,
) -> Result<f64> {
    let mut moments = opt.moments_on(net.device())?;
    let mut run = || -> Result<f64> {
        let mut total = 0.0f64;
        for _ in 0..steps {
            let (x, y) = batcher.next_batch(rng)?;
            let (task_loss, backprop) = forward_backward(net, loss, &x, y, None, rng)?;
            opt.begin_step();
            opt.step_on_device(&mut moments, net.vars(), &backprop)?;
            total += task_loss as f64;
        }
        Ok(total)
    };
    let total = run();
    opt.keep_moments(moments)?;
    total
}

/// Positive-class probabilities (binary) or class probabilities, row-major `[n, classes]`.
/// (For multi-label and survival models use the logits: sigmoid per label, or the risk.)
pub fn predict_scores(net: &Net, data: &Dataset) -> Result<Vec<f32>> {
    if data.is_empty() {
        return Ok(vec![]);
    }
    probabilities(&full_forward(net, data)?)
}

/// The decision threshold `rule` picks for `net` on `data` (a site's validation part) with
/// [`choose_threshold`]: on the positive-class probabilities of a binary model, and for a
/// multi-label model one threshold shared by every label, on the (row, label) probabilities
/// pooled (the labels' metrics are then all read at it, as [`evaluate_with`] reads them).
/// `None` where the task has no decision threshold (multi-class, survival), where `data` is
/// empty, or where its labels have one class only.
pub fn choose_threshold_on(net: &Net, data: &Dataset, rule: ThresholdRule) -> Result<Option<f32>> {
    if data.is_empty() {
        return Ok(None);
    }
    match data.task() {
        Task::Classification if net.spec().outputs() == 1 => {
            choose_threshold(&predict_scores(net, data)?, data.labels(), rule)
        }
        Task::MultiLabel { .. } => {
            let scores = candle_nn::ops::sigmoid(&full_forward(net, data)?)?
                .flatten_all()?
                .to_vec1::<f32>()?;
            let labels = data.label_matrix().unwrap_or_default();
            choose_threshold(&scores, &labels, rule)
        }
        Task::Classification | Task::Survival => Ok(None),
    }
}

/// Loss and metrics of `net` on `data` (binary threshold 0.5; survival without the
/// integrated Brier score, which needs training data: see [`evaluate_with`]).
pub fn evaluate(net: &Net, data: &Dataset, loss: &LossKind) -> Result<MetricSummary> {
    evaluate_with(net, data, loss, &EvalOptions::default())
}

/// What an evaluation may use beyond the model and the data.
#[derive(Clone, Copy, Debug)]
pub struct EvalOptions<'a> {
    /// Decision threshold of binary and multi-label metrics (positive when `p > threshold`).
    pub threshold: f32,
    /// The site's training data: survival tasks fit the Breslow baseline hazard and the
    /// censoring distribution of the integrated Brier score on it.
    pub reference: Option<&'a Dataset>,
}

impl Default for EvalOptions<'_> {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            reference: None,
        }
    }
}

/// Loss and metrics of `net` on `data` for the data's task.
pub fn evaluate_with(
    net: &Net,
    data: &Dataset,
    loss: &LossKind,
    opts: &EvalOptions,
) -> Result<MetricSummary> {
    if data.is_empty() {
        return Err(EngineError::Data(
            "cannot evaluate on an empty dataset".into(),
        ));
    }
    let outputs = net.spec().outputs();
    loss.check_task(data.task(), outputs)?;
    let logits = full_forward(net, data)?;
    match data.task() {
        Task::Classification => {
            let loss_value = scalar(&loss.compute(&logits, data.labels())?)? as f64;
            let scores = probabilities(&logits)?;
            MetricSummary::classification(
                loss_value,
                &scores,
                data.labels(),
                outputs,
                opts.threshold,
            )
        }
        Task::MultiLabel { labels } => {
            let loss_value = scalar(&loss.compute(&logits, data.labels())?)? as f64;
            let scores = candle_nn::ops::sigmoid(&logits)?
                .flatten_all()?
                .to_vec1::<f32>()?;
            MetricSummary::multi_label(loss_value, &scores, data.labels(), labels, opts.threshold)
        }
        Task::Survival => {
            let risk = risks(&logits)?;
            let (time, event) = data.survival_targets().unwrap_or_default();
            // the partial likelihood of the whole set, in f64 and O(n log n)
            let loss_value = cox_partial_nll(&risk, &time, &event).unwrap_or(0.0);
            let reference = match opts.reference {
                Some(r) if r.task() == Task::Survival && !r.is_empty() => {
                    let (t, e) = r.survival_targets().unwrap_or_default();
                    Some((risks(&full_forward(net, r)?)?, t, e))
                }
                _ => None,
            };
            let eval = SurvivalData {
                risk: &risk,
                time: &time,
                event: &event,
            };
            let reference = reference.as_ref().map(|(r, t, e)| SurvivalData {
                risk: r,
                time: t,
                event: e,
            });
            MetricSummary::survival(loss_value, &eval, reference.as_ref())
        }
    }
}

/// Risk scores (the single output) of a survival model, in `f64`.
fn risks(logits: &Tensor) -> Result<Vec<f64>> {
    Ok(logits
        .flatten_all()?
        .to_vec1::<f32>()?
        .into_iter()
        .map(f64::from)
        .collect())
}

fn full_forward(net: &Net, data: &Dataset) -> Result<Tensor> {
    net.forward(
        &net.input(data.features(), data.len(), data.n_features())?,
        None,
    )
}

fn probabilities(logits: &Tensor) -> Result<Vec<f32>> {
    let probs = if logits.dim(1)? == 1 {
        candle_nn::ops::sigmoid(logits)?
    } else {
        candle_nn::ops::softmax(logits, 1)?
    };
    Ok(probs.flatten_all()?.to_vec1::<f32>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MlpConfig, ModelSpec};
    use rand::{RngExt, SeedableRng};

    /// The optimiser as device operations (what runs on a GPU), run here on the CPU against
    /// the host loops: the same parameters and moments after a run of steps, for every
    /// optimiser and weight-decay form, and the moments carry over into the next run.
    #[test]
    fn device_optimiser_matches_the_host_one() {
        device_optimiser_against_host(&candle_core::Device::Cpu, 1e-5);
    }

    /// The same on a GPU, where the forward and backward passes differ by float rounding too.
    #[cfg(feature = "cuda")]
    #[test]
    fn device_optimiser_on_the_gpu_matches_the_host_one() {
        let Ok(gpu) = crate::device::parse("cuda") else {
            eprintln!("no GPU: skipped");
            return;
        };
        device_optimiser_against_host(&gpu, 1e-4);
    }

    /// Trains one net with the host loops on the CPU and one with the device optimiser on
    /// `device`, from the same start and batches, and compares parameters and moments up to
    /// `tolerance` (relative, plus absolute near zero).
    fn device_optimiser_against_host(on: &candle_core::Device, tolerance: f32) {
        let spec = ModelSpec::Mlp(MlpConfig {
            inputs: 5,
            hidden: vec![16, 8],
            outputs: 1,
            dropout: 0.2,
        });
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let rows = 50;
        let x: Vec<f32> = (0..rows * 5).map(|_| rng.random_range(-1.0..1.0)).collect();
        let y: Vec<u32> = (0..rows as u32).map(|i| (i * 7 % 3 == 0) as u32).collect();
        let data = Dataset::new(5, x, y).unwrap();
        for config in [
            OptimizerConfig::adam(0.01),
            OptimizerConfig::Adam {
                lr: 0.01,
                beta1: 0.8,
                beta2: 0.99,
                eps: 1e-6,
                weight_decay: 0.1,
            },
            OptimizerConfig::AdamW {
                lr: 0.01,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: 0.05,
            },
            OptimizerConfig::Sgd {
                lr: 0.05,
                momentum: 0.9,
                weight_decay: 0.01,
            },
            OptimizerConfig::sgd(0.1),
        ] {
            let cfg = TrainConfig {
                optimizer: config.clone(),
                budget: Budget::Steps(7),
                batch_size: 8,
                loss: LossKind::bce(),
                record_dp: None,
            };
            let (host, device) = (
                Net::new(&spec, 3).unwrap(),
                Net::new_on(&spec, 3, on).unwrap(),
            );
            let mut opt_host = Optimizer::new(config.clone()).unwrap();
            let mut opt_device = Optimizer::new(config.clone()).unwrap();
            let (mut rng_host, mut rng_device) =
                (ChaCha8Rng::seed_from_u64(5), ChaCha8Rng::seed_from_u64(5));
            // two runs: the second starts from the moments the first kept
            for _ in 0..2 {
                let report =
                    train_local(&host, &mut opt_host, &data, &cfg, &[], &mut rng_host, None)
                        .unwrap();
                let mut batcher = Batcher::for_net(&device, &data, cfg.batch_size).unwrap();
                let total = train_with_moments_on_device(
                    &device,
                    &mut opt_device,
                    &mut batcher,
                    report.steps,
                    &cfg.loss,
                    &mut rng_device,
                )
                .unwrap();
                let mean = total / report.steps as f64;
                assert!(
                    (mean - report.mean_loss).abs() < f64::from(tolerance),
                    "{config:?}"
                );
            }
            assert_eq!(opt_host.steps_taken(), opt_device.steps_taken());
            let close = |a: &[f32], b: &[f32], what: &str| {
                assert_eq!(a.len(), b.len());
                for (x, y) in a.iter().zip(b) {
                    assert!(
                        (x - y).abs() <= tolerance * (1.0 + x.abs()),
                        "{config:?} {what}: {x} against {y}"
                    );
                }
            };
            let (ph, pd) = (host.parameters().unwrap(), device.parameters().unwrap());
            for (name, t) in ph.iter() {
                close(&t.values, &pd.get(name).unwrap().values, name);
            }
            // the host loops keep a (zero) momentum buffer even without momentum
            for (host, device) in [(&opt_host.m, &opt_device.m), (&opt_host.v, &opt_device.v)] {
                for (name, h) in host {
                    match device.get(name) {
                        Some(d) => close(h, d, name),
                        None => assert!(h.iter().all(|x| *x == 0.0), "{config:?} {name}"),
                    }
                }
                assert!(device.keys().all(|k| host.contains_key(k)));
            }
        }
    }

    /// A step that would make a value non-finite changes nothing on the device path.
    #[test]
    fn device_optimiser_refuses_a_diverging_step() {
        let spec = ModelSpec::Mlp(MlpConfig {
            inputs: 2,
            hidden: vec![4],
            outputs: 1,
            dropout: 0.0,
        });
        let net = Net::new(&spec, 1).unwrap();
        let before = net.parameters().unwrap();
        let mut opt = Optimizer::new(OptimizerConfig::sgd(f64::MAX)).unwrap();
        let data = Dataset::new(2, vec![1.0, -2.0, 3.0, 0.5], vec![1, 0]).unwrap();
        let mut batcher = Batcher::for_net(&net, &data, 2).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let err = train_with_moments_on_device(
            &net,
            &mut opt,
            &mut batcher,
            1,
            &LossKind::bce(),
            &mut rng,
        )
        .unwrap_err();
        assert!(matches!(err, EngineError::NonFinite(_)), "{err}");
        assert_eq!(net.parameters().unwrap(), before);
    }
}
