//! Coordinate-wise trimmed mean (Yin, Chen, Ramchandran, Bartlett 2018, "Byzantine-Robust
//! Distributed Learning: Towards Optimal Statistical Rates", ICML 2018, arXiv:1803.01498).
//!
//! ```text
//! out_j = (1 / (n - 2b)) * sum of u_{k,j} over the sorted values at ranks b+1 .. n-b
//! ```
//!
//! b is either given ([`Trim::Count`]) or `floor(beta n)` ([`Trim::Fraction`], 0 <= beta < 1/2,
//! the paper's parametrisation); n > 2b is required ([`EngineError::TooFewUpdates`]). Sample
//! counts are ignored (see the module documentation). With at most b Byzantine updates every
//! output coordinate lies within the range of the honest values of that coordinate.
//!
//! Sensitivity under [`DpRobust`](super::DpRobust), replace-one, inputs of L2 norm <= C: fix a
//! coordinate and let the values a and a' differ only in site k's entry. Sorting is a
//! contraction in l1 (`sum_i |s_i(a) - s_i(a')| <= |a_k - a'_k|`: the sorted pairing minimises
//! the l1 cost over all pairings, and the identity pairing costs `|a_k - a'_k|`), so the trimmed
//! sum, a sum over a subset of ranks, moves by at most `|a_k - a'_k|`. Over all coordinates the
//! trimmed sum therefore moves by at most `||u_k - u'_k||_2 <= 2C` in L2, and the trimmed mean
//! by at most `2C / (n - 2b)`.
use serde::{Deserialize, Serialize};

use super::{run_plain, RobustReport, RobustRule};
use crate::error::{EngineError, Result};
use crate::strategy::{Aggregator, AggregatorKind, AggregatorReport};

/// How many values to drop on each side of every coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Trim {
    /// Exactly b values each side.
    Count(usize),
    /// `floor(beta n)` values each side, 0 <= beta < 1/2.
    Fraction(f64),
}

impl Default for Trim {
    /// beta = 0.1: tolerates up to 10% Byzantine sites.
    fn default() -> Self {
        Trim::Fraction(0.1)
    }
}

impl Trim {
    fn per_side(&self, n: usize) -> usize {
        match *self {
            Trim::Count(b) => b,
            Trim::Fraction(beta) => (beta * n as f64).floor() as usize,
        }
    }
}

/// Coordinate-wise trimmed mean.
#[derive(Debug)]
pub struct TrimmedMean {
    trim: Trim,
    last: Option<RobustReport>,
}

impl TrimmedMean {
    pub fn new(trim: Trim) -> Result<Self> {
        if let Trim::Fraction(beta) = trim {
            if !(0.0..0.5).contains(&beta) {
                return Err(EngineError::InvalidConfig(format!(
                    "trimmed-mean fraction must be in [0, 0.5), got {beta}"
                )));
            }
        }
        Ok(Self { trim, last: None })
    }

    pub fn last_report(&self) -> Option<&RobustReport> {
        self.last.as_ref()
    }

    /// b for `n` updates, checking n > 2b.
    fn resolve(&self, n: usize) -> Result<usize> {
        let b = self.trim.per_side(n);
        if n == 0 {
            return Err(EngineError::NoUpdates);
        }
        if n <= 2 * b {
            return Err(EngineError::TooFewUpdates {
                rule: "trimmed-mean",
                needed: 2 * b + 1,
                found: n,
            });
        }
        Ok(b)
    }
}

/// Per coordinate: sort the n values, average ranks b .. n - b (0-based, exclusive end).
/// Requires n > 2b.
pub(super) fn coordinate_trimmed_mean(updates: &[&[f32]], b: usize) -> Vec<f64> {
    let n = updates.len();
    let dim = updates.first().map_or(0, |u| u.len());
    let mut col = vec![0f64; n];
    (0..dim)
        .map(|j| {
            for (c, u) in col.iter_mut().zip(updates) {
                *c = u[j] as f64;
            }
            col.sort_by(f64::total_cmp);
            let kept = &col[b..n - b];
            kept.iter().sum::<f64>() / kept.len() as f64
        })
        .collect()
}

/// `2C / (n - 2b)`, see the module documentation.
pub(super) fn trimmed_sensitivity(n: usize, b: usize, clip: f64) -> f64 {
    2.0 * clip / (n - 2 * b) as f64
}

