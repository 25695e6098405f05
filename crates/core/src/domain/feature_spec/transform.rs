//! How a value read from a source becomes one or more numeric columns.
//!
//! Transform kinds:
//!
//! * `number` (optional `unit`, a UCUM code): the quantity or integer value. A quantity in
//!   another unit is converted into `unit` when it is commensurable, or when the analyte's
//!   molar mass is known ([`super::units`]); otherwise it is counted as a bad input and the
//!   value is missing. A censored quantity (with a comparator such as `>`) is not a number
//!   and counts as missing.
//! * `boolean`: a boolean value as 1 / 0.
//! * `above` (`threshold`, optional `unit`): 1 when the value is above the threshold, 0
//!   otherwise. Works on measured values and on censored ones (`> 120`, `<= 120`); a censored
//!   value that does not decide the question counts as missing.
//! * `map` (`values`, optional `system`): a coded value mapped to a number.
//! * `one_hot` (`levels`, optional `system`, `drop_first`, default true): one column per level
//!   (named `name=level`), the first level dropped when `drop_first`.
//! * `presence` and `count`: for Condition and medication sources, whether the subject has
//!   one in the window (1 / 0) and how many.
//!
//! For `map` and `one_hot` a code outside the listed values counts as missing.
use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::features::SpecError;

#[derive(Debug, Clone, PartialEq)]
pub enum Transform {
    Number {
        unit: Option<String>,
    },
    Boolean,
    Above {
        threshold: f64,
        unit: Option<String>,
    },
    Map {
        system: Option<String>,
        values: BTreeMap<String, f32>,
    },
    OneHot {
        system: Option<String>,
        levels: Vec<String>,
        drop_first: bool,
    },
    Presence,
    Count,
}

impl Transform {
    pub fn kind(&self) -> &'static str {
        match self {
            Transform::Number { .. } => "number",
            Transform::Boolean => "boolean",
            Transform::Above { .. } => "above",
            Transform::Map { .. } => "map",
            Transform::OneHot { .. } => "one_hot",
            Transform::Presence => "presence",
            Transform::Count => "count",
        }
    }

    /// The unit values must be converted into before the transform reads them.
    pub fn unit(&self) -> Option<&str> {
        match self {
            Transform::Number { unit } | Transform::Above { unit, .. } => unit.as_deref(),
            _ => None,
        }
    }

    /// Names of the columns this transform produces for a feature called `name`.
    pub fn columns(&self, name: &str) -> Vec<String> {
        match self {
            Transform::OneHot {
                levels, drop_first, ..
            } => levels
                .iter()
                .skip(usize::from(*drop_first))
                .map(|l| format!("{name}={l}"))
                .collect(),
            _ => vec![name.to_owned()],
        }
    }

    /// Apply to one value, already in the transform's unit. `Ok(None)`: the value does not
    /// give this feature (missing).
    pub fn apply(&self, value: &Value) -> Result<Option<Vec<f32>>, ValueError> {
        match (self, value) {
            (Transform::Number { .. }, Value::Quantity(q)) => {
                Ok(q.comparator.is_none().then(|| vec![q.value as f32]))
            }
            (Transform::Number { .. } | Transform::Count, Value::Integer(i)) => {
                Ok(Some(vec![*i as f32]))
            }
            (Transform::Boolean, Value::Boolean(b)) => Ok(Some(vec![f32::from(u8::from(*b))])),
            (Transform::Presence, Value::Integer(i)) => Ok(Some(vec![f32::from(u8::from(*i > 0))])),
            (Transform::Above { threshold, .. }, Value::Quantity(q)) => {
                Ok(above(q, *threshold).map(|a| vec![f32::from(u8::from(a))]))
            }
            (Transform::Above { threshold, .. }, Value::Integer(i)) => {
                Ok(Some(vec![f32::from(u8::from(*i as f64 > *threshold))]))
            }
            (Transform::Map { system, values }, Value::Coded(codings)) => {
                Ok(pick(codings, system.as_deref())
                    .and_then(|c| values.get(c))
                    .map(|v| vec![*v]))
            }
            (
                Transform::OneHot {
                    system,
                    levels,
                    drop_first,
                },
                Value::Coded(codings),
            ) => {
                let Some(at) = pick(codings, system.as_deref())
                    .and_then(|c| levels.iter().position(|l| l == c))
                else {
                    return Ok(None);
                };
                Ok(Some(
                    (usize::from(*drop_first)..levels.len())
                        .map(|i| if i == at { 1.0 } else { 0.0 })
                        .collect(),
                ))
            }
            (t, v) => Err(ValueError::WrongType {
                transform: t.kind(),
                found: v.kind(),
            }),
        }
    }
}

