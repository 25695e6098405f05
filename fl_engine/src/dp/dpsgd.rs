//! Record-level DP at the data holder: DP-SGD gradient privatisation (Abadi et al. 2016) and
//! Poisson subsampling.
//!
//! ```text
//! B = { i : b_i = 1 },  b_i ~ Bernoulli(q) independently        (Poisson subsampling)
//! g = ( Σ_{i∈B} clip_C(∇ℓ_i) + N(0, (σC)² I) ) / m              m = q·N, or |B| if fixed
//! ```
//!
//! The accountant's sampled-Gaussian analysis assumes exactly this: Poisson sampling with rate
//! q and division by the expected batch size q·N. An empty batch is legal and releases pure noise.
//! Per-example gradients come as flat slices or as a candle `Tensor` of shape `[batch, dim]`; the
//! noise is the grid-snapped Gaussian of [`SnappedGaussian`](super::SnappedGaussian).
//!
//! ```
//! use fl_engine::dp::{poisson_subsample, privatize_gradients, DpSgdConfig, NoiseRng};
//! let mut rng = NoiseRng::from_os_entropy().unwrap();
//! let batch = poisson_subsample(1000, 0.01, &mut rng).unwrap();
//! assert!(batch.windows(2).all(|w| w[0] < w[1]));
//! let grads = [vec![3.0f32, 4.0], vec![0.0, 0.1]];
//! let rows: Vec<&[f32]> = grads.iter().map(|g| g.as_slice()).collect();
//! let cfg = DpSgdConfig { expected_batch_size: Some(10.0), ..DpSgdConfig::new(1.0, 1.1) };
//! let g = privatize_gradients(&rows, 2, &cfg, &mut rng).unwrap();
//! assert_eq!((g.mean.len(), g.report.clipped), (2, 1));
//! ```

use candle_core::{DType, Tensor};
use rand::Rng;
use serde::{Deserialize, Serialize};

use super::aggregate::{noisy_clipped_sum_into, DpAggregate, DpAggregationReport};
use super::error::{require_positive, require_rate, DpError, Result};
use super::rng::NoiseRng;

/// Parameters of one DP-SGD gradient privatisation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DpSgdConfig {
    /// Per-example L2 clip norm C.
    pub clip_norm: f64,
    /// Noise multiplier σ (noise std on the summed gradient is σC).
    pub noise_multiplier: f64,
    /// Divisor m: q·N under Poisson sampling; `None` divides by the realised batch size.
    pub expected_batch_size: Option<f64>,
    /// Run chunks on the rayon pool (results are identical either way).
    pub parallel: bool,
}

impl DpSgdConfig {
    /// Clip norm and noise multiplier; divides by the realised batch size, runs in parallel.
    pub fn new(clip_norm: f64, noise_multiplier: f64) -> Self {
        Self {
            clip_norm,
            noise_multiplier,
            expected_batch_size: None,
            parallel: true,
        }
    }

    fn divisor(&self, batch: usize) -> Result<f64> {
        match self.expected_batch_size {
            Some(m) => require_positive("expected_batch_size", m),
            None if batch == 0 => Err(DpError::InvalidParameter {
                name: "expected_batch_size",
                value: 0.0,
                requirement: "needed when the batch is empty (Poisson sampling)",
            }),
            None => Ok(batch as f64),
        }
    }
}

/// Clips each per-example gradient (`dim` values each), sums, adds noise, divides.
pub fn privatize_gradients(
    per_example: &[&[f32]],
    dim: usize,
    config: &DpSgdConfig,
    rng: &mut NoiseRng,
) -> Result<DpAggregate> {
    let divisor = config.divisor(per_example.len())?;
    let mut mean = vec![0f32; dim];
    let report = noisy_clipped_sum_into(
        per_example,
        dim,
        config.clip_norm,
        config.noise_multiplier,
        divisor,
        config.parallel,
        rng,
        &mut mean,
    )?;
    Ok(DpAggregate { mean, report })
}

/// [`privatize_gradients`] for a `[batch, dim]` tensor; returns a `[dim]` f32 tensor on the
/// input's device. Other float dtypes are converted to f32 first.
pub fn privatize_gradient_tensor(
    per_example: &Tensor,
    config: &DpSgdConfig,
    rng: &mut NoiseRng,
) -> Result<(Tensor, DpAggregationReport)> {
    let (batch, dim) = per_example.dims2()?;
    let flat: Vec<f32> = per_example.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
    let rows: Vec<&[f32]> = if dim == 0 {
        Vec::new()
    } else {
        flat.chunks_exact(dim).collect()
    };
    debug_assert_eq!(rows.len(), if dim == 0 { 0 } else { batch });
    let out = privatize_gradients(&rows, dim, config, rng)?;
    let mean = Tensor::from_vec(out.mean, dim, per_example.device())?;
    Ok((mean, out.report))
}

/// Poisson subsampling: each of `population` record indices is kept independently with
/// probability `q`. Returns the kept indices in increasing order.
pub fn poisson_subsample(population: usize, q: f64, rng: &mut NoiseRng) -> Result<Vec<usize>> {
    require_rate("sampling_rate", q)?;
    if q == 1.0 {
        return Ok((0..population).collect());
    }
    // Keep i iff U_i < q with U_i uniform on the 2^64 grid: exact up to 2^-64 in the rate.
    let threshold = (q * 18_446_744_073_709_551_616.0) as u64;
    Ok((0..population)
        .filter(|_| rng.next_u64() < threshold)
        .collect())
}
