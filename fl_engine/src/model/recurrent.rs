//! GRU / LSTM layers whose whole recurrence is one graph node forward and one backward.
//!
//! candle-nn's cells run each step as about fifteen graph nodes (two products, two bias
//! adds, chunks, one op per gate nonlinearity and per term of the state update), plus the
//! mask carry, and backpropagation walks them all again; at 48 steps that is over a thousand
//! small nodes per layer, each allocating its output. Here the input projection of every step
//! is one product over `[batch * time, inputs]` (the fused dense layer), and the recurrence
//! over the projected inputs (`W_hh` products, gates, state update, mask carry) is one custom
//! op that keeps what backpropagation through time needs and computes the gradients of the
//! projected inputs, `W_hh` and `b_hh` in one backward sweep (the `W_hh` gradient as a
//! single product over all steps). With more than one rayon thread the batch rows are split
//! into one part per thread, each running every step forward and backward on its own rows:
//! rows are independent through time, so the parts never wait on each other.
//!
//! The arithmetic follows candle-nn's cells (PyTorch's gate order and formulas: GRU
//! `h' = z h - (z - 1) n`, LSTM `c' = f c + i g`, `h' = o tanh(c')`) and the backbone's mask
//! carry `s = s + (new - s) p`; the unfused composition in [`RecurrentLayer::unfused`] is the
//! reference the tests compare against, and the path off the CPU.
use std::ops::Range;
use std::sync::Mutex;

use candle_core::{CpuStorage, CustomOp3, DType, Device, Layout, Shape, Tensor};
use candle_nn::{Linear, VarBuilder};
use rayon::prelude::*;

use super::activation;
use super::backbone::Cell;
use super::fused::{cpu_slice, matmul_into, Dense};
use super::spare;

/// One recurrent layer: `weight_ih_l{k}`, `weight_hh_l{k}`, `bias_ih_l{k}`, `bias_hh_l{k}`
/// (PyTorch's names and shapes).
pub(crate) struct RecurrentLayer {
    cell: Cell,
    hidden: usize,
    input: Dense,
    #[cfg(test)]
    w_ih: Tensor,
    #[cfg(test)]
    b_ih: Tensor,
    w_hh: Tensor,
    b_hh: Tensor,
}

fn gate_count(cell: Cell) -> usize {
    match cell {
        Cell::Gru => 3,
        Cell::Lstm => 4,
    }
}

impl RecurrentLayer {
    pub(crate) fn new(
        cell: Cell,
        inputs: usize,
        hidden: usize,
        layer: usize,
        vb: VarBuilder,
    ) -> candle_core::Result<Self> {
        let g = gate_count(cell) * hidden;
        let weight = candle_nn::init::DEFAULT_KAIMING_UNIFORM;
        let zero = candle_nn::Init::Const(0.0);
        let w_ih = vb.get_with_hints((g, inputs), &format!("weight_ih_l{layer}"), weight)?;
        let w_hh = vb.get_with_hints((g, hidden), &format!("weight_hh_l{layer}"), weight)?;
        let b_ih = vb.get_with_hints(g, &format!("bias_ih_l{layer}"), zero)?;
        let b_hh = vb.get_with_hints(g, &format!("bias_hh_l{layer}"), zero)?;
        Ok(Self {
            cell,
            hidden,
            input: Dense::new(Linear::new(w_ih.clone(), Some(b_ih.clone()))),
            #[cfg(test)]
            w_ih,
            #[cfg(test)]
            b_ih,
            w_hh,
            b_hh,
        })
    }

