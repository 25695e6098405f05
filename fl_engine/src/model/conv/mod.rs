//! The CNN backbone's convolution and GroupNorm as single graph nodes with hand-written
//! backward passes.
//!
//! candle's CPU conv2d backward computes the input gradient with a direct-loop transposed
//! convolution and the kernel gradient with another convolution over permuted copies, and its
//! GroupNorm is about ten graph nodes (reshape, two means, subtract, square, add, sqrt,
//! divide, scale, shift), each with its own backward pass. Here a convolution unfolds each
//! image into columns (`im2col`, `[in * k * k, positions]`) and makes each direction one
//! matrix product per group of images, their columns side by side (one image per group for
//! large maps, up to [`COLUMNS_PER_PRODUCT`] values for small ones): forward `W cols`;
//! backward `cols dO^T` for the kernel (its transpose, so that `gemm` reads the columns along
//! their rows) and, for the input, with stride 1 the convolution of `dO` with the flipped
//! kernel (unfolded the same way), with larger strides `W^T dO` folded back (`col2im`). The
//! fused convolution-GroupNorm node keeps a small batch's columns (up to [`KEPT_COLUMNS`]
//! values) for its backward pass; other columns are rebuilt there, into one buffer per
//! thread. With more than one thread, each thread takes a contiguous run of images through
//! that whole chain. 3x3 stride-1 convolutions with enough channels go by Winograd's
//! F(2x2, 3x3) tiles instead ([`winograd`]), the same chain with 16 smaller products.
//! GroupNorm (optionally followed by ReLU) reads each group once for its statistics and
//! once to normalise, and its backward pass is the closed form
//! `dx = rstd (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂))`, `dx̂ = dy gamma`, with the statistics of
//! the forward pass where the fused node kept them. The backbone runs convolution and
//! GroupNorm as one node ([`conv_gn`]) and a residual block's skip sum and ReLU as another
//! ([`add_relu`]).
//!
//! Both keep candle's arithmetic (biased variance, `(x - mean) / sqrt(var + eps)` forward,
//! ReLU derivative 1 at 0) and fall back to candle's ops off the CPU or for other dtypes; the
//! tests compare values and gradients against those ops.
use std::sync::OnceLock;

use candle_core::{
    CpuStorage, CustomOp2, CustomOp3, DType, Device, InplaceOp1, Layout, Module, Shape, Tensor,
};
use candle_nn::{Conv2d, Conv2dConfig, GroupNorm};
use rayon::prelude::*;

use super::fused::{cpu_slice, f32_slice, matmul_into, matmul_with};

mod body;
mod winograd;

pub(crate) use body::{residual_body, ConvGnLayer, ResidualBlock};

/// Geometry of one convolution (square kernel, same stride and padding on both axes).
#[derive(Clone, Copy, Debug)]
struct Geometry {
    batch: usize,
    cin: usize,
    h: usize,
    w: usize,
    cout: usize,
    k: usize,
    stride: usize,
    pad: usize,
    /// Most values in one column matrix of images side by side ([`COLUMNS_PER_PRODUCT`];
    /// tests set 1 for one image per product).
    columns: usize,
    /// How a 3x3 convolution with stride 1 and padding 1 is computed (others go by im2col).
    algorithm: Algorithm,
}

/// How a 3x3 convolution with stride 1 and padding 1 is computed: by im2col, by Winograd's
/// F(2x2, 3x3) tiles ([`winograd`]), or by whichever of the two is faster for its channels
/// and map size (the engine's choice; tests pick one to compare them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Algorithm {
    Im2col,
    #[cfg(test)]
    Winograd,
    Fastest,
}

impl Geometry {
    fn out_h(&self) -> usize {
        (self.h + 2 * self.pad - self.k) / self.stride + 1
    }

    fn out_w(&self) -> usize {
        (self.w + 2 * self.pad - self.k) / self.stride + 1
    }

    /// Output positions per image.
    fn positions(&self) -> usize {
        self.out_h() * self.out_w()
    }

