//! Declarative feature specification: the unit of analysis and its index event
//! ([`super::cohort`]), which source each model input comes from, how it is aggregated over
//! time and turned into numbers, what happens when it is missing, the label, and which
//! Art. 51(1) data category each of them reads.
//!
//! The specification is parsed once into typed values (parse, don't validate): an unknown
//! category identifier, an unknown transform kind, a window without an index or an
//! inconsistent transform is refused when the file is read, never half-way through an
//! extraction. A parsed [`FeatureSpec`] can therefore report exactly which categories a
//! study touches ([`FeatureSpec::categories`]) so the gateway can check them against the
//! data permit.
//!
//! File format (JSON); everything but `name`, `features` and `label` is optional (`features`
//! too when an `image` is declared: [`super::image`], one picture per subject from FHIR
//! `Media`, which a CNN reads), and a specification without `cohort` reads one row per Patient
//! with no notion of time:
//!
//! ```json
//! {
//!   "name": "icu-mortality",
//!   "cohort": { "unit": "encounter", "index": "admission", "category": "ehr_data" },
//!   "features": [
//!     { "name": "age", "category": "ehr_data", "source": { "patient": "age" },
//!       "transform": { "kind": "number", "unit": "a" } },
//!     { "name": "hr_max", "category": "ehr_data",
//!       "source": { "observation": { "system": "http://loinc.org", "code": "8867-4",
//!                   "window": { "from": "0h", "to": "24h" }, "aggregate": "max" } },
//!       "transform": { "kind": "number", "unit": "/min" },
//!       "missing": { "impute": "median", "indicator": true } },
//!     { "name": "diabetes", "category": "ehr_data",
//!       "source": { "condition": { "codes": [
//!           { "system": "http://hl7.org/fhir/sid/icd-10", "code": "E11*" } ] } },
//!       "transform": { "kind": "presence" } }
//!   ],
//!   "time_series": { "hours": 24, "bin_minutes": 60, "channels": [
//!     { "name": "hr", "category": "ehr_data", "unit": "/min", "aggregate": "mean",
//!       "observation": { "system": "http://loinc.org", "code": "8867-4" } } ] },
//!   "label": { "name": "death_30d", "category": "ehr_data",
//!              "source": { "death": { "within": "30d" } } }
//! }
//! ```
//!
//! Sources: `observation` (`system`, `code`, optional `method`, `window`, `aggregate`: one of
//! `latest` (default), `first`, `mean`, `min`, `max`, `count`, `slope` (per hour)),
//! `patient` (`gender`, `age` at the index in full years, or at a fixed date with
//! `{"patient": {"age": {"as_of": "2024-06-30"}}}`, which needs no index; `deceased`),
//! `condition` and `medication` (`codes`, exact or prefix patterns such as `I10*`, optional
//! `window`, optional `require_date`; medications are MedicationRequest and
//! MedicationStatement). Windows are relative to the index (see [`super::cohort::Window`])
//! and default to everything up to the index.
//!
//! Undated records (many exports carry a problem list without onset, abatement or recorded
//! dates, and prescriptions without `authoredOn`): with an index, an undated Condition whose
//! `clinicalStatus` is active, recurrence or relapse counts as known at the index, and so
//! does an undated MedicationRequest or MedicationStatement whose `status` is active,
//! on-hold, completed or stopped; it then counts in a window that contains the index (and in
//! the cohort's `include.condition`), in no other. `"require_date": true` on a feature's
//! source refuses that assumption: every undated record of it is set aside. An undated
//! Condition whose clinical status is inactive, remission or resolved (or a statement that is
//! only intended) is set aside for its status; one without a status to go by, for its lack of
//! a date. A dated Condition counts by its onset (else its recorded date) whatever its
//! clinical status: a resolved one was there then. Whatever the dates, a Condition whose
//! `verificationStatus` is refuted or entered-in-error, a MedicationRequest that is
//! entered-in-error, cancelled or draft, a MedicationStatement that is entered-in-error or
//! not-taken, and an Observation that is entered-in-error or cancelled never count. Every
//! record matching a feature's, label's or channel's codes that does not count is counted in
//! the extraction report under its name and the reason (`ehds-node check` shows them).
//!
//! Labels: `condition` and `medication` (after the index, optionally `within` a horizon;
//! an undated record is never after the index), `death` (`within` N days of the index, which
//! needs a date of death: a subject recorded as deceased without one is excluded and counted
//! as "deceased without a date of death"), `{"patient": "deceased"}` (`deceasedBoolean` or
//! `deceasedDateTime`, or an Encounter discharged as expired: ever, as of the extraction; no
//! index needed), `observation` (aggregated over `within`, `above` or `below` a threshold)
//! and `survival` (time to `event`, censored at `follow_up` or at the end of the subject's
//! records).
//!
//! Multi-class labels (target: a class index, `task` `{"multiclass": {"classes": K}}`):
//! `first_match` (`classes`: named binary label sources, each `{"name", "category"?,
//! "source"}`, tried in order, the first positive one wins; `otherwise` names a last class for
//! subjects matching none, without it they have no label and are excluded like a missing
//! one), `coded` (an `observation` whose `valueCodeableConcept` is one of each class's
//! `codes`, `latest` or `first`) and `bins` (an `observation`'s value in `unit`, each class
//! but the last with an increasing `below` bound). Coded and binned Observations are read
//! `within` a horizon after the index with one, and all of them without. Multi-label labels
//! (target: a bit mask, at most 32 labels, `{"multilabel": {"labels": L}}`): `labels`, named
//! binary sources like the classes of `first_match`, bit k set when label k is positive. A
//! class or label without a `category` reads the label's; each category is checked against
//! the permit like any other.
//!
//! ```json
//! "label": { "name": "severity", "category": "ehr_data", "source": { "coded": {
//!   "observation": { "system": "urn:example:observation", "code": "angiographic-status" },
//!   "classes": [ { "name": "none", "codes": [ { "system": "urn:example:num", "code": "0" } ] },
//!                { "name": "any", "codes": [ { "system": "urn:example:num", "code": "1" },
//!                                            { "system": "urn:example:num", "code": "2" } ] } ] } } }
//! "label": { "name": "outcomes", "category": "ehr_data", "source": { "labels": [
//!   { "name": "death_30d", "source": { "death": { "within": "30d" } } },
//!   { "name": "aki", "source": { "observation": { "system": "http://loinc.org",
//!     "code": "2160-0", "within": "48h", "above": 2.0, "unit": "mg/dL" } } } ] } }
//! ```
//!
//! Missing values: by default a subject missing any input is dropped and counted;
//! `missing: {"impute": "mean" | "median" | "constant", "value": .., "indicator": true}`
//! keeps it, imputes with statistics of the site's own training rows, and adds a `name#missing`
//! column when asked.
use std::collections::BTreeSet;