    /// `inputs [batch, time, in]` -> the state after each step `[batch, time, hidden]`;
    /// `present [batch, time]` (1 observed, 0 missing) carries the state over missing steps.
    pub(crate) fn forward(
        &self,
        inputs: &Tensor,
        present: Option<&Tensor>,
    ) -> candle_core::Result<Tensor> {
        let (b, t, i) = inputs.dims3()?;
        let g = gate_count(self.cell) * self.hidden;
        let xp = self
            .input
            .forward(&inputs.reshape((b * t, i))?, false, None)?
            .reshape((b, t, g))?;
        if !xp.device().is_cpu() || xp.dtype() != DType::F32 {
            return self.recurrence_unfused(&xp, present);
        }
        let p = present
            .map(|p| p.flatten_all()?.to_vec1::<f32>())
            .transpose()?;
        let dims = Dims {
            batch: b,
            time: t,
            hidden: self.hidden,
            gates: gate_count(self.cell),
        };
        let (w_hh, b_hh) = (self.w_hh.contiguous()?, self.b_hh.contiguous()?);
        let xp = xp.contiguous()?;
        let (states, saved) = {
            let (xs, xl) = xp.storage_and_layout();
            let (ws, wl) = w_hh.storage_and_layout();
            let (bs, bl) = b_hh.storage_and_layout();
            forward_kernel(
                self.cell,
                dims,
                cpu_slice(&xs, xl, "projected inputs")?,
                cpu_slice(&ws, wl, "weight_hh")?,
                cpu_slice(&bs, bl, "bias_hh")?,
                p.as_deref(),
                &parts(dims),
            )?
        };
        let op = RecurrenceOp {
            cell: self.cell,
            dims,
            present: p,
            states: Mutex::new(states),
            saved,
        };
        xp.apply_op3(&w_hh, &b_hh, op)
    }

    /// The same layer as a composition of candle ops, one step at a time.
    #[cfg(test)]
    pub(crate) fn unfused(
        &self,
        inputs: &Tensor,
        present: Option<&Tensor>,
    ) -> candle_core::Result<Tensor> {
        let (b, t, i) = inputs.dims3()?;
        let xp = inputs
            .reshape((b * t, i))?
            .matmul(&self.w_ih.t()?)?
            .broadcast_add(&self.b_ih)?
            .reshape((b, t, ()))?;
        self.recurrence_unfused(&xp, present)
    }

    /// The recurrence over projected inputs `xp [batch, time, gates * hidden]` with candle
    /// ops (candle-nn's cell step, then the mask carry).
    fn recurrence_unfused(
        &self,
        xp: &Tensor,
        present: Option<&Tensor>,
    ) -> candle_core::Result<Tensor> {
        let (b, t, _) = xp.dims3()?;
        let n = gate_count(self.cell);
        let zeros = Tensor::zeros((b, self.hidden), xp.dtype(), xp.device())?;
        let (mut h, mut c) = (zeros.clone(), zeros);
        let mut states = Vec::with_capacity(t);
        for s in 0..t {
            let x = xp.narrow(1, s, 1)?.squeeze(1)?;
            let hh = h
                .matmul(&self.w_hh.t()?)?
                .broadcast_add(&self.b_hh)?
                .chunk(n, 1)?;
            let x = x.chunk(n, 1)?;
            let (nh, nc) = match self.cell {
                Cell::Gru => {
                    let r = candle_nn::ops::sigmoid(&(&x[0] + &hh[0])?)?;
                    let z = candle_nn::ops::sigmoid(&(&x[1] + &hh[1])?)?;
                    let nn = (&x[2] + (r * &hh[2])?)?.tanh()?;
                    (((&z * &h)? - ((&z - 1.)? * nn)?)?, None)
                }
                Cell::Lstm => {
                    let i = candle_nn::ops::sigmoid(&(&x[0] + &hh[0])?)?;
                    let f = candle_nn::ops::sigmoid(&(&x[1] + &hh[1])?)?;
                    let g = (&x[2] + &hh[2])?.tanh()?;
                    let o = candle_nn::ops::sigmoid(&(&x[3] + &hh[3])?)?;
                    let nc = ((f * &c)? + (i * g)?)?;
                    ((o * nc.tanh()?)?, Some(nc))
                }
            };
            match present {
                None => {
                    h = nh;
                    if let Some(nc) = nc {
                        c = nc;
                    }
                }
                Some(p) => {
                    let p = p.narrow(1, s, 1)?;
                    h = (&h + (nh - &h)?.broadcast_mul(&p)?)?;
                    if let Some(nc) = nc {
                        c = (&c + (nc - &c)?.broadcast_mul(&p)?)?;
                    }
                }
            }
            states.push(h.clone());
        }
        Tensor::stack(&states, 1)
    }
}

