//! Robust aggregation under client-level differential privacy: clip, robust rule, Gaussian
//! noise calibrated to the rule's sensitivity.
//!
//! ```text
//! v_k = clip_C(u_k)                                   every site update to L2 norm <= C
//! a   = A(v_1, ..., v_n)                              the robust rule on the clipped updates
//! out = a + N(0, (sigma S)^2 I)                       S = A's replace-one L2 sensitivity
//! ```
//!
//! **Adjacency and accounting.** S is the replace-one sensitivity: two rounds are neighbours
//! when one site's update is replaced by any other update (the number of sites n is public and
//! fixed). Each rule declares S on inputs of norm <= C ([`RobustRule::sensitivity`], derived in
//! its file): mean 2C/n; trimmed mean with b per side 2C/(n - 2b); median 2C (n odd) or C
//! (n even); Krum and Multi-Krum 2C; Bulyan `2C sqrt(theta / beta)` (its output is not a
//! mean of whole vectors, so 2C does not hold); FLTrust 2C (root update clipped to C too).
//! One round is the Gaussian mechanism with noise multiplier sigma relative to S, i.e.
//! RDP(alpha) = alpha / (2 sigma^2) under replace-one adjacency; compose rounds with
//! [`crate::dp::RdpAccountant`] (sampling rate 1, one step per round). This differs from
//! [`DpFedAvgAggregator`](super::super::DpFedAvgAggregator), which uses add/remove adjacency
//! with sensitivity C on the clipped *sum* before dividing by the expected number of sites.
//! The two guarantees are not interchangeable: an epsilon accounted for this aggregator is a
//! replace-one epsilon (the number of sites is public), which protects a site's update
//! but not whether the site took part.
//!
//! **Floating point.** Updates are clipped to `C (1 - 1e-6)` in `f64` and stored as `f32`
//! (relative rounding <= 2^-24 per coordinate), so every clipped input has norm < C as the
//! derivations assume. The rules compute in `f64`. The output is released on a power-of-two
//! grid as in [`crate::dp::SnappedGaussian`] (Mironov 2012): with `gamma =
//! 2^floor(log2(2 eta S / sqrt(d)))`, eta = 1e-3, the release is `gamma (round(a / gamma) + K)`,
//! `K_j = round(sigma_g z_j)`, z_j ~ N(0, 1) from the ChaCha20 [`NoiseRng`]. Rounding both
//! neighbours' outputs moves their difference by at most `sqrt(d)` grid units in L2, so
//! `sigma_g = sigma (S (1 + 1e-9) / gamma + sqrt(d))` keeps noise multiplier >= sigma for the
//! rounded release (1e-9 covers the f64 arithmetic of the rules); the noise standard deviation
//! is `sigma_g gamma <= sigma S (1 + 2.001e-3)`. With sigma = 0 nothing is added or rounded:
//! the output is exactly the rule on the clipped updates (no privacy; for tests and ablations).
//!
//! The report holds raw update norms and the rule's selection: keep it inside the
//! aggregator's trust boundary. Use [`NoiseRng::from_os_entropy`] for real studies.
use rand::RngExt;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use super::{check_updates, norm, RobustReport, RobustRule};
use crate::dp::NoiseRng;
use crate::error::{EngineError, Result};
use crate::params::ParameterSet;
use crate::strategy::{Aggregator, AggregatorKind, AggregatorReport};

/// Clip target relative to C, so that `f32` rounding keeps clipped norms below C.
const CLIP_MARGIN: f64 = 1e-6;
/// Grid fineness (eta): the rounding adds at most this fraction of S to the noise scale, twice.
const GRID_SLACK: f64 = 1e-3;
/// Relative margin on S for the rules' `f64` arithmetic.
const SENSITIVITY_MARGIN: f64 = 1e-9;
/// Grid integers must stay far below 2^52 for exact sums in `f64`.
const GRID_LIMIT: f64 = 2_251_799_813_685_248.0; // 2^51

/// What one DP robust aggregation did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DpRobustReport {
    /// The rule's report on the clipped updates.
    pub robust: RobustReport,
    /// Pre-clipping L2 norm of each update, in input order (not privatised).
    pub norms: Vec<f64>,
    /// Updates that were scaled down by clipping.
    pub clipped: usize,
    /// Replace-one L2 sensitivity S of the rule for this n and C.
    pub sensitivity: f64,
    /// Standard deviation of the noise on each output coordinate (0 when sigma = 0).
    pub noise_std: f64,
    /// Grid spacing of the release (`None` when sigma = 0).
    pub grid: Option<f64>,
}

