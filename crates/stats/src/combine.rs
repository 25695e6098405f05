//! Pooling the nodes' partials at the gateway into the exact results over all data holders.
//!
//! - Counts, histogram bins and survival interval counts are integer sums: exact.
//! - Mean and standard deviation: the nodes' Welford moments merged with Chan, Golub & LeVeque's
//!   pairwise formula (1983), the same result as one pass over the pooled records up to
//!   rounding. SD uses the n − 1 denominator.
//! - Quantiles: linear interpolation within the pooled histogram (the grouped-data quantile:
//!   the empirical CDF is taken as piecewise linear between bin edges, F(e_i) = cumulative
//!   count / N). The target rank is p·N with N counting values below and above the range;
//!   a quantile whose rank falls outside the range is not estimated. For distinct consecutive
//!   integers in unit bins centred on them this equals Hazen's definition (Hyndman & Fan 1996,
//!   type 5; numpy `method="hazen"`), which the tests check against numpy.
//! - Kaplan–Meier: product-limit estimator over the grid, S(g_j) = Π_{i ≤ j} (1 − d_i / n_i),
//!   with n_i the number at risk at the start of interval i and d_i its events (Kaplan & Meier
//!   1958); Greenwood's variance Var S = S² Σ d_i / (n_i (n_i − d_i)) (Greenwood 1926); the
//!   95% interval on the log(−log) scale, S^{exp(± z·√(Σ d/(n(n−d))) / ln S)} (Kalbfleisch &
//!   Prentice 1980), which is what lifelines' `KaplanMeierFitter` reports. The estimate equals
//!   the ordinary Kaplan–Meier estimate at the grid points when every event and censoring time
//!   is a grid point (time recorded at the grid's resolution, e.g. whole months with a monthly
//!   grid); otherwise events are attributed to the end of their interval and censorings within
//!   an interval count as at risk for all of it.
//! - Top-2 contributions: the two largest of all nodes' top-2 (gateway-only, for output
//!   checking).
//!
//! Order independence: integer sums commute; floating-point merges are done in a canonical
//! order (node moments sorted by n, mean, M2 before merging), so any permutation of the same
//! partials gives bit-identical results.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::partial::{BinCounts, CellStats, Exclusion, IntervalCounts, Moments, Partial, Top2};
use crate::query::{Edges, Query, Statistic};

/// z for a two-sided 95% interval (Φ⁻¹(0.975)).
pub const Z95: f64 = 1.959_963_984_540_054;

/// Why partials cannot be pooled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum CombineError {
    #[error("no partials to combine")]
    NoPartials,
    /// A partial that does not have the query's shape (its position in the input, what differs).
    #[error("partial {node} does not match the query: {detail}")]
    ShapeMismatch { node: usize, detail: String },
}

/// One point of a pooled survival curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SurvivalPoint {
    pub time: f64,
    /// At risk at the start of the interval ending at `time` (all records at the first point).
    pub at_risk: u64,
    pub events: u64,
    pub censored: u64,
    pub survival: f64,
    /// Greenwood's Σ d / (n (n − d)) up to `time` (Var S = S² · this); `None` once S = 0.
    pub greenwood: Option<f64>,
    pub ci_lower: Option<f64>,
    pub ci_upper: Option<f64>,
}

/// A quantile estimate from the pooled histogram.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QuantileEstimate {
    pub probability: f64,
    /// `None` when the rank falls below or above the declared range, or there are no values.
    pub value: Option<f64>,
    /// Count of the bin the estimate lies in (0 when `value` is `None`).
    pub bin_count: u64,
}

/// The pooled result of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PooledStats {
    Count,
    Mean {
        /// `None` without records.
        mean: Option<f64>,
        /// `None` with fewer than two records.
        sd: Option<f64>,
        /// Σ x (after clipping).
        sum: f64,
        /// Σ |x|, for the dominance rules.
        abs_total: f64,
        /// Gateway-only.
        top: Top2,
        clipped: u64,
    },
    Histogram {
        bins: BinCounts,
    },
    Quantiles {
        bins: BinCounts,
        estimates: Vec<QuantileEstimate>,
    },
    Survival {
        points: Vec<SurvivalPoint>,
    },
}

/// One pooled cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PooledCell {
    pub n: u64,
    pub stats: PooledStats,
}

