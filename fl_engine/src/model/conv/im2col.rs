//! Convolution by im2col: each image unfolded into columns `[in * k * k, positions]`
//! (`col2im` folds them back), one matrix product per group of images in each direction,
//! and the batch's forward and backward passes on slices, which hand 3x3 stride-1
//! convolutions to [`winograd`] where it applies.
use candle_core::{Device, Tensor};
use rayon::prelude::*;

use super::geometry::{Algorithm, Geometry};
use super::pool::{in_runs, zeros};
use super::scratch::{GroupScratch, Scratch};
use super::winograd;
use crate::model::fused::{matmul_into, matmul_with};

impl Geometry {
    /// The outputs `lo..hi` along an axis of `size` inputs whose kernel offset `kk` reads
    /// inside the image (the rest read padding); output `o` reads input
    /// `o * stride + kk - pad`.
    fn span(&self, kk: usize, size: usize, out: usize) -> (usize, usize) {
        let lo = self.pad.saturating_sub(kk).div_ceil(self.stride);
        let hi = if size + self.pad > kk {
            ((size + self.pad - kk - 1) / self.stride + 1).min(out)
        } else {
            0
        };
        (lo, hi.max(lo))
    }

    /// One image's `[in, h, w]` unfolded into the columns `[in * k * k, positions]`, row
    /// `(c, ky, kx)`, column `(oy, ox)`, rows `ld` apart in `cols` (`ld > positions` when the
    /// columns of several images lie side by side). Only the entries that read inside the
    /// image are written: the rest read padding, the same entries for every image of one
    /// geometry, so a buffer zeroed once can be reused image after image.
    fn im2col(&self, x: &[f32], cols: &mut [f32], ld: usize) {
        let (l, ow, k) = (self.positions(), self.out_w(), self.k);
        let plane_len = self.h * self.w;
        if l == 0 || plane_len == 0 {
            return;
        }
        // the bounds depend on the kernel offset only: worked out once per offset, not per
        // row (with 8x8 maps they cost more than the row's copy)
        for ky in 0..k {
            let (y_lo, y_hi) = self.span(ky, self.h, self.out_h());
            for kx in 0..k {
                let (lo, hi) = self.span(kx, self.w, ow);
                if lo == hi || y_lo == y_hi {
                    continue;
                }
                let rows = (0..self.cin).map(|c| (c * k + ky) * k + kx);
                let planes = x.chunks_exact(plane_len);
                if self.stride == 1 && ow == self.w {
                    // output (oy, ox) reads input (oy + ky - pad, ox + kx - pad): over the
                    // rows y_lo..y_hi one run of the plane, shifted, in one copy; the entries
                    // whose `ox + kx - pad` falls off the row's edge (they wrap onto the next
                    // or last row, or off the plane) are then set back to zero
                    let shift = (ky * self.w + kx) as isize - (self.pad * (self.w + 1)) as isize;
                    let (d0, d1) = (y_lo * ow, y_hi * ow);
                    let from = d0.max((-shift).max(0) as usize);
                    let to = d1.min((plane_len as isize - shift) as usize);
                    let src = (from as isize + shift) as usize;
                    for (r, plane) in rows.zip(planes) {
                        let row = &mut cols[r * ld..][..l];
                        row[from..to].copy_from_slice(&plane[src..src + (to - from)]);
                        // (a column at a time: one or two entries per line with a 3x3 kernel)
                        for e in (0..lo).chain(hi..ow) {
                            for v in row[d0 + e..d1].iter_mut().step_by(ow) {
                                *v = 0.0;
                            }
                        }
                    }
                    continue;
                }
                // the input column of output `lo`
                let first = lo * self.stride + kx - self.pad;
                for (r, plane) in rows.zip(planes) {
                    let row = &mut cols[r * ld..][..l];
                    for oy in y_lo..y_hi {
                        let iy = oy * self.stride + ky - self.pad;
                        let dst = &mut row[oy * ow + lo..oy * ow + hi];
                        let src = &plane[iy * self.w..][..self.w];
                        if self.stride == 1 {
                            dst.copy_from_slice(&src[first..first + dst.len()]);
                        } else {
                            gather(dst, &src[first..], self.stride);
                        }
                    }
                }
            }
        }
    }

