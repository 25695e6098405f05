//! ehds-node: the node agent a health data holder runs next to its records (`ehds-node run`).
//!
//! A node reads its own records as it exports them ([`fhir_source`]: a FHIR R4 Bulk Data
//! export, NDJSON or a Bundle, streamed; or a CSV extract, [`csv_source`]), maps the study's
//! codes to its own ([`codemap`]), turns every patient or encounter of the cohort into one row
//! of model inputs as a declarative [`features::FeatureSpec`] says ([`extract`]), drops or
//! imputes missing inputs ([`impute`]), removes opted-out subjects ([`SiteRows::exclude`]) and
//! only then builds the training data set ([`SiteRows::site_data`]). Nothing but model
//! updates leaves the node; the rows and the extraction [`report`] never do. It speaks to the
//! gateway over HTTP only ([`client`]), in the vocabulary of `ehds_core`.
//!
//! `ehds-node check` ([`check`]) shows a holder what a specification makes of its data before
//! it joins a study; `ehds-node export-model` ([`best_model`]) hands the hospital the best
//! personalised model the node kept; `ehds-node evaluate-model` and `ehds-node
//! fedmap-finetune` ([`local_model`]) use a study's models on the holder's own data.
#![forbid(unsafe_code)]

pub mod agent;
pub mod best_model;
pub mod check;
pub mod check_cli;
pub mod cli;
pub mod client;
pub mod codemap;
pub mod csv_source;
pub mod extract;
pub mod fhir_source;
pub mod image;
pub mod impute;
pub mod local_model;
pub mod node_log;
pub mod policy;
pub mod preflight;
pub mod private;
pub mod reader;
pub mod report;
pub mod resource;
pub mod source;
pub mod split;
pub mod statistics;
pub mod tensors;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use fl_engine::data::{Dataset, SiteData};
use serde::Deserialize;

// The specification is shared with the gateway; these paths keep the node's modules reading
// naturally.
pub use ehds_core::domain::feature_spec::{cohort, features, transform, units};
pub use features::{FeatureSpec, SpecError, Task};
pub use source::DataSource;
pub use split::{Assignment, DecidedBy, Part, SplitPlan};

/// `Meta.tag` system carrying a subject's train / test assignment in a source (optional:
/// without it the node splits the rows itself, see [`split`]).
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

/// One row's model inputs: a patient's, or one of its encounters'.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubjectRow {
    /// The patient's pseudonym (opt-outs apply to it, whatever the unit of analysis).
    pub pseudonym: String,
    pub split: Option<Split>,
    /// The study's columns; NaN where a value is missing and will be imputed.
    pub features: Vec<f32>,
    /// The binary label, or the event indicator of a survival target.
    pub label: u32,
    /// Survival: days from the index to the event or the censoring.
    pub time: Option<f32>,
    /// Time series inputs, when the specification has them.
    pub series: Option<Series>,
    /// The image, `[channels, height, width]` channel-major, scaled (and normalised) as the
    /// specification declares, when it has one.
    pub image: Option<Vec<f32>>,
    /// The Encounter this row is, for encounter cohorts.
    pub encounter: Option<String>,
    /// The holder's site-private columns (never part of the shared model's input).
    pub private: Vec<f32>,
}

/// One row's `[steps, channels]` values (row-major) and presence mask: 1 where the bin had
/// an Observation, 0 where the value is carried forward or still missing (NaN, filled from
/// the site's training rows in [`SiteRows::tensors`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    pub values: Vec<f32>,
    pub mask: Vec<u8>,
}

/// The shape of a specification's time series.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SeriesShape {
    pub steps: usize,
    pub channels: Vec<String>,
}

/// Why a source could not be read. Malformed input is always one of these, never a panic.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("not valid FHIR JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error("{file}: not a readable FHIR Bundle: {error}")]
    Bundle {
        file: String,
        #[source]
        error: serde_json::Error,
    },
    #[error("{file} line {line}: the file breaks off: {error}")]
    Read {
        file: String,
        line: u64,
        #[source]
        error: std::io::Error,
    },
    #[error("{0} holds no FHIR files (*.ndjson, *.ndjson.gz, *.json, *.json.gz)")]
    NoInput(String),
    #[error("cannot tell the format of {0}: name it *.json (a Bundle) or *.ndjson (Bulk Data), optionally *.gz")]
    UnknownFormat(String),
    #[error("code map: {0}")]
    CodeMap(String),
    #[error("site-private feature `{feature}` reads `{category}` data, which the study does not declare")]
    UndeclaredPrivateCategory { feature: String, category: String },
    #[error("expected a Bundle, found a {0}")]
    NotABundle(String),
    #[error("bundle entry {0}: Patient without an id")]
    PatientWithoutId(usize),
    /// Two Patients with one id cannot be told apart, so the read stops.
    #[error("{file} line {line}: patient `{id}` appears twice")]
    DuplicatePatient { id: String, file: String, line: u64 },
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
    #[error("a CSV extract holds no images: read an image specification from FHIR Media")]
    ImageNeedsFhir,
    #[error(
        "{untagged} of {subjects} subjects carry no train/test tag: tag every subject, or none \
         and the node splits them itself"
    )]
    PartlyTagged { untagged: usize, subjects: usize },
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
    /// Per column, how a missing value is imputed (`None`: never missing in a kept row).
    pub imputation: Vec<Option<features::Impute>>,
    /// The holder's site-private columns, in the order of every row's `private`.
    pub private_columns: Vec<String>,
    pub private_imputation: Vec<Option<features::Impute>>,
    /// Binary or survival.
    pub task: Task,
    /// The time series' shape, when the specification has one.
    pub series: Option<SeriesShape>,
    /// Values per image (`channels * height * width`); 0 without an image.
    pub image_len: usize,
    /// Kept rows, in source order.
    pub rows: Vec<SubjectRow>,
    /// Pseudonyms of subjects dropped because an input was missing.
    pub incomplete: Vec<String>,
    /// How many rows missed each column (a row can miss several); for imputed columns, the
    /// number of imputed values.
    pub missing_by_column: BTreeMap<String, usize>,
    /// What the reading met: bad input, exclusions, units.
    pub report: report::Report,
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