/// The pooled results over all nodes (exact; the gateway's working copy, never released as is).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Combined {
    pub nodes: usize,
    pub rows_matched: u64,
    pub excluded: BTreeMap<Exclusion, u64>,
    pub cells: Vec<PooledCell>,
}

/// Pools the partials of all nodes for `query`.
pub fn combine(query: &Query, partials: &[Partial]) -> Result<Combined, CombineError> {
    if partials.is_empty() {
        return Err(CombineError::NoPartials);
    }
    for (i, p) in partials.iter().enumerate() {
        check_shape(query, p).map_err(|detail| CombineError::ShapeMismatch { node: i, detail })?;
    }
    let mut excluded: BTreeMap<Exclusion, u64> = BTreeMap::new();
    for p in partials {
        for (k, v) in &p.excluded {
            *excluded.entry(*k).or_insert(0) += v;
        }
    }
    let cells = (0..query.cell_count())
        .map(|ci| pool_cell(query, partials, ci))
        .collect();
    Ok(Combined {
        nodes: partials.len(),
        rows_matched: partials.iter().map(|p| p.rows_matched).sum(),
        excluded,
        cells,
    })
}

fn check_shape(query: &Query, p: &Partial) -> Result<(), String> {
    if p.cells.len() != query.cell_count() {
        return Err(format!(
            "{} cells, expected {}",
            p.cells.len(),
            query.cell_count()
        ));
    }
    for (i, c) in p.cells.iter().enumerate() {
        let ok = match (query.statistic(), &c.stats) {
            (Statistic::Count, CellStats::Count) => true,
            (Statistic::Mean { .. }, CellStats::Mean { moments, .. }) => moments.n == c.n,
            (
                Statistic::Quantiles { edges, .. } | Statistic::Histogram { edges, .. },
                CellStats::Histogram { bins },
            ) => bins.counts.len() == edges.bins() && bins.total() == c.n,
            (Statistic::KaplanMeier { grid, .. }, CellStats::Survival { intervals }) => {
                intervals.len() == grid.bins() && intervals.first().map_or(0, |f| f.at_risk) == c.n
            }
            _ => false,
        };
        if !ok {
            return Err(format!("cell {i} has the wrong kind or size of statistics"));
        }
    }
    Ok(())
}

fn pool_cell(query: &Query, partials: &[Partial], ci: usize) -> PooledCell {
    let cells = partials.iter().map(|p| &p.cells[ci]);
    let n: u64 = cells.clone().map(|c| c.n).sum();
    let stats = match query.statistic() {
        Statistic::Count => PooledStats::Count,
        Statistic::Mean { .. } => {
            let mut parts: Vec<(&Moments, &Top2)> = cells
                .filter_map(|c| match &c.stats {
                    CellStats::Mean { moments, top } => Some((moments, top)),
                    _ => None,
                })
                .collect();
            // Canonical order: the merge is then independent of the nodes' order.
            parts.sort_by(|a, b| {
                a.0.n
                    .cmp(&b.0.n)
                    .then(a.0.mean.total_cmp(&b.0.mean))
                    .then(a.0.m2.total_cmp(&b.0.m2))
                    .then(a.0.abs_sum.total_cmp(&b.0.abs_sum))
            });
            let m = parts
                .iter()
                .fold(Moments::empty(), |acc, (m, _)| acc.merge(m));
            let top = parts.iter().fold(Top2::EMPTY, |acc, (_, t)| acc.merge(t));
            PooledStats::Mean {
                mean: (m.n > 0).then_some(m.mean),
                sd: (m.n > 1).then(|| (m.m2.max(0.0) / (m.n - 1) as f64).sqrt()),
                sum: m.mean * m.n as f64,
                abs_total: m.abs_total(),
                top,
                clipped: m.clipped,
            }
        }
        Statistic::Histogram { edges, .. } | Statistic::Quantiles { edges, .. } => {
            let mut bins = BinCounts::zeros(edges.bins());
            for c in cells {
                if let CellStats::Histogram { bins: b } = &c.stats {
                    bins.add(b);
                }
            }
            match query.statistic() {
                Statistic::Quantiles { probabilities, .. } => PooledStats::Quantiles {
                    estimates: probabilities
                        .iter()
                        .map(|&p| grouped_quantile(&bins, edges, p))
                        .collect(),
                    bins,
                },
                _ => PooledStats::Histogram { bins },
            }
        }
        Statistic::KaplanMeier { grid, .. } => {
            let mut intervals = vec![
                IntervalCounts {
                    at_risk: 0,
                    events: 0,
                    censored: 0
                };
                grid.bins()
            ];
            for c in cells {
                if let CellStats::Survival { intervals: iv } = &c.stats {
                    for (a, b) in intervals.iter_mut().zip(iv) {
                        a.at_risk += b.at_risk;
                        a.events += b.events;
                        a.censored += b.censored;
                    }
                }
            }
            PooledStats::Survival {
                points: kaplan_meier(grid, &intervals),
            }
        }
    };
    PooledCell { n, stats }
}

