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
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use super::cohort::{parse_instant, CodeSet, IndexEvent, Instant, Window};
use super::features::{
    Aggregate, Coding, Comparator, Feature, FeatureSpec, ImageSpec, LabelSource, ObservationSource,
    PatientField, Quantity, SeriesSpec, Source, SurvivalEvent, Value,
};
use super::image::ImageError;
use super::reader::{At, Sink};
use super::report::{Issue, IssueKind, Report, UnitStats};
use super::resource::{Concept, ObsValue, Raw};
use super::units::{Converted, Converter};
use super::{Series, SiteRows, SourceError, Split, SubjectRow, SPLIT_TAG_SYSTEM};

const GENDER_SYSTEM: &str = "http://hl7.org/fhir/administrative-gender";
const DISCHARGE_SYSTEM: &str = "http://terminology.hl7.org/CodeSystem/discharge-disposition";

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

#[derive(Debug, Clone, Copy)]
struct Event {
    subject: u32,
    slot: u16,
    time: Option<Instant>,
    value: EvValue,
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

fn id_hash(ty: &str, id: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ty.hash(&mut h);
    id.hash(&mut h);
    h.finish()
}

fn observation_matcher(
    name: &str,
    o: &ObservationSource,
    unit: Option<&str>,
    aliases: &[(String, String)],
) -> Matcher {
    Matcher {
        name: name.to_owned(),
        family: Family::Observation,
        codes: o.codes.clone(),
        method: o.method.clone(),
        converter: Some(Converter::new(unit, o.loinc(), aliases)),
    }
}

fn code_matcher(name: &str, family: Family, codes: &CodeSet) -> Matcher {
    Matcher {
        name: name.to_owned(),
        family,
        codes: codes.clone(),
        method: None,
        converter: None,
    }
}

impl Store {
    /// A store for `features` (the study's and any site-private ones) of `spec`.
    pub fn new(spec: &FeatureSpec, features: &[Feature], aliases: &[(String, String)]) -> Self {
        let mut m = Vec::new();
        let mut slots = Slots::default();
        for f in features {
            let slot = match &f.source {
                Source::Observation(o) => {
                    m.push(observation_matcher(&f.name, o, f.transform.unit(), aliases));
                    Some(m.len() - 1)
                }
                Source::Condition { codes, .. } => {
                    m.push(code_matcher(&f.name, Family::Condition, codes));
                    Some(m.len() - 1)
                }
                Source::Medication { codes, .. } => {
                    m.push(code_matcher(&f.name, Family::Medication, codes));
                    Some(m.len() - 1)
                }
                Source::Patient(_) => None,
            };
            slots.features.push(slot);
        }
        for c in spec.series.iter().flat_map(|s| &s.channels) {
            m.push(observation_matcher(
                &c.name,
                &c.source,
                c.unit.as_deref(),
                aliases,
            ));
            slots.channels.push(m.len() - 1);
        }
        let label = &spec.label;
        let sources: Vec<(String, &LabelSource)> = match &label.source {
            LabelSource::FirstMatch { classes: parts, .. } | LabelSource::Labels(parts) => parts
                .iter()
                .map(|p| (format!("{}/{}", label.name, p.name), &p.source))
                .collect(),
            s => vec![(label.name.clone(), s)],
        };
        for (name, source) in sources {
            let matcher = match source {
                LabelSource::Condition { codes, .. }
                | LabelSource::Survival {
                    event: SurvivalEvent::Condition(codes),
                    ..
                } => Some(code_matcher(&name, Family::Condition, codes)),
                LabelSource::Medication { codes, .. } => {
                    Some(code_matcher(&name, Family::Medication, codes))
                }
                LabelSource::Observation { source, unit, .. }
                | LabelSource::Bins { source, unit, .. } => {
                    Some(observation_matcher(&name, source, unit.as_deref(), aliases))
                }
                LabelSource::Coded { source, .. } => {
                    Some(observation_matcher(&name, source, None, aliases))
                }
                _ => None,
            };
            slots.label.push(matcher.map(|lm| {
                m.push(lm);
                m.len() - 1
            }));
        }
        if let IndexEvent::FirstCondition(codes) = &spec.cohort.index {
            m.push(code_matcher("cohort index", Family::Condition, codes));
            slots.index = Some(m.len() - 1);
        }
        if let Some((codes, _)) = &spec.cohort.include.condition {
            m.push(code_matcher("cohort inclusion", Family::Condition, codes));
            slots.include = Some(m.len() - 1);
        }
        let track_activity = matches!(
            label.source,
            LabelSource::Survival {
                censor_at: None,
                ..
            }
        );
        Self {
            matchers: m,
            slots,
            track_activity,
            patients: Vec::new(),
            by_id: HashMap::new(),
            by_url: HashMap::new(),
            refs: HashMap::new(),
            ref_info: Vec::new(),
            activity: Vec::new(),
            encounters: Vec::new(),
            events: Vec::new(),
            coded: Vec::new(),
            medications: HashMap::new(),
            pending: Vec::new(),
            seen: HashSet::new(),
            fatal: None,
            image: spec.image.clone(),
            media: Vec::new(),
            binaries: HashMap::new(),
            binary_urls: HashMap::new(),
            first_image: HashMap::new(),
        }
    }

    fn wants(&self, family: Family) -> bool {
        self.matchers.iter().any(|m| m.family == family)
    }

    fn subject(
        &mut self,
        at: &At<'_>,
        r: &Raw<'_>,
        rid: &Option<String>,
        report: &mut Report,
    ) -> Option<u32> {
        let reference = r
            .subject
            .as_ref()
            .or(r.patient.as_ref())
            .and_then(|s| s.reference.as_deref());
        let Some(reference) = reference else {
            report.issue(at.issue(
                IssueKind::NoSubject,
                rid.clone(),
                "no subject reference".into(),
            ));
            return None;
        };
        let n = match self.refs.get(reference) {
            Some(n) => *n,
            None => {
                let n = self.ref_info.len() as u32;
                self.refs.insert(reference.to_owned(), n);
                self.ref_info.push(RefInfo {
                    text: reference.to_owned(),
                    uses: 0,
                    first: (at.file.to_owned(), at.line, rid.clone()),
                });
                if self.track_activity {
                    self.activity.push(Instant::MIN);
                }
                n
            }
        };
        self.ref_info[n as usize].uses += 1;
        Some(n)
    }

    fn time(
        at: &At<'_>,
        field: &str,
        text: Option<&str>,
        rid: &Option<String>,
        report: &mut Report,
    ) -> Option<Instant> {
        let text = text?;
        let t = parse_instant(text);
        if t.is_none() {
            report.issue(at.issue(
                IssueKind::BadDate,
                rid.clone(),
                format!("{field} `{text}` is not a FHIR date or dateTime"),
            ));
        }
        t
    }

