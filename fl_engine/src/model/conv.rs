//! The CNN backbone's convolution and GroupNorm as single graph nodes with hand-written
//! backward passes.
//!
//! candle's CPU conv2d backward computes the input gradient with a direct-loop transposed
//! convolution and the kernel gradient with another convolution over permuted copies, and its
//! GroupNorm is about ten graph nodes (reshape, two means, subtract, square, add, sqrt,
//! divide, scale, shift), each with its own backward pass. Here a convolution unfolds the
//! each image into columns (`im2col`, `[in * k * k, positions]`) and makes each direction
//! one matrix product per image: forward `W cols`, backward `dO cols^T` for the kernel and
//! `W^T dO` folded back (`col2im`) for the input; the columns are rebuilt in the backward pass rather
//! than kept. GroupNorm (optionally followed by ReLU) reads each group once for its
//! statistics and once to normalise, and its backward pass is the closed form
//! `dx = rstd (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂))`, `dx̂ = dy gamma`.
//!
//! Both keep candle's arithmetic (biased variance, `(x - mean) / sqrt(var + eps)`, ReLU
//! derivative 1 at 0) and fall back to candle's ops off the CPU or for other dtypes; the
//! tests compare values and gradients against those ops.
use candle_core::{CpuStorage, CustomOp2, CustomOp3, DType, Device, Layout, Module, Shape, Tensor};
use candle_nn::{Conv2d, Conv2dConfig, GroupNorm};
use rayon::prelude::*;

use super::fused::{cpu_slice, f32_slice, matmul_into};

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

    /// The input pixel row/column that output `o` and kernel offset `kk` read, if inside.
    fn source(&self, o: usize, kk: usize, size: usize) -> Option<usize> {
        (o * self.stride + kk)
            .checked_sub(self.pad)
            .filter(|&i| i < size)
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

    /// One image's `[in, h, w]` unfolded: `cols [in * k * k, positions]`, row `(c, ky, kx)`,
    /// column `(oy, ox)`.
    fn im2col(&self, x: &[f32]) -> Vec<f32> {
        let (l, ow, k) = (self.positions(), self.out_w(), self.k);
        let mut cols = vec![0f32; self.patch() * l];
        if l == 0 {
            return cols;
        }
        let fill = |(r, row): (usize, &mut [f32])| {
            let (c, ky, kx) = (r / (k * k), (r / k) % k, r % k);
            let plane = &x[c * self.h * self.w..][..self.h * self.w];
            let (lo, hi) = self.span(kx, self.w, ow);
            if lo == hi {
                return;
            }
            // the input column of output `lo`
            let first = lo * self.stride + kx - self.pad;
            for oy in 0..self.out_h() {
                let Some(iy) = self.source(oy, ky, self.h) else {
                    continue;
                };
                let dst = &mut row[oy * ow + lo..oy * ow + hi];
                let src = &plane[iy * self.w..][..self.w];
                if self.stride == 1 {
                    dst.copy_from_slice(&src[first..first + dst.len()]);
                } else {
                    for (i, d) in dst.iter_mut().enumerate() {
                        *d = src[first + i * self.stride];
                    }
                }
            }
        };
        if parallel(cols.len()) {
            cols.par_chunks_mut(l).enumerate().for_each(fill);
        } else {
            cols.chunks_mut(l).enumerate().for_each(fill);
        }
        cols
    }

    /// Adds one image's column gradient back into its `[in, h, w]` input gradient.
    fn col2im(&self, cols: &[f32], dx: &mut [f32]) {
        let (l, ow, k) = (self.positions(), self.out_w(), self.k);
        let plane_len = self.h * self.w;
        if plane_len == 0 {
            return;
        }
        let add = |(c, plane): (usize, &mut [f32])| {
            for r in c * k * k..(c + 1) * k * k {
                let (ky, kx) = ((r / k) % k, r % k);
                let row = &cols[r * l..][..l];
                let (lo, hi) = self.span(kx, self.w, ow);
                if lo == hi {
                    continue;
                }
                let first = lo * self.stride + kx - self.pad;
                for oy in 0..self.out_h() {
                    let Some(iy) = self.source(oy, ky, self.h) else {
                        continue;
                    };
                    let src = &row[oy * ow + lo..oy * ow + hi];
                    let dst = &mut plane[iy * self.w..][..self.w];
                    if self.stride == 1 {
                        let dst = &mut dst[first..first + src.len()];
                        dst.iter_mut().zip(src).for_each(|(d, s)| *d += s);
                    } else {
                        for (i, s) in src.iter().enumerate() {
                            dst[first + i * self.stride] += s;
                        }
                    }
                }
            }
        };
        if parallel(dx.len()) {
            dx.par_chunks_mut(plane_len).enumerate().for_each(add);
        } else {
            dx.chunks_mut(plane_len).enumerate().for_each(add);
        }
    }
}

