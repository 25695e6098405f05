//! Output checking: which pooled values may leave the gateway, which are suppressed and which
//! need a human reviewer. Art. 69(1) allows a response "only in an anonymised statistical
//! format"; the rules here are the statistical disclosure control rules that trusted research
//! environments apply to outputs, with the defaults of ACRO, the SACRO project's automatic
//! output checker (AI-SDC/ACRO, `acro/default.yaml`), and the SDC Handbook's sensitivity rules
//! (Hundepool et al., *Statistical Disclosure Control*, Wiley 2012, ch. 4 and 6):
//!
//! | rule | default | violated when (ACRO's comparison) |
//! |---|---|---|
//! | minimum cell count (`safe_threshold`) | 10 | `n < 10` |
//! | (n, k) dominance (`safe_nk_n`, `safe_nk_k`) | n = 2, k = 0.9 | `(x₁ + x₂) / total > 0.9` |
//! | p% rule (`safe_pratio_p`) | p = 0.1 | `(total − x₁ − x₂) / x₁ < 0.1` |
//! | zeros (`zeros_are_disclosive`) | flagged | a zero may be structural (impossible) or reveal that nobody in a group has an attribute: a reviewer decides |
//! | residual degrees of freedom (`safe_dof_threshold`) | 10 | `df < 10` (hook for model outputs: [`check_residual_df`]) |
//! | survival (`survival_safe_threshold`) | 10 | at risk < 10: the curve is truncated from that point |
//!
//! x₁ ≥ x₂ are the two largest absolute contributions to a magnitude cell and `total` the sum
//! of absolute contributions; values exactly at a boundary pass (n = 10, ratio 0.9, p = 0.1), as
//! in ACRO. The dominance and p% rules apply to magnitude statistics (the mean, whose sum they
//! protect); a count has unit contributions. Histogram bins are counts (threshold rule; empty
//! bins are not flagged, the declared edges make them expected); a quantile lying in a bin
//! with fewer than the minimum count goes to review, since it then describes few records.
//!
//! **Secondary suppression.** A count table is released with its margins (row, column and grand
//! totals). A suppressed cell must not be recoverable by arithmetic on released values:
//! - one-way tables: each line (cells and its total) must have no suppressed entry or at least
//!   two; when a line has exactly one, the released cell with the smallest count is suppressed
//!   as well (the total is suppressed only when there is no other cell). Keeping the total and
//!   hiding a second small cell loses the least information.
//! - two-way tables with margins: in the (R+1)×(C+1) table of cells and margins every line sums
//!   to its total, and a suppressed entry is exactly determined by the released ones if and
//!   only if it is a bridge of the bipartite graph whose vertices are the lines and whose edges
//!   are the suppressed entries (Gusfield, "A graph theoretic approach to statistical data
//!   security", SIAM J. Comput. 17(3), 1988). While some suppressed entry is a bridge, the
//!   cheapest rectangle (three further entries, cost = Σ (count + 1) of the newly suppressed
//!   ones) that puts it on a 4-cycle is suppressed. This prevents exact recovery; it does not
//!   guarantee a minimum width of the feasibility interval (protection levels are not modelled).
//!
//! Cells sent to review count as released here (their values are known to the reviewer and may
//! well be released), so the suppression pattern stays safe whatever the reviewer decides.
//!
//! **Differencing.** [`differencing`] compares the counts already released to the same
//! applicant or request lineage with new ones: a population is a predicate set (filters plus
//! cell coordinates, [`crate::query::Query::cell_population`]); when one population is provably
//! contained in the other (every predicate of the larger one is implied, per column, by the
//! smaller one's predicates) and the counts differ by less than the minimum cell count (but
//! not by zero), the difference describes a small group and the pair is reported.
//!
//! Output checking runs on exact values; noise ([`crate::noise`]) is added afterwards to the
//! released values only. The suppression pattern itself depends on exact counts and is not
//! covered by a differential-privacy guarantee.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::combine::{Combined, PooledStats, SurvivalPoint};
use crate::partial::{BinCounts, Exclusion};
use crate::query::{CellLabel, Predicate, Query};

/// Output-checking thresholds. Defaults: ACRO's `default.yaml` (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Rules {
    /// Smallest releasable count (`safe_threshold`).
    pub min_cell_count: u64,
    /// How many top contributions the dominance rule adds up (`safe_nk_n`); nodes send their
    /// top two only, so values above 2 act as 2.
    pub dominance_n: u8,
    /// Largest share of the cell total the top `dominance_n` may have (`safe_nk_k`).
    pub dominance_k: f64,
    /// Smallest (total − x₁ − x₂) / x₁ (`safe_pratio_p`).
    pub p_ratio: f64,
    /// What to do with a zero count (`zeros_are_disclosive`: review).
    pub zeros: ZeroPolicy,
    /// Smallest residual degrees of freedom of a model (`safe_dof_threshold`).
    pub min_residual_df: u64,
    /// Smallest number at risk at a released survival time (`survival_safe_threshold`).
    pub survival_min_at_risk: u64,
    /// Whether to add complementary suppressions (module documentation). Off only for tests of
    /// the primary rules.
    pub secondary_suppression: bool,
}

impl Default for Rules {
    fn default() -> Self {
        Self {
            min_cell_count: 10,
            dominance_n: 2,
            dominance_k: 0.9,
            p_ratio: 0.1,
            zeros: ZeroPolicy::Review,
            min_residual_df: 10,
            survival_min_at_risk: 10,
            secondary_suppression: true,
        }
    }
}

/// Treatment of zero counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ZeroPolicy {
    Release,
    Review,
    Suppress,
}

/// Why a value is suppressed or needs review (stable codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Reason {
    /// Fewer records than the minimum cell count.
    ThresholdCount,
    /// The largest contributions dominate the cell total ((n, k) rule).
    Dominance,
    /// The second largest contributor could estimate the largest too closely (p% rule).
    PRatio,
    /// A zero count.
    ZeroCount,
    /// Suppressed so that another suppressed value cannot be recovered from totals.
    SecondarySuppression,
    /// Too few residual degrees of freedom.
    ResidualDegreesOfFreedom,
    /// Fewer at risk than the survival threshold: the curve stops here.
    SurvivalAtRiskBelowThreshold,
    /// A quantile lying in a histogram bin with fewer records than the minimum cell count.
    QuantileInSparseBin,
}

/// The decision on one value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// named apart from the audit entry's `Outcome` in the API's schemas
#[cfg_attr(feature = "openapi", schema(as = OutputOutcome))]
pub enum Outcome {
    Released,
    Suppressed { reasons: Vec<Reason> },
    Review { reasons: Vec<Reason> },
}

