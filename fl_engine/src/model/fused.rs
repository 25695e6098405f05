//! A dense layer whose bias add, ReLU and dropout mask run as one pass forward and one pass
//! backward.
//!
//! candle's `Linear` adds the bias with a generic broadcasting add (strided index arithmetic
//! per element), and ReLU and the dropout multiply are two more ops; their backward passes
//! reduce the bias gradient with a generic strided sum, build the ReLU indicator with a
//! comparison and a cast, and hand the weight its gradient as a transposed view that is then
//! copied with strided indexing. Profiles of the training loop at 512/256 hidden units spent
//! more time there than in the matrix products. [`Dense::forward`] keeps candle's matrix
//! product and makes the rest one graph node with its own backward pass.
//!
//! The arithmetic is the same as the unfused chain, operation for operation, so results are
//! bit-identical: forward `((x W^T)_ij + b_j).max-with-0 * mask_ij`; backward
//! `g_ij * mask_ij` where the pre-activation is `>= 0` (candle's ReLU derivative at 0 is 1),
//! else 0, and the bias gradient the column sums of that, accumulated row by row from 0.
use candle_core::{CpuStorage, CustomOp2, CustomOp3, Layout, Module, Shape, Storage, Tensor};
use candle_nn::Linear;

use super::backward::defer_weight_gradient;

/// A linear layer (`weight [out, in]`, `bias [out]`, PyTorch's names) with an optional fused
/// ReLU and dropout mask.
pub(crate) struct Dense {
    linear: Linear,
}

impl Dense {
    pub(crate) fn new(linear: Linear) -> Self {
        Self { linear }
    }

    /// Output width.
    pub(crate) fn outputs(&self) -> usize {
        self.linear.weight().dims()[0]
    }

    /// `x W^T + b`, then ReLU when `relu`, then times `mask` (inverted dropout: 0 or 1/keep)
    /// when given.
    pub(crate) fn forward(
        &self,
        x: &Tensor,
        relu: bool,
        mask: Option<&Tensor>,
    ) -> candle_core::Result<Tensor> {
        let Some(bias) = self.linear.bias() else {
            return self.unfused(x, relu, mask);
        };
        if x.rank() != 2 || !x.device().is_cpu() || x.dtype() != candle_core::DType::F32 {
            return self.unfused(x, relu, mask);
        }
        let w = self.linear.weight();
        // candle's product, outside the graph: the op below is the graph node for x, W and b
        let xw = x.detach().matmul(&w.detach().t()?)?.contiguous()?;
        let op = DenseOp {
            xw,
            w: w.clone(),
            mask: mask.map(|m| m.contiguous()).transpose()?,
            act: BiasAct { relu },
        };
        let bias = bias.contiguous()?;
        // a variable weight (every trained model's) gets its gradient through
        // `backward::backward`; the bias must be in the graph so that the node is
        if w.is_variable() && bias.track_op() {
            x.apply_op2(&bias, op)
        } else {
            x.apply_op3(w, &bias, op)
        }
    }

    fn unfused(
        &self,
        x: &Tensor,
        relu: bool,
        mask: Option<&Tensor>,
    ) -> candle_core::Result<Tensor> {
        // a GPU's matrix product needs a contiguous left operand (a recurrent readout is a view)
        let mut h = self.linear.forward(&x.contiguous()?)?;
        if relu {
            h = h.relu()?;
        }
        match mask {
            Some(m) => h.mul(m),
            None => Ok(h),
        }
    }
}

/// `act(xw + b) [* mask]` over `xw [rows, cols]`, `b [cols]`, `mask [rows, cols]`.
#[derive(Clone, Copy)]
struct BiasAct {
    relu: bool,
}

/// `act(x W^T + b) [* mask]` as one graph node over `(x, b)` when `W` is a variable (its
/// gradient deferred to [`super::backward::backward`]), else over `(x, W, b)`, with the
/// product `xw` computed beforehand. Its backward pass gives `W` its gradient as `g^T x`,
/// already `[out, in]`: candle's own chain produced `(x^T g)^T`, a transposed view that the
/// gradient store then copied element by element with strided indexing.
struct DenseOp {
    xw: Tensor,
    w: Tensor,
    mask: Option<Tensor>,
    act: BiasAct,
}