    fn duplicate(&mut self, at: &At<'_>, ty: &str, id: Option<&str>, report: &mut Report) -> bool {
        let Some(id) = id else { return false };
        if self.seen.insert(id_hash(ty, id)) {
            return false;
        }
        report.issue(at.issue(
            IssueKind::DuplicateId,
            Some(format!("{ty}/{id}")),
            "the same id was read before; this copy is skipped".into(),
        ));
        true
    }

    fn patient(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        let Some(id) = r.id.as_deref() else {
            report.issue(at.issue(IssueKind::MissingId, None, "Patient without an id".into()));
            return;
        };
        if self.by_id.contains_key(id) {
            self.fatal = Some(SourceError::DuplicatePatient {
                id: id.to_owned(),
                file: at.file.to_owned(),
                line: at.line,
            });
            return;
        }
        let rid = Some(format!("Patient/{id}"));
        let mut split = None;
        for tag in r.meta.iter().flat_map(|m| m.tag.iter().flatten()) {
            if tag.system.as_deref() == Some(SPLIT_TAG_SYSTEM) {
                let code = tag.code.as_deref().unwrap_or_default();
                match Split::parse(code) {
                    Some(s) => split = Some(s),
                    None => {
                        self.fatal = Some(SourceError::BadSplitTag {
                            patient: id.to_owned(),
                            code: code.to_owned(),
                        });
                        return;
                    }
                }
            }
        }
        let n = self.patients.len() as u32;
        self.by_id.insert(id.to_owned(), n);
        if let Some(u) = at.full_url {
            self.by_url.insert(u.to_owned(), n);
        }
        self.patients.push(PatientRec {
            id: id.to_owned(),
            split,
            gender: r.gender.as_deref().map(str::to_owned),
            birth: Self::time(&at, "birthDate", r.birth_date.as_deref(), &rid, report),
            deceased: r
                .deceased_boolean
                .or(r.deceased_date_time.as_ref().map(|_| true)),
            deceased_at: Self::time(
                &at,
                "deceasedDateTime",
                r.deceased_date_time.as_deref(),
                &rid,
                report,
            ),
        });
    }

    fn encounter(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        if matches!(r.status.as_deref(), Some("cancelled" | "entered-in-error")) {
            return;
        }
        let rid = r.id.as_deref().map(|i| format!("Encounter/{i}"));
        if self.duplicate(&at, "Encounter", r.id.as_deref(), report) {
            return;
        }
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return;
        };
        let period = r.period.as_ref();
        let start = Self::time(
            &at,
            "period.start",
            period.and_then(|p| p.start.as_deref()),
            &rid,
            report,
        );
        let end = Self::time(
            &at,
            "period.end",
            period.and_then(|p| p.end.as_deref()),
            &rid,
            report,
        );
        let expired = r
            .hospitalization
            .as_ref()
            .and_then(|h| h.discharge_disposition.as_ref())
            .is_some_and(|d| {
                d.codings()
                    .any(|(s, c)| s == Some(DISCHARGE_SYSTEM) && c == "exp")
            });
        self.touch(subject, end.or(start));
        self.encounters.push(EncounterRec {
            id: r.id.as_deref().map(str::to_owned),
            subject,
            class: r
                .class
                .as_ref()
                .and_then(|c| c.code.as_deref())
                .map(str::to_owned),
            start,
            end,
            expired,
        });
    }

    fn touch(&mut self, subject: u32, t: Option<Instant>) {
        if let (true, Some(t)) = (self.track_activity, t) {
            let a = &mut self.activity[subject as usize];
            *a = (*a).max(t);
        }
    }

    fn matching(
        &self,
        family: Family,
        concept: Option<&Concept<'_>>,
        method: Option<&Concept<'_>>,
    ) -> Vec<usize> {
        let Some(concept) = concept else {
            return vec![];
        };
        let mut out = Vec::new();
        for (i, m) in self.matchers.iter().enumerate() {
            if m.family != family || !concept.codings().any(|(s, c)| m.codes.matches(s, c)) {
                continue;
            }
            let method_ok = m.method.as_ref().is_none_or(|ms| {
                method.is_some_and(|mc| mc.codings().any(|(s, c)| ms.matches(s, c)))
            });
            if method_ok {
                out.push(i);
            }
        }
        out
    }

    fn value(
        &mut self,
        slot: usize,
        v: ObsValue<'_, '_>,
        at: &At<'_>,
        rid: &Option<String>,
        report: &mut Report,
    ) -> Option<EvValue> {
        Some(match v {
            ObsValue::Quantity(q) => {
                let Some(value) = q.value else {
                    return Some(EvValue::None);
                };
                let cmp = match q.comparator.as_deref() {
                    None => None,
                    Some(c) => match Comparator::parse(c) {
                        Some(c) => Some(c),
                        None => {
                            report.issue(at.issue(
                                IssueKind::InvalidResource,
                                rid.clone(),
                                format!("comparator `{c}`"),
                            ));
                            return None;
                        }
                    },
                };
                let m = &mut self.matchers[slot];
                let unit = q.unit();
                let stats = report
                    .units
                    .entry(m.name.clone())
                    .or_insert_with(|| UnitStats {
                        target: m
                            .converter
                            .as_ref()
                            .and_then(|c| c.target().map(str::to_owned)),
                        ..UnitStats::default()
                    });
                *stats
                    .found
                    .entry(unit.unwrap_or("(none)").to_owned())
                    .or_default() += 1;
                match m.converter.as_mut().map(|c| c.convert(value, unit)) {
                    None => EvValue::Num(value, cmp),
                    Some(Converted::Value { value, converted }) => {
                        stats.converted += u64::from(converted);
                        EvValue::Num(value, cmp)
                    }
                    Some(Converted::Refused(why)) => {
                        stats.refused += 1;
                        report.issue(at.issue(
                            IssueKind::Unit,
                            rid.clone(),
                            format!("{}: {why}", m.name),
                        ));
                        return None;
                    }
                }
            }
            ObsValue::Concept(c) => {
                self.coded.push(
                    c.codings()
                        .map(|(s, code)| Coding {
                            system: s.map(str::to_owned),
                            code: code.to_owned(),
                        })
                        .collect(),
                );
                EvValue::Coded(self.coded.len() as u32 - 1)
            }
            ObsValue::Boolean(b) => EvValue::Bool(b),
            ObsValue::Integer(i) => EvValue::Int(i),
            ObsValue::Other(k) => EvValue::Other(k),
            ObsValue::Absent => EvValue::None,
        })
    }

