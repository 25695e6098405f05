//! A holder's code map: how the study's codes are written in its own records (terminology
//! mapping), the unit spellings of its systems, and its site-private features.
//!
//! ```json
//! {
//!   "codes": [
//!     { "study": { "system": "http://snomed.info/sct", "code": "44054006" },
//!       "local": [ { "system": "http://hl7.org/fhir/sid/icd-10", "code": "E11*" } ] },
//!     { "study": { "system": "http://loinc.org", "code": "2345-7" },
//!       "local": [ { "system": "http://loinc.org", "code": "15074-8" } ] }
//!   ],
//!   "units": { "Schläge/min": "/min" },
//!   "private_features": [ { "name": "...", "category": "...", "source": ..., "transform": ... } ]
//! }
//! ```
//!
//! A `study` entry names a code (or prefix pattern) exactly as the specification writes it;
//! wherever the specification matches it, the `local` codes match too. Site-private features
//! are written like the specification's; they feed only the holder's local model parts
//! (FENDA-style models), never the shared model, and the node refuses one that reads a data
//! category the study does not declare (the gateway checked the study's categories against
//! the permit).
use std::path::Path;

use serde::Deserialize;

use super::cohort::{code_set, CodePattern, RawCode};
use super::features::{Feature, FeatureSpec};
use super::SourceError;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct CodeMap {
    /// (study pattern, local patterns).
    pub codes: Vec<(CodePattern, Vec<CodePattern>)>,
    /// (local unit, UCUM code).
    pub units: Vec<(String, String)>,
    pub private_features: Vec<Feature>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMap {
    #[serde(default)]
    codes: Vec<RawEntry>,
    #[serde(default)]
    units: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    private_features: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    study: RawCode,
    local: Vec<RawCode>,
}

impl CodeMap {
    pub fn from_json(text: &str, spec: &FeatureSpec) -> Result<Self, SourceError> {
        let raw: RawMap =
            serde_json::from_str(text).map_err(|e| SourceError::CodeMap(e.to_string()))?;
        let mut codes = Vec::new();
        for e in raw.codes {
            let study = CodePattern::new(&e.study.system, &e.study.code);
            let local = code_set(&e.local).map_err(SourceError::CodeMap)?.0;
            codes.push((study, local));
        }
        for (local, ucum) in &raw.units {
            super::units::check_unit(ucum)
                .map_err(|r| SourceError::CodeMap(format!("units.{local}: {r}")))?;
        }
        // private features parse as the features of a specification with the study's cohort
        let private_features = if raw.private_features.is_empty() {
            vec![]
        } else {
            let mut probe = serde_json::json!({
                "name": "private", "features": raw.private_features,
                "label": {"name": "__label", "category": "ehr_data",
                          "source": {"condition": {"system": "-", "code": "-"}}}
            });
            if let Some(c) = &spec.cohort.category {
                // same index semantics as the study's specification
                probe["cohort"] = cohort_json(spec, c.as_str());
            }
            let parsed = FeatureSpec::from_json(&probe.to_string())
                .map_err(|e| SourceError::CodeMap(format!("private_features: {e}")))?;
            parsed.features
        };
        let study_columns = spec.columns();
        for f in &private_features {
            if study_columns.iter().any(|c| f.columns().contains(c)) {
                return Err(SourceError::CodeMap(format!(
                    "private feature `{}` reuses a column of the study",
                    f.name
                )));
            }
        }
        Ok(Self {
            codes,
            units: raw.units.into_iter().collect(),
            private_features,
        })
    }

    pub fn from_file(path: &Path, spec: &FeatureSpec) -> Result<Self, SourceError> {
        Self::from_json(&std::fs::read_to_string(path)?, spec)
    }

    /// The specification with the local codes added wherever a study code is matched.
    pub fn apply(&self, spec: &FeatureSpec) -> FeatureSpec {
        let mut mapped = spec.clone();
        for set in mapped.code_sets_mut() {
            let mut extra = Vec::new();
            for p in &set.0 {
                for (study, local) in &self.codes {
                    if study == p {
                        extra.extend(local.iter().cloned());
                    }
                }
            }
            set.0.extend(extra);
        }
        mapped
    }
}

/// The study's cohort re-expressed, so private features get its index semantics.
fn cohort_json(spec: &FeatureSpec, category: &str) -> serde_json::Value {
    use super::cohort::{IndexEvent, Unit};
    match (spec.cohort.unit, &spec.cohort.index) {
        (Unit::Encounter, IndexEvent::Discharge) => {
            serde_json::json!({"unit": "encounter", "index": "discharge", "category": category})
        }
        (Unit::Encounter, _) => {
            serde_json::json!({"unit": "encounter", "index": "admission", "category": category})
        }
        _ => {
            serde_json::json!({"unit": "patient", "index": {"date": "2000-01-01"}, "category": category})
        }
    }
}