#[derive(Clone, Copy)]
struct Dims {
    batch: usize,
    time: usize,
    hidden: usize,
    gates: usize,
}

/// What backpropagation through time reads, step-major (`[time, batch, ..]`).
struct Saved {
    /// Gate activations `[time, batch, gates * hidden]`: GRU `r, z, n`; LSTM `i, f, g, o`.
    gates: Vec<f32>,
    /// The state entering each step `[time, batch, hidden]`.
    h_prev: Vec<f32>,
    /// GRU: `W_hn h + b_hn`; LSTM: the cell state entering the step. `[time, batch, hidden]`.
    aux: Vec<f32>,
    /// LSTM: `tanh(c')` of the step's new cell state (before the carry); GRU: empty.
    tanh_c: Vec<f32>,
}

impl Drop for Saved {
    fn drop(&mut self) {
        for v in [
            &mut self.gates,
            &mut self.h_prev,
            &mut self.aux,
            &mut self.tanh_c,
        ] {
            spare::give_back(std::mem::take(v));
        }
    }
}

/// Values added between the rows of the weight copies the recurrent products read. `gemm`
/// reads them in place, column by column, and rows a multiple of 4 KiB apart (the 2,048
/// values of `W_hh^T` for an LSTM with 512 units) put every column in the same few L1 sets:
/// without the pad that LSTM's training loop ran 10-30 % slower (docs/benchmarks.md).
const PAD: usize = 16;

/// `w [rows, cols]` (row-major) transposed: `[cols, rows]` with rows `rows + PAD` values
/// apart. Made once per pass, so that the product of every step reads it as it is instead of
/// repacking it.
fn padded_transpose(w: &[f32], rows: usize, cols: usize) -> candle_core::Result<Tensor> {
    let ld = rows + PAD;
    let mut out = vec![0f32; cols * ld];
    for (r, row) in w.chunks_exact(cols).enumerate() {
        for (c, v) in row.iter().enumerate() {
            out[c * ld + r] = *v;
        }
    }
    Tensor::from_vec(out, (cols, ld), &Device::Cpu)?.narrow(1, 0, rows)
}

/// `w [rows, cols]` with rows `cols + PAD` values apart (see [`PAD`]).
fn padded(w: &[f32], rows: usize, cols: usize) -> candle_core::Result<Tensor> {
    let ld = cols + PAD;
    let mut out = vec![0f32; rows * ld];
    for (dst, src) in out.chunks_exact_mut(ld).zip(w.chunks_exact(cols)) {
        dst[..cols].copy_from_slice(src);
    }
    Tensor::from_vec(out, (rows, ld), &Device::Cpu)?.narrow(1, 0, cols)
}

/// The mask carry `s + (new - s) p` of one value (`new` where the step is not masked).
#[inline(always)]
fn carry(old: f32, new: f32, p: Option<f32>) -> f32 {
    match p {
        Some(p) => old + (new - old) * p,
        None => new,
    }
}

/// The batch rows each part of the recurrence runs: one part per rayon thread when there
/// is enough work. Rows are independent through time, so each part runs every step on its
/// own rows with no synchronisation between steps.
fn parts(d: Dims) -> Vec<Range<usize>> {
    let work = d.batch * d.time * d.gates * d.hidden * d.hidden;
    let n = if work >= 1 << 20 {
        rayon::current_num_threads().clamp(1, d.batch.max(1))
    } else {
        1
    };
    (0..n)
        .map(|i| d.batch * i / n..d.batch * (i + 1) / n)
        .collect()
}

