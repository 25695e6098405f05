//! Differential-privacy noise for released counts and sums.
//!
//! **Mechanisms.** Noise is integer-valued and sampled exactly, so the floating-point attacks on
//! textbook Laplace/Gaussian samplers (Mironov, "On significance of the least significant bits
//! for differential privacy", CCS 2012) do not apply:
//! - discrete Gaussian N_ℤ(0, σ²), Canonne, Kamath & Steinke, "The Discrete Gaussian for
//!   Differential Privacy" (NeurIPS 2020), Algorithms 1–3, with σ² a rational number
//!   (rounded **up** to a multiple of 1/1000, which only adds privacy). An integer query with
//!   L2 sensitivity Δ plus N_ℤ(0, σ²) per coordinate is ρ-zCDP with ρ = Δ²/(2σ²) (ibid.,
//!   Theorem 4), and Var ≤ σ² (ibid., Corollary 9);
//! - discrete Laplace (two-sided geometric) with P(x) ∝ e^{−|x|/b}, the same paper's
//!   Algorithm 2; b = Δ₁/ε gives pure ε-DP (Ghosh, Roughgarden & Sundararajan, "Universally
//!   utility-maximizing privacy mechanisms", STOC 2009). Var = 2q/(1−q)², q = e^{−1/b}.
//!
//! Real-valued sums (of values clipped to the query's declared bounds [lo, hi]) are released
//! on a grid of resolution r = max(|lo|, |hi|)/1000: the exact sum is rounded to the grid and
//! integer noise is added in grid units. One record moves a clipped sum by at most
//! max(|lo|, |hi|) = 1000 r, and rounding by at most one more unit: sensitivity 1001 units.
//!
//! **Calibration.** ρ-zCDP: σ² = Δ₂²/(2ρ). (ε, δ): the largest ρ whose (ε, δ) conversion is
//! within ε, by bisection, with the conversion the product's accountant uses for the permit
//! budget (fl_engine's `RdpConversion::Improved`: Rényi DP of a ρ-zCDP mechanism is αρ at order
//! α, and ε = min_α αρ + log((α−1)/α) − (log δ + log α)/(α−1) over the accountant's order grid;
//! Balle et al. 2020, Canonne, Kamath & Steinke 2020). Laplace: b = Δ₁/ε.
//!
//! **Cost in the product's units.** Permits carry an (ε, δ) budget per unit `record` or
//! `data_holder` (ehds-core `domain::budget`). The guarantee here is record-level: neighbouring
//! inputs differ by one record (one row of one node's table; a person present at two data
//! holders counts twice). [`PrivacyCost`] holds ρ (zCDP composes by addition, Bun & Steinke
//! 2016, Lemma 2.3) and, for the Laplace mechanism, the pure ε; [`PrivacyCost::epsilon_at`]
//! converts to ε at the permit's δ with the same conversion as above, so a request is charged
//! like a federated round. A pure ε-DP release is also (ε²/2)-zCDP (Bun & Steinke 2016,
//! Proposition 1.4), which is the ρ recorded for it.
//!
//! **Where the noise is added.** [`privatize`] adds it centrally, once, after pooling and
//! output checking: the gateway is the health data access body and already sees the exact
//! partials (it needs them for output checking), so central noise is exact-calibrated and is
//! what the gateway should use. For deployments where the gateway must not see exact sums
//! (partials summed under secure aggregation), [`node_share`] gives each of n nodes a discrete
//! Gaussian with σ²/n; the sum of the shares is not exactly a discrete Gaussian, and its
//! privacy is accounted by [`distributed_gaussian_rho`] (Kairouz, Liu & Steinke, "The
//! Distributed Discrete Gaussian Mechanism for Federated Learning with Secure Aggregation",
//! ICML 2021, Theorem 1). Trust assumption: every node adds its share honestly and the gateway
//! sees only the sum; a node that omits its noise, or a coalition that learns other nodes'
//! noise, lowers the protection to that of the honest shares.
//!
//! **Intervals.** Every noisy value comes with the half-width of the smallest symmetric integer
//! interval holding at least 95% of the noise distribution, and the exact probability it holds
//! (computed from the distribution, not from a normal approximation, up to σ = 10⁴).

use rand::{CryptoRng, Rng, RngExt};
use serde::{Deserialize, Serialize};

use crate::combine::{grouped_quantile, Combined, PooledStats};
use crate::output_check::{CellValue, Release};
use crate::partial::{BinCounts, Exclusion};
use crate::query::{CellLabel, DpBudget, Placement, Query, Statistic};

