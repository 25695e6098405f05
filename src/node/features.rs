//! Declarative feature specification: which source each model input comes from, how it is
//! turned into numbers, and which Art. 51(1) data category it belongs to.
//!
//! The specification is parsed once into typed values (parse, don't validate): an unknown
//! category identifier, an unknown transform kind or an inconsistent transform is refused when
//! the file is read, never half-way through an extraction. A parsed [`FeatureSpec`] can
//! therefore report exactly which categories a study touches ([`FeatureSpec::categories`]) so
//! the gateway can check them against the data permit.
//!
//! File format (JSON):
//!
//! ```json
//! {
//!   "name": "fed-heart-disease",
//!   "features": [
//!     { "name": "age", "category": "ehr_data",
//!       "source": { "observation": { "system": "http://loinc.org", "code": "30525-0" } },
//!       "transform": { "kind": "number", "unit": "a" } },
//!     { "name": "sex", "category": "ehr_data",
//!       "source": { "patient": "gender" },
//!       "transform": { "kind": "map", "values": { "male": 1, "female": 0 } } }
//!   ],
//!   "label": { "name": "chd", "category": "ehr_data",
//!     "source": { "condition": { "system": "http://snomed.info/sct", "code": "53741008" } } }
//! }
//! ```
//!
//! Transform kinds:
//!
//! * `number` (optional `unit`, a UCUM code): the quantity or integer value. A quantity with
//!   a different unit is an error (the node does not convert units); a censored quantity
//!   (with a comparator such as `>`) is not a number and counts as missing.
//! * `boolean`: a boolean value as 1 / 0.
//! * `above` (`threshold`, optional `unit`): 1 when the value is above the threshold, 0
//!   otherwise. Works on measured values and on censored ones (`> 120`, `<= 120`); a censored
//!   value that does not decide the question counts as missing.
//! * `map` (`values`, optional `system`): a coded value mapped to a number.
//! * `one_hot` (`levels`, optional `system`, `drop_first`, default true): one column per level
//!   (named `name=level`), the first level dropped when `drop_first`.
//!
//! For `map` and `one_hot` a code outside the listed values counts as missing, so the subject
//! is dropped and counted rather than silently encoded.
use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::domain::DataCategory;

/// Code system of LOINC.
pub const LOINC: &str = "http://loinc.org";
/// Code system of SNOMED CT.
pub const SNOMED: &str = "http://snomed.info/sct";
/// Code system of UCUM units.
pub const UCUM: &str = "http://unitsofmeasure.org";

/// Why a feature specification was refused.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("feature specification is not valid JSON of the expected shape: {0}")]
    Json(#[from] serde_json::Error),
    #[error("feature `{feature}`: `{category}` is not an Art. 51(1) data category")]
    UnknownCategory { feature: String, category: String },
    #[error("feature `{feature}`: unknown transform `{kind}`")]
    UnknownTransform { feature: String, kind: String },
    #[error("feature `{feature}`: invalid transform: {reason}")]
    InvalidTransform { feature: String, reason: String },
    #[error("feature `{feature}`: transform `{transform}` cannot read source `{source_kind}`")]
    Incompatible {
        feature: String,
        transform: &'static str,
        source_kind: &'static str,
    },
    #[error("column `{0}` is produced twice")]
    DuplicateColumn(String),
    #[error("the specification declares no features")]
    NoFeatures,
}

/// A system + code pair that a coding must carry to match.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeMatch {
    pub system: String,
    pub code: String,
}

/// Where a feature's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An Observation about the subject carrying this code (and, if given, this method).
    Observation {
        code: CodeMatch,
        method: Option<CodeMatch>,
    },
    /// `Patient.gender` (administrative gender code).
    PatientGender,
}

impl Source {
    fn kind(&self) -> &'static str {
        match self {
            Source::Observation { .. } => "observation",
            Source::PatientGender => "patient.gender",
        }
    }
}

/// How a source value becomes one or more numeric columns.
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
}

