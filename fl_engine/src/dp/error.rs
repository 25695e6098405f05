//! Typed errors of the differential-privacy module.
//!
//! Every public function in `dp` validates its inputs and returns one of these instead of
//! panicking: the gateway turns them into refusals, so each variant names what was wrong.

use thiserror::Error;

/// Result alias used throughout `dp`.
pub type Result<T> = std::result::Result<T, DpError>;

/// What went wrong in clipping, noising, aggregation or accounting.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DpError {
    /// No update was supplied (aggregation needs at least one site).
    #[error("no updates to aggregate")]
    NoUpdates,
    /// Updates must have at least one parameter.
    #[error("updates have zero parameters")]
    EmptyUpdate,
    /// One update has a different length from the first one.
    #[error("update {index} has {found} parameters, expected {expected}")]
    LengthMismatch {
        /// Position of the offending update in the input.
        index: usize,
        /// Length of the first update (or the declared dimension).
        expected: usize,
        /// Length of the offending update.
        found: usize,
    },
    /// An update contains NaN or an infinity.
    #[error("update {index} contains a NaN or infinite value")]
    NonFiniteUpdate {
        /// Position of the offending update in the input.
        index: usize,
    },
    /// The number of weights differs from the number of updates.
    #[error("{weights} weights given for {updates} updates")]
    WeightCountMismatch {
        /// Number of weights.
        weights: usize,
        /// Number of updates.
        updates: usize,
    },
    /// A scalar parameter is out of its domain.
    #[error("invalid {name} = {value}: {requirement}")]
    InvalidParameter {
        /// Parameter name as the caller knows it.
        name: &'static str,
        /// The rejected value.
        value: f64,
        /// The domain it must lie in.
        requirement: &'static str,
    },
    /// The operating system's entropy source failed.
    #[error("operating-system entropy source failed: {0}")]
    Entropy(String),
    /// Running the requested steps would exceed the privacy budget.
    #[error("privacy budget exceeded: epsilon would reach {would_be} (budget {budget}) at delta {delta}")]
    BudgetExceeded {
        /// Epsilon after the requested steps.
        would_be: f64,
        /// The budget that must not be exceeded.
        budget: f64,
        /// The delta at which epsilon is computed.
        delta: f64,
    },
    /// No noise multiplier up to the search limit reaches the target epsilon.
    #[error("target epsilon {target} cannot be reached with noise multiplier <= {max_sigma}")]
    TargetUnreachable {
        /// Requested epsilon.
        target: f64,
        /// Largest noise multiplier tried.
        max_sigma: f64,
    },
    /// A tensor could not be read or built.
    #[error("tensor error: {0}")]
    Tensor(String),
}

impl From<candle_core::Error> for DpError {
    fn from(e: candle_core::Error) -> Self {
        DpError::Tensor(e.to_string())
    }
}

/// Checks `value` is finite and strictly positive.
pub(crate) fn require_positive(name: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(DpError::InvalidParameter {
            name,
            value,
            requirement: "must be finite and > 0",
        })
    }
}

/// Checks `0 < value <= 1` (a sampling rate).
pub(crate) fn require_rate(name: &'static str, value: f64) -> Result<f64> {
    if value > 0.0 && value <= 1.0 {
        Ok(value)
    } else {
        Err(DpError::InvalidParameter {
            name,
            value,
            requirement: "must satisfy 0 < q <= 1",
        })
    }
}

/// Checks `0 < value < 1` (a delta).
pub(crate) fn require_delta(value: f64) -> Result<f64> {
    if value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(DpError::InvalidParameter {
            name: "delta",
            value,
            requirement: "must satisfy 0 < delta < 1",
        })
    }
}
