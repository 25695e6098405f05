//! Client-level DP aggregation (DP-FedAvg, McMahan et al. 2018) and the plain weighted average.
//!
//! ```text
//! DP-FedAvg:  Δ = ( Σ_i clip_C(u_i) + N(0, (σC)² I) ) / m     m = expected number of sites
//! FedAvg:     Δ = Σ_i w_i u_i / Σ_i w_i
//! ```
//!
//! `m` is fixed before the round (the number of sites asked, or q·N under Poisson sampling of
//! sites); dividing by the realised count would make the divisor itself data-dependent. The noise
//! is the grid-snapped Gaussian of [`SnappedGaussian`], drawn from ChaCha20.
//!
//! Memory traffic is the cost: one pass computes all norms, a second pass reads every update
//! once more, clipping, snapping and accumulating in registers. The coordinate range is cut into
//! chunks of `CHUNK` coordinates; each chunk accumulates all updates into an f64 buffer that stays
//! in cache, adds its noise from its own ChaCha20 stream and writes its slice of the output.
//! Chunks are independent, so rayon runs them on all cores and the result is bit-identical to a
//! single-threaded run with the same seed.
//!
//! ```
//! use fl_engine::dp::{dp_fedavg, weighted_average, DpFedAvgConfig, NoiseRng};
//! let (a, b) = (vec![3.0f32, 4.0], vec![0.3f32, 0.4]);
//! let mean = weighted_average(&[&a, &b], &[1.0, 1.0], true).unwrap();
//! assert_eq!(mean, vec![1.65, 2.2]);
//! let cfg = DpFedAvgConfig::new(1.0, 1.0);
//! let mut rng = NoiseRng::from_os_entropy().unwrap();
//! let out = dp_fedavg(&[&a, &b], &cfg, &mut rng).unwrap();
//! assert_eq!(out.report.clipped, 1); // ‖a‖ = 5 > 1
//! ```

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::clip::{
    accumulate_snapped, accumulate_snapped2, accumulate_weighted, accumulate_weighted2,
    check_lengths, norms,
};
use super::error::{require_positive, DpError, Result};
use super::noise::{SnappedGaussian, EXACT_LIMIT};
use super::rng::NoiseRng;

/// Coordinates per chunk: 64 KiB of f64 accumulator, which stays in L2 while all updates stream by.
pub const CHUNK: usize = 8192;

/// Parameters of one DP-FedAvg aggregation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DpFedAvgConfig {
    /// L2 clip norm C applied to each site's update.
    pub clip_norm: f64,
    /// Noise multiplier σ: noise std on the sum is σC.
    pub noise_multiplier: f64,
    /// Divisor m; `None` divides by the number of updates received.
    pub expected_sites: Option<f64>,
    /// Run chunks on the rayon pool (results are identical either way).
    pub parallel: bool,
}

impl DpFedAvgConfig {
    /// Clip norm and noise multiplier; divides by the number of updates, runs in parallel.
    pub fn new(clip_norm: f64, noise_multiplier: f64) -> Self {
        Self {
            clip_norm,
            noise_multiplier,
            expected_sites: None,
            parallel: true,
        }
    }
}

/// What an aggregation did. `norms` are not privatised: keep them inside the aggregator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DpAggregationReport {
    /// Pre-clipping L2 norm of each update, in input order.
    pub norms: Vec<f64>,
    /// Number of updates whose norm exceeded the clip norm.
    pub clipped: usize,
    /// Divisor applied to the noisy sum.
    pub divisor: f64,
    /// Grid spacing of the noisy sum (see [`SnappedGaussian`]).
    pub grid: f64,
    /// Standard deviation of the noise on each coordinate of the sum (≈ σC).
    pub noise_std: f64,
}

/// A DP aggregate: the noisy mean and the report.
#[derive(Debug, Clone, PartialEq)]
pub struct DpAggregate {
    /// Noisy clipped mean, same layout as the inputs.
    pub mean: Vec<f32>,
    /// Norms, clipping count and noise parameters.
    pub report: DpAggregationReport,
}

/// DP-FedAvg over one flattened update per site.
pub fn dp_fedavg(
    updates: &[&[f32]],
    config: &DpFedAvgConfig,
    rng: &mut NoiseRng,
) -> Result<DpAggregate> {
    let dim = updates.first().ok_or(DpError::NoUpdates)?.len();
    let mut mean = vec![0f32; dim];
    let report = dp_fedavg_into(updates, config, rng, &mut mean)?;
    Ok(DpAggregate { mean, report })
}

/// DP-FedAvg writing into a caller-provided buffer of the update length.
pub fn dp_fedavg_into(
    updates: &[&[f32]],
    config: &DpFedAvgConfig,
    rng: &mut NoiseRng,
    out: &mut [f32],
) -> Result<DpAggregationReport> {
    if updates.is_empty() {
        return Err(DpError::NoUpdates);
    }
    let divisor = match config.expected_sites {
        Some(m) => require_positive("expected_sites", m)?,
        None => updates.len() as f64,
    };
    noisy_clipped_sum_into(
        updates,
        out.len(),
        config.clip_norm,
        config.noise_multiplier,
        divisor,
        config.parallel,
        rng,
        out,
    )
}

