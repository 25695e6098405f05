//! Rényi DP of the Poisson-subsampled Gaussian mechanism (Mironov, Talwar, Zhang 2019).
//!
//! One step releases `f(B) + N(0, σ²)` (sensitivity 1) on a batch `B` Poisson-sampled with rate
//! q. With `μ0 = N(0, σ²)`, `μ1 = N(1, σ²)` and `μ = (1-q)μ0 + qμ1`, its RDP at order α is
//!
//! ```text
//! RDP(α) = log(A_α) / (α - 1),    A_α = E_{z~μ0}[(μ(z)/μ0(z))^α]
//! integer α:  A_α = Σ_{i=0..α} C(α,i) (1-q)^{α-i} q^i exp((i² - i) / (2σ²))
//! q = 1:      RDP(α) = α / (2σ²)
//! ```
//!
//! Fractional α uses the two-sided series of MTZ19 §3.3, with `z0 = σ² log(1/q - 1) + 1/2`,
//! `j = α - i` and `C(α,i)` the generalised (signed) binomial coefficient:
//!
//! ```text
//! A_α = Σ_i C(α,i) q^i (1-q)^j e^{(i²-i)/2σ²} ½ erfc((i-z0)/(√2σ))
//!     + Σ_i C(α,i) q^j (1-q)^i e^{(j²-j)/2σ²} ½ erfc((z0-j)/(√2σ))
//! ```
//!
//! summed in log space with signs, stopping once both terms are below e^-30, as Opacus 1.6 and
//! the original TF Privacy code do; this agrees with direct numerical integration of `A_α` to
//! ~1e-10. Should cancellation make a partial sum non-positive, or the series not end within 10⁵
//! terms, the order falls back to the sum of absolute terms (dp-accounting 0.6's method: an upper
//! bound, so conservative); if that fails too, the order's RDP is +∞ and conversion ignores it.
//! Composition over T steps multiplies RDP by T.
//!
//! ```
//! use fl_engine::dp::rdp_sampled_gaussian;
//! let r = rdp_sampled_gaussian(1.0, 2.0, &[2.0, 8.0]).unwrap();
//! assert_eq!(r, vec![2.0 / 8.0, 8.0 / 8.0]); // α / (2σ²)
//! ```

use super::error::{require_positive, require_rate, DpError, Result};

/// Largest order accepted: integer orders cost α + 1 terms each.
pub const MAX_ORDER: f64 = 10_000.0;
/// Term cap of the absolute-value series (dp-accounting's cap).
const MAX_FRAC_TERMS: usize = 1000;
/// Term cap of the signed series: its terms decay only like i^-(α+1) (alternating), so orders
/// near 1 need a few thousand terms to reach e^-30.
const MAX_SIGNED_TERMS: usize = 100_000;

/// Orders used by default: 1.25–4.5 in fine steps, every integer 5..=64, then 128 and 256
/// (the grid of TensorFlow Privacy's `compute_dp_sgd_privacy`).
pub fn default_orders() -> Vec<f64> {
    let mut orders = vec![1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5];
    orders.extend((5..=64).map(f64::from));
    orders.extend([128.0, 256.0]);
    orders
}

/// Checks orders are finite, in (1, MAX_ORDER] and that there is at least one.
pub(crate) fn validate_orders(orders: &[f64]) -> Result<()> {
    if orders.is_empty() {
        return Err(DpError::InvalidParameter {
            name: "orders",
            value: 0.0,
            requirement: "at least one RDP order is needed",
        });
    }
    match orders.iter().find(|&&a| !(a > 1.0 && a <= MAX_ORDER)) {
        Some(&a) => Err(DpError::InvalidParameter {
            name: "order",
            value: a,
            requirement: "RDP orders must satisfy 1 < order <= 10000",
        }),
        None => Ok(()),
    }
}

/// RDP of one step of the sampled Gaussian mechanism at each order (sensitivity 1).
pub fn rdp_sampled_gaussian(q: f64, noise_multiplier: f64, orders: &[f64]) -> Result<Vec<f64>> {
    require_rate("sampling_rate", q)?;
    require_positive("noise_multiplier", noise_multiplier)?;
    validate_orders(orders)?;
    let sigma = noise_multiplier;
    Ok(orders
        .iter()
        .map(|&alpha| {
            if q == 1.0 {
                alpha / (2.0 * sigma * sigma)
            } else if alpha.fract() == 0.0 {
                log_a_int(q, sigma, alpha as u64) / (alpha - 1.0)
            } else {
                log_a_frac(q, sigma, alpha) / (alpha - 1.0)
            }
        })
        .collect())
}

