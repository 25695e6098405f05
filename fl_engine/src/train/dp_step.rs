//! Record-level differential privacy in local training: DP-SGD (Abadi et al. 2016).
//!
//! With [`TrainConfig::record_dp`](super::TrainConfig::record_dp) set, every local step is
//!
//! ```text
//! B   = Poisson(q) sample of the site's N training rows      (from the NoiseRng)
//! g_i = ∇ℓ(w; x_i, y_i)  for i ∈ B,  flat over all variables in canonical name order
//! g   = (Σ_{i∈B} clip_C(g_i) + N(0, (σC)² I)) / (qN)        (dp::privatize_gradients)
//! g  += Σ_terms ∇term(w)                                      (proximal pull, SCAFFOLD c - c_k)
//! w   = optimiser(w, g)                                       (same update as the plain path)
//! ```
//!
//! which is the sampled Gaussian mechanism the [`accountant`](crate::dp::RdpAccountant)
//! composes: one [`SampledGaussian`] step with rate q and noise multiplier σ per local step.
//! The objective terms depend only on the parameters (and on values that are themselves
//! outputs of earlier private steps or public), so adding them is post-processing. `batch_size`
//! is not used: the batch is the Poisson sample, whose size varies and may be zero (an empty
//! batch releases pure noise). The training-set size N is treated as public, as in Opacus.
//!
//! Per-example gradients come from one forward/backward pass per sampled row: the models are
//! small and candle has no per-sample gradient transform. All randomness of the mechanism
//! (sampling, noise) comes from the caller's ChaCha20 [`NoiseRng`]; dropout masks still come
//! from the ChaCha8 training stream, so two runs with the same two seeds are bit-identical.
//!
//! Everything a step computes besides the new parameters (losses, norms, batch size) is a
//! function of the records and is *not* privatised: [`DpStepReport`] is for the site's own
//! diagnostics, and [`train_local`](super::train_local) reports a mean loss of 0 under DP.
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::local::{update_var, LocalObjective, TrainReport};
use super::loss::{scalar, LossKind};
use super::optim::Optimizer;
use crate::data::Dataset;
use crate::dp::{
    poisson_subsample, privatize_gradients, DpAggregationReport, DpSgdConfig, NoiseRng,
    SampledGaussian, CHUNK,
};
use crate::error::{EngineError, Result};
use crate::model::Net;

/// Record-level DP-SGD settings for local training.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordDp {
    /// Per-example L2 clip norm C > 0, over the whole flat gradient.
    pub clip_norm: f64,
    /// Noise multiplier σ > 0: the noise on the summed gradient has std σC per coordinate.
    pub noise_multiplier: f64,
    /// Poisson sampling rate q in (0, 1]: each row joins a step's batch with probability q.
    pub sampling_rate: f64,
}

impl RecordDp {
    /// Finite, positive C and σ; q in (0, 1].
    pub fn validate(&self) -> Result<()> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !positive(self.clip_norm) {
            return Err(EngineError::InvalidConfig(format!(
                "record DP clip norm must be finite and > 0, got {}",
                self.clip_norm
            )));
        }
        if !positive(self.noise_multiplier) {
            return Err(EngineError::InvalidConfig(format!(
                "record DP noise multiplier must be finite and > 0, got {}",
                self.noise_multiplier
            )));
        }
        if !(self.sampling_rate > 0.0 && self.sampling_rate <= 1.0) {
            return Err(EngineError::InvalidConfig(format!(
                "record DP sampling rate must be in (0, 1], got {}",
                self.sampling_rate
            )));
        }
        Ok(())
    }

    /// The divisor q·N for a site with `population` training rows.
    pub fn expected_batch_size(&self, population: usize) -> f64 {
        self.sampling_rate * population as f64
    }

    /// The accountant's view of `steps` local steps under these settings.
    pub fn mechanism(&self, steps: u64) -> Result<SampledGaussian> {
        Ok(SampledGaussian::new(
            self.sampling_rate,
            self.noise_multiplier,
            steps,
        )?)
    }
}

/// One Poisson-sampled batch of a site's training rows.
#[derive(Clone, Debug)]
pub struct PoissonBatch<'a> {
    data: &'a Dataset,
    rows: Vec<usize>,
    dp: RecordDp,
}

impl<'a> PoissonBatch<'a> {
    /// Keeps each row of `data` independently with probability `dp.sampling_rate`, drawing
    /// from `noise` (the same ChaCha20 generator as the gradient noise).
    pub fn draw(data: &'a Dataset, dp: &RecordDp, noise: &mut NoiseRng) -> Result<Self> {
        dp.validate()?;
        if data.is_empty() {
            return Err(EngineError::Data(
                "cannot sample a DP-SGD batch from an empty dataset".into(),
            ));
        }
        let rows = poisson_subsample(data.len(), dp.sampling_rate, noise)?;
        Ok(Self {
            data,
            rows,
            dp: *dp,
        })
    }

