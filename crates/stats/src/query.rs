//! The statistical content of a health data request (Regulation (EU) 2025/327, Art. 69): what
//! the applicant asks to be computed, declared up front so that every data holder computes the
//! same thing and the answer can only be "in an anonymised statistical format" (Art. 69(1)).
//!
//! Parse, don't validate: the applicant's request arrives as a loosely typed [`QueryForm`]
//! (strings where a closed set of words is expected, options everywhere) so that one pass can
//! report **every** problem, each with a field path (`group_by[1].edges[3]`) and a stable code
//! ([`ErrorCode`]); [`Query::parse`] turns it into a [`Query`] whose invariants hold by
//! construction (strictly increasing edges, declared levels, bounded sizes). A `Query`
//! serialises as its form and deserialises through `parse` (with the default [`Limits`]), so a
//! node agent that receives one cannot hold an invalid query either.
//!
//! What can be asked:
//! - `count`: the number of records, optionally cross-tabulated by one or two grouping
//!   variables;
//! - `mean`: mean and standard deviation of a numeric variable, optionally grouped; with
//!   declared `bounds` values are clipped to them (required under differential privacy, where
//!   the bounds give the sensitivity);
//! - `quantiles`: declared probabilities, estimated from a histogram on a declared `range` and
//!   number of `bins` so that nodes never send record values;
//! - `histogram`: counts over declared `edges`;
//! - `kaplan_meier`: survival of a `time` variable with an `event` indicator (1 event,
//!   0 censored) on a declared `time_grid`, optionally grouped.
//!
//! Grouping variables are categorical with declared `levels` (numeric codes) or numeric with
//! declared bin `edges`; every cell is therefore known before any data is read, which is what
//! makes empty (zero) cells visible to output checking. Filters are a conjunction of simple
//! predicates; a comparison with a missing value is false (only `is_missing` matches it).
//!
//! Bins are half-open `[e_i, e_{i+1})` except the last, which is closed `[e_{n-1}, e_n]`
//! (numpy's `histogram` convention). Variables are column names; whether they exist in the
//! feature specification is the caller's check.
//!
//! [`Limits`] bound the size of every message (cells, bins, filter values) so that a query
//! cannot make nodes send large payloads.

use std::fmt;

use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------

/// Size limits a query must respect. Defaults keep a partial well under a megabyte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Limits {
    /// Most cells of the cross-tabulation (product of the grouping sizes).
    pub max_cells: usize,
    /// Most bins of one histogram / quantile histogram, and most points of a time grid.
    pub max_bins: usize,
    /// Most values per partial: cells × (bins or grid points).
    pub max_values: usize,
    /// Most filter predicates.
    pub max_filters: usize,
    /// Most values of one `in` filter or most levels of one grouping.
    pub max_set_values: usize,
    /// Most probabilities of a quantile request.
    pub max_probabilities: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_cells: 1_000,
            max_bins: 200,
            max_values: 20_000,
            max_filters: 32,
            max_set_values: 256,
            max_probabilities: 99,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The raw form
// ---------------------------------------------------------------------------------------------

/// A statistical query as the applicant submits it, before validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueryForm {
    /// `count`, `mean`, `quantiles`, `histogram` or `kaplan_meier`.
    pub statistic: String,
    /// The analysed variable (`mean`, `quantiles`, `histogram`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
    /// Up to two grouping variables (cross-tabulation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group_by: Vec<GroupForm>,
    /// Conjunction of predicates selecting the population.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<FilterForm>,
    /// Probabilities in (0, 1) (`quantiles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probabilities: Option<Vec<f64>>,
    /// Range of the quantile histogram (`quantiles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<RangeForm>,
    /// Number of equal-width bins of the quantile histogram (`quantiles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bins: Option<u32>,
    /// Bin edges, strictly increasing (`histogram`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edges: Option<Vec<f64>>,
    /// Follow-up time variable (`kaplan_meier`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// Event indicator variable, 1 event / 0 censored (`kaplan_meier`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Time points, strictly increasing, first ≥ 0; the last is the horizon (`kaplan_meier`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_grid: Option<Vec<f64>>,
    /// Clipping bounds of the analysed variable (`mean`; required with `dp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<RangeForm>,
    /// Differential privacy for the released values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dp: Option<DpForm>,
}

/// A grouping variable: categorical (`levels`) or binned (`edges`), exactly one of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupForm {
    pub column: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levels: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edges: Option<Vec<f64>>,
}

/// One filter predicate. `op` is one of `eq`, `in`, `lt`, `le`, `gt`, `ge` (with `value`, or
/// `values` for `in`), `between` (inclusive `lo`..`hi`), `is_missing`, `not_missing`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FilterForm {
    pub column: String,
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lo: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hi: Option<f64>,
}

/// A closed numeric range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RangeForm {
    pub lo: f64,
    pub hi: f64,
}

/// Differential privacy requested for a release. `mechanism` is `gaussian` (with `rho` for
/// ρ-zCDP, or `epsilon` and `delta`) or `laplace` (with `epsilon`). `placement` is `central`
/// (default: the gateway adds the noise once) or `distributed` (each node adds its share).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DpForm {
    pub mechanism: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Stable codes of the problems [`Query::parse`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ErrorCode {
    /// A field the statistic needs is absent.
    Required,
    /// A field is present that the statistic does not use.
    NotApplicable,
    /// `statistic` is not one of the five.
    UnknownStatistic,
    /// A filter `op` is not one of the known operators.
    UnknownOperator,
    /// `dp.mechanism` or `dp.placement` is not a known word.
    UnknownMechanism,
    /// An empty column name.
    EmptyName,
    /// A number is NaN or infinite.
    NotFinite,
    /// Edges, a grid or a range are not strictly increasing.
    NotIncreasing,
    /// A value outside what the field accepts (a probability outside (0, 1), a negative time).
    OutOfRange,
    /// Too few entries (fewer than two edges, no probabilities).
    TooFew,
    /// More entries than [`Limits`] allow.
    TooMany,
    /// A repeated level, probability or grouping column.
    Duplicate,
    /// Two fields that exclude each other (`levels` and `edges`).
    Conflicting,
    /// `bounds` missing for a mean under differential privacy.
    BoundsRequired,
    /// A statistic that differential privacy is not offered for.
    UnsupportedWithDp,
    /// A privacy parameter that is not a valid budget (ρ ≤ 0, δ ∉ (0, 1), ...).
    InvalidBudget,
}

impl ErrorCode {
    /// The code's spelling in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Required => "required",
            Self::NotApplicable => "not_applicable",
            Self::UnknownStatistic => "unknown_statistic",
            Self::UnknownOperator => "unknown_operator",
            Self::UnknownMechanism => "unknown_mechanism",
            Self::EmptyName => "empty_name",
            Self::NotFinite => "not_finite",
            Self::NotIncreasing => "not_increasing",
            Self::OutOfRange => "out_of_range",
            Self::TooFew => "too_few",
            Self::TooMany => "too_many",
            Self::Duplicate => "duplicate",
            Self::Conflicting => "conflicting",
            Self::BoundsRequired => "bounds_required",
            Self::UnsupportedWithDp => "unsupported_with_dp",
            Self::InvalidBudget => "invalid_budget",
        }
    }
}