/// A robust rule under client-level DP (see the module documentation).
pub struct DpRobust {
    rule: Box<dyn RobustRule>,
    clip: f64,
    sigma: f64,
    rng: NoiseRng,
    last: Option<DpRobustReport>,
}

impl DpRobust {
    /// `rule` on updates clipped to `clip_norm`, plus noise of `noise_multiplier` times the
    /// rule's sensitivity (0 = no noise).
    pub fn new(
        rule: Box<dyn RobustRule>,
        clip_norm: f64,
        noise_multiplier: f64,
        rng: NoiseRng,
    ) -> Result<Self> {
        if !(clip_norm.is_finite() && clip_norm > 0.0) {
            return Err(EngineError::InvalidConfig(format!(
                "DP robust aggregation: clip norm must be finite and > 0, got {clip_norm}"
            )));
        }
        if !(noise_multiplier.is_finite() && noise_multiplier >= 0.0) {
            return Err(EngineError::InvalidConfig(format!(
                "DP robust aggregation: noise multiplier must be finite and >= 0, got \
                 {noise_multiplier}"
            )));
        }
        Ok(Self {
            rule,
            clip: clip_norm,
            sigma: noise_multiplier,
            rng,
            last: None,
        })
    }

    /// Sensitivity S of the wrapped rule for `n` updates at this clip norm.
    pub fn sensitivity(&self, n: usize) -> Result<f64> {
        self.rule.sensitivity(n, self.clip)
    }

    pub fn noise_multiplier(&self) -> f64 {
        self.sigma
    }

    pub fn clip_norm(&self) -> f64 {
        self.clip
    }

    /// The latest round's report.
    pub fn last_report(&self) -> Option<&DpRobustReport> {
        self.last.as_ref()
    }

    /// Releases `a` on the noise grid with Gaussian noise for sensitivity `s`.
    fn release(&mut self, a: &[f64], s: f64) -> Result<(Vec<f32>, f64, f64)> {
        let d = a.len() as f64;
        let grid = 2f64.powi((2.0 * GRID_SLACK * s / d.sqrt()).log2().floor() as i32);
        let s_grid = s * (1.0 + SENSITIVITY_MARGIN) / grid;
        let sigma_grid = self.sigma * (s_grid + d.sqrt());
        if !(grid.is_normal() && s_grid < 1e12 && sigma_grid < 1e13) {
            return Err(EngineError::InvalidConfig(format!(
                "DP robust aggregation: sensitivity {s} cannot be put on a noise grid for {d} \
                 coordinates"
            )));
        }
        let mut out = Vec::with_capacity(a.len());
        for v in a {
            let k = (v / grid).round_ties_even();
            if k.abs() >= GRID_LIMIT {
                return Err(EngineError::InvalidConfig(
                    "DP robust aggregation: output too large for the noise grid".into(),
                ));
            }
            let z: f64 = self.rng.sample(StandardNormal);
            out.push((grid * (k + (sigma_grid * z).round_ties_even())) as f32);
        }
        Ok((out, sigma_grid * grid, grid))
    }
}