impl Outcome {
    pub fn is_released(&self) -> bool {
        matches!(self, Self::Released)
    }
    pub fn is_suppressed(&self) -> bool {
        matches!(self, Self::Suppressed { .. })
    }

    fn from_reasons(mut suppress: Vec<Reason>, mut review: Vec<Reason>) -> Self {
        suppress.sort();
        suppress.dedup();
        review.sort();
        review.dedup();
        if !suppress.is_empty() {
            Self::Suppressed { reasons: suppress }
        } else if !review.is_empty() {
            Self::Review { reasons: review }
        } else {
            Self::Released
        }
    }

    fn add_secondary(&mut self) {
        *self = match std::mem::replace(self, Self::Released) {
            Self::Suppressed { mut reasons } => {
                if !reasons.contains(&Reason::SecondarySuppression) {
                    reasons.push(Reason::SecondarySuppression);
                }
                Self::Suppressed { reasons }
            }
            _ => Self::Suppressed {
                reasons: vec![Reason::SecondarySuppression],
            },
        };
    }
}

/// A count with its decision; `count` is `None` unless released.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckedCount {
    pub count: Option<u64>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// A quantile estimate with its decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckedQuantile {
    pub probability: f64,
    /// `None` when withheld or not estimable (rank outside the declared range).
    pub value: Option<f64>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// The released value of a cell (present only when the cell's outcome is `released`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum CellValue {
    Count {
        n: u64,
    },
    Mean {
        n: u64,
        mean: Option<f64>,
        sd: Option<f64>,
    },
    Histogram {
        n: u64,
        below: CheckedCount,
        bins: Vec<CheckedCount>,
        above: CheckedCount,
    },
    Quantiles {
        n: u64,
        estimates: Vec<CheckedQuantile>,
    },
    Survival {
        n: u64,
        #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
        points: Vec<SurvivalPoint>,
        /// First grid time not released (at risk below the threshold), if any.
        truncated_at: Option<f64>,
    },
}

/// One cell of the release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReleasedCell {
    pub labels: Vec<CellLabel>,
    #[serde(flatten)]
    pub outcome: Outcome,
    pub value: Option<CellValue>,
}

/// Margins of a count table: row and column totals (two-way tables) and the grand total.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Margins {
    pub rows: Vec<CheckedCount>,
    pub columns: Vec<CheckedCount>,
    pub total: CheckedCount,
}

/// Records in no cell, by reason (checked like counts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExcludedCount {
    pub reason: Exclusion,
    #[serde(flatten)]
    pub checked: CheckedCount,
}

/// How many cells ended in each outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Summary {
    pub released: usize,
    pub suppressed: usize,
    pub review: usize,
}

/// What the gateway may return to the applicant: checked values, never top contributions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Release {
    pub statistic: String,
    pub cells: Vec<ReleasedCell>,
    /// Count tables with grouping only.
    pub margins: Option<Margins>,
    pub excluded: Vec<ExcludedCount>,
    pub summary: Summary,
}

/// A count released earlier or now, with the population it counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReleasedCount {
    pub population: Vec<Predicate>,
    pub count: u64,
}

impl Release {
    /// Every count this release discloses (cells' n and margins), with its population, for the
    /// request lineage that [`differencing`] checks later requests against.
    pub fn released_counts(&self, query: &Query) -> Vec<ReleasedCount> {
        let mut out = Vec::new();
        for (i, c) in self.cells.iter().enumerate() {
            let n = match &c.value {
                Some(
                    CellValue::Count { n }
                    | CellValue::Mean { n, .. }
                    | CellValue::Histogram { n, .. }
                    | CellValue::Quantiles { n, .. }
                    | CellValue::Survival { n, .. },
                ) => *n,
                None => continue,
            };
            out.push(ReleasedCount {
                population: query.cell_population(i),
                count: n,
            });
        }
        if let Some(m) = &self.margins {
            let groups = query.group_by();
            let line = |g: usize, k: usize| {
                let mut p = query.filters().to_vec();
                p.extend(groups[g].label(k).predicates());
                p
            };
            let (rows, cols) = if groups.len() == 2 {
                (&m.rows[..], &m.columns[..])
            } else {
                (&[][..], &[][..])
            };
            for (k, r) in rows.iter().enumerate() {
                if let Some(count) = r.count {
                    out.push(ReleasedCount {
                        population: line(0, k),
                        count,
                    });
                }
            }
            for (k, r) in cols.iter().enumerate() {
                if let Some(count) = r.count {
                    out.push(ReleasedCount {
                        population: line(1, k),
                        count,
                    });
                }
            }
            if let Some(count) = m.total.count {
                out.push(ReleasedCount {
                    population: query.filters().to_vec(),
                    count,
                });
            }
        }
        out
    }
}

fn count_reasons(n: u64, rules: &Rules) -> (Vec<Reason>, Vec<Reason>) {
    if n == 0 {
        return match rules.zeros {
            ZeroPolicy::Release => (vec![], vec![]),
            ZeroPolicy::Review => (vec![], vec![Reason::ZeroCount]),
            ZeroPolicy::Suppress => (vec![Reason::ZeroCount], vec![]),
        };
    }
    if n < rules.min_cell_count {
        (vec![Reason::ThresholdCount], vec![])
    } else {
        (vec![], vec![])
    }
}

/// A single count checked against the minimum-count and zero rules (no margins around it).
pub fn check_count(n: u64, rules: &Rules) -> CheckedCount {
    let (suppress, review) = count_reasons(n, rules);
    checked(n, Outcome::from_reasons(suppress, review))
}

fn checked(n: u64, outcome: Outcome) -> CheckedCount {
    CheckedCount {
        count: outcome.is_released().then_some(n),
        outcome,
    }
}

/// (n, k) dominance and p% rules on a magnitude cell (x₁ ≥ x₂ the largest absolute
/// contributions, `total` the sum of absolute contributions). All-zero cells pass.
pub fn magnitude_reasons(first: f64, second: f64, total: f64, rules: &Rules) -> Vec<Reason> {
    let mut r = Vec::new();
    if total > 0.0 {
        let top = if rules.dominance_n >= 2 {
            first + second
        } else {
            first
        };
        if top / total > rules.dominance_k {
            r.push(Reason::Dominance);
        }
        if first > 0.0 && (total - first - second) / first < rules.p_ratio {
            r.push(Reason::PRatio);
        }
    }
    r
}

/// The residual-degrees-of-freedom rule for model outputs (no model statistic is offered yet;
/// the rule is here so that one plugs into the same outcomes).
pub fn check_residual_df(residual_df: u64, rules: &Rules) -> Outcome {
    if residual_df < rules.min_residual_df {
        Outcome::Suppressed {
            reasons: vec![Reason::ResidualDegreesOfFreedom],
        }
    } else {
        Outcome::Released
    }
}