/// Why noise could not be calibrated or added.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum NoiseError {
    /// A privacy parameter outside its domain.
    #[error("invalid privacy parameter {name} = {value}")]
    InvalidParameter { name: &'static str, value: f64 },
    /// The noise scale is beyond what the exact samplers support (σ or b above 10⁶).
    #[error("noise scale {scale} is too large")]
    ScaleTooLarge { scale: f64 },
    /// The query declares no differential privacy, or a placement `privatize` does not do.
    #[error("{0}")]
    Unsupported(&'static str),
}

/// Rationals are kept to this denominator (σ² and b rounded up to a multiple of 1/1000).
const DEN: u128 = 1000;
/// Largest σ or b accepted.
const MAX_SCALE: f64 = 1e6;
/// Largest σ for which intervals are computed by summing the probability mass function.
const EXACT_INTERVAL_MAX_SIGMA: f64 = 1e4;

/// Integer noise of one mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mechanism", rename_all = "snake_case")]
pub enum IntegerNoise {
    /// N_ℤ(0, σ²) with σ² = `sigma2_thousandths` / 1000.
    DiscreteGaussian { sigma2_thousandths: u128 },
    /// P(x) ∝ e^{−|x|/b}, b = `scale_thousandths` / 1000.
    DiscreteLaplace { scale_thousandths: u128 },
}

/// A symmetric interval around a noisy value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NoiseInterval {
    /// Half-width in noise units.
    pub half_width: u64,
    /// Probability that |noise| ≤ half_width.
    pub coverage: f64,
}

impl IntegerNoise {
    /// Discrete Gaussian with variance parameter σ² (rounded up to a multiple of 1/1000).
    pub fn gaussian(sigma2: f64) -> Result<Self, NoiseError> {
        if !(sigma2.is_finite() && sigma2 > 0.0) {
            return Err(NoiseError::InvalidParameter {
                name: "sigma2",
                value: sigma2,
            });
        }
        if sigma2.sqrt() > MAX_SCALE {
            return Err(NoiseError::ScaleTooLarge {
                scale: sigma2.sqrt(),
            });
        }
        Ok(Self::DiscreteGaussian {
            sigma2_thousandths: ((sigma2 * DEN as f64).ceil() as u128).max(1),
        })
    }

    /// Discrete Laplace with scale b (rounded up to a multiple of 1/1000).
    pub fn laplace(scale: f64) -> Result<Self, NoiseError> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(NoiseError::InvalidParameter {
                name: "scale",
                value: scale,
            });
        }
        if scale > MAX_SCALE {
            return Err(NoiseError::ScaleTooLarge { scale });
        }
        Ok(Self::DiscreteLaplace {
            scale_thousandths: ((scale * DEN as f64).ceil() as u128).max(1),
        })
    }

    /// σ² of the Gaussian or b of the Laplace, as a number.
    pub fn parameter(&self) -> f64 {
        match *self {
            Self::DiscreteGaussian {
                sigma2_thousandths: n,
            } => n as f64 / DEN as f64,
            Self::DiscreteLaplace {
                scale_thousandths: n,
            } => n as f64 / DEN as f64,
        }
    }

    /// Variance of the noise (for the Gaussian the bound σ², exact to within e^{−2π²σ²}).
    pub fn variance(&self) -> f64 {
        match self {
            Self::DiscreteGaussian { .. } => self.parameter(),
            Self::DiscreteLaplace { .. } => {
                let q = (-1.0 / self.parameter()).exp();
                2.0 * q / (1.0 - q).powi(2)
            }
        }
    }

    pub fn sd(&self) -> f64 {
        self.variance().sqrt()
    }

    /// One draw.
    pub fn sample<R: Rng + CryptoRng>(&self, rng: &mut R) -> i64 {
        match *self {
            Self::DiscreteGaussian { sigma2_thousandths } => {
                discrete_gaussian(rng, sigma2_thousandths, DEN)
            }
            Self::DiscreteLaplace { scale_thousandths } => {
                discrete_laplace(rng, scale_thousandths, DEN)
            }
        }
    }

    /// The smallest symmetric interval [−k, k] holding at least `level` of the noise.
    pub fn interval(&self, level: f64) -> NoiseInterval {
        match self {
            Self::DiscreteLaplace { .. } => {
                let q = (-1.0 / self.parameter()).exp();
                // P(|X| > k) = 2 q^{k+1} / (1 + q).
                let tail = |k: u64| 2.0 * q.powf(k as f64 + 1.0) / (1.0 + q);
                let guess = (((1.0 - level) * (1.0 + q) / 2.0).ln() / q.ln() - 1.0)
                    .ceil()
                    .max(0.0) as u64;
                let mut k = guess.saturating_sub(1);
                while 1.0 - tail(k) < level {
                    k += 1;
                }
                NoiseInterval {
                    half_width: k,
                    coverage: 1.0 - tail(k),
                }
            }
            Self::DiscreteGaussian { .. } => {
                let s2 = self.parameter();
                let sigma = s2.sqrt();
                if sigma > EXACT_INTERVAL_MAX_SIGMA {
                    let k = (inverse_normal_two_sided(level) * sigma).ceil() as u64;
                    return NoiseInterval {
                        half_width: k,
                        coverage: level,
                    };
                }
                let m = (12.0 * sigma).ceil() as u64 + 2;
                let w = |x: u64| (-((x as f64).powi(2)) / (2.0 * s2)).exp();
                let z: f64 = 1.0 + 2.0 * (1..=m).map(w).sum::<f64>();
                let mut inside = 1.0 / z;
                let mut k = 0;
                while inside < level {
                    k += 1;
                    inside += 2.0 * w(k) / z;
                }
                NoiseInterval {
                    half_width: k,
                    coverage: inside,
                }
            }
        }
    }
}

