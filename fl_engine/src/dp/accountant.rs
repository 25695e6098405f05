//! RDP accountant: composes sampled-Gaussian steps and answers "what would ε be after this
//! round?" before the round runs.
//!
//! ```text
//! RDP_total(α) = Σ_k T_k · RDP_{q_k, σ_k}(α)       (composition over the history)
//! ε(δ)         = conversion(RDP_total, δ)           (see RdpConversion)
//! σ*(ε, q, T, δ) = min { σ : ε_{q,σ,T}(δ) ≤ ε }       (bisection; ε is decreasing in σ)
//! ```
//!
//! The serialised form holds the orders, the conversion and the history of steps only; the RDP
//! totals are recomputed (and the history re-validated) on deserialisation, so a stored
//! accountant cannot carry RDP figures that disagree with its history.
//!
//! ```
//! use fl_engine::dp::{RdpAccountant, SampledGaussian};
//! let mut acc = RdpAccountant::new();
//! let round = SampledGaussian::new(1.0, 1.0, 1).unwrap();
//! let next = acc.epsilon_after(&round, 1e-5).unwrap();
//! assert!(acc.try_spend(round, 1e-5, next.epsilon + 1e-9).is_ok());
//! assert!(acc.try_spend(round, 1e-5, next.epsilon).is_err()); // second round would overspend
//! assert_eq!(acc.history().len(), 1);
//! ```

use serde::{Deserialize, Serialize};

use super::conversion::{rdp_to_epsilon, PrivacySpent, RdpConversion};
use super::error::{require_delta, require_positive, require_rate, DpError, Result};
use super::rdp::{default_orders, rdp_sampled_gaussian, validate_orders};

/// `steps` applications of the Gaussian mechanism with noise multiplier σ on batches
/// Poisson-sampled with rate q (q = 1: every record/site every step).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SampledGaussian {
    /// Sampling rate q, 0 < q ≤ 1.
    pub sampling_rate: f64,
    /// Noise multiplier σ > 0 (noise std / L2 sensitivity).
    pub noise_multiplier: f64,
    /// Number of steps T ≥ 1.
    pub steps: u64,
}

impl SampledGaussian {
    /// Validated constructor.
    pub fn new(sampling_rate: f64, noise_multiplier: f64, steps: u64) -> Result<Self> {
        let s = Self {
            sampling_rate,
            noise_multiplier,
            steps,
        };
        s.validate()?;
        Ok(s)
    }

    fn validate(&self) -> Result<()> {
        require_rate("sampling_rate", self.sampling_rate)?;
        require_positive("noise_multiplier", self.noise_multiplier)?;
        if self.steps == 0 {
            return Err(DpError::InvalidParameter {
                name: "steps",
                value: 0.0,
                requirement: "must be >= 1",
            });
        }
        Ok(())
    }

    /// RDP of all `steps` at each order.
    pub fn rdp(&self, orders: &[f64]) -> Result<Vec<f64>> {
        self.validate()?;
        let one = rdp_sampled_gaussian(self.sampling_rate, self.noise_multiplier, orders)?;
        Ok(one.into_iter().map(|r| r * self.steps as f64).collect())
    }
}

/// Composes sampled-Gaussian steps under Rényi DP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "AccountantState", into = "AccountantState")]
pub struct RdpAccountant {
    orders: Vec<f64>,
    conversion: RdpConversion,
    history: Vec<SampledGaussian>,
    rdp: Vec<f64>,
}

/// What is stored: everything except the derived RDP totals.
#[derive(Serialize, Deserialize)]
struct AccountantState {
    orders: Vec<f64>,
    conversion: RdpConversion,
    history: Vec<SampledGaussian>,
}

impl TryFrom<AccountantState> for RdpAccountant {
    type Error = DpError;
    fn try_from(s: AccountantState) -> Result<Self> {
        let mut acc = RdpAccountant::with_orders(s.orders, s.conversion)?;
        for step in s.history {
            acc.spend(step)?;
        }
        Ok(acc)
    }
}

impl From<RdpAccountant> for AccountantState {
    fn from(a: RdpAccountant) -> Self {
        Self {
            orders: a.orders,
            conversion: a.conversion,
            history: a.history,
        }
    }
}

impl Default for RdpAccountant {
    fn default() -> Self {
        Self::new()
    }
}

impl RdpAccountant {
    /// Empty accountant on [`default_orders`] with the improved conversion.
    pub fn new() -> Self {
        let orders = default_orders();
        Self {
            rdp: vec![0.0; orders.len()],
            orders,
            conversion: RdpConversion::Improved,
            history: Vec::new(),
        }
    }