    /// Rows of the column matrix: `in * k * k`.
    fn patch(&self) -> usize {
        self.cin * self.k * self.k
    }

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
    fn transposed(&self) -> Option<Geometry> {
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

    /// Images per run: the batch in one contiguous run per rayon thread (fewer when there
    /// are fewer images), or one run when the work (the larger of input and output) is too
    /// small to split. The same in both directions, so that the backward pass meets the
    /// groups of images whose columns the forward pass kept.
    fn images_per_run(&self) -> usize {
        let work = self.batch * (self.cin * self.h * self.w).max(self.cout * self.positions());
        let runs = if parallel(work) {
            rayon::current_num_threads().min(self.batch)
        } else {
            1
        };
        self.batch.div_ceil(runs.max(1)).max(1)
    }

    /// Images whose columns go side by side into one matrix product, for a run of `count`
    /// images: as many as keep that matrix within `columns` values (at least one), in
    /// groups of equal size but the run's last. Small maps thus share a product (at 8x8,
    /// one image's products are 9k-150k multiply-adds, and the cost of each call shows),
    /// large ones keep theirs.
    fn images_per_product(&self, count: usize) -> usize {
        // the larger column matrix of the two directions: the input's, or (stride 1) the
        // output gradient's, unfolded for the input gradient
        let per_image = self
            .transposed()
            .map_or(0, |b| b.patch() * b.positions())
            .max(self.patch() * self.positions())
            .max(1);
        let most = (self.columns / per_image).clamp(1, count.max(1));
        count.div_ceil(count.max(1).div_ceil(most)).max(1)
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

/// Most values in one column matrix of images side by side (1 MiB of f32, a core's L2 on
/// the AMD EPYC machines measured), so the columns stay in cache between unfolding and
/// product.
const COLUMNS_PER_PRODUCT: usize = 1 << 18;

/// Most values in the column matrices of a batch that a forward pass keeps for the backward
/// pass (4 MiB of f32), which then need not unfold the images again: small maps' columns
/// (an 8x8 model's are about 1 MiB per layer at 32 images); large ones are rebuilt.
const KEPT_COLUMNS: usize = 1 << 20;

/// Column matrices kept by a forward pass: first image, images, `[in * k * k, images *
/// positions]`, one per product.
type Kept = Vec<(usize, usize, Tensor)>;

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

/// A `[rows, cols]` f32 matrix reused as scratch space: products take candle tensors, and
/// an in-place op is candle's safe way to refill one tensor's own buffer between them
/// (a fresh tensor per image would allocate and zero its columns every time). Its rows are
/// `ld` apart, a whole and odd number of cache lines: rows a power of two apart (an 8x8 map
/// has 64 positions, 16 images side by side 1,024) map to the same few sets of the L1
/// cache, so one image's columns, written row after row, would evict each other.
struct Scratch {
    buf: Tensor,
    cols: usize,
    ld: usize,
}

impl Scratch {
    fn new(rows: usize, cols: usize) -> candle_core::Result<Self> {
        Self::stacked(1, rows, cols)
    }

    /// `stack` matrices `[rows, cols]` one after the other (`[stack, rows, cols]`, a batch
    /// of products; one matrix when `stack` is 1), rows `ld` apart throughout.
    fn stacked(stack: usize, rows: usize, cols: usize) -> candle_core::Result<Self> {
        let ld = (cols.div_ceil(16) | 1) * 16;
        let buf = if stack == 1 {
            Tensor::zeros((rows, ld), DType::F32, &Device::Cpu)?
        } else {
            Tensor::zeros((stack, rows, ld), DType::F32, &Device::Cpu)?
        };
        Ok(Self { buf, cols, ld })
    }

    /// Runs `fill` on the buffer (and its row pitch) and returns the matrix, a view of it.
    fn fill(&self, fill: impl Fn(&mut [f32], usize)) -> candle_core::Result<Tensor> {
        self.buf
            .inplace_op1(&Fill(|b: &mut [f32]| fill(b, self.ld)))?;
        self.buf.narrow(self.buf.rank() - 1, 0, self.cols)
    }
}

/// Scratch matrices `[rows, images * len]` for the groups of images of one run: groups
/// differ by at most one image (see [`Geometry::images_per_product`]), so at most two widths,
/// each made when first needed.
struct GroupScratch {
    stack: usize,
    rows: usize,
    len: usize,
    made: Vec<(usize, Scratch)>,
}

impl GroupScratch {
    fn new(rows: usize, len: usize) -> Self {
        Self::stacked(1, rows, len)
    }

    /// As [`Scratch::stacked`]: `stack` matrices `[rows, images * len]` per width.
    fn stacked(stack: usize, rows: usize, len: usize) -> Self {
        Self {
            stack,
            rows,
            len,
            made: Vec::with_capacity(2),
        }
    }

    /// The matrix for `images` images, refilled by `fill` (see [`Scratch::fill`]).
    fn fill(
        &mut self,
        images: usize,
        fill: impl Fn(&mut [f32], usize),
    ) -> candle_core::Result<Tensor> {
        let i = match self.made.iter().position(|(n, _)| *n == images) {
            Some(i) => i,
            None => {
                let scratch = Scratch::stacked(self.stack, self.rows, images * self.len)?;
                self.made.push((images, scratch));
                self.made.len() - 1
            }
        };
        self.made[i].1.fill(fill)
    }
}

struct Fill<F>(F);

impl<F: Fn(&mut [f32])> InplaceOp1 for Fill<F> {
    fn name(&self) -> &'static str {
        "fill-scratch"
    }

    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> candle_core::Result<()> {
        match (s, l.contiguous_offsets()) {
            (CpuStorage::F32(v), Some((a, b))) => {
                (self.0)(&mut v[a..b]);
                Ok(())
            }
            _ => candle_core::bail!("scratch matrix must be contiguous f32"),
        }
    }
}

/// Fewest values an element-wise pass hands to one rayon task.
const PER_TASK: usize = 1 << 14;

/// Whether a kernel over `work` values is worth splitting over rayon's pool: more than one
/// thread, and enough work that handing it to the pool's threads and waiting pays.
fn parallel(work: usize) -> bool {
    work >= 1 << 15 && rayon::current_num_threads() > 1
}

/// `len` zeros, written over the pool where that pays: the buffers the kernels then fill
/// over the pool are the size of the activations, and zeroed on the calling thread alone
/// they left the other threads waiting (4 % of a two-thread CNN step's samples).
fn zeros(len: usize) -> Vec<f32> {
    if !parallel(len) {
        return vec![0.0; len];
    }
    let mut v = Vec::with_capacity(len);
    v.par_extend(rayon::iter::repeat_n(0f32, len).with_min_len(PER_TASK));
    v
}

/// A bias-free convolution (`weight [out, in, k, k]`, PyTorch's layout).
pub(crate) struct Conv {
    conv: Conv2d,
    cfg: Conv2dConfig,
}

impl Conv {
    pub(crate) fn new(conv: Conv2d) -> Self {
        let cfg = *conv.config();
        Self { conv, cfg }
    }

    /// The geometry of this convolution over `x` where the fused kernels take it (no bias, one
    /// group, no dilation, a square kernel that fits the padded input); `None` for candle's
    /// own convolution.
    fn geometry(&self, x: &Tensor) -> candle_core::Result<Option<Geometry>> {
        self.geometry_over(x.dims4()?)
    }

    /// [`Self::geometry`] over an input of dimensions `(batch, in, h, w)`.
    fn geometry_over(
        &self,
        (batch, cin, h, wd): (usize, usize, usize, usize),
    ) -> candle_core::Result<Option<Geometry>> {
        let w = self.conv.weight();
        let (cout, cin_w, kh, kw) = w.dims4()?;
        let plain = self.conv.bias().is_none()
            && self.cfg.groups == 1
            && self.cfg.dilation == 1
            && cin == cin_w
            && kh == kw
            && h + 2 * self.cfg.padding >= kh
            && wd + 2 * self.cfg.padding >= kw;
        Ok(plain.then_some(Geometry {
            batch,
            cin,
            h,
            w: wd,
            cout,
            k: kh,
            stride: self.cfg.stride,
            pad: self.cfg.padding,
            columns: COLUMNS_PER_PRODUCT,
            algorithm: Algorithm::Fastest,
        }))
    }

    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let Some(g) = self.geometry(x)? else {
            return self.conv.forward(x);
        };
        if !x.device().is_cpu() || x.dtype() != DType::F32 {
            return self.by_slices(x);
        }
        x.contiguous()?
            .apply_op2(&self.conv.weight().contiguous()?, ConvOp(g))
    }

    /// candle's convolution, the reference the tests compare against.
    #[cfg(test)]
    fn unfused(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        self.conv.forward(x)
    }

    /// The same convolution off the CPU: im2col from zero padding and strided slices, then
    /// one matrix product, all candle ops with device kernels. candle's own `conv2d` is not
    /// used there because its backward pass gives wrong kernel gradients on CUDA
    /// (huggingface/candle#3893: the kernel gradient is a convolution of transposed views,
    /// whose layout the CUDA path misreads).
    fn by_slices(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let w = self.conv.weight();
        let (cout, cin, k, _) = w.dims4()?;
        let (batch, _, h, wd) = x.dims4()?;
        let (stride, pad) = (self.cfg.stride, self.cfg.padding);
        let (oh, ow) = (
            (h + 2 * pad - k) / stride + 1,
            (wd + 2 * pad - k) / stride + 1,
        );
        // [b, oh, ow, cin] per kernel offset, stacked last: columns in the weight's
        // (cin, kh, kw) order
        let padded = x.pad_with_zeros(2, pad, pad)?.pad_with_zeros(3, pad, pad)?;
        let mut patches = Vec::with_capacity(k * k);
        for di in 0..k {
            let rows = every_nth(&padded, 2, di, oh, stride)?;
            for dj in 0..k {
                patches.push(every_nth(&rows, 3, dj, ow, stride)?.permute((0, 2, 3, 1))?);
            }
        }
        let cols = Tensor::stack(&patches, 4)?.reshape((batch * oh * ow, cin * k * k))?;
        let y = cols.matmul(&w.reshape((cout, cin * k * k))?.t()?)?;
        y.reshape((batch, oh, ow, cout))?
            .permute((0, 3, 1, 2))?
            .contiguous()
    }
}

/// Elements `start, start + step, ...` (`len` of them) of dimension `dim`.
fn every_nth(
    t: &Tensor,
    dim: usize,
    start: usize,
    len: usize,
    step: usize,
) -> candle_core::Result<Tensor> {
    if step == 1 {
        return t.narrow(dim, start, len);
    }
    // `len * step` elements from `start` (zero-padded at the end where the tensor is
    // shorter), seen as `[len, step]`, first column
    let (have, need) = (t.dim(dim)? - start, len * step);
    let mut span = t.narrow(dim, start, have.min(need))?;
    if have < need {
        span = span.pad_with_zeros(dim, 0, need - have)?;
    }
    let mut shape = span.dims().to_vec();
    shape[dim] = len;
    shape.insert(dim + 1, step);
    span.contiguous()?
        .reshape(shape)?
        .narrow(dim + 1, 0, 1)?
        .squeeze(dim + 1)
}

impl Geometry {
    /// The convolution of the batch `x [batch, in, h, w]` with `w [out, in * k * k]`:
    /// `[batch, out, positions]`; with `keep`, and where the batch's columns are within
    /// [`KEPT_COLUMNS`], also the column matrices, for [`Self::backward`] to reuse.
    fn forward(&self, x: &[f32], w: &[f32], keep: bool) -> candle_core::Result<(Vec<f32>, Kept)> {
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
    fn backward(
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

/// The backward pass's runs of `per_run` images (over the pool when there are several), each
/// given its images' part of the input gradient `dx` where there is one, and the kernel
/// gradients they return (`len` values each) summed in run order: the result depends on the
/// thread count by rounding only.
fn in_runs(
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

struct ConvOp(Geometry);

impl CustomOp2 for ConvOp {
    fn name(&self) -> &'static str {
        "conv2d-im2col"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ws: &CpuStorage,
        wl: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let g = &self.0;
        let (x, w) = (f32_slice(xs, xl, "input")?, f32_slice(ws, wl, "kernel")?);
        Ok((
            CpuStorage::F32(g.forward(x, w, false)?.0),
            Shape::from((g.batch, g.cout, g.out_h(), g.out_w())),
        ))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let g = &self.0;
        let grad = grad.contiguous()?;
        let (dx, dw) = {
            let (xs, xl) = x.storage_and_layout();
            let (ws, wl) = w.storage_and_layout();
            let (gs, gl) = grad.storage_and_layout();
            // the image batch itself needs no gradient
            g.backward(
                cpu_slice(&xs, xl, "input")?,
                x.track_op(),
                cpu_slice(&ws, wl, "kernel")?,
                cpu_slice(&gs, gl, "output gradient")?,
                &[],
            )?
        };
        Ok((
            dx.map(|dx| Tensor::from_vec(dx, x.shape(), x.device()))
                .transpose()?,
            Some(Tensor::from_vec(dw, w.shape(), w.device())?),
        ))
    }
}

/// GroupNorm over `[batch, channels, ...]` with per-channel scale and shift, optionally
/// followed by ReLU.
pub(crate) struct GroupNormAct {
    gn: GroupNorm,
    weight: Tensor,
    bias: Tensor,
    groups: usize,
    eps: f64,
}

impl GroupNormAct {
    pub(crate) fn new(
        groups: usize,
        channels: usize,
        eps: f64,
        vb: candle_nn::VarBuilder,
    ) -> candle_core::Result<Self> {
        let weight = vb.get_with_hints(channels, "weight", candle_nn::Init::Const(1.0))?;
        let bias = vb.get_with_hints(channels, "bias", candle_nn::Init::Const(0.0))?;
        Ok(Self {
            gn: GroupNorm::new(weight.clone(), bias.clone(), channels, groups, eps)?,
            weight,
            bias,
            groups,
            eps,
        })
    }

    pub(crate) fn forward(&self, x: &Tensor, relu: bool) -> candle_core::Result<Tensor> {
        let (batch, channels) = (x.dim(0)?, x.dim(1)?);
        if !x.device().is_cpu()
            || x.dtype() != DType::F32
            || x.rank() < 3
            || channels != self.weight.elem_count()
            || channels % self.groups != 0
        {
            return self.unfused(x, relu);
        }
        let op = GroupNormOp {
            batch,
            channels,
            positions: x.elem_count() / (batch * channels).max(1),
            groups: self.groups,
            eps: self.eps as f32,
            relu,
        };
        x.contiguous()?
            .apply_op3(&self.weight.contiguous()?, &self.bias.contiguous()?, op)
    }

    /// candle's GroupNorm (and ReLU): the reference, and the path off the CPU.
    fn unfused(&self, x: &Tensor, relu: bool) -> candle_core::Result<Tensor> {
        let y = self.gn.forward(x)?;
        if relu {
            y.relu()
        } else {
            Ok(y)
        }
    }
}

/// Convolution, GroupNorm and (with `relu`) ReLU as one graph node on the CPU: the
/// convolution's output and its gradient stay inside the node. As two nodes, candle's
/// backward pass hands the convolution its output gradient through its gradient store, which
/// adds it to a fresh zero tensor: two more buffers the size of the activations, and passes
/// over them, per layer. Elsewhere (another device or dtype, a convolution the fused
/// kernels do not take) the two ops in turn.
pub(crate) fn conv_gn(
    conv: &Conv,
    gn: &GroupNormAct,
    x: &Tensor,
    relu: bool,
) -> candle_core::Result<Tensor> {
    let kernel = match conv.geometry(x)? {
        Some(g) if x.device().is_cpu() && x.dtype() == DType::F32 => {
            ConvGnKernel::fitting(g, gn, relu)
        }
        _ => None,
    };
    let Some(kernel) = kernel else {
        return gn.forward(&conv.forward(x)?, relu);
    };
    let op = ConvGnOp {
        kernel,
        saved: OnceLock::new(),
    };
    // scale and shift as one operand (a node has at most three)
    let affine = Tensor::cat(&[&gn.weight, &gn.bias], 0)?;
    x.contiguous()?
        .apply_op3(&conv.conv.weight().contiguous()?, &affine, op)
}

/// A convolution, its GroupNorm and (optionally) ReLU on slices: the kernels of
/// [`ConvGnOp`] and of the residual body ([`body`]).
#[derive(Clone, Copy)]
struct ConvGnKernel {
    conv: Geometry,
    gn: GroupNormOp,
}

impl ConvGnKernel {
    /// The kernels for `conv` followed by `gn`, where the norm fits the convolution's output
    /// (one scale and shift per output channel, the channels split evenly into groups).
    fn fitting(conv: Geometry, gn: &GroupNormAct, relu: bool) -> Option<Self> {
        let fits = gn.weight.elem_count() == conv.cout && conv.cout.is_multiple_of(gn.groups);
        fits.then(|| Self {
            conv,
            gn: GroupNormOp {
                batch: conv.batch,
                channels: conv.cout,
                positions: conv.positions(),
                groups: gn.groups,
                eps: gn.eps as f32,
                relu,
            },
        })
    }

    /// The output `[batch, out, positions]` and what the backward pass needs.
    fn forward(
        &self,
        x: &[f32],
        w: &[f32],
        gamma: &[f32],
        beta: &[f32],
    ) -> candle_core::Result<(Vec<f32>, Saved)> {
        let (y, cols) = self.conv.forward(x, w, true)?;
        let (out, stats) = self.gn.forward(&y, gamma, beta);
        Ok((out, Saved { y, stats, cols }))
    }

    /// `(dx, dW, dgamma, dbeta)` from the output gradient; `dx` only with `want_dx`.
    #[allow(clippy::too_many_arguments)]
    fn backward(
        &self,
        saved: &Saved,
        x: &[f32],
        want_dx: bool,
        w: &[f32],
        gamma: &[f32],
        beta: &[f32],
        dout: &[f32],
    ) -> candle_core::Result<ConvGnGradients> {
        let (dy, dgamma, dbeta) = self.gn.backward(&saved.y, &saved.stats, gamma, beta, dout);
        let (dx, dw) = self.conv.backward(x, want_dx, w, &dy, &saved.cols)?;
        Ok(ConvGnGradients {
            dx,
            dw,
            dgamma,
            dbeta,
        })
    }
}

/// The gradients [`ConvGnKernel::backward`] gives.
struct ConvGnGradients {
    dx: Option<Vec<f32>>,
    dw: Vec<f32>,
    dgamma: Vec<f32>,
    dbeta: Vec<f32>,
}

/// Over `(x, W, [gamma, beta])`; keeps the convolution's output, the GroupNorm statistics
/// and (small maps) the columns for the backward pass.
struct ConvGnOp {
    kernel: ConvGnKernel,
    saved: OnceLock<Saved>,
}

/// What [`ConvGnOp`]'s forward pass keeps for its backward pass.
struct Saved {
    /// The convolution's output.
    y: Vec<f32>,
    /// Its GroupNorm statistics.
    stats: Vec<(f32, f32)>,
    /// The column matrices, for small maps.
    cols: Kept,
}

impl CustomOp3 for ConvGnOp {
    fn name(&self) -> &'static str {
        "conv2d-group-norm"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ws: &CpuStorage,
        wl: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let g = &self.kernel.conv;
        let (x, w) = (f32_slice(xs, xl, "input")?, f32_slice(ws, wl, "kernel")?);
        let affine = f32_slice(s3, l3, "scale and shift")?;
        let (gamma, beta) = affine.split_at(g.cout);
        let (out, saved) = self.kernel.forward(x, w, gamma, beta)?;
        if self.saved.set(saved).is_err() {
            candle_core::bail!("conv2d-group-norm: node computed twice")
        }
        Ok((
            CpuStorage::F32(out),
            Shape::from((g.batch, g.cout, g.out_h(), g.out_w())),
        ))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        affine: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let Some(saved) = self.saved.get() else {
            candle_core::bail!("conv2d-group-norm: backward pass before the forward pass")
        };
        let grad = grad.contiguous()?;
        let ConvGnGradients {
            dx,
            dw,
            dgamma: mut d_affine,
            dbeta,
        } = {
            let (as_, al) = affine.storage_and_layout();
            let (gs, gl) = grad.storage_and_layout();
            let (xs, xl) = x.storage_and_layout();
            let (ws, wl) = w.storage_and_layout();
            let (gamma, beta) =
                cpu_slice(&as_, al, "scale and shift")?.split_at(self.kernel.conv.cout);
            // the image batch itself needs no gradient
            self.kernel.backward(
                saved,
                cpu_slice(&xs, xl, "input")?,
                x.track_op(),
                cpu_slice(&ws, wl, "kernel")?,
                gamma,
                beta,
                cpu_slice(&gs, gl, "output gradient")?,
            )?
        };
        d_affine.extend_from_slice(&dbeta);
        Ok((
            dx.map(|dx| Tensor::from_vec(dx, x.shape(), x.device()))
                .transpose()?,
            Some(Tensor::from_vec(dw, w.shape(), w.device())?),
            Some(Tensor::from_vec(d_affine, affine.shape(), affine.device())?),
        ))
    }
}

/// `max(a + b, 0)`: a residual block's sum with its skip and the ReLU after it, as one graph
/// node. candle's add and ReLU are two, and its ReLU backward builds the indicator with a
/// comparison, a cast and a multiply, each a pass over the activations with its own buffer.
/// The derivative at 0 is 1, as candle's.
pub(crate) fn add_relu(a: &Tensor, b: &Tensor) -> candle_core::Result<Tensor> {
    if !a.device().is_cpu() || a.dtype() != DType::F32 || a.shape() != b.shape() {
        return (a + b)?.relu();
    }
    a.contiguous()?.apply_op2(&b.contiguous()?, AddRelu)
}

struct AddRelu;

/// `max(a + b, 0)`, split over the pool like the kernels around it: on the calling thread
/// alone, the other threads would wait through this pass.
fn sum_relu(a: &[f32], b: &[f32]) -> Vec<f32> {
    let sum_relu = |(a, b): (&f32, &f32)| (a + b).max(0.0);
    if parallel(a.len()) {
        a.par_iter()
            .zip(b)
            .with_min_len(PER_TASK)
            .map(sum_relu)
            .collect()
    } else {
        a.iter().zip(b).map(sum_relu).collect()
    }
}

/// The gradient of [`sum_relu`] with respect to either summand, from the output gradient `g`.
fn sum_relu_gradient(a: &[f32], b: &[f32], g: &[f32]) -> Vec<f32> {
    let pass = |((a, b), &g): ((&f32, &f32), &f32)| if a + b >= 0.0 { g } else { 0.0 };
    if parallel(a.len()) {
        a.par_iter()
            .zip(b)
            .zip(g)
            .with_min_len(PER_TASK)
            .map(pass)
            .collect()
    } else {
        a.iter().zip(b).zip(g).map(pass).collect()
    }
}

impl CustomOp2 for AddRelu {
    fn name(&self) -> &'static str {
        "add-relu"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (a, b) = (f32_slice(s1, l1, "input")?, f32_slice(s2, l2, "skip")?);
        Ok((CpuStorage::F32(sum_relu(a, b)), l1.shape().clone()))
    }

    fn bwd(
        &self,
        a: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let grad = grad.contiguous()?;
        let d: Vec<f32> = {
            let (a_s, a_l) = a.storage_and_layout();
            let (b_s, b_l) = b.storage_and_layout();
            let (g_s, g_l) = grad.storage_and_layout();
            let (av, bv) = (
                cpu_slice(&a_s, a_l, "input")?,
                cpu_slice(&b_s, b_l, "skip")?,
            );
            sum_relu_gradient(av, bv, cpu_slice(&g_s, g_l, "output gradient")?)
        };
        // both summands get the same gradient
        let d = Tensor::from_vec(d, a.shape(), a.device())?;
        Ok((Some(d.clone()), Some(d)))
    }
}

#[derive(Clone, Copy)]
struct GroupNormOp {
    batch: usize,
    channels: usize,
    positions: usize,
    groups: usize,
    eps: f32,
    relu: bool,
}

impl GroupNormOp {
    /// Elements of one group in one image (contiguous: its channels are adjacent).
    fn group_len(&self) -> usize {
        self.channels / self.groups * self.positions
    }