    /// With stride 1, the input gradient is itself a stride-1 convolution: of the output
    /// gradient, padded by `k - 1 - pad`, with the kernel flipped and its in/out axes swapped
    /// (see [`flipped`]). This is its geometry, over one image; `None` for strided
    /// convolutions, whose input gradient is folded back from columns instead.
    pub(super) fn transposed(&self) -> Option<Geometry> {
        (self.stride == 1 && self.pad < self.k).then_some(Geometry {
            batch: 1,
            cin: self.cout,
            h: self.out_h(),
            w: self.out_w(),
            cout: self.cin,
            k: self.k,
            stride: 1,
            pad: self.k - 1 - self.pad,
            columns: self.columns,
            algorithm: Algorithm::Im2col,
        })
    }

    /// Adds one image's column gradient (rows `ld` apart in `cols`, as [`Self::im2col`]
    /// writes them) back into its `[in, h, w]` input gradient.
    fn col2im(&self, cols: &[f32], ld: usize, dx: &mut [f32]) {
        let (l, ow, k) = (self.positions(), self.out_w(), self.k);
        let plane_len = self.h * self.w;
        if l == 0 || plane_len == 0 {
            return;
        }
        for ky in 0..k {
            let (y_lo, y_hi) = self.span(ky, self.h, self.out_h());
            for kx in 0..k {
                let (lo, hi) = self.span(kx, self.w, ow);
                if lo == hi || y_lo == y_hi {
                    continue;
                }
                let first = lo * self.stride + kx - self.pad;
                for (c, plane) in dx.chunks_exact_mut(plane_len).enumerate() {
                    let row = &cols[((c * k + ky) * k + kx) * ld..][..l];
                    for oy in y_lo..y_hi {
                        let iy = oy * self.stride + ky - self.pad;
                        let src = &row[oy * ow + lo..oy * ow + hi];
                        let dst = &mut plane[iy * self.w..][..self.w];
                        scatter_add(&mut dst[first..], src, self.stride);
                    }
                }
            }
        }
    }
}

/// `dst[i] = src[i * stride]`. Stride 2, the backbone's only other stride, goes by pairs,
/// which the compiler turns into vector loads and shuffles; a `step_by` loop stays scalar,
/// one element at a time (most of im2col's own time in the CNN profiles).
fn gather(dst: &mut [f32], src: &[f32], stride: usize) {
    if stride == 2 {
        let pairs = dst.len().min(src.len() / 2);
        let (head, tail) = dst.split_at_mut(pairs);
        for (d, s) in head.iter_mut().zip(src.chunks_exact(2)) {
            *d = s[0];
        }
        for (d, &s) in tail.iter_mut().zip(src[2 * pairs..].iter().step_by(2)) {
            *d = s;
        }
        return;
    }
    for (d, &s) in dst.iter_mut().zip(src.iter().step_by(stride)) {
        *d = s;
    }
}

/// `dst[i * stride] += src[i]`, the inverse of [`gather`]. Stride 2 goes by whole pairs,
/// adding zero to the entry between two targets, so that the compiler can load, add and
/// store both as vectors (a store that skipped it would stay scalar).
fn scatter_add(dst: &mut [f32], src: &[f32], stride: usize) {
    if stride == 2 {
        let pairs = src.len().min(dst.len() / 2);
        for (d, &s) in dst.chunks_exact_mut(2).zip(&src[..pairs]) {
            d[0] += s;
            d[1] += 0.0;
        }
        for (d, s) in dst[2 * pairs..].iter_mut().step_by(2).zip(&src[pairs..]) {
            *d += s;
        }
        return;
    }
    for (d, s) in dst.iter_mut().step_by(stride).zip(src) {
        *d += s;
    }
}

