//! The data side of a node agent run by a health data holder.
//!
//! A node reads its own records (a FHIR R4 Bundle, [`fhir_source`], or a CSV extract,
//! [`csv_source`]), turns every subject into one row of model inputs as a declarative
//! [`features::FeatureSpec`] says, drops subjects with a missing input, removes opted-out
//! subjects ([`SiteRows::exclude`]) and only then builds the training data set
//! ([`SiteRows::site_data`]). Nothing but model updates leaves the node; the rows here never
//! do.
//!
//! [`example_federation`] turns the public UCI Heart Disease data into four FHIR Bundles, one
//! per hospital, so a demonstration federation runs on FHIR like a real one would.
pub mod agent;
pub mod csv_source;
pub mod example_federation;
pub mod features;
pub mod fhir_source;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use fl_engine::data::{Dataset, SiteData};
use serde::Deserialize;

pub use features::{FeatureSpec, SpecError};

/// `Meta.tag` system carrying a subject's train / test assignment in a source.
pub const SPLIT_TAG_SYSTEM: &str = "urn:ehds-gateway:split";

/// Which fixed partition a subject belongs to, when the source assigns one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Split {
    Train,
    Test,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Test => "test",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "train" => Some(Split::Train),
            "test" => Some(Split::Test),
            _ => None,
        }
    }
}

/// One subject's model inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectRow {
    pub pseudonym: String,
    pub split: Option<Split>,
    pub features: Vec<f32>,
    pub label: u32,
}

/// Why a source could not be read. Malformed input is always one of these, never a panic.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("not valid FHIR JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error("expected a Bundle, found a {0}")]
    NotABundle(String),
    #[error("bundle entry {0}: Patient without an id")]
    PatientWithoutId(usize),
    #[error("patient `{0}` appears twice")]
    DuplicatePatient(String),
    #[error(
        "bundle entry {entry}: subject reference {reference:?} names no Patient in the bundle"
    )]
    UnresolvedSubject {
        entry: usize,
        reference: Option<String>,
    },
    #[error("patient `{patient}`: more than one Observation for feature `{feature}`")]
    DuplicateObservation { patient: String, feature: String },
    #[error("patient `{patient}`, feature `{feature}`: {error}")]
    Value {
        patient: String,
        feature: String,
        error: features::ValueError,
    },
    #[error("patient `{patient}`: split tag `{code}` is neither train nor test")]
    BadSplitTag { patient: String, code: String },
    #[error("CSV: {0}")]
    Csv(#[from] csv::Error),
    #[error("CSV header {found:?} does not match the specification's {expected:?}")]
    CsvHeader {
        expected: Vec<String>,
        found: Vec<String>,
    },
    #[error("CSV record {record}: {reason}")]
    CsvValue { record: usize, reason: String },
    #[error("{0} subjects carry no train/test tag")]
    Untagged(usize),
    #[error(transparent)]
    Engine(#[from] fl_engine::error::EngineError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A site's subjects after feature extraction, before any data set is built.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SiteRows {
    /// Column names, in the order of every row's `features`.
    pub columns: Vec<String>,
    /// Complete subjects, in source order.
    pub rows: Vec<SubjectRow>,
    /// Pseudonyms of subjects dropped because an input was missing.
    pub incomplete: Vec<String>,
    /// How many subjects missed each column (a subject can miss several).
    pub missing_by_column: BTreeMap<String, usize>,
}

/// What [`SiteRows::exclude`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Exclusion {
    /// Opted-out subjects removed from the complete rows (these would have been trained on).
    pub from_rows: usize,
    /// Opted-out subjects that were already dropped as incomplete.
    pub from_incomplete: usize,
}

impl Exclusion {
    pub fn total(self) -> usize {
        self.from_rows + self.from_incomplete
    }
}

impl SiteRows {
    /// Remove every subject whose pseudonym is in `opted_out`. Call this before building any
    /// data set; the counts go into the round manifest.
    pub fn exclude(&mut self, opted_out: &BTreeSet<String>) -> Exclusion {
        let (rows, inc) = (self.rows.len(), self.incomplete.len());
        self.rows.retain(|r| !opted_out.contains(&r.pseudonym));
        self.incomplete.retain(|p| !opted_out.contains(p));
        Exclusion {
            from_rows: rows - self.rows.len(),
            from_incomplete: inc - self.incomplete.len(),
        }
    }