/// One problem with a request: where, what (stable code), and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// named apart from the API's own `FieldError` in its schemas
#[cfg_attr(feature = "openapi", schema(as = QueryFieldError))]
pub struct FieldError {
    pub path: String,
    pub code: ErrorCode,
    pub message: String,
}

/// Every problem found in a request, in field order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueryErrors {
    pub errors: Vec<FieldError>,
}

impl fmt::Display for QueryErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .errors
            .iter()
            .map(|e| format!("{}: {} ({})", e.path, e.message, e.code.as_str()))
            .collect();
        write!(f, "invalid query: {}", parts.join("; "))
    }
}

impl QueryErrors {
    /// The codes at a path (tests and callers that map errors to fields).
    pub fn codes_at(&self, path: &str) -> Vec<ErrorCode> {
        self.errors
            .iter()
            .filter(|e| e.path == path)
            .map(|e| e.code)
            .collect()
    }
}

#[derive(Default)]
struct Collector(Vec<FieldError>);

impl Collector {
    fn push(&mut self, path: impl Into<String>, code: ErrorCode, message: impl Into<String>) {
        self.0.push(FieldError {
            path: path.into(),
            code,
            message: message.into(),
        });
    }

    fn name(&mut self, path: &str, name: &str) -> bool {
        if name.trim().is_empty() {
            self.push(
                path,
                ErrorCode::EmptyName,
                "a column name must not be empty",
            );
            false
        } else {
            true
        }
    }

    fn finite(&mut self, path: &str, v: f64) -> bool {
        if v.is_finite() {
            true
        } else {
            self.push(
                path,
                ErrorCode::NotFinite,
                format!("{v} is not a finite number"),
            );
            false
        }
    }

    fn not_applicable(&mut self, path: &str, present: bool, statistic: &str) {
        if present {
            self.push(
                path,
                ErrorCode::NotApplicable,
                format!("`{path}` is not used by `{statistic}`"),
            );
        }
    }

    fn required<'a, T>(&mut self, path: &str, v: &'a Option<T>, statistic: &str) -> Option<&'a T> {
        if v.is_none() {
            self.push(
                path,
                ErrorCode::Required,
                format!("`{statistic}` needs `{path}`"),
            );
        }
        v.as_ref()
    }

    /// Strictly increasing finite edges, at least two, at most `max + 1`.
    fn edges(&mut self, path: &str, edges: &[f64], max_bins: usize) -> Option<Edges> {
        let before = self.0.len();
        if edges.len() < 2 {
            self.push(path, ErrorCode::TooFew, "at least two edges are needed");
        }
        if edges.len() > max_bins + 1 {
            self.push(
                path,
                ErrorCode::TooMany,
                format!("at most {} edges ({max_bins} bins)", max_bins + 1),
            );
        }
        for (i, &e) in edges.iter().enumerate() {
            if self.finite(&format!("{path}[{i}]"), e)
                && i > 0
                && edges[i - 1].is_finite()
                && e <= edges[i - 1]
            {
                self.push(
                    format!("{path}[{i}]"),
                    ErrorCode::NotIncreasing,
                    format!("{e} does not exceed the previous edge {}", edges[i - 1]),
                );
            }
        }
        (self.0.len() == before).then(|| Edges(edges.to_vec()))
    }

    fn range(&mut self, path: &str, r: &RangeForm) -> Option<Bounds> {
        let ok_lo = self.finite(&format!("{path}.lo"), r.lo);
        let ok_hi = self.finite(&format!("{path}.hi"), r.hi);
        if ok_lo && ok_hi && r.lo >= r.hi {
            self.push(
                path,
                ErrorCode::NotIncreasing,
                format!("lo ({}) must be below hi ({})", r.lo, r.hi),
            );
            return None;
        }
        (ok_lo && ok_hi).then_some(Bounds { lo: r.lo, hi: r.hi })
    }
}

// ---------------------------------------------------------------------------------------------
// The validated query
// ---------------------------------------------------------------------------------------------

/// A closed range `lo < hi`, both finite.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Bounds {
    lo: f64,
    hi: f64,
}

impl Bounds {
    pub fn lo(self) -> f64 {
        self.lo
    }
    pub fn hi(self) -> f64 {
        self.hi
    }
    /// `x` clipped into the range.
    pub fn clip(self, x: f64) -> f64 {
        x.clamp(self.lo, self.hi)
    }
    /// Largest absolute value in the range: the sensitivity of a sum of clipped values when one
    /// record is added or removed.
    pub fn max_abs(self) -> f64 {
        self.lo.abs().max(self.hi.abs())
    }
}

/// Strictly increasing finite bin edges, at least two.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct Edges(Vec<f64>);

/// Where a value falls relative to a set of edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinPosition {
    Below,
    Bin(usize),
    Above,
}

