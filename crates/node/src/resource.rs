//! The parts of FHIR R4 resources the node reads, as flat borrowed structs.
//!
//! One struct, [`Raw`], holds every field the node reads of Patient, Encounter, Observation,
//! Condition, MedicationRequest, MedicationStatement, Medication, Media and Binary (their
//! names and types agree across these resources; `Media.type` and `Media.bodySite` are not
//! read, as Encounter's `type` and Condition's `bodySite` are lists); everything else in a
//! resource is skipped unparsed. Strings borrow from the input line where they can. The full
//! `fhir-sdk` models allocate every element of a resource; reading a Bulk Data export through
//! them is several times slower (docs/benchmarks.md, "FHIR extraction").
use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;

/// Resource types the node reads.
pub const READ_TYPES: [&str; 9] = [
    "Patient",
    "Encounter",
    "Observation",
    "Condition",
    "MedicationRequest",
    "MedicationStatement",
    "Medication",
    "Media",
    "Binary",
];

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Raw<'a> {
    #[serde(borrow)]
    pub resource_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub meta: Option<Meta<'a>>,
    #[serde(borrow)]
    pub status: Option<Cow<'a, str>>,
    // Patient
    #[serde(borrow)]
    pub gender: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub birth_date: Option<Cow<'a, str>>,
    pub deceased_boolean: Option<bool>,
    #[serde(borrow)]
    pub deceased_date_time: Option<Cow<'a, str>>,
    // references to the patient
    #[serde(borrow)]
    pub subject: Option<Reference<'a>>,
    #[serde(borrow)]
    pub patient: Option<Reference<'a>>,
    #[serde(borrow)]
    pub code: Option<Concept<'a>>,
    // Observation
    #[serde(borrow)]
    pub method: Option<Concept<'a>>,
    #[serde(borrow)]
    pub value_quantity: Option<Quantity<'a>>,
    #[serde(borrow)]
    pub value_codeable_concept: Option<Concept<'a>>,
    pub value_boolean: Option<bool>,
    pub value_integer: Option<i64>,
    pub value_string: Option<IgnoredAny>,
    pub value_range: Option<IgnoredAny>,
    pub value_ratio: Option<IgnoredAny>,
    pub value_sampled_data: Option<IgnoredAny>,
    pub value_time: Option<IgnoredAny>,
    pub value_date_time: Option<IgnoredAny>,
    pub value_period: Option<IgnoredAny>,
    pub data_absent_reason: Option<IgnoredAny>,
    #[serde(borrow)]
    pub effective_date_time: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub effective_instant: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub effective_period: Option<Period<'a>>,
    #[serde(borrow)]
    pub issued: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub component: Option<Vec<Component<'a>>>,
    // Condition
    #[serde(borrow)]
    pub onset_date_time: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub onset_period: Option<Period<'a>>,
    #[serde(borrow)]
    pub recorded_date: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub verification_status: Option<Concept<'a>>,
    #[serde(borrow)]
    pub clinical_status: Option<Concept<'a>>,
    // Encounter
    #[serde(borrow)]
    pub class: Option<Coding<'a>>,
    #[serde(borrow)]
    pub period: Option<Period<'a>>,
    #[serde(borrow)]
    pub hospitalization: Option<Hospitalization<'a>>,
    // MedicationRequest / MedicationStatement
    #[serde(borrow)]
    pub medication_codeable_concept: Option<Concept<'a>>,
    #[serde(borrow)]
    pub medication_reference: Option<Reference<'a>>,
    #[serde(borrow)]
    pub authored_on: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub date_asserted: Option<Cow<'a, str>>,
    pub contained: Option<Vec<serde_json::Value>>,
    // Media
    #[serde(borrow)]
    pub modality: Option<Concept<'a>>,
    #[serde(borrow)]
    pub view: Option<Concept<'a>>,
    #[serde(borrow)]
    pub content: Option<Attachment<'a>>,
    #[serde(borrow)]
    pub created_date_time: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub created_period: Option<Period<'a>>,
    // Binary
    #[serde(borrow)]
    pub content_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub data: Option<Cow<'a, str>>,
}

/// An Attachment: inline base64 `data`, or a `url` (to a Binary of the same export).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment<'a> {
    #[serde(borrow)]
    pub content_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub data: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub url: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Meta<'a> {
    #[serde(borrow)]
    pub tag: Option<Vec<Coding<'a>>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Reference<'a> {
    #[serde(borrow)]
    pub reference: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Concept<'a> {
    #[serde(borrow)]
    pub coding: Option<Vec<Coding<'a>>>,
}