impl DenseOp {
    fn cpu_fwd(&self, s3: &CpuStorage, l3: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let b = f32_slice(s3, l3, "bias")?;
        let (xs, xl) = self.xw.storage_and_layout();
        let xw = cpu_slice(&xs, xl, "product")?;
        let out = match &self.mask {
            Some(m) => {
                let (ms, ml) = m.storage_and_layout();
                self.act
                    .forward(xw, xl.shape(), b, Some(cpu_slice(&ms, ml, "mask")?))
            }
            None => self.act.forward(xw, xl.shape(), b, None),
        };
        Ok((CpuStorage::F32(out), xl.shape().clone()))
    }

    /// Gradients of `x` (when it needs one), `W` and `b`.
    fn bwd(
        &self,
        x: &Tensor,
        b: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Tensor, Tensor)> {
        let (g, gb) = self.act.backward(&self.xw, b, self.mask.as_ref(), grad)?;
        // the input batch itself needs no gradient
        let gx = if x.track_op() {
            Some(g.matmul(&self.w)?)
        } else {
            None
        };
        let gw = g.t()?.matmul(x)?;
        Ok((gx, gw, gb))
    }
}

impl CustomOp2 for DenseOp {
    fn name(&self) -> &'static str {
        "dense"
    }

    fn cpu_fwd(
        &self,
        _x: &CpuStorage,
        _xl: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        DenseOp::cpu_fwd(self, s2, l2)
    }

    fn bwd(
        &self,
        x: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let (gx, gw, gb) = DenseOp::bwd(self, x, b, grad)?;
        defer_weight_gradient(&self.w, gw);
        Ok((gx, Some(gb)))
    }
}

impl CustomOp3 for DenseOp {
    fn name(&self) -> &'static str {
        "dense"
    }

    fn cpu_fwd(
        &self,
        _x: &CpuStorage,
        _xl: &Layout,
        _w: &CpuStorage,
        _wl: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        DenseOp::cpu_fwd(self, s3, l3)
    }

    fn bwd(
        &self,
        x: &Tensor,
        _w: &Tensor,
        b: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (gx, gw, gb) = DenseOp::bwd(self, x, b, grad)?;
        Ok((gx, Some(gw), Some(gb)))
    }
}

pub(crate) fn f32_slice<'a>(
    s: &'a CpuStorage,
    l: &Layout,
    what: &str,
) -> candle_core::Result<&'a [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(v), Some((a, b))) => Ok(&v[a..b]),
        _ => candle_core::bail!("fused bias op: {what} must be contiguous f32"),
    }
}

impl BiasAct {
    fn forward(&self, xw: &[f32], shape: &Shape, b: &[f32], mask: Option<&[f32]>) -> Vec<f32> {
        let cols = b.len();
        let mut out = vec![0f32; xw.len()];
        debug_assert_eq!(shape.elem_count(), xw.len());
        for (r, (o, x)) in out
            .chunks_exact_mut(cols)
            .zip(xw.chunks_exact(cols))
            .enumerate()
        {
            for ((o, &x), &b) in o.iter_mut().zip(x).zip(b) {
                let v = x + b;
                *o = if self.relu { v.max(0.0) } else { v };
            }
            if let Some(m) = mask {
                for (o, &m) in o.iter_mut().zip(&m[r * cols..(r + 1) * cols]) {
                    *o *= m;
                }
            }
        }
        out
    }