/// A step-major `[time, batch, width]` buffer split into, per part, its rows of each step.
fn by_part<'a>(
    buf: &'a mut [f32],
    d: Dims,
    width: usize,
    parts: &[Range<usize>],
) -> Vec<StepRows<'a>> {
    let mut out: Vec<StepRows> = parts.iter().map(|_| Vec::new()).collect();
    if buf.is_empty() {
        return out;
    }
    for step in buf.chunks_exact_mut(d.batch * width) {
        let mut rest = step;
        for (o, r) in out.iter_mut().zip(parts) {
            let (mine, tail) = rest.split_at_mut(r.len() * width);
            o.push(mine);
            rest = tail;
        }
    }
    out
}

/// A batch-major `[batch, ...]` buffer split by parts.
fn rows_of<'a, T>(buf: &'a mut [T], per_row: usize, parts: &[Range<usize>]) -> Vec<&'a mut [T]> {
    let mut rest = buf;
    let mut out = Vec::with_capacity(parts.len());
    for r in parts {
        let (mine, tail) = std::mem::take(&mut rest).split_at_mut(r.len() * per_row);
        out.push(mine);
        rest = tail;
    }
    out
}

/// One part's rows of a step-major buffer, by step.
type StepRows<'a> = Vec<&'a mut [f32]>;

/// One part's share of [`Saved`].
struct SavedRows<'a> {
    gates: StepRows<'a>,
    h_prev: StepRows<'a>,
    aux: StepRows<'a>,
    tanh_c: StepRows<'a>,
}

/// Runs the recurrence; returns the states `[batch, time, hidden]` and what the backward
/// pass needs. `w_hh` is `[gates * hidden, hidden]`, PyTorch's layout.
fn forward_kernel(
    cell: Cell,
    d: Dims,
    xp: &[f32],
    w_hh: &[f32],
    b_hh: &[f32],
    present: Option<&[f32]>,
    parts: &[Range<usize>],
) -> candle_core::Result<(Vec<f32>, Saved)> {
    let (b, t, h) = (d.batch, d.time, d.hidden);
    let g = d.gates * h;
    let lstm = cell == Cell::Lstm;
    let w_t = padded_transpose(w_hh, g, h)?;
    let mut states = vec![0f32; b * t * h];
    let mut saved = Saved {
        gates: spare::zeroed(t * b * g),
        h_prev: spare::zeroed(t * b * h),
        aux: spare::zeroed(t * b * h),
        tanh_c: spare::zeroed(if lstm { t * b * h } else { 0 }),
    };
    let work: Vec<_> = rows_of(&mut states, t * h, parts)
        .into_iter()
        .zip(by_part(&mut saved.gates, d, g, parts))
        .zip(by_part(&mut saved.h_prev, d, h, parts))
        .zip(by_part(&mut saved.aux, d, h, parts))
        .zip(by_part(&mut saved.tanh_c, d, h, parts))
        .zip(parts)
        .map(|(((((states, gates), h_prev), aux), tanh_c), rows)| {
            let rows = rows.clone();
            let saved = SavedRows {
                gates,
                h_prev,
                aux,
                tanh_c,
            };
            (rows, states, saved)
        })
        .collect();
    let run = |(rows, states, saved): (Range<usize>, &mut [f32], SavedRows)| {
        let xp = &xp[rows.start * t * g..rows.end * t * g];
        let present = present.map(|p| &p[rows.start * t..rows.end * t]);
        forward_rows(cell, d, rows.len(), xp, &w_t, b_hh, present, states, saved)
    };
    if work.len() > 1 {
        work.into_par_iter().try_for_each(run)?;
    } else {
        work.into_iter().try_for_each(run)?;
    }
    Ok((states, saved))
}