    fn dataset_of<'a>(
        &self,
        rows: impl Iterator<Item = &'a SubjectRow>,
    ) -> Result<Dataset, SourceError> {
        let mut x = Vec::new();
        let mut y = Vec::new();
        for r in rows {
            x.extend_from_slice(&r.features);
            y.push(r.label);
        }
        Ok(Dataset::new(self.columns.len(), x, y)?)
    }

    /// All complete subjects as one data set, ignoring any split tags.
    pub fn dataset(&self) -> Result<Dataset, SourceError> {
        self.dataset_of(self.rows.iter())
    }

    /// The tagged train and test sets, in source order. Every subject must carry a tag.
    pub fn train_test(&self) -> Result<(Dataset, Dataset), SourceError> {
        let untagged = self.rows.iter().filter(|r| r.split.is_none()).count();
        if untagged > 0 {
            return Err(SourceError::Untagged(untagged));
        }
        Ok((
            self.dataset_of(self.rows.iter().filter(|r| r.split == Some(Split::Train)))?,
            self.dataset_of(self.rows.iter().filter(|r| r.split == Some(Split::Test)))?,
        ))
    }

    /// The site's training data as the engine takes it: the tagged training rows split into
    /// train / validation (`val_fraction`, seeded) and standardised with statistics of the
    /// site's own training part; the tagged test rows as test set.
    pub fn site_data(
        &self,
        name: &str,
        val_fraction: f64,
        seed: u64,
    ) -> Result<SiteData, SourceError> {
        let (train, test) = self.train_test()?;
        Ok(SiteData::prepare(name, &train, &test, val_fraction, seed)?)
    }
}

#[derive(Deserialize)]
struct OptOutLine {
    subject_pseudonym: String,
    effective_from: Option<DateTime<Utc>>,
    #[serde(default)]
    withdrawn: bool,
}

/// The pseudonyms opted out at `as_of`, from the NDJSON opt-out format the gateway imports
/// (`subject_pseudonym`, optional `effective_from` and `withdrawn`). Lines apply in order: a
/// withdrawal removes an earlier opt-out. A line without `effective_from` is in force at once.
pub fn opted_out_at(ndjson: &str, as_of: DateTime<Utc>) -> Result<BTreeSet<String>, SourceError> {
    let mut out = BTreeSet::new();
    for line in ndjson.lines().filter(|l| !l.trim().is_empty()) {
        let l: OptOutLine = serde_json::from_str(line).map_err(SourceError::Json)?;
        if l.effective_from.is_some_and(|t| t > as_of) {
            continue;
        }
        if l.withdrawn {
            out.remove(&l.subject_pseudonym);
        } else {
            out.insert(l.subject_pseudonym);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> SiteRows {
        let row = |p: &str, split, v: f32| SubjectRow {
            pseudonym: p.into(),
            split,
            features: vec![v, v + 1.0],
            label: u32::from(v > 1.0),
        };
        SiteRows {
            columns: vec!["a".into(), "b".into()],
            rows: vec![
                row("p1", Some(Split::Train), 0.0),
                row("p2", Some(Split::Test), 1.0),
                row("p3", Some(Split::Train), 2.0),
            ],
            incomplete: vec!["p4".into()],
            missing_by_column: BTreeMap::from([("a".into(), 1)]),
        }
    }

    #[test]
    fn exclusion_counts_and_train_test_order() {
        let mut r = rows();
        let (train, test) = r.train_test().unwrap();
        assert_eq!(train.features(), &[0., 1., 2., 3.]);
        assert_eq!(test.labels(), &[0]);
        let ex = r.exclude(&BTreeSet::from(["p3".into(), "p4".into(), "p9".into()]));
        assert_eq!(
            ex,
            Exclusion {
                from_rows: 1,
                from_incomplete: 1
            }
        );
        assert_eq!(ex.total(), 2);
        let names: Vec<&str> = r.rows.iter().map(|r| r.pseudonym.as_str()).collect();
        assert_eq!(names, ["p1", "p2"]);
        r.rows[0].split = None;
        assert!(matches!(r.train_test(), Err(SourceError::Untagged(1))));
        assert_eq!(r.dataset().unwrap().len(), 2);
    }

    #[test]
    fn opt_out_lines_apply_in_order_and_respect_time() {
        let t = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let text = r#"{"subject_pseudonym": "a", "effective_from": "2026-01-01T00:00:00Z"}
{"subject_pseudonym": "b", "effective_from": "2026-03-01T00:00:00Z"}

{"subject_pseudonym": "c"}
{"subject_pseudonym": "c", "withdrawn": true, "effective_from": "2026-02-01T00:00:00Z"}"#;
        let feb15 = opted_out_at(text, t("2026-02-15T00:00:00Z")).unwrap();
        assert_eq!(feb15, BTreeSet::from(["a".to_owned()]));
        let jan15 = opted_out_at(text, t("2026-01-15T00:00:00Z")).unwrap();
        assert_eq!(jan15, BTreeSet::from(["a".to_owned(), "c".to_owned()]));
        assert!(opted_out_at("{nope", t("2026-01-01T00:00:00Z")).is_err());
    }
}