use serde::Deserialize;

use super::cohort::{
    self, code_set, parse_instant, window, CodeSet, Cohort, Instant, RawCode, RawCohort, RawWindow,
    Span, Window,
};
use crate::domain::study::StudyTask;
use crate::domain::DataCategory;

pub use super::image::ImageSpec;
pub use super::transform::{Coding, Comparator, Quantity, Transform, Value, ValueError};

/// Code system of LOINC.
pub const LOINC: &str = "http://loinc.org";
/// Code system of SNOMED CT.
pub const SNOMED: &str = "http://snomed.info/sct";
/// Code system of UCUM units.
pub const UCUM: &str = "http://unitsofmeasure.org";
/// Code system of ICD-10 (WHO).
pub const ICD10: &str = "http://hl7.org/fhir/sid/icd-10";
/// Code system of the ATC classification.
pub const ATC: &str = "http://www.whocc.no/atc";
/// Code system of RxNorm.
pub const RXNORM: &str = "http://www.nlm.nih.gov/research/umls/rxnorm";

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
    #[error("{at}: {reason}")]
    Invalid { at: String, reason: String },
    #[error("column `{0}` is produced twice")]
    DuplicateColumn(String),
    #[error("the specification declares no features")]
    NoFeatures,
}

fn invalid(at: impl Into<String>, reason: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        at: at.into(),
        reason: reason.into(),
    }
}

/// A system + code pair that a coding must carry to match.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeMatch {
    pub system: String,
    pub code: String,
}

/// How the Observations in a window become one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    Latest,
    First,
    Mean,
    Min,
    Max,
    Count,
    /// Least-squares slope of the value against time, per hour.
    Slope,
}

impl Aggregate {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "latest" => Aggregate::Latest,
            "first" => Aggregate::First,
            "mean" => Aggregate::Mean,
            "min" => Aggregate::Min,
            "max" => Aggregate::Max,
            "count" => Aggregate::Count,
            "slope" => Aggregate::Slope,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Aggregate::Latest => "latest",
            Aggregate::First => "first",
            Aggregate::Mean => "mean",
            Aggregate::Min => "min",
            Aggregate::Max => "max",
            Aggregate::Count => "count",
            Aggregate::Slope => "slope",
        }
    }

    /// Whether the aggregate is a number computed from measured values.
    pub fn numeric(self) -> bool {
        matches!(
            self,
            Aggregate::Mean | Aggregate::Min | Aggregate::Max | Aggregate::Slope
        )
    }
}

/// Observations with one of `codes` (and, when given, one of the `method` codes).
#[derive(Debug, Clone, PartialEq)]
pub struct ObservationSource {
    pub codes: CodeSet,
    pub method: Option<CodeSet>,
    /// `None`: every Observation, whatever its date (a specification without an index).
    pub window: Option<Window>,
    pub aggregate: Aggregate,
}

impl ObservationSource {
    /// The study's LOINC code, which names the analyte for unit conversions.
    pub fn loinc(&self) -> Option<&str> {
        self.codes
            .0
            .iter()
            .find(|p| p.system == LOINC && !p.prefix)
            .map(|p| p.code.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatientField {
    /// `Patient.gender` (administrative gender code).
    Gender,
    /// Full years from `Patient.birthDate` to the index.
    Age,
    /// Full years from `Patient.birthDate` to a fixed date (`as_of`).
    AgeAt(Instant),
    /// `Patient.deceased[x]` (at the index, when there is one).
    Deceased,
}

/// Where a feature's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Observation(ObservationSource),
    Patient(PatientField),
    /// Conditions with one of the codes, within the window (`None`: at any time).
    /// `require_date`: an undated one never counts, not even an active one at the index.
    Condition {
        codes: CodeSet,
        window: Option<Window>,
        require_date: bool,
    },
    /// MedicationRequests and MedicationStatements with one of the codes.
    Medication {
        codes: CodeSet,
        window: Option<Window>,
        require_date: bool,
    },
}

impl Source {
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Observation(_) => "observation",
            Source::Patient(PatientField::Gender) => "patient.gender",
            Source::Patient(PatientField::Age | PatientField::AgeAt(_)) => "patient.age",
            Source::Patient(PatientField::Deceased) => "patient.deceased",
            Source::Condition { .. } => "condition",
            Source::Medication { .. } => "medication",
        }
    }
}

/// How a missing value is filled, from the site's own training rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Impute {
    Mean,
    Median,
    Constant(f32),
}

/// What happens to a subject missing a feature.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Missing {
    /// `None`: the subject is dropped (and counted).
    pub impute: Option<Impute>,
    /// Add a `name#missing` column, 1 where the value was imputed.
    pub indicator: bool,
}

/// One declared feature.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature {
    pub name: String,
    pub category: DataCategory,
    pub source: Source,
    pub transform: Transform,
    pub missing: Missing,
}

impl Feature {
    /// The value columns (before any missingness indicator).
    pub fn value_columns(&self) -> Vec<String> {
        self.transform.columns(&self.name)
    }