/// `dst [images, rows, len]` from `m [rows, images * len]`: each image's columns of a
/// product over several images side by side, back in the image's own `[rows, len]` order.
fn split_images(m: &[f32], images: usize, len: usize, dst: &mut [f32]) {
    let rows = m.len() / (images * len).max(1);
    for (b, dst) in dst.chunks_exact_mut((rows * len).max(1)).enumerate() {
        for (r, d) in dst.chunks_exact_mut(len.max(1)).enumerate() {
            d.copy_from_slice(&m[(r * images + b) * len..][..len]);
        }
    }
}

/// The inverse of [`split_images`]: `m [rows, images * len]`, rows `ld` apart, from
/// `src [images, rows, len]`.
fn join_images(src: &[f32], images: usize, len: usize, m: &mut [f32], ld: usize) {
    let rows = src.len() / (images * len).max(1);
    for (b, src) in src.chunks_exact((rows * len).max(1)).enumerate() {
        for (r, s) in src.chunks_exact(len.max(1)).enumerate() {
            m[r * ld + b * len..][..len].copy_from_slice(s);
        }
    }
}

/// `w [out, in, k, k]` as `[in, out * k * k]`, each kernel turned by 180 degrees: the kernel of
/// the input gradient's convolution (see [`Geometry::transposed`]).
fn flipped(w: &[f32], g: &Geometry) -> Vec<f32> {
    let kk = g.k * g.k;
    let mut f = vec![0f32; w.len()];
    for (co, w) in w.chunks_exact(g.cin * kk).enumerate() {
        for (ci, w) in w.chunks_exact(kk).enumerate() {
            let dst = &mut f[(ci * g.cout + co) * kk..][..kk];
            dst.iter_mut()
                .zip(w.iter().rev())
                .for_each(|(d, &v)| *d = v);
        }
    }
    f
}

/// Most values in the column matrices of a batch that a forward pass keeps for the backward
/// pass (4 MiB of f32), which then need not unfold the images again: small maps' columns
/// (an 8x8 model's are about 1 MiB per layer at 32 images); large ones are rebuilt.
pub(super) const KEPT_COLUMNS: usize = 1 << 20;

/// Column matrices kept by a forward pass: first image, images, `[in * k * k, images *
/// positions]`, one per product.
pub(super) type Kept = Vec<(usize, usize, Tensor)>;

impl Geometry {
    /// The convolution of the batch `x [batch, in, h, w]` with `w [out, in * k * k]`:
    /// `[batch, out, positions]`; with `keep`, and where the batch's columns are within
    /// [`KEPT_COLUMNS`], also the column matrices, for [`Self::backward`] to reuse.
    pub(super) fn forward(
        &self,
        x: &[f32],
        w: &[f32],
        keep: bool,
    ) -> candle_core::Result<(Vec<f32>, Kept)> {
        if winograd::applies(self) {
            return Ok((winograd::forward(self, x, w)?, vec![]));
        }
        let g = self;
        let (l, image) = (g.positions(), g.cin * g.h * g.w);
        let w = Tensor::from_slice(w, (g.cout, g.patch()), &Device::Cpu)?;
        let mut out = zeros(g.batch * g.cout * l);
        let keep = keep && g.batch * g.patch() * l <= KEPT_COLUMNS;
        // a few images at a time (one, for large maps; see `images_per_product`), their
        // columns side by side, so they stay in cache between unfolding and product; with
        // more than one thread, each thread takes a contiguous run of images through the
        // whole chain (one product is too small to split well) with its own column buffers.
        // candle still hands each product to `gemm` with the pool's thread count (it reads
        // RAYON_NUM_THREADS, with no per-call setting); nested in a run, rayon keeps both
        // halves on the calling thread unless another one is idle.
        let per_image = (g.cout * l).max(1);
        let per_run = g.images_per_run();
        let run = |(r, out): (usize, &mut [f32])| -> candle_core::Result<Kept> {
            let count = out.len() / per_image;
            let per_product = g.images_per_product(count);
            let mut unfold = GroupScratch::new(g.patch(), l);
            let mut kept = vec![];
            for (i, out) in out.chunks_mut(per_product * per_image).enumerate() {
                let (first, n) = (r * per_run + i * per_product, out.len() / per_image);
                let fill = |c: &mut [f32], ld| {
                    for b in 0..n {
                        g.im2col(&x[(first + b) * image..][..image], &mut c[b * l..], ld);
                    }
                };
                // kept columns need a matrix each; else one is refilled product after product
                let cols = if keep {
                    Scratch::new(g.patch(), n * l)?.fill(fill)?
                } else {
                    unfold.fill(n, fill)?
                };
                matmul_with(&w, &cols, |v| {
                    split_images(v, n, l, out);
                    Ok(())
                })?;
                if keep {
                    kept.push((first, n, cols));
                }
            }
            Ok(kept)
        };
        let kept = if per_run < g.batch {
            let runs: Vec<Kept> = out
                .par_chunks_mut(per_run * per_image)
                .enumerate()
                .map(run)
                .collect::<candle_core::Result<_>>()?;
            runs.into_iter().flatten().collect()
        } else {
            run((0, &mut out))?
        };
        Ok((out, kept))
    }