/// Applies the rules to the pooled results of `query`.
pub fn check(query: &Query, combined: &Combined, rules: &Rules) -> Release {
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(combined.cells.len());
    let mut values: Vec<Option<CellValue>> = Vec::with_capacity(combined.cells.len());
    for cell in &combined.cells {
        let n = cell.n;
        let (mut suppress, review) = count_reasons(n, rules);
        let value = match &cell.stats {
            PooledStats::Count => CellValue::Count { n },
            PooledStats::Mean {
                mean,
                sd,
                abs_total,
                top,
                ..
            } => {
                suppress.extend(magnitude_reasons(top.first, top.second, *abs_total, rules));
                CellValue::Mean {
                    n,
                    mean: *mean,
                    sd: *sd,
                }
            }
            PooledStats::Histogram { bins } => histogram_value(n, bins, rules),
            PooledStats::Quantiles { estimates, .. } => CellValue::Quantiles {
                n,
                estimates: estimates
                    .iter()
                    .map(|e| {
                        let outcome = match e.value {
                            Some(_) if e.bin_count < rules.min_cell_count => Outcome::Review {
                                reasons: vec![Reason::QuantileInSparseBin],
                            },
                            _ => Outcome::Released,
                        };
                        CheckedQuantile {
                            probability: e.probability,
                            value: e.value.filter(|_| outcome.is_released()),
                            outcome,
                        }
                    })
                    .collect(),
            },
            PooledStats::Survival { points } => {
                let keep = points
                    .iter()
                    .take_while(|p| p.at_risk >= rules.survival_min_at_risk)
                    .count();
                CellValue::Survival {
                    n,
                    truncated_at: points.get(keep).map(|p| p.time),
                    points: points[..keep].to_vec(),
                }
            }
        };
        outcomes.push(Outcome::from_reasons(suppress, review));
        values.push(Some(value));
    }

    // Margins and secondary suppression of count tables.
    let shape = query.shape();
    let is_count = matches!(query.statistic(), crate::query::Statistic::Count);
    let n: Vec<u64> = combined.cells.iter().map(|c| c.n).collect();
    let margins = if is_count && !shape.is_empty() {
        Some(protect_table(&shape, &n, &mut outcomes, rules))
    } else {
        None
    };

    let mut summary = Summary::default();
    let cells = outcomes
        .into_iter()
        .zip(values)
        .enumerate()
        .map(|(i, (outcome, value))| {
            match outcome {
                Outcome::Released => summary.released += 1,
                Outcome::Suppressed { .. } => summary.suppressed += 1,
                Outcome::Review { .. } => summary.review += 1,
            }
            ReleasedCell {
                labels: query.cell_labels(i),
                value: value.filter(|_| outcome.is_released()),
                outcome,
            }
        })
        .collect();

    let excluded = combined
        .excluded
        .iter()
        .map(|(&reason, &count)| {
            let (s, r) = count_reasons(count, rules);
            ExcludedCount {
                reason,
                checked: checked(count, Outcome::from_reasons(s, r)),
            }
        })
        .collect();

    Release {
        statistic: query.statistic().name().to_owned(),
        cells,
        margins,
        excluded,
        summary,
    }
}

fn histogram_value(n: u64, bins: &BinCounts, rules: &Rules) -> CellValue {
    // The line: below, bins..., above, with total n (released with the cell).
    let mut line: Vec<u64> = Vec::with_capacity(bins.counts.len() + 2);
    line.push(bins.below);
    line.extend(&bins.counts);
    line.push(bins.above);
    let mut outcomes: Vec<Outcome> = line
        .iter()
        .map(|&c| {
            // Empty bins of a histogram are not flagged: the declared edges make them expected.
            if c > 0 && c < rules.min_cell_count {
                Outcome::Suppressed {
                    reasons: vec![Reason::ThresholdCount],
                }
            } else {
                Outcome::Released
            }
        })
        .collect();
    if rules.secondary_suppression {
        let mut total_suppressed = false;
        protect_line(&line, &mut outcomes, &mut total_suppressed);
        // The total n is the cell's own count: if it had to go, the cell is already below the
        // threshold or every bin is suppressed; suppress all bins in that case.
        if total_suppressed {
            for o in &mut outcomes {
                if !o.is_suppressed() {
                    o.add_secondary();
                }
            }
        }
    }
    let mut it = line.iter().zip(outcomes).map(|(&c, o)| checked(c, o));
    let below = it.next().expect("below");
    let mut rest: Vec<CheckedCount> = it.collect();
    let above = rest.pop().expect("above");
    CellValue::Histogram {
        n,
        below,
        bins: rest,
        above,
    }
}

/// One line of entries summing to a released total: with exactly one suppressed entry, the
/// released entry with the smallest count is suppressed too (the total only when no other
/// entry is left).
fn protect_line(values: &[u64], outcomes: &mut [Outcome], total_suppressed: &mut bool) {
    let suppressed =
        outcomes.iter().filter(|o| o.is_suppressed()).count() + usize::from(*total_suppressed);
    if suppressed != 1 {
        return;
    }
    let candidate = (0..values.len())
        .filter(|&i| !outcomes[i].is_suppressed())
        .min_by_key(|&i| (values[i], i));
    match candidate {
        Some(i) => outcomes[i].add_secondary(),
        None => *total_suppressed = true,
    }
}

/// Margins of a one- or two-way count table, with primary rules on the margins and secondary
/// suppression over cells and margins together.
fn protect_table(shape: &[usize], n: &[u64], cells: &mut [Outcome], rules: &Rules) -> Margins {
    let primary = |v: u64| {
        let (s, r) = count_reasons(v, rules);
        Outcome::from_reasons(s, r)
    };
    if shape.len() == 1 {
        let total: u64 = n.iter().sum();
        let mut total_outcome = primary(total);
        let mut total_suppressed = total_outcome.is_suppressed();
        if rules.secondary_suppression {
            protect_line(n, cells, &mut total_suppressed);
            if total_suppressed && !total_outcome.is_suppressed() {
                total_outcome.add_secondary();
            }
        }
        return Margins {
            rows: vec![],
            columns: vec![],
            total: checked(total, total_outcome),
        };
    }
    let (r, c) = (shape[0], shape[1]);
    let w = c + 1;
    // Extended table: entry (i, j), i ≤ r, j ≤ c; row r holds column totals, column c row totals.
    let mut values = vec![0u64; (r + 1) * w];
    for i in 0..r {
        for j in 0..c {
            let v = n[i * c + j];
            values[i * w + j] = v;
            values[i * w + c] += v;
            values[r * w + j] += v;
            values[r * w + c] += v;
        }
    }
    let mut outcomes: Vec<Outcome> = (0..(r + 1) * w)
        .map(|k| {
            let (i, j) = (k / w, k % w);
            if i < r && j < c {
                cells[i * c + j].clone()
            } else {
                primary(values[k])
            }
        })
        .collect();
    if rules.secondary_suppression {
        protect_two_way(r + 1, w, &values, &mut outcomes);
    }
    for i in 0..r {
        for j in 0..c {
            cells[i * c + j] = outcomes[i * w + j].clone();
        }
    }
    Margins {
        rows: (0..r)
            .map(|i| checked(values[i * w + c], outcomes[i * w + c].clone()))
            .collect(),
        columns: (0..c)
            .map(|j| checked(values[r * w + j], outcomes[r * w + j].clone()))
            .collect(),
        total: checked(values[r * w + c], outcomes[r * w + c].clone()),
    }
}

