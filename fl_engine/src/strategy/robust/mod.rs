//! Byzantine-robust aggregation rules, each an [`Aggregator`], and their composition with
//! client-level differential privacy ([`DpRobust`]).
//!
//! Every rule maps the round's flat site updates `u_k = w_k - w` to one update:
//!
//! | rule | file | needs | output |
//! |------|------|-------|--------|
//! | [`Krum`] (Blanchard et al. 2017) | `krum.rs` | n >= 2f + 3 | the update with the lowest Krum score |
//! | Multi-Krum (same paper) | `krum.rs` | n >= 2f + 3 | mean of the m lowest-scored updates |
//! | [`CoordinateMedian`] (Yin et al. 2018) | `median.rs` | n >= 1 | per-coordinate median |
//! | [`TrimmedMean`] (Yin et al. 2018) | `trimmed_mean.rs` | n > 2b | per-coordinate mean without the b lowest and b highest |
//! | [`Bulyan`] (El Mhamdi et al. 2018) | `bulyan.rs` | n >= 4f + 3 | repeated Krum, then a trimmed mean around the median |
//! | [`FlTrust`] (Cao et al. 2021) | `fltrust.rs` | a root update: trained on a server root dataset, or supplied each round | trust-weighted mean of updates rescaled to the root update's norm |
//! | [`UniformMean`] | this file | n >= 1 | plain mean (the non-robust reference, e.g. under DP) |
//!
//! **Sample weights are ignored** by every rule here: the weights `n_k` are counts the sites
//! report themselves, and weighting by them would let one Byzantine site claim a huge `n_k` and
//! take over the mean (or, for the selection rules, the tie-breaks). None of the papers weights
//! by sample count; the rules count sites, not examples.
//!
//! Every rule checks its inputs (at least one update, equal non-zero lengths, finite values,
//! one weight per update) and computes in `f64`; ties are broken by the lower site index so
//! that the result never depends on anything but the inputs' values and order. The latest
//! round's [`RobustReport`] (selected sites, Krum scores, trimmed counts, trust scores) is
//! available from each rule's `last_report`. It describes individual sites' updates: keep it
//! inside the aggregator's trust boundary when the study runs under DP.
//!
//! Composition with DP ([`DpRobust`], `dp.rs`) clips every update to L2 norm C, applies the
//! rule, and adds Gaussian noise calibrated to the rule's replace-one sensitivity on clipped
//! inputs, which each rule declares through [`RobustRule::sensitivity`] (derivations there).
mod bulyan;
mod dp;
mod fltrust;
mod krum;
mod median;
mod trimmed_mean;

use serde::{Deserialize, Serialize};

pub use bulyan::Bulyan;
pub use dp::{DpRobust, DpRobustReport};
pub use fltrust::FlTrust;
pub use krum::Krum;
pub use median::CoordinateMedian;
pub use trimmed_mean::{Trim, TrimmedMean};

use super::{Aggregator, AggregatorKind, AggregatorReport};
use crate::error::{EngineError, Result};

/// A robust rule: an [`Aggregator`] that can also run on clipped inputs inside [`DpRobust`]
/// and states the sensitivity of its output there.
pub trait RobustRule: Aggregator {
    /// The rule on validated updates (see [`check_updates`]): the combined update in `f64` and
    /// what the rule did. `clip` is the L2 clip norm when the inputs were clipped by
    /// [`DpRobust`] (FLTrust then also clips its root update to it); `None` otherwise.
    fn combine(
        &mut self,
        updates: &[&[f32]],
        clip: Option<f64>,
    ) -> Result<(Vec<f64>, RobustReport)>;

    /// Replace-one L2 sensitivity of [`combine`](Self::combine)'s output over `n` inputs that
    /// each have L2 norm at most `clip`: the largest `||A(u) - A(u')||_2` when `u` and `u'`
    /// differ in one site's update. Errors where the rule cannot run on `n` updates.
    fn sensitivity(&self, n: usize, clip: f64) -> Result<f64>;
}

/// What a robust rule did in one round.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RobustReport {
    /// Rule name.
    pub rule: String,
    /// Number of updates received.
    pub n: usize,
    /// Indices (input order) of the updates that entered the output: Krum's pick, Multi-Krum's
    /// m, Bulyan's selection set, the sites FLTrust trusts (score > 0). The coordinate-wise
    /// rules list every index (each coordinate chooses its own values).
    pub selected: Vec<usize>,
    /// Krum scores in input order (Krum, Multi-Krum; Bulyan: its first Krum pass).
    pub scores: Vec<f64>,
    /// Values left out of each coordinate's average (trimmed mean: 2b; median: n - 1 or
    /// n - 2; Bulyan: theta - beta among its theta selected).
    pub trimmed_per_coordinate: usize,
    /// FLTrust trust scores `ReLU(cos(g_i, g_0))` in input order.
    pub trust: Vec<f64>,
    /// FLTrust: L2 norm of the root update the site updates were rescaled to.
    pub root_norm: Option<f64>,
}

impl RobustReport {
    fn new(rule: &str, n: usize) -> Self {
        Self {
            rule: rule.to_string(),
            n,
            ..Self::default()
        }
    }
}

