//! The ResNet-style CNN body (`backbone::Cnn`: a stem, residual blocks, global average
//! pooling) as one graph node on the CPU.
//!
//! candle's backward pass adds every gradient it hands on into a fresh zero tensor of the
//! receiver's size (`GradStore::or_insert`, then `add`): an allocation, a pass of zeros and
//! a scalar pass of addition per edge, on the calling thread while the pool waits. With the
//! layers as nodes of their own ([`super::conv_gn`], [`super::add_relu`]) that was paid for
//! every activation between them in every step: the largest serial part of a two-thread CNN
//! step. As one node, the activations' gradients stay inside it (a skip's two gradients are
//! added in place, over the pool) and the weights' gradients go to the engine's backward
//! pass ([`defer_weight_gradient`]), as the fused dense layer's do; the stem's kernel is the
//! node's second operand, so that candle calls its backward pass. The layers' kernels are
//! those of [`super::conv_gn`] and [`super::add_relu`]; a test compares values and gradients
//! with the layer-by-layer graph, which stays the path off the CPU, for other dtypes, for
//! frozen weights and for an input that needs a gradient.
use std::sync::OnceLock;

use candle_core::{CpuStorage, CustomOp2, DType, Device, Layout, Shape, Tensor};
use rayon::prelude::*;

use super::conv2d::Conv;
use super::conv_norm::{ConvGnGradients, ConvGnKernel, Saved};
use super::group_norm::GroupNormAct;
use super::pool::{parallel, PER_TASK};
use super::skip_sum::{sum_relu, sum_relu_gradient};
use crate::model::backward::defer_weight_gradient;
use crate::model::fused::{cpu_slice, f32_slice};

/// A convolution and its GroupNorm as the backbone holds them.
#[derive(Clone, Copy)]
pub(crate) struct ConvGnLayer<'a> {
    pub(crate) conv: &'a Conv,
    pub(crate) gn: &'a GroupNormAct,
}

/// A residual block: `max(b(a(x)) + skip(x), 0)`, the skip a projection or the identity.
#[derive(Clone, Copy)]
pub(crate) struct ResidualBlock<'a> {
    pub(crate) a: ConvGnLayer<'a>,
    pub(crate) b: ConvGnLayer<'a>,
    pub(crate) proj: Option<ConvGnLayer<'a>>,
}

/// The features `[batch, channels]` of `x [batch, in, h, w]`: the stem (with ReLU), the
/// blocks, and the mean over each last map; `None` where the body cannot be one node (see
/// the module's text), for the caller to run it layer by layer.
pub(crate) fn residual_body(
    stem: ConvGnLayer,
    blocks: &[ResidualBlock],
    x: &Tensor,
) -> candle_core::Result<Option<Tensor>> {
    if !x.device().is_cpu() || x.dtype() != DType::F32 || x.track_op() || x.rank() != 4 {
        return Ok(None);
    }
    let mut dims = x.dims4()?;
    let Some(stem_layer) = Layer::plan(stem, &mut dims, true)? else {
        return Ok(None);
    };
    let mut planned = Vec::with_capacity(blocks.len());
    for block in blocks {
        let input = dims;
        let Some(a) = Layer::plan(block.a, &mut dims, true)? else {
            return Ok(None);
        };
        let Some(b) = Layer::plan(block.b, &mut dims, false)? else {
            return Ok(None);
        };
        let proj = match block.proj {
            Some(p) => {
                let mut skip = input;
                match Layer::plan(p, &mut skip, false)? {
                    Some(p) if skip == dims => Some(p),
                    _ => return Ok(None),
                }
            }
            None if input == dims => None,
            None => return Ok(None),
        };
        planned.push(Block { a, b, proj });
    }
    let op = BodyOp {
        stem: stem_layer,
        blocks: planned,
        positions: dims.2 * dims.3,
        features: (dims.0, dims.1),
        saved: OnceLock::new(),
    };
    let anchor = op.stem.w.clone();
    Ok(Some(x.contiguous()?.apply_op2(&anchor, op)?))
}

/// One planned layer: its kernels over the input it will get, and its variables.
struct Layer {
    kernel: ConvGnKernel,
    w: Tensor,
    gamma: Tensor,
    beta: Tensor,
}