    /// Indices of the sampled rows, increasing.
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }

    /// The divisor q·N (fixed before sampling, unlike the realised size).
    pub fn expected_size(&self) -> f64 {
        self.dp.expected_batch_size(self.data.len())
    }
}

/// What one DP-SGD step saw. Nothing in it is privatised: keep it at the site.
#[derive(Clone, Debug, PartialEq)]
pub struct DpStepReport {
    /// Mean task loss over the sampled rows (0 for an empty batch).
    pub loss: f32,
    /// Per-example norms, clip count, grid and noise scale of the privatised gradient.
    pub privacy: DpAggregationReport,
}

/// Per-example gradients of the task loss, `rows × dim` flat, variables in canonical order.
/// Returns the gradients and the sum of the losses.
fn per_example_gradients(
    net: &Net,
    loss: &LossKind,
    batch: &PoissonBatch,
    dim: usize,
    rng: &mut ChaCha8Rng,
) -> Result<(Vec<f32>, f64)> {
    let data = batch.data;
    let mut flat = Vec::with_capacity(batch.rows.len() * dim);
    let mut total = 0.0f64;
    for &i in &batch.rows {
        let x = net.input(data.row(i), 1, data.n_features())?;
        let logits = net.forward(&x, Some(rng))?;
        let loss_t = loss.example_loss(&logits, data.labels()[i])?;
        let value = scalar(&loss_t)?;
        if !value.is_finite() {
            return Err(EngineError::NonFinite("training loss".into()));
        }
        total += value as f64;
        let grads = crate::model::backward(&loss_t)?;
        for (_, var) in net.vars() {
            match grads.get(var.as_tensor()) {
                Some(g) => flat.extend(g.flatten_all()?.to_vec1::<f32>()?),
                // outside the graph: no contribution from this example (noise still added)
                None => flat.extend(std::iter::repeat_n(0.0, var.elem_count())),
            }
        }
    }
    Ok((flat, total))
}

/// One DP-SGD step on `batch`: per-example gradients, clip to C, sum, add N(0, (σC)²) from
/// `noise`, divide by q·N, add the objective terms' gradients, optimiser update. Every
/// variable of `net` is privatised and updated.
pub fn dp_train_step(
    net: &Net,
    opt: &mut Optimizer,
    loss: &LossKind,
    batch: &PoissonBatch,
    terms: &[&dyn LocalObjective],
    rng: &mut ChaCha8Rng,
    noise: &mut NoiseRng,
) -> Result<DpStepReport> {
    let dim: usize = net.vars().iter().map(|(_, v)| v.elem_count()).sum();
    let (flat, total) = per_example_gradients(net, loss, batch, dim, rng)?;
    let rows: Vec<&[f32]> = if dim == 0 {
        Vec::new()
    } else {
        flat.chunks_exact(dim).collect()
    };
    let cfg = DpSgdConfig {
        clip_norm: batch.dp.clip_norm,
        noise_multiplier: batch.dp.noise_multiplier,
        expected_batch_size: Some(batch.expected_size()),
        parallel: dim > CHUNK,
    };
    let private = privatize_gradients(&rows, dim, &cfg, noise)?;
    opt.begin_step();
    let mut offset = 0;
    let mut scratch = Vec::new();
    for (name, var) in net.vars() {
        let n = var.elem_count();
        let g = &private.mean[offset..offset + n];
        offset += n;
        update_var(opt, name, var, g, terms, &mut scratch)?;
    }
    let examples = batch.rows.len();
    Ok(DpStepReport {
        loss: if examples > 0 {
            (total / examples as f64) as f32
        } else {
            0.0
        },
        privacy: private.report,
    })
}

/// The error for record DP without a noise generator.
pub(crate) fn missing_noise() -> EngineError {
    EngineError::InvalidConfig(
        "record-level DP is configured but no noise generator was supplied (Site::noise)".into(),
    )
}

/// `steps` DP-SGD steps on `data` (the DP branch of [`train_local`](super::train_local)).
/// The reported mean loss is 0: batch losses are not privatised and must not leave the site.
#[allow(clippy::too_many_arguments)]
pub(crate) fn train_private(
    net: &Net,
    opt: &mut Optimizer,
    data: &Dataset,
    loss: &LossKind,
    dp: &RecordDp,
    steps: usize,
    terms: &[&dyn LocalObjective],
    rng: &mut ChaCha8Rng,
    noise: &mut NoiseRng,
) -> Result<TrainReport> {
    for _ in 0..steps {
        let batch = PoissonBatch::draw(data, dp, noise)?;
        dp_train_step(net, opt, loss, &batch, terms, rng, noise)?;
    }
    Ok(TrainReport {
        steps,
        mean_loss: 0.0,
    })
}