/// Whether a (possibly censored) quantity is above `t`; `None` when a censored value does
/// not decide it.
pub fn above(q: &Quantity, t: f64) -> Option<bool> {
    match q.comparator {
        None => Some(q.value > t),
        Some(Comparator::Greater) => (q.value >= t).then_some(true),
        Some(Comparator::GreaterOrEqual) => (q.value > t).then_some(true),
        Some(Comparator::Less) | Some(Comparator::LessOrEqual) => (q.value <= t).then_some(false),
    }
}

fn pick<'a>(codings: &'a [Coding], system: Option<&str>) -> Option<&'a str> {
    codings
        .iter()
        .find(|c| system.is_none() || c.system.as_deref() == system)
        .map(|c| c.code.as_str())
}

/// A value read from a source, before any transform.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Quantity(Quantity),
    Integer(i64),
    Boolean(bool),
    /// The codings of a coded value (a CodeableConcept, or a single code with its system).
    Coded(Vec<Coding>),
    /// A value of a type no transform reads (string, period, ...).
    Other(&'static str),
}

impl Value {
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Quantity(_) => "quantity",
            Value::Integer(_) => "integer",
            Value::Boolean(_) => "boolean",
            Value::Coded(_) => "coded",
            Value::Other(k) => k,
        }
    }

    /// The measured number, if the value is one (a censored quantity is not).
    pub fn number(&self) -> Option<f64> {
        match self {
            Value::Quantity(q) if q.comparator.is_none() => Some(q.value),
            Value::Integer(i) => Some(*i as f64),
            _ => None,
        }
    }
}

/// A quantity; `unit` is the UCUM code (falling back to the human-readable unit).
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    pub value: f64,
    pub comparator: Option<Comparator>,
    pub unit: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparator {
    Less,
    LessOrEqual,
    GreaterOrEqual,
    Greater,
}

impl Comparator {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "<" => Comparator::Less,
            "<=" => Comparator::LessOrEqual,
            ">=" => Comparator::GreaterOrEqual,
            ">" => Comparator::Greater,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coding {
    pub system: Option<String>,
    pub code: String,
}

/// Why a value could not be transformed (a data error, not a missing value).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    #[error("transform `{transform}` cannot read a {found} value")]
    WrongType {
        transform: &'static str,
        found: &'static str,
    },
}

