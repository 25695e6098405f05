//! Summaries over repeated runs: mean and 95% confidence interval with Student's t
//! (five runs is far too few for the normal 1.96).
use serde::{Deserialize, Serialize};

/// Two-sided 97.5% quantiles of Student's t for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// `(mean, half-width)` of the 95% CI `mean +- t_{n-1} s / sqrt(n)`; half-width 0 for n < 2.
pub fn mean_ci95(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = T975.get(n - 2).copied().unwrap_or(1.96);
    (mean, t * var.sqrt() / (n as f64).sqrt())
}

/// One metric over runs: each run's value is the uniform average over sites.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub per_run: Vec<f64>,
    pub mean: f64,
    pub ci95: f64,
}

impl RunSummary {
    pub fn from_runs(per_run: Vec<f64>) -> Self {
        let (mean, ci95) = mean_ci95(&per_run);
        Self {
            per_run,
            mean,
            ci95,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_by_hand() {
        // values 1..5: mean 3, s = sqrt(2.5), t_4 = 2.776 -> 2.776 * 1.5811 / 2.2361 = 1.9629
        let (m, h) = mean_ci95(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(m, 3.0);
        assert!((h - 1.96293).abs() < 1e-4);
        assert_eq!(mean_ci95(&[0.7]), (0.7, 0.0));
    }
}
