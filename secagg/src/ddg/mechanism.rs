//! The node and server sides of the distributed discrete Gaussian mechanism (Kairouz, Liu,
//! Steinke 2021, Algorithms 1 and 2).
//!
//! A node: clips its update to L2 norm `c`; pads it to `D = 2^⌈log2 d⌉` and flattens it with
//! the randomized Walsh-Hadamard rotation `x ↦ H·diag(s)·x/√D` (signs `s` from a public seed);
//! scales by `1/γ`; rounds each entry randomly to a neighbouring integer, repeating until the
//! rounded vector's norm is at most `Δ₂` (conditional randomized rounding); adds its share of
//! discrete Gaussian noise `N_Z(0, σ²_node)` per entry; reduces modulo `m = 2^b`. The server
//! lifts the secure sum to `[-m/2, m/2)`, multiplies by `γ` and rotates back.
//!
//! Noise is planned for a minimum number of survivors `n_min`: `σ²_node = σ²/n_min`, so any
//! round summing at least `n_min` nodes carries central variance at least `σ²` — with no
//! node, and not the server, able to remove it. A round with fewer survivors is discarded
//! ([`DdgPlan::check_survivors`]).
//!
//! Modular clipping: `γ` is chosen so that `m ≥ 2k·√(c²n²/D + n(γ²/4 + σ²_node))/γ` for the
//! largest number of nodes `n`, as in the paper's parameter choice: each entry of the rotated
//! sum is then sub-Gaussian within `k` standard deviations of the half-modulus, and wraps
//! around with probability at most `2·exp(-k²/2)` ([`DdgPlan::wrap_probability`]). A wide
//! ring is not made finer than `σ_node/2^20` per unit; the bound then holds with room to spare.

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::sampler::{self, Variance};
use crate::error::Error;

/// What a study plans; [`DdgPlan::new`] derives the rest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DdgParams {
    /// Entries in a model update.
    pub dim: usize,
    /// L2 clipping norm `c` of each node's update.
    pub clip: f64,
    /// Standard deviation of the noise in the sum, per entry, in model units.
    pub central_stddev: f64,
    /// Noise is planned for at least this many surviving nodes.
    pub min_survivors: u32,
    /// Most nodes that can be summed (the modulus must hold them all).
    pub max_clients: u32,
    /// Ring `Z_{2^b}` of the secure sum.
    pub modulus_bits: u32,
    /// Standard deviations between the sum and the wrap-around point (the paper uses 4).
    pub k_stddevs: f64,
    /// Bias bound of conditional randomized rounding (the paper uses `exp(-1/2)`).
    pub beta: f64,
    /// Public seed of the rotation's random signs.
    pub rotation_seed: [u8; 32],
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DdgPlan {
    pub params: DdgParams,
    /// Padded dimension `D`, a power of two.
    pub padded_dim: usize,
    /// Granularity `γ`: one ring unit is worth `γ` in model units.
    pub gamma: f64,
    /// Each node's noise variance in ring units, exactly.
    pub node_variance: Variance,
    /// Bound `Δ₂` on a rounded, scaled update's L2 norm, in ring units.
    pub l2_bound: f64,
}

/// Norm bound after conditional randomized rounding (Kairouz et al., the two bounds of their
/// rounding lemma): `min(c + √D, √(c² + D/4 + √(2 ln(1/β))·(c + √D/2)))`.
pub fn rounded_l2_bound(scaled_clip: f64, beta: f64, dim: usize) -> f64 {
    let d = dim as f64;
    let one = scaled_clip + d.sqrt();
    if beta <= 0.0 {
        return one;
    }
    let two = (scaled_clip.powi(2)
        + d / 4.0
        + (2.0 * (1.0 / beta).ln()).sqrt() * (scaled_clip + d.sqrt() / 2.0))
        .sqrt();
    one.min(two)
}

/// Largest per-node noise standard deviation in ring units.
const MAX_RING_STDDEV: f64 = (1u64 << 20) as f64;