/// log(e^x + e^y) without overflow.
fn log_add(x: f64, y: f64) -> f64 {
    let (a, b) = if x < y { (x, y) } else { (y, x) };
    if a == f64::NEG_INFINITY {
        return b;
    }
    (a - b).exp().ln_1p() + b
}

/// log |C(n, k)| for real n, via log|Γ| (as scipy's `gammaln`).
fn log_comb(n: f64, k: f64) -> f64 {
    libm::lgamma(n + 1.0) - libm::lgamma(k + 1.0) - libm::lgamma(n - k + 1.0)
}

/// log(erfc(x)), accurate where erfc underflows.
pub(crate) fn log_erfc(x: f64) -> f64 {
    if x < 25.0 {
        // musl's erfc keeps full relative accuracy down to ~1e-300 (x ≈ 26).
        return libm::erfc(x).ln();
    }
    // Asymptotic series erfc(x) = e^{-x²}/(x√π) Σ_n (-1)^n (2n-1)!!/(2x²)^n; at x ≥ 25 the
    // fifth term is below 1e-20 relative.
    let t = 1.0 / (2.0 * x * x);
    let series = 1.0 - t * (1.0 - 3.0 * t * (1.0 - 5.0 * t * (1.0 - 7.0 * t)));
    -x * x - x.ln() - 0.5 * std::f64::consts::PI.ln() + series.ln()
}

/// log(A_α) for integer α, 0 < q < 1.
fn log_a_int(q: f64, sigma: f64, alpha: u64) -> f64 {
    let (log_q, log_1mq) = (q.ln(), (-q).ln_1p());
    let n = alpha as f64;
    (0..=alpha).fold(f64::NEG_INFINITY, |log_a, i| {
        let i = i as f64;
        let s =
            log_comb(n, i) + i * log_q + (n - i) * log_1mq + (i * i - i) / (2.0 * sigma * sigma);
        log_add(log_a, s)
    })
}

/// log(e^x - e^y) for x ≥ y; `None` when x < y (the partial sum would be negative).
fn log_sub(x: f64, y: f64) -> Option<f64> {
    if x < y {
        None
    } else if y == f64::NEG_INFINITY {
        Some(x)
    } else if x == y {
        Some(f64::NEG_INFINITY)
    } else {
        Some(x + (-(y - x).exp()).ln_1p())
    }
}

/// Terms `(log|s0_i|, log|s1_i|, sign)` of the fractional-order series.
struct FracTerms {
    log_q: f64,
    log_1mq: f64,
    z0: f64,
    two_var: f64,
    scale: f64,
    alpha: f64,
}

impl FracTerms {
    fn new(q: f64, sigma: f64, alpha: f64) -> Self {
        Self {
            log_q: q.ln(),
            log_1mq: (-q).ln_1p(),
            z0: sigma * sigma * (1.0 / q - 1.0).ln() + 0.5,
            two_var: 2.0 * sigma * sigma,
            scale: std::f64::consts::SQRT_2 * sigma,
            alpha,
        }
    }

    fn term(&self, i: usize) -> (f64, f64, bool) {
        let alpha = self.alpha;
        // C(α, i) has one negative factor (α - k) for each k in (α, i - 1].
        let negative_factors = (i as f64 - 1.0 - alpha.floor()).max(0.0) as u64;
        let positive = negative_factors.is_multiple_of(2);
        let i = i as f64;
        let j = alpha - i;
        let log_coef = log_comb(alpha, i);
        let log_t0 = log_coef + i * self.log_q + j * self.log_1mq;
        let log_t1 = log_coef + j * self.log_q + i * self.log_1mq;
        let log_e0 = 0.5f64.ln() + log_erfc((i - self.z0) / self.scale);
        let log_e1 = 0.5f64.ln() + log_erfc((self.z0 - j) / self.scale);
        let log_s0 = log_t0 + (i * i - i) / self.two_var + log_e0;
        let log_s1 = log_t1 + (j * j - j) / self.two_var + log_e1;
        (log_s0, log_s1, positive)
    }
}