/// The recurrence over `b` batch rows (all steps): `xp [b, time, g]`, `w_t [hidden, g]`.
#[allow(clippy::too_many_arguments)]
fn forward_rows(
    cell: Cell,
    d: Dims,
    b: usize,
    xp: &[f32],
    w_t: &Tensor,
    b_hh: &[f32],
    present: Option<&[f32]>,
    states: &mut [f32],
    mut saved: SavedRows,
) -> candle_core::Result<()> {
    let (t, h) = (d.time, d.hidden);
    let g = d.gates * h;
    let lstm = cell == Cell::Lstm;
    let mut hs = vec![0f32; b * h];
    let mut cs = vec![0f32; if lstm { b * h } else { 0 }];
    let mut hh = vec![0f32; b * g];
    for s in 0..t {
        // `h W_hh^T`; `b_hh` is added to it in the element loop (candle's order: product,
        // then bias)
        let h_t = Tensor::from_slice(&hs, (b, h), &Device::Cpu)?;
        matmul_into(&mut hh, false, &h_t, w_t)?;
        saved.h_prev[s].copy_from_slice(&hs);
        if lstm {
            saved.aux[s].copy_from_slice(&cs);
        }
        for bi in 0..b {
            let x = &xp[(bi * t + s) * g..(bi * t + s + 1) * g];
            let hh = &hh[bi * g..(bi + 1) * g];
            let p = present.map(|p| p[bi * t + s]);
            let at = bi * h;
            let gate = &mut saved.gates[s][bi * g..(bi + 1) * g];
            let hrow = &mut hs[at..at + h];
            // the pre-activations `x + (W_hh h + b_hh)` of the gates that take them whole
            // (all of the LSTM's, the GRU's `r` and `z`), then their nonlinearities block by
            // block; the loops hold no calls, so they run as vector code
            let whole = if lstm { g } else { 2 * h };
            for (((a, x), hh), b) in gate[..whole].iter_mut().zip(x).zip(hh).zip(b_hh) {
                *a = x + (hh + b);
            }
            if lstm {
                let (ifg, o) = gate.split_at_mut(3 * h);
                let (i_f, g_pre) = ifg.split_at_mut(2 * h);
                activation::sigmoid_in_place(i_f);
                g_pre.iter_mut().for_each(|v| *v = activation::tanh(*v));
                activation::sigmoid_in_place(o);
                let (i, rest) = gate.split_at(h);
                let (f, rest) = rest.split_at(h);
                let (gg, o) = rest.split_at(h);
                let c = &mut cs[at..at + h];
                let tanh_c = &mut saved.tanh_c[s][at..at + h];
                for j in 0..h {
                    let (cp, hp) = (c[j], hrow[j]);
                    let nc = f[j] * cp + i[j] * gg[j];
                    let tc = activation::tanh(nc);
                    tanh_c[j] = tc;
                    c[j] = carry(cp, nc, p);
                    hrow[j] = carry(hp, o[j] * tc, p);
                }
            } else {
                let (rz, n) = gate.split_at_mut(2 * h);
                activation::sigmoid_in_place(rz);
                let (r, z) = rz.split_at(h);
                let (x_n, hh_n, b_n) = (&x[2 * h..], &hh[2 * h..], &b_hh[2 * h..]);
                let aux = &mut saved.aux[s][at..at + h];
                for j in 0..h {
                    let hn = hh_n[j] + b_n[j];
                    let nj = activation::tanh(x_n[j] + r[j] * hn);
                    aux[j] = hn;
                    n[j] = nj;
                    let hp = hrow[j];
                    hrow[j] = carry(hp, z[j] * hp - (z[j] - 1.0) * nj, p);
                }
            }
            states[(bi * t + s) * h..(bi * t + s + 1) * h].copy_from_slice(hrow);
        }
    }
    Ok(())
}

