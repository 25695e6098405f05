//! Exact sampling from the discrete Gaussian `N_Z(0, σ²)`, `P[x] ∝ exp(-x²/(2σ²))` on the
//! integers, by Algorithms 1-3 of Canonne, Kamath and Steinke, "The Discrete Gaussian for
//! Differential Privacy" (NeurIPS 2020, arXiv 2004.00010): Bernoulli(exp(-γ)) from fair
//! integer draws, a discrete Laplace proposal, and rejection. All arithmetic is on integers
//! and rationals, so no floating-point rounding shapes the distribution (which is what makes
//! the privacy analysis hold as stated).

use num_bigint::BigUint;
use num_traits::{ToPrimitive, Zero};
use rand_core::Rng;
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// `σ²` as the exact fraction `num / den`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variance {
    pub num: u64,
    pub den: u64,
}

/// Keeps every product the sampler forms inside `u128` (`den * k` in the Bernoulli loop
/// needs headroom above this).
const MAX_DENOMINATOR_BITS: u32 = 100;

impl Variance {
    pub fn new(num: u64, den: u64) -> Result<Self, Error> {
        if num == 0 || den == 0 {
            return Err(Error::Dp("variance must be a positive fraction".into()));
        }
        let v = Self { num, den };
        let t = v.proposal_scale() as u128;
        let d = 2u128
            .checked_mul(num as u128)
            .and_then(|x| x.checked_mul(den as u128))
            .and_then(|x| x.checked_mul(t))
            .and_then(|x| x.checked_mul(t));
        match d {
            Some(d) if d < 1u128 << MAX_DENOMINATOR_BITS => Ok(v),
            _ => Err(Error::Dp(format!(
                "variance {num}/{den} is too fine or too large to sample exactly"
            ))),
        }
    }

    /// The closest fraction `n / 2^j` at or above `v` (`j` = 16, 8 or 0, the finest that
    /// keeps the sampler's integers in range), so a planned variance is never undershot.
    pub fn at_least(v: f64) -> Result<Self, Error> {
        if !(v.is_finite() && v > 0.0) {
            return Err(Error::Dp(format!("variance {v} is not positive")));
        }
        let den: u64 = if v < 2f64.powi(32) {
            1 << 16
        } else if v < 2f64.powi(40) {
            1 << 8
        } else {
            1
        };
        let num = (v * den as f64).ceil();
        if num >= u64::MAX as f64 {
            return Err(Error::Dp(format!(
                "variance {v} is too large to sample exactly"
            )));
        }
        Self::new(num as u64, den)
    }

    pub fn value(&self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// `t = floor(σ) + 1`, the discrete Laplace scale of the proposal (Algorithm 3).
    fn proposal_scale(&self) -> u64 {
        let mut t = self.value().sqrt().floor() as u64;
        // Correct the float estimate: t is the largest integer with t² * den <= num.
        while (t as u128 + 1).pow(2) * self.den as u128 <= self.num as u128 {
            t += 1;
        }
        while t > 0 && (t as u128).pow(2) * self.den as u128 > self.num as u128 {
            t -= 1;
        }
        t + 1
    }
}

fn uniform_below<R: Rng + ?Sized>(rng: &mut R, bound: u128) -> u128 {
    debug_assert!(bound > 0);
    let bits = 128 - (bound - 1).leading_zeros();
    loop {
        let x = ((rng.next_u64() as u128) << 64) | rng.next_u64() as u128;
        let x = if bits == 0 { 0 } else { x >> (128 - bits) };
        if x < bound {
            return x;
        }
    }
}

/// Bernoulli(num / den).
fn bernoulli<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    uniform_below(rng, den) < num
}

/// Bernoulli(exp(-num/den)) for `num <= den` (Algorithm 1, first case): draw
/// `A_k ~ Bernoulli(γ/k)` for k = 1, 2, … until one is 0; return whether that k is odd.
fn bernoulli_exp_at_most_one<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    let mut k: u128 = 1;
    // den < 2^100 and P[k > 2^27] < 1/(2^27)!: the product cannot overflow in practice,
    // and saturating keeps even that impossible case well defined.
    while bernoulli(rng, num, den.saturating_mul(k)) {
        k += 1;
    }
    k % 2 == 1
}

/// Bernoulli(exp(-γ)) for any rational `γ = num/den >= 0` (Algorithm 1): `floor(γ)` draws of
/// Bernoulli(exp(-1)), then one of Bernoulli(exp(-(γ - floor γ))).
fn bernoulli_exp<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    let mut n = num;
    while n > den {
        if !bernoulli_exp_at_most_one(rng, 1, 1) {
            return false;
        }
        n -= den;
    }
    bernoulli_exp_at_most_one(rng, n, den)
}

/// Same as [`bernoulli_exp`] for `γ = q + r/den` with a possibly huge integer part `q`.
fn bernoulli_exp_big<R: Rng + ?Sized>(rng: &mut R, mut q: BigUint, r: u128, den: u128) -> bool {
    while !q.is_zero() {
        if !bernoulli_exp_at_most_one(rng, 1, 1) {
            return false;
        }
        q -= 1u32;
    }
    bernoulli_exp_at_most_one(rng, r, den)
}

