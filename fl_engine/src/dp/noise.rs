//! Gaussian mechanism on a power-of-two grid (the floating-point-safe variant of N(0, (σC)²)).
//!
//! Textbook DP-FedAvg releases `s + N(0, (σC)² I)` for a sum `s` of updates clipped to L2 norm C.
//! Computed naively in floating point, the set of values `s_j + noise` can take depends on `s_j`'s
//! bit pattern, so one output can rule out a neighbouring input (Mironov 2012, "On significance
//! of the least significant bits for differential privacy"). The fix here follows Mironov's
//! snapping idea: every released value lies on one fixed grid `γZ`, whatever the input.
//!
//! ```text
//! γ   = 2^⌊log2(2ηC/√d)⌋                       power of two, so k·γ is exact in f64 (η = 1e-3)
//! v_i = round(c_i u_i / γ) ∈ Z^d               clipped update of site i, rounded per coordinate
//! a   = Σ_i v_i                                exact: integer-valued f64 below 2^52
//! K_j = round(σ_g z_j),  z_j ~ N(0,1)          σ_g = σ (C(1+10⁻⁹)/γ + √d/2)
//! out = γ (a + K)                              exact, on the grid γZ
//! ```
//!
//! Privacy: removing site i changes `a` by `v_i`, with `‖v_i‖₂ ≤ C/γ + √d/2` (each coordinate
//! rounds by at most 1/2; the 10⁻⁹ absorbs floating-point error in the norm used for clipping).
//! `a + K` is `round(a + σ_g z)` because `a` is an integer vector, i.e. post-processing of the
//! Gaussian mechanism with noise multiplier `σ_g / (C/γ + √d/2) ≥ σ`. The accountant's σ is therefore
//! a valid guarantee; the extra noise costs at most a factor `1 + η` in standard deviation. The
//! remaining gap to the ideal mechanism is the accuracy of the f64 Gaussian sampler (Ziggurat over
//! ChaCha20 output): it shifts probability masses of `K_j` by amounts near 2⁻⁵⁰, but no longer the
//! support, which is what the attack exploits.
//!
//! ```
//! use fl_engine::dp::SnappedGaussian;
//! let g = SnappedGaussian::new(1.0, 1.0, 10_000).unwrap();
//! assert!(g.grid().log2().fract() == 0.0); // power of two
//! assert!((g.noise_std() - 1.0).abs() < 2e-3); // σC up to (1 + η)
//! ```

use rand::RngExt;
use rand_chacha::ChaCha20Rng;
use rand_distr::StandardNormal;

use super::error::{require_positive, DpError, Result};

/// How much larger than √d/2 the clip norm is in grid units (η above): bounds the noise inflation.
const GRID_SLACK: f64 = 1e-3;
/// Relative margin on C covering rounding error of the f64 norm used for clipping (≤ 1e-12 here).
const NORM_MARGIN: f64 = 1e-9;
/// Adding then subtracting 1.5·2⁵² rounds an f64 with |x| < 2⁵¹ to the nearest integer (ties to
/// even) using only additions, which vectorise on every x86-64, unlike `f64::round`.
const ROUNDING_MAGIC: f64 = 6_755_399_441_055_744.0;
/// Largest magnitude the grid integers may reach so that sums stay exact in f64.
pub(crate) const EXACT_LIMIT: f64 = 4_503_599_627_370_496.0; // 2^52

/// Rounds `x` to the nearest integer (ties to even); exact for |x| < 2⁵¹.
#[inline(always)]
pub(crate) fn round_to_integer(x: f64) -> f64 {
    (x + ROUNDING_MAGIC) - ROUNDING_MAGIC
}

/// Grid-snapped Gaussian mechanism for a sum of `dim` coordinates with L2 sensitivity `clip_norm`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SnappedGaussian {
    grid: f64,
    sigma_grid: f64,
    clip_in_grid: f64,
}

impl SnappedGaussian {
    /// Mechanism with noise multiplier σ for vectors of `dim` coordinates clipped to `clip_norm`.
    pub fn new(clip_norm: f64, noise_multiplier: f64, dim: usize) -> Result<Self> {
        require_positive("clip_norm", clip_norm)?;
        require_positive("noise_multiplier", noise_multiplier)?;
        if dim == 0 {
            return Err(DpError::EmptyUpdate);
        }
        let half_sqrt_d = (dim as f64).sqrt() / 2.0;
        let target = clip_norm * GRID_SLACK / half_sqrt_d;
        let grid = 2f64.powi(target.log2().floor() as i32);
        let clip_in_grid = clip_norm / grid;
        let sigma_grid = noise_multiplier * (clip_in_grid * (1.0 + NORM_MARGIN) + half_sqrt_d);
        // The grid must be a normal power of two and all grid integers must stay far below 2^51.
        if !(grid.is_normal() && clip_in_grid < 1e12 && sigma_grid < 1e13) {
            return Err(DpError::InvalidParameter {
                name: "clip_norm",
                value: clip_norm,
                requirement: "too small or too large to build a noise grid for this dimension",
            });
        }
        Ok(Self {
            grid,
            sigma_grid,
            clip_in_grid,
        })
    }

    /// Grid spacing γ (a power of two); every released sum coordinate is a multiple of it.
    pub fn grid(&self) -> f64 {
        self.grid
    }

    /// Standard deviation of the noise added to each sum coordinate, in parameter units
    /// (σC up to a factor 1 + 10⁻³).
    pub fn noise_std(&self) -> f64 {
        self.sigma_grid * self.grid
    }

    /// Clip norm expressed in grid units, C/γ.
    pub(crate) fn clip_in_grid(&self) -> f64 {
        self.clip_in_grid
    }

    /// Adds `round(σ_g z)` to each entry of `acc`, which must hold grid integers (see module doc).
    pub(crate) fn add_grid_noise(&self, acc: &mut [f64], rng: &mut ChaCha20Rng) {
        for a in acc.iter_mut() {
            let z: f64 = rng.sample(StandardNormal);
            *a += round_to_integer(self.sigma_grid * z);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_rounding_matches_round_ties_even() {
        for &x in &[
            0.0,
            0.4,
            0.5,
            1.5,
            2.5,
            -0.5,
            -1.5,
            -2.6,
            1e10 + 0.49,
            -123456.5,
        ] {
            assert_eq!(round_to_integer(x), f64::round_ties_even(x), "x = {x}");
        }
    }

    #[test]
    fn grid_is_fine_enough() {
        for dim in [1usize, 10, 1_000_000] {
            let g = SnappedGaussian::new(0.7, 1.3, dim).unwrap();
            let half_sqrt_d = (dim as f64).sqrt() / 2.0;
            assert!(half_sqrt_d <= GRID_SLACK * g.clip_in_grid() * (1.0 + 1e-12));
            assert!(half_sqrt_d > GRID_SLACK * g.clip_in_grid() / 2.0);
            assert!(g.noise_std() >= 0.7 * 1.3 && g.noise_std() <= 0.7 * 1.3 * 1.0011);
        }
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(SnappedGaussian::new(0.0, 1.0, 5).is_err());
        assert!(SnappedGaussian::new(1.0, -1.0, 5).is_err());
        assert!(SnappedGaussian::new(1.0, f64::NAN, 5).is_err());
        assert!(SnappedGaussian::new(1.0, 1.0, 0).is_err());
        assert!(SnappedGaussian::new(1e-320, 1.0, 5).is_err());
    }
}