/// Rows of one site as (train, validation, test).
pub type TrainValTest<'a> = (
    Vec<&'a SubjectRow>,
    Vec<&'a SubjectRow>,
    Vec<&'a SubjectRow>,
);

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

    /// Distinct pseudonyms of every subject read (kept rows and incomplete ones), in order.
    pub fn subjects(&self) -> Vec<&str> {
        let mut seen = BTreeSet::new();
        self.rows
            .iter()
            .map(|r| r.pseudonym.as_str())
            .chain(self.incomplete.iter().map(String::as_str))
            .filter(|p| seen.insert(*p))
            .collect()
    }

    fn dataset_of(
        &self,
        rows: &[&SubjectRow],
        imputer: &impute::Imputer,
    ) -> Result<Dataset, SourceError> {
        let mut x = Vec::with_capacity(rows.len() * self.columns.len());
        let mut y = Vec::with_capacity(rows.len());
        for r in rows {
            let start = x.len();
            x.extend_from_slice(&r.features);
            imputer.fill(&mut x[start..]);
            y.push(r.label);
        }
        Ok(Dataset::new(self.columns.len(), x, y)?)
    }

    fn imputer(&self, fit_on: &[&SubjectRow]) -> impute::Imputer {
        impute::Imputer::fit(
            &self.imputation,
            fit_on.iter().map(|r| r.features.as_slice()),
        )
    }

    /// All kept rows as one data set, ignoring any split tags (missing values imputed from
    /// all of them).
    pub fn dataset(&self) -> Result<Dataset, SourceError> {
        let all: Vec<&SubjectRow> = self.rows.iter().collect();
        self.dataset_of(&all, &self.imputer(&all))
    }

    /// The training part (train and validation rows together) and the test part under
    /// `plan`, in source order, missing values imputed from the training part.
    pub fn train_test(&self, plan: &SplitPlan) -> Result<(Dataset, Dataset), SourceError> {
        let a = self.assign(plan)?;
        let (mut train, mut test) = (Vec::new(), Vec::new());
        for (r, part) in self.rows.iter().zip(&a.parts) {
            match part {
                Part::Test => test.push(r),
                Part::Train | Part::Validation => train.push(r),
            }
        }
        let imputer = self.imputer(&train);
        Ok((
            self.dataset_of(&train, &imputer)?,
            self.dataset_of(&test, &imputer)?,
        ))
    }

    /// The site's training data as the engine takes it: the rows split as `plan` says
    /// ([`split`]), missing values imputed and every column standardised with statistics of
    /// the site's own training part only. Only the study's columns: site-private ones stay
    /// out.
    pub fn site_data(&self, name: &str, plan: &SplitPlan) -> Result<SiteData, SourceError> {
        if self.task != Task::Binary || self.series.is_some() || self.image_len > 0 {
            return Err(SourceError::Engine(fl_engine::error::EngineError::InvalidConfig(
                "the engine trains binary classifiers on static features; this specification's \
                 survival target, time series or image needs the sequence, image and survival \
                 models"
                    .into(),
            )));
        }
        let (train, val, test) = self.train_val(plan)?;
        let imputer = self.imputer(&train);
        let (train, val, test) = (
            self.dataset_of(&train, &imputer)?,
            self.dataset_of(&val, &imputer)?,
            self.dataset_of(&test, &imputer)?,
        );
        if train.is_empty() {
            return Err(SourceError::Engine(fl_engine::error::EngineError::Data(
                format!("site `{name}` has no training rows"),
            )));
        }
        let s = fl_engine::data::Standardizer::fit(&train)?;
        Ok(SiteData {
            name: name.to_owned(),
            train: s.apply(&train)?,
            val: s.apply(&val)?,
            test: s.apply(&test)?,
        })
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
            ..SubjectRow::default()
        };
        SiteRows {
            columns: vec!["a".into(), "b".into()],
            imputation: vec![None, None],
            rows: vec![
                row("p1", Some(Split::Train), 0.0),
                row("p2", Some(Split::Test), 1.0),
                row("p3", Some(Split::Train), 2.0),
            ],
            incomplete: vec!["p4".into()],
            missing_by_column: BTreeMap::from([("a".into(), 1)]),
            ..SiteRows::default()
        }
    }

    #[test]
    fn exclusion_counts_and_train_test_order() {
        let mut r = rows();
        let plan = SplitPlan::new(0.2, 0.2, 1);
        let (train, test) = r.train_test(&plan).unwrap();
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
        // one subject untagged among tagged ones is refused; none tagged, the node splits
        r.rows[0].split = None;
        assert!(matches!(
            r.train_test(&plan),
            Err(SourceError::PartlyTagged {
                untagged: 1,
                subjects: 2
            })
        ));
        r.rows[1].split = None;
        let (train, test) = r.train_test(&plan).unwrap();
        assert_eq!(train.len() + test.len(), 2);
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
