//! What one data holder's node computes over its own table: the sufficient statistics of the
//! declared query, never record values.
//!
//! Per cell of the cross-tabulation:
//! - `n`, the number of records in the cell;
//! - for `mean`: Welford's running mean and sum of squared deviations `M2` (Welford 1962;
//!   Chan, Golub & LeVeque 1983 for merging), which avoid the cancellation of the textbook
//!   `Σx² − (Σx)²/n`; the sum of absolute values with Neumaier's compensated summation
//!   (for the dominance rules); the two largest absolute contributions; and how many values
//!   were clipped to the declared bounds;
//! - for `histogram` / `quantiles`: counts per declared bin, plus counts below and above the
//!   declared range (open-ended bins, so nothing is lost);
//! - for `kaplan_meier`: per interval `(g_{j-1}, g_j]` of the declared grid, the number at risk
//!   at the start (time > g_{j-1}), events and censorings in the interval.
//!
//! Nothing is dropped silently: a record that passes the filters but cannot be counted in a
//! cell (missing or undeclared grouping value, missing analysed value, event indicator not 0/1,
//! time not after the grid's start) is counted in `excluded` under its [`Exclusion`] reason, so
//! `rows_matched = Σ n + Σ excluded` always holds.
//!
//! The top-2 contributions are what the gateway needs for the (n, k) dominance and p% rules
//! ([`crate::output_check`]); they are individual values and must go **only** to the gateway
//! (the trusted health data access body), never to the applicant: no released type carries them.
//!
//! Work is linear in the number of rows (one pass; a binary search over the declared edges per
//! row).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::query::{BinPosition, Query, Statistic};
use crate::table::{Table, TableError};

/// Why a record that passed the filters is in no cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Exclusion {
    /// A grouping variable is missing.
    MissingGroup,
    /// A categorical grouping value is not one of the declared levels.
    UndeclaredLevel,
    /// A binned grouping value is outside the declared edges.
    OutsideGroupBins,
    /// The analysed variable (or the survival time or event) is missing.
    MissingValue,
    /// The event indicator is neither 0 nor 1.
    InvalidEvent,
    /// The follow-up time is not after the first point of the time grid.
    BeforeTimeGrid,
}

/// Welford moments of one cell.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    pub n: u64,
    pub mean: f64,
    /// Σ (x − mean)².
    pub m2: f64,
    /// Σ |x| (compensated: `abs_sum + abs_sum_compensation` is the sum).
    pub abs_sum: f64,
    pub abs_sum_compensation: f64,
    /// Values moved to the declared bounds.
    pub clipped: u64,
}

impl Moments {
    pub fn empty() -> Self {
        Self {
            n: 0,
            mean: 0.0,
            m2: 0.0,
            abs_sum: 0.0,
            abs_sum_compensation: 0.0,
            clipped: 0,
        }
    }

    fn push(&mut self, x: f64) {
        self.n += 1;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x - self.mean);
        neumaier_add(&mut self.abs_sum, &mut self.abs_sum_compensation, x.abs());
    }

    /// Chan et al.'s pairwise merge.
    pub fn merge(&self, other: &Moments) -> Moments {
        if self.n == 0 {
            return *other;
        }
        if other.n == 0 {
            return *self;
        }
        let n = self.n + other.n;
        let (na, nb) = (self.n as f64, other.n as f64);
        let delta = other.mean - self.mean;
        let mean = self.mean + delta * nb / n as f64;
        let m2 = self.m2 + other.m2 + delta * delta * na * nb / n as f64;
        let mut s = self.abs_sum;
        let mut comp = self.abs_sum_compensation;
        neumaier_add(&mut s, &mut comp, other.abs_sum);
        neumaier_add(&mut s, &mut comp, other.abs_sum_compensation);
        Moments {
            n,
            mean,
            m2,
            abs_sum: s,
            abs_sum_compensation: comp,
            clipped: self.clipped + other.clipped,
        }
    }

    /// Σ |x|.
    pub fn abs_total(&self) -> f64 {
        self.abs_sum + self.abs_sum_compensation
    }
}

/// Neumaier's improvement of Kahan summation.
pub(crate) fn neumaier_add(sum: &mut f64, comp: &mut f64, x: f64) {
    let t = *sum + x;
    if sum.abs() >= x.abs() {
        *comp += (*sum - t) + x;
    } else {
        *comp += (x - t) + *sum;
    }
    *sum = t;
}

