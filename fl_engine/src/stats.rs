//! Wilcoxon signed-rank test (Wilcoxon 1945, "Individual comparisons by ranking methods"),
//! the paired test the privacy-utility tables report for each method against FedAvg.
//!
//! Zero differences are dropped before ranking (Wilcoxon's own convention, scipy's
//! `zero_method="wilcox"`); tied |differences| share their average rank. The statistic is
//! `W = min(W+, W-)`. For `n <= EXACT_MAX_N` non-zero differences the two-sided p-value comes
//! from the exact permutation distribution of `W+` given the observed ranks (every sign
//! pattern equally likely), counted by dynamic programming over doubled rank sums so that
//! half ranks from ties stay integers. Above that it is the normal approximation with the tie
//! correction of the variance and no continuity correction (scipy's default).

/// Largest number of non-zero differences whose null distribution is enumerated exactly.
pub const EXACT_MAX_N: usize = 25;

/// Outcome of a two-sided Wilcoxon signed-rank test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wilcoxon {
    /// `min(W+, W-)`, the smaller signed-rank sum.
    pub statistic: f64,
    /// Number of non-zero differences (the pairs the test uses).
    pub n: usize,
    /// Two-sided p-value; 1 when every difference is zero.
    pub p_value: f64,
    /// Whether `p_value` is exact (`n <= EXACT_MAX_N`) or the normal approximation.
    pub exact: bool,
}

/// Two-sided Wilcoxon signed-rank test of `x - y` over paired observations.
///
/// # Panics
/// When `x` and `y` differ in length or hold a non-finite value: a caller bug, not data.
pub fn wilcoxon_signed_rank(x: &[f64], y: &[f64]) -> Wilcoxon {
    assert_eq!(x.len(), y.len(), "paired samples must have equal length");
    let diffs: Vec<f64> = x
        .iter()
        .zip(y)
        .map(|(a, b)| {
            assert!(a.is_finite() && b.is_finite(), "non-finite observation");
            a - b
        })
        .filter(|d| *d != 0.0)
        .collect();
    let n = diffs.len();
    if n == 0 {
        return Wilcoxon {
            statistic: 0.0,
            n: 0,
            p_value: 1.0,
            exact: true,
        };
    }
    let (doubled_ranks, tie_sizes) = doubled_average_ranks(&diffs);
    let doubled_plus: u64 = diffs
        .iter()
        .zip(&doubled_ranks)
        .filter(|(d, _)| **d > 0.0)
        .map(|(_, r)| *r)
        .sum();
    let doubled_total = (n * (n + 1)) as u64;
    let doubled_w = doubled_plus.min(doubled_total - doubled_plus);
    let statistic = doubled_w as f64 / 2.0;
    if n <= EXACT_MAX_N {
        // counts[s] = number of sign patterns whose doubled W+ equals s
        let mut counts = vec![0.0f64; doubled_total as usize + 1];
        counts[0] = 1.0;
        for &r in &doubled_ranks {
            for s in (r as usize..counts.len()).rev() {
                counts[s] += counts[s - r as usize];
            }
        }
        let below: f64 = counts[..=doubled_w as usize].iter().sum();
        let p = 2.0 * below / 2f64.powi(n as i32);
        return Wilcoxon {
            statistic,
            n,
            p_value: p.min(1.0),
            exact: true,
        };
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let ties: f64 = tie_sizes.iter().map(|&t| (t * t * t - t) as f64).sum();
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - ties / 48.0;
    let z = (statistic - mean) / var.sqrt();
    // two-sided: 2 * Phi(-|z|) = erfc(|z| / sqrt 2)
    let p = libm::erfc(z.abs() / std::f64::consts::SQRT_2);
    Wilcoxon {
        statistic,
        n,
        p_value: p.min(1.0),
        exact: false,
    }
}

/// Twice the average rank of each |d| (so ties' half ranks are integers) and the sizes of the
/// tie groups.
fn doubled_average_ranks(diffs: &[f64]) -> (Vec<u64>, Vec<u64>) {
    let mut order: Vec<usize> = (0..diffs.len()).collect();
    order.sort_by(|&a, &b| diffs[a].abs().total_cmp(&diffs[b].abs()));
    let mut ranks = vec![0u64; diffs.len()];
    let mut ties = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && diffs[order[j + 1]].abs() == diffs[order[i]].abs() {
            j += 1;
        }
        // ranks i+1 ..= j+1 averaged, doubled
        let doubled = (i + 1 + j + 1) as u64;
        for &k in &order[i..=j] {
            ranks[k] = doubled;
        }
        ties.push((j - i + 1) as u64);
        i = j + 1;
    }
    (ranks, ties)
}