impl Edges {
    /// Validated edges: at least two, finite, strictly increasing.
    pub fn new(edges: Vec<f64>) -> Option<Self> {
        let ok = edges.len() >= 2
            && edges.iter().all(|e| e.is_finite())
            && edges.windows(2).all(|w| w[0] < w[1]);
        ok.then_some(Self(edges))
    }
    /// `bins` equal-width bins over `range`. The last edge is `range.hi` exactly.
    pub fn uniform(range: Bounds, bins: u32) -> Self {
        let w = (range.hi - range.lo) / f64::from(bins);
        let mut e: Vec<f64> = (0..bins).map(|i| range.lo + w * f64::from(i)).collect();
        e.push(range.hi);
        Self(e)
    }
    pub fn as_slice(&self) -> &[f64] {
        &self.0
    }
    pub fn bins(&self) -> usize {
        self.0.len() - 1
    }
    pub fn lo(&self) -> f64 {
        self.0[0]
    }
    pub fn hi(&self) -> f64 {
        self.0[self.0.len() - 1]
    }
    /// Bin of a finite value: `[e_i, e_{i+1})`, the last bin closed.
    pub fn position(&self, x: f64) -> BinPosition {
        if x < self.lo() {
            BinPosition::Below
        } else if x > self.hi() {
            BinPosition::Above
        } else if x == self.hi() {
            BinPosition::Bin(self.bins() - 1)
        } else {
            // First edge greater than x, minus one.
            BinPosition::Bin(self.0.partition_point(|&e| e <= x) - 1)
        }
    }
}

/// A grouping variable of the cross-tabulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Grouping {
    /// Categorical: one cell per declared code, in declared order.
    Levels { column: String, levels: Vec<f64> },
    /// Numeric, binned by declared edges.
    Bins { column: String, edges: Edges },
}

impl Grouping {
    pub fn column(&self) -> &str {
        match self {
            Self::Levels { column, .. } | Self::Bins { column, .. } => column,
        }
    }
    /// Number of cells along this variable.
    pub fn size(&self) -> usize {
        match self {
            Self::Levels { levels, .. } => levels.len(),
            Self::Bins { edges, .. } => edges.bins(),
        }
    }
    /// Cell index of a value, or why the record falls in no cell.
    pub fn index(&self, x: f64) -> Result<usize, crate::partial::Exclusion> {
        use crate::partial::Exclusion;
        if x.is_nan() {
            return Err(Exclusion::MissingGroup);
        }
        match self {
            Self::Levels { levels, .. } => levels
                .iter()
                .position(|&l| l == x)
                .ok_or(Exclusion::UndeclaredLevel),
            Self::Bins { edges, .. } => match edges.position(x) {
                BinPosition::Bin(i) => Ok(i),
                _ => Err(Exclusion::OutsideGroupBins),
            },
        }
    }
    /// Label of cell `i` along this variable.
    pub fn label(&self, i: usize) -> CellLabel {
        match self {
            Self::Levels { column, levels } => CellLabel::Level {
                column: column.clone(),
                value: levels[i],
            },
            Self::Bins { column, edges } => CellLabel::Bin {
                column: column.clone(),
                lo: edges.0[i],
                hi: edges.0[i + 1],
                closed_hi: i + 1 == edges.bins(),
            },
        }
    }
}

/// The coordinate of a cell along one grouping variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum CellLabel {
    Level {
        column: String,
        value: f64,
    },
    /// `[lo, hi)`, or `[lo, hi]` for the last bin.
    Bin {
        column: String,
        lo: f64,
        hi: f64,
        closed_hi: bool,
    },
}

impl CellLabel {
    /// The cell coordinate as predicates on the grouping column (for population descriptors).
    pub fn predicates(&self) -> Vec<Predicate> {
        match self {
            Self::Level { column, value } => vec![Predicate::Eq {
                column: column.clone(),
                value: *value,
            }],
            Self::Bin {
                column,
                lo,
                hi,
                closed_hi,
            } => vec![
                Predicate::Ge {
                    column: column.clone(),
                    value: *lo,
                },
                if *closed_hi {
                    Predicate::Le {
                        column: column.clone(),
                        value: *hi,
                    }
                } else {
                    Predicate::Lt {
                        column: column.clone(),
                        value: *hi,
                    }
                },
            ],
        }
    }
}

/// A filter predicate. Comparisons with a missing value are false.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Predicate {
    Eq {
        column: String,
        value: f64,
    },
    /// Values sorted ascending, without repeats.
    In {
        column: String,
        values: Vec<f64>,
    },
    Lt {
        column: String,
        value: f64,
    },
    Le {
        column: String,
        value: f64,
    },
    Gt {
        column: String,
        value: f64,
    },
    Ge {
        column: String,
        value: f64,
    },
    /// Inclusive at both ends.
    Between {
        column: String,
        lo: f64,
        hi: f64,
    },
    IsMissing {
        column: String,
    },
    NotMissing {
        column: String,
    },
}

impl Predicate {
    pub fn column(&self) -> &str {
        match self {
            Self::Eq { column, .. }
            | Self::In { column, .. }
            | Self::Lt { column, .. }
            | Self::Le { column, .. }
            | Self::Gt { column, .. }
            | Self::Ge { column, .. }
            | Self::Between { column, .. }
            | Self::IsMissing { column }
            | Self::NotMissing { column } => column,
        }
    }

    /// Whether a value satisfies the predicate (`NaN` is missing).
    pub fn matches(&self, x: f64) -> bool {
        match self {
            Self::IsMissing { .. } => x.is_nan(),
            Self::NotMissing { .. } => !x.is_nan(),
            Self::Eq { value, .. } => x == *value,
            Self::In { values, .. } => values.contains(&x),
            Self::Lt { value, .. } => x < *value,
            Self::Le { value, .. } => x <= *value,
            Self::Gt { value, .. } => x > *value,
            Self::Ge { value, .. } => x >= *value,
            Self::Between { lo, hi, .. } => *lo <= x && x <= *hi,
        }
    }

    fn to_form(&self) -> FilterForm {
        let mut f = FilterForm {
            column: self.column().to_owned(),
            op: String::new(),
            value: None,
            values: None,
            lo: None,
            hi: None,
        };
        let op = match self {
            Self::Eq { value, .. } => {
                f.value = Some(*value);
                "eq"
            }
            Self::In { values, .. } => {
                f.values = Some(values.clone());
                "in"
            }
            Self::Lt { value, .. } => {
                f.value = Some(*value);
                "lt"
            }
            Self::Le { value, .. } => {
                f.value = Some(*value);
                "le"
            }
            Self::Gt { value, .. } => {
                f.value = Some(*value);
                "gt"
            }
            Self::Ge { value, .. } => {
                f.value = Some(*value);
                "ge"
            }
            Self::Between { lo, hi, .. } => {
                f.lo = Some(*lo);
                f.hi = Some(*hi);
                "between"
            }
            Self::IsMissing { .. } => "is_missing",
            Self::NotMissing { .. } => "not_missing",
        };
        f.op = op.to_owned();
        f
    }
}