/// Suppresses further entries of an `rows × cols` table whose every line sums to zero with
/// signs (cells and margins) until no suppressed entry is a bridge of the line graph.
fn protect_two_way(rows: usize, cols: usize, values: &[u64], outcomes: &mut [Outcome]) {
    loop {
        let suppressed: Vec<bool> = outcomes.iter().map(Outcome::is_suppressed).collect();
        let Some(bridge) = first_bridge(rows, cols, &suppressed) else {
            return;
        };
        let (bi, bj) = (bridge / cols, bridge % cols);
        let cost = |k: usize| {
            if suppressed[k] {
                0
            } else {
                values[k] + 1
            }
        };
        let mut best: Option<(u64, usize, usize)> = None;
        for i in (0..rows).filter(|&i| i != bi) {
            for j in (0..cols).filter(|&j| j != bj) {
                let total = cost(bi * cols + j) + cost(i * cols + bj) + cost(i * cols + j);
                if best.is_none_or(|(b, _, _)| total < b) {
                    best = Some((total, i, j));
                }
            }
        }
        let Some((_, i, j)) = best else {
            // A table with a single line: nothing can protect the entry but its own line, which
            // does not exist in two dimensions; cannot happen for r, c ≥ 1.
            return;
        };
        for k in [bi * cols + j, i * cols + bj, i * cols + j] {
            if !suppressed[k] {
                outcomes[k].add_secondary();
            }
        }
    }
}

/// The first suppressed entry (by index) that is a bridge of the bipartite graph rows ∪ columns
/// with the suppressed entries as edges (Tarjan's bridge-finding, iterative).
fn first_bridge(rows: usize, cols: usize, suppressed: &[bool]) -> Option<usize> {
    let v = rows + cols;
    let mut adj: Vec<Vec<(usize, usize)>> = vec![Vec::new(); v];
    for (k, _) in suppressed.iter().enumerate().filter(|(_, s)| **s) {
        let (i, j) = (k / cols, k % cols);
        adj[i].push((rows + j, k));
        adj[rows + j].push((i, k));
    }
    let mut disc = vec![usize::MAX; v];
    let mut low = vec![0usize; v];
    let mut time = 0usize;
    let mut bridges: Vec<usize> = Vec::new();
    for root in 0..v {
        if disc[root] != usize::MAX {
            continue;
        }
        // Stack of (vertex, edge used to reach it, next neighbour position).
        let mut stack: Vec<(usize, usize, usize)> = vec![(root, usize::MAX, 0)];
        disc[root] = time;
        low[root] = time;
        time += 1;
        while let Some(top) = stack.last_mut() {
            let (u, via) = (top.0, top.1);
            if top.2 < adj[u].len() {
                let (w, k) = adj[u][top.2];
                top.2 += 1;
                if k == via {
                    continue;
                }
                if disc[w] == usize::MAX {
                    disc[w] = time;
                    low[w] = time;
                    time += 1;
                    stack.push((w, k, 0));
                } else {
                    low[u] = low[u].min(disc[w]);
                }
            } else {
                stack.pop();
                if let Some(&(p, _, _)) = stack.last() {
                    low[p] = low[p].min(low[u]);
                    if low[u] > disc[p] {
                        bridges.push(via);
                    }
                }
            }
        }
    }
    bridges.into_iter().min()
}

// ---------------------------------------------------------------------------------------------
// Differencing
// ---------------------------------------------------------------------------------------------

/// How two populations are nested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Nesting {
    /// The same population (each contains the other).
    Same,
    /// The earlier population contains the new one.
    EarlierContainsNew,
    /// The new population contains the earlier one.
    NewContainsEarlier,
}

/// Why a pair of counts is a differencing risk (stable codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum DifferencingReason {
    /// One population is contained in the other.
    NestedPopulations,
    /// The same population was counted again with a different result.
    SamePopulationChanged,
    /// The counts differ by more than zero and less than the minimum cell count.
    SmallDifference,
}

/// A pair of counts whose difference discloses a small group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DifferencingRisk {
    /// Position in `earlier`.
    pub earlier: usize,
    /// Position in `new`.
    pub new: usize,
    pub nesting: Nesting,
    /// |earlier count − new count|.
    pub difference: u64,
    pub reasons: Vec<DifferencingReason>,
}

/// Every (earlier, new) pair of nested populations whose counts differ by a number in
/// (0, `min_cell`).
pub fn differencing(
    earlier: &[ReleasedCount],
    new: &[ReleasedCount],
    min_cell: u64,
) -> Vec<DifferencingRisk> {
    let mut out = Vec::new();
    for (ei, e) in earlier.iter().enumerate() {
        for (ni, n) in new.iter().enumerate() {
            let difference = e.count.abs_diff(n.count);
            if difference == 0 || difference >= min_cell {
                continue;
            }
            let e_has_n = contains(&e.population, &n.population);
            let n_has_e = contains(&n.population, &e.population);
            let (nesting, first) = match (e_has_n, n_has_e) {
                (true, true) => (Nesting::Same, DifferencingReason::SamePopulationChanged),
                (true, false) => (
                    Nesting::EarlierContainsNew,
                    DifferencingReason::NestedPopulations,
                ),
                (false, true) => (
                    Nesting::NewContainsEarlier,
                    DifferencingReason::NestedPopulations,
                ),
                (false, false) => continue,
            };
            out.push(DifferencingRisk {
                earlier: ei,
                new: ni,
                nesting,
                difference,
                reasons: vec![first, DifferencingReason::SmallDifference],
            });
        }
    }
    out
}