/// Mean and sample standard deviation (n - 1 denominator; 0 for a single value).
pub fn mean_std(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_positive_differences_by_hand() {
        // ranks 1,2,3 all positive: W+ = 6, W- = 0, W = 0; of the 8 sign patterns only
        // all-negative has W+ <= 0, so p = 2 * 1/8.
        let t = wilcoxon_signed_rank(&[1.0, 2.0, 3.0], &[0.0, 0.0, 0.0]);
        assert_eq!(t.statistic, 0.0);
        assert_eq!(t.n, 3);
        assert!(t.exact);
        assert!((t.p_value - 0.25).abs() < 1e-15);
    }

    #[test]
    fn zeros_are_dropped_and_ties_share_ranks() {
        // differences 0, 1, -1, 2: zero dropped; |1| twice -> ranks 1.5 each, 2 -> rank 3.
        // W+ = 1.5 + 3 = 4.5, W- = 1.5, W = 1.5. Doubled ranks 3,3,6: patterns with doubled
        // W+ <= 3 are {}, {a}, {b} -> 3 of 8, p = 2 * 3/8 = 0.75.
        let t = wilcoxon_signed_rank(&[0.0, 1.0, 0.0, 2.0], &[0.0, 0.0, 1.0, 0.0]);
        assert_eq!(t.n, 3);
        assert_eq!(t.statistic, 1.5);
        assert!((t.p_value - 0.75).abs() < 1e-15);
    }

    #[test]
    fn all_zero_differences_give_p_one() {
        let t = wilcoxon_signed_rank(&[0.5, 0.7], &[0.5, 0.7]);
        assert_eq!((t.n, t.p_value), (0, 1.0));
    }

    #[test]
    fn p_value_never_exceeds_one() {
        // W+ = W- = 1.5 (ranks 1.5, 1.5 with opposite signs): the doubled count is all 4
        let t = wilcoxon_signed_rank(&[1.0, 0.0], &[0.0, 1.0]);
        assert_eq!(t.p_value, 1.0);
    }

    #[test]
    fn mean_and_sample_std() {
        let (m, s) = mean_std(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        assert!((s - (5.0f64 / 3.0).sqrt()).abs() < 1e-15);
        assert_eq!(mean_std(&[0.7]), (0.7, 0.0));
    }

    // Reference values from scipy 1.17.1, computed once with:
    //   from scipy.stats import wilcoxon
    //   x = [0.12, -0.35, 0.51, 0.08, -0.02, 0.77, 0.30, -0.14, 0.45, 0.61]
    //   wilcoxon(x, method="exact")   # statistic 11.0, pvalue 0.10546875
    //   y = [0.9, -1.3, 2.2, 0.4, -0.05, 1.7, 3.1, 0.6, -0.8, 1.1, 2.6, 0.25, -1.9, 1.45, 0.75,
    //        2.05, -0.3, 0.95, 1.25, -0.65, 2.9, 0.15, 1.6, -1.05, 0.55, 1.85, 2.4, -0.45,
    //        1.35, 0.85]
    //   wilcoxon(y, method="approx")  # statistic 88.0, pvalue 0.002957462130717483
    //   t = [1, 1, 2, 2, 2, 3, -1, 4, 5, -3, 6, 6, 7, 8, 9, 9, -9, 10, 11, 12, 13, 14, 15, 16,
    //        17, 18, 19]
    //   wilcoxon(t, method="approx")  # statistic 25.5, pvalue 8.492017308270738e-05
    fn one_sample(d: &[f64]) -> Wilcoxon {
        wilcoxon_signed_rank(d, &vec![0.0; d.len()])
    }

    #[test]
    fn exact_matches_scipy() {
        let x = [
            0.12, -0.35, 0.51, 0.08, -0.02, 0.77, 0.30, -0.14, 0.45, 0.61,
        ];
        let t = one_sample(&x);
        assert!(t.exact);
        assert_eq!((t.statistic, t.n), (11.0, 10));
        assert!((t.p_value - 0.10546875).abs() < 1e-15);
    }

    #[test]
    fn normal_approximation_matches_scipy() {
        let y = [
            0.9, -1.3, 2.2, 0.4, -0.05, 1.7, 3.1, 0.6, -0.8, 1.1, 2.6, 0.25, -1.9, 1.45, 0.75,
            2.05, -0.3, 0.95, 1.25, -0.65, 2.9, 0.15, 1.6, -1.05, 0.55, 1.85, 2.4, -0.45, 1.35,
            0.85,
        ];
        let t = one_sample(&y);
        assert!(!t.exact);
        assert_eq!((t.statistic, t.n), (88.0, 30));
        assert!((t.p_value - 0.002957462130717483).abs() < 1e-12);
    }

    #[test]
    fn tie_corrected_approximation_matches_scipy() {
        let d = [
            1.0, 1.0, 2.0, 2.0, 2.0, 3.0, -1.0, 4.0, 5.0, -3.0, 6.0, 6.0, 7.0, 8.0, 9.0, 9.0, -9.0,
            10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0,
        ];
        let t = one_sample(&d);
        assert!(!t.exact);
        assert_eq!((t.statistic, t.n), (25.5, 27));
        assert!((t.p_value - 8.492017308270738e-05).abs() < 1e-13);
    }
}
