//! 3x3 convolutions with stride 1 and padding 1 by Winograd's minimal filtering F(2x2, 3x3).
//!
//! Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", CVPR 2016,
//! arXiv:1509.09308. The output is cut into 2x2 tiles; tile `t` of output channel `k` is
//!
//!   `Y_kt = A^T [ sum_c (G g_kc G^T) ⊙ (B^T d_ct B) ] A`,
//!
//! `d_ct` the 4x4 input patch under the tile (padding reads zero), `g_kc` the 3x3 kernel. Over
//! all tiles that is 16 matrix products, one per entry `ξ` of the transformed 4x4 tile:
//!
//!   `M_ξ [out, tiles] = U_ξ [out, in] V_ξ [in, tiles]`,  `U = G g G^T`,  `V = B^T d B`,
//!
//! 16 multiply-adds per input channel and 2x2 outputs where im2col's product takes 36, and a
//! transformed input 4 times the input's size where im2col's columns are 9 times. The
//! backward pass is the adjoint of the same linear maps:
//!
//!   `dM = A dY A^T`,  `dU_ξ = dM_ξ V_ξ^T`,  `dg = G^T dU G`,
//!   `dV_ξ = U_ξ^T dM_ξ`,  `dd = B dV B^T`,
//!
//! the last added into the input gradient (neighbouring patches overlap by two). The
//! transforms' coefficients are 0, ±1 and ±1/2, so rounding stays close to the direct sum's.
//! Runs of images per thread and images side by side in one product follow im2col's path
//! ([`Geometry::images_per_run`], [`COLUMNS_PER_PRODUCT`]); the transformed input is
//! rebuilt for the backward pass rather than kept.
//!
//! [`COLUMNS_PER_PRODUCT`]: super::geometry::COLUMNS_PER_PRODUCT
use candle_core::{Device, Tensor};
use rayon::prelude::*;

use super::geometry::{Algorithm, Geometry};
use super::pool::{in_runs, zeros};
use super::scratch::GroupScratch;
use crate::device::with_widest_vectors;
use crate::model::fused::{matmul_into, matmul_with};

/// Entries of a transformed tile, and so products per direction.
const XI: usize = 16;

/// Whether the convolution goes by tiles here (see [`Algorithm`]).
pub(super) fn applies(g: &Geometry) -> bool {
    let fits = g.k == 3 && g.stride == 1 && g.pad == 1 && g.h > 0 && g.w > 0;
    fits && match g.algorithm {
        Algorithm::Im2col => false,
        #[cfg(test)]
        Algorithm::Winograd => true,
        Algorithm::Fastest => pays(g),
    }
}

/// Where tiles are faster than im2col. The products save 20 of 36 multiply-adds per input
/// channel, output channel and 2x2 outputs; the transforms cost a pass per row of tiles of
/// every plane, whose rows are short on small maps (four tiles at 8x8). Measured layer by
/// layer (forward and backward pass, 32 images, one thread, docs/benchmarks.md): faster from
/// 32 channels at 32x32, 64 at 16x16 and 128 at 8x8; slower below those, at 16 channels on
/// 32x32 maps, and on 4x4 maps.
fn pays(g: &Geometry) -> bool {
    g.w >= 8 && g.cin.min(g.cout) * g.w >= 1024
}

/// `B^T d` along one axis (rows of `B^T`: `1 0 -1 0`, `0 1 1 0`, `0 -1 1 0`, `0 1 0 -1`).
#[inline(always)]
fn input_1d(d: [f32; 4]) -> [f32; 4] {
    [d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]]
}

/// `B v`, the adjoint of [`input_1d`].
#[inline(always)]
fn input_1d_adjoint(v: [f32; 4]) -> [f32; 4] {
    [v[0], v[1] - v[2] + v[3], v[1] + v[2] - v[0], -v[3]]
}

/// `A^T m` along one axis (rows of `A^T`: `1 1 1 0`, `0 1 -1 -1`).
#[inline(always)]
fn output_1d(m: [f32; 4]) -> [f32; 2] {
    [m[0] + m[1] + m[2], m[1] - m[2] - m[3]]
}