impl Aggregator for TrimmedMean {
    fn name(&self) -> &'static str {
        "trimmed-mean"
    }

    fn kind(&self) -> AggregatorKind {
        AggregatorKind::Robust
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

impl RobustRule for TrimmedMean {
    fn combine(
        &mut self,
        updates: &[&[f32]],
        _clip: Option<f64>,
    ) -> Result<(Vec<f64>, RobustReport)> {
        let n = updates.len();
        let b = self.resolve(n)?;
        let out = coordinate_trimmed_mean(updates, b);
        let mut report = RobustReport::new(Aggregator::name(self), n);
        report.selected = (0..n).collect();
        report.trimmed_per_coordinate = 2 * b;
        Ok((out, report))
    }

    fn sensitivity(&self, n: usize, clip: f64) -> Result<f64> {
        let b = self.resolve(n)?;
        Ok(trimmed_sensitivity(n, b, clip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const U: [&[f32]; 5] = [
        &[1.0, 4.0],
        &[2.0, -1.0],
        &[100.0, -50.0],
        &[3.0, 0.0],
        &[-1.0, 2.0],
    ];

    #[test]
    fn trimmed_mean_by_hand() {
        // b = 1: coordinate 0 sorted -1, 1, 2, 3, 100 -> (1 + 2 + 3)/3 = 2;
        // coordinate 1 sorted -50, -1, 0, 2, 4 -> (-1 + 0 + 2)/3 = 1/3
        let mut t = TrimmedMean::new(Trim::Count(1)).unwrap();
        let out = t.aggregate(&U, &[1.0; 5]).unwrap();
        assert_eq!(out, vec![2.0, (1.0f64 / 3.0) as f32]);
        assert_eq!(t.last_report().unwrap().trimmed_per_coordinate, 2);
        // beta = 0.2 -> b = floor(1.0) = 1, same result
        let mut t = TrimmedMean::new(Trim::Fraction(0.2)).unwrap();
        assert_eq!(t.aggregate(&U, &[1.0; 5]).unwrap(), out);
        // b = 0 is the plain mean: (105/5, -45/5) = (21, -9)
        let mut t = TrimmedMean::new(Trim::Count(0)).unwrap();
        assert_eq!(t.aggregate(&U, &[1.0; 5]).unwrap(), vec![21.0, -9.0]);
        // b = 2 is the median
        let mut t = TrimmedMean::new(Trim::Count(2)).unwrap();
        assert_eq!(t.aggregate(&U, &[1.0; 5]).unwrap(), vec![2.0, 0.0]);
    }

    #[test]
    fn config_and_size_checks() {
        assert!(TrimmedMean::new(Trim::Fraction(0.5)).is_err());
        assert!(TrimmedMean::new(Trim::Fraction(-0.1)).is_err());
        assert!(TrimmedMean::new(Trim::Fraction(f64::NAN)).is_err());
        let mut t = TrimmedMean::new(Trim::Count(3)).unwrap();
        assert!(matches!(
            t.aggregate(&U, &[1.0; 5]),
            Err(EngineError::TooFewUpdates {
                needed: 7,
                found: 5,
                ..
            })
        ));
        // sensitivity 2C / (n - 2b): n = 5, b = 1, C = 1.5 -> 3 / 3 = 1
        let t = TrimmedMean::new(Trim::Count(1)).unwrap();
        assert_eq!(t.sensitivity(5, 1.5).unwrap(), 1.0);
    }

    #[test]
    fn huge_byzantine_values_stay_within_the_honest_range() {
        let honest: [[f32; 2]; 6] = [
            [0.1, -0.2],
            [0.2, 0.0],
            [-0.1, 0.1],
            [0.0, -0.1],
            [0.3, 0.2],
            [0.05, 0.15],
        ];
        let byz = [[1e6f32, -1e6], [-1e6, 1e6]];
        let mut u: Vec<&[f32]> = honest.iter().map(|h| h.as_slice()).collect();
        u.insert(1, &byz[0]);
        u.insert(5, &byz[1]);
        // b = 2 >= number of Byzantine updates
        let out = TrimmedMean::new(Trim::Count(2))
            .unwrap()
            .aggregate(&u, &[1.0; 8])
            .unwrap();
        for (j, o) in out.iter().enumerate() {
            let lo = honest.iter().map(|h| h[j]).fold(f32::INFINITY, f32::min);
            let hi = honest
                .iter()
                .map(|h| h[j])
                .fold(f32::NEG_INFINITY, f32::max);
            assert!(
                lo <= *o && *o <= hi,
                "coordinate {j}: {o} outside [{lo}, {hi}]"
            );
        }
    }
}