    /// Gradients with respect to `xw` and `b`, read straight from the tensors' storage.
    fn backward(
        &self,
        xw: &Tensor,
        b: &Tensor,
        mask: Option<&Tensor>,
        grad: &Tensor,
    ) -> candle_core::Result<(Tensor, Tensor)> {
        let (rows, cols) = xw.dims2()?;
        let (xw, b, grad) = (xw.contiguous()?, b.contiguous()?, grad.contiguous()?);
        let mask = mask.map(|m| m.contiguous()).transpose()?;
        let (xs, xl) = xw.storage_and_layout();
        let (bs, bl) = b.storage_and_layout();
        let (gs, gl) = grad.storage_and_layout();
        let (x_v, b_v, g_v) = (
            cpu_slice(&xs, xl, "input")?,
            cpu_slice(&bs, bl, "bias")?,
            cpu_slice(&gs, gl, "gradient")?,
        );
        let ms = mask.as_ref().map(|m| m.storage_and_layout());
        let m_v = match &ms {
            Some((s, l)) => Some(cpu_slice(s, l, "mask")?),
            None => None,
        };
        let mut gx = vec![0f32; rows * cols];
        let mut gb = vec![0f32; cols];
        for r in 0..rows {
            let span = r * cols..(r + 1) * cols;
            let gx_r = &mut gx[span.clone()];
            gx_r.copy_from_slice(&g_v[span.clone()]);
            if let Some(m) = m_v {
                gx_r.iter_mut()
                    .zip(&m[span.clone()])
                    .for_each(|(g, m)| *g *= m);
            }
            if self.relu {
                // candle's ReLU derivative: the indicator of `pre >= 0`, multiplied in
                for ((g, &x), &b) in gx_r.iter_mut().zip(&x_v[span]).zip(b_v) {
                    *g *= if x + b >= 0.0 { 1.0 } else { 0.0 };
                }
            }
            gb.iter_mut().zip(gx_r.iter()).for_each(|(s, g)| *s += g);
        }
        drop((xs, bs, gs, ms));
        Ok((
            Tensor::from_vec(gx, (rows, cols), xw.device())?,
            Tensor::from_vec(gb, cols, b.device())?,
        ))
    }
}

pub(crate) fn cpu_slice<'a>(
    s: &'a Storage,
    l: &Layout,
    what: &str,
) -> candle_core::Result<&'a [f32]> {
    match s {
        Storage::Cpu(c) => f32_slice(c, l, what),
        _ => candle_core::bail!("fused bias op: {what} is not on the CPU"),
    }
}

/// `dst = a b`, or `dst += a b` when `accumulate`, for rank-2 f32 CPU tensors (any layout
/// candle's matmul takes, transposed views included): the fused ops' products stay candle's.
pub(crate) fn matmul_into(
    dst: &mut [f32],
    accumulate: bool,
    a: &Tensor,
    b: &Tensor,
) -> candle_core::Result<()> {
    matmul_with(a, b, |v| {
        if v.len() != dst.len() {
            candle_core::bail!("fused op: product of {} values into {}", v.len(), dst.len())
        }
        if accumulate {
            dst.iter_mut().zip(v).for_each(|(d, v)| *d += v);
        } else {
            dst.copy_from_slice(v);
        }
        Ok(())
    })
}

