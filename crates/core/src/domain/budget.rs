//! The privacy budget a permit grants: (epsilon, delta)-differential privacy per unit.

use serde::{Deserialize, Serialize};

use super::ParseResult;

/// A strictly positive, finite epsilon.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(try_from = "f64", into = "f64")]
#[cfg_attr(feature = "openapi", schema(value_type = f64))]
pub struct Epsilon(f64);

impl Epsilon {
    pub fn parse(v: f64) -> ParseResult<Self> {
        if v.is_finite() && v > 0.0 {
            Ok(Self(v))
        } else {
            Err((
                "invalid_epsilon",
                format!("epsilon must be a finite number > 0, got {v}"),
            ))
        }
    }
    pub fn value(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Epsilon {
    type Error = String;
    fn try_from(v: f64) -> Result<Self, String> {
        Self::parse(v).map_err(|e| e.1)
    }
}
impl From<Epsilon> for f64 {
    fn from(e: Epsilon) -> f64 {
        e.0
    }
}

/// A delta in the open interval (0, 1). The Gaussian mechanism needs delta > 0.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(try_from = "f64", into = "f64")]
#[cfg_attr(feature = "openapi", schema(value_type = f64))]
pub struct Delta(f64);

impl Delta {
    pub fn parse(v: f64) -> ParseResult<Self> {
        if v.is_finite() && v > 0.0 && v < 1.0 {
            Ok(Self(v))
        } else {
            Err((
                "invalid_delta",
                format!("delta must lie in (0, 1), got {v}"),
            ))
        }
    }
    pub fn value(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Delta {
    type Error = String;
    fn try_from(v: f64) -> Result<Self, String> {
        Self::parse(v).map_err(|e| e.1)
    }
}
impl From<Delta> for f64 {
    fn from(d: Delta) -> f64 {
        d.0
    }
}

/// What one unit of privacy protects: a single record, or a whole data holder's contribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum BudgetUnit {
    Record,
    DataHolder,
}

impl BudgetUnit {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Record => "record",
            Self::DataHolder => "data_holder",
        }
    }

    pub fn parse(s: &str) -> ParseResult<Self> {
        match s {
            "record" => Ok(Self::Record),
            "data_holder" => Ok(Self::DataHolder),
            _ => Err((
                "invalid_budget_unit",
                format!("unit must be `record` or `data_holder`, got `{s}`"),
            )),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PrivacyBudget {
    pub epsilon: Epsilon,
    pub delta: Delta,
    pub unit: BudgetUnit,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epsilon_must_be_positive_and_finite() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(Epsilon::parse(bad).is_err());
        }
        assert_eq!(Epsilon::parse(0.5).unwrap().value(), 0.5);
    }

    #[test]
    fn delta_must_be_inside_the_unit_interval() {
        for bad in [0.0, 1.0, -1e-5, f64::NAN] {
            assert!(Delta::parse(bad).is_err());
        }
        assert!(Delta::parse(1e-5).is_ok());
    }
}