/// Checks what every rule needs: at least one update, one weight per update (the weights are
/// otherwise ignored), equal non-zero lengths and finite values. Returns the dimension.
pub fn check_updates(updates: &[&[f32]], weights: &[f64]) -> Result<usize> {
    let first = updates.first().ok_or(EngineError::NoUpdates)?;
    if updates.len() != weights.len() {
        return Err(EngineError::InvalidConfig(format!(
            "{} weights for {} updates",
            weights.len(),
            updates.len()
        )));
    }
    let dim = first.len();
    if dim == 0 {
        return Err(EngineError::InvalidConfig(
            "updates have no coordinates".into(),
        ));
    }
    if let Some(u) = updates.iter().find(|u| u.len() != dim) {
        return Err(EngineError::LengthMismatch {
            expected: dim,
            found: u.len(),
        });
    }
    if let Some(k) = updates
        .iter()
        .position(|u| u.iter().any(|v| !v.is_finite()))
    {
        return Err(EngineError::NonFinite(format!("update {k}")));
    }
    Ok(dim)
}

/// Runs `rule` as a plain aggregator: checks the inputs, combines, casts to `f32`.
fn run_plain<R: RobustRule + ?Sized>(
    rule: &mut R,
    updates: &[&[f32]],
    weights: &[f64],
) -> Result<(Vec<f32>, RobustReport)> {
    check_updates(updates, weights)?;
    let (out, report) = rule.combine(updates, None)?;
    let out: Vec<f32> = out.into_iter().map(|v| v as f32).collect();
    if out.iter().any(|v| !v.is_finite()) {
        return Err(EngineError::NonFinite(format!("{} output", report.rule)));
    }
    Ok((out, report))
}

/// Squared Euclidean distance in `f64`.
fn sq_dist(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let d = *x as f64 - *y as f64;
            d * d
        })
        .sum()
}

/// Euclidean norm in `f64`.
fn norm(a: &[f32]) -> f64 {
    a.iter()
        .map(|x| (*x as f64) * (*x as f64))
        .sum::<f64>()
        .sqrt()
}

/// Coordinate-wise mean of `rows` (indices into `updates`) in `f64`.
fn mean_of(updates: &[&[f32]], rows: &[usize]) -> Vec<f64> {
    let dim = updates.first().map_or(0, |u| u.len());
    let mut acc = vec![0f64; dim];
    for &i in rows {
        for (a, v) in acc.iter_mut().zip(updates[i]) {
            *a += *v as f64;
        }
    }
    let m = rows.len().max(1) as f64;
    acc.iter_mut().for_each(|a| *a /= m);
    acc
}

/// The plain uniform mean `sum_k u_k / n` (not robust): the reference rule, e.g. for DP
/// aggregation that should treat every site alike. Replace-one sensitivity on inputs of norm
/// <= C: the mean moves by `(u_k - u'_k) / n`, at most `2C / n`.
#[derive(Debug, Default)]
pub struct UniformMean {
    last: Option<RobustReport>,
}

impl UniformMean {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn last_report(&self) -> Option<&RobustReport> {
        self.last.as_ref()
    }
}

impl Aggregator for UniformMean {
    fn name(&self) -> &'static str {
        "uniform-mean"
    }

    fn kind(&self) -> AggregatorKind {
        AggregatorKind::Mean
    }

    fn report(&self) -> Option<AggregatorReport> {
        self.last.clone().map(AggregatorReport::Robust)
    }

    fn aggregate(&mut self, updates: &[&[f32]], weights: &[f64]) -> Result<Vec<f32>> {
        let (out, report) = run_plain(self, updates, weights)?;
        self.last = Some(report);
        Ok(out)
    }
}

impl RobustRule for UniformMean {
    fn combine(
        &mut self,
        updates: &[&[f32]],
        _clip: Option<f64>,
    ) -> Result<(Vec<f64>, RobustReport)> {
        let all: Vec<usize> = (0..updates.len()).collect();
        let mut report = RobustReport::new(self.name(), updates.len());
        report.selected = all.clone();
        Ok((mean_of(updates, &all), report))
    }

    fn sensitivity(&self, n: usize, clip: f64) -> Result<f64> {
        if n == 0 {
            return Err(EngineError::NoUpdates);
        }
        Ok(2.0 * clip / n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_checks() {
        assert!(matches!(
            check_updates(&[], &[]),
            Err(EngineError::NoUpdates)
        ));
        assert!(check_updates(&[&[1.0], &[1.0, 2.0]], &[1.0, 1.0]).is_err());
        assert!(check_updates(&[&[1.0]], &[1.0, 1.0]).is_err());
        assert!(check_updates(&[&[f32::NAN]], &[1.0]).is_err());
        assert!(check_updates(&[&[]], &[1.0]).is_err());
        assert_eq!(check_updates(&[&[1.0, 2.0]], &[7.0]).unwrap(), 2);
    }

    #[test]
    fn uniform_mean_ignores_weights() {
        // (1 + 4) / 2 = 2.5, (0 + 2) / 2 = 1 whatever the claimed sample counts
        let mut m = UniformMean::new();
        let out = m
            .aggregate(&[&[1.0, 0.0], &[4.0, 2.0]], &[1.0, 1e9])
            .unwrap();
        assert_eq!(out, vec![2.5, 1.0]);
        assert_eq!(m.sensitivity(4, 1.0).unwrap(), 0.5);
    }
}