    fn observation(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        if matches!(r.status.as_deref(), Some("entered-in-error" | "cancelled")) {
            return;
        }
        let top = self.matching(Family::Observation, r.code.as_ref(), r.method.as_ref());
        let parts: Vec<(usize, Vec<usize>)> = r
            .component
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, c)| {
                (
                    i,
                    self.matching(Family::Observation, c.code.as_ref(), r.method.as_ref()),
                )
            })
            .filter(|(_, m)| !m.is_empty())
            .collect();
        if top.is_empty() && parts.is_empty() {
            if self.track_activity {
                self.activity_of(&at, r, report);
            }
            return;
        }
        let rid = r.id.as_deref().map(|i| format!("Observation/{i}"));
        if self.duplicate(&at, "Observation", r.id.as_deref(), report) {
            return;
        }
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return;
        };
        let when = r
            .effective_date_time
            .as_deref()
            .or(r.effective_instant.as_deref())
            .or(r.effective_period.as_ref().and_then(|p| p.start.as_deref()))
            .or(r.issued.as_deref());
        let time = Self::time(&at, "effective[x]", when, &rid, report);
        self.touch(subject, time);
        let push = |store: &mut Self, slot: usize, v: ObsValue<'_, '_>, report: &mut Report| {
            if matches!(v, ObsValue::Absent) {
                report.issue(at.issue(
                    IssueKind::NoValue,
                    rid.clone(),
                    format!("{}: no value", store.matchers[slot].name),
                ));
            }
            if let Some(value) = store.value(slot, v, &at, &rid, report) {
                store.events.push(Event {
                    subject,
                    slot: slot as u16,
                    time,
                    value,
                });
            }
        };
        for slot in top {
            push(self, slot, r.value(), report);
        }
        let components: Vec<_> = r.component.iter().flatten().collect();
        for (i, slots) in parts {
            for slot in slots {
                push(self, slot, components[i].value(), report);
            }
        }
    }

    fn activity_of(&mut self, at: &At<'_>, r: &Raw<'_>, report: &mut Report) {
        let reference = r.subject.as_ref().and_then(|s| s.reference.as_deref());
        if let Some(n) = reference.and_then(|s| self.refs.get(s)).copied() {
            let when = r.effective_date_time.as_deref().or(r.issued.as_deref());
            let t = Self::time(at, "effective[x]", when, &None, report);
            self.touch(n, t);
        }
    }

    fn condition(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        let void = r.verification_status.as_ref().is_some_and(|v| {
            v.codings()
                .any(|(_, c)| matches!(c, "refuted" | "entered-in-error"))
        });
        if void {
            return;
        }
        let slots = self.matching(Family::Condition, r.code.as_ref(), None);
        if slots.is_empty() {
            return;
        }
        let rid = r.id.as_deref().map(|i| format!("Condition/{i}"));
        if self.duplicate(&at, "Condition", r.id.as_deref(), report) {
            return;
        }
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return;
        };
        let when = r
            .onset_date_time
            .as_deref()
            .or(r.onset_period.as_ref().and_then(|p| p.start.as_deref()))
            .or(r.recorded_date.as_deref());
        let time = Self::time(&at, "onset[x]", when, &rid, report);
        self.touch(subject, time);
        for slot in slots {
            self.events.push(Event {
                subject,
                slot: slot as u16,
                time,
                value: EvValue::None,
            });
        }
    }

    fn medication_use(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        let ty = r.resource_type.as_deref().unwrap_or_default();
        let skip = match ty {
            "MedicationRequest" => {
                matches!(r.status.as_deref(), Some("entered-in-error" | "cancelled"))
            }
            _ => matches!(r.status.as_deref(), Some("entered-in-error" | "not-taken")),
        };
        if skip || !self.wants(Family::Medication) {
            return;
        }
        let rid = r.id.as_deref().map(|i| format!("{ty}/{i}"));
        let when = if ty == "MedicationRequest" {
            r.authored_on.as_deref()
        } else {
            r.effective_date_time
                .as_deref()
                .or(r.effective_period.as_ref().and_then(|p| p.start.as_deref()))
                .or(r.date_asserted.as_deref())
        };
        // the codes: inline, from a contained Medication, or from a Medication resource
        let reference = r
            .medication_reference
            .as_ref()
            .and_then(|m| m.reference.as_deref());
        let contained_codes = reference
            .and_then(|m| m.strip_prefix('#'))
            .and_then(|local| {
                r.contained.iter().flatten().find(|c| {
                    c.get("resourceType").and_then(|t| t.as_str()) == Some("Medication")
                        && c.get("id").and_then(|i| i.as_str()) == Some(local)
                })
            });
        let contained: Option<Concept<'_>> = contained_codes
            .and_then(|c| c.get("code"))
            .and_then(|c| serde::Deserialize::deserialize(c).ok());
        let concept = r
            .medication_codeable_concept
            .as_ref()
            .or(contained.as_ref());
        let slots = self.matching(Family::Medication, concept, None);
        let external = concept.is_none() && reference.is_some_and(|m| !m.starts_with('#'));
        if slots.is_empty() && !external {
            return;
        }
        if self.duplicate(&at, ty, r.id.as_deref(), report) {
            return;
        }
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return;
        };
        let time = Self::time(&at, "date", when, &rid, report);
        self.touch(subject, time);
        if external {
            let medication = reference.unwrap_or_default();
            let medication = medication
                .rsplit('/')
                .next()
                .unwrap_or(medication)
                .to_owned();
            self.pending.push(PendingMed {
                subject,
                time,
                medication,
                at: (at.file.to_owned(), at.line, rid),
            });
            return;
        }
        for slot in slots {
            self.events.push(Event {
                subject,
                slot: slot as u16,
                time,
                value: EvValue::None,
            });
        }
    }

    fn media(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        let Some(image) = &self.image else { return };
        if matches!(r.status.as_deref(), Some("entered-in-error" | "not-done")) {
            return;
        }
        let matches = |codes: &CodeSet, concept: Option<&Concept<'_>>| {
            concept.is_some_and(|c| c.codings().any(|(s, code)| codes.matches(s, code)))
        };
        let wanted = matches(&image.modality, r.modality.as_ref())
            && image
                .view
                .as_ref()
                .is_none_or(|v| matches(v, r.view.as_ref()));
        if !wanted {
            return;
        }
        let rid = r.id.as_deref().map(|i| format!("Media/{i}"));
        if self.duplicate(&at, "Media", r.id.as_deref(), report) {
            return;
        }
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return;
        };
        let when = r
            .created_date_time
            .as_deref()
            .or(r.created_period.as_ref().and_then(|p| p.start.as_deref()))
            .or(r.issued.as_deref());
        let time = Self::time(&at, "created[x]", when, &rid, report);
        self.touch(subject, time);
        let content = r.content.as_ref();
        self.media.push(MediaRec {
            subject,
            time,
            content_type: content
                .and_then(|c| c.content_type.as_deref())
                .map(str::to_owned),
            content: match content {
                Some(c) if c.data.is_some() => {
                    MediaContent::Data(c.data.as_deref().unwrap_or_default().to_owned())
                }
                Some(c) if c.url.is_some() => {
                    MediaContent::Url(c.url.as_deref().unwrap_or_default().to_owned())
                }
                _ => MediaContent::None,
            },
            at: (at.file.to_owned(), at.line, rid),
        });
    }

    fn binary(&mut self, at: At<'_>, r: &Raw<'_>) {
        if self.image.is_none() {
            return;
        }
        let Some(id) = r.id.as_deref() else { return };
        let key = format!("Binary/{id}");
        if let Some(u) = at.full_url {
            self.binary_urls.insert(u.to_owned(), key.clone());
        }
        self.binaries.insert(
            key,
            BinaryRec {
                content_type: r.content_type.as_deref().map(str::to_owned),
                data: r.data.as_deref().map(str::to_owned),
            },
        );
    }

    /// The subject's image, decoded; `Ok(None)` when it has none, else the Media (an index
    /// into `media`) and why it cannot be used.
    fn image_of(
        &self,
        patient: u32,
        spec: &ImageSpec,
    ) -> Result<Option<Vec<f32>>, (usize, ImageError)> {
        let Some(&k) = self.first_image.get(&patient) else {
            return Ok(None);
        };
        let m = &self.media[k];
        let (content_type, data) = match &m.content {
            MediaContent::Data(d) => (m.content_type.as_deref(), d.as_str()),
            MediaContent::Url(u) => {
                // a Bundle entry's fullUrl, or a relative or absolute `Binary/<id>`
                let plain = u.split("/_history/").next().unwrap_or(u.as_str());
                let key = match self.binary_urls.get(u) {
                    Some(k) => k.clone(),
                    None => match plain.rsplit_once("/Binary/") {
                        Some((_, id)) => format!("Binary/{id}"),
                        None => plain.to_owned(),
                    },
                };
                let Some(b) = self.binaries.get(&key) else {
                    return Err((k, ImageError::UnresolvedBinary(u.clone())));
                };
                let Some(d) = &b.data else {
                    return Err((k, ImageError::NoContent));
                };
                // the attachment's type, else the Binary's own
                (
                    m.content_type.as_deref().or(b.content_type.as_deref()),
                    d.as_str(),
                )
            }
            MediaContent::None => return Err((k, ImageError::NoContent)),
        };
        let bytes = super::image::base64_bytes(data).map_err(|e| (k, e))?;
        super::image::decode(content_type, &bytes, spec)
            .map(Some)
            .map_err(|e| (k, e))
    }

    fn medication(&mut self, r: &Raw<'_>) {
        if !self.wants(Family::Medication) {
            return;
        }
        if let (Some(id), Some(code)) = (r.id.as_deref(), r.code.as_ref()) {
            self.medications.insert(
                id.to_owned(),
                code.codings()
                    .map(|(s, c)| (s.map(str::to_owned), c.to_owned()))
                    .collect(),
            );
        }
    }
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
            Some("Medication") => self.medication(r),
            Some("Media") => self.media(at, r, report),
            Some("Binary") => self.binary(at, r),
            _ => {}
        }
    }
}