/// `A y`, the adjoint of [`output_1d`].
#[inline(always)]
fn output_1d_adjoint(y: [f32; 2]) -> [f32; 4] {
    [y[0], y[0] + y[1], y[0] - y[1], -y[1]]
}

/// `G g` along one axis (rows of `G`: `1 0 0`, `1/2 1/2 1/2`, `1/2 -1/2 1/2`, `0 0 1`).
#[inline(always)]
fn kernel_1d(g: [f32; 3]) -> [f32; 4] {
    [
        g[0],
        0.5 * (g[0] + g[1] + g[2]),
        0.5 * (g[0] - g[1] + g[2]),
        g[2],
    ]
}

/// `G^T u`, the adjoint of [`kernel_1d`].
#[inline(always)]
fn kernel_1d_adjoint(u: [f32; 4]) -> [f32; 3] {
    [
        u[0] + 0.5 * (u[1] + u[2]),
        0.5 * (u[1] - u[2]),
        0.5 * (u[1] + u[2]) + u[3],
    ]
}

/// `U = G g G^T` of every kernel `w [out, in, 3, 3]`, as `[16, out, in]`.
fn transformed_kernels(w: &[f32], cout: usize, cin: usize) -> Vec<f32> {
    let mut u = vec![0f32; XI * cout * cin];
    for (kc, g) in w.chunks_exact(9).enumerate() {
        // down the columns, then along the rows
        let cols: [[f32; 4]; 3] = std::array::from_fn(|b| kernel_1d([g[b], g[3 + b], g[6 + b]]));
        for i in 0..4 {
            let row = kernel_1d([cols[0][i], cols[1][i], cols[2][i]]);
            for (j, &v) in row.iter().enumerate() {
                u[(i * 4 + j) * cout * cin + kc] = v;
            }
        }
    }
    u
}

/// The kernel gradient `[out, in, 3, 3]` from `dU [16, out, in]`: `G^T dU G` per kernel.
fn kernel_gradient(du: &[f32], cout: usize, cin: usize) -> Vec<f32> {
    let mut dw = vec![0f32; cout * cin * 9];
    for (kc, dg) in dw.chunks_exact_mut(9).enumerate() {
        let at = |i: usize, j: usize| du[(i * 4 + j) * cout * cin + kc];
        // along the rows, then down the columns
        let rows: [[f32; 3]; 4] =
            std::array::from_fn(|i| kernel_1d_adjoint([at(i, 0), at(i, 1), at(i, 2), at(i, 3)]));
        for b in 0..3 {
            let col = kernel_1d_adjoint([rows[0][b], rows[1][b], rows[2][b], rows[3][b]]);
            for (a, &v) in col.iter().enumerate() {
                dg[a * 3 + b] = v;
            }
        }
    }
    dw
}

/// Tiles of one image: rows and columns of 2x2 output tiles (a last one half outside the
/// image when a side is odd).
#[derive(Clone, Copy)]
struct Tiles {
    h: usize,
    w: usize,
    rows: usize,
    cols: usize,
}

impl Tiles {
    fn of(g: &Geometry) -> Self {
        Self {
            h: g.h,
            w: g.w,
            rows: g.h.div_ceil(2),
            cols: g.w.div_ceil(2),
        }
    }

    fn count(&self) -> usize {
        self.rows * self.cols
    }

    /// Rows of the padded input the tiles read: `-1 ..= 2 * rows`.
    fn padded_rows(&self) -> usize {
        2 * self.rows + 2
    }

    /// Scratch for one plane's transforms: four values per tile column for every padded
    /// row, and a line of four more.
    fn scratch(&self) -> Vec<f32> {
        vec![0f32; 4 * (self.padded_rows() + 1) * self.cols + 2]
    }

