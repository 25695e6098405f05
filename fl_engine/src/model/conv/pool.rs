//! How the kernels share rayon's pool: when a pass is worth splitting, buffers zeroed over
//! the pool, and the backward pass's runs of images with their kernel gradients summed in
//! run order.
use rayon::prelude::*;

use super::geometry::Geometry;

/// Fewest values an element-wise pass hands to one rayon task.
pub(super) const PER_TASK: usize = 1 << 14;

/// Whether a kernel over `work` values is worth splitting over rayon's pool: more than one
/// thread, and enough work that handing it to the pool's threads and waiting pays.
pub(super) fn parallel(work: usize) -> bool {
    work >= 1 << 15 && rayon::current_num_threads() > 1
}

/// `len` zeros, written over the pool where that pays: the buffers the kernels then fill
/// over the pool are the size of the activations, and zeroed on the calling thread alone
/// they left the other threads waiting (4 % of a two-thread CNN step's samples).
pub(super) fn zeros(len: usize) -> Vec<f32> {
    if !parallel(len) {
        return vec![0.0; len];
    }
    let mut v = Vec::with_capacity(len);
    v.par_extend(rayon::iter::repeat_n(0f32, len).with_min_len(PER_TASK));
    v
}

/// The backward pass's runs of `per_run` images (over the pool when there are several), each
/// given its images' part of the input gradient `dx` where there is one, and the kernel
/// gradients they return (`len` values each) summed in run order: the result depends on the
/// thread count by rounding only.
pub(super) fn in_runs(
    g: &Geometry,
    per_run: usize,
    dx: Option<&mut [f32]>,
    len: usize,
    run: impl Fn(usize, Option<&mut [f32]>) -> candle_core::Result<Vec<f32>> + Sync,
) -> candle_core::Result<Vec<f32>> {
    let image = g.cin * g.h * g.w;
    let runs = g.batch.div_ceil(per_run);
    let parts: Vec<Vec<f32>> = match (dx, runs > 1) {
        (Some(dx), true) => dx
            .par_chunks_mut(per_run * image.max(1))
            .enumerate()
            .map(|(r, d)| run(r, Some(d)))
            .collect::<candle_core::Result<_>>()?,
        (None, true) => (0..runs)
            .into_par_iter()
            .map(|r| run(r, None))
            .collect::<candle_core::Result<_>>()?,
        (dx, false) => vec![run(0, dx)?],
    };
    let mut parts = parts.into_iter();
    let mut sum = parts.next().unwrap_or_else(|| vec![0f32; len]);
    for p in parts {
        sum.iter_mut().zip(&p).for_each(|(d, v)| *d += v);
    }
    Ok(sum)
}
