//! L2 clipping and the fused kernels behind aggregation.
//!
//! ```text
//! ‖u‖₂ = sqrt(Σ_j u_j²)          (f32 squares are exact in f64; summed in f64)
//! c(u) = min(1, C / ‖u‖₂)        (c = 1 for the zero vector)
//! clip(u) = c(u) · u             ‖clip(u)‖₂ = min(‖u‖₂, C)
//! ```
//!
//! Sums run in a fixed order (eight lanes per block, blocks left to right) so that a norm, and
//! hence a clipping decision, never depends on how many threads computed it.
//!
//! ```
//! use fl_engine::dp::{clip_factor, l2_norm};
//! let u = [3.0f32, 4.0];
//! assert_eq!(l2_norm(&u), 5.0);
//! assert_eq!(clip_factor(5.0, 1.0), 0.2);
//! assert_eq!(clip_factor(0.0, 1.0), 1.0);
//! ```

use rayon::prelude::*;

use super::error::{require_positive, DpError, Result};
use super::noise::round_to_integer;

/// Coordinates per block of a norm computation: large enough to amortise task overhead.
const NORM_BLOCK: usize = 1 << 16;
/// Lanes of independent accumulators: lets the compiler vectorise without reassociating.
const LANES: usize = 8;

/// Sum of squares in f64, in a fixed order.
#[inline]
pub(crate) fn sum_squares(x: &[f32]) -> f64 {
    let mut acc = [0f64; LANES];
    let mut blocks = x.chunks_exact(LANES);
    for b in &mut blocks {
        for k in 0..LANES {
            let v = b[k] as f64;
            acc[k] += v * v;
        }
    }
    let tail: f64 = blocks
        .remainder()
        .iter()
        .map(|&v| (v as f64) * (v as f64))
        .sum();
    acc.iter().sum::<f64>() + tail
}

/// Euclidean norm of `x`, accumulated in f64 (NaN or infinite if `x` holds NaN or ±∞).
pub fn l2_norm(x: &[f32]) -> f64 {
    x.chunks(NORM_BLOCK).map(sum_squares).sum::<f64>().sqrt()
}

/// Scale that clips a vector of norm `norm` to `clip_norm`: `min(1, clip_norm / norm)`.
pub fn clip_factor(norm: f64, clip_norm: f64) -> f64 {
    if norm > clip_norm {
        clip_norm / norm
    } else {
        1.0
    }
}

/// Clips `x` in place to L2 norm `clip_norm`; returns the norm before clipping.
pub fn clip_to_norm(x: &mut [f32], clip_norm: f64) -> Result<f64> {
    require_positive("clip_norm", clip_norm)?;
    let norm = l2_norm(x);
    if !norm.is_finite() {
        return Err(DpError::NonFiniteUpdate { index: 0 });
    }
    let c = clip_factor(norm, clip_norm);
    if c < 1.0 {
        x.iter_mut().for_each(|v| *v = (*v as f64 * c) as f32);
    }
    Ok(norm)
}

/// Checks all updates have length `dim`.
pub(crate) fn check_lengths(updates: &[&[f32]], dim: usize) -> Result<()> {
    match updates.iter().position(|u| u.len() != dim) {
        Some(index) => Err(DpError::LengthMismatch {
            index,
            expected: dim,
            found: updates[index].len(),
        }),
        None => Ok(()),
    }
}

/// Norms of all updates; errors on the first update holding NaN or ±∞ (a finite f32 squared
/// and summed in f64 cannot overflow, so a non-finite norm means a non-finite entry).
pub(crate) fn norms(updates: &[&[f32]], dim: usize, parallel: bool) -> Result<Vec<f64>> {
    let blocks = dim.div_ceil(NORM_BLOCK);
    let partial = |k: usize| {
        let (i, b) = (k / blocks, k % blocks);
        let end = ((b + 1) * NORM_BLOCK).min(dim);
        sum_squares(&updates[i][b * NORM_BLOCK..end])
    };
    // Partials are collected in index order and folded sequentially: deterministic.
    let partials: Vec<f64> = if parallel {
        (0..updates.len() * blocks)
            .into_par_iter()
            .map(partial)
            .collect()
    } else {
        (0..updates.len() * blocks).map(partial).collect()
    };
    let norms: Vec<f64> = partials
        .chunks(blocks.max(1))
        .map(|p| p.iter().sum::<f64>().sqrt())
        .collect();
    match norms.iter().position(|n| !n.is_finite()) {
        Some(index) => Err(DpError::NonFiniteUpdate { index }),
        None => Ok(norms),
    }
}

/// `acc_j += round(scale · u_j)`: clip, snap to the noise grid and accumulate in one pass.
/// `scale` is the clip factor divided by the grid spacing.
#[inline]
pub(crate) fn accumulate_snapped(acc: &mut [f64], u: &[f32], scale: f64) {
    for (a, &v) in acc.iter_mut().zip(u) {
        *a += round_to_integer(v as f64 * scale);
    }
}

/// Two updates per pass halve the loads and stores of the accumulator.
#[inline]
pub(crate) fn accumulate_snapped2(acc: &mut [f64], u: &[f32], su: f64, v: &[f32], sv: f64) {
    for ((a, &x), &y) in acc.iter_mut().zip(u).zip(v) {
        *a += round_to_integer(x as f64 * su) + round_to_integer(y as f64 * sv);
    }
}

/// `acc_j += w · u_j` (plain weighted sum).
#[inline]
pub(crate) fn accumulate_weighted(acc: &mut [f64], u: &[f32], w: f64) {
    for (a, &v) in acc.iter_mut().zip(u) {
        *a += v as f64 * w;
    }
}

/// Two updates per pass, as in [`accumulate_snapped2`].
#[inline]
pub(crate) fn accumulate_weighted2(acc: &mut [f64], u: &[f32], wu: f64, v: &[f32], wv: f64) {
    for ((a, &x), &y) in acc.iter_mut().zip(u).zip(v) {
        *a += x as f64 * wu + y as f64 * wv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn norms_are_blocked_but_exact_on_small_integers() {
        let a = vec![1.0f32; NORM_BLOCK * 2 + 3];
        let b = vec![2.0f32; NORM_BLOCK * 2 + 3];
        let n = norms(&[&a, &b], a.len(), true).unwrap();
        assert_eq!(n[0], ((NORM_BLOCK * 2 + 3) as f64).sqrt());
        assert_eq!(n[1], 2.0 * ((NORM_BLOCK * 2 + 3) as f64).sqrt());
        assert_eq!(n, norms(&[&a, &b], a.len(), false).unwrap());
    }

    #[test]
    fn clip_to_norm_scales_down_only() {
        let mut x = vec![3.0f32, 4.0];
        assert_eq!(clip_to_norm(&mut x, 10.0).unwrap(), 5.0);
        assert_eq!(x, vec![3.0, 4.0]);
        assert_eq!(clip_to_norm(&mut x, 1.0).unwrap(), 5.0);
        assert!((l2_norm(&x) - 1.0).abs() < 1e-7);
        assert!(clip_to_norm(&mut [f32::NAN], 1.0).is_err());
        assert!(clip_to_norm(&mut x, 0.0).is_err());
    }
}