impl Layer {
    /// The layer over an input of `dims`, which become its output's; `None` where the fused
    /// kernels do not take it or a weight is not a variable.
    fn plan(
        layer: ConvGnLayer,
        dims: &mut (usize, usize, usize, usize),
        relu: bool,
    ) -> candle_core::Result<Option<Self>> {
        let (w, gn) = (layer.conv.conv.weight(), layer.gn);
        // (gradients are handed over by the variables' ids: no copies)
        let variables = [w, &gn.weight, &gn.bias].iter().all(|v| {
            v.is_variable() && v.is_contiguous() && v.device().is_cpu() && v.dtype() == DType::F32
        });
        let kernel = match layer.conv.geometry_over(*dims)? {
            Some(g) if g.batch > 0 && variables => ConvGnKernel::fitting(g, gn, relu),
            _ => None,
        };
        let Some(kernel) = kernel else {
            return Ok(None);
        };
        let g = &kernel.conv;
        *dims = (g.batch, g.cout, g.out_h(), g.out_w());
        Ok(Some(Self {
            kernel,
            w: w.clone(),
            gamma: gn.weight.clone(),
            beta: gn.bias.clone(),
        }))
    }

    /// `f` over the layer's scale and shift.
    fn with_norm<T>(
        &self,
        f: impl FnOnce(&[f32], &[f32]) -> candle_core::Result<T>,
    ) -> candle_core::Result<T> {
        let (gs, gl) = self.gamma.storage_and_layout();
        let (bs, bl) = self.beta.storage_and_layout();
        f(cpu_slice(&gs, gl, "scale")?, cpu_slice(&bs, bl, "shift")?)
    }

    /// `f` over the layer's kernel, scale and shift.
    fn with_params<T>(
        &self,
        f: impl FnOnce(&[f32], &[f32], &[f32]) -> candle_core::Result<T>,
    ) -> candle_core::Result<T> {
        let (ws, wl) = self.w.storage_and_layout();
        let w = cpu_slice(&ws, wl, "kernel")?;
        self.with_norm(|gamma, beta| f(w, gamma, beta))
    }

    fn forward(&self, x: &[f32]) -> candle_core::Result<(Vec<f32>, Saved)> {
        self.with_params(|w, gamma, beta| self.kernel.forward(x, w, gamma, beta))
    }

    /// [`Self::forward`] with the kernel `w` given (the stem's, which the node holds).
    fn forward_with_kernel(&self, w: &[f32], x: &[f32]) -> candle_core::Result<(Vec<f32>, Saved)> {
        self.with_norm(|gamma, beta| self.kernel.forward(x, w, gamma, beta))
    }

    fn backward(
        &self,
        saved: &Saved,
        x: &[f32],
        want_dx: bool,
        dout: &[f32],
    ) -> candle_core::Result<ConvGnGradients> {
        self.with_params(|w, gamma, beta| {
            self.kernel
                .backward(saved, x, want_dx, w, gamma, beta, dout)
        })
    }

    /// Hands the kernel, scale and shift gradients to the engine's backward pass, and
    /// returns the input gradient.
    fn hand_over(&self, g: ConvGnGradients) -> candle_core::Result<Option<Vec<f32>>> {
        self.hand_over_norm(g.dgamma, g.dbeta)?;
        defer_weight_gradient(
            &self.w,
            Tensor::from_vec(g.dw, self.w.shape(), &Device::Cpu)?,
        );
        Ok(g.dx)
    }

    fn hand_over_norm(&self, dgamma: Vec<f32>, dbeta: Vec<f32>) -> candle_core::Result<()> {
        let gamma = Tensor::from_vec(dgamma, self.gamma.shape(), &Device::Cpu)?;
        defer_weight_gradient(&self.gamma, gamma);
        let beta = Tensor::from_vec(dbeta, self.beta.shape(), &Device::Cpu)?;
        defer_weight_gradient(&self.beta, beta);
        Ok(())
    }
}

struct Block {
    a: Layer,
    b: Layer,
    proj: Option<Layer>,
}

/// Over `(x, stem kernel)`; keeps every layer's input and what its backward pass needs.
struct BodyOp {
    stem: Layer,
    blocks: Vec<Block>,
    /// Positions of each last map, which the readout averages.
    positions: usize,
    /// `(batch, channels)` of the readout.
    features: (usize, usize),
    saved: OnceLock<BodySaved>,
}

struct BodySaved {
    stem: Saved,
    /// Each block's input: the stem's output, then every block's output but the last.
    inputs: Vec<Vec<f32>>,
    blocks: Vec<BlockSaved>,
}

struct BlockSaved {
    a: Saved,
    a_out: Vec<f32>,
    b: Saved,
    /// `b`'s output, the first summand of the skip sum.
    b_out: Vec<f32>,
    /// The projection's output (the second summand) and what its backward pass needs.
    proj: Option<(Vec<f32>, Saved)>,
}