/// Discrete Laplace with scale `t` (Algorithm 2 with s = 1): `P[x] ∝ exp(-|x|/t)`.
fn discrete_laplace<R: Rng + ?Sized>(rng: &mut R, t: u64) -> i128 {
    loop {
        let u = uniform_below(rng, t as u128);
        if !bernoulli_exp(rng, u, t as u128) {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp_at_most_one(rng, 1, 1) {
            v += 1;
        }
        let x = (u + t as u128 * v) as i128;
        let negative = bernoulli(rng, 1, 2);
        if negative && x == 0 {
            continue;
        }
        return if negative { -x } else { x };
    }
}

/// One draw from `N_Z(0, σ²)` (Algorithm 3): propose `Y` from the discrete Laplace of scale
/// `t = floor(σ) + 1`, accept with probability `exp(-(|Y| - σ²/t)² / (2σ²))`.
pub fn sample<R: Rng + ?Sized>(rng: &mut R, var: Variance) -> i64 {
    let t = var.proposal_scale();
    let (num, den) = (var.num as u128, var.den as u128);
    // (|Y| - σ²/t)² / (2σ²) = (|Y|·t·den - num)² / (2·num·den·t²)
    let d = 2 * num * den * (t as u128) * (t as u128);
    loop {
        let y = discrete_laplace(rng, t);
        let a = (y.unsigned_abs())
            .checked_mul(t as u128)
            .and_then(|x| x.checked_mul(den))
            .map(|x| x.abs_diff(num));
        let accept = match a.and_then(|a| a.checked_mul(a)) {
            Some(sq) => bernoulli_exp(rng, sq, d),
            None => {
                // |Y| is far in the tail: the exponent's integer part no longer fits u128.
                let a = BigUint::from(y.unsigned_abs()) * t * den;
                let a = if a >= BigUint::from(num) {
                    a - num
                } else {
                    BigUint::from(num) - a
                };
                let sq = &a * &a;
                let (q, r) = (&sq / d, &sq % d);
                bernoulli_exp_big(rng, q, r.to_u128().unwrap_or(0), d)
            }
        };
        if accept {
            // |Y| this large has probability below exp(-2^62 / t); clamping cannot occur in practice.
            return y.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn moments(var: Variance, n: usize, seed: u64) -> (f64, f64, f64) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let (mut zeros, mut s, mut s2) = (0usize, 0f64, 0f64);
        for _ in 0..n {
            let x = sample(&mut rng, var) as f64;
            zeros += (x == 0.0) as usize;
            s += x;
            s2 += x * x;
        }
        (zeros as f64 / n as f64, s / n as f64, s2 / n as f64)
    }

    #[test]
    fn sigma_one_half_matches_the_exact_distribution() {
        // σ² = 1/4: weights exp(-2k²). By hand (5 terms suffice at 1e-7):
        //   Z = 1 + 2(e^-2 + e^-8 + e^-18) = 1.2713416
        //   P[0] = 1/Z = 0.786572;  Var = 2(e^-2 + 4e^-8 + 9e^-18)/Z = 0.215013 (not 0.25:
        //   the discrete Gaussian is narrower than its parameter when σ is small).
        // 200,000 draws: sd of P[0] is 0.0009 and of the variance 0.0009; allow 5 sd.
        let (p0, mean, var) = moments(Variance::new(1, 4).unwrap(), 200_000, 1);
        assert!((p0 - 0.786572).abs() < 0.0046, "P[0] = {p0}");
        assert!(mean.abs() < 0.005, "mean = {mean}");
        assert!((var - 0.215013).abs() < 0.0047, "var = {var}");
    }

    #[test]
    fn sigma_two_matches_the_exact_distribution() {
        // σ² = 4: Z = Σ exp(-k²/8) = sqrt(8π)(1 + 2e^{-8π²} + …) = 5.013257, P[0] = 0.199471,
        // Var = 4 to within 1e-30 (Poisson summation). 200,000 draws: sd(P0) = 0.0009,
        // sd(var) = sqrt(2·16/200000) = 0.0127.
        let (p0, mean, var) = moments(Variance::new(4, 1).unwrap(), 200_000, 2);
        assert!((p0 - 0.199471).abs() < 0.0045, "P[0] = {p0}");
        assert!(mean.abs() < 0.03, "mean = {mean}");
        assert!((var - 4.0).abs() < 0.064, "var = {var}");
    }

    #[test]
    fn fractional_variance_is_honoured() {
        // σ² = 2.5 = 5/2: variance 2.5 up to 10^-19; sd of the estimate 0.0079.
        let (_, _, var) = moments(Variance::new(5, 2).unwrap(), 200_000, 3);
        assert!((var - 2.5).abs() < 0.04, "var = {var}");
    }

    #[test]
    fn bernoulli_exp_has_the_right_mean() {
        // exp(-1/2) = 0.606531, exp(-5/2) = 0.082085; 100,000 draws, sd <= 0.0016.
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let n = 100_000;
        let half = (0..n).filter(|_| bernoulli_exp(&mut rng, 1, 2)).count() as f64 / n as f64;
        let five_halves =
            (0..n).filter(|_| bernoulli_exp(&mut rng, 5, 2)).count() as f64 / n as f64;
        assert!((half - 0.606531).abs() < 0.008, "{half}");
        assert!((five_halves - 0.082085).abs() < 0.0045, "{five_halves}");
    }

    #[test]
    fn the_proposal_scale_is_floor_sigma_plus_one() {
        assert_eq!(Variance::new(1, 4).unwrap().proposal_scale(), 1);
        assert_eq!(Variance::new(4, 1).unwrap().proposal_scale(), 3);
        assert_eq!(Variance::new(399, 100).unwrap().proposal_scale(), 2);
        assert_eq!(Variance::at_least(1e6).unwrap().proposal_scale(), 1001);
    }

    #[test]
    fn unusable_variances_are_refused() {
        assert!(Variance::new(0, 1).is_err());
        assert!(Variance::new(1, 0).is_err());
        assert!(Variance::new(u64::MAX, u64::MAX).is_err());
        assert!(Variance::at_least(f64::NAN).is_err());
        assert!(Variance::at_least(2.5).unwrap().value() >= 2.5);
    }
}