/// Gradients of the projected inputs `[batch, time, gates * hidden]`, `W_hh` and `b_hh` from
/// the gradient of the states `[batch, time, hidden]`.
fn backward_kernel(
    cell: Cell,
    d: Dims,
    saved: &Saved,
    w_hh: &[f32],
    present: Option<&[f32]>,
    d_states: &[f32],
    parts: &[Range<usize>],
) -> candle_core::Result<(Vec<f32>, Tensor, Vec<f32>)> {
    let (b, t, h) = (d.batch, d.time, d.hidden);
    let g = d.gates * h;
    let w_hh = &padded(w_hh, g, h)?;
    // gradient of `W_hh h + b_hh` per step, `[time, batch, gates * hidden]`
    let mut dhh = vec![0f32; t * b * g];
    let mut dxp = vec![0f32; b * t * g];
    let work: Vec<_> = rows_of(&mut dxp, t * g, parts)
        .into_iter()
        .zip(by_part(&mut dhh, d, g, parts))
        .zip(parts)
        .map(|((dxp, dhh), rows)| (rows.clone(), dxp, dhh))
        .collect();
    let run = |(rows, dxp, dhh): (Range<usize>, &mut [f32], StepRows)| {
        backward_rows(cell, d, rows, saved, w_hh, present, d_states, dxp, dhh)
    };
    if work.len() > 1 {
        work.into_par_iter().try_for_each(run)?;
    } else {
        work.into_iter().try_for_each(run)?;
    }
    let mut db = vec![0f32; g];
    for row in dhh.chunks_exact(g) {
        db.iter_mut().zip(row).for_each(|(s, v)| *s += v);
    }
    // every step's `W_hh` gradient in one product: `dhh^T h_prev` over `[time * batch]` rows
    let dhh = Tensor::from_vec(dhh, (t * b, g), &Device::Cpu)?;
    let h_prev = Tensor::from_slice(&saved.h_prev, (t * b, h), &Device::Cpu)?;
    let dw = dhh.t()?.matmul(&h_prev)?;
    Ok((dxp, dw, db))
}

/// Backpropagation through time over the batch rows `rows`: their projected-input
/// gradient `dxp [rows, time, g]` and their `W_hh h + b_hh` gradient of each step.
#[allow(clippy::too_many_arguments)]
fn backward_rows(
    cell: Cell,
    d: Dims,
    rows: Range<usize>,
    saved: &Saved,
    w_hh: &Tensor,
    present: Option<&[f32]>,
    d_states: &[f32],
    dxp: &mut [f32],
    mut dhh: StepRows,
) -> candle_core::Result<()> {
    let (b, t, h) = (d.batch, d.time, d.hidden);
    let g = d.gates * h;
    let lstm = cell == Cell::Lstm;
    let nb = rows.len();
    let mut dh = vec![0f32; nb * h];
    let mut dc = vec![0f32; if lstm { nb * h } else { 0 }];
    for s in (0..t).rev() {
        let dhh = &mut *dhh[s];
        for (li, bi) in rows.clone().enumerate() {
            let ds = &d_states[(bi * t + s) * h..(bi * t + s + 1) * h];
            let p = present.map_or(1.0, |p| p[bi * t + s]);
            let at = (s * b + bi) * h;
            let gate = &saved.gates[(s * b + bi) * g..(s * b + bi + 1) * g];
            let dhh = &mut dhh[li * g..(li + 1) * g];
            let dx = &mut dxp[(li * t + s) * g..(li * t + s + 1) * g];
            for j in 0..h {
                let dh_j = dh[li * h + j] + ds[j];
                // s = s_prev + (new - s_prev) p
                let dnew = dh_j * p;
                let kept = dh_j * (1.0 - p);
                if lstm {
                    let (i, f, gg, o) = (gate[j], gate[h + j], gate[2 * h + j], gate[3 * h + j]);
                    let (cp, tc) = (saved.aux[at + j], saved.tanh_c[at + j]);
                    let dc_j = dc[li * h + j];
                    let dnc = dc_j * p + dnew * o * (1.0 - tc * tc);
                    let d_i = dnc * gg * i * (1.0 - i);
                    let d_f = dnc * cp * f * (1.0 - f);
                    let d_g = dnc * i * (1.0 - gg * gg);
                    let d_o = dnew * tc * o * (1.0 - o);
                    dc[li * h + j] = dc_j * (1.0 - p) + dnc * f;
                    dx[j] = d_i;
                    dx[h + j] = d_f;
                    dx[2 * h + j] = d_g;
                    dx[3 * h + j] = d_o;
                    dhh[j] = d_i;
                    dhh[h + j] = d_f;
                    dhh[2 * h + j] = d_g;
                    dhh[3 * h + j] = d_o;
                    dh[li * h + j] = kept;
                } else {
                    let (r, z, n) = (gate[j], gate[h + j], gate[2 * h + j]);
                    let (hp, hn) = (saved.h_prev[at + j], saved.aux[at + j]);
                    // new = z hp - (z - 1) n
                    let dn = dnew * (1.0 - z) * (1.0 - n * n);
                    let d_z = dnew * (hp - n) * z * (1.0 - z);
                    let d_r = dn * hn * r * (1.0 - r);
                    dx[j] = d_r;
                    dx[h + j] = d_z;
                    dx[2 * h + j] = dn;
                    dhh[j] = d_r;
                    dhh[h + j] = d_z;
                    dhh[2 * h + j] = dn * r;
                    dh[li * h + j] = kept + dnew * z;
                }
            }
        }
        // the state entering the step also feeds `W_hh h`
        let step = Tensor::from_slice(dhh, (nb, g), &Device::Cpu)?;
        matmul_into(&mut dh, true, &step, w_hh)?;
    }
    Ok(())
}