    pub fn indicator_column(&self) -> Option<String> {
        self.missing
            .indicator
            .then(|| format!("{}#missing", self.name))
    }

    pub fn columns(&self) -> Vec<String> {
        let mut c = self.value_columns();
        c.extend(self.indicator_column());
        c
    }
}

/// What ends a survival subject's time at risk.
#[derive(Debug, Clone, PartialEq)]
pub enum SurvivalEvent {
    Death,
    Condition(CodeSet),
}

/// Where the label comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum LabelSource {
    /// A Condition with one of the codes: at any time without an index, after the index
    /// (and within `within`, if given) with one.
    Condition {
        codes: CodeSet,
        within: Option<Span>,
    },
    /// A medication with one of the codes, after the index (within `within`, if given).
    Medication {
        codes: CodeSet,
        within: Option<Span>,
    },
    /// Death within `within` of the index (`Patient.deceasedDateTime`, or an Encounter whose
    /// discharge disposition is `exp`).
    Death { within: Span },
    /// `Patient.deceased[x]` ever, as of the extraction: `deceasedBoolean` true or any
    /// `deceasedDateTime`.
    Deceased,
    /// An Observation aggregated over the `within` after the index, compared with a
    /// threshold (in `unit`).
    Observation {
        source: ObservationSource,
        threshold: f64,
        above: bool,
        unit: Option<String>,
    },
    /// Time from the index to the event, censored at `follow_up` after the index, at
    /// `censor_at`, or at the subject's last record, whichever comes first.
    Survival {
        event: SurvivalEvent,
        follow_up: Span,
        censor_at: Option<Instant>,
    },
    /// Multi-class: the first of `classes` whose binary source is positive, else
    /// `otherwise` (the last class); a subject matching none without `otherwise` has no label.
    FirstMatch {
        classes: Vec<LabelPart>,
        otherwise: Option<String>,
    },
    /// Multi-class: the first class whose codes the Observation's coded value
    /// (`valueCodeableConcept`) carries.
    Coded {
        source: ObservationSource,
        classes: Vec<CodedClass>,
    },
    /// Multi-class: the bin of the Observation's value (in `unit`).
    Bins {
        source: ObservationSource,
        unit: Option<String>,
        classes: Vec<Bin>,
    },
    /// Multi-label: bit k is set when label k's binary source is positive.
    Labels(Vec<LabelPart>),
}

impl LabelSource {
    /// A binary source: what a class criterion or one of several labels may be.
    fn is_binary(&self) -> bool {
        matches!(
            self,
            LabelSource::Condition { .. }
                | LabelSource::Medication { .. }
                | LabelSource::Death { .. }
                | LabelSource::Deceased
                | LabelSource::Observation { .. }
        )
    }

    fn code_sets_mut<'a>(&'a mut self, out: &mut Vec<&'a mut CodeSet>) {
        match self {
            LabelSource::Condition { codes, .. } | LabelSource::Medication { codes, .. } => {
                out.push(codes)
            }
            LabelSource::Observation { source, .. } | LabelSource::Bins { source, .. } => {
                out.push(&mut source.codes);
                out.extend(source.method.as_mut());
            }
            LabelSource::Coded { source, classes } => {
                out.push(&mut source.codes);
                out.extend(source.method.as_mut());
                out.extend(classes.iter_mut().map(|c| &mut c.codes));
            }
            LabelSource::Survival {
                event: SurvivalEvent::Condition(c),
                ..
            } => out.push(c),
            LabelSource::FirstMatch { classes: parts, .. } | LabelSource::Labels(parts) => {
                for p in parts {
                    p.source.code_sets_mut(out);
                }
            }
            LabelSource::Death { .. }
            | LabelSource::Deceased
            | LabelSource::Survival {
                event: SurvivalEvent::Death,
                ..
            } => {}
        }
    }
}

/// One class of a multi-class label or one label of a multi-label one: a named binary
/// source (condition, medication, death or observation threshold) and the category it reads.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelPart {
    pub name: String,
    pub category: DataCategory,
    pub source: LabelSource,
}

/// A class of a coded label: the Observation's value carries one of `codes`.
#[derive(Debug, Clone, PartialEq)]
pub struct CodedClass {
    pub name: String,
    pub codes: CodeSet,
}

/// A class of a binned label: values below `below` (and at or above the previous class's
/// bound); the last class has no bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Bin {
    pub name: String,
    pub below: Option<f64>,
}

/// The label.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub name: String,
    pub category: DataCategory,
    pub source: LabelSource,
}

impl Label {
    /// What kind of target the label is.
    pub fn task(&self) -> Task {
        let n = |k: usize| u32::try_from(k).expect("bounded when parsed");
        match &self.source {
            LabelSource::Survival { .. } => Task::Survival,
            LabelSource::FirstMatch { .. }
            | LabelSource::Coded { .. }
            | LabelSource::Bins { .. } => Task::Multiclass {
                classes: n(self.target_names().len()),
            },
            LabelSource::Labels(parts) => Task::Multilabel {
                labels: n(parts.len()),
            },
            _ => Task::Binary,
        }
    }

    /// The classes (class index order) or labels (bit order) of a multi-class or
    /// multi-label label; empty for a binary or survival one.
    pub fn target_names(&self) -> Vec<String> {
        match &self.source {
            LabelSource::FirstMatch { classes, otherwise } => classes
                .iter()
                .map(|c| c.name.clone())
                .chain(otherwise.clone())
                .collect(),
            LabelSource::Coded { classes, .. } => classes.iter().map(|c| c.name.clone()).collect(),
            LabelSource::Bins { classes, .. } => classes.iter().map(|c| c.name.clone()).collect(),
            LabelSource::Labels(parts) => parts.iter().map(|c| c.name.clone()).collect(),
            _ => Vec::new(),
        }
    }