    /// `V = B^T d B` of every tile of one input plane `x [h, w]`: entry `ξ` of tile `t` goes
    /// to `v[ξ * pitch + at + t]`.
    #[inline(always)]
    fn transform_input(
        &self,
        x: &[f32],
        scratch: &mut [f32],
        v: &mut [f32],
        pitch: usize,
        at: usize,
    ) {
        let (tc, pr) = (self.cols, self.padded_rows());
        let (across, line) = scratch.split_at_mut(4 * pr * tc);
        // along each padded row `p` (input row `p - 1`), into `across [p, 4, tc]`. With
        // `e[m]` input column `2m - 1` and `o[m]` column `2m` (zero outside the image),
        // tile column `m` reads `e[m], o[m], e[m + 1], o[m + 1]`; the row is split into
        // `e` and `o` first, one loop each, which vectorise (the four values read straight
        // from the row, two apart, stay scalar)
        let (e, o) = line[..2 * tc + 2].split_at_mut(tc + 1);
        for (p, across) in across.chunks_exact_mut(4 * tc).enumerate() {
            let y = p.wrapping_sub(1);
            if y >= self.h {
                across.fill(0.0);
                continue;
            }
            let row = &x[y * self.w..][..self.w];
            let (evens, odds) = (row.len().div_ceil(2), row.len() / 2);
            for (o, pair) in o.iter_mut().zip(row.chunks_exact(2)) {
                *o = pair[0];
            }
            for (e, pair) in e[1..].iter_mut().zip(row.chunks_exact(2)) {
                *e = pair[1];
            }
            // the tails: an odd width's last column, and the zeros past the image
            if evens > odds {
                o[odds] = row[row.len() - 1];
            }
            e[0] = 0.0;
            for e in &mut e[odds + 1..] {
                *e = 0.0;
            }
            for o in &mut o[evens..] {
                *o = 0.0;
            }
            let (h0, rest) = across.split_at_mut(tc);
            let (h1, rest) = rest.split_at_mut(tc);
            let (h2, h3) = rest.split_at_mut(tc);
            let (e0, e1, o0, o1) = (&e[..tc], &e[1..], &o[..tc], &o[1..]);
            for (((h0, h1), (h2, h3)), ((a, b), (c, d))) in h0
                .iter_mut()
                .zip(h1.iter_mut())
                .zip(h2.iter_mut().zip(h3.iter_mut()))
                .zip(e0.iter().zip(o0).zip(e1.iter().zip(o1)))
            {
                [*h0, *h1, *h2, *h3] = input_1d([*a, *b, *c, *d]);
            }
        }
        // down the columns: tile row `r` reads padded rows `2r .. 2r + 4`
        for r in 0..self.rows {
            for j in 0..4 {
                let row = |i: usize| &across[((2 * r + i) * 4 + j) * tc..][..tc];
                let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
                // entries `ξ = 4i + j`, `i = 0..4`: rows `4 * pitch` apart
                let (d0, rest) = v[j * pitch + at + r * tc..].split_at_mut(4 * pitch);
                let (d1, rest) = rest.split_at_mut(4 * pitch);
                let (d2, d3) = rest.split_at_mut(4 * pitch);
                for (((d0, d1), (d2, d3)), ((a, b), (c, d))) in d0[..tc]
                    .iter_mut()
                    .zip(d1[..tc].iter_mut())
                    .zip(d2[..tc].iter_mut().zip(d3[..tc].iter_mut()))
                    .zip(r0.iter().zip(r1).zip(r2.iter().zip(r3)))
                {
                    [*d0, *d1, *d2, *d3] = input_1d([*a, *b, *c, *d]);
                }
            }
        }
    }

    /// One output plane `y [h, w]` from the products' entries `m[ξ * pitch + at + t]`:
    /// `A^T M A` per tile, cut to the image.
    #[inline(always)]
    fn transform_output(
        &self,
        m: &[f32],
        pitch: usize,
        at: usize,
        scratch: &mut [f32],
        y: &mut [f32],
    ) {
        let tc = self.cols;
        // down the columns, into `down [2, 4, tc]`
        let down = &mut scratch[..8 * tc];
        for r in 0..self.rows {
            for j in 0..4 {
                let src = |i: usize| &m[(i * 4 + j) * pitch + at + r * tc..][..tc];
                let (m0, m1, m2, m3) = (src(0), src(1), src(2), src(3));
                let (top, bottom) = down.split_at_mut(4 * tc);
                let (top, bottom) = (&mut top[j * tc..][..tc], &mut bottom[j * tc..][..tc]);
                for ((t, b), ((a0, a1), (a2, a3))) in top
                    .iter_mut()
                    .zip(bottom.iter_mut())
                    .zip(m0.iter().zip(m1).zip(m2.iter().zip(m3)))
                {
                    [*t, *b] = output_1d([*a0, *a1, *a2, *a3]);
                }
            }
            // along the rows, into the image's rows `2r` and `2r + 1`
            for (half, d) in down.chunks_exact(4 * tc).enumerate() {
                let row_y = 2 * r + half;
                if row_y >= self.h {
                    break;
                }
                let (d0, d1, d2, d3) = (&d[..tc], &d[tc..2 * tc], &d[2 * tc..3 * tc], &d[3 * tc..]);
                let row = &mut y[row_y * self.w..][..self.w];
                let mut pairs = row.chunks_exact_mut(2);
                for (pair, ((a0, a1), (a2, a3))) in
                    (&mut pairs).zip(d0.iter().zip(d1).zip(d2.iter().zip(d3)))
                {
                    let [e, o] = output_1d([*a0, *a1, *a2, *a3]);
                    pair[0] = e;
                    pair[1] = o;
                }
                // an odd width: the last tile's first column only
                if let [last] = pairs.into_remainder() {
                    *last = output_1d([d0[tc - 1], d1[tc - 1], d2[tc - 1], d3[tc - 1]])[0];
                }
            }
        }
    }