/// The recurrence as one graph node over `(projected inputs, W_hh, b_hh)`, run beforehand.
struct RecurrenceOp {
    cell: Cell,
    dims: Dims,
    present: Option<Vec<f32>>,
    /// The states the forward pass computed, handed to candle (once) as the node's value.
    states: Mutex<Vec<f32>>,
    saved: Saved,
}

impl CustomOp3 for RecurrenceOp {
    fn name(&self) -> &'static str {
        "recurrence"
    }

    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let d = self.dims;
        let states = match self.states.lock() {
            Ok(mut states) => std::mem::take(&mut *states),
            Err(_) => candle_core::bail!("recurrence: states lock poisoned"),
        };
        if states.len() != d.batch * d.time * d.hidden {
            candle_core::bail!("recurrence: the forward pass's states were already taken")
        }
        Ok((
            CpuStorage::F32(states),
            Shape::from((d.batch, d.time, d.hidden)),
        ))
    }

    fn bwd(
        &self,
        xp: &Tensor,
        w_hh: &Tensor,
        b_hh: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let d = self.dims;
        let (grad, w_hh) = (grad.contiguous()?, w_hh.contiguous()?);
        let (dxp, dw, db) = {
            let (gs, gl) = grad.storage_and_layout();
            let (ws, wl) = w_hh.storage_and_layout();
            backward_kernel(
                self.cell,
                d,
                &self.saved,
                cpu_slice(&ws, wl, "weight_hh")?,
                self.present.as_deref(),
                cpu_slice(&gs, gl, "state gradient")?,
                &parts(d),
            )?
        };
        let g = d.gates * d.hidden;
        Ok((
            Some(Tensor::from_vec(dxp, (d.batch, d.time, g), xp.device())?),
            Some(dw),
            Some(Tensor::from_vec(db, g, b_hh.device())?),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};
    use candle_nn::VarMap;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
        (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
    }

    /// The recurrence split over batch rows (uneven parts, run on a three-thread pool)
    /// gives the states, saved activations and gradients of one part over all rows.
    #[test]
    fn split_recurrence_matches_one_part() {
        let (b, t, h) = (7, 6, 8);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for cell in [Cell::Gru, Cell::Lstm] {
            for masked in [false, true] {
                let d = Dims {
                    batch: b,
                    time: t,
                    hidden: h,
                    gates: gate_count(cell),
                };
                let g = d.gates * h;
                let xp = random(&mut rng, b * t * g);
                let w = random(&mut rng, g * h);
                let bias = random(&mut rng, g);
                let p: Vec<f32> = (0..b * t).map(|k| f32::from(k % 4 != 2)).collect();
                let p = masked.then_some(&p[..]);
                let d_states = random(&mut rng, b * t * h);
                let run = |parts: &[Range<usize>]| {
                    let (states, saved) =
                        forward_kernel(cell, d, &xp, &w, &bias, p, parts).unwrap();
                    let (dxp, dw, db) =
                        backward_kernel(cell, d, &saved, &w, p, &d_states, parts).unwrap();
                    let dw = dw.flatten_all().unwrap().to_vec1::<f32>().unwrap();
                    [
                        states,
                        saved.gates.clone(),
                        saved.h_prev.clone(),
                        saved.aux.clone(),
                        saved.tanh_c.clone(),
                        dxp,
                        dw,
                        db,
                    ]
                };
                let one = run(std::slice::from_ref(&(0..b)));
                let split = crate::device::on_threads(3, || run(&[0..2, 2..3, 3..7]));
                for (k, (a, r)) in split.iter().zip(&one).enumerate() {
                    assert_eq!(a.len(), r.len());
                    for (x, y) in a.iter().zip(r) {
                        assert!(
                            (x - y).abs() <= 1e-6 * (1.0 + y.abs()),
                            "{cell:?} masked {masked} array {k}: {x} vs {y}"
                        );
                    }
                }
            }
        }
    }

    /// Forward values and the gradients of every parameter and of the inputs agree with the
    /// unfused composition, with and without a mask, through two stacked layers.
    #[test]
    fn fused_recurrence_matches_the_candle_composition() {
        let (b, t, i, h) = (3, 5, 4, 6);
        for cell in [Cell::Gru, Cell::Lstm] {
            for masked in [false, true] {
                let mut rng = ChaCha8Rng::seed_from_u64(7);
                let map = VarMap::new();
                let vb = VarBuilder::from_varmap(&map, DType::F32, &Device::Cpu);
                let l0 = RecurrentLayer::new(cell, i, h, 0, vb.clone()).unwrap();
                let l1 = RecurrentLayer::new(cell, h, h, 1, vb).unwrap();
                // the biases start at 0: give every parameter random values
                for (_, v) in map.data().lock().unwrap().iter() {
                    let n = v.as_tensor().elem_count();
                    let r = Tensor::from_vec(random(&mut rng, n), v.shape(), &Device::Cpu);
                    v.set(&r.unwrap()).unwrap();
                }
                let x =
                    Var::from_vec(random(&mut rng, b * t * i), (b, t, i), &Device::Cpu).unwrap();
                let p: Vec<f32> = (0..b * t).map(|k| f32::from(k % 3 != 1)).collect();
                let p = Tensor::from_vec(p, (b, t), &Device::Cpu).unwrap();
                let p = masked.then_some(&p);
                // a loss that weighs every state differently
                let weights =
                    Tensor::from_vec(random(&mut rng, b * t * h), (b, t, h), &Device::Cpu).unwrap();
                let run = |fused: bool| {
                    let s = if fused {
                        l1.forward(&l0.forward(&x, p).unwrap(), p).unwrap()
                    } else {
                        l1.unfused(&l0.unfused(&x, p).unwrap(), p).unwrap()
                    };
                    let loss = (&s * &weights).unwrap().sum_all().unwrap();
                    let grads = crate::model::backward(&loss).unwrap();
                    let mut out = vec![s.flatten_all().unwrap().to_vec1::<f32>().unwrap()];
                    let mut vars = map.all_vars();
                    vars.push(x.clone());
                    for v in vars {
                        let g = grads
                            .get(v.as_tensor())
                            .expect("a gradient for every input");
                        out.push(g.flatten_all().unwrap().to_vec1::<f32>().unwrap());
                    }
                    out
                };
                let (fused, reference) = (run(true), run(false));
                for (k, (a, r)) in fused.iter().zip(&reference).enumerate() {
                    assert_eq!(a.len(), r.len());
                    for (x, y) in a.iter().zip(r) {
                        assert!(
                            (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
                            "{cell:?} masked {masked} tensor {k}: {x} vs {y}"
                        );
                    }
                }
            }
        }
    }
}