    /// The label's categories: its own and each class's or label's.
    pub fn categories(&self) -> impl Iterator<Item = DataCategory> + '_ {
        let parts: &[LabelPart] = match &self.source {
            LabelSource::FirstMatch { classes, .. } => classes,
            LabelSource::Labels(parts) => parts,
            _ => &[],
        };
        std::iter::once(self.category).chain(parts.iter().map(|p| p.category))
    }
}

/// Most classes a multi-class label may declare (the study API's limit).
pub const MAX_CLASSES: usize = 1024;

/// What kind of target the label is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Task {
    /// 0 / 1.
    #[default]
    Binary,
    /// A class index in `0..classes`.
    Multiclass { classes: u32 },
    /// A bit mask of `labels` bits.
    Multilabel { labels: u32 },
    /// (time in days, event 0 / 1).
    Survival,
}

impl Task {
    /// The study task a study trains when it names none.
    pub fn default_study_task(self) -> StudyTask {
        match self {
            Task::Binary => StudyTask::Binary,
            Task::Multiclass { classes } => StudyTask::Multiclass { classes },
            Task::Multilabel { labels } => StudyTask::Multilabel { labels },
            Task::Survival => StudyTask::Survival,
        }
    }

    /// Whether a study of `task` can train on this label: the same number of classes or
    /// labels; a binary label also as two classes or one label.
    pub fn trains(self, task: StudyTask) -> bool {
        match self {
            Task::Binary => matches!(
                task,
                StudyTask::Binary
                    | StudyTask::Multiclass { classes: 2 }
                    | StudyTask::Multilabel { labels: 1 }
            ),
            other => other.default_study_task() == task,
        }
    }

    /// Whether `code` is a target of this label: 0 or 1 (binary, survival event), a class
    /// index below `classes`, a mask of `labels` bits.
    pub fn holds(self, code: u32) -> bool {
        match self {
            Task::Binary | Task::Survival => code <= 1,
            Task::Multiclass { classes } => code < classes,
            Task::Multilabel { labels } => labels >= 32 || code >> labels == 0,
        }
    }

    /// The targets [`Task::holds`] accepts, in words.
    pub fn codes(self) -> String {
        match self {
            Task::Binary | Task::Survival => "0 or 1".into(),
            Task::Multiclass { classes } => format!("a class index below {classes}"),
            Task::Multilabel { labels } => format!("a bit mask of {labels} labels"),
        }
    }

    /// The label's kind in words, for refusals.
    pub fn describe(self) -> String {
        match self {
            Task::Binary => "a binary label (2 classes, 1 label)".into(),
            Task::Multiclass { classes } => format!("a {classes}-class label"),
            Task::Multilabel { labels } => format!("a {labels}-label label"),
            Task::Survival => "a survival label (time, event)".into(),
        }
    }
}

/// One channel of a time series: Observations of one code, aggregated per bin.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    pub name: String,
    pub category: DataCategory,
    pub source: ObservationSource,
    pub unit: Option<String>,
}

/// Bins of `bin` over the first `horizon` after the index: a `[steps, channels]` tensor and
/// its presence mask per row.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesSpec {
    pub horizon: Span,
    pub bin: Span,
    pub channels: Vec<Channel>,
}

impl SeriesSpec {
    pub fn steps(&self) -> usize {
        (self.horizon.0 / self.bin.0) as usize
    }

    pub fn channel_names(&self) -> Vec<String> {
        self.channels.iter().map(|c| c.name.clone()).collect()
    }
}

/// A parsed, checked feature specification.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureSpec {
    pub name: String,
    pub cohort: Cohort,
    pub features: Vec<Feature>,
    pub series: Option<SeriesSpec>,
    /// One image per subject ([`super::image`]).
    pub image: Option<ImageSpec>,
    pub label: Label,
}

impl FeatureSpec {
    /// Where each part of this specification lies in the row a node builds for a subject.
    pub fn row_layout(&self) -> fl_engine::request::RowLayout {
        let (steps, channels) = self
            .series
            .as_ref()
            .map_or((0, 0), |s| (s.steps(), s.channels.len()));
        let mut layout = fl_engine::request::RowLayout {
            image: self.image.as_ref().map(|i| (i.channels, i.height, i.width)),
            steps,
            channels,
            features: Vec::with_capacity(self.features.len()),
        };
        let mut at = layout.statics_start();
        for f in &self.features {
            let w = f.columns().len();
            layout.features.push((f.name.clone(), at..at + w));
            at += w;
        }
        layout
    }