impl DdgPlan {
    pub fn new(params: DdgParams) -> Result<Self, Error> {
        let p = &params;
        let bad = |m: String| Err(Error::Dp(m));
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if p.dim == 0 || !positive(p.clip) || !positive(p.central_stddev) || !positive(p.k_stddevs)
        {
            return bad("dimension, clip, noise and k must be positive".into());
        }
        if !(0.0..1.0).contains(&p.beta) {
            return bad(format!("beta = {} must lie in [0, 1)", p.beta));
        }
        if p.min_survivors == 0 || p.max_clients < p.min_survivors {
            return bad("need 1 <= min_survivors <= max_clients".into());
        }
        if !(2..=63).contains(&p.modulus_bits) {
            return bad(format!(
                "modulus of {} bits: 2..=63 supported",
                p.modulus_bits
            ));
        }
        let padded_dim = p.dim.next_power_of_two();
        let (n, d, k) = (p.max_clients as f64, padded_dim as f64, p.k_stddevs);
        let m = 2f64.powi(p.modulus_bits as i32);
        let node_sd = p.central_stddev / (p.min_survivors as f64).sqrt();
        // m·γ/(2k) >= √(A + n·σ²_node + n·γ²/4) solved for γ.
        let room = m * m / (4.0 * k * k) - n / 4.0;
        if room <= 0.0 {
            return bad(format!(
                "a ring of 2^{} cannot hold the rounding error of {} nodes at {k} standard deviations",
                p.modulus_bits, p.max_clients
            ));
        }
        let a = p.clip * p.clip * n * n / d;
        // Finer than σ_node/2^20 buys nothing (rounding variance is then 2^-42 of the
        // noise) and would push the exact sampler's integers out of range.
        let gamma = ((a + n * node_sd * node_sd) / room)
            .sqrt()
            .max(node_sd / MAX_RING_STDDEV);
        let node_variance = Variance::at_least((node_sd / gamma).powi(2))?;
        let l2_bound = rounded_l2_bound(p.clip / gamma, p.beta, padded_dim);
        Ok(Self {
            params,
            padded_dim,
            gamma,
            node_variance,
            l2_bound,
        })
    }

    fn ring_mask(&self) -> u64 {
        (1u64 << self.params.modulus_bits) - 1
    }

    /// Per-entry probability that the rotated sum wraps around the modulus.
    pub fn wrap_probability(&self) -> f64 {
        2.0 * (-self.params.k_stddevs.powi(2) / 2.0).exp()
    }

    /// Central noise variance of a sum of `survivors` nodes, in model units.
    pub fn central_variance(&self, survivors: u32) -> f64 {
        survivors as f64 * self.node_variance.value() * self.gamma * self.gamma
    }

    /// A round that sums fewer nodes than planned carries less noise than accounted for.
    pub fn check_survivors(&self, survivors: usize) -> Result<(), Error> {
        if survivors < self.params.min_survivors as usize {
            return Err(Error::Dp(format!(
                "{survivors} nodes survived, noise was planned for {}: discard the round",
                self.params.min_survivors
            )));
        }
        if survivors > self.params.max_clients as usize {
            return Err(Error::Dp(format!(
                "{survivors} nodes exceed the {} the modulus was sized for",
                self.params.max_clients
            )));
        }
        Ok(())
    }

    fn signs(&self) -> Vec<f64> {
        let mut rng = ChaCha20Rng::from_seed(self.params.rotation_seed);
        let mut out = Vec::with_capacity(self.padded_dim);
        while out.len() < self.padded_dim {
            let mut bits = rng.next_u64();
            for _ in 0..64.min(self.padded_dim - out.len()) {
                out.push(if bits & 1 == 1 { -1.0 } else { 1.0 });
                bits >>= 1;
            }
        }
        out
    }

    /// Algorithm 1: one node's update, ready for secure aggregation in `Z_{2^b}`.
    pub fn encode<R: Rng>(&self, update: &[f32], rng: &mut R) -> Result<Vec<u64>, Error> {
        if update.len() != self.params.dim {
            return Err(Error::VectorLength {
                expected: self.params.dim,
                got: update.len(),
            });
        }
        if update.iter().any(|v| !v.is_finite()) {
            return Err(Error::Dp("update has a non-finite entry".into()));
        }
        // Clip.
        let norm = update
            .iter()
            .map(|&v| (v as f64).powi(2))
            .sum::<f64>()
            .sqrt();
        let factor = if norm > self.params.clip {
            self.params.clip / norm
        } else {
            1.0
        };
        let mut x: Vec<f64> = update.iter().map(|&v| v as f64 * factor).collect();
        x.resize(self.padded_dim, 0.0);
        // Flatten, then scale to ring units.
        for (v, s) in x.iter_mut().zip(self.signs()) {
            *v *= s;
        }
        walsh_hadamard(&mut x);
        let scale = 1.0 / ((self.padded_dim as f64).sqrt() * self.gamma);
        x.iter_mut().for_each(|v| *v *= scale);
        // Conditional randomized rounding: unbiased per entry, retried until the norm fits.
        let bound2 = self.l2_bound * self.l2_bound;
        let mut z = vec![0i64; self.padded_dim];
        let mut tries = 0;
        loop {
            let mut norm2 = 0.0;
            for (zi, &xi) in z.iter_mut().zip(&x) {
                let floor = xi.floor();
                let u = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
                *zi = floor as i64 + (u < xi - floor) as i64;
                norm2 += (*zi as f64).powi(2);
            }
            if norm2 <= bound2 {
                break;
            }
            tries += 1;
            if tries == 1000 {
                return Err(Error::Dp(
                    "conditional rounding did not meet its norm bound".into(),
                ));
            }
        }
        // This node's share of the noise, then into the ring.
        let mask = self.ring_mask();
        Ok(z.iter()
            .map(|&zi| (zi.wrapping_add(sampler::sample(rng, self.node_variance)) as u64) & mask)
            .collect())
    }

