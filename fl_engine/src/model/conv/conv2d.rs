//! The bias-free convolution layer ([`Conv`]): one graph node on the CPU whose forward and
//! backward passes run the kernels on slices ([`Geometry::forward`], [`Geometry::backward`]),
//! and im2col from candle ops off the CPU.
use candle_core::{CpuStorage, CustomOp2, DType, Layout, Module, Shape, Tensor};
use candle_nn::{Conv2d, Conv2dConfig};

use super::geometry::{Algorithm, Geometry, COLUMNS_PER_PRODUCT};
use crate::model::fused::{cpu_slice, f32_slice};

/// A bias-free convolution (`weight [out, in, k, k]`, PyTorch's layout).
pub(crate) struct Conv {
    pub(super) conv: Conv2d,
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
    pub(super) fn geometry(&self, x: &Tensor) -> candle_core::Result<Option<Geometry>> {
        self.geometry_over(x.dims4()?)
    }

    /// [`Self::geometry`] over an input of dimensions `(batch, in, h, w)`.
    pub(super) fn geometry_over(
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
    /// whose layout the CUDA path misreads). candle 0.11.1's CUDA `conv2d` multiplies the
    /// contiguous copy of such a kernel (the upstream fix); using it here again needs the
    /// GPU-against-CPU gradient test (`device::tests`) run with it on a GPU first.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::conv::testing::{close, random};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

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
}