/// One candidate row: a patient, maybe one of its encounters, and the index.
struct Candidate {
    patient: u32,
    encounter: Option<usize>,
    index: Option<Instant>,
}

/// A patient's events, sorted by (slot, time).
struct Events<'e> {
    all: &'e [Event],
}

impl<'e> Events<'e> {
    fn of(&self, slot: usize) -> &'e [Event] {
        let s = slot as u16;
        let lo = self.all.partition_point(|e| e.slot < s);
        let hi = self.all.partition_point(|e| e.slot <= s);
        &self.all[lo..hi]
    }
}

fn selected(evs: &[Event], window: Option<Window>, index: Option<Instant>) -> (Vec<&Event>, u64) {
    match (window, index) {
        (Some(w), Some(i)) => {
            let undated = evs.iter().filter(|e| e.time.is_none()).count() as u64;
            (
                evs.iter()
                    .filter(|e| e.time.is_some_and(|t| w.contains(i, t)))
                    .collect(),
                undated,
            )
        }
        _ => (evs.iter().collect(), 0),
    }
}

fn number(v: &EvValue) -> Option<f64> {
    match v {
        EvValue::Num(x, None) => Some(*x),
        EvValue::Int(i) => Some(*i as f64),
        _ => None,
    }
}

impl Store {
    fn to_value(&self, v: &EvValue, unit: Option<&str>) -> Option<Value> {
        Some(match v {
            EvValue::None => return None,
            EvValue::Num(x, c) => Value::Quantity(Quantity {
                value: *x,
                comparator: *c,
                unit: unit.map(str::to_owned),
            }),
            EvValue::Int(i) => Value::Integer(*i),
            EvValue::Bool(b) => Value::Boolean(*b),
            EvValue::Coded(i) => Value::Coded(self.coded[*i as usize].clone()),
            EvValue::Other(k) => Value::Other(k),
        })
    }

    fn aggregate(&self, sel: &[&Event], agg: Aggregate, unit: Option<&str>) -> Option<Value> {
        let quantity = |x: f64| {
            Value::Quantity(Quantity {
                value: x,
                comparator: None,
                unit: unit.map(str::to_owned),
            })
        };
        let nums = || sel.iter().filter_map(|e| number(&e.value));
        match agg {
            Aggregate::Latest => sel.iter().rev().find_map(|e| self.to_value(&e.value, unit)),
            Aggregate::First => sel.iter().find_map(|e| self.to_value(&e.value, unit)),
            Aggregate::Count => Some(Value::Integer(sel.len() as i64)),
            Aggregate::Mean => {
                let (s, n) = nums().fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
                (n > 0).then(|| quantity(s / n as f64))
            }
            Aggregate::Min => nums().reduce(f64::min).map(quantity),
            Aggregate::Max => nums().reduce(f64::max).map(quantity),
            Aggregate::Slope => {
                let pts: Vec<(f64, f64)> = sel
                    .iter()
                    .filter_map(|e| Some((e.time? as f64 / 3600.0, number(&e.value)?)))
                    .collect();
                let n = pts.len() as f64;
                if pts.len() < 2 {
                    return None;
                }
                let (mt, mv) = pts
                    .iter()
                    .fold((0.0, 0.0), |(a, b), (t, v)| (a + t / n, b + v / n));
                let sxx: f64 = pts.iter().map(|(t, _)| (t - mt).powi(2)).sum();
                let sxy: f64 = pts.iter().map(|(t, v)| (t - mt) * (v - mv)).sum();
                (sxx > 0.0).then(|| quantity(sxy / sxx))
            }
        }
    }

