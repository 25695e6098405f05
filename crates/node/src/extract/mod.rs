//! Turns the resources of a FHIR source into rows, as a [`FeatureSpec`] says.
//!
//! Reading keeps only what the specification can use (the [`Store`] is a [`Sink`]): every
//! Patient, every Encounter, and the Observations, Conditions and medications whose codes
//! the specification names, each reduced to (patient, what it matched, time, value) with
//! quantities already converted into the feature's unit. Memory therefore grows with the
//! cohort's matching records, not with the export. When everything is read, references are
//! resolved, each patient's events are sorted by time, and every row (one per patient or
//! per encounter) gets its index, passes the inclusion filters or is excluded with a reason,
//! and has its features aggregated over their windows, its time series binned, its image
//! decoded ([`super::image`]), and its label decided.
//!
//! Images: the Media whose `modality` (and `view`, when the specification names one) match
//! are kept undecoded, with their base64 `data` or the `url` of a Binary; Binaries are kept
//! while an image input is declared. A subject's image is its earliest Media by
//! `createdDateTime` (`createdPeriod.start`, else `issued`), undated ones after dated ones in
//! source order; only that one is decoded. A subject without one misses the input; one whose
//! image cannot be used is reported ([`IssueKind::Image`]) and dropped as incomplete, never
//! given another image instead.
//!
//! Undated records: an undated Condition or medication whose status says it is current (see
//! [`Place`]) counts as known at the index, unless its feature says `require_date`; every
//! other undated record counts only where no window applies. Nothing that matched a feature's,
//! label's or channel's codes is set aside silently: each such record is counted in
//! [`Report::matched`], and, when it does not count, in [`Report::ignored`] with the reason.
//! A record read by several rows (one per encounter) counts as used when any row used it.
//!
//! [`FeatureSpec`]: crate::FeatureSpec
//! [`Report::matched`]: crate::report::Report::matched
//! [`Report::ignored`]: crate::report::Report::ignored
//! [`IssueKind::Image`]: crate::report::IssueKind::Image
use std::collections::{HashMap, HashSet};

use super::cohort::{CodeSet, Instant};
use super::features::{Coding, Comparator, ImageSpec};
use super::reader::{At, Sink};
use super::report::Report;
use super::resource::Raw;
use super::units::Converter;
use super::{SourceError, Split};

mod candidates;
mod condition;
mod events;
mod label;
mod matchers;
mod media;
mod medication;
mod observation;
mod rows;
mod subjects;
#[cfg(test)]
mod third_party_tests;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Observation,
    Condition,
    Medication,
}

/// One thing the specification looks for in the records.
struct Matcher {
    name: String,
    family: Family,
    codes: CodeSet,
    method: Option<CodeSet>,
    converter: Option<Converter>,
    /// An undated record never counts (the source's `require_date`).
    require_date: bool,
}

/// What each part of the specification reads: indices into the matchers.
#[derive(Default)]
struct Slots {
    features: Vec<Option<usize>>,
    channels: Vec<usize>,
    /// One per label source: the label's, or each class's or label's of a multi-class or
    /// multi-label one (`None`: a source read from the Patient, such as death).
    label: Vec<Option<usize>>,
    index: Option<usize>,
    include: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
enum EvValue {
    None,
    Num(f64, Option<Comparator>),
    Int(i64),
    Bool(bool),
    Coded(u32),
    Other(&'static str),
}

/// Where an undated record stands relative to the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Its status says it holds (an active problem-list entry, an active, on-hold, completed
    /// or stopped prescription): known at the index.
    AtIndex,
    /// Its status says it no longer holds or never did (inactive, resolved, intended...).
    Inactive,
    /// No status to go by, or a date that does not parse.
    Unknown,
}

#[derive(Debug, Clone, Copy)]
struct Event {
    subject: u32,
    slot: u16,
    time: Option<Instant>,
    /// Read only when `time` is `None`.
    place: Place,
    value: EvValue,
    /// Its position once all events are sorted (its fate's index).
    n: u32,
}

struct PatientRec {
    id: String,
    split: Option<Split>,
    gender: Option<String>,
    birth: Option<Instant>,
    deceased: Option<bool>,
    deceased_at: Option<Instant>,
}

struct EncounterRec {
    id: Option<String>,
    subject: u32,
    class: Option<String>,
    start: Option<Instant>,
    end: Option<Instant>,
    expired: bool,
}

struct PendingMed {
    subject: u32,
    time: Option<Instant>,
    place: Place,
    /// Its status says it does not count (entered-in-error, cancelled...).
    void: bool,
    /// The reference as written.
    medication: String,
    at: (String, u64, Option<String>),
}

/// Where an image's bytes are.
enum MediaContent {
    /// Base64, inline.
    Data(String),
    /// A Binary of the export, by `Binary/<id>` or by its Bundle entry's `fullUrl`.
    Url(String),
    None,
}

/// A matching Media, kept undecoded until its subject's image is chosen.
struct MediaRec {
    subject: u32,
    time: Option<Instant>,
    content_type: Option<String>,
    content: MediaContent,
    at: (String, u64, Option<String>),
}

/// A Binary's content type and base64 data.
struct BinaryRec {
    content_type: Option<String>,
    data: Option<String>,
}

/// Where a subject reference was first met, to name it in the report.
struct RefInfo {
    text: String,
    uses: u64,
    first: (String, u64, Option<String>),
}

/// Everything kept while reading.
pub struct Store {
    matchers: Vec<Matcher>,
    slots: Slots,
    track_activity: bool,
    patients: Vec<PatientRec>,
    by_id: HashMap<String, u32>,
    by_url: HashMap<String, u32>,
    refs: HashMap<String, u32>,
    ref_info: Vec<RefInfo>,
    activity: Vec<Instant>,
    encounters: Vec<EncounterRec>,
    events: Vec<Event>,
    coded: Vec<Vec<Coding>>,
    medications: HashMap<String, Vec<(Option<String>, String)>>,
    pending: Vec<PendingMed>,
    seen: HashSet<u64>,
    fatal: Option<SourceError>,
    /// The specification's image input (after the holder's code map).
    image: Option<ImageSpec>,
    media: Vec<MediaRec>,
    /// Binaries by `Binary/<id>`; `binary_urls` maps Bundle `fullUrl`s to those keys.
    binaries: HashMap<String, BinaryRec>,
    binary_urls: HashMap<String, String>,
    /// Per patient, its image: an index into `media` (set once everything is read).
    first_image: HashMap<u32, usize>,
}

impl Sink for Store {
    fn resource(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        if self.fatal.is_some() {
            return;
        }
        match r.resource_type.as_deref() {
            Some("Patient") => self.patient(at, r, report),
            Some("Encounter") => self.encounter(at, r, report),
            Some("Observation") => self.observation(at, r, report),
            Some("Condition") => self.condition(at, r, report),
            Some("MedicationRequest" | "MedicationStatement") => self.medication_use(at, r, report),
            Some("Medication") => self.medication(at, r),
            Some("Media") => self.media(at, r, report),
            Some("Binary") => self.binary(at, r, report),
            _ => {}
        }
    }
}