/// Φ⁻¹((1 + level)/2), by bisection on Φ. Only the large-σ fallback of
/// [`IntegerNoise::interval`] uses it, where the noise's discreteness is negligible.
fn inverse_normal_two_sided(level: f64) -> f64 {
    let target = (1.0 + level) / 2.0;
    let (mut lo, mut hi) = (0.0f64, 10.0f64);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if normal_cdf(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Φ(x) for x ≥ 0: ½ plus the density integrated over [0, x] by Simpson's rule (10⁴ steps,
/// error far below 10⁻¹² on [0, 10]).
fn normal_cdf(x: f64) -> f64 {
    let steps = 10_000;
    let h = x / steps as f64;
    let f = |t: f64| (-t * t / 2.0).exp();
    let mut s = f(0.0) + f(x);
    for i in 1..steps {
        let t = i as f64 * h;
        s += if i % 2 == 1 { 4.0 } else { 2.0 } * f(t);
    }
    0.5 + s * h / 3.0 / (2.0 * std::f64::consts::PI).sqrt()
}

// ---------------------------------------------------------------------------------------------
// Exact samplers (Canonne, Kamath & Steinke 2020)
// ---------------------------------------------------------------------------------------------

/// Bernoulli(num/den), 0 ≤ num ≤ den.
fn bernoulli<R: Rng>(rng: &mut R, num: u128, den: u128) -> bool {
    rng.random_range(0..den) < num
}

/// Bernoulli(exp(−num/den)) (Algorithm 1).
fn bernoulli_exp<R: Rng>(rng: &mut R, num: u128, den: u128) -> bool {
    let (whole, frac) = (num / den, num % den);
    for _ in 0..whole {
        if !bernoulli_exp_unit(rng, 1, 1) {
            return false;
        }
    }
    bernoulli_exp_unit(rng, frac, den)
}

/// Bernoulli(exp(−γ)) for γ = num/den ∈ [0, 1].
fn bernoulli_exp_unit<R: Rng>(rng: &mut R, num: u128, den: u128) -> bool {
    let mut k: u128 = 1;
    loop {
        let d = den.checked_mul(k).expect("k stays small");
        if bernoulli(rng, num, d) {
            k += 1;
        } else {
            return k % 2 == 1;
        }
    }
}

/// Discrete Laplace with scale t/s (Algorithm 2).
fn discrete_laplace<R: Rng>(rng: &mut R, t: u128, s: u128) -> i64 {
    loop {
        let u = rng.random_range(0..t);
        if !bernoulli_exp(rng, u, t) {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp(rng, 1, 1) {
            v += 1;
        }
        let x = u + t * v;
        let y = x / s;
        let negative = rng.random_bool(0.5);
        if negative && y == 0 {
            continue;
        }
        let y = i64::try_from(y).expect("noise fits in i64");
        return if negative { -y } else { y };
    }
}

/// Discrete Gaussian with σ² = n/d (Algorithm 3).
fn discrete_gaussian<R: Rng>(rng: &mut R, n: u128, d: u128) -> i64 {
    // t = ⌊σ⌋ + 1, with ⌊σ⌋ computed exactly from the rational σ².
    let mut floor_sigma = ((n as f64 / d as f64).sqrt()) as u128;
    while (floor_sigma + 1) * (floor_sigma + 1) * d <= n {
        floor_sigma += 1;
    }
    while floor_sigma > 0 && floor_sigma * floor_sigma * d > n {
        floor_sigma -= 1;
    }
    let t = floor_sigma + 1;
    loop {
        let y = discrete_laplace(rng, t, 1);
        let a = u128::from(y.unsigned_abs());
        // γ = (|y| − σ²/t)² / (2σ²) = (|y|·d·t − n)² / (2·n·d·t²).
        // With σ ≤ 10⁶ these products fit in u128 for any |y| below 10¹⁰ (a draw beyond
        // e^{−10⁴} probability); should one not fit, γ is astronomically large and
        // exp(−γ) = 0 to any precision, so the draw is rejected.
        let Some(diff) = a
            .checked_mul(d)
            .and_then(|x| x.checked_mul(t))
            .map(|x| x.abs_diff(n))
        else {
            continue;
        };
        let (Some(num), Some(den)) = (diff.checked_mul(diff), (2 * n * d).checked_mul(t * t))
        else {
            continue;
        };
        if bernoulli_exp(rng, num, den) {
            return y;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Calibration and accounting
// ---------------------------------------------------------------------------------------------

/// The Rényi orders of the product's accountant (TF Privacy's grid).
fn orders() -> Vec<f64> {
    let mut o = vec![1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5];
    o.extend((5..=64).map(f64::from));
    o.extend([128.0, 256.0]);
    o
}

/// ε at δ of a ρ-zCDP guarantee, with the accountant's improved RDP conversion.
pub fn zcdp_to_epsilon(rho: f64, delta: f64) -> f64 {
    if rho <= 0.0 {
        return 0.0;
    }
    let mut best = f64::INFINITY;
    for a in orders() {
        let r = a * rho;
        let eps = if delta * delta + (-r).exp_m1() > 0.0 {
            0.0
        } else if a > 1.01 {
            r + (-1.0 / a).ln_1p() - (delta * a).ln() / (a - 1.0)
        } else {
            f64::INFINITY
        };
        best = best.min(eps);
    }
    best.max(0.0)
}

/// The largest ρ whose conversion at δ is at most ε.
pub fn rho_for_epsilon_delta(epsilon: f64, delta: f64) -> Result<f64, NoiseError> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(NoiseError::InvalidParameter {
            name: "epsilon",
            value: epsilon,
        });
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(NoiseError::InvalidParameter {
            name: "delta",
            value: delta,
        });
    }
    // ε(ρ) is increasing in ρ: bracket, then bisect.
    let (mut lo, mut hi) = (0.0f64, epsilon);
    while zcdp_to_epsilon(hi, delta) <= epsilon {
        lo = hi;
        hi *= 2.0;
        if hi > 1e12 {
            return Ok(lo);
        }
    }
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if zcdp_to_epsilon(mid, delta) <= epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// What a release costs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrivacyCost {
    /// zCDP ρ (composes by addition).
    pub rho: f64,
    /// Pure ε of the Laplace mechanism (δ = 0); `None` for the Gaussian.
    pub pure_epsilon: Option<f64>,
}

impl PrivacyCost {
    /// ε at the permit's δ, in the units of the permit budget (record level).
    pub fn epsilon_at(&self, delta: f64) -> f64 {
        match self.pure_epsilon {
            Some(e) => e,
            None => zcdp_to_epsilon(self.rho, delta),
        }
    }
}

/// One mechanism's share of a request's budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Share {
    Rho(f64),
    Epsilon(f64),
}

/// Splits a request's budget evenly over `parts` mechanisms.
pub fn split(budget: &DpBudget, parts: u32) -> Result<Share, NoiseError> {
    let k = f64::from(parts.max(1));
    Ok(match *budget {
        DpBudget::GaussianZcdp { rho } => Share::Rho(rho / k),
        DpBudget::GaussianApprox { epsilon, delta } => {
            Share::Rho(rho_for_epsilon_delta(epsilon, delta)? / k)
        }
        DpBudget::Laplace { epsilon } => Share::Epsilon(epsilon / k),
    })
}

/// Noise for a query with L2 sensitivity √`l2_squared` (Gaussian) or L1 sensitivity `l1`
/// (Laplace), given its share of the budget.
pub fn calibrate(share: Share, l2_squared: f64, l1: f64) -> Result<IntegerNoise, NoiseError> {
    match share {
        Share::Rho(rho) if rho > 0.0 && rho.is_finite() => {
            IntegerNoise::gaussian(l2_squared / (2.0 * rho))
        }
        Share::Epsilon(eps) if eps > 0.0 && eps.is_finite() => IntegerNoise::laplace(l1 / eps),
        Share::Rho(v) => Err(NoiseError::InvalidParameter {
            name: "rho",
            value: v,
        }),
        Share::Epsilon(v) => Err(NoiseError::InvalidParameter {
            name: "epsilon",
            value: v,
        }),
    }
}

/// The ρ actually achieved by a mechanism at these sensitivities (after rounding σ² or b up).
pub fn achieved_cost(noise: &IntegerNoise, l2_squared: f64, l1: f64) -> PrivacyCost {
    match noise {
        IntegerNoise::DiscreteGaussian { .. } => PrivacyCost {
            rho: l2_squared / (2.0 * noise.parameter()),
            pure_epsilon: None,
        },
        IntegerNoise::DiscreteLaplace { .. } => {
            let e = l1 / noise.parameter();
            PrivacyCost {
                rho: e * e / 2.0,
                pure_epsilon: Some(e),
            }
        }
    }
}

/// Each of `nodes` nodes' share of a discrete Gaussian: σ²/nodes (Gaussian only).
pub fn node_share(noise: &IntegerNoise, nodes: usize) -> Result<IntegerNoise, NoiseError> {
    match noise {
        IntegerNoise::DiscreteGaussian { .. } if nodes > 0 => {
            IntegerNoise::gaussian(noise.parameter() / nodes as f64)
        }
        IntegerNoise::DiscreteGaussian { .. } => Err(NoiseError::InvalidParameter {
            name: "nodes",
            value: 0.0,
        }),
        IntegerNoise::DiscreteLaplace { .. } => Err(NoiseError::Unsupported(
            "distributed noise is offered for the discrete Gaussian only",
        )),
    }
}

/// zCDP ρ of the sum of `nodes` independent N_ℤ(0, σ²_node) shares on a `dim`-dimensional
/// integer query with sensitivities ‖Δ‖₂² = `l2_squared` and ‖Δ‖₁ = `l1` (Kairouz, Liu &
/// Steinke 2021, Theorem 1: ε = min{√(‖Δ‖₂²/(nσ²) + τd/2), ‖Δ‖₁/(√n σ) + τd},
/// τ = 10 Σ_{k=1}^{n−1} e^{−2π²σ² k/(k+1)}, ρ = ε²/2; requires σ ≥ 1/2).
pub fn distributed_gaussian_rho(
    sigma2_node: f64,
    nodes: usize,
    l2_squared: f64,
    l1: f64,
    dim: usize,
) -> Result<f64, NoiseError> {
    if sigma2_node.is_nan() || sigma2_node < 0.25 {
        return Err(NoiseError::InvalidParameter {
            name: "sigma2_node",
            value: sigma2_node,
        });
    }
    let n = nodes.max(1) as f64;
    let tau: f64 = 10.0
        * (1..nodes)
            .map(|k| {
                let k = k as f64;
                (-2.0 * std::f64::consts::PI.powi(2) * sigma2_node * k / (k + 1.0)).exp()
            })
            .sum::<f64>();
    let d = dim as f64;
    let e1 = (l2_squared / (n * sigma2_node) + tau * d / 2.0).sqrt();
    let e2 = l1 / (n.sqrt() * sigma2_node.sqrt()) + tau * d;
    let e = e1.min(e2);
    Ok(e * e / 2.0)
}

// ---------------------------------------------------------------------------------------------
// Noisy values and the private release
// ---------------------------------------------------------------------------------------------

/// A released noisy value with its noise's spread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NoisyValue {
    pub value: f64,
    /// SD of the added noise.
    pub sd: f64,
    /// Half-width of the 95% interval: value ± half_width holds the exact value with
    /// probability `coverage` (≥ 0.95).
    pub half_width_95: f64,
    pub coverage: f64,
}

/// A mechanism with its 95% interval computed once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Calibrated {
    pub noise: IntegerNoise,
    pub interval_95: NoiseInterval,
}

impl From<IntegerNoise> for Calibrated {
    fn from(noise: IntegerNoise) -> Self {
        Self {
            noise,
            interval_95: noise.interval(0.95),
        }
    }
}

/// A count plus noise.
pub fn noisy_count<R: Rng + CryptoRng>(count: u64, noise: &Calibrated, rng: &mut R) -> NoisyValue {
    NoisyValue {
        value: count as f64 + noise.noise.sample(rng) as f64,
        sd: noise.noise.sd(),
        half_width_95: noise.interval_95.half_width as f64,
        coverage: noise.interval_95.coverage,
    }
}

/// A real sum released on a grid of `resolution`: rounded to the grid, plus noise in grid units.
pub fn noisy_sum<R: Rng + CryptoRng>(
    sum: f64,
    resolution: f64,
    noise: &Calibrated,
    rng: &mut R,
) -> NoisyValue {
    let units = (sum / resolution).round() + noise.noise.sample(rng) as f64;
    NoisyValue {
        value: units * resolution,
        sd: noise.noise.sd() * resolution,
        half_width_95: noise.interval_95.half_width as f64 * resolution,
        coverage: noise.interval_95.coverage,
    }
}

/// Grid units per bound: sums are released at resolution max(|lo|, |hi|)/`SUM_GRID`.
pub const SUM_GRID: f64 = 1000.0;

/// The noisy value of a released cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum DpValue {
    Count {
        n: NoisyValue,
    },
    /// Mean = noisy sum / noisy count (`None` when the noisy count is below 1).
    Mean {
        n: NoisyValue,
        sum: NoisyValue,
        mean: Option<f64>,
    },
    Histogram {
        below: Option<NoisyValue>,
        bins: Vec<Option<NoisyValue>>,
        above: Option<NoisyValue>,
    },
    /// Quantiles of the noisy histogram (negative bins set to 0): post-processing.
    Quantiles {
        probabilities: Vec<f64>,
        values: Vec<Option<f64>>,
    },
}

