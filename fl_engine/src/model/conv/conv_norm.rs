//! Convolution, GroupNorm and (optionally) ReLU as one graph node ([`conv_gn`]): the check
//! of whether a GroupNorm fits its convolution, the fused kernels on slices that the residual
//! body also runs, and a node that keeps the convolution's output, the GroupNorm statistics
//! and small maps' columns for its backward pass.
use std::sync::OnceLock;

use candle_core::{CpuStorage, CustomOp3, DType, Layout, Shape, Tensor};

use super::conv2d::Conv;
use super::geometry::Geometry;
use super::group_norm::{GroupNormAct, GroupNormOp};
use super::im2col::Kept;
use crate::model::fused::{cpu_slice, f32_slice};

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
///
/// [`body`]: super::body
#[derive(Clone, Copy)]
pub(super) struct ConvGnKernel {
    pub(super) conv: Geometry,
    pub(super) gn: GroupNormOp,
}

impl ConvGnKernel {
    /// The kernels for `conv` followed by `gn`, where the norm fits the convolution's output
    /// (one scale and shift per output channel, the channels split evenly into groups).
    pub(super) fn fitting(conv: Geometry, gn: &GroupNormAct, relu: bool) -> Option<Self> {
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
    pub(super) fn forward(
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
    pub(super) fn backward(
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
pub(super) struct ConvGnGradients {
    pub(super) dx: Option<Vec<f32>>,
    pub(super) dw: Vec<f32>,
    pub(super) dgamma: Vec<f32>,
    pub(super) dbeta: Vec<f32>,
}

/// Over `(x, W, [gamma, beta])`; keeps the convolution's output, the GroupNorm statistics
/// and (small maps) the columns for the backward pass.
struct ConvGnOp {
    kernel: ConvGnKernel,
    saved: OnceLock<Saved>,
}

/// What [`ConvGnOp`]'s forward pass keeps for its backward pass.
pub(super) struct Saved {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::conv::testing::{close, random};
    use candle_core::Device;
    use candle_nn::{Conv2d, Conv2dConfig, VarBuilder, VarMap};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

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
}