impl Transform {
    fn kind(&self) -> &'static str {
        match self {
            Transform::Number { .. } => "number",
            Transform::Boolean => "boolean",
            Transform::Above { .. } => "above",
            Transform::Map { .. } => "map",
            Transform::OneHot { .. } => "one_hot",
        }
    }

    /// Names of the columns this transform produces for a feature called `name`.
    fn columns(&self, name: &str) -> Vec<String> {
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

    /// Apply to one value. `Ok(None)`: the value does not give this feature (missing).
    pub fn apply(&self, value: &Value) -> Result<Option<Vec<f32>>, ValueError> {
        match (self, value) {
            (Transform::Number { unit }, Value::Quantity(q)) => {
                check_unit(unit.as_deref(), q)?;
                Ok(q.comparator.is_none().then(|| vec![q.value as f32]))
            }
            (Transform::Number { .. }, Value::Integer(i)) => Ok(Some(vec![*i as f32])),
            (Transform::Boolean, Value::Boolean(b)) => Ok(Some(vec![f32::from(u8::from(*b))])),
            (Transform::Above { threshold, unit }, Value::Quantity(q)) => {
                check_unit(unit.as_deref(), q)?;
                let t = *threshold;
                let above = match q.comparator {
                    None => Some(q.value > t),
                    Some(Comparator::Greater) => (q.value >= t).then_some(true),
                    Some(Comparator::GreaterOrEqual) => (q.value > t).then_some(true),
                    Some(Comparator::Less) | Some(Comparator::LessOrEqual) => {
                        (q.value <= t).then_some(false)
                    }
                };
                Ok(above.map(|a| vec![f32::from(u8::from(a))]))
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

fn check_unit(expected: Option<&str>, q: &Quantity) -> Result<(), ValueError> {
    match expected {
        Some(u) if q.unit.as_deref() != Some(u) => Err(ValueError::Unit {
            expected: u.to_owned(),
            found: q.unit.clone(),
        }),
        _ => Ok(()),
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
    fn kind(&self) -> &'static str {
        match self {
            Value::Quantity(_) => "quantity",
            Value::Integer(_) => "integer",
            Value::Boolean(_) => "boolean",
            Value::Coded(_) => "coded",
            Value::Other(k) => k,
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
    #[error("unit {found:?} where the specification expects `{expected}`")]
    Unit {
        expected: String,
        found: Option<String>,
    },
}

/// One declared feature.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature {
    pub name: String,
    pub category: DataCategory,
    pub source: Source,
    pub transform: Transform,
}

impl Feature {
    pub fn columns(&self) -> Vec<String> {
        self.transform.columns(&self.name)
    }
}

/// The binary label: presence of a Condition with the given code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub name: String,
    pub category: DataCategory,
    pub condition: CodeMatch,
}

/// A parsed, checked feature specification.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureSpec {
    pub name: String,
    pub features: Vec<Feature>,
    pub label: Label,
}

impl FeatureSpec {
    /// Parse a JSON specification.
    pub fn from_json(text: &str) -> Result<Self, SpecError> {
        let raw: RawSpec = serde_json::from_str(text)?;
        let mut features = Vec::with_capacity(raw.features.len());
        for f in raw.features {
            let category = category(&f.name, &f.category)?;
            let source = match f.source {
                RawSource::Observation {
                    system,
                    code,
                    method,
                } => Source::Observation {
                    code: CodeMatch { system, code },
                    method,
                },
                RawSource::Patient(PatientField::Gender) => Source::PatientGender,
            };
            let transform = transform(&f.name, f.transform)?;
            if matches!(source, Source::PatientGender)
                && !matches!(transform, Transform::Map { .. } | Transform::OneHot { .. })
            {
                return Err(SpecError::Incompatible {
                    feature: f.name,
                    transform: transform.kind(),
                    source_kind: source.kind(),
                });
            }
            features.push(Feature {
                name: f.name,
                category,
                source,
                transform,
            });
        }
        if features.is_empty() {
            return Err(SpecError::NoFeatures);
        }
        let label = Label {
            category: category(&raw.label.name, &raw.label.category)?,
            name: raw.label.name,
            condition: raw.label.source.condition,
        };
        let spec = Self {
            name: raw.name,
            features,
            label,
        };
        let mut seen = BTreeSet::new();
        for c in spec
            .columns()
            .into_iter()
            .chain(std::iter::once(spec.label.name.clone()))
        {
            if !seen.insert(c.clone()) {
                return Err(SpecError::DuplicateColumn(c));
            }
        }
        Ok(spec)
    }

    /// Read and parse a specification file.
    pub fn from_file(path: &std::path::Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        Ok(Self::from_json(&text)?)
    }

    /// The model's input columns, in order.
    pub fn columns(&self) -> Vec<String> {
        self.features.iter().flat_map(Feature::columns).collect()
    }

    pub fn n_columns(&self) -> usize {
        self.columns().len()
    }

    /// The Art. 51(1) category identifiers (e.g. `ehr_data`) the features and label touch.
    pub fn categories(&self) -> BTreeSet<String> {
        self.data_categories()
            .into_iter()
            .map(|c| c.as_str().to_owned())
            .collect()
    }

    /// Same, as typed categories.
    pub fn data_categories(&self) -> BTreeSet<DataCategory> {
        self.features
            .iter()
            .map(|f| f.category)
            .chain(std::iter::once(self.label.category))
            .collect()
    }
}

fn category(feature: &str, id: &str) -> Result<DataCategory, SpecError> {
    DataCategory::parse(id).map_err(|_| SpecError::UnknownCategory {
        feature: feature.to_owned(),
        category: id.to_owned(),
    })
}

fn transform(feature: &str, raw: serde_json::Value) -> Result<Transform, SpecError> {
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
    let t = match kind.as_str() {
        "number" => {
            let r: UnitOnly = serde_json::from_value(rest).map_err(parse)?;
            Transform::Number { unit: r.unit }
        }
        "boolean" => {
            let _: Empty = serde_json::from_value(rest).map_err(parse)?;
            Transform::Boolean
        }
        "above" => {
            let r: RawAbove = serde_json::from_value(rest).map_err(parse)?;
            if !r.threshold.is_finite() {
                return Err(invalid("threshold must be finite".into()));
            }
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
struct RawSpec {
    name: String,
    features: Vec<RawFeature>,
    label: RawLabel,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFeature {
    name: String,
    category: String,
    source: RawSource,
    transform: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RawSource {
    Observation {
        system: String,
        code: String,
        #[serde(default)]
        method: Option<CodeMatch>,
    },
    Patient(PatientField),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum PatientField {
    Gender,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLabel {
    name: String,
    category: String,
    source: RawLabelSource,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLabelSource {
    condition: CodeMatch,
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

    fn spec_with(feature: &str) -> String {
        format!(
            r#"{{"name": "t", "features": [{feature}],
               "label": {{"name": "y", "category": "ehr_data",
                          "source": {{"condition": {{"system": "s", "code": "c"}}}}}}}}"#
        )
    }

    const AGE: &str = r#"{"name": "age", "category": "ehr_data",
        "source": {"observation": {"system": "http://loinc.org", "code": "30525-0"}},
        "transform": {"kind": "number", "unit": "a"}}"#;

    #[test]
    fn parses_and_reports_columns_and_categories() {
        let cp = r#"{"name": "cp", "category": "health_determinants",
            "source": {"observation": {"system": "x", "code": "cp",
                                       "method": {"system": "m", "code": "k"}}},
            "transform": {"kind": "one_hot", "levels": ["1", "2", "3"]}}"#;
        let s = FeatureSpec::from_json(&spec_with(&format!("{AGE}, {cp}"))).unwrap();
        assert_eq!(s.columns(), vec!["age", "cp=2", "cp=3"]);
        assert_eq!(
            s.categories(),
            BTreeSet::from(["ehr_data".to_owned(), "health_determinants".to_owned()])
        );
        assert_eq!(
            s.features[1].source,
            Source::Observation {
                code: CodeMatch {
                    system: "x".into(),
                    code: "cp".into()
                },
                method: Some(CodeMatch {
                    system: "m".into(),
                    code: "k".into()
                }),
            }
        );
    }

    #[test]
    fn unknown_category_and_transform_are_typed_errors() {
        let bad_cat = AGE.replace("ehr_data", "horoscope_data");
        assert!(matches!(
            FeatureSpec::from_json(&spec_with(&bad_cat)),
            Err(SpecError::UnknownCategory { category, .. }) if category == "horoscope_data"
        ));
        let bad_kind = AGE.replace("\"number\"", "\"log\"");
        assert!(matches!(
            FeatureSpec::from_json(&spec_with(&bad_kind)),
            Err(SpecError::UnknownTransform { kind, .. }) if kind == "log"
        ));
        let extra_field = AGE.replace("\"unit\"", "\"units\"");
        assert!(matches!(
            FeatureSpec::from_json(&spec_with(&extra_field)),
            Err(SpecError::InvalidTransform { .. })
        ));
        let gender_number = r#"{"name": "sex", "category": "ehr_data",
            "source": {"patient": "gender"}, "transform": {"kind": "number"}}"#;
        assert!(matches!(
            FeatureSpec::from_json(&spec_with(gender_number)),
            Err(SpecError::Incompatible { .. })
        ));
        assert!(matches!(
            FeatureSpec::from_json(&spec_with(&format!("{AGE}, {AGE}"))),
            Err(SpecError::DuplicateColumn(c)) if c == "age"
        ));
        assert!(matches!(
            FeatureSpec::from_json(&spec_with("")),
            Err(SpecError::NoFeatures)
        ));
        assert!(matches!(
            FeatureSpec::from_json("{"),
            Err(SpecError::Json(_))
        ));
    }

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
            unit: Some("mm[Hg]".into()),
        };
        assert!(matches!(
            number.apply(&q(1.0, None)),
            Err(ValueError::Unit { .. })
        ));
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
    }
}