    /// `dM = A dY A^T` of every tile of one output-gradient plane `dy [h, w]`, entry `ξ` of
    /// tile `t` to `dm[ξ * pitch + at + t]` (outside the image `dY` is zero).
    #[inline(always)]
    fn transform_output_gradient(
        &self,
        dy: &[f32],
        scratch: &mut [f32],
        dm: &mut [f32],
        pitch: usize,
        at: usize,
    ) {
        let (tc, w) = (self.cols, self.w);
        // along the image's rows `2r` and `2r + 1`, into `across [2, 4, tc]`
        let across = &mut scratch[..8 * tc];
        for r in 0..self.rows {
            for (half, across) in across.chunks_exact_mut(4 * tc).enumerate() {
                let row_y = 2 * r + half;
                if row_y >= self.h {
                    across.fill(0.0);
                    continue;
                }
                let row = &dy[row_y * w..][..w];
                let (a0, rest) = across.split_at_mut(tc);
                let (a1, rest) = rest.split_at_mut(tc);
                let (a2, a3) = rest.split_at_mut(tc);
                let pairs = row.chunks_exact(2);
                // an odd width: the last tile's second column is outside
                let last = pairs.remainder().first().map(|&e| [e, 0.0]);
                for (pair, ((a0, a1), (a2, a3))) in pairs.chain(last.as_ref().map(|l| &l[..])).zip(
                    a0.iter_mut()
                        .zip(a1.iter_mut())
                        .zip(a2.iter_mut().zip(a3.iter_mut())),
                ) {
                    [*a0, *a1, *a2, *a3] = output_1d_adjoint([pair[0], pair[1]]);
                }
            }
            // down the columns
            let (top, bottom) = across.split_at(4 * tc);
            for j in 0..4 {
                let (y0, y1) = (&top[j * tc..][..tc], &bottom[j * tc..][..tc]);
                let dst = |i: usize| (i * 4 + j) * pitch + at + r * tc;
                for (d, &a) in dm[dst(0)..][..tc].iter_mut().zip(y0) {
                    *d = a;
                }
                for (d, (a, b)) in dm[dst(1)..][..tc].iter_mut().zip(y0.iter().zip(y1)) {
                    *d = a + b;
                }
                for (d, (a, b)) in dm[dst(2)..][..tc].iter_mut().zip(y0.iter().zip(y1)) {
                    *d = a - b;
                }
                for (d, &b) in dm[dst(3)..][..tc].iter_mut().zip(y1) {
                    *d = -b;
                }
            }
        }
    }