/// The grouped-data quantile at probability `p` (see the module documentation).
pub fn grouped_quantile(bins: &BinCounts, edges: &Edges, p: f64) -> QuantileEstimate {
    let none = QuantileEstimate {
        probability: p,
        value: None,
        bin_count: 0,
    };
    let total = bins.total();
    if total == 0 {
        return none;
    }
    let target = p * total as f64;
    let mut cum = bins.below as f64;
    if target < cum {
        return none;
    }
    let e = edges.as_slice();
    for (i, &c) in bins.counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let next = cum + c as f64;
        if target <= next {
            let frac = (target - cum) / c as f64;
            return QuantileEstimate {
                probability: p,
                value: Some(e[i] + frac * (e[i + 1] - e[i])),
                bin_count: c,
            };
        }
        cum = next;
    }
    none
}

/// Product-limit estimate, Greenwood variance and log(−log) 95% interval at every grid point.
pub fn kaplan_meier(grid: &Edges, intervals: &[IntervalCounts]) -> Vec<SurvivalPoint> {
    let g = grid.as_slice();
    let mut points = Vec::with_capacity(intervals.len() + 1);
    points.push(SurvivalPoint {
        time: g[0],
        at_risk: intervals.first().map_or(0, |i| i.at_risk),
        events: 0,
        censored: 0,
        survival: 1.0,
        greenwood: Some(0.0),
        ci_lower: Some(1.0),
        ci_upper: Some(1.0),
    });
    let mut s = 1.0f64;
    let mut gw = Some(0.0f64);
    for (j, iv) in intervals.iter().enumerate() {
        let (n, d) = (iv.at_risk as f64, iv.events as f64);
        if iv.at_risk > 0 {
            s *= 1.0 - d / n;
            gw = match gw {
                Some(acc) if iv.events < iv.at_risk => Some(acc + d / (n * (n - d))),
                _ => None,
            };
        }
        let (lo, hi) = match gw {
            Some(0.0) => (Some(s), Some(s)),
            Some(v) if s > 0.0 && s < 1.0 => {
                let ln_s = s.ln();
                let a = Z95 * v.sqrt() / ln_s.abs();
                let lo = (-((-ln_s).ln() + a).exp()).exp();
                let hi = (-((-ln_s).ln() - a).exp()).exp();
                (Some(lo), Some(hi))
            }
            _ => (None, None),
        };
        points.push(SurvivalPoint {
            time: g[j + 1],
            at_risk: iv.at_risk,
            events: iv.events,
            censored: iv.censored,
            survival: s,
            greenwood: gw,
            ci_lower: lo,
            ci_upper: hi,
        });
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partial::partial;
    use crate::query::{Limits, QueryForm};
    use crate::table::Table;
    use serde_json::json;

    fn q(v: serde_json::Value) -> Query {
        let form: QueryForm = serde_json::from_value(v).unwrap();
        Query::parse(form, &Limits::default()).unwrap()
    }

    #[test]
    fn pooled_mean_and_sd_by_hand() {
        // Node A: 1, 2, 3; node B: 4, 10. Pooled: n 5, mean 20/5 = 4,
        // deviations −3, −2, −1, 0, 6 → Σ² = 9+4+1+0+36 = 50, SD = √(50/4) = √12.5.
        let query = q(json!({"statistic": "mean", "variable": "x"}));
        let a = Table::from_columns(vec![("x", vec![1.0, 2.0, 3.0])]).unwrap();
        let b = Table::from_columns(vec![("x", vec![4.0, 10.0])]).unwrap();
        let c = combine(
            &query,
            &[partial(&query, &a).unwrap(), partial(&query, &b).unwrap()],
        )
        .unwrap();
        let PooledStats::Mean {
            mean,
            sd,
            sum,
            top,
            abs_total,
            ..
        } = c.cells[0].stats
        else {
            panic!()
        };
        assert_eq!(c.cells[0].n, 5);
        assert!((mean.unwrap() - 4.0).abs() < 1e-12);
        assert!((sd.unwrap() - 12.5f64.sqrt()).abs() < 1e-12);
        assert!((sum - 20.0).abs() < 1e-12);
        assert!((abs_total - 20.0).abs() < 1e-12);
        assert_eq!(
            top,
            Top2 {
                first: 10.0,
                second: 4.0
            }
        );
    }

    #[test]
    fn numerically_sound_with_a_large_offset() {
        // Values 1e9 + {4, 7, 13, 16}: variance (sample) = 30 exactly (mean 1e9 + 10,
        // deviations −6, −3, 3, 6 → Σ² = 90, /3 = 30). The textbook Σx² − (Σx)²/n formula
        // loses all digits here in f64.
        let query = q(json!({"statistic": "mean", "variable": "x"}));
        let a = Table::from_columns(vec![("x", vec![1e9 + 4.0, 1e9 + 7.0])]).unwrap();
        let b = Table::from_columns(vec![("x", vec![1e9 + 13.0, 1e9 + 16.0])]).unwrap();
        let c = combine(
            &query,
            &[partial(&query, &a).unwrap(), partial(&query, &b).unwrap()],
        )
        .unwrap();
        let PooledStats::Mean { sd, .. } = c.cells[0].stats else {
            panic!()
        };
        assert!((sd.unwrap().powi(2) - 30.0).abs() < 1e-6, "{sd:?}");
    }

    #[test]
    fn grouped_quantiles_by_hand() {
        // Bins [0,10) 2, [10,20) 6, [20,30] 2; N = 10.
        // p = 0.5: rank 5, cum before bin 1 = 2 → 10 + (5 − 2)/6 · 10 = 15.
        // p = 0.1: rank 1 in bin 0 → 0 + 1/2 · 10 = 5.
        let edges = Edges::new(vec![0.0, 10.0, 20.0, 30.0]).unwrap();
        let bins = BinCounts {
            below: 0,
            counts: vec![2, 6, 2],
            above: 0,
        };
        let e = grouped_quantile(&bins, &edges, 0.5);
        assert_eq!((e.value, e.bin_count), (Some(15.0), 6));
        assert_eq!(grouped_quantile(&bins, &edges, 0.1).value, Some(5.0));
        // One value below the range, N = 11: p = 0.05 → rank 0.55 < 1 → not estimated.
        let bins = BinCounts {
            below: 1,
            counts: vec![2, 6, 2],
            above: 0,
        };
        assert_eq!(grouped_quantile(&bins, &edges, 0.05).value, None);
    }

    /// Reference: `scripts/stats-reference/km_reference.py` (numpy 2.4.6,
    /// `np.quantile(values, p, method="hazen")`).
    #[test]
    fn quantiles_match_numpy_hazen_for_consecutive_integers() {
        let values = [
            23., 11., 29., 17., 30., 14., 26., 20., 12., 27., 15., 24., 19., 28., 13., 21., 16.,
            25., 18., 22.,
        ];
        let reference = [
            (0.05, 11.5),
            (0.1, 12.5),
            (0.25, 15.5),
            (0.33, 17.1),
            (0.5, 20.5),
            (0.62, 22.9),
            (0.75, 25.5),
            (0.9, 28.5),
            (0.95, 29.5),
        ];
        let probabilities: Vec<f64> = reference.iter().map(|r| r.0).collect();
        let query = q(json!({"statistic": "quantiles", "variable": "x",
            "probabilities": probabilities, "range": {"lo": 10.5, "hi": 30.5}, "bins": 20}));
        let t = Table::from_columns(vec![("x", values.to_vec())]).unwrap();
        let c = combine(&query, &[partial(&query, &t).unwrap()]).unwrap();
        let PooledStats::Quantiles { estimates, .. } = &c.cells[0].stats else {
            panic!()
        };
        for (e, (p, want)) in estimates.iter().zip(reference) {
            assert_eq!(e.probability, p);
            assert!(
                (e.value.unwrap() - want).abs() < 1e-9,
                "p={p}: {:?} vs {want}",
                e.value
            );
        }
    }

    /// Reference values: `python scripts/stats-reference/km_reference.py` with lifelines 0.30.3
    /// (`KaplanMeierFitter(alpha=0.05).fit(TIMES, EVENTS, timeline=range(0, 14))`, columns
    /// `survival_function_` and `confidence_interval_`).
    #[test]
    fn kaplan_meier_matches_lifelines() {
        let times = [
            1., 2., 2., 3., 3., 3., 4., 5., 5., 6., 7., 8., 8., 9., 10., 10., 11., 12., 12., 13.,
        ];
        let events = [
            1., 1., 0., 1., 1., 0., 1., 0., 1., 1., 0., 1., 1., 0., 1., 0., 1., 1., 0., 0.,
        ];
        #[rustfmt::skip]
        let reference = [
            (0, 1.0, 1.0, 1.0),
            (1, 0.95, 0.6947431932565701, 0.9928022285933972),
            (2, 0.8999999999999999, 0.6560307072615669, 0.9740101743957749),
            (3, 0.7941176470588234, 0.5396804824809386, 0.9174480771402711),
            (4, 0.7373949579831933, 0.47824096875321936, 0.8817849130358921),
            (5, 0.6806722689075632, 0.42099610870332554, 0.8427856960090764),
            (6, 0.6187929717341484, 0.359311371631803, 0.7984516247810706),
            (7, 0.6187929717341484, 0.359311371631803, 0.7984516247810706),
            (8, 0.48128342245989303, 0.23294997442161472, 0.692760063594931),
            (9, 0.48128342245989303, 0.23294997442161472, 0.692760063594931),
            (10, 0.40106951871657753, 0.16575133601209036, 0.628493977952246),
            (11, 0.3008021390374332, 0.08952190605108906, 0.5499123473841697),
            (12, 0.20053475935828874, 0.03671142900120907, 0.457842897021794),
            (13, 0.20053475935828874, 0.03671142900120907, 0.457842897021794),
        ];
        let grid: Vec<f64> = (0..14).map(f64::from).collect();
        let query =
            q(json!({"statistic": "kaplan_meier", "time": "t", "event": "e", "time_grid": grid}));
        let t = Table::from_columns(vec![("t", times.to_vec()), ("e", events.to_vec())]).unwrap();
        let c = combine(&query, &[partial(&query, &t).unwrap()]).unwrap();
        let PooledStats::Survival { points } = &c.cells[0].stats else {
            panic!()
        };
        assert_eq!(points.len(), 14);
        for (pt, (time, s, lo, hi)) in points.iter().zip(reference) {
            assert_eq!(pt.time, f64::from(time));
            assert!((pt.survival - s).abs() < 1e-12, "t={time}");
            assert!((pt.ci_lower.unwrap() - lo).abs() < 1e-9, "t={time} lower");
            assert!((pt.ci_upper.unwrap() - hi).abs() < 1e-9, "t={time} upper");
        }
        // By hand at t = 3: (1 − 1/20)(1 − 1/19)(1 − 2/17) = 0.95 · 18/19 · 15/17 = 0.794117…
        assert!((points[3].survival - 0.95 * 18.0 / 19.0 * 15.0 / 17.0).abs() < 1e-12);
        assert_eq!(
            (points[3].at_risk, points[3].events, points[3].censored),
            (17, 2, 1)
        );
    }

    #[test]
    fn survival_reaching_zero_has_no_interval() {
        let grid = Edges::new(vec![0.0, 1.0, 2.0]).unwrap();
        let iv = [
            IntervalCounts {
                at_risk: 2,
                events: 1,
                censored: 0,
            },
            IntervalCounts {
                at_risk: 1,
                events: 1,
                censored: 0,
            },
        ];
        let pts = kaplan_meier(&grid, &iv);
        assert_eq!(pts[2].survival, 0.0);
        assert_eq!((pts[2].greenwood, pts[2].ci_lower), (None, None));
    }

    #[test]
    fn refuses_partials_of_another_shape() {
        let query =
            q(json!({"statistic": "count", "group_by": [{"column": "s", "levels": [1, 2]}]}));
        let other = q(json!({"statistic": "count"}));
        let t = Table::from_columns(vec![("s", vec![1.0])]).unwrap();
        let good = partial(&query, &t).unwrap();
        let bad = partial(&other, &t).unwrap();
        assert!(matches!(
            combine(&query, &[good, bad]),
            Err(CombineError::ShapeMismatch { node: 1, .. })
        ));
        assert_eq!(combine(&query, &[]), Err(CombineError::NoPartials));
    }
}