    /// Read everything, then build the rows. `private` are the holder's site-private
    /// features, extracted after the study's.
    pub fn into_rows(
        mut self,
        spec: &FeatureSpec,
        features: &[Feature],
        n_private: usize,
        mut report: Report,
    ) -> Result<SiteRows, SourceError> {
        if let Some(e) = self.fatal.take() {
            return Err(e);
        }
        // subject references -> patients
        let resolve = |s: &str| -> Option<u32> {
            self.by_url.get(s).copied().or_else(|| {
                let s = s.split("/_history/").next().unwrap_or(s);
                let id = s
                    .strip_prefix("Patient/")
                    .or_else(|| s.rsplit_once("/Patient/").map(|(_, id)| id))?;
                self.by_id.get(id).copied()
            })
        };
        let patient_of: Vec<Option<u32>> = self.ref_info.iter().map(|r| resolve(&r.text)).collect();
        for (info, p) in self.ref_info.iter().zip(&patient_of) {
            if p.is_none() {
                report.issue(Issue {
                    kind: IssueKind::UnresolvedSubject,
                    file: Some(info.first.0.clone()),
                    line: Some(info.first.1),
                    resource: info.first.2.clone(),
                    detail: format!(
                        "subject {:?} names no Patient in the export ({} resources refer to it; skipped)",
                        info.text, info.uses
                    ),
                });
            }
        }
        // medications by reference
        for p in std::mem::take(&mut self.pending) {
            let Some(codes) = self.medications.get(&p.medication) else {
                report.issue(Issue {
                    kind: IssueKind::UnresolvedMedication,
                    file: Some(p.at.0),
                    line: Some(p.at.1),
                    resource: p.at.2,
                    detail: format!("Medication/{} is not in the export", p.medication),
                });
                continue;
            };
            for (i, m) in self.matchers.iter().enumerate() {
                if m.family == Family::Medication
                    && codes.iter().any(|(s, c)| m.codes.matches(s.as_deref(), c))
                {
                    self.events.push(Event {
                        subject: p.subject,
                        slot: i as u16,
                        time: p.time,
                        value: EvValue::None,
                    });
                }
            }
        }
        // events per patient, in (slot, time) order; the sort is stable, so events of
        // equal time stay in source order
        let mut events = std::mem::take(&mut self.events);
        events.retain_mut(|e| match patient_of[e.subject as usize] {
            Some(p) => {
                e.subject = p;
                true
            }
            None => false,
        });
        events.sort_by_key(|e| (e.subject, e.slot, e.time));
        // each patient's image: its earliest dated Media, else its first undated one
        for (k, m) in self.media.iter().enumerate() {
            let Some(p) = patient_of[m.subject as usize] else {
                continue;
            };
            let key = |m: &MediaRec| (m.time.is_none(), m.time);
            match self.first_image.get(&p) {
                Some(&j) if key(&self.media[j]) <= key(m) => {}
                _ => {
                    self.first_image.insert(p, k);
                }
            }
        }
        let mut encounters: Vec<(u32, usize)> = self
            .encounters
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((patient_of[e.subject as usize]?, i)))
            .collect();
        encounters.sort_by_key(|&(p, i)| (p, self.encounters[i].start, i));
        let activity: Vec<Instant> = if self.track_activity {
            let mut a = vec![Instant::MIN; self.patients.len()];
            for (r, p) in patient_of.iter().enumerate() {
                if let Some(p) = p {
                    a[*p as usize] = a[*p as usize].max(self.activity[r]);
                }
            }
            a
        } else {
            vec![]
        };

        let n_shared = features.len() - n_private;
        let columns: Vec<String> = features[..n_shared]
            .iter()
            .flat_map(Feature::columns)
            .collect();
        let private_columns: Vec<String> = features[n_shared..]
            .iter()
            .flat_map(Feature::columns)
            .collect();
        let mut out = SiteRows {
            columns,
            private_columns,
            imputation: features[..n_shared].iter().flat_map(imputation).collect(),
            private_imputation: features[n_shared..].iter().flat_map(imputation).collect(),
            task: spec.task(),
            series: spec.series.as_ref().map(|s| super::SeriesShape {
                steps: s.steps(),
                channels: s.channel_names(),
            }),
            image_len: spec.image.as_ref().map_or(0, ImageSpec::len),
            ..SiteRows::default()
        };