/// Whether population `outer` provably contains population `inner`: for every predicate of
/// `outer`, the values `inner` allows on that column (intersection of its predicates there)
/// all satisfy it. Sound, not complete: `false` means "not shown to be nested".
pub fn contains(outer: &[Predicate], inner: &[Predicate]) -> bool {
    let mut domains: BTreeMap<&str, Domain> = BTreeMap::new();
    for p in inner {
        let d = domains.entry(p.column()).or_insert(Domain::Any);
        *d = d.intersect(&Domain::of(p));
    }
    outer
        .iter()
        .all(|q| domains.get(q.column()).unwrap_or(&Domain::Any).within(q))
}

/// The values a set of predicates allows on one column.
#[derive(Debug, Clone, PartialEq)]
enum Domain {
    /// Anything, missing included.
    Any,
    Missing,
    /// A finite set of values (sorted).
    Set(Vec<f64>),
    /// An interval of non-missing values (infinite ends allowed).
    Interval {
        lo: f64,
        lo_closed: bool,
        hi: f64,
        hi_closed: bool,
    },
    Empty,
}

impl Domain {
    fn interval(lo: f64, lo_closed: bool, hi: f64, hi_closed: bool) -> Self {
        Self::Interval {
            lo,
            lo_closed,
            hi,
            hi_closed,
        }
    }

    fn of(p: &Predicate) -> Self {
        const INF: f64 = f64::INFINITY;
        const NINF: f64 = f64::NEG_INFINITY;
        match p {
            Predicate::IsMissing { .. } => Self::Missing,
            Predicate::NotMissing { .. } => Self::interval(NINF, false, INF, false),
            Predicate::Eq { value, .. } => Self::Set(vec![*value]),
            Predicate::In { values, .. } => Self::Set(values.clone()),
            Predicate::Lt { value, .. } => Self::interval(NINF, false, *value, false),
            Predicate::Le { value, .. } => Self::interval(NINF, false, *value, true),
            Predicate::Gt { value, .. } => Self::interval(*value, false, INF, false),
            Predicate::Ge { value, .. } => Self::interval(*value, true, INF, false),
            Predicate::Between { lo, hi, .. } => Self::interval(*lo, true, *hi, true),
        }
    }

    fn contains_value(&self, x: f64) -> bool {
        match self {
            Self::Any => true,
            Self::Missing | Self::Empty => false,
            Self::Set(vs) => vs.contains(&x),
            Self::Interval {
                lo,
                lo_closed,
                hi,
                hi_closed,
            } => (x > *lo || (*lo_closed && x == *lo)) && (x < *hi || (*hi_closed && x == *hi)),
        }
    }

    fn intersect(&self, other: &Domain) -> Domain {
        match (self, other) {
            (Self::Empty, _) | (_, Self::Empty) => Self::Empty,
            (Self::Any, d) | (d, Self::Any) => d.clone(),
            (Self::Missing, Self::Missing) => Self::Missing,
            (Self::Missing, _) | (_, Self::Missing) => Self::Empty,
            (Self::Set(a), b @ (Self::Set(_) | Self::Interval { .. }))
            | (b @ Self::Interval { .. }, Self::Set(a)) => {
                let s: Vec<f64> = a.iter().copied().filter(|&x| b.contains_value(x)).collect();
                if s.is_empty() {
                    Self::Empty
                } else {
                    Self::Set(s)
                }
            }
            (
                Self::Interval {
                    lo: l1,
                    lo_closed: lc1,
                    hi: h1,
                    hi_closed: hc1,
                },
                Self::Interval {
                    lo: l2,
                    lo_closed: lc2,
                    hi: h2,
                    hi_closed: hc2,
                },
            ) => {
                let (lo, lo_closed) = if l1 > l2 || (l1 == l2 && !lc1) {
                    (*l1, *lc1)
                } else {
                    (*l2, *lc2)
                };
                let (hi, hi_closed) = if h1 < h2 || (h1 == h2 && !hc1) {
                    (*h1, *hc1)
                } else {
                    (*h2, *hc2)
                };
                if lo > hi || (lo == hi && !(lo_closed && hi_closed)) {
                    Self::Empty
                } else {
                    Self::interval(lo, lo_closed, hi, hi_closed)
                }
            }
        }
    }