/// A cell of a private release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DpCell {
    pub labels: Vec<CellLabel>,
    #[serde(flatten)]
    pub outcome: crate::output_check::Outcome,
    pub value: Option<DpValue>,
}

/// Noisy margins of a count table (released entries only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DpMargins {
    pub rows: Vec<Option<NoisyValue>>,
    pub columns: Vec<Option<NoisyValue>>,
    pub total: Option<NoisyValue>,
}

/// A release with noise added to every released value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DpRelease {
    pub statistic: String,
    pub cells: Vec<DpCell>,
    pub margins: Option<DpMargins>,
    /// `[reason, noisy count or null]` pairs.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Vec<Object>>))]
    pub excluded: Vec<(Exclusion, Option<NoisyValue>)>,
    /// ρ (zCDP) of the whole release; the permit is charged `epsilon_at(permit δ)`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub cost: PrivacyCost,
}

/// Adds central noise to the values `release` lets out, per the query's `dp` declaration.
///
/// Sensitivities (one record added or removed): a count table with margins changes one cell,
/// its row and column totals and the grand total (‖Δ‖₂² = 4, ‖Δ‖₁ = 4 two-way; 2 and 2
/// one-way; 1 without grouping); the excluded counts are disjoint from the cells, so they share
/// the same noise. Histograms and quantile histograms: one bin (1). Means: the counts (1) and
/// the clipped sums (1001 grid units) each get half of the budget.
pub fn privatize<R: Rng + CryptoRng>(
    query: &Query,
    combined: &Combined,
    release: &Release,
    rng: &mut R,
) -> Result<DpRelease, NoiseError> {
    let Some(dp) = query.dp() else {
        return Err(NoiseError::Unsupported(
            "the query declares no differential privacy",
        ));
    };
    if dp.placement == Placement::Distributed {
        return Err(NoiseError::Unsupported(
            "distributed noise is added by the nodes (node_share), not by privatize",
        ));
    }
    let margins_touched = match (query.statistic(), query.group_by().len()) {
        (Statistic::Count, 1) => 1.0,
        (Statistic::Count, 2) => 3.0,
        _ => 0.0,
    };
    let parts = if matches!(query.statistic(), Statistic::Mean { .. }) {
        2
    } else {
        1
    };
    let share = split(&dp.budget, parts)?;
    let count_sens = 1.0 + margins_touched;
    let count_noise = Calibrated::from(calibrate(share, count_sens, count_sens)?);
    let mut cost = achieved_cost(&count_noise.noise, count_sens, count_sens);

    let (sum_noise, resolution) = match query.statistic() {
        Statistic::Mean {
            bounds: Some(b), ..
        } => {
            let units = SUM_GRID + 1.0;
            let noise = calibrate(share, units * units, units)?;
            let c = achieved_cost(&noise, units * units, units);
            cost.rho += c.rho;
            cost.pure_epsilon = cost.pure_epsilon.zip(c.pure_epsilon).map(|(a, b)| a + b);
            (Some(Calibrated::from(noise)), b.max_abs() / SUM_GRID)
        }
        Statistic::Mean { bounds: None, .. } => {
            return Err(NoiseError::Unsupported(
                "a mean under differential privacy needs bounds",
            ))
        }
        Statistic::KaplanMeier { .. } => {
            return Err(NoiseError::Unsupported(
                "differential privacy is not offered for survival curves",
            ))
        }
        _ => (None, 1.0),
    };

    let noisy_checked = |rng: &mut R, c: &crate::output_check::CheckedCount, v: u64| {
        c.outcome
            .is_released()
            .then(|| noisy_count(v, &count_noise, rng))
    };

    let mut cells = Vec::with_capacity(release.cells.len());
    for (rc, pc) in release.cells.iter().zip(&combined.cells) {
        let value = match (&rc.value, &pc.stats) {
            (None, _) => None,
            (Some(CellValue::Count { n }), _) => Some(DpValue::Count {
                n: noisy_count(*n, &count_noise, rng),
            }),
            (Some(CellValue::Mean { n, .. }), PooledStats::Mean { sum, .. }) => {
                let n = noisy_count(*n, &count_noise, rng);
                let sum = noisy_sum(
                    *sum,
                    resolution,
                    sum_noise.as_ref().expect("mean has sum noise"),
                    rng,
                );
                Some(DpValue::Mean {
                    mean: (n.value >= 1.0).then(|| sum.value / n.value),
                    n,
                    sum,
                })
            }
            (
                Some(CellValue::Histogram {
                    below, bins, above, ..
                }),
                PooledStats::Histogram { bins: exact },
            ) => Some(DpValue::Histogram {
                below: noisy_checked(rng, below, exact.below),
                bins: bins
                    .iter()
                    .zip(&exact.counts)
                    .map(|(c, &v)| noisy_checked(rng, c, v))
                    .collect(),
                above: noisy_checked(rng, above, exact.above),
            }),
            (Some(CellValue::Quantiles { estimates, .. }), PooledStats::Quantiles { bins, .. }) => {
                let Statistic::Quantiles { edges, .. } = query.statistic() else {
                    unreachable!("quantile cells come from quantile queries")
                };
                let mut noisy = |v: u64| {
                    let x = v as i64 + count_noise.noise.sample(rng);
                    x.max(0) as u64
                };
                let nb = BinCounts {
                    below: noisy(bins.below),
                    counts: bins.counts.iter().map(|&c| noisy(c)).collect(),
                    above: noisy(bins.above),
                };
                Some(DpValue::Quantiles {
                    probabilities: estimates.iter().map(|e| e.probability).collect(),
                    values: estimates
                        .iter()
                        .map(|e| {
                            e.outcome
                                .is_released()
                                .then(|| grouped_quantile(&nb, edges, e.probability).value)
                                .flatten()
                        })
                        .collect(),
                })
            }
            _ => None,
        };
        cells.push(DpCell {
            labels: rc.labels.clone(),
            outcome: rc.outcome.clone(),
            value,
        });
    }

    let margins = release.margins.as_ref().map(|m| {
        let mut one = |c: &crate::output_check::CheckedCount| {
            c.count.map(|v| noisy_count(v, &count_noise, rng))
        };
        DpMargins {
            rows: m.rows.iter().map(&mut one).collect(),
            columns: m.columns.iter().map(&mut one).collect(),
            total: one(&m.total),
        }
    });
    let excluded = release
        .excluded
        .iter()
        .map(|e| {
            (
                e.reason,
                e.checked.count.map(|v| noisy_count(v, &count_noise, rng)),
            )
        })
        .collect();
    Ok(DpRelease {
        statistic: release.statistic.clone(),
        cells,
        margins,
        excluded,
        cost,
    })
}