        let mut ev_lo = 0;
        let mut enc_lo = 0;
        for p in 0..self.patients.len() as u32 {
            let ev_hi = ev_lo + events[ev_lo..].partition_point(|e| e.subject == p);
            let evs = Events {
                all: &events[ev_lo..ev_hi],
            };
            ev_lo = ev_hi;
            let enc_hi = enc_lo + encounters[enc_lo..].partition_point(|e| e.0 == p);
            let encs: Vec<usize> = encounters[enc_lo..enc_hi].iter().map(|e| e.1).collect();
            enc_lo = enc_hi;
            for c in self.candidates(spec, p, &evs, &encs, &mut report) {
                let last = activity.get(p as usize).copied();
                self.row(
                    spec,
                    features,
                    n_shared,
                    &c,
                    &evs,
                    &encs,
                    last,
                    &mut out,
                    &mut report,
                );
            }
        }
        out.report = report;
        Ok(out)
    }

    fn candidates(
        &self,
        spec: &FeatureSpec,
        p: u32,
        evs: &Events<'_>,
        encs: &[usize],
        report: &mut Report,
    ) -> Vec<Candidate> {
        let one = |index| {
            vec![Candidate {
                patient: p,
                encounter: None,
                index,
            }]
        };
        match (&spec.cohort.index, spec.cohort.unit) {
            (IndexEvent::None, _) => one(None),
            (IndexEvent::Date(d), _) => one(Some(*d)),
            (IndexEvent::FirstCondition(_), _) => {
                let slot = self.slots.index.expect("index matcher");
                match evs.of(slot).iter().find_map(|e| e.time) {
                    Some(t) => one(Some(t)),
                    None => {
                        report.exclude("no qualifying condition for the index");
                        vec![]
                    }
                }
            }
            (IndexEvent::FirstEncounter(classes), _) => {
                let first = encs.iter().find_map(|&i| {
                    let e = &self.encounters[i];
                    let ok =
                        classes.is_empty() || e.class.as_ref().is_some_and(|c| classes.contains(c));
                    ok.then_some(e.start).flatten()
                });
                match first {
                    Some(t) => one(Some(t)),
                    None => {
                        report.exclude("no qualifying encounter for the index");
                        vec![]
                    }
                }
            }
            (IndexEvent::Admission | IndexEvent::Discharge, _) => encs
                .iter()
                .filter_map(|&i| {
                    let e = &self.encounters[i];
                    let index = if spec.cohort.index == IndexEvent::Admission {
                        e.start
                    } else {
                        e.end
                    };
                    if index.is_none() {
                        report.exclude(if spec.cohort.index == IndexEvent::Admission {
                            "encounter without a start"
                        } else {
                            "encounter without an end"
                        });
                        return None;
                    }
                    Some(Candidate {
                        patient: p,
                        encounter: Some(i),
                        index,
                    })
                })
                .collect(),
        }
    }

    /// When the patient died: `deceasedDateTime`, else the end of an encounter whose
    /// discharge disposition is `exp`; `Err` when the record says deceased without a date.
    fn death_time(&self, pat: &PatientRec, encs: &[usize]) -> Result<Option<Instant>, ()> {
        if let Some(t) = pat.deceased_at {
            return Ok(Some(t));
        }
        let expired = encs
            .iter()
            .map(|&i| &self.encounters[i])
            .filter(|e| e.expired)
            .filter_map(|e| e.end)
            .min();
        match (expired, pat.deceased) {
            (Some(t), _) => Ok(Some(t)),
            (None, Some(true)) => Err(()),
            _ => Ok(None),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn row(
        &self,
        spec: &FeatureSpec,
        features: &[Feature],
        n_shared: usize,
        c: &Candidate,
        evs: &Events<'_>,
        encs: &[usize],
        last_activity: Option<Instant>,
        out: &mut SiteRows,
        report: &mut Report,
    ) {
        let pat = &self.patients[c.patient as usize];
        let enc = c.encounter.map(|i| &self.encounters[i]);
        let inc = &spec.cohort.include;
        let death = self.death_time(pat, encs);
        if let (Some(i), Ok(Some(d))) = (c.index, death) {
            if d <= i && spec.cohort.has_index() {
                report.exclude("died at or before the index");
                return;
            }
        }
        let age = match (pat.birth, c.index) {
            (Some(b), Some(i)) => Some(full_years(b, i)),
            _ => None,
        };
        if let Some((lo, hi)) = inc.age {
            match age {
                None => return report.exclude("no birth date for the age filter"),
                Some(a)
                    if lo.is_some_and(|l| (a as f64) < l) || hi.is_some_and(|h| a as f64 > h) =>
                {
                    return report.exclude("age outside the range")
                }
                _ => {}
            }
        }
        if let (false, Some(e)) = (inc.encounter_class.is_empty(), enc) {
            if !e
                .class
                .as_ref()
                .is_some_and(|k| inc.encounter_class.contains(k))
            {
                return report.exclude("encounter class not included");
            }
        }
        if let (Some((lo, hi)), Some(e)) = (inc.length_of_stay, enc) {
            let Some(los) = e.start.zip(e.end).map(|(s, t)| t - s) else {
                return report.exclude("encounter without a start and an end (length of stay)");
            };
            if lo.is_some_and(|l| los < l.0) || hi.is_some_and(|h| los > h.0) {
                return report.exclude("length of stay outside the range");
            }
        }
        if let Some((_, w)) = &inc.condition {
            let slot = self.slots.include.expect("inclusion matcher");
            if selected(evs.of(slot), Some(*w), c.index).0.is_empty() {
                return report.exclude("no qualifying condition");
            }
        }

        // label first: a row whose label cannot be decided is excluded, not dropped as
        // incomplete
        let (label, time) = match self.label(spec, c, evs, death, last_activity) {
            Ok(l) => l,
            Err(reason) => return report.exclude(reason),
        };

        let mut x = Vec::new();
        let mut complete = true;
        let mut missing_cols = Vec::new();
        for (k, f) in features.iter().enumerate() {
            let value = match &f.source {
                Source::Patient(PatientField::Gender) => pat.gender.as_ref().map(|g| {
                    Value::Coded(vec![Coding {
                        system: Some(GENDER_SYSTEM.to_owned()),
                        code: g.clone(),
                    }])
                }),
                Source::Patient(PatientField::Age) => age.map(Value::Integer),
                Source::Patient(PatientField::Deceased) => {
                    Some(Value::Boolean(match (c.index, pat.deceased_at) {
                        (Some(i), Some(d)) => d <= i,
                        _ => pat.deceased.unwrap_or(false),
                    }))
                }
                Source::Observation(o) => {
                    let slot = self.slots.features[k].expect("feature matcher");
                    let (sel, _) = selected(evs.of(slot), o.window, c.index);
                    self.aggregate(&sel, o.aggregate, f.transform.unit())
                }
                Source::Condition { window, .. } | Source::Medication { window, .. } => {
                    let slot = self.slots.features[k].expect("feature matcher");
                    Some(Value::Integer(
                        selected(evs.of(slot), *window, c.index).0.len() as i64,
                    ))
                }
            };
            let cols = match value.map(|v| f.transform.apply(&v)) {
                Some(Ok(cols)) => cols,
                Some(Err(e)) => {
                    report.issue(Issue {
                        kind: IssueKind::ValueType,
                        file: None,
                        line: None,
                        resource: Some(format!("Patient/{}", pat.id)),
                        detail: format!("feature `{}`: {e}", f.name),
                    });
                    None
                }
                None => None,
            };
            let width = f.value_columns().len();
            match cols {
                Some(v) => {
                    x.extend(v);
                    if f.missing.indicator {
                        x.push(0.0);
                    }
                }
                None => {
                    missing_cols.extend(f.value_columns());
                    match f.missing.impute {
                        Some(_) => {
                            x.extend(std::iter::repeat_n(f32::NAN, width));
                            if f.missing.indicator {
                                x.push(1.0);
                            }
                        }
                        None => complete = false,
                    }
                }
            }
        }
        let image = match &spec.image {
            None => None,
            Some(is) => match self.image_of(c.patient, is) {
                Ok(Some(v)) => Some(v),
                Ok(None) => {
                    missing_cols.push(is.name.clone());
                    complete = false;
                    None
                }
                Err((k, e)) => {
                    let at = &self.media[k].at;
                    report.issue(Issue {
                        kind: IssueKind::Image,
                        file: Some(at.0.clone()),
                        line: Some(at.1),
                        resource: at.2.clone(),
                        detail: format!("image `{}` of Patient/{}: {e}", is.name, pat.id),
                    });
                    missing_cols.push(is.name.clone());
                    complete = false;
                    None
                }
            },
        };
        for col in missing_cols {
            *out.missing_by_column.entry(col).or_default() += 1;
        }
        if !complete {
            out.incomplete.push(pat.id.clone());
            return;
        }
        let series = spec
            .series
            .as_ref()
            .map(|s| self.series(s, evs, c.index.expect("series need an index")));
        let n_shared_cols: usize = features[..n_shared].iter().map(|f| f.columns().len()).sum();
        let private = x.split_off(n_shared_cols);
        out.rows.push(SubjectRow {
            pseudonym: pat.id.clone(),
            split: pat.split,
            features: x,
            label,
            time,
            series,
            image,
            encounter: enc.and_then(|e| e.id.clone()),
            private,
        });
    }

    fn label(
        &self,
        spec: &FeatureSpec,
        c: &Candidate,
        evs: &Events<'_>,
        death: Result<Option<Instant>, ()>,
        last_activity: Option<Instant>,
    ) -> Result<(u32, Option<f32>), &'static str> {
        let slot = |k: usize| self.slots.label[k].expect("label matcher");
        match &spec.label.source {
            LabelSource::FirstMatch { classes, otherwise } => {
                // in order: an undecidable class before the first positive one leaves the
                // class undecided
                for (k, p) in classes.iter().enumerate() {
                    if self.positive(&p.source, self.slots.label[k], c, evs, death)? {
                        return Ok((k as u32, None));
                    }
                }
                match otherwise {
                    Some(_) => Ok((classes.len() as u32, None)),
                    None => Err("label: no class matches"),
                }
            }
            LabelSource::Labels(parts) => {
                let mut mask = 0u32;
                for (k, p) in parts.iter().enumerate() {
                    if self.positive(&p.source, self.slots.label[k], c, evs, death)? {
                        mask |= 1 << k;
                    }
                }
                Ok((mask, None))
            }
            LabelSource::Coded { source, classes } => {
                let (sel, _) = selected(evs.of(slot(0)), source.window, c.index);
                match self.aggregate(&sel, source.aggregate, None) {
                    Some(Value::Coded(codings)) => classes
                        .iter()
                        .position(|k| {
                            codings
                                .iter()
                                .any(|x| k.codes.matches(x.system.as_deref(), &x.code))
                        })
                        .map(|k| (k as u32, None))
                        .ok_or("label: the coded value is in none of the classes"),
                    Some(_) => Err("label: the observation's value is not coded"),
                    None => Err("label: no observation within the horizon"),
                }
            }
            LabelSource::Bins {
                source,
                unit,
                classes,
            } => {
                let (sel, _) = selected(evs.of(slot(0)), source.window, c.index);
                let v = match self.aggregate(&sel, source.aggregate, unit.as_deref()) {
                    Some(Value::Quantity(q)) if q.comparator.is_none() => q.value,
                    Some(Value::Integer(i)) => i as f64,
                    Some(Value::Quantity(_)) => return Err("label: a censored value has no bin"),
                    Some(_) => return Err("label: the observation's value is not a number"),
                    None => return Err("label: no observation within the horizon"),
                };
                let k = classes
                    .iter()
                    .position(|b| b.below.is_none_or(|u| v < u))
                    .expect("the last class has no bound");
                Ok((k as u32, None))
            }
            LabelSource::Survival {
                event,
                follow_up,
                censor_at,
            } => {
                let index = c.index.expect("an index");
                let event_time = match event {
                    SurvivalEvent::Death => {
                        death.map_err(|_| "deceased without a date of death")?
                    }
                    SurvivalEvent::Condition(_) => evs
                        .of(slot(0))
                        .iter()
                        .filter_map(|e| e.time)
                        .find(|t| *t > index),
                };
                let mut censor = index + follow_up.0;
                if let Some(ca) = censor_at {
                    censor = censor.min(*ca);
                } else if let Some(last) = last_activity {
                    // the records end at the last dated one; a recorded death after it shows
                    // the subject was followed until then
                    let death_at = death.ok().flatten().unwrap_or(index);
                    censor = censor.min(last.max(index).max(death_at));
                }
                if censor <= index {
                    return Err("no follow-up after the index");
                }
                let days = |t: Instant| ((t - index) as f64 / 86_400.0) as f32;
                Ok(match event_time {
                    Some(t) if t <= censor => (1, Some(days(t))),
                    _ => (0, Some(days(censor))),
                })
            }
            binary => self
                .positive(binary, self.slots.label[0], c, evs, death)
                .map(|p| (u32::from(p), None)),
        }
    }

    /// A binary label source (the label, a class criterion or one of several labels) for one
    /// row; `Err` when it cannot be decided. `slot` is the source's matcher.
    fn positive(
        &self,
        source: &LabelSource,
        slot: Option<usize>,
        c: &Candidate,
        evs: &Events<'_>,
        death: Result<Option<Instant>, ()>,
    ) -> Result<bool, &'static str> {
        let after = |slot: usize, within: Option<super::cohort::Span>| -> bool {
            let index = c.index.expect("an index");
            evs.of(slot).iter().any(|e| {
                e.time
                    .is_some_and(|t| t > index && within.is_none_or(|w| t - index <= w.0))
            })
        };
        let matcher = || slot.expect("label matcher");
        match source {
            LabelSource::Condition { within, .. } | LabelSource::Medication { within, .. } => {
                Ok(match c.index {
                    None => !evs.of(matcher()).is_empty(),
                    Some(_) => after(matcher(), *within),
                })
            }
            LabelSource::Death { within } => {
                let index = c.index.expect("an index");
                match death {
                    Err(()) => Err("deceased without a date of death"),
                    Ok(d) => Ok(d.is_some_and(|d| d > index && d - index <= within.0)),
                }
            }
            LabelSource::Observation {
                source,
                threshold,
                above,
                unit,
            } => {
                let (sel, _) = selected(evs.of(matcher()), source.window, c.index);
                let v = self.aggregate(&sel, source.aggregate, unit.as_deref());
                let decided = match v {
                    Some(Value::Quantity(q)) => {
                        let a = super::transform::above(&q, *threshold);
                        if *above {
                            a
                        } else {
                            // below t: not above, and not equal
                            a.map(|a| !a && q.value < *threshold)
                        }
                    }
                    Some(Value::Integer(i)) => Some(if *above {
                        i as f64 > *threshold
                    } else {
                        (i as f64) < *threshold
                    }),
                    _ => None,
                };
                decided.ok_or("label: no observation within the horizon")
            }
            // the parser only lets yes/no sources into classes and labels
            _ => Err("label: this source has no yes/no value"),
        }
    }

    fn series(&self, s: &SeriesSpec, evs: &Events<'_>, index: Instant) -> Series {
        let steps = s.steps();
        let k = s.channels.len();
        let mut values = vec![f32::NAN; steps * k];
        let mut mask = vec![0u8; steps * k];
        for (ch, c) in s.channels.iter().enumerate() {
            let slot = self.slots.channels[ch];
            let mut bins: Vec<Vec<&Event>> = vec![Vec::new(); steps];
            for e in evs.of(slot) {
                let Some(t) = e.time else { continue };
                let d = t - index;
                if d < 0 || d >= s.horizon.0 {
                    continue;
                }
                bins[(d / s.bin.0) as usize].push(e);
            }
            let mut last = f32::NAN;
            for (b, sel) in bins.iter().enumerate() {
                let v = self
                    .aggregate(sel, c.source.aggregate, c.unit.as_deref())
                    .and_then(|v| v.number());
                let at = b * k + ch;
                match v {
                    Some(v) => {
                        values[at] = v as f32;
                        mask[at] = 1;
                        last = v as f32;
                    }
                    // carried forward; bins before the first value stay missing until the
                    // site's training mean fills them
                    None => values[at] = last,
                }
            }
        }
        Series { values, mask }
    }
}