impl Aggregator for DpRobust {
    fn name(&self) -> &'static str {
        "dp-robust"
    }

    fn kind(&self) -> AggregatorKind {
        AggregatorKind::RobustClientDp
    }

    fn report(&self) -> Option<AggregatorReport> {
        self.last.clone().map(AggregatorReport::RobustClientDp)
    }

    fn begin_round(&mut self, global: &ParameterSet) -> Result<()> {
        self.rule.begin_round(global)
    }

    fn aggregate(&mut self, updates: &[&[f32]], weights: &[f64]) -> Result<Vec<f32>> {
        check_updates(updates, weights)?;
        let n = updates.len();
        let s = self.rule.sensitivity(n, self.clip)?;
        let target = self.clip * (1.0 - CLIP_MARGIN);
        let mut norms = Vec::with_capacity(n);
        let mut clipped = 0;
        let owned: Vec<Vec<f32>> = updates
            .iter()
            .map(|u| {
                let nu = norm(u);
                norms.push(nu);
                if nu > target {
                    clipped += 1;
                    let c = target / nu;
                    u.iter().map(|v| (*v as f64 * c) as f32).collect()
                } else {
                    u.to_vec()
                }
            })
            .collect();
        let views: Vec<&[f32]> = owned.iter().map(Vec::as_slice).collect();
        let (a, robust) = self.rule.combine(&views, Some(self.clip))?;
        let (out, noise_std, grid) = if self.sigma > 0.0 {
            let (out, std, grid) = self.release(&a, s)?;
            (out, std, Some(grid))
        } else {
            (a.iter().map(|v| *v as f32).collect(), 0.0, None)
        };
        if out.iter().any(|v| !v.is_finite()) {
            return Err(EngineError::NonFinite("DP robust output".into()));
        }
        self.last = Some(DpRobustReport {
            robust,
            norms,
            clipped,
            sensitivity: s,
            noise_std,
            grid,
        });
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Bulyan, CoordinateMedian, Krum, Trim, TrimmedMean, UniformMean};
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn rng(seed: u8) -> NoiseRng {
        NoiseRng::from_seed_for_reproducible_runs([seed; 32])
    }

    fn clip_all(u: &[Vec<f32>], c: f64) -> Vec<Vec<f32>> {
        u.iter()
            .map(|v| {
                let n = norm(v);
                let t = c * (1.0 - CLIP_MARGIN);
                if n > t {
                    v.iter().map(|x| (*x as f64 * t / n) as f32).collect()
                } else {
                    v.clone()
                }
            })
            .collect()
    }

    fn random_updates(n: usize, d: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| (0..d).map(|_| r.random_range(-2.0f32..2.0)).collect())
            .collect()
    }

    fn views(u: &[Vec<f32>]) -> Vec<&[f32]> {
        u.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn sigma_zero_is_the_rule_on_clipped_updates() {
        let mut u = random_updates(7, 6, 1);
        u[3] = vec![1e6; 6];
        let clipped = clip_all(&u, 1.0);
        let rules: Vec<(Box<dyn RobustRule>, Box<dyn RobustRule>)> = vec![
            (Box::new(Krum::new(1)), Box::new(Krum::new(1))),
            (
                Box::new(Krum::multi(1, None).unwrap()),
                Box::new(Krum::multi(1, None).unwrap()),
            ),
            (
                Box::new(CoordinateMedian::new()),
                Box::new(CoordinateMedian::new()),
            ),
            (
                Box::new(TrimmedMean::new(Trim::Count(2)).unwrap()),
                Box::new(TrimmedMean::new(Trim::Count(2)).unwrap()),
            ),
            (Box::new(Bulyan::new(1)), Box::new(Bulyan::new(1))),
            (Box::new(UniformMean::new()), Box::new(UniformMean::new())),
        ];
        for (rule, mut plain) in rules {
            let mut dp = DpRobust::new(rule, 1.0, 0.0, rng(1)).unwrap();
            let a = dp.aggregate(&views(&u), &[1.0; 7]).unwrap();
            let b = plain.aggregate(&views(&clipped), &[1.0; 7]).unwrap();
            assert_eq!(a, b, "{}", plain.name());
            let r = dp.last_report().unwrap();
            assert_eq!(r.noise_std, 0.0);
            assert!(r.clipped >= 1 && (r.norms[3] - 1e6 * 6f64.sqrt()).abs() < 1.0);
            assert!(a.iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt() <= 1.3);
        }
    }

    #[test]
    fn sensitivities_by_hand() {
        let s = |rule: Box<dyn RobustRule>, n: usize| {
            DpRobust::new(rule, 1.5, 1.0, rng(0))
                .unwrap()
                .sensitivity(n)
                .unwrap()
        };
        // C = 1.5: mean 2C/n = 3/6 = 0.5; trimmed n = 7, b = 2: 3/3 = 1; median n = 7: 3,
        // n = 6: 3/2 = 1.5; Krum family: 3; Bulyan n = 7, f = 1: 3 sqrt(5/3)
        assert_eq!(s(Box::new(UniformMean::new()), 6), 0.5);
        assert_eq!(
            s(Box::new(TrimmedMean::new(Trim::Count(2)).unwrap()), 7),
            1.0
        );
        assert_eq!(s(Box::new(CoordinateMedian::new()), 7), 3.0);
        assert_eq!(s(Box::new(CoordinateMedian::new()), 6), 1.5);
        assert_eq!(s(Box::new(Krum::new(1)), 7), 3.0);
        assert_eq!(s(Box::new(Krum::multi(2, Some(3)).unwrap()), 7), 3.0);
        assert!((s(Box::new(Bulyan::new(1)), 7) - 3.0 * (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!(DpRobust::new(Box::new(Krum::new(1)), 1.0, 1.0, rng(0))
            .unwrap()
            .sensitivity(4)
            .is_err());
        assert!(DpRobust::new(Box::new(UniformMean::new()), 0.0, 1.0, rng(0)).is_err());
        assert!(DpRobust::new(Box::new(UniformMean::new()), 1.0, -1.0, rng(0)).is_err());
        assert!(DpRobust::new(Box::new(UniformMean::new()), 1.0, f64::NAN, rng(0)).is_err());
    }

    /// Replace one clipped update by another (its negation, or a random one) and check the
    /// output moves by at most the declared sensitivity.
    #[test]
    fn declared_sensitivity_bounds_replace_one_changes() {
        for seed in 0..30u64 {
            let (n, d, c) = (7, 5, 1.0);
            let u = clip_all(&random_updates(n, d, seed), c);
            let other = clip_all(&random_updates(1, d, 1000 + seed), c)[0].clone();
            let k = (seed as usize) % n;
            let mut rules: Vec<Box<dyn RobustRule>> = vec![
                Box::new(UniformMean::new()),
                Box::new(CoordinateMedian::new()),
                Box::new(TrimmedMean::new(Trim::Count(1)).unwrap()),
                Box::new(TrimmedMean::new(Trim::Count(2)).unwrap()),
                Box::new(Krum::new(1)),
                Box::new(Krum::multi(1, None).unwrap()),
                Box::new(Bulyan::new(1)),
            ];
            for rule in rules.iter_mut() {
                let s = rule.sensitivity(n, c).unwrap();
                let (a, _) = rule.combine(&views(&u), Some(c)).unwrap();
                for replacement in [u[k].iter().map(|v| -v).collect::<Vec<f32>>(), other.clone()] {
                    let mut v = u.clone();
                    v[k] = replacement;
                    let (b, _) = rule.combine(&views(&v), Some(c)).unwrap();
                    let diff = a
                        .iter()
                        .zip(&b)
                        .map(|(x, y)| (x - y).powi(2))
                        .sum::<f64>()
                        .sqrt();
                    assert!(diff <= s * (1.0 + 1e-9), "{}: {diff} > {s}", rule.name());
                }
            }
        }
    }

    #[test]
    fn noise_std_matches_sigma_times_sensitivity() {
        // median of 3 identical updates of norm < C: the rule returns them exactly, so the
        // output minus the update is the noise. S = 2C = 2, sigma = 0.5 -> std 1.
        let d = 2000;
        let u: Vec<f32> = (0..d).map(|j| 0.01 * ((j % 7) as f32 - 3.0)).collect();
        let mut dp = DpRobust::new(Box::new(CoordinateMedian::new()), 1.0, 0.5, rng(3)).unwrap();
        let mut sum = 0.0;
        let mut sq = 0.0;
        let mut count = 0.0;
        for _ in 0..10 {
            let out = dp.aggregate(&[&u, &u, &u], &[1.0; 3]).unwrap();
            for (o, x) in out.iter().zip(&u) {
                let e = (*o - *x) as f64;
                sum += e;
                sq += e * e;
                count += 1.0;
            }
            let r = dp.last_report().unwrap();
            assert_eq!(r.sensitivity, 2.0);
            assert!(r.noise_std >= 1.0 && r.noise_std <= 1.0 * (1.0 + 2.1e-3));
            // released on the grid
            let g = r.grid.unwrap();
            assert!(out.iter().all(|o| ((*o as f64) / g).fract() == 0.0));
        }
        let mean = sum / count;
        let std = (sq / count - mean * mean).sqrt();
        assert!(mean.abs() < 0.03, "mean {mean}");
        assert!((std - 1.0).abs() < 0.03, "std {std}");
    }
}