/// Counts over declared bins, plus below and above the range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinCounts {
    pub below: u64,
    pub counts: Vec<u64>,
    pub above: u64,
}

impl BinCounts {
    pub fn zeros(bins: usize) -> Self {
        Self {
            below: 0,
            counts: vec![0; bins],
            above: 0,
        }
    }
    pub fn total(&self) -> u64 {
        self.below + self.above + self.counts.iter().sum::<u64>()
    }
    pub(crate) fn add(&mut self, other: &BinCounts) {
        self.below += other.below;
        self.above += other.above;
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }
}

/// One interval `(g_{j-1}, g_j]` of the time grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntervalCounts {
    /// Records with time > g_{j-1}.
    pub at_risk: u64,
    /// Events with g_{j-1} < time ≤ g_j.
    pub events: u64,
    /// Censorings with g_{j-1} < time ≤ g_j.
    pub censored: u64,
}

/// The two largest absolute contributions to a cell (0 where there are fewer records).
/// Gateway-only: see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Top2 {
    pub first: f64,
    pub second: f64,
}

impl Top2 {
    pub const EMPTY: Top2 = Top2 {
        first: 0.0,
        second: 0.0,
    };

    fn push(&mut self, v: f64) {
        if v > self.first {
            self.second = self.first;
            self.first = v;
        } else if v > self.second {
            self.second = v;
        }
    }

    /// The top two of both (order-independent).
    pub fn merge(&self, other: &Top2) -> Top2 {
        let mut all = [self.first, self.second, other.first, other.second];
        all.sort_by(|a, b| b.total_cmp(a));
        Top2 {
            first: all[0],
            second: all[1],
        }
    }
}

/// The statistic-specific part of a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CellStats {
    Count,
    Mean { moments: Moments, top: Top2 },
    Histogram { bins: BinCounts },
    Survival { intervals: Vec<IntervalCounts> },
}

/// One cell of a node's partial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellPartial {
    pub n: u64,
    pub stats: CellStats,
}

/// A node's answer to a query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Partial {
    /// Records that passed the filters.
    pub rows_matched: u64,
    /// Records that passed the filters but are in no cell, by reason.
    pub excluded: BTreeMap<Exclusion, u64>,
    /// One entry per cell, in [`Query::cell_coordinates`] order.
    pub cells: Vec<CellPartial>,
}

