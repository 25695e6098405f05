//! A residual block's skip sum and the ReLU after it, `max(a + b, 0)`, as one graph node
//! ([`add_relu`]), and its kernels on slices, which the residual body also runs.
use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Tensor};
use rayon::prelude::*;

use super::pool::{parallel, PER_TASK};
use crate::model::fused::{cpu_slice, f32_slice};

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
pub(super) fn sum_relu(a: &[f32], b: &[f32]) -> Vec<f32> {
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
pub(super) fn sum_relu_gradient(a: &[f32], b: &[f32], g: &[f32]) -> Vec<f32> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::conv::testing::{close, random};
    use candle_core::{Device, Var};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

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
                            rng.random_range(-1.0..1.0)
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
}