/// Whether a kernel over `work` values is worth splitting over rayon's pool: more than one
/// thread, and enough work that handing it to the pool's threads and waiting pays.
fn parallel(work: usize) -> bool {
    work >= 1 << 15 && rayon::current_num_threads() > 1
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

    pub(crate) fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let w = self.conv.weight();
        let (cout, cin_w, kh, kw) = w.dims4()?;
        let (batch, cin, h, wd) = x.dims4()?;
        let plain = self.conv.bias().is_none()
            && self.cfg.groups == 1
            && self.cfg.dilation == 1
            && cin == cin_w
            && kh == kw
            && h + 2 * self.cfg.padding >= kh
            && wd + 2 * self.cfg.padding >= kw;
        if !plain {
            return self.conv.forward(x);
        }
        if !x.device().is_cpu() || x.dtype() != DType::F32 {
            return self.by_slices(x);
        }
        let g = Geometry {
            batch,
            cin,
            h,
            w: wd,
            cout,
            k: kh,
            stride: self.cfg.stride,
            pad: self.cfg.padding,
        };
        x.contiguous()?.apply_op2(&w.contiguous()?, ConvOp(g))
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
        let (l, image) = (g.positions(), g.cin * g.h * g.w);
        let w = Tensor::from_slice(w, (g.cout, g.patch()), &Device::Cpu)?;
        let mut out = vec![0f32; g.batch * g.cout * l];
        // image by image, so the columns stay in cache between unfolding and product, and
        // the product lands in `[out, positions]` order; images in parallel with more than
        // one thread (one image's products are too small to split well)
        let one = |(n, out): (usize, &mut [f32])| {
            let cols = g.im2col(&x[n * image..(n + 1) * image]);
            let cols = Tensor::from_vec(cols, (g.patch(), l), &Device::Cpu)?;
            matmul_into(out, false, &w, &cols)
        };
        let chunk = (g.cout * l).max(1);
        if parallel(out.len()) {
            out.par_chunks_mut(chunk).enumerate().try_for_each(one)?;
        } else {
            out.chunks_mut(chunk).enumerate().try_for_each(one)?;
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
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let g = &self.0;
        let (l, image) = (g.positions(), g.cin * g.h * g.w);
        let grad = grad.contiguous()?.reshape((g.batch, g.cout, l))?;
        let w2 = w.detach().reshape((g.cout, g.patch()))?;
        let w_t = w2.t()?;
        // the image batch itself needs no gradient
        let mut dx = x.track_op().then(|| vec![0f32; g.batch * image]);
        let (xs, xl) = x.storage_and_layout();
        let xv = cpu_slice(&xs, xl, "input")?;
        // one image's kernel gradient, and its input gradient when asked for
        let one = |n: usize, dx: Option<&mut [f32]>| -> candle_core::Result<Tensor> {
            let cols = g.im2col(&xv[n * image..(n + 1) * image]);
            let cols = Tensor::from_vec(cols, (g.patch(), l), &Device::Cpu)?;
            let d_out = grad.get(n)?;
            if let Some(dx) = dx {
                let d_cols = w_t.matmul(&d_out)?;
                let (ds, dl) = d_cols.storage_and_layout();
                g.col2im(cpu_slice(&ds, dl, "column gradient")?, dx);
            }
            d_out.matmul(&cols.t()?)
        };
        let image_len = image.max(1);
        let per_image: Vec<Tensor> = match (dx.as_mut(), parallel(g.batch * image)) {
            (Some(dx), true) => dx
                .par_chunks_mut(image_len)
                .enumerate()
                .map(|(n, d)| one(n, Some(d)))
                .collect::<candle_core::Result<_>>()?,
            (Some(dx), false) => dx
                .chunks_mut(image_len)
                .enumerate()
                .map(|(n, d)| one(n, Some(d)))
                .collect::<candle_core::Result<_>>()?,
            (None, true) => (0..g.batch)
                .into_par_iter()
                .map(|n| one(n, None))
                .collect::<candle_core::Result<_>>()?,
            (None, false) => (0..g.batch)
                .map(|n| one(n, None))
                .collect::<candle_core::Result<_>>()?,
        };
        // summed in image order whatever the thread count
        let mut dw = vec![0f32; g.cout * g.patch()];
        for t in &per_image {
            let (ts, tl) = t.storage_and_layout();
            let v = cpu_slice(&ts, tl, "kernel gradient")?;
            dw.iter_mut().zip(v).for_each(|(d, v)| *d += v);
        }
        drop(xs);
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

/// `sum a_i b_i`, vectorised like [`lanes`].
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let rest: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for ((s, x), y) in acc.iter_mut().zip(x).zip(y) {
            *s += x * y;
        }
    }
    acc.iter().sum::<f32>() + rest
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
        let (len, per) = (self.group_len(), self.channels / self.groups);
        let mut out = vec![0f32; x.len()];
        if len > 0 {
            let norm = |(i, (o, x)): (usize, (&mut [f32], &[f32]))| {
                let (mean, std) = self.stats(x);
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
        Ok((CpuStorage::F32(out), xl.shape().clone()))
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
        let (len, per, c) = (self.group_len(), self.channels / self.groups, self.channels);
        let (dx, dgamma, dbeta) = {
            let (xs, xl) = x.storage_and_layout();
            let (ws, wl) = w.storage_and_layout();
            let (bs, bl) = b.storage_and_layout();
            let (gs, gl) = grad.storage_and_layout();
            let x = cpu_slice(&xs, xl, "input")?;
            let gamma = cpu_slice(&ws, wl, "scale")?;
            let beta = cpu_slice(&bs, bl, "shift")?;
            let dy_all = cpu_slice(&gs, gl, "output gradient")?;
            let mut dx = vec![0f32; x.len()];
            // per group: the scale and shift gradients of its channels
            let mut partial = vec![0f32; self.batch * self.groups * 2 * per];
            if len > 0 {
                type Group<'a> = (((&'a mut [f32], &'a [f32]), &'a [f32]), &'a mut [f32]);
                let group = |(i, (((dx, x), dy), part)): (usize, Group)| {
                    let (mean, std) = self.stats(x);
                    let c0 = (i % self.groups) * per;
                    let m = len as f32;
                    let xhat: Vec<f32> = x.iter().map(|&v| (v - mean) / std).collect();
                    // per channel: dy' (dy behind the ReLU), its sums against x̂ and 1 (the
                    // scale and shift gradients), then dx̂ = dy' gamma in place
                    let (mut sum_d, mut sum_dx) = (0f32, 0f32);
                    for (k, ((dxs, xh), dys)) in dx
                        .chunks_mut(self.positions)
                        .zip(xhat.chunks(self.positions))
                        .zip(dy.chunks(self.positions))
                        .enumerate()
                    {
                        let (gm, bt) = (gamma[c0 + k], beta[c0 + k]);
                        for ((d, &xh), &g) in dxs.iter_mut().zip(xh).zip(dys) {
                            *d = if self.relu && xh * gm + bt < 0.0 {
                                0.0
                            } else {
                                g
                            };
                        }
                        let (dg, db) = (dot(dxs, xh), lanes(dxs, |v| v));
                        part[k] = dg;
                        part[per + k] = db;
                        sum_d += gm * db;
                        sum_dx += gm * dg;
                        dxs.iter_mut().for_each(|d| *d *= gm);
                    }
                    let (mean_d, mean_dx) = (sum_d / m, sum_dx / m);
                    for (d, &xh) in dx.iter_mut().zip(&xhat) {
                        *d = (*d - mean_d - xh * mean_dx) / std;
                    }
                };
                if parallel(dx.len()) {
                    dx.par_chunks_mut(len)
                        .zip(x.par_chunks(len))
                        .zip(dy_all.par_chunks(len))
                        .zip(partial.par_chunks_mut(2 * per))
                        .enumerate()
                        .for_each(group);
                } else {
                    dx.chunks_mut(len)
                        .zip(x.chunks(len))
                        .zip(dy_all.chunks(len))
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

    fn close(a: &Tensor, b: &Tensor, what: &str) {
        let (a, b) = (
            a.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            b.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        );
        assert_eq!(a.len(), b.len(), "{what}");
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= 2e-5 * (1.0 + y.abs()),
                "{what}: {x} vs {y}"
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
                let grads = (&y * up.as_tensor())
                    .unwrap()
                    .sum_all()
                    .unwrap()
                    .backward()
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
                let grads = (&y * up.as_tensor())
                    .unwrap()
                    .sum_all()
                    .unwrap()
                    .backward()
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