fn imputation(f: &Feature) -> Vec<Option<super::features::Impute>> {
    let mut v = vec![f.missing.impute; f.value_columns().len()];
    if f.missing.indicator {
        v.push(None);
    }
    v
}

/// Full years from `birth` to `at`.
fn full_years(birth: Instant, at: Instant) -> i64 {
    use chrono::{DateTime, Datelike};
    let (Some(b), Some(a)) = (
        DateTime::from_timestamp(birth, 0),
        DateTime::from_timestamp(at, 0),
    ) else {
        return 0;
    };
    let mut years = i64::from(a.year() - b.year());
    if (a.month(), a.day()) < (b.month(), b.day()) {
        years -= 1;
    }
    years
}

#[cfg(test)]
mod label_tests {
    //! Multi-class and multi-label targets of hand-written records.
    use crate::features::{FeatureSpec, Task};
    use crate::fhir_source::extract_json;
    use crate::SiteRows;

    fn extract(label: &str, entries: &[String]) -> SiteRows {
        let spec = FeatureSpec::from_json(&format!(
            r#"{{"name": "t", "features": [{{"name": "sex", "category": "ehr_data",
                 "source": {{"patient": "gender"}},
                 "transform": {{"kind": "map", "values": {{"male": 1, "female": 0}}}}}}],
                "label": {{"name": "y", "category": "ehr_data", "source": {label}}}}}"#
        ))
        .unwrap();
        let bundle = format!(
            r#"{{"resourceType": "Bundle", "type": "collection", "entry": [{}]}}"#,
            entries.join(",")
        );
        let rows = extract_json(&spec, &bundle).unwrap();
        assert_eq!(rows.task, spec.task());
        rows
    }

    fn patient(id: &str) -> String {
        format!(r#"{{"resource": {{"resourceType": "Patient", "id": "{id}", "gender": "male"}}}}"#)
    }

    fn obs(subject: &str, value: &str) -> String {
        format!(
            r#"{{"resource": {{"resourceType": "Observation", "status": "final",
                "code": {{"coding": [{{"system": "urn:o", "code": "k"}}]}},
                "subject": {{"reference": "Patient/{subject}"}}, {value}}}}}"#
        )
    }

    fn coded(subject: &str, code: &str) -> String {
        obs(
            subject,
            &format!(
                r#""valueCodeableConcept": {{"coding": [{{"system": "urn:v", "code": "{code}"}}]}}"#
            ),
        )
    }

    fn condition(subject: &str, code: &str) -> String {
        format!(
            r#"{{"resource": {{"resourceType": "Condition", "subject": {{"reference": "Patient/{subject}"}},
                "code": {{"coding": [{{"system": "http://hl7.org/fhir/sid/icd-10", "code": "{code}"}}]}}}}}}"#
        )
    }

    /// (patient, target) of every kept row.
    fn targets(rows: &SiteRows) -> Vec<(&str, u32)> {
        rows.rows
            .iter()
            .map(|r| (r.pseudonym.as_str(), r.label))
            .collect()
    }

    #[test]
    fn coded_observation_values_are_class_indices() {
        let label = r#"{"coded": {"observation": {"system": "urn:o", "code": "k"}, "classes": [
            {"name": "none", "codes": [{"system": "urn:v", "code": "0"}]},
            {"name": "mild", "codes": [{"system": "urn:v", "code": "1"}, {"system": "urn:v", "code": "2"}]},
            {"name": "severe", "codes": [{"system": "urn:v", "code": "3"}]}]}}"#;
        let rows = extract(
            label,
            &[
                patient("a"),
                coded("a", "0"),
                patient("b"),
                coded("b", "2"),
                patient("c"),
                coded("c", "9"),
                patient("d"),
                patient("e"),
                coded("e", "1"),
                coded("e", "3"),
            ],
        );
        assert_eq!(rows.task, Task::Multiclass { classes: 3 });
        // e: the latest of its two values (undated: the last in source order)
        assert_eq!(targets(&rows), [("a", 0), ("b", 1), ("e", 2)]);
        let ex = &rows.report.excluded;
        assert_eq!(ex["label: the coded value is in none of the classes"], 1);
        assert_eq!(ex["label: no observation within the horizon"], 1);
    }

    #[test]
    fn numeric_values_fall_in_bins_with_exclusive_upper_bounds() {
        let label = r#"{"bins": {"observation": {"system": "urn:o", "code": "k"}, "unit": "mg/dL",
            "classes": [{"name": "low", "below": 5}, {"name": "mid", "below": 10}, {"name": "high"}]}}"#;
        let q = |v: &str, extra: &str| {
            format!(
                r#""valueQuantity": {{"value": {v}, {extra} "system": "http://unitsofmeasure.org", "code": "mg/dL"}}"#
            )
        };
        let rows = extract(
            label,
            &[
                patient("a"),
                obs("a", &q("4.9", "")),
                patient("b"),
                obs("b", &q("5", "")),
                patient("c"),
                obs("c", &q("12", "")),
                patient("d"),
                obs("d", &q("5", r#""comparator": ">","#)),
                patient("e"),
                obs(
                    "e",
                    r#""valueQuantity": {"value": 0.1, "system": "http://unitsofmeasure.org", "code": "g/dL"}"#,
                ),
            ],
        );
        // e: 0.1 g/dL = 100 mg/dL
        assert_eq!(targets(&rows), [("a", 0), ("b", 1), ("c", 2), ("e", 2)]);
        assert_eq!(
            rows.report.excluded["label: a censored value has no bin"],
            1
        );
    }

    #[test]
    fn the_first_matching_class_wins_and_otherwise_takes_the_rest() {
        let classes = r#"[
            {"name": "ihd", "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10", "code": "I25*"}]}}},
            {"name": "htn", "source": {"condition": {"system": "http://hl7.org/fhir/sid/icd-10", "code": "I10"}}}]"#;
        let records = [
            patient("a"),
            condition("a", "I10"),
            condition("a", "I25.1"),
            patient("b"),
            condition("b", "I10"),
            patient("c"),
        ];
        let rows = extract(
            &format!(r#"{{"first_match": {{"classes": {classes}, "otherwise": "neither"}}}}"#),
            &records,
        );
        assert_eq!(rows.task, Task::Multiclass { classes: 3 });
        assert_eq!(targets(&rows), [("a", 0), ("b", 1), ("c", 2)]);
        // without `otherwise` a subject matching no class has no label
        let rows = extract(
            &format!(r#"{{"first_match": {{"classes": {classes}}}}}"#),
            &records,
        );
        assert_eq!(rows.task, Task::Multiclass { classes: 2 });
        assert_eq!(targets(&rows), [("a", 0), ("b", 1)]);
        assert_eq!(rows.report.excluded["label: no class matches"], 1);
    }

    #[test]
    fn each_label_sets_its_bit() {
        let label = r#"{"labels": [
            {"name": "ihd", "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10", "code": "I25*"}]}}},
            {"name": "htn", "source": {"condition": {"system": "http://hl7.org/fhir/sid/icd-10", "code": "I10"}}},
            {"name": "t2d", "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10", "code": "E11*"}]}}}]}"#;
        let rows = extract(
            label,
            &[
                patient("a"),
                condition("a", "I10"),
                condition("a", "I25.1"),
                patient("b"),
                condition("b", "E11.9"),
                patient("c"),
            ],
        );
        assert_eq!(rows.task, Task::Multilabel { labels: 3 });
        assert_eq!(targets(&rows), [("a", 0b011), ("b", 0b100), ("c", 0)]);
    }
}
