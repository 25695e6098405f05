//! GroupNorm (optionally followed by ReLU) as one graph node: each group read once for its
//! statistics and once to normalise, and the closed-form backward pass
//! `dx = rstd (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂))`, `dx̂ = dy gamma`.
use candle_core::{CpuStorage, CustomOp3, DType, Layout, Module, Shape, Tensor};
use candle_nn::GroupNorm;
use rayon::prelude::*;

use super::pool::{parallel, zeros};
use crate::model::fused::{cpu_slice, f32_slice};

/// GroupNorm over `[batch, channels, ...]` with per-channel scale and shift, optionally
/// followed by ReLU.
pub(crate) struct GroupNormAct {
    gn: GroupNorm,
    pub(super) weight: Tensor,
    pub(super) bias: Tensor,
    pub(super) groups: usize,
    pub(super) eps: f64,
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
pub(super) struct GroupNormOp {
    pub(super) batch: usize,
    pub(super) channels: usize,
    pub(super) positions: usize,
    pub(super) groups: usize,
    pub(super) eps: f32,
    pub(super) relu: bool,
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
    pub(super) fn forward(
        &self,
        x: &[f32],
        gamma: &[f32],
        beta: &[f32],
    ) -> (Vec<f32>, Vec<(f32, f32)>) {
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
    pub(super) fn backward(
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
    use crate::model::conv::testing::{close, random};
    use candle_core::Device;
    use candle_nn::{VarBuilder, VarMap};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

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
