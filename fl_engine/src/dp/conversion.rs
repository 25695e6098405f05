//! From RDP to (ε, δ)-DP.
//!
//! ```text
//! Classic  (Mironov 2017, Prop. 3):       ε = min_α  RDP(α) + log(1/δ) / (α - 1)
//! Improved (Balle et al. 2020, Prop. 12;   ε = min_α  RDP(α) + log((α-1)/α) - (log δ + log α) / (α - 1)
//!           Canonne, Kamath, Steinke 2020)
//! ```
//!
//! `Improved` is never worse for α > 1 and is what dp-accounting's `RdpAccountant` reports; like
//! dp-accounting it skips orders α ≤ 1.01 (numerically unstable there) and returns ε = 0 when the
//! KL bound `δ ≥ sqrt(1 - e^{-RDP(α)})` already holds. `Classic` is what older tools (TF Privacy's
//! first releases, Opacus before 1.0) and many papers report, including the FL-EHDS Table V
//! figures. Both take the minimum over the order grid and report the minimising order (first one
//! on ties).
//!
//! ```
//! use fl_engine::dp::{rdp_to_epsilon, RdpConversion};
//! // One Gaussian step with σ = 1 at order 2: RDP = 1.
//! let e = rdp_to_epsilon(&[2.0], &[1.0], 1e-5, RdpConversion::Classic).unwrap();
//! assert!((e.epsilon - (1.0 + 1e5f64.ln())).abs() < 1e-12);
//! ```

use serde::{Deserialize, Serialize};

use super::error::{require_delta, DpError, Result};

/// Which RDP → (ε, δ) conversion to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RdpConversion {
    /// `ε = RDP(α) + log(1/δ)/(α-1)`.
    Classic,
    /// `ε = RDP(α) + log((α-1)/α) - (log δ + log α)/(α-1)` (tighter; dp-accounting's choice).
    #[default]
    Improved,
}

/// An (ε, δ) guarantee and the RDP order that achieves it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrivacySpent {
    /// ε; +∞ when no order gives a finite bound.
    pub epsilon: f64,
    /// δ the ε was computed at.
    pub delta: f64,
    /// Minimising RDP order.
    pub order: f64,
}

/// Converts RDP values (one per order) to the smallest ε at `delta`.
pub fn rdp_to_epsilon(
    orders: &[f64],
    rdp: &[f64],
    delta: f64,
    conversion: RdpConversion,
) -> Result<PrivacySpent> {
    require_delta(delta)?;
    if orders.len() != rdp.len() || orders.is_empty() {
        return Err(DpError::InvalidParameter {
            name: "rdp",
            value: rdp.len() as f64,
            requirement: "one RDP value per order, at least one order",
        });
    }
    let mut best = PrivacySpent {
        epsilon: f64::INFINITY,
        delta,
        order: orders[0],
    };
    for (&a, &r) in orders.iter().zip(rdp) {
        let eps = epsilon_at_order(a, r, delta, conversion);
        if eps < best.epsilon {
            best.epsilon = eps;
            best.order = a;
        }
    }
    best.epsilon = best.epsilon.max(0.0);
    Ok(best)
}

/// ε from one order; +∞ where the bound does not apply (NaN RDP included).
fn epsilon_at_order(a: f64, r: f64, delta: f64, conversion: RdpConversion) -> f64 {
    if r.is_nan() || a <= 1.0 {
        return f64::INFINITY;
    }
    match conversion {
        RdpConversion::Classic => r + (1.0 / delta).ln() / (a - 1.0),
        RdpConversion::Improved => {
            if r < 0.0 || delta * delta + (-r).exp_m1() > 0.0 {
                0.0
            } else if a > 1.01 {
                r + (-1.0 / a).ln_1p() - (delta * a).ln() / (a - 1.0)
            } else {
                f64::INFINITY
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn improved_is_never_worse() {
        let orders = [1.5, 2.0, 4.0, 16.0];
        for r in [0.01, 0.3, 2.0, 40.0] {
            let rdp: Vec<f64> = orders.iter().map(|a| r * a).collect();
            let c = rdp_to_epsilon(&orders, &rdp, 1e-5, RdpConversion::Classic).unwrap();
            let i = rdp_to_epsilon(&orders, &rdp, 1e-5, RdpConversion::Improved).unwrap();
            assert!(i.epsilon <= c.epsilon, "{i:?} vs {c:?}");
        }
    }

    #[test]
    fn kl_shortcut_gives_zero_and_infinite_rdp_gives_infinity() {
        let e = rdp_to_epsilon(&[2.0], &[1e-12], 1e-5, RdpConversion::Improved).unwrap();
        assert_eq!(e.epsilon, 0.0);
        let e = rdp_to_epsilon(&[2.0], &[f64::INFINITY], 1e-5, RdpConversion::Improved).unwrap();
        assert_eq!(e.epsilon, f64::INFINITY);
    }

    #[test]
    fn validates() {
        assert!(rdp_to_epsilon(&[2.0], &[1.0], 0.0, RdpConversion::Classic).is_err());
        assert!(rdp_to_epsilon(&[2.0], &[1.0], 1.0, RdpConversion::Classic).is_err());
        assert!(rdp_to_epsilon(&[2.0], &[], 1e-5, RdpConversion::Classic).is_err());
    }
}