pub(crate) fn transform(feature: &str, raw: serde_json::Value) -> Result<Transform, SpecError> {
    let invalid = |reason: String| SpecError::InvalidTransform {
        feature: feature.to_owned(),
        reason,
    };
    let serde_json::Value::Object(mut obj) = raw else {
        return Err(invalid("a transform is an object with a `kind`".into()));
    };
    let kind = match obj.remove("kind") {
        Some(serde_json::Value::String(k)) => k,
        _ => return Err(invalid("missing string field `kind`".into())),
    };
    let rest = serde_json::Value::Object(obj);
    let parse = |e: serde_json::Error| invalid(e.to_string());
    let unit_ok = |u: &Option<String>| match u {
        Some(u) => super::units::check_unit(u).map_err(invalid),
        None => Ok(()),
    };
    let t = match kind.as_str() {
        "number" => {
            let r: UnitOnly = serde_json::from_value(rest).map_err(parse)?;
            unit_ok(&r.unit)?;
            Transform::Number { unit: r.unit }
        }
        "boolean" | "presence" | "count" => {
            let _: Empty = serde_json::from_value(rest).map_err(parse)?;
            match kind.as_str() {
                "boolean" => Transform::Boolean,
                "presence" => Transform::Presence,
                _ => Transform::Count,
            }
        }
        "above" => {
            let r: RawAbove = serde_json::from_value(rest).map_err(parse)?;
            if !r.threshold.is_finite() {
                return Err(invalid("threshold must be finite".into()));
            }
            unit_ok(&r.unit)?;
            Transform::Above {
                threshold: r.threshold,
                unit: r.unit,
            }
        }
        "map" => {
            let r: RawMap = serde_json::from_value(rest).map_err(parse)?;
            if r.values.is_empty() || r.values.values().any(|v| !v.is_finite()) {
                return Err(invalid("`values` must map codes to finite numbers".into()));
            }
            Transform::Map {
                system: r.system,
                values: r.values,
            }
        }
        "one_hot" => {
            let r: RawOneHot = serde_json::from_value(rest).map_err(parse)?;
            let drop_first = r.drop_first.unwrap_or(true);
            let distinct: BTreeSet<&String> = r.levels.iter().collect();
            if distinct.len() != r.levels.len() || r.levels.len() < 1 + usize::from(drop_first) {
                return Err(invalid(
                    "`levels` must be distinct and leave at least one column".into(),
                ));
            }
            Transform::OneHot {
                system: r.system,
                levels: r.levels,
                drop_first,
            }
        }
        _ => {
            return Err(SpecError::UnknownTransform {
                feature: feature.to_owned(),
                kind,
            })
        }
    };
    Ok(t)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UnitOnly {
    unit: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAbove {
    threshold: f64,
    unit: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMap {
    system: Option<String>,
    values: BTreeMap<String, f32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOneHot {
    system: Option<String>,
    levels: Vec<String>,
    drop_first: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(value: f64, comparator: Option<Comparator>) -> Value {
        Value::Quantity(Quantity {
            value,
            comparator,
            unit: Some("mg/dL".into()),
        })
    }

    #[test]
    fn transforms_by_hand() {
        let above = Transform::Above {
            threshold: 120.0,
            unit: Some("mg/dL".into()),
        };
        assert_eq!(above.apply(&q(130.0, None)).unwrap(), Some(vec![1.0]));
        assert_eq!(above.apply(&q(120.0, None)).unwrap(), Some(vec![0.0]));
        assert_eq!(
            above.apply(&q(120.0, Some(Comparator::Greater))).unwrap(),
            Some(vec![1.0])
        );
        assert_eq!(
            above
                .apply(&q(120.0, Some(Comparator::LessOrEqual)))
                .unwrap(),
            Some(vec![0.0])
        );
        // "> 100" does not say whether the value is above 120
        assert_eq!(
            above.apply(&q(100.0, Some(Comparator::Greater))).unwrap(),
            None
        );
        let number = Transform::Number {
            unit: Some("mg/dL".into()),
        };
        assert_eq!(number.apply(&q(1.5, None)).unwrap(), Some(vec![1.5]));
        assert_eq!(number.apply(&q(1.5, Some(Comparator::Less))).unwrap(), None);
        assert!(matches!(
            number.apply(&Value::Boolean(true)),
            Err(ValueError::WrongType { .. })
        ));
        let one_hot = Transform::OneHot {
            system: Some("s".into()),
            levels: vec!["0".into(), "1".into(), "2".into()],
            drop_first: true,
        };
        let coded = |system: &str, code: &str| {
            Value::Coded(vec![Coding {
                system: Some(system.into()),
                code: code.into(),
            }])
        };
        assert_eq!(
            one_hot.apply(&coded("s", "2")).unwrap(),
            Some(vec![0.0, 1.0])
        );
        assert_eq!(
            one_hot.apply(&coded("s", "0")).unwrap(),
            Some(vec![0.0, 0.0])
        );
        assert_eq!(one_hot.apply(&coded("s", "7")).unwrap(), None);
        assert_eq!(one_hot.apply(&coded("other", "1")).unwrap(), None);
        assert_eq!(
            Transform::Boolean.apply(&Value::Boolean(true)).unwrap(),
            Some(vec![1.0])
        );
        assert_eq!(
            Transform::Presence.apply(&Value::Integer(3)).unwrap(),
            Some(vec![1.0])
        );
        assert_eq!(
            Transform::Count.apply(&Value::Integer(3)).unwrap(),
            Some(vec![3.0])
        );
    }
}