    /// Whether every value allowed here satisfies `q`.
    fn within(&self, q: &Predicate) -> bool {
        match self {
            Self::Empty => true,
            Self::Any => false,
            Self::Missing => matches!(q, Predicate::IsMissing { .. }),
            Self::Set(vs) => vs.iter().all(|&x| q.matches(x)),
            Self::Interval {
                lo,
                lo_closed,
                hi,
                hi_closed,
            } => {
                if lo == hi {
                    return q.matches(*lo);
                }
                match Domain::of(q) {
                    Self::Interval {
                        lo: ql,
                        lo_closed: qlc,
                        hi: qh,
                        hi_closed: qhc,
                    } => {
                        let lo_ok = *lo > ql || (*lo == ql && (qlc || !*lo_closed));
                        let hi_ok = *hi < qh || (*hi == qh && (qhc || !*hi_closed));
                        lo_ok && hi_ok
                    }
                    _ => false,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combine::combine;
    use crate::partial::partial;
    use crate::query::{Limits, QueryForm};
    use crate::table::Table;
    use rand::{RngExt, SeedableRng};
    use serde_json::json;

    fn q(v: serde_json::Value) -> Query {
        let form: QueryForm = serde_json::from_value(v).unwrap();
        Query::parse(form, &Limits::default()).unwrap()
    }

    fn run(query: &Query, table: &Table, rules: &Rules) -> Release {
        let c = combine(query, &[partial(query, table).unwrap()]).unwrap();
        check(query, &c, rules)
    }

    fn ones(n: usize) -> Table {
        Table::from_columns(vec![("x", vec![1.0; n])]).unwrap()
    }

    #[test]
    fn nine_is_suppressed_ten_is_released() {
        let query = q(json!({"statistic": "count"}));
        let r = run(&query, &ones(9), &Rules::default());
        assert_eq!(
            r.cells[0].outcome,
            Outcome::Suppressed {
                reasons: vec![Reason::ThresholdCount]
            }
        );
        assert_eq!(r.cells[0].value, None);
        let r = run(&query, &ones(10), &Rules::default());
        assert_eq!(r.cells[0].outcome, Outcome::Released);
        assert_eq!(r.cells[0].value, Some(CellValue::Count { n: 10 }));
    }

    #[test]
    fn zeros_follow_the_policy() {
        let query =
            q(json!({"statistic": "count", "filters": [{"column": "x", "op": "gt", "value": 5}]}));
        let review = run(&query, &ones(20), &Rules::default());
        assert_eq!(
            review.cells[0].outcome,
            Outcome::Review {
                reasons: vec![Reason::ZeroCount]
            }
        );
        assert_eq!(
            review.summary,
            Summary {
                released: 0,
                suppressed: 0,
                review: 1
            }
        );
        let rules = Rules {
            zeros: ZeroPolicy::Release,
            ..Rules::default()
        };
        assert!(run(&query, &ones(20), &rules).cells[0]
            .outcome
            .is_released());
        let rules = Rules {
            zeros: ZeroPolicy::Suppress,
            ..Rules::default()
        };
        assert!(run(&query, &ones(20), &rules).cells[0]
            .outcome
            .is_suppressed());
    }

    fn mean_of(values: Vec<f64>, rules: &Rules) -> Outcome {
        let query = q(json!({"statistic": "mean", "variable": "x"}));
        let t = Table::from_columns(vec![("x", values)]).unwrap();
        run(&query, &t, rules).cells[0].outcome.clone()
    }

    #[test]
    fn dominance_at_exactly_k_passes() {
        // 80, 10 and ten 1s: total 100, top two 90 → 90/100 = 0.9, not > 0.9.
        // p%: (100 − 90)/80 = 0.125 ≥ 0.1.
        let mut v = vec![80.0, 10.0];
        v.extend([1.0; 10]);
        assert_eq!(mean_of(v, &Rules::default()), Outcome::Released);
        // 81, 10 and nine 1s: n = 11, total 100, top two 91 → 0.91 > 0.9.
        // p%: 9/81 = 0.111 ≥ 0.1, so dominance alone.
        let mut v = vec![81.0, 10.0];
        v.extend([1.0; 9]);
        assert_eq!(
            mean_of(v, &Rules::default()),
            Outcome::Suppressed {
                reasons: vec![Reason::Dominance]
            }
        );
        // Negative values count by magnitude: −81, 10, nine 1s is as dominated.
        let mut v = vec![-81.0, 10.0];
        v.extend([1.0; 9]);
        assert!(mean_of(v, &Rules::default()).is_suppressed());
    }

    #[test]
    fn p_ratio_boundary() {
        // With the defaults (n = 2, k = 0.9, p = 0.1) a p% violation implies a dominance one
        // ((total − x₁ − x₂) < 0.1 x₁ ⇒ (x₁ + x₂)/total > 0.9), so k is raised to isolate it.
        let rules = Rules {
            dominance_k: 0.95,
            ..Rules::default()
        };
        // 100, 50 and ten 1s: (160 − 150)/100 = 0.1, not < 0.1; 150/160 = 0.9375 ≤ 0.95.
        let mut v = vec![100.0, 50.0];
        v.extend([1.0; 10]);
        assert_eq!(mean_of(v, &rules), Outcome::Released);
        // 100, 50 and nine 1s: 9/100 = 0.09 < 0.1; 150/159 = 0.943 ≤ 0.95.
        let mut v = vec![100.0, 50.0];
        v.extend([1.0; 9]);
        assert_eq!(
            mean_of(v, &rules),
            Outcome::Suppressed {
                reasons: vec![Reason::PRatio]
            }
        );
        assert_eq!(magnitude_reasons(0.0, 0.0, 0.0, &rules), vec![]);
    }

    #[test]
    fn residual_df_hook() {
        let rules = Rules::default();
        assert!(check_residual_df(9, &rules).is_suppressed());
        assert!(check_residual_df(10, &rules).is_released());
    }

    /// Whether each unknown entry of a released table is determined by the released values.
    /// Entries of an `rows × cols` extended table (cells plus a total column and a total row)
    /// satisfy: every row sums its first cols−1 entries to its last, every column likewise.
    /// `known[k]` is the released value or `None`. Entry k is determined iff the unit vector
    /// e_k lies in the row space of the equations restricted to the unknowns.
    fn recoverable(rows: usize, cols: usize, known: &[Option<u64>]) -> Vec<usize> {
        recoverable_from(rows, cols, known, true)
    }

    /// As [`recoverable`]; without column equations for a one-way table (a single line).
    fn recoverable_from(
        rows: usize,
        cols: usize,
        known: &[Option<u64>],
        column_equations: bool,
    ) -> Vec<usize> {
        let unknown: Vec<usize> = (0..known.len()).filter(|&k| known[k].is_none()).collect();
        let col_of = |k: usize| unknown.iter().position(|&u| u == k);
        let mut eqs: Vec<Vec<f64>> = Vec::new();
        for i in 0..rows {
            let mut e = vec![0.0; unknown.len()];
            for j in 0..cols {
                if let Some(c) = col_of(i * cols + j) {
                    e[c] = if j + 1 == cols { -1.0 } else { 1.0 };
                }
            }
            eqs.push(e);
        }
        for j in (0..cols).filter(|_| column_equations) {
            let mut e = vec![0.0; unknown.len()];
            for i in 0..rows {
                if let Some(c) = col_of(i * cols + j) {
                    e[c] = if i + 1 == rows { -1.0 } else { 1.0 };
                }
            }
            eqs.push(e);
        }
        let base = rank(eqs.clone());
        unknown
            .iter()
            .enumerate()
            .filter(|&(c, _)| {
                let mut with = eqs.clone();
                let mut unit = vec![0.0; unknown.len()];
                unit[c] = 1.0;
                with.push(unit);
                rank(with) == base
            })
            .map(|(_, &k)| k)
            .collect()
    }

    fn rank(mut m: Vec<Vec<f64>>) -> usize {
        let cols = m.first().map_or(0, Vec::len);
        let mut r = 0;
        for c in 0..cols {
            let Some(p) = (r..m.len()).max_by(|&a, &b| m[a][c].abs().total_cmp(&m[b][c].abs()))
            else {
                break;
            };
            if m[p][c].abs() < 1e-9 {
                continue;
            }
            m.swap(r, p);
            let pivot = m[r].clone();
            for (i, row) in m.iter_mut().enumerate() {
                if i != r {
                    let f = row[c] / pivot[c];
                    for (x, y) in row.iter_mut().zip(&pivot).skip(c) {
                        *x -= f * y;
                    }
                }
            }
            r += 1;
        }
        r
    }

    /// The released two-way table with margins as an extended table of known values.
    fn extended(r: &Release, rows: usize, cols: usize) -> Vec<Option<u64>> {
        let m = r.margins.as_ref().unwrap();
        let w = cols + 1;
        let mut out = vec![None; (rows + 1) * w];
        for i in 0..rows {
            for j in 0..cols {
                let c = &r.cells[i * cols + j];
                // Cells sent to review count as known (the reviewer may release them).
                out[i * w + j] = match (&c.outcome, &c.value) {
                    (_, Some(CellValue::Count { n })) => Some(*n),
                    (Outcome::Review { .. }, None) => Some(0),
                    _ => None,
                };
            }
            out[i * w + cols] = m.rows[i].count;
        }
        for j in 0..cols {
            out[rows * w + j] = m.columns[j].count;
        }
        out[rows * w + cols] = m.total.count;
        out
    }

    fn two_way_table(counts: &[[usize; 3]; 3]) -> Table {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (i, row) in counts.iter().enumerate() {
            for (j, &n) in row.iter().enumerate() {
                a.extend(std::iter::repeat_n(i as f64, n));
                b.extend(std::iter::repeat_n(j as f64, n));
            }
        }
        Table::from_columns(vec![("a", a), ("b", b)]).unwrap()
    }

    fn two_way_query() -> Query {
        q(json!({"statistic": "count", "group_by": [
            {"column": "a", "levels": [0, 1, 2]}, {"column": "b", "levels": [0, 1, 2]}]}))
    }

    #[test]
    fn a_lone_suppressed_cell_is_recoverable_without_secondary_suppression() {
        let t = two_way_table(&[[20, 30, 40], [25, 4, 35], [50, 60, 70]]);
        let rules = Rules {
            secondary_suppression: false,
            ..Rules::default()
        };
        let r = run(&two_way_query(), &t, &rules);
        // Cell (1,1) = 4 is suppressed, but row total 64 − 25 − 35 gives it back.
        assert_eq!(recoverable(4, 4, &extended(&r, 3, 3)), vec![5]);
    }

    #[test]
    fn secondary_suppression_cannot_be_undone_from_the_margins() {
        let t = two_way_table(&[[20, 30, 40], [25, 4, 35], [50, 60, 70]]);
        let r = run(&two_way_query(), &t, &Rules::default());
        let known = extended(&r, 3, 3);
        assert_eq!(recoverable(4, 4, &known), Vec::<usize>::new());
        // The cheapest rectangle through (1,1): cells (0,0) 20, (0,1) 30, (1,0) 25 (cost 78).
        let suppressed: Vec<usize> = (0..9)
            .filter(|&k| r.cells[k].outcome.is_suppressed())
            .collect();
        assert_eq!(suppressed, vec![0, 1, 3, 4]);
        assert_eq!(
            r.cells[0].outcome,
            Outcome::Suppressed {
                reasons: vec![Reason::SecondarySuppression]
            }
        );
        // Margins are all ≥ 10 and stay released.
        assert_eq!(r.margins.as_ref().unwrap().total.count, Some(334));
    }

    #[test]
    fn secondary_suppression_holds_on_random_tables() {
        // Many small cells, small margins (a row total below 10 is itself suppressed).
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        for _ in 0..200 {
            let mut counts = [[0usize; 3]; 3];
            for row in &mut counts {
                for c in row.iter_mut() {
                    *c = if rng.random_bool(0.3) {
                        rng.random_range(1..10)
                    } else {
                        rng.random_range(10..40)
                    };
                }
            }
            let t = two_way_table(&counts);
            let r = run(&two_way_query(), &t, &Rules::default());
            let known = extended(&r, 3, 3);
            assert_eq!(recoverable(4, 4, &known), Vec::<usize>::new(), "{counts:?}");
            // Every primary suppression stayed suppressed.
            for (i, row) in counts.iter().enumerate() {
                for (j, &c) in row.iter().enumerate() {
                    if c < 10 {
                        assert!(r.cells[i * 3 + j].outcome.is_suppressed());
                    }
                }
            }
        }
    }

    #[test]
    fn one_way_secondary_suppression_hides_the_next_smallest_cell() {
        // Cells 20, 5, 30, 15; total 70. Cell 1 (5) is primary; 70 − 20 − 30 − 15 would give it
        // back, so the smallest released cell, 15, is suppressed too: 5 + 15 = 20 is all one
        // can tell.
        let (mut v, levels) = (Vec::new(), [20usize, 5, 30, 15]);
        for (i, &n) in levels.iter().enumerate() {
            v.extend(std::iter::repeat_n(i as f64, n));
        }
        let t = Table::from_columns(vec![("a", v)]).unwrap();
        let query =
            q(json!({"statistic": "count", "group_by": [{"column": "a", "levels": [0, 1, 2, 3]}]}));
        let r = run(&query, &t, &Rules::default());
        let outcomes: Vec<bool> = r.cells.iter().map(|c| c.outcome.is_suppressed()).collect();
        assert_eq!(outcomes, vec![false, true, false, true]);
        assert_eq!(r.margins.as_ref().unwrap().total.count, Some(70));
        // One equation, two unknowns: neither is determined.
        let known = [Some(20), None, Some(30), None, Some(70)];
        assert_eq!(recoverable_from(1, 5, &known, false), Vec::<usize>::new());
        // Had only the 5 been hidden, the total would give it back.
        let known = [Some(20), None, Some(30), Some(15), Some(70)];
        assert_eq!(recoverable_from(1, 5, &known, false), vec![1]);
    }

    #[test]
    fn histogram_bins_are_checked_as_a_line() {
        // Bins [0,1) 12, [1,2) 3, [2,3] 20; nothing outside. 3 is primary; the next smallest
        // non-suppressed entry is an empty outside bin (0), suppressed as its complement.
        let mut v = vec![0.5; 12];
        v.extend([1.5; 3]);
        v.extend([2.5; 20]);
        let t = Table::from_columns(vec![("x", v)]).unwrap();
        let query = q(json!({"statistic": "histogram", "variable": "x", "edges": [0, 1, 2, 3]}));
        let r = run(&query, &t, &Rules::default());
        let Some(CellValue::Histogram {
            n,
            below,
            bins,
            above,
        }) = &r.cells[0].value
        else {
            panic!()
        };
        assert_eq!(*n, 35);
        assert_eq!(bins[0].count, Some(12));
        assert_eq!(bins[1].count, None);
        assert_eq!(bins[2].count, Some(20));
        assert!(below.outcome.is_suppressed() && above.outcome.is_released());
    }

    #[test]
    fn survival_curves_stop_where_few_remain_at_risk() {
        // 30 records: time k for k = 1..=30, all events. At risk at the start of (k−1, k] is
        // 31 − k: ≥ 10 up to k = 21, 9 at k = 22.
        let times: Vec<f64> = (1..=30).map(f64::from).collect();
        let t = Table::from_columns(vec![("t", times), ("e", vec![1.0; 30])]).unwrap();
        let grid: Vec<f64> = (0..=30).map(f64::from).collect();
        let query =
            q(json!({"statistic": "kaplan_meier", "time": "t", "event": "e", "time_grid": grid}));
        let r = run(&query, &t, &Rules::default());
        let Some(CellValue::Survival {
            points,
            truncated_at,
            ..
        }) = &r.cells[0].value
        else {
            panic!()
        };
        assert_eq!(points.len(), 22); // times 0..=21
        assert_eq!(points.last().unwrap().at_risk, 10);
        assert_eq!(*truncated_at, Some(22.0));
        // S(21) = 9/30.
        assert!((points[21].survival - 0.3).abs() < 1e-12);
    }

    #[test]
    fn sparse_quantiles_go_to_review_and_small_exclusions_are_hidden() {
        // 30 values in [0,1) and 5 in [9,10]; 3 missing. p = 0.95 → rank 33.25 in the sparse bin.
        let mut v = vec![0.5; 30];
        v.extend([9.5; 5]);
        v.extend([f64::NAN; 3]);
        let t = Table::from_columns(vec![("x", v)]).unwrap();
        let query = q(json!({"statistic": "quantiles", "variable": "x",
            "probabilities": [0.5, 0.95], "range": {"lo": 0, "hi": 10}, "bins": 10}));
        let r = run(&query, &t, &Rules::default());
        let Some(CellValue::Quantiles { estimates, .. }) = &r.cells[0].value else {
            panic!()
        };
        // p = 0.5: rank 17.5 of 30 in [0,1) → 17.5/30 = 0.58333….
        assert!((estimates[0].value.unwrap() - 17.5 / 30.0).abs() < 1e-12);
        assert_eq!(estimates[1].value, None);
        assert_eq!(
            estimates[1].outcome,
            Outcome::Review {
                reasons: vec![Reason::QuantileInSparseBin]
            }
        );
        assert_eq!(r.excluded.len(), 1);
        assert_eq!(r.excluded[0].reason, Exclusion::MissingValue);
        assert_eq!(r.excluded[0].checked.count, None);
        // Top contributions never appear in what is released.
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("top") && !json.contains("first"));
    }

    fn pred(v: serde_json::Value) -> Predicate {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn differencing_flags_nested_populations_with_small_differences() {
        let all = ReleasedCount {
            population: vec![],
            count: 105,
        };
        let over_30 = ReleasedCount {
            population: vec![pred(json!({"op": "gt", "column": "age", "value": 30}))],
            count: 98,
        };
        // All patients 105, then age > 30 98: the 7 aged ≤ 30 (or missing) are disclosed.
        let risks = differencing(
            std::slice::from_ref(&all),
            std::slice::from_ref(&over_30),
            10,
        );
        assert_eq!(
            risks,
            vec![DifferencingRisk {
                earlier: 0,
                new: 0,
                nesting: Nesting::EarlierContainsNew,
                difference: 7,
                reasons: vec![
                    DifferencingReason::NestedPopulations,
                    DifferencingReason::SmallDifference
                ],
            }]
        );
        // Semantic nesting: age ≥ 35 and sex = 1 lies inside age > 30.
        let inner = ReleasedCount {
            population: vec![
                pred(json!({"op": "eq", "column": "sex", "value": 1})),
                pred(json!({"op": "ge", "column": "age", "value": 35})),
            ],
            count: 90,
        };
        let r = differencing(
            std::slice::from_ref(&inner),
            std::slice::from_ref(&over_30),
            10,
        );
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].nesting, Nesting::NewContainsEarlier);
        // Difference of 10 or more, or zero, is not a risk.
        let big = ReleasedCount {
            count: 120,
            ..all.clone()
        };
        assert!(differencing(&[big], std::slice::from_ref(&over_30), 10).is_empty());
        let same = ReleasedCount {
            count: 98,
            ..all.clone()
        };
        assert!(differencing(&[same], std::slice::from_ref(&over_30), 10).is_empty());
        // Overlapping but not nested populations are not flagged by this check.
        let women = ReleasedCount {
            population: vec![pred(json!({"op": "eq", "column": "sex", "value": 2}))],
            count: 100,
        };
        assert!(differencing(&[women], std::slice::from_ref(&over_30), 10).is_empty());
        // The same population counted again with another result.
        let again = ReleasedCount {
            count: 103,
            ..all.clone()
        };
        let r = differencing(&[all], &[again], 10);
        assert_eq!(r[0].nesting, Nesting::Same);
        assert_eq!(r[0].reasons[0], DifferencingReason::SamePopulationChanged);
    }

    #[test]
    fn containment_by_interval_reasoning() {
        let p = |v| vec![pred(v)];
        let between = p(json!({"op": "between", "column": "a", "lo": 30, "hi": 40}));
        let two = vec![
            pred(json!({"op": "ge", "column": "a", "value": 30})),
            pred(json!({"op": "le", "column": "a", "value": 40})),
        ];
        assert!(contains(&between, &two) && contains(&two, &between));
        // a > 30 does not contain a ≥ 30 (30 itself), but a ≥ 30 contains a > 30.
        let gt = p(json!({"op": "gt", "column": "a", "value": 30}));
        let ge = p(json!({"op": "ge", "column": "a", "value": 30}));
        assert!(!contains(&gt, &ge) && contains(&ge, &gt));
        // in {1, 2} contains eq 2; not_missing contains any comparison; is_missing only itself.
        assert!(contains(
            &p(json!({"op": "in", "column": "a", "values": [1, 2]})),
            &p(json!({"op": "eq", "column": "a", "value": 2}))
        ));
        assert!(contains(
            &p(json!({"op": "not_missing", "column": "a"})),
            &gt
        ));
        assert!(!contains(
            &p(json!({"op": "is_missing", "column": "a"})),
            &gt
        ));
        // A cell's population: filters plus coordinates, from the query.
        let query = q(json!({"statistic": "count",
            "group_by": [{"column": "a", "edges": [0, 30, 60]}],
            "filters": [{"column": "s", "op": "eq", "value": 1}]}));
        assert!(contains(
            &query.cell_population(1),
            &[
                pred(json!({"op": "eq", "column": "s", "value": 1})),
                pred(json!({"op": "between", "column": "a", "lo": 40, "hi": 50})),
            ]
        ));
    }

    #[test]
    fn released_counts_carry_their_populations() {
        let t = two_way_table(&[[20, 30, 40], [25, 4, 35], [50, 60, 70]]);
        let query = two_way_query();
        let r = run(&query, &t, &Rules::default());
        let counts = r.released_counts(&query);
        // 5 released cells + 3 row totals + 3 column totals + grand total.
        assert_eq!(counts.len(), 12);
        assert_eq!(counts.last().unwrap().count, 334);
        assert!(counts.last().unwrap().population.is_empty());
    }
}