    /// Parse a JSON specification.
    pub fn from_json(text: &str) -> Result<Self, SpecError> {
        let raw: RawSpec = serde_json::from_str(text)?;
        let cohort = match raw.cohort {
            Some(c) => cohort::cohort(c).map_err(|r| invalid("cohort", r))?,
            None => Cohort::implicit(),
        };
        let has_index = cohort.has_index();
        let features = raw
            .features
            .into_iter()
            .map(|f| feature(f, has_index))
            .collect::<Result<Vec<_>, _>>()?;
        let image = raw.image.map(super::image::image).transpose()?;
        // an image alone is a complete input (a digit, a skin lesion)
        if features.is_empty() && image.is_none() {
            return Err(SpecError::NoFeatures);
        }
        let series = raw.time_series.map(|s| series(s, has_index)).transpose()?;
        if series.is_some() && image.is_some() {
            return Err(invalid(
                "image",
                "a specification has an image or a time series as its structured input, not both",
            ));
        }
        let label = label(raw.label, has_index)?;
        let spec = Self {
            name: raw.name,
            cohort,
            features,
            series,
            image,
            label,
        };
        let mut seen = BTreeSet::new();
        let series_names = spec.series.iter().flat_map(SeriesSpec::channel_names);
        let image_name = spec.image.iter().map(|i| i.name.clone());
        for c in spec
            .columns()
            .into_iter()
            .chain(series_names)
            .chain(image_name)
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

    /// The model's static input columns, in order.
    pub fn columns(&self) -> Vec<String> {
        self.features.iter().flat_map(Feature::columns).collect()
    }

    pub fn n_columns(&self) -> usize {
        self.columns().len()
    }

    pub fn task(&self) -> Task {
        self.label.task()
    }

    /// The Art. 51(1) category identifiers (e.g. `ehr_data`) the specification reads.
    pub fn categories(&self) -> BTreeSet<String> {
        self.data_categories()
            .into_iter()
            .map(|c| c.as_str().to_owned())
            .collect()
    }

    /// Same, as typed categories: features, time-series channels, label and cohort.
    pub fn data_categories(&self) -> BTreeSet<DataCategory> {
        self.features
            .iter()
            .map(|f| f.category)
            .chain(
                self.series
                    .iter()
                    .flat_map(|s| s.channels.iter().map(|c| c.category)),
            )
            .chain(self.image.iter().map(|i| i.category))
            .chain(self.label.categories())
            .chain(self.cohort.category)
            .collect()
    }

    /// Every code set the specification matches records against (a holder's code map adds
    /// its local codes to these).
    pub fn code_sets_mut(&mut self) -> Vec<&mut CodeSet> {
        let mut out: Vec<&mut CodeSet> = Vec::new();
        if let cohort::IndexEvent::FirstCondition(c) = &mut self.cohort.index {
            out.push(c)
        }
        if let Some((c, _)) = &mut self.cohort.include.condition {
            out.push(c);
        }
        for f in &mut self.features {
            match &mut f.source {
                Source::Observation(o) => {
                    out.push(&mut o.codes);
                    out.extend(o.method.as_mut());
                }
                Source::Condition { codes, .. } | Source::Medication { codes, .. } => {
                    out.push(codes)
                }
                Source::Patient(_) => {}
            }
        }
        for c in self.series.iter_mut().flat_map(|s| s.channels.iter_mut()) {
            out.push(&mut c.source.codes);
            out.extend(c.source.method.as_mut());
        }
        if let Some(i) = &mut self.image {
            out.extend(i.code_sets_mut());
        }
        self.label.source.code_sets_mut(&mut out);
        out
    }
}

fn category(feature: &str, id: &str) -> Result<DataCategory, SpecError> {
    DataCategory::parse(id).map_err(|_| SpecError::UnknownCategory {
        feature: feature.to_owned(),
        category: id.to_owned(),
    })
}

fn single_code(system: String, code: String) -> CodeSet {
    CodeSet(vec![cohort::CodePattern {
        system,
        code,
        prefix: false,
    }])
}

fn needs_index(at: &str, has_index: bool, what: &str) -> Result<(), SpecError> {
    if has_index {
        Ok(())
    } else {
        Err(invalid(
            at,
            format!("{what} needs an index event: declare a `cohort` with an `index`"),
        ))
    }
}

fn observation(
    at: &str,
    raw: RawObservation,
    has_index: bool,
    default_aggregate: Aggregate,
) -> Result<ObservationSource, SpecError> {
    let window = match &raw.window {
        Some(w) => {
            needs_index(at, has_index, "a window")?;
            Some(window(w).map_err(|r| invalid(at, r))?)
        }
        None => has_index.then_some(Window::UP_TO_INDEX),
    };
    let aggregate = match raw.aggregate.as_deref() {
        None => default_aggregate,
        Some(a) => Aggregate::parse(a).ok_or_else(|| {
            invalid(
                at,
                format!("aggregate `{a}` is not latest, first, mean, min, max, count or slope"),
            )
        })?,
    };
    Ok(ObservationSource {
        codes: single_code(raw.system, raw.code),
        method: raw.method.map(|m| single_code(m.system, m.code)),
        window,
        aggregate,
    })
}

fn codes_window(
    at: &str,
    raw: &RawCodesSource,
    has_index: bool,
) -> Result<(CodeSet, Option<Window>, bool), SpecError> {
    let codes = code_set(&raw.codes).map_err(|r| invalid(at, r))?;
    let window = match &raw.window {
        Some(w) => {
            needs_index(at, has_index, "a window")?;
            Some(window(w).map_err(|r| invalid(at, r))?)
        }
        None => has_index.then_some(Window::UP_TO_INDEX),
    };
    // without an index every record counts, dated or not: the option would do nothing
    if raw.require_date {
        needs_index(at, has_index, "`require_date`")?;
    }
    Ok((codes, window, raw.require_date))
}

fn feature(f: RawFeature, has_index: bool) -> Result<Feature, SpecError> {
    let at = format!("feature `{}`", f.name);
    let category = category(&f.name, &f.category)?;
    let source = match f.source {
        RawSource::Observation(o) => {
            Source::Observation(observation(&at, o, has_index, Aggregate::Latest)?)
        }
        RawSource::Patient(p) => {
            if p == PatientField::Age {
                needs_index(&at, has_index, "age")?;
            }
            Source::Patient(p)
        }
        RawSource::Condition(c) => {
            let (codes, window, require_date) = codes_window(&at, &c, has_index)?;
            Source::Condition {
                codes,
                window,
                require_date,
            }
        }
        RawSource::Medication(c) => {
            let (codes, window, require_date) = codes_window(&at, &c, has_index)?;
            Source::Medication {
                codes,
                window,
                require_date,
            }
        }
    };
    let transform = super::transform::transform(&f.name, f.transform)?;
    let compatible = match (&source, &transform) {
        (
            Source::Patient(PatientField::Gender),
            Transform::Map { .. } | Transform::OneHot { .. },
        ) => true,
        (
            Source::Patient(PatientField::Age | PatientField::AgeAt(_)),
            Transform::Number { unit },
        ) => unit.as_deref().is_none_or(|u| u == "a"),
        (
            Source::Patient(PatientField::Age | PatientField::AgeAt(_)),
            Transform::Above { unit, .. },
        ) => unit.as_deref().is_none_or(|u| u == "a"),
        (Source::Patient(PatientField::Deceased), Transform::Boolean) => true,
        (Source::Condition { .. } | Source::Medication { .. }, t) => {
            matches!(t, Transform::Presence | Transform::Count)
        }
        (Source::Observation(o), t) => match o.aggregate {
            Aggregate::Latest | Aggregate::First => {
                !matches!(t, Transform::Presence | Transform::Count)
            }
            Aggregate::Count => {
                matches!(
                    t,
                    Transform::Number { unit: None } | Transform::Above { unit: None, .. }
                )
            }
            _ => matches!(t, Transform::Number { .. } | Transform::Above { .. }),
        },
        _ => false,
    };
    if !compatible {
        return Err(SpecError::Incompatible {
            feature: f.name,
            transform: transform.kind(),
            source_kind: source.kind(),
        });
    }
    let missing = match f.missing {
        None => Missing::default(),
        Some(m) => {
            let impute = match (m.impute.as_str(), m.value) {
                ("drop", None) => None,
                ("mean", None) => Some(Impute::Mean),
                ("median", None) => Some(Impute::Median),
                ("constant", Some(v)) if v.is_finite() => Some(Impute::Constant(v)),
                (other, _) => {
                    return Err(invalid(
                        &at,
                        format!(
                            "missing.impute `{other}`: write drop, mean, median, or constant \
                             with a finite `value` (and `value` only with constant)"
                        ),
                    ))
                }
            };
            if impute.is_none() && m.indicator {
                return Err(invalid(
                    &at,
                    "a dropped subject has no missingness indicator",
                ));
            }
            Missing {
                impute,
                indicator: m.indicator,
            }
        }
    };
    Ok(Feature {
        name: f.name,
        category,
        source,
        transform,
        missing,
    })
}

fn series(raw: RawSeries, has_index: bool) -> Result<SeriesSpec, SpecError> {
    needs_index("time_series", has_index, "a time series")?;
    let bin_minutes = raw.bin_minutes.unwrap_or(60);
    // In u64: `hours * 60` overflows u32 from 71,582,789 hours, and a wrapped product let a
    // series of millions of bins past the limit below.
    let minutes = u64::from(raw.hours) * 60;
    if minutes == 0 || bin_minutes == 0 || !minutes.is_multiple_of(u64::from(bin_minutes)) {
        return Err(invalid(
            "time_series",
            "`hours` and `bin_minutes` must be positive and the bins must tile the hours",
        ));
    }
    let steps = minutes / u64::from(bin_minutes);
    if steps > 10_000 || raw.channels.is_empty() {
        return Err(invalid(
            "time_series",
            "between 1 and 10000 bins and at least one channel",
        ));
    }
    let mut channels = Vec::new();
    for c in raw.channels {
        let at = format!("time_series channel `{}`", c.name);
        let category = category(&c.name, &c.category)?;
        let mut raw = c.observation;
        if c.aggregate.is_some() {
            if raw.aggregate.is_some() {
                return Err(invalid(&at, "give `aggregate` once, beside `observation`"));
            }
            raw.aggregate = c.aggregate;
        }
        let mut source = observation(&at, raw, true, Aggregate::Mean)?;
        source.window = None;
        if !(source.aggregate.numeric() || source.aggregate == Aggregate::Latest)
            || source.aggregate == Aggregate::Slope
        {
            return Err(invalid(
                &at,
                "a bin aggregates with mean, min, max or latest",
            ));
        }
        if let Some(u) = &c.unit {
            super::units::check_unit(u).map_err(|r| invalid(&at, r))?;
        }
        channels.push(Channel {
            name: c.name,
            category,
            source,
            unit: c.unit,
        });
    }
    Ok(SeriesSpec {
        horizon: Span(i64::from(raw.hours) * 3600),
        bin: Span(i64::from(bin_minutes) * 60),
        channels,
    })
}

fn within(at: &str, w: Option<&str>) -> Result<Option<Span>, SpecError> {
    let Some(w) = w else { return Ok(None) };
    let s = Span::parse(w).map_err(|r| invalid(at, r))?;
    if s.0 <= 0 {
        return Err(invalid(at, "`within` must be a positive duration"));
    }
    Ok(Some(s))
}

fn label(raw: RawLabel, has_index: bool) -> Result<Label, SpecError> {
    let category = category(&raw.name, &raw.category)?;
    let source = label_source("label", raw.source, has_index, category)?;
    if let Some(dup) = first_duplicate(&Label {
        name: raw.name.clone(),
        category,
        source: source.clone(),
    }) {
        return Err(invalid("label", format!("`{dup}` is declared twice")));
    }
    Ok(Label {
        name: raw.name,
        category,
        source,
    })
}

fn first_duplicate(l: &Label) -> Option<String> {
    let mut seen = BTreeSet::new();
    l.target_names()
        .into_iter()
        .find(|n| !seen.insert(n.clone()))
}

/// The classes or labels of a multi-class or multi-label source: each a binary source with its
/// category (the label's when not given).
fn parts(
    at: &str,
    raw: Vec<RawLabelPart>,
    has_index: bool,
    max: usize,
    label_category: DataCategory,
) -> Result<Vec<LabelPart>, SpecError> {
    if raw.len() > max {
        return Err(invalid(at, format!("at most {max} entries")));
    }
    raw.into_iter()
        .enumerate()
        .map(|(i, p)| {
            let at = format!("{at}[{i}]");
            let category = match &p.category {
                Some(c) => category(&p.name, c)?,
                None => label_category,
            };
            let source = label_source(&at, p.source, has_index, label_category)?;
            if !source.is_binary() {
                return Err(invalid(
                    &at,
                    "a class or label reads a condition, medication, death, patient.deceased or \
                     observation source",
                ));
            }
            Ok(LabelPart {
                name: p.name,
                category,
                source,
            })
        })
        .collect()
}

/// The Observation a coded or binned label reads: without an index every one of the subject's
/// Observations; with one, those strictly after the index and `within` the horizon.
fn label_observation(
    at: &str,
    raw: RawObservation,
    within_raw: Option<&str>,
    has_index: bool,
    default_aggregate: Aggregate,
) -> Result<ObservationSource, SpecError> {
    if raw.window.is_some() {
        return Err(invalid(
            at,
            "the label's horizon is `within`, beside `observation`",
        ));
    }
    let mut source = observation(at, raw, false, default_aggregate)?;
    source.window = match (has_index, within(at, within_raw)?) {
        (false, None) => None,
        (false, Some(_)) => {
            return Err(invalid(
                at,
                "`within` needs an index event: declare a `cohort` with an `index`",
            ))
        }
        (true, Some(horizon)) => Some(Window {
            from: Some(Span(1)),
            to: horizon,
        }),
        (true, None) => return Err(invalid(at, "with an index, give the horizon `within`")),
    };
    Ok(source)
}

fn label_source(
    at: &str,
    raw: RawLabelSource,
    has_index: bool,
    category: DataCategory,
) -> Result<LabelSource, SpecError> {
    Ok(match raw {
        RawLabelSource::Condition(c) => {
            let codes = match (c.system, c.code, c.codes) {
                (Some(system), Some(code), None) => single_code(system, code),
                (None, None, Some(codes)) => code_set(&codes).map_err(|r| invalid(at, r))?,
                _ => {
                    return Err(invalid(
                        at,
                        "a condition label has either `system` and `code` or `codes`",
                    ))
                }
            };
            if c.within.is_some() {
                needs_index(at, has_index, "`within`")?;
            }
            LabelSource::Condition {
                codes,
                within: within(at, c.within.as_deref())?,
            }
        }
        RawLabelSource::Medication(m) => {
            needs_index(at, has_index, "a medication label")?;
            LabelSource::Medication {
                codes: code_set(&m.codes).map_err(|r| invalid(at, r))?,
                within: within(at, m.within.as_deref())?,
            }
        }
        RawLabelSource::Patient(PatientField::Deceased) => LabelSource::Deceased,
        RawLabelSource::Patient(_) => {
            return Err(invalid(
                at,
                "a patient label reads `deceased`; gender and age are features",
            ))
        }
        RawLabelSource::Death(d) => {
            needs_index(at, has_index, "a death label")?;
            LabelSource::Death {
                within: within(at, Some(&d.within))?.expect("given"),
            }
        }
        RawLabelSource::Observation(o) => {
            needs_index(at, has_index, "an observation label")?;
            let horizon = within(at, Some(&o.within))?.expect("given");
            let (threshold, above) = match (o.above, o.below) {
                (Some(t), None) => (t, true),
                (None, Some(t)) => (t, false),
                _ => return Err(invalid(at, "give exactly one of `above` and `below`")),
            };
            if !threshold.is_finite() {
                return Err(invalid(at, "the threshold must be finite"));
            }
            if let Some(u) = &o.unit {
                super::units::check_unit(u).map_err(|r| invalid(at, r))?;
            }
            let mut source = observation(
                at,
                RawObservation {
                    system: o.system,
                    code: o.code,
                    method: o.method,
                    window: None,
                    aggregate: o.aggregate,
                },
                true,
                Aggregate::Max,
            )?;
            if !(source.aggregate.numeric() || source.aggregate == Aggregate::Latest)
                || source.aggregate == Aggregate::Slope
            {
                return Err(invalid(
                    at,
                    "the label aggregates with mean, min, max or latest",
                ));
            }
            // strictly after the index, up to the horizon
            source.window = Some(Window {
                from: Some(Span(1)),
                to: horizon,
            });
            LabelSource::Observation {
                source,
                threshold,
                above,
                unit: o.unit,
            }
        }
        RawLabelSource::Survival(s) => {
            needs_index(at, has_index, "a survival label")?;
            let event = match s.event {
                RawSurvivalEvent::Death {} => SurvivalEvent::Death,
                RawSurvivalEvent::Condition { codes } => {
                    SurvivalEvent::Condition(code_set(&codes).map_err(|r| invalid(at, r))?)
                }
            };
            let censor_at = s
                .censor_at
                .as_deref()
                .map(|d| {
                    parse_instant(d).ok_or_else(|| invalid(at, format!("`{d}` is not a date")))
                })
                .transpose()?;
            LabelSource::Survival {
                event,
                follow_up: within(at, Some(&s.follow_up))?.expect("given"),
                censor_at,
            }
        }
        RawLabelSource::FirstMatch(f) => {
            let at = format!("{at}.first_match.classes");
            let classes = parts(&at, f.classes, has_index, MAX_CLASSES - 1, category)?;
            if classes.len() + usize::from(f.otherwise.is_some()) < 2 {
                return Err(invalid(at, "a multi-class label has at least two classes"));
            }
            LabelSource::FirstMatch {
                classes,
                otherwise: f.otherwise,
            }
        }
        RawLabelSource::Coded(c) => {
            let at = format!("{at}.coded");
            let source = label_observation(
                &at,
                c.observation,
                c.within.as_deref(),
                has_index,
                Aggregate::Latest,
            )?;
            if !matches!(source.aggregate, Aggregate::Latest | Aggregate::First) {
                return Err(invalid(
                    &at,
                    "a coded value aggregates with latest or first",
                ));
            }
            if !(2..=MAX_CLASSES).contains(&c.classes.len()) {
                return Err(invalid(
                    format!("{at}.classes"),
                    format!("between 2 and {MAX_CLASSES} classes"),
                ));
            }
            let classes = c
                .classes
                .into_iter()
                .enumerate()
                .map(|(i, k)| {
                    Ok(CodedClass {
                        codes: code_set(&k.codes)
                            .map_err(|r| invalid(format!("{at}.classes[{i}]"), r))?,
                        name: k.name,
                    })
                })
                .collect::<Result<Vec<_>, SpecError>>()?;
            LabelSource::Coded { source, classes }
        }
        RawLabelSource::Bins(b) => {
            let at = format!("{at}.bins");
            let source = label_observation(
                &at,
                b.observation,
                b.within.as_deref(),
                has_index,
                Aggregate::Latest,
            )?;
            if !(source.aggregate.numeric() || source.aggregate == Aggregate::Latest)
                || source.aggregate == Aggregate::Slope
            {
                return Err(invalid(
                    &at,
                    "binned values aggregate with mean, min, max or latest",
                ));
            }
            if let Some(u) = &b.unit {
                super::units::check_unit(u).map_err(|r| invalid(&at, r))?;
            }
            let n = b.classes.len();
            if !(2..=MAX_CLASSES).contains(&n) {
                return Err(invalid(
                    format!("{at}.classes"),
                    format!("between 2 and {MAX_CLASSES} classes"),
                ));
            }
            let mut last = f64::NEG_INFINITY;
            for (i, k) in b.classes.iter().enumerate() {
                let ok = match k.below {
                    Some(v) => i + 1 < n && v.is_finite() && v > last,
                    None => i + 1 == n,
                };
                if !ok {
                    return Err(invalid(
                        format!("{at}.classes[{i}]"),
                        "every class but the last has a finite `below`, increasing; the last has none",
                    ));
                }
                last = k.below.unwrap_or(last);
            }
            LabelSource::Bins {
                source,
                unit: b.unit,
                classes: b
                    .classes
                    .into_iter()
                    .map(|k| Bin {
                        name: k.name,
                        below: k.below,
                    })
                    .collect(),
            }
        }
        RawLabelSource::Labels(l) => {
            let at = format!("{at}.labels");
            if l.is_empty() {
                return Err(invalid(at, "a multi-label label has at least one label"));
            }
            let max = fl_engine::data::MAX_LABELS as usize;
            LabelSource::Labels(parts(&at, l, has_index, max, category)?)
        }
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: String,
    cohort: Option<RawCohort>,
    #[serde(default)]
    features: Vec<RawFeature>,
    time_series: Option<RawSeries>,
    image: Option<super::image::RawImage>,
    label: RawLabel,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFeature {
    name: String,
    category: String,
    source: RawSource,
    transform: serde_json::Value,
    missing: Option<RawMissing>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMissing {
    impute: String,
    value: Option<f32>,
    #[serde(default)]
    indicator: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObservation {
    system: String,
    code: String,
    #[serde(default)]
    method: Option<CodeMatch>,
    window: Option<RawWindow>,
    aggregate: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RawSource {
    Observation(RawObservation),
    Patient(PatientField),
    Condition(RawCodesSource),
    Medication(RawCodesSource),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCodesSource {
    codes: Vec<RawCode>,
    window: Option<RawWindow>,
    #[serde(default)]
    require_date: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAsOf {
    as_of: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgeAt {
    age: RawAsOf,
}

impl<'de> Deserialize<'de> for PatientField {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => match s.as_str() {
                "gender" => Ok(PatientField::Gender),
                "age" => Ok(PatientField::Age),
                "deceased" => Ok(PatientField::Deceased),
                other => Err(Error::custom(format!(
                    "patient field `{other}` is not gender, age or deceased"
                ))),
            },
            v @ serde_json::Value::Object(_) => {
                let a = RawAgeAt::deserialize(v).map_err(|e| {
                    Error::custom(format!(
                        "a patient field is `gender`, `age`, `deceased` or \
                         {{\"age\": {{\"as_of\": \"YYYY-MM-DD\"}}}}: {e}"
                    ))
                })?;
                parse_instant(&a.age.as_of)
                    .map(PatientField::AgeAt)
                    .ok_or_else(|| {
                        Error::custom(format!("`as_of`: `{}` is not a date", a.age.as_of))
                    })
            }
            _ => Err(Error::custom(
                "a patient field is `gender`, `age`, `deceased` or {\"age\": {\"as_of\": ..}}",
            )),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSeries {
    hours: u32,
    bin_minutes: Option<u32>,
    channels: Vec<RawChannel>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChannel {
    name: String,
    category: String,
    observation: RawObservation,
    unit: Option<String>,
    aggregate: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLabel {
    name: String,
    category: String,
    source: RawLabelSource,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RawLabelSource {
    Condition(RawConditionLabel),
    Medication(RawCodesWithin),
    Death(RawWithin),
    Patient(PatientField),
    Observation(RawObservationLabel),
    Survival(RawSurvival),
    FirstMatch(RawFirstMatch),
    Coded(RawCodedLabel),
    Bins(RawBinsLabel),
    Labels(Vec<RawLabelPart>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLabelPart {
    name: String,
    category: Option<String>,
    source: RawLabelSource,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFirstMatch {
    classes: Vec<RawLabelPart>,
    otherwise: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCodedClass {
    name: String,
    codes: Vec<RawCode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCodedLabel {
    observation: RawObservation,
    within: Option<String>,
    classes: Vec<RawCodedClass>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBin {
    name: String,
    below: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBinsLabel {
    observation: RawObservation,
    within: Option<String>,
    unit: Option<String>,
    classes: Vec<RawBin>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConditionLabel {
    system: Option<String>,
    code: Option<String>,
    codes: Option<Vec<RawCode>>,
    within: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCodesWithin {
    codes: Vec<RawCode>,
    within: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWithin {
    within: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObservationLabel {
    system: String,
    code: String,
    #[serde(default)]
    method: Option<CodeMatch>,
    within: String,
    aggregate: Option<String>,
    above: Option<f64>,
    below: Option<f64>,
    unit: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSurvival {
    event: RawSurvivalEvent,
    follow_up: String,
    censor_at: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RawSurvivalEvent {
    Death {},
    Condition { codes: Vec<RawCode> },
}

#[cfg(test)]
mod tests;