    /// Mean and `sqrt(var + eps)` of one group (biased variance, as candle's).
    fn stats(&self, x: &[f32]) -> (f32, f32) {
        let m = x.len() as f32;
        let mean = lanes(x, |v| v) / m;
        let var = lanes(x, |v| (v - mean) * (v - mean)) / m;
        (mean, (var + self.eps).sqrt())
    }
}

/// `sum f(x_i)` in eight interleaved partial sums, so the loop vectorises (a sequential
/// float sum cannot be reordered by the compiler); differs from it by rounding only.
fn lanes(x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = x.chunks_exact(8);
    let rest: f32 = chunks.remainder().iter().map(|&v| f(v)).sum();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += f(v);
        }
    }
    acc.iter().sum::<f32>() + rest
}

impl GroupNormOp {
    /// Each group's mean and `sqrt(var + eps)`, group after group (image-major).
    fn group_stats(&self, x: &[f32]) -> Vec<(f32, f32)> {
        let len = self.group_len();
        if len == 0 {
            return vec![];
        }
        if parallel(x.len()) {
            x.par_chunks(len).map(|x| self.stats(x)).collect()
        } else {
            x.chunks(len).map(|x| self.stats(x)).collect()
        }
    }

    /// The normalised (and rectified) batch `x [batch, channels, positions]`, and the groups'
    /// statistics (see [`Self::group_stats`]), which the backward pass reads again.
    fn forward(&self, x: &[f32], gamma: &[f32], beta: &[f32]) -> (Vec<f32>, Vec<(f32, f32)>) {
        let (len, per) = (self.group_len(), self.channels / self.groups);
        let mut out = zeros(x.len());
        let stats = self.group_stats(x);
        if len > 0 {
            let norm = |(i, (o, x)): (usize, (&mut [f32], &[f32]))| {
                let (mean, std) = stats[i];
                let c0 = (i % self.groups) * per;
                for ((o, x), c) in o
                    .chunks_mut(self.positions)
                    .zip(x.chunks(self.positions))
                    .zip(c0..)
                {
                    for (o, &x) in o.iter_mut().zip(x) {
                        let y = (x - mean) / std * gamma[c] + beta[c];
                        *o = if self.relu { y.max(0.0) } else { y };
                    }
                }
            };
            if parallel(out.len()) {
                out.par_chunks_mut(len)
                    .zip(x.par_chunks(len))
                    .enumerate()
                    .for_each(norm);
            } else {
                out.chunks_mut(len)
                    .zip(x.chunks(len))
                    .enumerate()
                    .for_each(norm);
            }
        }
        (out, stats)
    }