    /// One input-gradient plane `dx [h, w]` from `dV`'s entries `dv[ξ * pitch + at + t]`:
    /// `B dV B^T` per tile, the overlapping patches summed, cut to the image.
    #[inline(always)]
    fn transform_input_gradient(
        &self,
        dv: &[f32],
        pitch: usize,
        at: usize,
        scratch: &mut [f32],
        dx: &mut [f32],
    ) {
        let (tc, pr, w) = (self.cols, self.padded_rows(), self.w);
        let (across, line) = scratch.split_at_mut(4 * pr * tc);
        // down the columns, into `across [p, 4, tc]`: tile row `r` writes padded rows
        // `2r .. 2r + 4`, adding to the two the row before wrote
        for r in 0..self.rows {
            for j in 0..4 {
                let src = |i: usize| &dv[(i * 4 + j) * pitch + at + r * tc..][..tc];
                let (v0, v1, v2, v3) = (src(0), src(1), src(2), src(3));
                let row = |i: usize| ((2 * r + i) * 4 + j) * tc;
                let (first, second) = (row(0), row(1));
                let (third, fourth) = (row(2), row(3));
                if r == 0 {
                    for (d, &a) in across[first..][..tc].iter_mut().zip(v0) {
                        *d = a;
                    }
                    for (d, ((a, b), c)) in across[second..][..tc]
                        .iter_mut()
                        .zip(v1.iter().zip(v2).zip(v3))
                    {
                        *d = a - b + c;
                    }
                } else {
                    for (d, &a) in across[first..][..tc].iter_mut().zip(v0) {
                        *d += a;
                    }
                    for (d, ((a, b), c)) in across[second..][..tc]
                        .iter_mut()
                        .zip(v1.iter().zip(v2).zip(v3))
                    {
                        *d += a - b + c;
                    }
                }
                for (d, ((a, b), c)) in across[third..][..tc]
                    .iter_mut()
                    .zip(v1.iter().zip(v2).zip(v0))
                {
                    *d = a + b - c;
                }
                for (d, &a) in across[fourth..][..tc].iter_mut().zip(v3) {
                    *d = -a;
                }
            }
        }
        // along each padded row inside the image: tile column `t` adds the adjoint of its
        // four values, `s0..s3`, into padded columns `2t .. 2t + 4`, so input column `2q`
        // (padded `2q + 1`) is `s1[q] + s3[q - 1]` and input column `2q + 1` is
        // `s0[q + 1] + s2[q]`. `s0` ends with a zero (no tile past the last), `s3` is kept
        // shifted by one and starts with one (no tile before the first).
        let line = &mut line[..4 * tc + 2];
        let (s0, rest) = line.split_at_mut(tc + 1);
        let (s3, rest) = rest.split_at_mut(tc + 1);
        let (s1, s2) = rest.split_at_mut(tc);
        s0[tc] = 0.0;
        s3[0] = 0.0;
        for p in 1..=self.h {
            let a = &across[p * 4 * tc..][..4 * tc];
            let (t0, t1, t2, t3) = (&a[..tc], &a[tc..2 * tc], &a[2 * tc..3 * tc], &a[3 * tc..]);
            for ((((d0, d1), (d2, d3)), (a0, a1)), (a2, a3)) in s0[..tc]
                .iter_mut()
                .zip(s1.iter_mut())
                .zip(s2.iter_mut().zip(s3[1..].iter_mut()))
                .zip(t0.iter().zip(t1))
                .zip(t2.iter().zip(t3))
            {
                [*d0, *d1, *d2, *d3] = input_1d_adjoint([*a0, *a1, *a2, *a3]);
            }
            let row = &mut dx[(p - 1) * w..][..w];
            let mut pairs = row.chunks_exact_mut(2);
            for ((pair, (a1, a3)), (a0, a2)) in (&mut pairs)
                .zip(s1.iter().zip(&s3[..tc]))
                .zip(s0[1..].iter().zip(s2.iter()))
            {
                pair[0] = a1 + a3;
                pair[1] = a0 + a2;
            }
            // an odd width: the last tile's second column is outside
            if let [last] = pairs.into_remainder() {
                *last = s1[tc - 1] + s3[tc - 1];
            }
        }
    }
}

/// One of the four transforms over several images' planes at once. `ld` is the row pitch of
/// a stacked scratch `[16, channels, ld]`; the products' own results are contiguous,
/// `[16, channels, images * tiles]`; image `b`'s tiles are columns `b * tiles ..`.
enum Pass<'a> {
    /// `V` of the inputs `x [n, in, h, w]`.
    OfInputs {
        x: &'a [f32],
        v: &'a mut [f32],
        ld: usize,
    },
    /// The outputs `[n, out, h, w]` from the products `M`.
    ToOutputs { m: &'a [f32], out: &'a mut [f32] },
    /// `dM` of the output gradients `dy [n, out, h, w]`.
    OfOutputGradients {
        dy: &'a [f32],
        dm: &'a mut [f32],
        ld: usize,
    },
    /// The input gradients `[n, in, h, w]` from the products `dV`.
    ToInputGradients { dv: &'a [f32], dx: &'a mut [f32] },
}