impl Concept<'_> {
    pub fn codings(&self) -> impl Iterator<Item = (Option<&str>, &str)> {
        self.coding
            .iter()
            .flatten()
            .filter_map(|c| Some((c.system.as_deref(), c.code.as_deref()?)))
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct Coding<'a> {
    #[serde(borrow)]
    pub system: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub code: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Quantity<'a> {
    pub value: Option<f64>,
    #[serde(borrow)]
    pub comparator: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub unit: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub system: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub code: Option<Cow<'a, str>>,
}

impl Quantity<'_> {
    /// The UCUM code when the quantity carries one, else whatever unit it names.
    pub fn unit(&self) -> Option<&str> {
        let ucum = self.system.as_deref() == Some(super::features::UCUM);
        match (&self.code, &self.unit) {
            (Some(c), _) if ucum => Some(c),
            (_, Some(u)) => Some(u),
            (Some(c), None) => Some(c),
            (None, None) => None,
        }
    }

    /// Whether [`Quantity::unit`] is display text: a `unit` without a UCUM `code` beside it,
    /// which the node can only read by its spelling.
    pub fn unit_is_text_only(&self) -> bool {
        let ucum = self.system.as_deref() == Some(super::features::UCUM);
        self.unit.is_some() && !(ucum && self.code.is_some())
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct Period<'a> {
    #[serde(borrow)]
    pub start: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub end: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hospitalization<'a> {
    #[serde(borrow)]
    pub discharge_disposition: Option<Concept<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Component<'a> {
    #[serde(borrow)]
    pub code: Option<Concept<'a>>,
    #[serde(borrow)]
    pub value_quantity: Option<Quantity<'a>>,
    #[serde(borrow)]
    pub value_codeable_concept: Option<Concept<'a>>,
    pub value_boolean: Option<bool>,
    pub value_integer: Option<i64>,
    pub value_string: Option<IgnoredAny>,
    pub value_range: Option<IgnoredAny>,
    pub value_ratio: Option<IgnoredAny>,
    pub value_sampled_data: Option<IgnoredAny>,
    pub value_time: Option<IgnoredAny>,
    pub value_date_time: Option<IgnoredAny>,
    pub value_period: Option<IgnoredAny>,
    pub data_absent_reason: Option<IgnoredAny>,
}

/// The `value[x]` of an Observation or a component.
pub enum ObsValue<'r, 'a> {
    Quantity(&'r Quantity<'a>),
    Concept(&'r Concept<'a>),
    Boolean(bool),
    Integer(i64),
    /// A type no transform reads.
    Other(&'static str),
    /// No value (absent, or a `dataAbsentReason`).
    Absent,
}

macro_rules! value_of {
    ($s:expr) => {{
        let s = $s;
        if let Some(q) = &s.value_quantity {
            ObsValue::Quantity(q)
        } else if let Some(c) = &s.value_codeable_concept {
            ObsValue::Concept(c)
        } else if let Some(b) = s.value_boolean {
            ObsValue::Boolean(b)
        } else if let Some(i) = s.value_integer {
            ObsValue::Integer(i)
        } else if s.value_string.is_some() {
            ObsValue::Other("string")
        } else if s.value_range.is_some() {
            ObsValue::Other("range")
        } else if s.value_ratio.is_some() {
            ObsValue::Other("ratio")
        } else if s.value_sampled_data.is_some() {
            ObsValue::Other("sampled data")
        } else if s.value_time.is_some() {
            ObsValue::Other("time")
        } else if s.value_date_time.is_some() {
            ObsValue::Other("dateTime")
        } else if s.value_period.is_some() {
            ObsValue::Other("period")
        } else {
            ObsValue::Absent
        }
    }};
}

impl<'a> Raw<'a> {
    pub fn value(&self) -> ObsValue<'_, 'a> {
        value_of!(self)
    }
}

impl<'a> Component<'a> {
    pub fn value(&self) -> ObsValue<'_, 'a> {
        value_of!(self)
    }
}

/// Only the type, to classify a line that does not parse as a resource the node reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeOnly {
    pub resource_type: Option<String>,
    pub id: Option<String>,
}