/// log(A_α) for fractional α, 0 < q < 1 (see the module doc for the fallbacks).
fn log_a_frac(q: f64, sigma: f64, alpha: f64) -> f64 {
    let terms = FracTerms::new(q, sigma, alpha);
    log_a_frac_signed(&terms).unwrap_or_else(|| log_a_frac_abs(&terms))
}

/// Exact signed series (MTZ19 §3.3, as in Opacus).
fn log_a_frac_signed(terms: &FracTerms) -> Option<f64> {
    let (mut log_a0, mut log_a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for i in 0..MAX_SIGNED_TERMS {
        let (log_s0, log_s1, positive) = terms.term(i);
        if positive {
            log_a0 = log_add(log_a0, log_s0);
            log_a1 = log_add(log_a1, log_s1);
        } else {
            log_a0 = log_sub(log_a0, log_s0)?;
            log_a1 = log_sub(log_a1, log_s1)?;
        }
        if log_s0.max(log_s1) < -30.0 {
            return Some(log_add(log_a0, log_a1));
        }
    }
    None
}

/// Upper bound summing absolute terms (dp-accounting 0.6); +∞ without convergence.
fn log_a_frac_abs(terms: &FracTerms) -> f64 {
    let (mut log_a0, mut log_a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let (mut last_s0, mut last_s1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for i in 0..MAX_FRAC_TERMS {
        let (log_s0, log_s1, _) = terms.term(i);
        log_a0 = log_add(log_a0, log_s0);
        log_a1 = log_add(log_a1, log_s1);
        let total = log_add(log_a0, log_a1);
        if log_s0 < last_s0 && log_s1 < last_s1 && log_s0.max(log_s1) < total - 30.0 {
            return total;
        }
        last_s0 = log_s0;
        last_s1 = log_s1;
    }
    f64::INFINITY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_erfc_matches_high_precision_values() {
        // ln(erfc(x)) from mpmath at 50 digits, on both sides of the switch to the series.
        for (x, want) in [
            (-3.0, 0.693_136_135_250_446_8),
            (24.9, -623.798_037_565_574_4),
            (25.0, -628.792_039_174_071_7),
            (26.0, -679.831_199_763_194_2),
            (40.0, -1_604.261_556_653_273_6),
        ] {
            let got = log_erfc(x);
            assert!(
                (got - want).abs() <= 1e-13 * want.abs(),
                "x = {x}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn integer_formula_matches_direct_sum_for_small_alpha() {
        // α = 2: A = (1-q)² + 2q(1-q) + q² e^{1/σ²} = 1 + q²(e^{1/σ²} - 1).
        let (q, s): (f64, f64) = (0.3, 1.5);
        let direct = (1.0 + q * q * ((1.0 / (s * s)).exp() - 1.0)).ln();
        assert!((log_a_int(q, s, 2) - direct).abs() < 1e-14);
    }

    #[test]
    fn fractional_order_lies_between_neighbouring_integers() {
        // RDP is non-decreasing in α.
        let r = rdp_sampled_gaussian(0.05, 1.0, &[3.0, 3.5, 4.0]).unwrap();
        assert!(r[0] <= r[1] && r[1] <= r[2], "{r:?}");
    }

    #[test]
    fn absolute_series_bounds_the_signed_one() {
        for (q, sigma, alpha) in [(0.01, 1.0, 2.5), (0.1, 2.0, 3.5), (0.5, 5.0, 4.5)] {
            let t = FracTerms::new(q, sigma, alpha);
            let exact = log_a_frac_signed(&t).unwrap();
            assert!(
                exact <= log_a_frac_abs(&t),
                "q={q} sigma={sigma} alpha={alpha}"
            );
        }
        assert_eq!(log_sub(1.0, 2.0), None);
        assert!((log_sub(2.0, 1.0).unwrap() - (2f64.exp() - 1f64.exp()).ln()).abs() < 1e-15);
    }

    #[test]
    fn rejects_bad_orders() {
        assert!(rdp_sampled_gaussian(0.1, 1.0, &[]).is_err());
        assert!(rdp_sampled_gaussian(0.1, 1.0, &[1.0]).is_err());
        assert!(rdp_sampled_gaussian(0.1, 1.0, &[f64::NAN]).is_err());
        assert!(rdp_sampled_gaussian(0.0, 1.0, &[2.0]).is_err());
        assert!(rdp_sampled_gaussian(0.1, 0.0, &[2.0]).is_err());
    }
}
