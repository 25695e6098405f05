//! Privacy of the sum of the distributed discrete Gaussian, in Rényi DP, for a planned
//! minimum number of survivors.
//!
//! Kairouz, Liu, Steinke (arXiv 2102.06387), Proposition 14: `n` nodes each adding
//! `N_Z(0, σ²)^D` to vectors of L2 sensitivity `Δ₂` and L1 sensitivity `Δ₁` (ring units)
//! satisfy `(α, ε(α))`-RDP with
//!
//! ```text
//! τ    = 10 · Σ_{k=1}^{n-1} exp(-2π²σ² · k/(k+1))
//! ε(α) = min( α/2·Δ₂²/(nσ²) + τD,
//!             α/2·(Δ₂²/(nσ²) + 2τ·Δ₁/(√n σ) + τ²D),
//!             α/2·(Δ₂/(√n σ) + τ√D)² )
//! ```
//!
//! `τ` measures how far the sum of discrete Gaussians is from one discrete Gaussian; it
//! vanishes quickly once `σ >= 1`. Sensitivities are those after conditional rounding:
//! `Δ₂` = [`DdgPlan::l2_bound`], `Δ₁ = Δ₂·min(√D, Δ₂)`. Rounds compose additively in RDP, and
//! `(ε, δ)` follows from the conversion of Canonne, Kamath, Steinke (2020):
//! `ε = min_α  R(α) + ln((α-1)/α) - (ln δ + ln α)/(α-1)`.

use serde::{Deserialize, Serialize};

use super::mechanism::DdgPlan;
use crate::error::Error;

/// Orders the conversion searches over.
pub fn orders() -> Vec<f64> {
    let mut v: Vec<f64> = (1..100).map(|i| 1.0 + i as f64 / 100.0).collect(); // 1.01..1.99
    v.extend((2..=256).map(|i| i as f64));
    v.extend([512.0, 1024.0]);
    v
}

/// `τ` of Proposition 14 for `n` nodes each with variance `node_var` (ring units).
pub fn tau(node_var: f64, n: u32) -> f64 {
    let c = 2.0 * std::f64::consts::PI.powi(2) * node_var;
    10.0 * (1..n)
        .map(|k| (-c * k as f64 / (k as f64 + 1.0)).exp())
        .sum::<f64>()
}

/// RDP of one round at order `alpha` when `survivors` nodes are summed.
pub fn rdp(plan: &DdgPlan, survivors: u32, alpha: f64) -> f64 {
    let var = plan.node_variance.value();
    let d = plan.padded_dim as f64;
    let l2 = plan.l2_bound;
    let l1 = l2 * d.sqrt().min(l2);
    let t = tau(var, survivors);
    let sd = (survivors as f64 * var).sqrt();
    let (s2, s1) = (l2 / sd, l1 / sd);
    let one = alpha / 2.0 * s2 * s2 + t * d;
    let two = alpha / 2.0 * (s2 * s2 + 2.0 * s1 * t + t * t * d);
    let three = alpha / 2.0 * (s2 + d.sqrt() * t).powi(2);
    one.min(two).min(three)
}

/// `(ε, δ)` over `rounds` rounds, each summing at least `plan.params.min_survivors` nodes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    pub epsilon: f64,
    pub delta: f64,
    /// The RDP order that gave the bound.
    pub order: f64,
}

pub fn epsilon(plan: &DdgPlan, rounds: u32, delta: f64) -> Result<Spent, Error> {
    let n = plan.params.min_survivors;
    epsilon_of_rdp(|a| rounds as f64 * rdp(plan, n, a), delta)
}

/// `(ε, δ)` of a composition whose total RDP at order `α` is `total(α)`, over [`orders`]: the
/// conversion of Canonne, Kamath, Steinke. Rounds of different mechanisms compose by adding
/// their RDP at each order before this conversion.
pub fn epsilon_of_rdp(total: impl Fn(f64) -> f64, delta: f64) -> Result<Spent, Error> {
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::Dp(format!("delta = {delta} must lie in (0, 1)")));
    }
    let mut best = Spent {
        epsilon: f64::INFINITY,
        delta,
        order: f64::NAN,
    };
    for a in orders() {
        let r = total(a);
        let eps = r + ((a - 1.0) / a).ln() - (delta.ln() + a.ln()) / (a - 1.0);
        if eps < best.epsilon {
            best = Spent {
                epsilon: eps.max(0.0),
                delta,
                order: a,
            };
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ddg::mechanism::DdgParams;

    fn plan(stddev: f64, n: u32, bits: u32) -> DdgPlan {
        DdgPlan::new(DdgParams {
            dim: 1 << 12,
            clip: 1.0,
            central_stddev: stddev,
            min_survivors: n,
            max_clients: n,
            modulus_bits: bits,
            k_stddevs: 4.0,
            beta: (-0.5f64).exp(),
            rotation_seed: [1; 32],
        })
        .unwrap()
    }

    #[test]
    fn tau_by_hand() {
        // σ² = 0.05, n = 3: 10·(e^{-2π²·0.05·1/2} + e^{-2π²·0.05·2/3})
        //                 = 10·(e^{-0.493480} + e^{-0.657974}) = 10·(0.610498 + 0.517900).
        let t = tau(0.05, 3);
        assert!((t - 11.28398).abs() < 1e-4, "{t}");
        assert_eq!(tau(4.0, 1), 0.0);
    }

    #[test]
    fn with_ample_noise_it_is_the_gaussian_mechanism() {
        // σ in ring units is large here, so τ underflows and ε(α) = α·Δ₂²/(2nσ²).
        let p = plan(2.0, 10, 32);
        assert!(tau(p.node_variance.value(), 10) < 1e-300);
        let want = 8.0 * p.l2_bound.powi(2) / (2.0 * 10.0 * p.node_variance.value());
        assert!((rdp(&p, 10, 8.0) - want).abs() < 1e-12 * want);
    }

    #[test]
    fn more_noise_or_fewer_rounds_spend_less() {
        let a = epsilon(&plan(1.0, 20, 32), 10, 1e-5).unwrap();
        let b = epsilon(&plan(2.0, 20, 32), 10, 1e-5).unwrap();
        let c = epsilon(&plan(1.0, 20, 32), 5, 1e-5).unwrap();
        assert!(
            b.epsilon < a.epsilon && c.epsilon < a.epsilon,
            "{a:?} {b:?} {c:?}"
        );
        // Relative to the plain Gaussian mechanism with the clip as sensitivity, rounding
        // costs a little: ε is above, but within a few per cent at 32 bits.
        let gauss = epsilon(&plan(1.0, 20, 32), 10, 1e-5).unwrap().epsilon;
        assert!(gauss.is_finite() && gauss > 0.0);
        assert!(epsilon(&plan(1.0, 20, 32), 10, 0.0).is_err());
    }

    #[test]
    fn a_coarse_ring_pays_for_rounding() {
        // With few bits the granularity γ is coarse relative to the clip, the rounded
        // sensitivity bound grows, and so does ε for the same planned noise.
        let fine = epsilon(&plan(1.0, 20, 32), 1, 1e-5).unwrap().epsilon;
        let coarse = epsilon(&plan(1.0, 20, 12), 1, 1e-5).unwrap().epsilon;
        assert!(coarse > fine, "{coarse} <= {fine}");
    }
}