/// Shared core of DP-FedAvg and DP-SGD: `out = (Σ clip(u_i) + noise) / divisor`.
/// Accepts zero updates (an empty Poisson batch still releases noise).
#[allow(clippy::too_many_arguments)]
pub(crate) fn noisy_clipped_sum_into(
    updates: &[&[f32]],
    dim: usize,
    clip_norm: f64,
    noise_multiplier: f64,
    divisor: f64,
    parallel: bool,
    rng: &mut NoiseRng,
    out: &mut [f32],
) -> Result<DpAggregationReport> {
    let mech = SnappedGaussian::new(clip_norm, noise_multiplier, dim)?;
    require_positive("divisor", divisor)?;
    check_lengths(updates, dim)?;
    if updates.len() as f64 * (mech.clip_in_grid() + 1.0) >= EXACT_LIMIT {
        return Err(DpError::InvalidParameter {
            name: "number of updates",
            value: updates.len() as f64,
            requirement: "too many updates for an exact sum on the noise grid",
        });
    }
    let norms = norms(updates, dim, parallel)?;
    // Per-update factor: clip to C, then express in grid units.
    let scales: Vec<f64> = norms
        .iter()
        .map(|&n| {
            if n > clip_norm {
                mech.clip_in_grid() / n
            } else {
                1.0 / mech.grid()
            }
        })
        .collect();
    let clipped = norms.iter().filter(|&&n| n > clip_norm).count();
    let streams = rng.next_streams();
    let out_scale = mech.grid() / divisor;

    for_each_chunk(out, parallel, |c, o, acc| {
        let start = c * CHUNK;
        let end = start + o.len();
        let mut pairs = updates.chunks_exact(2).zip(scales.chunks_exact(2));
        for (u, s) in &mut pairs {
            accumulate_snapped2(acc, &u[0][start..end], s[0], &u[1][start..end], s[1]);
        }
        if updates.len() % 2 == 1 {
            let last = updates.len() - 1;
            accumulate_snapped(acc, &updates[last][start..end], scales[last]);
        }
        mech.add_grid_noise(acc, &mut streams.stream(c as u64));
        for (o, &a) in o.iter_mut().zip(acc.iter()) {
            *o = (a * out_scale) as f32;
        }
        true
    });

    Ok(DpAggregationReport {
        norms,
        clipped,
        divisor,
        grid: mech.grid(),
        noise_std: mech.noise_std(),
    })
}

/// Plain weighted average `Σ w_i u_i / Σ w_i` (no clipping, no noise).
pub fn weighted_average(updates: &[&[f32]], weights: &[f64], parallel: bool) -> Result<Vec<f32>> {
    let dim = updates.first().ok_or(DpError::NoUpdates)?.len();
    let mut out = vec![0f32; dim];
    weighted_average_into(updates, weights, parallel, &mut out)?;
    Ok(out)
}

/// Weighted average into a caller-provided buffer; weights must be finite, ≥ 0, with positive sum.
pub fn weighted_average_into(
    updates: &[&[f32]],
    weights: &[f64],
    parallel: bool,
    out: &mut [f32],
) -> Result<()> {
    if updates.is_empty() {
        return Err(DpError::NoUpdates);
    }
    if out.is_empty() {
        return Err(DpError::EmptyUpdate);
    }
    if weights.len() != updates.len() {
        return Err(DpError::WeightCountMismatch {
            weights: weights.len(),
            updates: updates.len(),
        });
    }
    if let Some(&w) = weights.iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
        return Err(DpError::InvalidParameter {
            name: "weight",
            value: w,
            requirement: "must be finite and >= 0",
        });
    }
    let total = require_positive("sum of weights", weights.iter().sum())?;
    check_lengths(updates, out.len())?;
    let w: Vec<f64> = weights.iter().map(|w| w / total).collect();

    let all_finite = for_each_chunk(out, parallel, |c, o, acc| {
        let start = c * CHUNK;
        let end = start + o.len();
        let mut pairs = updates.chunks_exact(2).zip(w.chunks_exact(2));
        for (u, w) in &mut pairs {
            accumulate_weighted2(acc, &u[0][start..end], w[0], &u[1][start..end], w[1]);
        }
        if updates.len() % 2 == 1 {
            let last = updates.len() - 1;
            accumulate_weighted(acc, &updates[last][start..end], w[last]);
        }
        for (o, &a) in o.iter_mut().zip(acc.iter()) {
            *o = a as f32;
        }
        // NaN or ±∞ in any input (even with weight 0) propagates to the sum: checking the
        // output chunk, still in cache, spares a separate validation pass over all inputs.
        o.iter().all(|v| v.is_finite())
    });
    if all_finite {
        return Ok(());
    }
    match updates
        .iter()
        .position(|u| u.iter().any(|v| !v.is_finite()))
    {
        Some(index) => Err(DpError::NonFiniteUpdate { index }),
        None => Ok(()),
    }
}

/// Runs `f(chunk_index, out_chunk, zeroed_accumulator)` over fixed-size chunks of `out`, on the
/// rayon pool or sequentially; returns whether every call returned true.
fn for_each_chunk<F>(out: &mut [f32], parallel: bool, f: F) -> bool
where
    F: Fn(usize, &mut [f32], &mut Vec<f64>) -> bool + Sync,
{
    let ok = AtomicBool::new(true);
    let run = |acc: &mut Vec<f64>, (c, o): (usize, &mut [f32])| {
        acc.clear();
        acc.resize(o.len(), 0.0);
        if !f(c, o, acc) {
            ok.store(false, Ordering::Relaxed);
        }
    };
    if parallel {
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each_init(|| Vec::with_capacity(CHUNK), run);
    } else {
        let mut acc = Vec::with_capacity(CHUNK);
        out.chunks_mut(CHUNK)
            .enumerate()
            .for_each(|item| run(&mut acc, item));
    }
    ok.into_inner()
}
