//! Feature extraction from a FHIR Bundle (JSON) read with the `fhir-sdk` model types.
//!
//! The models are FHIR R4B (4.3.0), the release `fhir-sdk` ships closest to R4; Patient,
//! Observation, Condition and Bundle read the same in R4 and R4B for everything used here.
//!
//! Every Patient in the bundle is a subject; its `id` is its pseudonym. Observations and
//! Conditions are attached to a subject through `subject.reference` (`Patient/<id>`, an
//! absolute URL ending in `/Patient/<id>`, or the `fullUrl` of the Patient's entry).
//! Observations with status `entered-in-error` or `cancelled`, and Conditions whose
//! verification status is `refuted` or `entered-in-error`, are ignored. A subject's split
//! comes from a `meta.tag` with system [`SPLIT_TAG_SYSTEM`].
use std::collections::HashMap;
use std::path::Path;

use fhir_sdk::r4b::codes::{ObservationStatus, QuantityComparator};
use fhir_sdk::r4b::resources::{Bundle, Resource};
use fhir_sdk::r4b::types::{CodeableConcept, Reference};

use super::features::{CodeMatch, Coding, Comparator, FeatureSpec, Quantity, Source, Value};
use super::{SiteRows, SourceError, Split, SubjectRow, SPLIT_TAG_SYSTEM};

const GENDER_SYSTEM: &str = "http://hl7.org/fhir/administrative-gender";

/// Parse a Bundle from FHIR JSON. Anything else (invalid JSON, another resource type) is a
/// [`SourceError`].
pub fn parse_bundle(json: &str) -> Result<Bundle, SourceError> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(SourceError::Json)?;
    match value.get("resourceType").and_then(|t| t.as_str()) {
        Some("Bundle") => serde_json::from_value(value).map_err(SourceError::Json),
        Some(other) => Err(SourceError::NotABundle(other.to_owned())),
        None => Err(SourceError::NotABundle(
            "JSON value without resourceType".into(),
        )),
    }
}

/// Read a Bundle file and extract its subjects' features.
pub fn load_bundle_file(spec: &FeatureSpec, path: &Path) -> Result<SiteRows, SourceError> {
    let text = std::fs::read_to_string(path)?;
    extract(spec, &parse_bundle(&text)?)
}

struct Subject {
    pseudonym: String,
    split: Option<Split>,
    gender: Option<Value>,
    /// Per spec feature: the value found, if any.
    values: Vec<Option<Value>>,
    label: bool,
}

fn codings(cc: &CodeableConcept) -> impl Iterator<Item = (Option<&str>, Option<&str>)> {
    cc.coding
        .iter()
        .flatten()
        .map(|c| (c.system.as_deref(), c.code.as_deref()))
}

fn has_code(cc: &CodeableConcept, m: &CodeMatch) -> bool {
    codings(cc).any(|(s, c)| s == Some(m.system.as_str()) && c == Some(m.code.as_str()))
}

fn coded(cc: &CodeableConcept) -> Value {
    Value::Coded(
        codings(cc)
            .filter_map(|(s, c)| {
                c.map(|code| Coding {
                    system: s.map(str::to_owned),
                    code: code.to_owned(),
                })
            })
            .collect(),
    )
}

fn comparator(c: QuantityComparator) -> Comparator {
    match c {
        QuantityComparator::Less => Comparator::Less,
        QuantityComparator::LessOrEqual => Comparator::LessOrEqual,
        QuantityComparator::GreaterOrEqual => Comparator::GreaterOrEqual,
        QuantityComparator::Greater => Comparator::Greater,
    }
}