    /// The input, scale and shift gradients from the output gradient `dy`, with the groups'
    /// statistics from the forward pass.
    fn backward(
        &self,
        x: &[f32],
        stats: &[(f32, f32)],
        gamma: &[f32],
        beta: &[f32],
        dy: &[f32],
    ) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let (len, per, c) = (self.group_len(), self.channels / self.groups, self.channels);
        let mut dx = zeros(x.len());
        // per group: the scale and shift gradients of its channels
        let mut partial = vec![0f32; self.batch * self.groups * 2 * per];
        if len > 0 {
            type Group<'a> = (((&'a mut [f32], &'a [f32]), &'a [f32]), &'a mut [f32]);
            let group = |(i, (((dx, x), dy), part)): (usize, Group)| {
                let (mean, std) = stats[i];
                let c0 = (i % self.groups) * per;
                let m = len as f32;
                // x̂ is rebuilt where needed rather than kept: one multiply per element,
                // against a buffer per group
                let rstd = 1.0 / std;
                // per channel: dy' (dy behind the ReLU), its sums against x̂ and 1 (the
                // scale and shift gradients), then dx̂ = dy' gamma in place
                let (mut sum_d, mut sum_dx) = (0f32, 0f32);
                for (k, ((dxs, xs), dys)) in dx
                    .chunks_mut(self.positions)
                    .zip(x.chunks(self.positions))
                    .zip(dy.chunks(self.positions))
                    .enumerate()
                {
                    let (gm, bt) = (gamma[c0 + k], beta[c0 + k]);
                    let (mut dg, mut db) = ([0f32; 8], [0f32; 8]);
                    let mut one = |d: &mut f32, xv: f32, g: f32, lane: usize| {
                        let xh = (xv - mean) * rstd;
                        let v = if self.relu && xh * gm + bt < 0.0 {
                            0.0
                        } else {
                            g
                        };
                        dg[lane] += v * xh;
                        db[lane] += v;
                        *d = v * gm;
                    };
                    let mut d8 = dxs.chunks_exact_mut(8);
                    let (mut x8, mut g8) = (xs.chunks_exact(8), dys.chunks_exact(8));
                    for ((d, xv), g) in (&mut d8).zip(&mut x8).zip(&mut g8) {
                        for lane in 0..8 {
                            one(&mut d[lane], xv[lane], g[lane], lane);
                        }
                    }
                    for ((d, &xv), &g) in d8
                        .into_remainder()
                        .iter_mut()
                        .zip(x8.remainder())
                        .zip(g8.remainder())
                    {
                        one(d, xv, g, 0);
                    }
                    let (dg, db) = (dg.iter().sum::<f32>(), db.iter().sum::<f32>());
                    part[k] = dg;
                    part[per + k] = db;
                    sum_d += gm * db;
                    sum_dx += gm * dg;
                }
                let (mean_d, mean_dx) = (sum_d / m, sum_dx / m);
                for (d, &xv) in dx.iter_mut().zip(x) {
                    let xh = (xv - mean) * rstd;
                    *d = (*d - mean_d - xh * mean_dx) * rstd;
                }
            };
            if parallel(dx.len()) {
                dx.par_chunks_mut(len)
                    .zip(x.par_chunks(len))
                    .zip(dy.par_chunks(len))
                    .zip(partial.par_chunks_mut(2 * per))
                    .enumerate()
                    .for_each(group);
            } else {
                dx.chunks_mut(len)
                    .zip(x.chunks(len))
                    .zip(dy.chunks(len))
                    .zip(partial.chunks_mut(2 * per))
                    .enumerate()
                    .for_each(group);
            }
        }
        let (mut dgamma, mut dbeta) = (vec![0f32; c], vec![0f32; c]);
        for (i, part) in partial.chunks(2 * per).enumerate() {
            let c0 = (i % self.groups) * per;
            for k in 0..per {
                dgamma[c0 + k] += part[k];
                dbeta[c0 + k] += part[per + k];
            }
        }
        (dx, dgamma, dbeta)
    }
}