    /// Empty accountant on a custom order grid and conversion.
    pub fn with_orders(orders: Vec<f64>, conversion: RdpConversion) -> Result<Self> {
        validate_orders(&orders)?;
        Ok(Self {
            rdp: vec![0.0; orders.len()],
            orders,
            conversion,
            history: Vec::new(),
        })
    }

    /// The RDP orders tracked.
    pub fn orders(&self) -> &[f64] {
        &self.orders
    }

    /// Accumulated RDP at each order.
    pub fn rdp(&self) -> &[f64] {
        &self.rdp
    }

    /// Conversion used by [`epsilon`](Self::epsilon) and [`epsilon_after`](Self::epsilon_after).
    pub fn conversion(&self) -> RdpConversion {
        self.conversion
    }

    /// Steps spent so far (consecutive identical (q, σ) entries are merged).
    pub fn history(&self) -> &[SampledGaussian] {
        &self.history
    }

    /// ε spent so far at `delta` (0 before any step).
    pub fn epsilon(&self, delta: f64) -> Result<PrivacySpent> {
        rdp_to_epsilon(&self.orders, &self.rdp, delta, self.conversion)
    }

    /// ε at `delta` if `next` were spent on top of the history; changes nothing.
    pub fn epsilon_after(&self, next: &SampledGaussian, delta: f64) -> Result<PrivacySpent> {
        require_delta(delta)?;
        let total = self.total_with(next)?;
        rdp_to_epsilon(&self.orders, &total, delta, self.conversion)
    }

    /// Records `step` as spent.
    pub fn spend(&mut self, step: SampledGaussian) -> Result<()> {
        self.rdp = self.total_with(&step)?;
        match self.history.last_mut() {
            Some(last)
                if last.sampling_rate == step.sampling_rate
                    && last.noise_multiplier == step.noise_multiplier
                    && last.steps.checked_add(step.steps).is_some() =>
            {
                last.steps += step.steps
            }
            _ => self.history.push(step),
        }
        Ok(())
    }

    /// Spends `step` only if ε at `delta` stays within `epsilon_budget`; otherwise returns
    /// [`DpError::BudgetExceeded`] and leaves the accountant unchanged.
    pub fn try_spend(
        &mut self,
        step: SampledGaussian,
        delta: f64,
        epsilon_budget: f64,
    ) -> Result<PrivacySpent> {
        require_positive("epsilon_budget", epsilon_budget)?;
        let after = self.epsilon_after(&step, delta)?;
        if after.epsilon > epsilon_budget {
            return Err(DpError::BudgetExceeded {
                would_be: after.epsilon,
                budget: epsilon_budget,
                delta,
            });
        }
        self.spend(step)?;
        Ok(after)
    }

    fn total_with(&self, step: &SampledGaussian) -> Result<Vec<f64>> {
        let add = step.rdp(&self.orders)?;
        Ok(self.rdp.iter().zip(add).map(|(a, b)| a + b).collect())
    }
}

/// Largest noise multiplier tried by [`sigma_for_target_epsilon`].
pub const MAX_SIGMA: f64 = 1e4;

/// Smallest σ (to relative precision 1e-9, rounded up) such that `steps` sampled-Gaussian steps
/// with rate `q` stay within `target_epsilon` at `delta`.
pub fn sigma_for_target_epsilon(
    target_epsilon: f64,
    q: f64,
    steps: u64,
    delta: f64,
    orders: &[f64],
    conversion: RdpConversion,
) -> Result<f64> {
    require_positive("target_epsilon", target_epsilon)?;
    require_delta(delta)?;
    validate_orders(orders)?;
    let eps = |sigma: f64| -> Result<f64> {
        let rdp = SampledGaussian::new(q, sigma, steps)?.rdp(orders)?;
        Ok(rdp_to_epsilon(orders, &rdp, delta, conversion)?.epsilon)
    };
    // Bracket: eps(lo) > target >= eps(hi).
    let (mut lo, mut hi) = (0.5, 1.0);
    if eps(hi)? > target_epsilon {
        while eps(hi)? > target_epsilon {
            lo = hi;
            hi *= 2.0;
            if hi > MAX_SIGMA {
                return Err(DpError::TargetUnreachable {
                    target: target_epsilon,
                    max_sigma: MAX_SIGMA,
                });
            }
        }
    } else {
        // ε grows without bound as σ → 0, so this halving ends; the floor guards the loop.
        while eps(lo)? <= target_epsilon {
            hi = lo;
            lo /= 2.0;
            if lo < 1e-6 {
                return Ok(hi);
            }
        }
    }
    while (hi - lo) > 1e-9 * hi {
        let mid = 0.5 * (lo + hi);
        if eps(mid)? <= target_epsilon {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}