/// The statistic asked for, with its declared parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Statistic {
    Count,
    Mean {
        variable: String,
        bounds: Option<Bounds>,
    },
    Quantiles {
        variable: String,
        probabilities: Vec<f64>,
        edges: Edges,
    },
    Histogram {
        variable: String,
        edges: Edges,
    },
    KaplanMeier {
        time: String,
        event: String,
        grid: Edges,
    },
}

impl Statistic {
    /// The statistic's name in the API.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Count => "count",
            Self::Mean { .. } => "mean",
            Self::Quantiles { .. } => "quantiles",
            Self::Histogram { .. } => "histogram",
            Self::KaplanMeier { .. } => "kaplan_meier",
        }
    }
}

/// Where differential-privacy noise is added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Placement {
    /// Once, by the gateway, after pooling (the default; see [`crate::noise`]).
    Central,
    /// By every node on its own partial, each with a share of the variance.
    Distributed,
}

/// The privacy budget of one request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "mechanism", rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum DpBudget {
    /// Discrete Gaussian calibrated to ρ-zCDP.
    GaussianZcdp { rho: f64 },
    /// Discrete Gaussian calibrated so that the ρ-zCDP guarantee converts to (ε, δ)-DP.
    GaussianApprox { epsilon: f64, delta: f64 },
    /// Discrete Laplace, pure ε-DP.
    Laplace { epsilon: f64 },
}

/// Differential privacy declared by a query.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DpSpec {
    pub budget: DpBudget,
    pub placement: Placement,
}

/// A validated statistical query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    statistic: Statistic,
    group_by: Vec<Grouping>,
    filters: Vec<Predicate>,
    dp: Option<DpSpec>,
}

impl Serialize for Query {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_form().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Query {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let form = QueryForm::deserialize(d)?;
        Query::parse(form, &Limits::default()).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<QueryForm> for Query {
    type Error = QueryErrors;
    fn try_from(form: QueryForm) -> Result<Self, QueryErrors> {
        Query::parse(form, &Limits::default())
    }
}

const STATISTICS: [&str; 5] = ["count", "mean", "quantiles", "histogram", "kaplan_meier"];

impl Query {
    /// Validates a form against `limits`, reporting every problem.
    pub fn parse(form: QueryForm, limits: &Limits) -> Result<Query, QueryErrors> {
        let mut c = Collector::default();
        let stat_name = form.statistic.as_str();
        if !STATISTICS.contains(&stat_name) {
            c.push(
                "statistic",
                ErrorCode::UnknownStatistic,
                format!("`{stat_name}` is not one of {}", STATISTICS.join(", ")),
            );
        }
        let statistic = parse_statistic(&mut c, &form, limits);
        let group_by = parse_groups(&mut c, &form.group_by, limits);
        let filters = parse_filters(&mut c, &form.filters, limits);
        let dp = form.dp.as_ref().and_then(|dp| parse_dp(&mut c, dp, &form));

        // Size of the messages: cells × values per cell.
        if let Some(groups) = &group_by {
            let cells: usize = groups.iter().map(Grouping::size).product();
            if cells > limits.max_cells {
                c.push(
                    "group_by",
                    ErrorCode::TooMany,
                    format!("{cells} cells exceed the limit of {}", limits.max_cells),
                );
            } else if let Some(stat) = &statistic {
                let per_cell = match stat {
                    Statistic::Quantiles { edges, .. } | Statistic::Histogram { edges, .. } => {
                        edges.bins() + 2
                    }
                    Statistic::KaplanMeier { grid, .. } => 3 * grid.bins(),
                    _ => 1,
                };
                if cells * per_cell > limits.max_values {
                    c.push(
                        "group_by",
                        ErrorCode::TooMany,
                        format!(
                            "{cells} cells of {per_cell} values exceed the limit of {} values",
                            limits.max_values
                        ),
                    );
                }
            }
        }

        match (statistic, group_by, filters) {
            (Some(statistic), Some(group_by), Some(filters)) if c.0.is_empty() => Ok(Query {
                statistic,
                group_by,
                filters,
                dp,
            }),
            _ => Err(QueryErrors { errors: c.0 }),
        }
    }

    pub fn statistic(&self) -> &Statistic {
        &self.statistic
    }
    pub fn group_by(&self) -> &[Grouping] {
        &self.group_by
    }
    pub fn filters(&self) -> &[Predicate] {
        &self.filters
    }
    pub fn dp(&self) -> Option<&DpSpec> {
        self.dp.as_ref()
    }

    /// Number of cells (1 without grouping).
    pub fn cell_count(&self) -> usize {
        self.group_by.iter().map(Grouping::size).product()
    }

    /// Sizes of the grouping dimensions (empty without grouping).
    pub fn shape(&self) -> Vec<usize> {
        self.group_by.iter().map(Grouping::size).collect()
    }

    /// Coordinates of cell `i` (row-major: the first grouping varies slowest).
    pub fn cell_coordinates(&self, mut i: usize) -> Vec<usize> {
        let mut coords = vec![0; self.group_by.len()];
        for (d, g) in self.group_by.iter().enumerate().rev() {
            coords[d] = i % g.size();
            i /= g.size();
        }
        coords
    }

    /// Labels of cell `i`.
    pub fn cell_labels(&self, i: usize) -> Vec<CellLabel> {
        self.cell_coordinates(i)
            .into_iter()
            .zip(&self.group_by)
            .map(|(k, g)| g.label(k))
            .collect()
    }

    /// The population of cell `i` as a predicate set: the filters and the cell's coordinates.
    /// This is the descriptor the differencing check compares ([`crate::output_check::differencing`]).
    pub fn cell_population(&self, i: usize) -> Vec<Predicate> {
        let mut p = self.filters.clone();
        for l in self.cell_labels(i) {
            p.extend(l.predicates());
        }
        p
    }