fn observation_value(v: &fhir_sdk::r4b::resources::ObservationValue) -> Option<Value> {
    use fhir_sdk::r4b::resources::ObservationValue as V;
    Some(match v {
        V::Quantity(q) => Value::Quantity(Quantity {
            value: q.value?,
            comparator: q.comparator.map(comparator),
            unit: q.code.clone().or_else(|| q.unit.clone()),
        }),
        V::Integer(i) => Value::Integer(i64::from(*i)),
        V::Boolean(b) => Value::Boolean(*b),
        V::CodeableConcept(cc) => coded(cc),
        V::String(_) => Value::Other("string"),
        V::Range(_) => Value::Other("range"),
        V::Ratio(_) => Value::Other("ratio"),
        V::SampledData(_) => Value::Other("sampled data"),
        V::Time(_) => Value::Other("time"),
        V::DateTime(_) => Value::Other("dateTime"),
        V::Period(_) => Value::Other("period"),
    })
}

/// Subjects indexed by id and by entry `fullUrl`.
struct Index {
    by_id: HashMap<String, usize>,
    by_full_url: HashMap<String, usize>,
}

impl Index {
    fn resolve(&self, entry: usize, r: Option<&Reference>) -> Result<usize, SourceError> {
        let reference = r.and_then(|r| r.reference.as_deref());
        let found = reference.and_then(|s| {
            self.by_full_url.get(s).copied().or_else(|| {
                let s = s.split("/_history/").next().unwrap_or(s);
                let id = s
                    .strip_prefix("Patient/")
                    .or_else(|| s.rsplit_once("/Patient/").map(|(_, id)| id))?;
                self.by_id.get(id).copied()
            })
        });
        found.ok_or_else(|| SourceError::UnresolvedSubject {
            entry,
            reference: reference.map(str::to_owned),
        })
    }
}