/// Draws `k` noise values (tests and calibration checks).
pub fn draws<R: Rng + CryptoRng>(noise: &IntegerNoise, rng: &mut R, k: usize) -> Vec<i64> {
    (0..k).map(|_| noise.sample(rng)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combine::combine;
    use crate::output_check::{check, Rules};
    use crate::partial::partial;
    use crate::query::{Limits, QueryForm};
    use crate::table::Table;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use serde_json::json;

    fn sd_of(x: &[i64]) -> (f64, f64) {
        let n = x.len() as f64;
        let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
        let var = x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt())
    }

    fn coverage(x: &[i64], half_width: u64) -> f64 {
        x.iter().filter(|v| v.unsigned_abs() <= half_width).count() as f64 / x.len() as f64
    }

    #[test]
    fn discrete_gaussian_matches_its_calibration() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for sigma in [3.0f64, 40.0] {
            let noise = IntegerNoise::gaussian(sigma * sigma).unwrap();
            let x = draws(&noise, &mut rng, 20_000);
            let (mean, sd) = sd_of(&x);
            // SE of the mean σ/√20000 ≈ 0.007σ; of the SD ≈ 0.005σ.
            assert!(mean.abs() < 0.03 * sigma, "σ={sigma} mean {mean}");
            assert!((sd / sigma - 1.0).abs() < 0.03, "σ={sigma} sd {sd}");
            let iv = noise.interval(0.95);
            assert!(iv.coverage >= 0.95 && iv.coverage < 0.95 + 0.15 / sigma);
            let c = coverage(&x, iv.half_width);
            // SE of a proportion near 0.95 over 20000 draws ≈ 0.0015.
            assert!(
                (c - iv.coverage).abs() < 0.008,
                "σ={sigma}: {c} vs {}",
                iv.coverage
            );
        }
    }

    #[test]
    fn discrete_laplace_matches_its_calibration() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let noise = IntegerNoise::laplace(2.5).unwrap();
        // q = e^{−0.4} = 0.67032; Var = 2q/(1−q)² = 1.34064/0.108689 = 12.3346.
        assert!((noise.variance() - 12.3346).abs() < 1e-3);
        let x = draws(&noise, &mut rng, 20_000);
        let (mean, sd) = sd_of(&x);
        assert!(mean.abs() < 0.1, "{mean}");
        assert!(
            (sd / noise.sd() - 1.0).abs() < 0.03,
            "{sd} vs {}",
            noise.sd()
        );
        let iv = noise.interval(0.95);
        // P(|X| > k) = 2q^{k+1}/(1+q) ≤ 0.05 ⇔ k + 1 ≥ ln(0.05·1.67032/2)/ln q = 7.94 → k = 7.
        assert_eq!(iv.half_width, 7);
        let c = coverage(&x, iv.half_width);
        assert!((c - iv.coverage).abs() < 0.008, "{c} vs {}", iv.coverage);
    }

    #[test]
    fn per_node_shares_add_up_to_the_calibrated_noise() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let total = IntegerNoise::gaussian(100.0).unwrap();
        let share = node_share(&total, 4).unwrap();
        assert_eq!(share.parameter(), 25.0);
        let sums: Vec<i64> = (0..20_000)
            .map(|_| (0..4).map(|_| share.sample(&mut rng)).sum())
            .collect();
        let (_, sd) = sd_of(&sums);
        assert!((sd / 10.0 - 1.0).abs() < 0.03, "{sd}");
        // With σ_node = 5 the correction τ is negligible: ρ ≈ 1/(2·100) = 0.005.
        let rho = distributed_gaussian_rho(25.0, 4, 1.0, 1.0, 1).unwrap();
        assert!((rho - 0.005).abs() < 1e-9, "{rho}");
        // With σ_node = 0.5 it is not: the bound exceeds the central one.
        let rho = distributed_gaussian_rho(0.25, 4, 1.0, 1.0, 1).unwrap();
        assert!(rho > 1.0 / (2.0 * 4.0 * 0.25));
        assert!(node_share(&IntegerNoise::laplace(1.0).unwrap(), 2).is_err());
    }

    #[test]
    fn conversion_to_the_permit_units() {
        // 30 Gaussian rounds with σ = 1: ρ = 30/2 = 15. The classic conversion on the same
        // order grid gives ≈ 41.3 at δ = 1e-5 (15α + ln(1e5)/(α − 1), minimised near α = 1.88;
        // the FL-EHDS figure of 41–42); the improved one is lower.
        let classic = orders()
            .into_iter()
            .map(|a| 15.0 * a + 1e5f64.ln() / (a - 1.0))
            .fold(f64::INFINITY, f64::min);
        assert!((41.0..42.0).contains(&classic), "{classic}");
        let improved = zcdp_to_epsilon(15.0, 1e-5);
        assert!(improved < classic && improved > 38.0, "{improved}");
        // Never worse than Bun & Steinke's ρ + 2√(ρ ln(1/δ)).
        for rho in [0.01, 0.1, 0.5, 2.0] {
            let bs = rho + 2.0 * (rho * 1e6f64.ln()).sqrt();
            assert!(zcdp_to_epsilon(rho, 1e-6) <= bs + 1e-12);
        }
        // Calibration inverts the conversion.
        let rho = rho_for_epsilon_delta(1.0, 1e-6).unwrap();
        assert!(zcdp_to_epsilon(rho, 1e-6) <= 1.0);
        assert!(zcdp_to_epsilon(rho * 1.001, 1e-6) > 1.0);
    }

    fn q(v: serde_json::Value) -> Query {
        let form: QueryForm = serde_json::from_value(v).unwrap();
        Query::parse(form, &Limits::default()).unwrap()
    }

    #[test]
    fn private_count_table_costs_what_was_asked() {
        let mut a = vec![0.0; 40];
        a.extend(vec![1.0; 60]);
        a.extend(vec![2.0; 4]);
        let t = Table::from_columns(vec![("a", a)]).unwrap();
        let query = q(json!({"statistic": "count",
            "group_by": [{"column": "a", "levels": [0, 1, 2]}],
            "dp": {"mechanism": "gaussian", "rho": 0.5}}));
        let c = combine(&query, &[partial(&query, &t).unwrap()]).unwrap();
        let r = check(&query, &c, &Rules::default());
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let d = privatize(&query, &c, &r, &mut rng).unwrap();
        // One-way with a total: ‖Δ‖₂² = 2 → σ² = 2/(2·0.5) = 2.
        assert!(d.cost.rho <= 0.5 && d.cost.rho > 0.4999, "{:?}", d.cost);
        // Cell 2 (4) is suppressed and so is its complement, cell 0 (40): no noisy value.
        assert!(d.cells[2].value.is_none() && d.cells[0].value.is_none());
        let Some(DpValue::Count { n }) = &d.cells[1].value else {
            panic!()
        };
        assert!((n.sd - 2f64.sqrt()).abs() < 1e-9);
        assert!(n.half_width_95 >= 2.0);
        assert!(d.margins.as_ref().unwrap().total.is_some());
        let json = serde_json::to_string(&d).unwrap();
        assert!(!json.contains("top"));
    }

    #[test]
    fn private_mean_is_close_and_its_intervals_cover() {
        // 200 values 0..199 clipped to [0, 100]: sum = Σ0..100 + 99·100 = 5050 + 9900 = 14950.
        let x: Vec<f64> = (0..200).map(f64::from).collect();
        let t = Table::from_columns(vec![("x", x)]).unwrap();
        let query = q(
            json!({"statistic": "mean", "variable": "x", "bounds": {"lo": 0, "hi": 100},
            "dp": {"mechanism": "laplace", "epsilon": 2.0}}),
        );
        let c = combine(&query, &[partial(&query, &t).unwrap()]).unwrap();
        let r = check(&query, &c, &Rules::default());
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let (mut hits_n, mut hits_sum) = (0, 0);
        let runs = 2000;
        for _ in 0..runs {
            let d = privatize(&query, &c, &r, &mut rng).unwrap();
            // ε split 1 + 1: counts b = 1/1, sums b = 1001/1 grid units of 0.1.
            assert_eq!(d.cost.pure_epsilon, Some(2.0));
            let Some(DpValue::Mean { n, sum, .. }) = &d.cells[0].value else {
                panic!()
            };
            hits_n += usize::from((n.value - 200.0).abs() <= n.half_width_95);
            hits_sum += usize::from((sum.value - 14950.0).abs() <= sum.half_width_95 + 1e-9);
        }
        let (cn, cs) = (hits_n as f64 / runs as f64, hits_sum as f64 / runs as f64);
        // Stated coverage ≥ 0.95; SE over 2000 runs ≈ 0.005.
        assert!((0.935..=1.0).contains(&cn), "{cn}");
        assert!((0.935..0.975).contains(&cs), "{cs}");
    }

    #[test]
    fn refuses_what_it_cannot_protect() {
        let t = Table::from_columns(vec![("x", vec![1.0; 20])]).unwrap();
        let query = q(json!({"statistic": "count"}));
        let c = combine(&query, &[partial(&query, &t).unwrap()]).unwrap();
        let r = check(&query, &c, &Rules::default());
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        assert!(matches!(
            privatize(&query, &c, &r, &mut rng),
            Err(NoiseError::Unsupported(_))
        ));
        assert!(IntegerNoise::gaussian(0.0).is_err());
        assert!(IntegerNoise::laplace(f64::NAN).is_err());
        assert!(matches!(
            IntegerNoise::gaussian(1e20),
            Err(NoiseError::ScaleTooLarge { .. })
        ));
    }
}