impl CustomOp2 for BodyOp {
    fn name(&self) -> &'static str {
        "residual-cnn-body"
    }

    fn cpu_fwd(
        &self,
        xs: &CpuStorage,
        xl: &Layout,
        ws: &CpuStorage,
        wl: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = f32_slice(xs, xl, "images")?;
        // the stem's kernel is this node's operand, whose storage candle holds already
        let (h, stem) = self
            .stem
            .forward_with_kernel(f32_slice(ws, wl, "stem kernel")?, x)?;
        let mut inputs = vec![h];
        let mut blocks = Vec::with_capacity(self.blocks.len());
        for block in &self.blocks {
            let input = inputs.last().map(Vec::as_slice).unwrap_or_default();
            let (a_out, a) = block.a.forward(input)?;
            let (b_out, b) = block.b.forward(&a_out)?;
            let proj = match &block.proj {
                Some(p) => Some(p.forward(input)?),
                None => None,
            };
            let skip = proj.as_ref().map_or(input, |(out, _)| out.as_slice());
            let out = sum_relu(&b_out, skip);
            blocks.push(BlockSaved {
                a,
                a_out,
                b,
                b_out,
                proj,
            });
            inputs.push(out);
        }
        let last = inputs.pop().unwrap_or_default();
        let n = self.positions.max(1);
        let features: Vec<f32> = last
            .chunks(n)
            .map(|plane| plane.iter().sum::<f32>() / n as f32)
            .collect();
        let shape = Shape::from(self.features);
        if self
            .saved
            .set(BodySaved {
                stem,
                inputs,
                blocks,
            })
            .is_err()
        {
            candle_core::bail!("residual-cnn-body: node computed twice")
        }
        Ok((CpuStorage::F32(features), shape))
    }

    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let Some(saved) = self.saved.get() else {
            candle_core::bail!("residual-cnn-body: backward pass before the forward pass")
        };
        let grad = grad.contiguous()?;
        // the readout's gradient: each feature's, spread evenly over its map
        let mut d = {
            let (gs, gl) = grad.storage_and_layout();
            let g = cpu_slice(&gs, gl, "output gradient")?;
            spread(g, self.positions)
        };
        let no_gradient = || candle_core::Error::Msg("residual-cnn-body: no input gradient".into());
        for (i, (block, s)) in self.blocks.iter().zip(&saved.blocks).enumerate().rev() {
            let input = &saved.inputs[i];
            let skip = s.proj.as_ref().map_or(input.as_slice(), |(out, _)| out);
            let d_sum = sum_relu_gradient(&s.b_out, skip, &d);
            let d_a = block
                .b
                .hand_over(block.b.backward(&s.b, &s.a_out, true, &d_sum)?)?
                .ok_or_else(no_gradient)?;
            let mut d_in = block
                .a
                .hand_over(block.a.backward(&s.a, input, true, &d_a)?)?
                .ok_or_else(no_gradient)?;
            match (&block.proj, &s.proj) {
                (Some(p), Some((_, ps))) => {
                    let d_p = p
                        .hand_over(p.backward(ps, input, true, &d_sum)?)?
                        .ok_or_else(no_gradient)?;
                    add_into(&mut d_in, &d_p);
                }
                _ => add_into(&mut d_in, &d_sum),
            }
            d = d_in;
        }
        let stem = {
            let (xs, xl) = x.storage_and_layout();
            self.stem
                .backward(&saved.stem, cpu_slice(&xs, xl, "images")?, false, &d)?
        };
        // the stem's kernel gradient goes back through the graph, as the operand's
        self.stem.hand_over_norm(stem.dgamma, stem.dbeta)?;
        Ok((
            None,
            Some(Tensor::from_vec(stem.dw, w.shape(), w.device())?),
        ))
    }
}

/// `g [planes]` spread over `[planes, positions]`, each divided by `positions`.
fn spread(g: &[f32], positions: usize) -> Vec<f32> {
    let n = positions.max(1);
    let scale = 1.0 / n as f32;
    let plane = |&g: &f32| std::iter::repeat_n(g * scale, n);
    if parallel(g.len() * n) {
        g.par_iter().flat_map_iter(plane).collect()
    } else {
        g.iter().flat_map(plane).collect()
    }
}

/// `d += e`, over the pool where it pays.
fn add_into(d: &mut [f32], e: &[f32]) {
    if parallel(d.len()) {
        d.par_iter_mut()
            .zip(e)
            .with_min_len(PER_TASK)
            .for_each(|(d, e)| *d += e);
    } else {
        d.iter_mut().zip(e).for_each(|(d, e)| *d += e);
    }
}