/// `read` over the values of the product `a b` (row-major), operands as [`matmul_into`]'s.
pub(crate) fn matmul_with<T>(
    a: &Tensor,
    b: &Tensor,
    read: impl FnOnce(&[f32]) -> candle_core::Result<T>,
) -> candle_core::Result<T> {
    let r = a.matmul(b)?;
    let (s, l) = r.storage_and_layout();
    read(cpu_slice(&s, l, "product")?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::backward;
    use candle_core::{Device, Var};
    use rayon::prelude::*;

    fn tensor(seed: usize, dims: (usize, usize)) -> Tensor {
        let values: Vec<f32> = (0..dims.0 * dims.1)
            .map(|i| (((i + 1) * (seed + 3)) as f32 * 0.37).sin())
            .collect();
        Tensor::from_vec(values, dims, &Device::Cpu).unwrap()
    }

    fn bits(t: &Tensor) -> Vec<u32> {
        let v = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        v.iter().map(|v| v.to_bits()).collect()
    }

    /// A layer `in -> out` whose weight and bias are variables, an input batch and an
    /// upstream gradient.
    struct Case {
        w: Var,
        b: Var,
        x: Tensor,
        up: Tensor,
        mask: Tensor,
    }

    fn case(seed: usize) -> Case {
        let (rows, inputs, outputs) = (6, 5, 4);
        let mask_values: Vec<f32> = (0..rows * outputs)
            .map(|i| {
                if (i * 7 + seed).is_multiple_of(3) {
                    0.0
                } else {
                    1.25
                }
            })
            .collect();
        Case {
            w: Var::from_tensor(&tensor(seed, (outputs, inputs))).unwrap(),
            b: Var::from_tensor(&tensor(seed + 1, (1, outputs)).flatten_all().unwrap()).unwrap(),
            x: tensor(seed + 2, (rows, inputs)),
            up: tensor(seed + 3, (rows, outputs)),
            mask: Tensor::from_vec(mask_values, (rows, outputs), &Device::Cpu).unwrap(),
        }
    }

    /// The weight's gradient deferred past candle's graph is the one the graph would have
    /// given it (the same layer over a weight that is not a variable keeps the weight in the
    /// graph node), bit for bit, and both agree with candle's own chain of operations.
    #[test]
    fn a_deferred_weight_gradient_is_the_graphs() {
        for relu in [false, true] {
            for masked in [false, true] {
                let c = case(usize::from(relu) * 2 + usize::from(masked));
                let mask = masked.then_some(&c.mask);
                let run = |weight: Tensor, fused: bool| {
                    let dense = Dense::new(Linear::new(weight, Some(c.b.as_tensor().clone())));
                    let y = if fused {
                        dense.forward(&c.x, relu, mask).unwrap()
                    } else {
                        dense.unfused(&c.x, relu, mask).unwrap()
                    };
                    let grads = backward(&(&y * &c.up).unwrap().sum_all().unwrap()).unwrap();
                    let get = |t: &Tensor| grads.get(t).expect("a gradient").clone();
                    (y, get(c.w.as_tensor()), get(c.b.as_tensor()))
                };
                let deferred = run(c.w.as_tensor().clone(), true);
                // `w * 1` passes the gradient on unchanged, but is not itself a variable
                let in_graph = run(c.w.as_tensor().affine(1.0, 0.0).unwrap(), true);
                let chain = run(c.w.as_tensor().clone(), false);
                for (a, b) in [(&deferred.0, &in_graph.0), (&deferred.1, &in_graph.1)] {
                    assert_eq!(bits(a), bits(b), "relu {relu}, mask {masked}");
                }
                assert_eq!(bits(&deferred.2), bits(&in_graph.2));
                for (a, b) in [
                    (&deferred.0, &chain.0),
                    (&deferred.1, &chain.1),
                    (&deferred.2, &chain.2),
                ] {
                    let diff = (a - b).unwrap().abs().unwrap().max_all().unwrap();
                    assert!(diff.to_scalar::<f32>().unwrap() < 1e-5);
                }
            }
        }
    }

    /// A weight that also enters the loss through candle's graph (a penalty on it) gets the
    /// sum of both gradients.
    #[test]
    fn a_weight_also_in_the_graph_gets_both_gradients() {
        let c = case(7);
        let dense = Dense::new(Linear::new(
            c.w.as_tensor().clone(),
            Some(c.b.as_tensor().clone()),
        ));
        let fit = || {
            let y = dense.forward(&c.x, true, None).unwrap();
            (&y * &c.up).unwrap().sum_all().unwrap()
        };
        let penalty = c.w.as_tensor().sqr().unwrap().sum_all().unwrap();
        let alone = backward(&fit()).unwrap();
        let both = backward(&(fit() + penalty).unwrap()).unwrap();
        // d/dw sum(w^2) is `w + w`, as candle's product rule adds it up
        let expected = ((c.w.as_tensor() + c.w.as_tensor()).unwrap()
            + alone.get(c.w.as_tensor()).unwrap())
        .unwrap();
        assert_eq!(bits(both.get(c.w.as_tensor()).unwrap()), bits(&expected));
    }

    /// Backward passes running side by side on rayon's threads each get their own layers'
    /// gradients, the ones a pass alone gets.
    #[test]
    fn passes_on_several_threads_keep_their_own_gradients() {
        let pass = |seed: usize| {
            let c = case(seed);
            let dense = Dense::new(Linear::new(
                c.w.as_tensor().clone(),
                Some(c.b.as_tensor().clone()),
            ));
            let y = dense.forward(&c.x, true, Some(&c.mask)).unwrap();
            let grads = backward(&(&y * &c.up).unwrap().sum_all().unwrap()).unwrap();
            bits(grads.get(c.w.as_tensor()).unwrap())
        };
        let alone: Vec<_> = (0..32).map(pass).collect();
        let side_by_side: Vec<_> =
            crate::device::on_threads(4, || (0..32).into_par_iter().map(pass).collect());
        assert_eq!(alone, side_by_side);
    }
}
