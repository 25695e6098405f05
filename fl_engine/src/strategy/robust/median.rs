//! Coordinate-wise median (Yin, Chen, Ramchandran, Bartlett 2018, "Byzantine-Robust
//! Distributed Learning: Towards Optimal Statistical Rates", ICML 2018, arXiv:1803.01498).
//!
//! ```text
//! out_j = median_k u_{k,j}      (n odd: the middle value; n even: mean of the two middle values)
//! ```
//!
//! Each coordinate is sorted on its own (`f64`, total order). Sample counts are ignored (see the
//! module documentation). With fewer than n/2 Byzantine updates every output coordinate lies
//! within the range of the honest values of that coordinate, however large the Byzantine ones.
//!
//! Sensitivity under [`DpRobust`](super::DpRobust): the median is the trimmed mean with
//! b = (n - 1)/2 (n odd) or b = n/2 - 1 (n even), so by the argument in `trimmed_mean.rs` its
//! replace-one L2 sensitivity on inputs of norm <= C is 2C/(n - 2b): 2C for odd n, C for even n.
use super::trimmed_mean::{coordinate_trimmed_mean, trimmed_sensitivity};
use super::{run_plain, RobustReport, RobustRule};
use crate::error::{EngineError, Result};
use crate::strategy::{Aggregator, AggregatorKind, AggregatorReport};

/// Coordinate-wise median.
#[derive(Debug, Default)]
pub struct CoordinateMedian {
    last: Option<RobustReport>,
}

impl CoordinateMedian {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn last_report(&self) -> Option<&RobustReport> {
        self.last.as_ref()
    }
}

/// Values trimmed from each side so that the trimmed mean is the median.
fn median_trim(n: usize) -> usize {
    (n - 1) / 2
}

impl Aggregator for CoordinateMedian {
    fn name(&self) -> &'static str {
        "coordinate-median"
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

impl RobustRule for CoordinateMedian {
    fn combine(
        &mut self,
        updates: &[&[f32]],
        _clip: Option<f64>,
    ) -> Result<(Vec<f64>, RobustReport)> {
        let n = updates.len();
        if n == 0 {
            return Err(EngineError::NoUpdates);
        }
        let b = median_trim(n);
        let out = coordinate_trimmed_mean(updates, b);
        let mut report = RobustReport::new(Aggregator::name(self), n);
        report.selected = (0..n).collect();
        report.trimmed_per_coordinate = 2 * b;
        Ok((out, report))
    }

    fn sensitivity(&self, n: usize, clip: f64) -> Result<f64> {
        if n == 0 {
            return Err(EngineError::NoUpdates);
        }
        Ok(trimmed_sensitivity(n, median_trim(n), clip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_by_hand_odd_and_even() {
        // coordinate 0: -1, 1, 2, 3, 100 -> 2; coordinate 1: -50, -1, 0, 2, 4 -> 0
        let u: [&[f32]; 5] = [
            &[1.0, 4.0],
            &[2.0, -1.0],
            &[100.0, -50.0],
            &[3.0, 0.0],
            &[-1.0, 2.0],
        ];
        let mut m = CoordinateMedian::new();
        assert_eq!(m.aggregate(&u, &[1.0; 5]).unwrap(), vec![2.0, 0.0]);
        assert_eq!(m.last_report().unwrap().trimmed_per_coordinate, 4);
        // without the outlier: -1, 1, 2, 3 -> (1 + 2)/2 = 1.5; -1, 0, 2, 4 -> (0 + 2)/2 = 1
        let even: [&[f32]; 4] = [u[0], u[1], u[3], u[4]];
        assert_eq!(m.aggregate(&even, &[1.0; 4]).unwrap(), vec![1.5, 1.0]);
        assert_eq!(m.sensitivity(5, 1.0).unwrap(), 2.0);
        assert_eq!(m.sensitivity(4, 1.0).unwrap(), 1.0);
        assert_eq!(m.sensitivity(1, 1.0).unwrap(), 2.0);
    }

    #[test]
    fn huge_byzantine_values_stay_within_the_honest_range() {
        let honest: [[f32; 3]; 4] = [
            [0.1, -0.2, 0.3],
            [0.2, 0.0, 0.1],
            [-0.1, 0.1, 0.2],
            [0.0, -0.1, 0.4],
        ];
        let byz = [1e6f32, -1e6, 1e6];
        let mut u: Vec<&[f32]> = honest.iter().map(|h| h.as_slice()).collect();
        u.insert(2, &byz);
        let out = CoordinateMedian::new().aggregate(&u, &[1.0; 5]).unwrap();
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