impl Pass<'_> {
    /// Runs the pass with the CPU's widest vector instructions: the loops are short (four to
    /// sixteen tiles a row) and gain most from wider vectors and their shuffles.
    fn run(self, tiles: Tiles, g: &Geometry) {
        with_widest_vectors(Transform {
            tiles,
            g,
            pass: self,
        })
    }
}

struct Transform<'a> {
    tiles: Tiles,
    g: &'a Geometry,
    pass: Pass<'a>,
}

impl pulp::WithSimd for Transform<'_> {
    type Output = ();

    // inlined whole into the function compiled for the chosen instructions, with the
    // transforms (also `inline(always)`) it calls
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let Transform { tiles, g, pass } = self;
        let (plane, nt) = (tiles.h * tiles.w, tiles.count());
        let mut scratch = tiles.scratch();
        match pass {
            Pass::OfInputs { x, v, ld } => {
                for (b, x) in x.chunks_exact(g.cin * plane).enumerate() {
                    for (c, x) in x.chunks_exact(plane).enumerate() {
                        tiles.transform_input(x, &mut scratch, v, g.cin * ld, c * ld + b * nt);
                    }
                }
            }
            Pass::ToOutputs { m, out } => {
                let pitch = out.len() / (g.cout * plane).max(1) * nt;
                for (b, out) in out.chunks_exact_mut(g.cout * plane).enumerate() {
                    for (k, y) in out.chunks_exact_mut(plane).enumerate() {
                        let at = k * pitch + b * nt;
                        tiles.transform_output(m, g.cout * pitch, at, &mut scratch, y);
                    }
                }
            }
            Pass::OfOutputGradients { dy, dm, ld } => {
                for (b, dy) in dy.chunks_exact(g.cout * plane).enumerate() {
                    for (k, dy) in dy.chunks_exact(plane).enumerate() {
                        let at = k * ld + b * nt;
                        tiles.transform_output_gradient(dy, &mut scratch, dm, g.cout * ld, at);
                    }
                }
            }
            Pass::ToInputGradients { dv, dx } => {
                let pitch = dx.len() / (g.cin * plane).max(1) * nt;
                for (b, dx) in dx.chunks_exact_mut(g.cin * plane).enumerate() {
                    for (c, dx) in dx.chunks_exact_mut(plane).enumerate() {
                        let at = c * pitch + b * nt;
                        tiles.transform_input_gradient(dv, g.cin * pitch, at, &mut scratch, dx);
                    }
                }
            }
        }
    }
}

/// Images whose transformed tiles go side by side into one set of products, for a run of
/// `count` images: as im2col's [`Geometry::images_per_product`], with an image's share the
/// larger of its transformed input and output.
fn images_per_product(g: &Geometry, count: usize) -> usize {
    let per_image = (XI * g.cin.max(g.cout) * Tiles::of(g).count()).max(1);
    let most = (g.columns / per_image).clamp(1, count.max(1));
    count.div_ceil(count.max(1).div_ceil(most)).max(1)
}

/// The convolution of `x [batch, in, h, w]` with `w [out, in, 3, 3]`: `[batch, out, h, w]`.
pub(super) fn forward(g: &Geometry, x: &[f32], w: &[f32]) -> candle_core::Result<Vec<f32>> {
    let tiles = Tiles::of(g);
    let (plane, nt) = (g.h * g.w, tiles.count());
    let (image, per_image) = (g.cin * plane, g.cout * plane);
    let u = Tensor::from_vec(
        transformed_kernels(w, g.cout, g.cin),
        (XI, g.cout, g.cin),
        &Device::Cpu,
    )?;
    let mut out = zeros(g.batch * per_image);
    let per_run = g.images_per_run();
    let run = |(r, out): (usize, &mut [f32])| -> candle_core::Result<()> {
        let count = out.len() / per_image;
        let per_product = images_per_product(g, count);
        let mut v = GroupScratch::stacked(XI, g.cin, nt);
        for (i, out) in out.chunks_mut(per_product * per_image).enumerate() {
            let (first, n) = (r * per_run + i * per_product, out.len() / per_image);
            let x = &x[first * image..][..n * image];
            let v = v.fill(n, |v, ld| Pass::OfInputs { x, v, ld }.run(tiles, g))?;
            matmul_with(&u, &v, |m| {
                Pass::ToOutputs { m, out }.run(tiles, g);
                Ok(())
            })?;
        }
        Ok(())
    };
    if per_run < g.batch {
        out.par_chunks_mut(per_run * per_image)
            .enumerate()
            .try_for_each(run)?;
    } else {
        run((0, &mut out))?;
    }
    Ok(out)
}