    /// Every column the query reads, without repeats, in a fixed order.
    pub fn columns(&self) -> Vec<&str> {
        let mut cols: Vec<&str> = Vec::new();
        let mut push = |c| {
            if !cols.contains(&c) {
                cols.push(c);
            }
        };
        for f in &self.filters {
            push(f.column());
        }
        for g in &self.group_by {
            push(g.column());
        }
        match &self.statistic {
            Statistic::Count => {}
            Statistic::Mean { variable, .. }
            | Statistic::Quantiles { variable, .. }
            | Statistic::Histogram { variable, .. } => push(variable),
            Statistic::KaplanMeier { time, event, .. } => {
                push(time);
                push(event);
            }
        }
        cols
    }

    /// The form this query was parsed from (normalised: `in` values sorted, quantile range
    /// and bins restated).
    pub fn to_form(&self) -> QueryForm {
        let mut f = QueryForm {
            statistic: self.statistic.name().to_owned(),
            variable: None,
            group_by: self
                .group_by
                .iter()
                .map(|g| match g {
                    Grouping::Levels { column, levels } => GroupForm {
                        column: column.clone(),
                        levels: Some(levels.clone()),
                        edges: None,
                    },
                    Grouping::Bins { column, edges } => GroupForm {
                        column: column.clone(),
                        levels: None,
                        edges: Some(edges.0.clone()),
                    },
                })
                .collect(),
            filters: self.filters.iter().map(Predicate::to_form).collect(),
            probabilities: None,
            range: None,
            bins: None,
            edges: None,
            time: None,
            event: None,
            time_grid: None,
            bounds: None,
            dp: self.dp.map(|d| {
                let (mechanism, rho, epsilon, delta) = match d.budget {
                    DpBudget::GaussianZcdp { rho } => ("gaussian", Some(rho), None, None),
                    DpBudget::GaussianApprox { epsilon, delta } => {
                        ("gaussian", None, Some(epsilon), Some(delta))
                    }
                    DpBudget::Laplace { epsilon } => ("laplace", None, Some(epsilon), None),
                };
                DpForm {
                    mechanism: mechanism.to_owned(),
                    rho,
                    epsilon,
                    delta,
                    placement: Some(
                        match d.placement {
                            Placement::Central => "central",
                            Placement::Distributed => "distributed",
                        }
                        .to_owned(),
                    ),
                }
            }),
        };
        match &self.statistic {
            Statistic::Count => {}
            Statistic::Mean { variable, bounds } => {
                f.variable = Some(variable.clone());
                f.bounds = bounds.map(|b| RangeForm { lo: b.lo, hi: b.hi });
            }
            Statistic::Quantiles {
                variable,
                probabilities,
                edges,
            } => {
                f.variable = Some(variable.clone());
                f.probabilities = Some(probabilities.clone());
                f.range = Some(RangeForm {
                    lo: edges.lo(),
                    hi: edges.hi(),
                });
                f.bins = Some(edges.bins() as u32);
            }
            Statistic::Histogram { variable, edges } => {
                f.variable = Some(variable.clone());
                f.edges = Some(edges.0.clone());
            }
            Statistic::KaplanMeier { time, event, grid } => {
                f.time = Some(time.clone());
                f.event = Some(event.clone());
                f.time_grid = Some(grid.0.clone());
            }
        }
        f
    }
}

fn parse_statistic(c: &mut Collector, f: &QueryForm, limits: &Limits) -> Option<Statistic> {
    let s = f.statistic.as_str();
    // Fields each statistic uses; any other present field is reported as not applicable.
    let uses: &[&str] = match s {
        "count" => &[],
        "mean" => &["variable", "bounds"],
        "quantiles" => &["variable", "probabilities", "range", "bins"],
        "histogram" => &["variable", "edges"],
        "kaplan_meier" => &["time", "event", "time_grid"],
        _ => return None,
    };
    let present = [
        ("variable", f.variable.is_some()),
        ("probabilities", f.probabilities.is_some()),
        ("range", f.range.is_some()),
        ("bins", f.bins.is_some()),
        ("edges", f.edges.is_some()),
        ("time", f.time.is_some()),
        ("event", f.event.is_some()),
        ("time_grid", f.time_grid.is_some()),
        ("bounds", f.bounds.is_some()),
    ];
    for (name, is) in present {
        if !uses.contains(&name) {
            c.not_applicable(name, is, s);
        }
    }
    let before = c.0.len();
    let mut variable = || -> Option<String> {
        let v = c.required("variable", &f.variable, s)?;
        c.name("variable", v).then(|| v.clone())
    };
    let stat = match s {
        "count" => Some(Statistic::Count),
        "mean" => {
            let variable = variable();
            let bounds = match &f.bounds {
                Some(b) => c.range("bounds", b).map(Some),
                None => Some(None),
            };
            Some(Statistic::Mean {
                variable: variable?,
                bounds: bounds?,
            })
        }
        "quantiles" => {
            let variable = variable();
            let probabilities = c
                .required("probabilities", &f.probabilities, s)
                .and_then(|p| parse_probabilities(c, p, limits));
            let range = c
                .required("range", &f.range, s)
                .and_then(|r| c.range("range", r));
            let bins = c.required("bins", &f.bins, s).and_then(|&b| {
                if b == 0 {
                    c.push("bins", ErrorCode::TooFew, "at least one bin is needed");
                    None
                } else if b as usize > limits.max_bins {
                    c.push(
                        "bins",
                        ErrorCode::TooMany,
                        format!("at most {} bins", limits.max_bins),
                    );
                    None
                } else {
                    Some(b)
                }
            });
            Some(Statistic::Quantiles {
                variable: variable?,
                probabilities: probabilities?,
                edges: Edges::uniform(range?, bins?),
            })
        }
        "histogram" => {
            let variable = variable();
            let edges = c
                .required("edges", &f.edges, s)
                .and_then(|e| c.edges("edges", e, limits.max_bins));
            Some(Statistic::Histogram {
                variable: variable?,
                edges: edges?,
            })
        }
        "kaplan_meier" => {
            let time = c
                .required("time", &f.time, s)
                .and_then(|t| c.name("time", t).then(|| t.clone()));
            let event = c
                .required("event", &f.event, s)
                .and_then(|t| c.name("event", t).then(|| t.clone()));
            let grid = c
                .required("time_grid", &f.time_grid, s)
                .and_then(|g| c.edges("time_grid", g, limits.max_bins));
            let grid = grid.and_then(|g| {
                if g.lo() < 0.0 {
                    c.push(
                        "time_grid[0]",
                        ErrorCode::OutOfRange,
                        "follow-up time starts at 0 or later",
                    );
                    None
                } else {
                    Some(g)
                }
            });
            Some(Statistic::KaplanMeier {
                time: time?,
                event: event?,
                grid: grid?,
            })
        }
        _ => None,
    };
    (c.0.len() == before).then_some(stat).flatten()
}

fn parse_probabilities(c: &mut Collector, p: &[f64], limits: &Limits) -> Option<Vec<f64>> {
    let before = c.0.len();
    if p.is_empty() {
        c.push(
            "probabilities",
            ErrorCode::TooFew,
            "at least one probability",
        );
    }
    if p.len() > limits.max_probabilities {
        c.push(
            "probabilities",
            ErrorCode::TooMany,
            format!("at most {} probabilities", limits.max_probabilities),
        );
    }
    for (i, &v) in p.iter().enumerate() {
        let path = format!("probabilities[{i}]");
        if !(v > 0.0 && v < 1.0) {
            c.push(path, ErrorCode::OutOfRange, format!("{v} is not in (0, 1)"));
        } else if p[..i].contains(&v) {
            c.push(path, ErrorCode::Duplicate, format!("{v} is repeated"));
        }
    }
    (c.0.len() == before).then(|| p.to_vec())
}

fn parse_groups(c: &mut Collector, groups: &[GroupForm], limits: &Limits) -> Option<Vec<Grouping>> {
    let before = c.0.len();
    if groups.len() > 2 {
        c.push(
            "group_by",
            ErrorCode::TooMany,
            "at most two grouping variables (a two-way table)",
        );
    }
    let mut out = Vec::new();
    for (i, g) in groups.iter().enumerate() {
        let path = format!("group_by[{i}]");
        c.name(&format!("{path}.column"), &g.column);
        if groups[..i].iter().any(|h| h.column == g.column) {
            c.push(
                format!("{path}.column"),
                ErrorCode::Duplicate,
                format!("`{}` is already a grouping variable", g.column),
            );
        }
        match (&g.levels, &g.edges) {
            (Some(_), Some(_)) => c.push(
                path,
                ErrorCode::Conflicting,
                "declare either `levels` (categorical) or `edges` (binned), not both",
            ),
            (None, None) => c.push(
                path,
                ErrorCode::Required,
                "declare `levels` (categorical) or `edges` (binned)",
            ),
            (Some(levels), None) => {
                let lp = format!("{path}.levels");
                let b = c.0.len();
                if levels.is_empty() {
                    c.push(&lp, ErrorCode::TooFew, "at least one level");
                }
                if levels.len() > limits.max_set_values {
                    c.push(
                        &lp,
                        ErrorCode::TooMany,
                        format!("at most {} levels", limits.max_set_values),
                    );
                }
                for (k, &v) in levels.iter().enumerate() {
                    let p = format!("{lp}[{k}]");
                    if c.finite(&p, v) && levels[..k].contains(&v) {
                        c.push(p, ErrorCode::Duplicate, format!("level {v} is repeated"));
                    }
                }
                if c.0.len() == b {
                    out.push(Grouping::Levels {
                        column: g.column.clone(),
                        levels: levels.clone(),
                    });
                }
            }
            (None, Some(edges)) => {
                if let Some(edges) = c.edges(&format!("{path}.edges"), edges, limits.max_bins) {
                    out.push(Grouping::Bins {
                        column: g.column.clone(),
                        edges,
                    });
                }
            }
        }
    }
    (c.0.len() == before).then_some(out)
}

fn parse_filters(
    c: &mut Collector,
    filters: &[FilterForm],
    limits: &Limits,
) -> Option<Vec<Predicate>> {
    let before = c.0.len();
    if filters.len() > limits.max_filters {
        c.push(
            "filters",
            ErrorCode::TooMany,
            format!("at most {} filters", limits.max_filters),
        );
    }
    let mut out = Vec::new();
    for (i, f) in filters.iter().enumerate() {
        let path = format!("filters[{i}]");
        c.name(&format!("{path}.column"), &f.column);
        let column = f.column.clone();
        let b = c.0.len();
        // Which of value / values / lo / hi the operator takes.
        let takes: &[&str] = match f.op.as_str() {
            "eq" | "lt" | "le" | "gt" | "ge" => &["value"],
            "in" => &["values"],
            "between" => &["lo", "hi"],
            "is_missing" | "not_missing" => &[],
            other => {
                c.push(
                    format!("{path}.op"),
                    ErrorCode::UnknownOperator,
                    format!(
                        "`{other}` is not one of eq, in, lt, le, gt, ge, between, is_missing, not_missing"
                    ),
                );
                continue;
            }
        };
        for (name, present) in [
            ("value", f.value.is_some()),
            ("values", f.values.is_some()),
            ("lo", f.lo.is_some()),
            ("hi", f.hi.is_some()),
        ] {
            let p = format!("{path}.{name}");
            if takes.contains(&name) && !present {
                c.push(p, ErrorCode::Required, format!("`{}` needs `{name}`", f.op));
            } else if !takes.contains(&name) && present {
                c.push(
                    p,
                    ErrorCode::NotApplicable,
                    format!("`{}` takes no `{name}`", f.op),
                );
            }
        }
        if let Some(v) = f.value {
            c.finite(&format!("{path}.value"), v);
        }
        if let Some(v) = f.lo {
            c.finite(&format!("{path}.lo"), v);
        }
        if let Some(v) = f.hi {
            c.finite(&format!("{path}.hi"), v);
        }
        if let (Some(lo), Some(hi)) = (f.lo, f.hi) {
            if lo.is_finite() && hi.is_finite() && lo > hi {
                c.push(
                    format!("{path}.hi"),
                    ErrorCode::NotIncreasing,
                    format!("lo ({lo}) exceeds hi ({hi})"),
                );
            }
        }
        if let Some(vs) = &f.values {
            if vs.is_empty() {
                c.push(
                    format!("{path}.values"),
                    ErrorCode::TooFew,
                    "at least one value",
                );
            }
            if vs.len() > limits.max_set_values {
                c.push(
                    format!("{path}.values"),
                    ErrorCode::TooMany,
                    format!("at most {} values", limits.max_set_values),
                );
            }
            for (k, &v) in vs.iter().enumerate() {
                c.finite(&format!("{path}.values[{k}]"), v);
            }
        }
        if c.0.len() > b {
            continue;
        }
        let value = f.value.unwrap_or_default();
        out.push(match f.op.as_str() {
            "eq" => Predicate::Eq { column, value },
            "lt" => Predicate::Lt { column, value },
            "le" => Predicate::Le { column, value },
            "gt" => Predicate::Gt { column, value },
            "ge" => Predicate::Ge { column, value },
            "in" => {
                let mut values = f.values.clone().unwrap_or_default();
                values.sort_by(f64::total_cmp);
                values.dedup();
                Predicate::In { column, values }
            }
            "between" => Predicate::Between {
                column,
                lo: f.lo.unwrap_or_default(),
                hi: f.hi.unwrap_or_default(),
            },
            "is_missing" => Predicate::IsMissing { column },
            _ => Predicate::NotMissing { column },
        });
    }
    (c.0.len() == before).then_some(out)
}

fn parse_dp(c: &mut Collector, dp: &DpForm, form: &QueryForm) -> Option<DpSpec> {
    let before = c.0.len();
    let placement = match dp.placement.as_deref() {
        None | Some("central") => Some(Placement::Central),
        Some("distributed") => Some(Placement::Distributed),
        Some(other) => {
            c.push(
                "dp.placement",
                ErrorCode::UnknownMechanism,
                format!("`{other}` is not `central` or `distributed`"),
            );
            None
        }
    };
    let positive = |c: &mut Collector, path: &str, v: Option<f64>| -> Option<f64> {
        match v {
            None => {
                c.push(path, ErrorCode::Required, format!("`{path}` is needed"));
                None
            }
            Some(v) if v.is_finite() && v > 0.0 => Some(v),
            Some(v) => {
                c.push(
                    path,
                    ErrorCode::InvalidBudget,
                    format!("{v} must be finite and > 0"),
                );
                None
            }
        }
    };
    let budget = match dp.mechanism.as_str() {
        "gaussian" => match (dp.rho, dp.epsilon, dp.delta) {
            (Some(_), None, None) => {
                positive(c, "dp.rho", dp.rho).map(|rho| DpBudget::GaussianZcdp { rho })
            }
            (None, Some(_), _) | (None, None, Some(_)) => {
                let epsilon = positive(c, "dp.epsilon", dp.epsilon);
                let delta = match dp.delta {
                    Some(d) if d > 0.0 && d < 1.0 => Some(d),
                    Some(d) => {
                        c.push(
                            "dp.delta",
                            ErrorCode::InvalidBudget,
                            format!("{d} is not in (0, 1)"),
                        );
                        None
                    }
                    None => {
                        c.push(
                            "dp.delta",
                            ErrorCode::Required,
                            "the Gaussian mechanism needs `delta` with `epsilon`",
                        );
                        None
                    }
                };
                Some(DpBudget::GaussianApprox {
                    epsilon: epsilon?,
                    delta: delta?,
                })
            }
            (None, None, None) => {
                c.push(
                    "dp",
                    ErrorCode::Required,
                    "give `rho`, or `epsilon` and `delta`",
                );
                None
            }
            _ => {
                c.push(
                    "dp",
                    ErrorCode::Conflicting,
                    "give `rho`, or `epsilon` and `delta`, not both",
                );
                None
            }
        },
        "laplace" => {
            if dp.rho.is_some() {
                c.not_applicable("dp.rho", true, "laplace");
            }
            if dp.delta.is_some() {
                c.not_applicable("dp.delta", true, "laplace");
            }
            positive(c, "dp.epsilon", dp.epsilon).map(|epsilon| DpBudget::Laplace { epsilon })
        }
        other => {
            c.push(
                "dp.mechanism",
                ErrorCode::UnknownMechanism,
                format!("`{other}` is not `gaussian` or `laplace`"),
            );
            None
        }
    };
    match form.statistic.as_str() {
        "kaplan_meier" => c.push(
            "dp",
            ErrorCode::UnsupportedWithDp,
            "differential privacy is not offered for survival curves",
        ),
        "mean" if form.bounds.is_none() => c.push(
            "bounds",
            ErrorCode::BoundsRequired,
            "a mean under differential privacy needs declared `bounds` (they give the sensitivity)",
        ),
        _ => {}
    }
    if placement == Some(Placement::Distributed) && matches!(budget, Some(DpBudget::Laplace { .. }))
    {
        c.push(
            "dp.placement",
            ErrorCode::Conflicting,
            "distributed noise is offered for the Gaussian mechanism only",
        );
    }
    if c.0.len() > before {
        return None;
    }
    Some(DpSpec {
        budget: budget?,
        placement: placement?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<Query, QueryErrors> {
        let form: QueryForm = serde_json::from_value(v).expect("form");
        Query::parse(form, &Limits::default())
    }

    #[test]
    fn a_valid_cross_tab_parses_and_round_trips() {
        let q = parse(json!({
            "statistic": "count",
            "group_by": [
                {"column": "sex", "levels": [1, 2]},
                {"column": "age", "edges": [0, 40, 65, 120]}
            ],
            "filters": [{"column": "diabetes", "op": "in", "values": [3, 1, 1]}]
        }))
        .unwrap();
        assert_eq!(q.cell_count(), 6);
        assert_eq!(q.shape(), vec![2, 3]);
        // Row-major: cell 4 = (sex index 1, age index 1).
        assert_eq!(q.cell_coordinates(4), vec![1, 1]);
        assert_eq!(
            q.filters()[0],
            Predicate::In {
                column: "diabetes".into(),
                values: vec![1.0, 3.0]
            }
        );
        let json = serde_json::to_value(&q).unwrap();
        let back: Query = serde_json::from_value(json).unwrap();
        assert_eq!(back, q);
        assert_eq!(q.columns(), vec!["diabetes", "sex", "age"]);
    }

    #[test]
    fn every_problem_is_reported_with_path_and_code() {
        let e = parse(json!({
            "statistic": "quantiles",
            "variable": "",
            "probabilities": [0.5, 1.5, 0.5],
            "range": {"lo": 10, "hi": 5},
            "edges": [1, 2],
            "group_by": [
                {"column": "sex"},
                {"column": "age", "edges": [0, 40, 40]},
                {"column": "x", "levels": [1]}
            ],
            "filters": [
                {"column": "age", "op": "like", "value": 3},
                {"column": "age", "op": "between", "lo": 5},
                {"column": "bmi", "op": "eq", "values": [1]}
            ]
        }))
        .unwrap_err();
        let codes = |p: &str| e.codes_at(p);
        assert_eq!(codes("edges"), vec![ErrorCode::NotApplicable]);
        assert_eq!(codes("variable"), vec![ErrorCode::EmptyName]);
        assert_eq!(codes("probabilities[1]"), vec![ErrorCode::OutOfRange]);
        assert_eq!(codes("probabilities[2]"), vec![ErrorCode::Duplicate]);
        assert_eq!(codes("range"), vec![ErrorCode::NotIncreasing]);
        assert_eq!(codes("bins"), vec![ErrorCode::Required]);
        assert_eq!(codes("group_by"), vec![ErrorCode::TooMany]);
        assert_eq!(codes("group_by[0]"), vec![ErrorCode::Required]);
        assert_eq!(
            codes("group_by[1].edges[2]"),
            vec![ErrorCode::NotIncreasing]
        );
        assert_eq!(codes("filters[0].op"), vec![ErrorCode::UnknownOperator]);
        assert_eq!(codes("filters[1].hi"), vec![ErrorCode::Required]);
        assert_eq!(codes("filters[2].value"), vec![ErrorCode::Required]);
        assert_eq!(codes("filters[2].values"), vec![ErrorCode::NotApplicable]);
        assert_eq!(e.errors.len(), 13, "{e}");
    }

    #[test]
    fn unknown_fields_and_statistics_are_refused() {
        let r: Result<QueryForm, _> =
            serde_json::from_value(json!({"statistic": "count", "colour": "red"}));
        assert!(r.is_err());
        let e = parse(json!({"statistic": "median"})).unwrap_err();
        assert_eq!(e.codes_at("statistic"), vec![ErrorCode::UnknownStatistic]);
    }

    #[test]
    fn limits_bound_the_message_size() {
        let edges: Vec<f64> = (0..=100).map(f64::from).collect();
        let levels: Vec<f64> = (0..50).map(f64::from).collect();
        // 50 × 100 cells = 5000 > 1000.
        let e = parse(json!({
            "statistic": "count",
            "group_by": [{"column": "a", "levels": levels}, {"column": "b", "edges": edges}]
        }))
        .unwrap_err();
        assert_eq!(e.codes_at("group_by"), vec![ErrorCode::TooMany]);
        // 100 cells × (200 bins + 2) = 20 200 values > 20 000.
        let e = parse(json!({
            "statistic": "quantiles", "variable": "v", "probabilities": [0.5],
            "range": {"lo": 0, "hi": 1}, "bins": 200,
            "group_by": [{"column": "b", "edges": edges}]
        }))
        .unwrap_err();
        assert_eq!(e.codes_at("group_by"), vec![ErrorCode::TooMany]);
        let e = parse(json!({
            "statistic": "quantiles", "variable": "v", "probabilities": [0.5],
            "range": {"lo": 0, "hi": 1}, "bins": 201
        }))
        .unwrap_err();
        assert_eq!(e.codes_at("bins"), vec![ErrorCode::TooMany]);
    }

    #[test]
    fn dp_needs_bounds_for_a_mean_and_is_refused_for_survival() {
        let e = parse(json!({
            "statistic": "mean", "variable": "bmi",
            "dp": {"mechanism": "gaussian", "rho": 0.5}
        }))
        .unwrap_err();
        assert_eq!(e.codes_at("bounds"), vec![ErrorCode::BoundsRequired]);
        let e = parse(json!({
            "statistic": "kaplan_meier", "time": "t", "event": "e", "time_grid": [0, 1],
            "dp": {"mechanism": "laplace", "epsilon": 1, "delta": 1e-5}
        }))
        .unwrap_err();
        assert_eq!(e.codes_at("dp"), vec![ErrorCode::UnsupportedWithDp]);
        assert_eq!(e.codes_at("dp.delta"), vec![ErrorCode::NotApplicable]);
        let e = parse(json!({
            "statistic": "count",
            "dp": {"mechanism": "gaussian", "epsilon": 1, "delta": 2, "placement": "everywhere"}
        }))
        .unwrap_err();
        assert_eq!(e.codes_at("dp.delta"), vec![ErrorCode::InvalidBudget]);
        assert_eq!(
            e.codes_at("dp.placement"),
            vec![ErrorCode::UnknownMechanism]
        );
        let q = parse(json!({
            "statistic": "mean", "variable": "bmi", "bounds": {"lo": 10, "hi": 60},
            "dp": {"mechanism": "gaussian", "epsilon": 1, "delta": 1e-6, "placement": "distributed"}
        }))
        .unwrap();
        assert_eq!(
            q.dp(),
            Some(&DpSpec {
                budget: DpBudget::GaussianApprox {
                    epsilon: 1.0,
                    delta: 1e-6
                },
                placement: Placement::Distributed
            })
        );
    }

    #[test]
    fn bins_are_half_open_except_the_last() {
        let e = Edges(vec![0.0, 1.0, 2.0]);
        assert_eq!(e.position(-0.1), BinPosition::Below);
        assert_eq!(e.position(0.0), BinPosition::Bin(0));
        assert_eq!(e.position(1.0), BinPosition::Bin(1));
        assert_eq!(e.position(2.0), BinPosition::Bin(1));
        assert_eq!(e.position(2.5), BinPosition::Above);
        let u = Edges::uniform(Bounds { lo: 0.0, hi: 1.0 }, 3);
        assert_eq!(u.as_slice().len(), 4);
        assert_eq!(u.hi(), 1.0);
    }

    #[test]
    fn cell_populations_are_filters_and_coordinates() {
        let q = parse(json!({
            "statistic": "count",
            "group_by": [{"column": "age", "edges": [0, 40, 120]}],
            "filters": [{"column": "sex", "op": "eq", "value": 1}]
        }))
        .unwrap();
        assert_eq!(
            q.cell_population(1),
            vec![
                Predicate::Eq {
                    column: "sex".into(),
                    value: 1.0
                },
                Predicate::Ge {
                    column: "age".into(),
                    value: 40.0
                },
                Predicate::Le {
                    column: "age".into(),
                    value: 120.0
                },
            ]
        );
    }
}