impl CustomOp3 for GroupNormOp {
    fn name(&self) -> &'static str {
        "group-norm"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ws: &CpuStorage,
        wl: &Layout,
        bs: &CpuStorage,
        bl: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(xs, xl, "input")?;
        let (gamma, beta) = (f32_slice(ws, wl, "scale")?, f32_slice(bs, bl, "shift")?);
        Ok((
            CpuStorage::F32(self.forward(x, gamma, beta).0),
            xl.shape().clone(),
        ))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let grad = grad.contiguous()?;
        let (dx, dgamma, dbeta) = {
            let (xs, xl) = x.storage_and_layout();
            let (ws, wl) = w.storage_and_layout();
            let (bs, bl) = b.storage_and_layout();
            let (gs, gl) = grad.storage_and_layout();
            let x = cpu_slice(&xs, xl, "input")?;
            // the statistics again: this op keeps nothing from its forward pass
            self.backward(
                x,
                &self.group_stats(x),
                cpu_slice(&ws, wl, "scale")?,
                cpu_slice(&bs, bl, "shift")?,
                cpu_slice(&gs, gl, "output gradient")?,
            )
        };
        Ok((
            Some(Tensor::from_vec(dx, x.shape(), x.device())?),
            Some(Tensor::from_vec(dgamma, w.shape(), w.device())?),
            Some(Tensor::from_vec(dbeta, b.shape(), b.device())?),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};
    use candle_nn::{VarBuilder, VarMap};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random(rng: &mut ChaCha8Rng, shape: &[usize]) -> Var {
        let n = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
        Var::from_vec(v, shape, &Device::Cpu).unwrap()
    }

    /// Every entry within `2e-5 (1 + max |y|)`: a kernel gradient entry sums over every
    /// image and position, and one that nearly cancels carries the rounding of terms far
    /// larger than itself.
    fn close(a: &Tensor, b: &Tensor, what: &str) {
        let (a, b) = (
            a.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            b.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        );
        assert_eq!(a.len(), b.len(), "{what}");
        let largest = b.iter().fold(0f32, |m, y| m.max(y.abs()));
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= 2e-5 * (1.0 + largest),
                "{what}: {x} vs {y} (largest {largest})"
            );
        }
    }

    /// Output and the input and kernel gradients agree with candle's conv2d, and with the
    /// off-CPU im2col of slices, for 3x3 and 1x1 kernels, strides 1 and 2, odd and even
    /// sizes, one to five images. (Strided cases are square: candle's own conv2d backward
    /// gets the input-gradient width wrong for strided non-square inputs.)
    #[test]
    fn convolution_matches_candle() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for (batch, cin, cout, k, stride, h, w) in [
            (2, 3, 4, 3, 1, 7, 6),
            (3, 3, 4, 3, 1, 7, 6),
            // odd sides, and enough channels for Winograd's tiles (see `winograd::pays`)
            (2, 40, 32, 3, 1, 27, 33),
            (2, 4, 6, 3, 2, 8, 8),
            (3, 4, 6, 3, 2, 9, 9),
            (5, 4, 5, 1, 2, 6, 6),
            (1, 4, 5, 1, 1, 5, 7),
            // large enough for the images to be split over threads
            (2, 16, 8, 3, 1, 32, 32),
            (5, 64, 8, 3, 1, 16, 16),
        ] {
            let x = random(&mut rng, &[batch, cin, h, w]);
            let wt = random(&mut rng, &[cout, cin, k, k]);
            let cfg = Conv2dConfig {
                padding: k / 2,
                stride,
                ..Default::default()
            };
            let conv = Conv::new(Conv2d::new(wt.as_tensor().clone(), None, cfg));
            let up = random(
                &mut rng,
                &[
                    batch,
                    cout,
                    (h + 2 * (k / 2) - k) / stride + 1,
                    (w + 2 * (k / 2) - k) / stride + 1,
                ],
            );
            let run = |path: u8| {
                let y = match path {
                    0 => conv.forward(&x).unwrap(),
                    1 => conv.unfused(&x).unwrap(),
                    _ => conv.by_slices(&x).unwrap(),
                };
                let grads =
                    crate::model::backward(&(&y * up.as_tensor()).unwrap().sum_all().unwrap())
                        .unwrap();
                (
                    y,
                    grads.get(&x).unwrap().clone(),
                    grads.get(&wt).unwrap().clone(),
                )
            };
            let (a, b, c) = (run(0), run(1), run(2));
            close(&a.0, &b.0, "output");
            close(&a.1, &b.1, "input gradient");
            close(&a.2, &b.2, "kernel gradient");
            // the path taken off the CPU, against the fused one
            close(&c.0, &a.0, "output by slices");
            close(&c.1, &a.1, "input gradient by slices");
            close(&c.2, &a.2, "kernel gradient by slices");
        }
    }

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
            let x: Vec<f32> = (0..2 * image).map(|_| rng.gen_range(-1.0..1.0)).collect();
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
            let grads: Vec<f32> = (0..cols.len()).map(|_| rng.gen_range(-1.0..1.0)).collect();
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
                (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
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

    /// With the batch split into runs of images over several threads (runs of unequal
    /// length included), output and gradients equal the one-thread result up to the order
    /// in which the runs' kernel gradients are summed.
    #[test]
    fn convolution_split_over_threads_matches_one_thread() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        // large enough to be split (see `parallel`): 5 images over 2 and 3 threads, 7 over 3;
        // the last with enough channels for Winograd's tiles (see `winograd::pays`)
        for (batch, cin, cout, stride) in [(5, 8, 16, 1), (7, 6, 24, 2), (5, 32, 32, 1)] {
            let (h, w) = (32, 32);
            let x = random(&mut rng, &[batch, cin, h, w]);
            let wt = random(&mut rng, &[cout, cin, 3, 3]);
            let cfg = Conv2dConfig {
                padding: 1,
                stride,
                ..Default::default()
            };
            let conv = Conv::new(Conv2d::new(wt.as_tensor().clone(), None, cfg));
            let up = random(&mut rng, &[batch, cout, h / stride, w / stride]);
            let run = |threads: usize| {
                crate::device::on_threads(threads, || {
                    let y = conv.forward(&x).unwrap();
                    let grads =
                        crate::model::backward(&(&y * up.as_tensor()).unwrap().sum_all().unwrap())
                            .unwrap();
                    (
                        y,
                        grads.get(&x).unwrap().clone(),
                        grads.get(&wt).unwrap().clone(),
                    )
                })
            };
            let one = run(1);
            for threads in [2, 3] {
                let many = run(threads);
                let near = |a: &Tensor, b: &Tensor, what: &str| {
                    let (a, b) = (
                        a.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                        b.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                    );
                    // against the largest entry, as `close`
                    let largest = b.iter().fold(0f32, |m, y| m.max(y.abs()));
                    for (x, y) in a.iter().zip(&b) {
                        assert!(
                            (x - y).abs() <= 1e-5 * (1.0 + largest),
                            "{what}, {threads} threads: {x} vs {y}"
                        );
                    }
                };
                near(&many.0, &one.0, "output");
                near(&many.1, &one.1, "input gradient");
                near(&many.2, &one.2, "kernel gradient");
            }
        }
    }

    /// Convolution, GroupNorm and ReLU as one node (which keeps the columns of these small
    /// maps for its backward pass) agree with the two ops in turn (which the tests above
    /// check against candle, and which rebuild the columns): output and the input, kernel,
    /// scale and shift gradients, with and without ReLU, strides 1 and 2, 3x3 and 1x1
    /// kernels, on one thread and, for the last case, large enough to be split, on two.
    #[test]
    fn conv_gn_matches_two_ops() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (batch, cin, cout, k, stride, relu) in [
            (3, 4, 8, 3, 1, true),
            (2, 6, 8, 3, 2, false),
            (3, 8, 4, 1, 2, false),
            (2, 16, 16, 3, 1, true),
            // enough channels for Winograd's tiles at 12x12 (see `winograd::pays`)
            (3, 96, 96, 3, 1, true),
            (15, 16, 16, 3, 1, true),
        ] {
            let (h, w) = (12, 12);
            let map = VarMap::new();
            let vb = VarBuilder::from_varmap(&map, DType::F32, &Device::Cpu);
            let gn = GroupNormAct::new(2, cout, 1e-5, vb).unwrap();
            for v in map.all_vars() {
                v.set(random(&mut rng, v.dims()).as_tensor()).unwrap();
            }
            let x = random(&mut rng, &[batch, cin, h, w]);
            let wt = random(&mut rng, &[cout, cin, k, k]);
            let cfg = Conv2dConfig {
                padding: k / 2,
                stride,
                ..Default::default()
            };
            let conv = Conv::new(Conv2d::new(wt.as_tensor().clone(), None, cfg));
            let o = (h + 2 * (k / 2) - k) / stride + 1;
            let up = random(&mut rng, &[batch, cout, o, o]);
            let run = |fused: bool| {
                let y = if fused {
                    conv_gn(&conv, &gn, &x, relu).unwrap()
                } else {
                    gn.forward(&conv.forward(&x).unwrap(), relu).unwrap()
                };
                let grads =
                    crate::model::backward(&(&y * up.as_tensor()).unwrap().sum_all().unwrap())
                        .unwrap();
                let get = |t: &Tensor| grads.get(t).unwrap().clone();
                (y, get(&x), get(&wt), get(&gn.weight), get(&gn.bias))
            };
            let b = run(false);
            for threads in [1, 2] {
                let a = crate::device::on_threads(threads, || run(true));
                close(&a.0, &b.0, "output");
                close(&a.1, &b.1, "input gradient");
                close(&a.2, &b.2, "kernel gradient");
                close(&a.3, &b.3, "scale gradient");
                close(&a.4, &b.4, "shift gradient");
            }
        }
    }

    /// The fused skip sum and ReLU agree with candle's add and ReLU, values and both
    /// gradients, with exact zeros among the sums (where the derivative is taken as 1), on one
    /// thread and, large enough to be split, on two.
    #[test]
    fn add_relu_matches_candle() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        // the second shape is large enough to be split over the pool's threads
        for (shape, threads) in [([3, 4, 5, 6], 1), ([2, 8, 48, 48], 2)] {
            let a = random(&mut rng, &shape);
            let b_vals: Vec<f32> = {
                let av = a.flatten_all().unwrap().to_vec1::<f32>().unwrap();
                av.iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        if i % 7 == 0 {
                            -v
                        } else {
                            rng.gen_range(-1.0..1.0)
                        }
                    })
                    .collect()
            };
            let b = Var::from_vec(b_vals, &shape, &Device::Cpu).unwrap();
            let up = random(&mut rng, &shape);
            let run = |fused: bool| {
                let y = if fused {
                    add_relu(&a, &b).unwrap()
                } else {
                    (a.as_tensor() + b.as_tensor()).unwrap().relu().unwrap()
                };
                let grads =
                    crate::model::backward(&(&y * up.as_tensor()).unwrap().sum_all().unwrap())
                        .unwrap();
                (
                    y,
                    grads.get(&a).unwrap().clone(),
                    grads.get(&b).unwrap().clone(),
                )
            };
            let (f, c) = (crate::device::on_threads(threads, || run(true)), run(false));
            close(&f.0, &c.0, "output");
            close(&f.1, &c.1, "first gradient");
            close(&f.2, &c.2, "second gradient");
        }
    }

    /// Output and the input, scale and shift gradients agree with candle's GroupNorm (and
    /// ReLU), with random scales and shifts.
    #[test]
    fn group_norm_matches_candle() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for relu in [false, true] {
            let map = VarMap::new();
            let vb = VarBuilder::from_varmap(&map, DType::F32, &Device::Cpu);
            let gn = GroupNormAct::new(2, 6, 1e-5, vb).unwrap();
            for v in map.all_vars() {
                v.set(random(&mut rng, v.dims()).as_tensor()).unwrap();
            }
            let x = random(&mut rng, &[3, 6, 4, 5]);
            let up = random(&mut rng, &[3, 6, 4, 5]);
            let run = |fused: bool| {
                let y = if fused {
                    gn.forward(&x, relu).unwrap()
                } else {
                    gn.unfused(&x, relu).unwrap()
                };
                let grads =
                    crate::model::backward(&(&y * up.as_tensor()).unwrap().sum_all().unwrap())
                        .unwrap();
                (
                    y,
                    grads.get(&x).unwrap().clone(),
                    grads.get(&gn.weight).unwrap().clone(),
                    grads.get(&gn.bias).unwrap().clone(),
                )
            };
            let (a, b) = (run(true), run(false));
            close(&a.0, &b.0, "output");
            close(&a.1, &b.1, "input gradient");
            close(&a.2, &b.2, "scale gradient");
            close(&a.3, &b.3, "shift gradient");
        }
    }
}