/// Extract every subject of `bundle` as the specification says. Subjects missing any input
/// are dropped and counted; inconsistent data (a duplicate Observation, a wrong unit, an
/// Observation about a subject not in the bundle) is an error.
pub fn extract(spec: &FeatureSpec, bundle: &Bundle) -> Result<SiteRows, SourceError> {
    let resources: Vec<(usize, Option<&str>, &Resource)> = bundle
        .entry
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let e = e.as_ref()?;
            Some((i, e.full_url.as_deref(), e.resource.as_ref()?))
        })
        .collect();

    // Pass 1: subjects, in bundle order.
    let mut subjects: Vec<Subject> = Vec::new();
    let mut index = Index {
        by_id: HashMap::new(),
        by_full_url: HashMap::new(),
    };
    for &(i, full_url, res) in &resources {
        let Resource::Patient(p) = res else { continue };
        let id = p.id.clone().ok_or(SourceError::PatientWithoutId(i))?;
        if index.by_id.insert(id.clone(), subjects.len()).is_some() {
            return Err(SourceError::DuplicatePatient(id));
        }
        if let Some(u) = full_url {
            index.by_full_url.insert(u.to_owned(), subjects.len());
        }
        let mut split = None;
        for tag in p.meta.iter().flat_map(|m| m.tag.iter().flatten()) {
            if tag.system.as_deref() == Some(SPLIT_TAG_SYSTEM) {
                let code = tag.code.clone().unwrap_or_default();
                split = Some(Split::parse(&code).ok_or_else(|| SourceError::BadSplitTag {
                    patient: id.clone(),
                    code,
                })?);
            }
        }
        subjects.push(Subject {
            pseudonym: id,
            split,
            gender: p.gender.map(|g| {
                Value::Coded(vec![Coding {
                    system: Some(GENDER_SYSTEM.to_owned()),
                    code: g.to_string(),
                }])
            }),
            values: vec![None; spec.features.len()],
            label: false,
        });
    }

    // Pass 2: observations and conditions.
    for &(i, _, res) in &resources {
        match res {
            Resource::Observation(o) => {
                if matches!(
                    o.status,
                    ObservationStatus::EnteredInError | ObservationStatus::Cancelled
                ) {
                    continue;
                }
                let mut subject = None;
                for (k, f) in spec.features.iter().enumerate() {
                    let Source::Observation { code, method } = &f.source else {
                        continue;
                    };
                    let method_ok = method
                        .as_ref()
                        .is_none_or(|m| o.method.as_ref().is_some_and(|cc| has_code(cc, m)));
                    if !(has_code(&o.code, code) && method_ok) {
                        continue;
                    }
                    let s = match subject {
                        Some(s) => s,
                        None => *subject.insert(index.resolve(i, o.subject.as_ref())?),
                    };
                    let slot = &mut subjects[s].values[k];
                    if slot.is_some() {
                        return Err(SourceError::DuplicateObservation {
                            patient: subjects[s].pseudonym.clone(),
                            feature: f.name.clone(),
                        });
                    }
                    *slot = o.value.as_ref().and_then(observation_value);
                }
            }
            Resource::Condition(c) => {
                let void = c.verification_status.as_ref().is_some_and(|v| {
                    codings(v)
                        .any(|(_, code)| matches!(code, Some("refuted") | Some("entered-in-error")))
                });
                if !void
                    && c.code
                        .as_ref()
                        .is_some_and(|cc| has_code(cc, &spec.label.condition))
                {
                    let s = index.resolve(i, Some(&c.subject))?;
                    subjects[s].label = true;
                }
            }
            _ => {}
        }
    }

    // Pass 3: transforms.
    let mut out = SiteRows {
        columns: spec.columns(),
        ..SiteRows::default()
    };
    for s in subjects {
        let mut x = Vec::with_capacity(out.columns.len());
        let mut complete = true;
        for (f, v) in spec.features.iter().zip(&s.values) {
            let v = match f.source {
                Source::PatientGender => s.gender.as_ref(),
                Source::Observation { .. } => v.as_ref(),
            };
            let cols = match v {
                Some(v) => f.transform.apply(v).map_err(|error| SourceError::Value {
                    patient: s.pseudonym.clone(),
                    feature: f.name.clone(),
                    error,
                })?,
                None => None,
            };
            match cols {
                Some(c) => x.extend(c),
                None => {
                    complete = false;
                    for c in f.columns() {
                        *out.missing_by_column.entry(c).or_default() += 1;
                    }
                }
            }
        }
        if complete {
            out.rows.push(SubjectRow {
                pseudonym: s.pseudonym,
                split: s.split,
                features: x,
                label: u32::from(s.label),
            });
        } else {
            out.incomplete.push(s.pseudonym);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"{"name": "t", "features": [
        {"name": "sbp", "category": "ehr_data",
         "source": {"observation": {"system": "http://loinc.org", "code": "8480-6"}},
         "transform": {"kind": "number", "unit": "mm[Hg]"}},
        {"name": "sex", "category": "ehr_data", "source": {"patient": "gender"},
         "transform": {"kind": "map", "values": {"male": 1, "female": 0}}}],
      "label": {"name": "chd", "category": "ehr_data",
                "source": {"condition": {"system": "http://snomed.info/sct", "code": "53741008"}}}}"#;

    fn bundle(entries: &str) -> String {
        format!(r#"{{"resourceType": "Bundle", "type": "collection", "entry": [{entries}]}}"#)
    }

    fn patient(id: &str, gender: &str) -> String {
        format!(
            r#"{{"fullUrl": "urn:uuid:{id}", "resource": {{"resourceType": "Patient", "id": "{id}", "gender": "{gender}",
                "meta": {{"tag": [{{"system": "urn:ehds-gateway:split", "code": "train"}}]}}}}}}"#
        )
    }

    fn sbp(subject: &str, value: &str, status: &str) -> String {
        format!(
            r#"{{"resource": {{"resourceType": "Observation", "status": "{status}",
                "code": {{"coding": [{{"system": "http://loinc.org", "code": "8480-6"}}]}},
                "subject": {{"reference": "{subject}"}},
                "valueQuantity": {{"value": {value}, "system": "http://unitsofmeasure.org", "code": "mm[Hg]"}}}}}}"#
        )
    }

    fn spec() -> FeatureSpec {
        FeatureSpec::from_json(SPEC).unwrap()
    }

    #[test]
    fn extracts_resolves_references_and_drops_incomplete() {
        let chd = r#"{"resource": {"resourceType": "Condition", "subject": {"reference": "Patient/b"},
            "code": {"coding": [{"system": "http://snomed.info/sct", "code": "53741008"}]}}}"#;
        let refuted = r#"{"resource": {"resourceType": "Condition", "subject": {"reference": "Patient/a"},
            "verificationStatus": {"coding": [{"code": "refuted"}]},
            "code": {"coding": [{"system": "http://snomed.info/sct", "code": "53741008"}]}}}"#;
        let text = bundle(
            &[
                patient("a", "male"),
                patient("b", "female"),
                patient("c", "unknown"),
                sbp("urn:uuid:a", "120", "final"),
                sbp(
                    "https://x.example/fhir/Patient/b/_history/2",
                    "140.5",
                    "final",
                ),
                sbp("Patient/b", "999", "entered-in-error"),
                sbp("Patient/c", "110", "final"),
                chd.into(),
                refuted.into(),
            ]
            .join(","),
        );
        let rows = extract(&spec(), &parse_bundle(&text).unwrap()).unwrap();
        assert_eq!(rows.columns, ["sbp", "sex"]);
        assert_eq!(rows.rows.len(), 2);
        assert_eq!(rows.rows[0].features, [120.0, 1.0]);
        assert_eq!(rows.rows[0].label, 0);
        assert_eq!(rows.rows[1].features, [140.5, 0.0]);
        assert_eq!(rows.rows[1].label, 1);
        assert_eq!(rows.rows[1].split, Some(Split::Train));
        assert_eq!(rows.incomplete, ["c"]);
        assert_eq!(rows.missing_by_column.get("sex"), Some(&1));
    }

    #[test]
    fn malformed_input_is_a_typed_error() {
        let s = spec();
        assert!(matches!(parse_bundle("{"), Err(SourceError::Json(_))));
        assert!(matches!(
            parse_bundle("[]"),
            Err(SourceError::NotABundle(_))
        ));
        assert!(matches!(
            parse_bundle(r#"{"resourceType": "Patient", "id": "x"}"#),
            Err(SourceError::NotABundle(t)) if t == "Patient"
        ));
        assert!(matches!(
            parse_bundle(r#"{"resourceType": "Bundle", "type": "no-such-type"}"#),
            Err(SourceError::Json(_))
        ));
        let read =
            |entries: &[String]| extract(&s, &parse_bundle(&bundle(&entries.join(","))).unwrap());
        assert!(matches!(
            read(&[patient("a", "male"), sbp("Patient/zz", "1", "final")]),
            Err(SourceError::UnresolvedSubject { .. })
        ));
        assert!(matches!(
            read(&[patient("a", "male"), patient("a", "male")]),
            Err(SourceError::DuplicatePatient(_))
        ));
        assert!(matches!(
            read(&[
                patient("a", "male"),
                sbp("Patient/a", "1", "final"),
                sbp("Patient/a", "2", "final")
            ]),
            Err(SourceError::DuplicateObservation { .. })
        ));
        let wrong_unit = sbp("Patient/a", "1", "final").replace("mm[Hg]", "kPa");
        assert!(matches!(
            read(&[patient("a", "male"), wrong_unit]),
            Err(SourceError::Value { .. })
        ));
        let bad_tag = patient("a", "male").replace("\"train\"", "\"holdout\"");
        assert!(matches!(
            read(&[bad_tag]),
            Err(SourceError::BadSplitTag { .. })
        ));
        let no_id = r#"{"resource": {"resourceType": "Patient"}}"#.to_owned();
        assert!(matches!(
            read(&[no_id]),
            Err(SourceError::PatientWithoutId(0))
        ));
    }
}