/// The kernel gradient `[out, in, 3, 3]` and, with `want_dx`, the input gradient, from the
/// output gradient `dy [batch, out, h, w]`.
pub(super) fn backward(
    g: &Geometry,
    x: &[f32],
    want_dx: bool,
    w: &[f32],
    dy: &[f32],
) -> candle_core::Result<(Option<Vec<f32>>, Vec<f32>)> {
    let tiles = Tiles::of(g);
    let (plane, nt) = (g.h * g.w, tiles.count());
    let (image, per_image) = (g.cin * plane, g.cout * plane);
    // `U^T [16, in, out]`, laid out for the input gradient's products
    let u_t = Tensor::from_vec(
        transformed_kernels(w, g.cout, g.cin),
        (XI, g.cout, g.cin),
        &Device::Cpu,
    )?
    .transpose(1, 2)?
    .contiguous()?;
    let mut dx = want_dx.then(|| zeros(g.batch * image));
    let per_run = g.images_per_run();
    // one run of images: its `dU` summed in the order of its images, and the images' input
    // gradients when asked for
    let run = |r: usize, mut dx: Option<&mut [f32]>| -> candle_core::Result<Vec<f32>> {
        let start = r * per_run;
        let count = per_run.min(g.batch - start);
        let per_product = images_per_product(g, count);
        let mut du = vec![0f32; XI * g.cout * g.cin];
        let mut v = GroupScratch::stacked(XI, g.cin, nt);
        let mut dm = GroupScratch::stacked(XI, g.cout, nt);
        for first in (start..start + count).step_by(per_product) {
            let n = per_product.min(start + count - first);
            let x = &x[first * image..][..n * image];
            let v = v.fill(n, |v, ld| Pass::OfInputs { x, v, ld }.run(tiles, g))?;
            let dy = &dy[first * per_image..][..n * per_image];
            let dm = dm.fill(n, |dm, ld| {
                Pass::OfOutputGradients { dy, dm, ld }.run(tiles, g)
            })?;
            matmul_into(&mut du, true, &dm, &v.transpose(1, 2)?)?;
            let Some(dx) = dx.as_deref_mut() else {
                continue;
            };
            let dx = &mut dx[(first - start) * image..][..n * image];
            matmul_with(&u_t, &dm, |dv| {
                Pass::ToInputGradients { dv, dx }.run(tiles, g);
                Ok(())
            })?;
        }
        Ok(du)
    };
    let du = in_runs(g, per_run, dx.as_deref_mut(), XI * g.cout * g.cin, run)?;
    Ok((dx, kernel_gradient(&du, g.cout, g.cin)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// F(2, 3) along one axis, by hand: `d = 1 2 3 4`, `g = 1 -2 1/2` give the correlation
    /// `y0 = 1 - 4 + 1.5 = -1.5`, `y1 = 2 - 6 + 2 = -2`.
    #[test]
    fn one_axis_is_the_correlation() {
        let (d, g) = ([1.0, 2.0, 3.0, 4.0], [1.0, -2.0, 0.5]);
        let (v, u) = (input_1d(d), kernel_1d(g));
        let m: [f32; 4] = std::array::from_fn(|i| v[i] * u[i]);
        assert_eq!(output_1d(m), [-1.5, -2.0]);
    }

    /// Each `*_adjoint` is the transpose of its transform: `<T a, b> = <a, T^T b>`.
    #[test]
    fn adjoints_are_transposes() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut r = || -> f32 { rng.random_range(-1.0..1.0) };
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        for _ in 0..20 {
            let (a4, b4, a2, a3) = (
                [r(), r(), r(), r()],
                [r(), r(), r(), r()],
                [r(), r()],
                [r(), r(), r()],
            );
            let near = |x: f32, y: f32| assert!((x - y).abs() < 1e-6, "{x} vs {y}");
            near(dot(&input_1d(a4), &b4), dot(&a4, &input_1d_adjoint(b4)));
            near(dot(&output_1d(a4), &a2), dot(&a4, &output_1d_adjoint(a2)));
            near(dot(&kernel_1d(a3), &b4), dot(&a3, &kernel_1d_adjoint(b4)));
        }
    }

    /// The fastest choice takes tiles for the layers measured faster with them and leaves
    /// a network's first layer (three colour channels), small channel counts and 4x4 maps
    /// to im2col.
    #[test]
    fn tiles_where_they_pay() {
        let layer = |cin: usize, cout: usize, side: usize| Geometry {
            batch: 32,
            cin,
            h: side,
            w: side,
            cout,
            k: 3,
            stride: 1,
            pad: 1,
            columns: 1 << 18,
            algorithm: Algorithm::Fastest,
        };
        for (cin, cout, side) in [(32, 32, 32), (64, 64, 16), (128, 128, 8), (256, 256, 8)] {
            assert!(applies(&layer(cin, cout, side)), "{cin}->{cout} at {side}");
        }
        for (cin, cout, side) in [
            (3, 32, 32),
            (16, 16, 32),
            (32, 32, 16),
            (64, 64, 8),
            (256, 256, 4),
        ] {
            assert!(!applies(&layer(cin, cout, side)), "{cin}->{cout} at {side}");
        }
        let strided = Geometry {
            stride: 2,
            ..layer(64, 64, 32)
        };
        assert!(!applies(&strided));
    }

    /// Output, input gradient and kernel gradient equal im2col's (which the tests in `conv`
    /// check against candle's conv2d) for even, odd, non-square and one-pixel planes, one
    /// to three images, one image per product and several.
    #[test]
    fn tiles_match_im2col() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for (batch, cin, cout, h, w, columns) in [
            (1, 8, 1, 1, 1, 1),
            (2, 8, 3, 1, 2, 1),
            (1, 9, 2, 2, 2, 1),
            (3, 8, 4, 5, 7, 1),
            (3, 10, 3, 8, 6, 1 << 18),
            (2, 12, 6, 9, 9, 1 << 18),
            (3, 16, 8, 32, 32, 1 << 18),
        ] {
            let direct = Geometry {
                batch,
                cin,
                h,
                w,
                cout,
                k: 3,
                stride: 1,
                pad: 1,
                columns,
                algorithm: Algorithm::Im2col,
            };
            let tiled = Geometry {
                algorithm: Algorithm::Winograd,
                ..direct
            };
            assert!(applies(&tiled) && !applies(&direct));
            let mut random =
                |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-1.0..1.0)).collect() };
            let x = random(batch * cin * h * w);
            let k = random(cout * cin * 9);
            let dy = random(batch * cout * h * w);
            let run = |g: &Geometry| {
                let (y, kept) = g.forward(&x, &k, false).unwrap();
                let (dx, dw) = g.backward(&x, true, &k, &dy, &kept).unwrap();
                (y, dx.unwrap(), dw)
            };
            let (a, b) = (run(&tiled), run(&direct));
            // against the largest entry: a kernel gradient entry sums `batch * h * w`
            // products, and one near zero carries the rounding of terms far larger
            let near = |a: &[f32], b: &[f32], what: &str| {
                assert_eq!(a.len(), b.len(), "{what}");
                let scale = b.iter().fold(1f32, |m, y| m.max(y.abs()));
                for (x, y) in a.iter().zip(b) {
                    assert!(
                        (x - y).abs() <= 1e-5 * scale,
                        "{what}, {h}x{w}, {cin}->{cout}: {x} vs {y} (largest {scale})"
                    );
                }
            };
            near(&a.0, &b.0, "output");
            near(&a.1, &b.1, "input gradient");
            near(&a.2, &b.2, "kernel gradient");
        }
    }
}