    /// The kernel gradient and, with `want_dx`, the input gradient, from the output gradient
    /// `dy [batch, out, positions]`; the column matrices `kept` by the forward pass are
    /// reused, the others rebuilt.
    pub(super) fn backward(
        &self,
        xv: &[f32],
        want_dx: bool,
        w: &[f32],
        dy: &[f32],
        kept: &[(usize, usize, Tensor)],
    ) -> candle_core::Result<(Option<Vec<f32>>, Vec<f32>)> {
        if winograd::applies(self) {
            return winograd::backward(self, xv, want_dx, w, dy);
        }
        let g = self;
        let (l, image) = (g.positions(), g.cin * g.h * g.w);
        let back = g.transposed();
        // the input gradient's kernel: flipped for the stride-1 convolution of the output
        // gradient, else `W^T` for the columns folded back
        let w_back = match &back {
            Some(b) => Tensor::from_vec(flipped(w, g), (g.cin, b.patch()), &Device::Cpu)?,
            None => Tensor::from_slice(w, (g.cout, g.patch()), &Device::Cpu)?.t()?,
        };
        let mut dx = want_dx.then(|| zeros(g.batch * image));
        let per_run = g.images_per_run();
        let grad_len = g.cout * l;
        // one run of images: its kernel gradient summed in the order of its images, and the
        // images' input gradients when asked for
        let run = |r: usize, mut dx: Option<&mut [f32]>| -> candle_core::Result<Vec<f32>> {
            let start = r * per_run;
            let count = per_run.min(g.batch - start);
            let per_product = g.images_per_product(count);
            // `dW^T = cols dO^T`, accumulated `[in * k * k, out]` and turned at the end: the
            // product `dO cols^T` would read the columns across their rows (`gemm` packs them
            // element by element with a stride of a whole row), `dO^T` is the small operand
            let mut dw_t = vec![0f32; g.patch() * g.cout];
            let mut unfold = GroupScratch::new(g.patch(), l);
            let mut d_out = GroupScratch::new(g.cout, l);
            let mut d_cols = back.map(|b| GroupScratch::new(b.patch(), b.positions()));
            for first in (start..start + count).step_by(per_product) {
                let n = per_product.min(start + count - first);
                let cols = match kept.iter().find(|k| (k.0, k.1) == (first, n)) {
                    Some(k) => k.2.clone(),
                    None => unfold.fill(n, |c, ld| {
                        for b in 0..n {
                            g.im2col(&xv[(first + b) * image..][..image], &mut c[b * l..], ld);
                        }
                    })?,
                };
                let dy_n = &dy[first * grad_len..][..n * grad_len];
                let d_out = d_out.fill(n, |m, ld| join_images(dy_n, n, l, m, ld))?;
                matmul_into(&mut dw_t, true, &cols, &d_out.t()?)?;
                let Some(dx) = dx.as_deref_mut() else {
                    continue;
                };
                let dx = &mut dx[(first - start) * image..][..n * image];
                match (&back, d_cols.as_mut()) {
                    (Some(b), Some(d_cols)) => {
                        let lb = b.positions();
                        let d_cols = d_cols.fill(n, |c, ld| {
                            for i in 0..n {
                                b.im2col(&dy_n[i * grad_len..][..grad_len], &mut c[i * lb..], ld);
                            }
                        })?;
                        matmul_with(&w_back, &d_cols, |v| {
                            split_images(v, n, lb, dx);
                            Ok(())
                        })?;
                    }
                    _ => matmul_with(&w_back, &d_out, |v| {
                        for (i, dx) in dx.chunks_exact_mut(image.max(1)).enumerate() {
                            g.col2im(&v[i * l..], n * l, dx);
                        }
                        Ok(())
                    })?,
                }
            }
            let mut dw = vec![0f32; g.cout * g.patch()];
            for (p, row) in dw_t.chunks_exact(g.cout.max(1)).enumerate() {
                for (co, &v) in row.iter().enumerate() {
                    dw[co * g.patch() + p] = v;
                }
            }
            Ok(dw)
        };
        let dw = in_runs(g, per_run, dx.as_deref_mut(), g.cout * g.patch(), run)?;
        Ok((dx, dw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::conv::geometry::COLUMNS_PER_PRODUCT;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// im2col (its one-copy path for stride 1 and its row-by-row path) and col2im agree
    /// with their definitions, entry by entry, for the columns of two images side by side
    /// in one buffer with padded rows, written twice (the padding entries stay zero).
    #[test]
    fn im2col_and_col2im_match_their_definition() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        for (cin, h, w, k, stride, pad) in [
            (2, 8, 8, 3, 1, 1),
            (3, 5, 7, 3, 1, 1),
            (2, 4, 4, 5, 1, 2),
            (2, 6, 6, 3, 1, 0),
            (1, 1, 1, 3, 1, 1),
            (2, 9, 9, 3, 2, 1),
            (3, 8, 6, 1, 2, 0),
            (2, 7, 7, 1, 1, 0),
        ] {
            let g = Geometry {
                batch: 2,
                cin,
                h,
                w,
                cout: 1,
                k,
                stride,
                pad,
                columns: COLUMNS_PER_PRODUCT,
                algorithm: Algorithm::Im2col,
            };
            let (l, image, ld) = (g.positions(), cin * h * w, 2 * g.positions() + 5);
            let x: Vec<f32> = (0..2 * image)
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            // entry (row, image, position) of the definition
            let value = |r: usize, b: usize, p: usize| {
                let (c, ky, kx) = (r / (k * k), (r / k) % k, r % k);
                let (iy, ix) = (
                    ((p / g.out_w()) * stride + ky).checked_sub(pad),
                    ((p % g.out_w()) * stride + kx).checked_sub(pad),
                );
                match (iy, ix) {
                    (Some(iy), Some(ix)) if iy < h && ix < w => {
                        x[b * image + (c * h + iy) * w + ix]
                    }
                    _ => 0.0,
                }
            };
            let mut cols = vec![0f32; g.patch() * ld];
            for _ in 0..2 {
                for b in 0..2 {
                    g.im2col(&x[b * image..][..image], &mut cols[b * l..], ld);
                }
                for r in 0..g.patch() {
                    for b in 0..2 {
                        for p in 0..l {
                            assert_eq!(
                                cols[r * ld + b * l + p],
                                value(r, b, p),
                                "{g:?} {r} {b} {p}"
                            );
                        }
                    }
                }
            }
            // col2im: each column entry added to the pixel it was read from
            let grads: Vec<f32> = (0..cols.len())
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            for b in 0..2 {
                let mut dx = vec![0f32; image];
                g.col2im(&grads[b * l..], ld, &mut dx);
                let mut want = vec![0f32; image];
                for r in 0..g.patch() {
                    let (c, ky, kx) = (r / (k * k), (r / k) % k, r % k);
                    for p in 0..l {
                        let (iy, ix) = (
                            ((p / g.out_w()) * stride + ky).checked_sub(pad),
                            ((p % g.out_w()) * stride + kx).checked_sub(pad),
                        );
                        if let (Some(iy), Some(ix)) = (iy, ix) {
                            if iy < h && ix < w {
                                want[(c * h + iy) * w + ix] += grads[r * ld + b * l + p];
                            }
                        }
                    }
                }
                for (a, e) in dx.iter().zip(&want) {
                    assert!((a - e).abs() <= 1e-5 * (1.0 + e.abs()), "{g:?}: {a} vs {e}");
                }
            }
        }
    }

    /// The strided copy and add agree with their definitions for strides 1 to 3, with the
    /// source ending on a whole pair, half-way into one, and past what the destination needs.
    #[test]
    fn gather_and_scatter_add_match_their_definition() {
        for stride in 1..=3 {
            for (n, len) in [
                (0usize, 0usize),
                (1, 1),
                (4, 7),
                (4, 8),
                (5, 9),
                (5, 13),
                (9, 30),
            ] {
                let src: Vec<f32> = (0..len).map(|i| i as f32 + 0.5).collect();
                let n = n.min(len.div_ceil(stride));
                let mut dst = vec![-1f32; n];
                gather(&mut dst, &src, stride);
                let want: Vec<f32> = (0..n).map(|i| src[i * stride]).collect();
                assert_eq!(dst, want, "gather, stride {stride}, {n} from {len}");
                let mut acc: Vec<f32> = (0..len).map(|i| -(i as f32)).collect();
                let mut want = acc.clone();
                for (i, v) in dst.iter().enumerate() {
                    want[i * stride] += v;
                }
                scatter_add(&mut acc, &dst, stride);
                assert_eq!(acc, want, "scatter_add, stride {stride}, {n} into {len}");
            }
        }
    }

    /// Images side by side in one product per group (groups of one, two and all images;
    /// the last group of a run smaller), with and without the forward pass's columns kept
    /// for the backward pass, give the output, input and kernel gradients of one image per
    /// product with the columns rebuilt; for the 3x3 stride-1 cases both by im2col and by
    /// Winograd's tiles (which keep nothing), each against its own one image per product.
    #[test]
    fn grouped_products_match_one_image_per_product() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for ((batch, cin, cout, k, stride, side), algorithm) in [
            (5, 3, 4, 3, 1, 8),
            (5, 4, 6, 3, 2, 9),
            (7, 4, 5, 1, 2, 6),
            (4, 16, 8, 3, 1, 8),
            (5, 8, 4, 3, 1, 7),
        ]
        .into_iter()
        .flat_map(|case| [(case, Algorithm::Im2col), (case, Algorithm::Winograd)])
        {
            let base = Geometry {
                batch,
                cin,
                h: side,
                w: side,
                cout,
                k,
                stride,
                pad: k / 2,
                columns: 1,
                algorithm,
            };
            let image = cin * side * side;
            let random = |rng: &mut ChaCha8Rng, n: usize| -> Vec<f32> {
                (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
            };
            let x = random(&mut rng, batch * image);
            let w = random(&mut rng, cout * base.patch());
            let dy = random(&mut rng, batch * cout * base.positions());
            let run = |g: &Geometry, keep: bool| {
                let (y, kept) = g.forward(&x, &w, keep).unwrap();
                let (dx, dw) = g.backward(&x, true, &w, &dy, &kept).unwrap();
                (y, dx.unwrap(), dw, kept.len())
            };
            let one = run(&base, false);
            let per_image = base.patch() * base.positions();
            let per_image = base
                .transposed()
                .map_or(per_image, |b| per_image.max(b.patch() * b.positions()));
            for (columns, keep) in [
                (2 * per_image, false),
                (2 * per_image, true),
                (COLUMNS_PER_PRODUCT, true),
                (1, true),
            ] {
                let g = Geometry { columns, ..base };
                let many = run(&g, keep);
                assert_eq!(many.3 > 0, keep && !winograd::applies(&g), "columns kept");
                let near = |a: &[f32], b: &[f32], what: &str| {
                    for (x, y) in a.iter().zip(b) {
                        assert!(
                            (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
                            "{what}, {g:?}: {x} vs {y}"
                        );
                    }
                };
                near(&many.0, &one.0, "output");
                near(&many.1, &one.1, "input gradient");
                near(&many.2, &one.2, "kernel gradient");
            }
        }
    }
}