    /// The secure sum lifted to signed ring units `[-m/2, m/2)`, before rotation and scaling.
    pub fn lift(&self, sum: &[u64]) -> Vec<i64> {
        let m = 1i64 << self.params.modulus_bits;
        let mask = self.ring_mask();
        sum.iter()
            .map(|&v| {
                let v = (v & mask) as i64;
                if v >= m / 2 {
                    v - m
                } else {
                    v
                }
            })
            .collect()
    }

    /// Algorithm 2: the noisy sum of the surviving nodes' clipped updates, in model units.
    pub fn decode(&self, sum: &[u64]) -> Result<Vec<f32>, Error> {
        if sum.len() != self.padded_dim {
            return Err(Error::VectorLength {
                expected: self.padded_dim,
                got: sum.len(),
            });
        }
        let mut y: Vec<f64> = self.lift(sum).into_iter().map(|v| v as f64).collect();
        walsh_hadamard(&mut y);
        let scale = self.gamma / (self.padded_dim as f64).sqrt();
        Ok(y.iter()
            .zip(self.signs())
            .take(self.params.dim)
            .map(|(v, s)| (v * scale * s) as f32)
            .collect())
    }
}

/// In-place unnormalised fast Walsh-Hadamard transform (`H·H = D·I`).
fn walsh_hadamard(x: &mut [f64]) {
    let n = x.len();
    debug_assert!(n.is_power_of_two());
    let mut h = 1;
    while h < n {
        for block in x.chunks_mut(2 * h) {
            let (a, b) = block.split_at_mut(h);
            for (u, v) in a.iter_mut().zip(b.iter_mut()) {
                let (p, q) = (*u, *v);
                *u = p + q;
                *v = p - q;
            }
        }
        h *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn params(dim: usize, n: u32) -> DdgParams {
        DdgParams {
            dim,
            clip: 1.0,
            central_stddev: 0.5,
            min_survivors: n,
            max_clients: n,
            modulus_bits: 20,
            k_stddevs: 4.0,
            beta: (-0.5f64).exp(),
            rotation_seed: [5; 32],
        }
    }

    #[test]
    fn hadamard_is_its_own_inverse_up_to_d() {
        let mut x = vec![1.0, -2.0, 0.5, 3.0];
        walsh_hadamard(&mut x);
        // Sylvester H4 rows (1,1,1,1), (1,-1,1,-1), (1,1,-1,-1), (1,-1,-1,1) times (1, -2, .5, 3).
        assert_eq!(x, vec![2.5, 0.5, -4.5, 5.5]);
        walsh_hadamard(&mut x);
        assert_eq!(x, vec![4.0, -8.0, 2.0, 12.0]);
    }

    #[test]
    fn the_modulus_holds_the_sum_at_k_standard_deviations() {
        let plan = DdgPlan::new(params(1000, 10)).unwrap();
        let p = &plan.params;
        let (n, d) = (p.max_clients as f64, plan.padded_dim as f64);
        let sd = (p.clip.powi(2) * n * n / d
            + n * (plan.gamma.powi(2) / 4.0 + (p.central_stddev.powi(2) / n)))
            .sqrt();
        let m = 2f64.powi(p.modulus_bits as i32);
        assert!((2.0 * p.k_stddevs * sd / plan.gamma - m).abs() / m < 1e-9);
        // And the planned noise is met, never undershot (the variance is rounded up).
        assert!(plan.central_variance(10) >= 0.25);
        assert!(plan.central_variance(10) < 0.25 * 1.001);
        assert!((plan.wrap_probability() - 2.0 * (-8f64).exp()).abs() < 1e-15);
    }

    #[test]
    fn a_ring_too_small_for_the_nodes_is_refused() {
        let mut p = params(100, 10);
        p.modulus_bits = 3; // m = 8 < k·√n = 4·√10: the rounding error alone overflows
        assert!(DdgPlan::new(p).is_err());
    }

    #[test]
    fn rounds_below_the_planned_survivors_are_discarded() {
        let mut p = params(16, 10);
        p.min_survivors = 8;
        let plan = DdgPlan::new(p).unwrap();
        assert!(plan.check_survivors(7).is_err());
        assert!(plan.check_survivors(8).is_ok());
        assert!(plan.check_survivors(11).is_err());
    }
}