/// Computes a node's partial for `query` over `table`.
pub fn partial(query: &Query, table: &Table) -> Result<Partial, TableError> {
    let cols = query.columns();
    let idx = table.column_indices(&cols)?;
    let col = |name: &str| idx[cols.iter().position(|c| *c == name).expect("column listed")];

    let filters: Vec<(usize, &crate::query::Predicate)> = query
        .filters()
        .iter()
        .map(|p| (col(p.column()), p))
        .collect();
    let groups: Vec<(usize, &crate::query::Grouping)> = query
        .group_by()
        .iter()
        .map(|g| (col(g.column()), g))
        .collect();
    let n_cells = query.cell_count();

    let empty_stats = match query.statistic() {
        Statistic::Count => CellStats::Count,
        Statistic::Mean { .. } => CellStats::Mean {
            moments: Moments::empty(),
            top: Top2::EMPTY,
        },
        Statistic::Quantiles { edges, .. } | Statistic::Histogram { edges, .. } => {
            CellStats::Histogram {
                bins: BinCounts::zeros(edges.bins()),
            }
        }
        // Filled from exit counts after the pass.
        Statistic::KaplanMeier { .. } => CellStats::Survival {
            intervals: Vec::new(),
        },
    };
    let mut cells: Vec<CellPartial> = (0..n_cells)
        .map(|_| CellPartial {
            n: 0,
            stats: empty_stats.clone(),
        })
        .collect();
    // Kaplan–Meier: per cell, how many records leave the risk set in interval j (index
    // grid.bins() = still at risk after the horizon), split into events and censorings.
    let km_bins = match query.statistic() {
        Statistic::KaplanMeier { grid, .. } => grid.bins(),
        _ => 0,
    };
    let mut km_events = vec![0u64; n_cells * km_bins];
    let mut km_censored = vec![0u64; n_cells * km_bins];
    let mut km_beyond = vec![0u64; n_cells];

    let mut rows_matched = 0u64;
    let mut excluded: BTreeMap<Exclusion, u64> = BTreeMap::new();
    let mut exclude = |r: Exclusion| *excluded.entry(r).or_insert(0) += 1;

    'rows: for row in table.rows() {
        if !filters.iter().all(|(i, p)| p.matches(row[*i])) {
            continue;
        }
        rows_matched += 1;
        let mut cell = 0usize;
        for (i, g) in &groups {
            match g.index(row[*i]) {
                Ok(k) => cell = cell * g.size() + k,
                Err(r) => {
                    exclude(r);
                    continue 'rows;
                }
            }
        }
        match query.statistic() {
            Statistic::Count => cells[cell].n += 1,
            Statistic::Mean { variable, bounds } => {
                let x = row[col(variable)];
                if x.is_nan() {
                    exclude(Exclusion::MissingValue);
                    continue;
                }
                let c = &mut cells[cell];
                c.n += 1;
                if let CellStats::Mean { moments, top } = &mut c.stats {
                    let v = match bounds {
                        Some(b) => {
                            let v = b.clip(x);
                            if v != x {
                                moments.clipped += 1;
                            }
                            v
                        }
                        None => x,
                    };
                    moments.push(v);
                    top.push(v.abs());
                }
            }
            Statistic::Quantiles {
                variable, edges, ..
            }
            | Statistic::Histogram { variable, edges } => {
                let x = row[col(variable)];
                if x.is_nan() {
                    exclude(Exclusion::MissingValue);
                    continue;
                }
                let c = &mut cells[cell];
                c.n += 1;
                if let CellStats::Histogram { bins } = &mut c.stats {
                    match edges.position(x) {
                        BinPosition::Below => bins.below += 1,
                        BinPosition::Above => bins.above += 1,
                        BinPosition::Bin(k) => bins.counts[k] += 1,
                    }
                }
            }
            Statistic::KaplanMeier { time, event, grid } => {
                let t = row[col(time)];
                let e = row[col(event)];
                if t.is_nan() || e.is_nan() {
                    exclude(Exclusion::MissingValue);
                    continue;
                }
                let is_event = if e == 1.0 {
                    true
                } else if e == 0.0 {
                    false
                } else {
                    exclude(Exclusion::InvalidEvent);
                    continue;
                };
                if t <= grid.lo() {
                    exclude(Exclusion::BeforeTimeGrid);
                    continue;
                }
                cells[cell].n += 1;
                if t > grid.hi() {
                    km_beyond[cell] += 1;
                } else {
                    // Interval j (0-based) is (g_j, g_{j+1}]: the first edge ≥ t, minus one.
                    let j = grid.as_slice().partition_point(|&g| g < t) - 1;
                    if is_event {
                        km_events[cell * km_bins + j] += 1;
                    } else {
                        km_censored[cell * km_bins + j] += 1;
                    }
                }
            }
        }
    }

    if km_bins > 0 {
        for (ci, c) in cells.iter_mut().enumerate() {
            let mut intervals = vec![
                IntervalCounts {
                    at_risk: 0,
                    events: 0,
                    censored: 0
                };
                km_bins
            ];
            let mut at_risk = km_beyond[ci];
            for j in (0..km_bins).rev() {
                let (d, w) = (km_events[ci * km_bins + j], km_censored[ci * km_bins + j]);
                at_risk += d + w;
                intervals[j] = IntervalCounts {
                    at_risk,
                    events: d,
                    censored: w,
                };
            }
            c.stats = CellStats::Survival { intervals };
        }
    }

    Ok(Partial {
        rows_matched,
        excluded,
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::{Limits, QueryForm};
    use serde_json::json;

    pub(crate) fn q(v: serde_json::Value) -> Query {
        let form: QueryForm = serde_json::from_value(v).unwrap();
        Query::parse(form, &Limits::default()).unwrap()
    }

    const NAN: f64 = f64::NAN;

    #[test]
    fn counts_every_matched_row_once() {
        let t = Table::from_columns(vec![
            ("sex", vec![1.0, 2.0, 1.0, NAN, 3.0, 1.0, 2.0]),
            ("age", vec![30.0, 50.0, 70.0, 40.0, 20.0, 130.0, NAN]),
        ])
        .unwrap();
        let query = q(json!({
            "statistic": "count",
            "group_by": [{"column": "sex", "levels": [1, 2]}, {"column": "age", "edges": [0, 40, 120]}],
            "filters": [{"column": "age", "op": "not_missing"}]
        }));
        let p = partial(&query, &t).unwrap();
        // age missing fails the filter: 6 rows match.
        assert_eq!(p.rows_matched, 6);
        // Cells (sex, age): (1,[0,40))=1 (age 30), (1,[40,120])=1 (age 70),
        // (2,[0,40))=0, (2,[40,120])=1 (age 50).
        let n: Vec<u64> = p.cells.iter().map(|c| c.n).collect();
        assert_eq!(n, vec![1, 1, 0, 1]);
        // sex NaN → missing_group; sex 3 → undeclared_level; age 130 → outside_group_bins.
        assert_eq!(p.excluded[&Exclusion::MissingGroup], 1);
        assert_eq!(p.excluded[&Exclusion::UndeclaredLevel], 1);
        assert_eq!(p.excluded[&Exclusion::OutsideGroupBins], 1);
        assert_eq!(
            p.rows_matched,
            n.iter().sum::<u64>() + p.excluded.values().sum::<u64>()
        );
    }

    #[test]
    fn mean_moments_clipping_and_top_two() {
        let t = Table::from_columns(vec![("x", vec![2.0, 4.0, NAN, 9.0, -50.0])]).unwrap();
        let query =
            q(json!({"statistic": "mean", "variable": "x", "bounds": {"lo": -10, "hi": 8}}));
        let p = partial(&query, &t).unwrap();
        assert_eq!(p.excluded[&Exclusion::MissingValue], 1);
        let CellStats::Mean { moments, top } = &p.cells[0].stats else {
            panic!()
        };
        // Clipped values 2, 4, 8, -10: mean 1, deviations 1, 3, 7, -11 → M2 = 1+9+49+121 = 180.
        assert_eq!(moments.n, 4);
        assert_eq!(moments.clipped, 2);
        assert!((moments.mean - 1.0).abs() < 1e-12);
        assert!((moments.m2 - 180.0).abs() < 1e-9);
        // |x|: 2 + 4 + 8 + 10 = 24; top two 10 and 8.
        assert!((moments.abs_total() - 24.0).abs() < 1e-12);
        assert_eq!(
            *top,
            Top2 {
                first: 10.0,
                second: 8.0
            }
        );
    }

    #[test]
    fn histogram_keeps_values_outside_the_range() {
        let t = Table::from_columns(vec![("x", vec![-1.0, 0.0, 0.5, 1.0, 2.0, 2.0, 3.0])]).unwrap();
        let query = q(json!({"statistic": "histogram", "variable": "x", "edges": [0, 1, 2]}));
        let p = partial(&query, &t).unwrap();
        let CellStats::Histogram { bins } = &p.cells[0].stats else {
            panic!()
        };
        // [0,1): 0, 0.5; [1,2]: 1, 2, 2; below: -1; above: 3.
        assert_eq!(bins.counts, vec![2, 3]);
        assert_eq!((bins.below, bins.above), (1, 1));
        assert_eq!(p.cells[0].n, 7);
    }

    #[test]
    fn survival_intervals() {
        // times 1e, 2e, 2c, 3e, 5c(after horizon 4), 0 (not after grid start), 2 with event 7.
        let t = Table::from_columns(vec![
            ("t", vec![1.0, 2.0, 2.0, 3.0, 5.0, 0.0, 2.0]),
            ("e", vec![1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 7.0]),
        ])
        .unwrap();
        let query = q(
            json!({"statistic": "kaplan_meier", "time": "t", "event": "e", "time_grid": [0, 2, 4]}),
        );
        let p = partial(&query, &t).unwrap();
        assert_eq!(p.excluded[&Exclusion::BeforeTimeGrid], 1);
        assert_eq!(p.excluded[&Exclusion::InvalidEvent], 1);
        let CellStats::Survival { intervals } = &p.cells[0].stats else {
            panic!()
        };
        // (0,2]: at risk 5, events at 1 and 2, censored at 2. (2,4]: at risk 2 (3 and 5), 1 event.
        assert_eq!(
            intervals,
            &vec![
                IntervalCounts {
                    at_risk: 5,
                    events: 2,
                    censored: 1
                },
                IntervalCounts {
                    at_risk: 2,
                    events: 1,
                    censored: 0
                },
            ]
        );
    }

    #[test]
    fn unknown_columns_are_reported_not_panicked() {
        let t = Table::from_columns(vec![("x", vec![1.0])]).unwrap();
        let query = q(json!({"statistic": "mean", "variable": "bmi",
            "filters": [{"column": "age", "op": "gt", "value": 1}]}));
        assert_eq!(
            partial(&query, &t),
            Err(TableError::UnknownColumns {
                columns: vec!["age".into(), "bmi".into()]
            })
        );
    }
}
