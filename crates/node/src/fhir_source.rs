//! Feature extraction from FHIR R4 as hospitals export it: a Bulk Data export directory
//! (NDJSON per resource type, optionally gzipped), an NDJSON file, or a Bundle. The input is
//! streamed ([`super::reader`]); what is kept and how rows are built is [`super::extract`].
//!
//! Every Patient is a subject; its `id` is its pseudonym. Observations, Conditions,
//! Encounters and medications are attached to a subject through `subject.reference`
//! (`Patient/<id>`, an absolute URL ending in `/Patient/<id>`, or the `fullUrl` of the
//! Patient's Bundle entry). Observations with status `entered-in-error` or `cancelled`,
//! Conditions whose verification status is `refuted` or `entered-in-error`, cancelled
//! Encounters and medication requests are ignored. A subject's split comes from a `meta.tag`
//! with system [`SPLIT_TAG_SYSTEM`].
//!
//! Bad input is counted in the rows' [`super::report::Report`] and skipped where that is
//! safe (a malformed line, a resource about a patient the export does not hold, a date or a
//! unit that does not parse or convert, a duplicate id); it stops the extraction where it is
//! not (the same Patient id twice, an unknown split tag, a file that breaks off, a Bundle
//! that is not JSON).
//!
//! The node reads FHIR JSON as it streams, without a model of every FHIR type
//! (`ehds_tools::fhir_model` parses into the `fhir-sdk` R4B types for the tests and the
//! extraction benchmark, which compares the two).
use std::path::Path;

use super::codemap::CodeMap;
use super::extract::Store;
use super::features::{Feature, FeatureSpec};
use super::report::Report;
use super::{reader, SiteRows, SourceError};

#[cfg(doc)]
use super::SPLIT_TAG_SYSTEM;

/// How to read.
#[derive(Debug, Clone, Default)]
pub struct Options<'a> {
    pub code_map: Option<&'a CodeMap>,
    /// Keep every issue in the report, not only the first few of each kind.
    pub keep_all_issues: bool,
}

fn prepared<'m>(
    spec: &FeatureSpec,
    map: Option<&'m CodeMap>,
) -> (FeatureSpec, Vec<Feature>, usize, &'m [(String, String)]) {
    let spec = map.map_or_else(|| spec.clone(), |m| m.apply(spec));
    let private: Vec<Feature> = map.map(|m| m.private_features.clone()).unwrap_or_default();
    let n_private = private.len();
    let mut features = spec.features.clone();
    features.extend(private);
    let aliases = map.map(|m| m.units.as_slice()).unwrap_or(&[]);
    (spec, features, n_private, aliases)
}

fn run(
    spec: &FeatureSpec,
    options: &Options<'_>,
    read: impl FnOnce(&mut Store, &mut Report) -> Result<(), SourceError>,
) -> Result<SiteRows, SourceError> {
    let (spec, features, n_private, aliases) = prepared(spec, options.code_map);
    let mut store = Store::new(&spec, &features, aliases);
    let mut report = Report {
        keep_all: options.keep_all_issues,
        ..Report::default()
    };
    read(&mut store, &mut report)?;
    store.into_rows(&spec, &features, n_private, report)
}

/// Read a file or an export directory at `path` through `spec` (and the holder's code map).
pub fn load(
    spec: &FeatureSpec,
    path: &Path,
    code_map: Option<&CodeMap>,
) -> Result<SiteRows, SourceError> {
    load_with(
        spec,
        path,
        &Options {
            code_map,
            keep_all_issues: false,
        },
    )
}

pub fn load_with(
    spec: &FeatureSpec,
    path: &Path,
    options: &Options<'_>,
) -> Result<SiteRows, SourceError> {
    run(spec, options, |store, report| {
        reader::read(path, store, report)
    })
}

/// Read a Bundle file (or any FHIR input [`load`] reads) and extract its subjects' features.
pub fn load_bundle_file(spec: &FeatureSpec, path: &Path) -> Result<SiteRows, SourceError> {
    load(spec, path, None)
}

/// Extract from Bundle JSON held in memory.
pub fn extract_json(spec: &FeatureSpec, json: &str) -> Result<SiteRows, SourceError> {
    run(spec, &Options::default(), |store, report| {
        reader::read_bundle_str(json, store, report)
    })
}

/// Extract from NDJSON held in memory.
pub fn extract_ndjson(
    spec: &FeatureSpec,
    ndjson: &str,
    options: &Options<'_>,
) -> Result<SiteRows, SourceError> {
    run(spec, options, |store, report| {
        reader::read_ndjson_str(ndjson, store, report)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Split;

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
        let rows = extract_json(&spec(), &text).unwrap();
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
    fn bad_input_is_counted_or_a_typed_error() {
        use crate::report::IssueKind;
        let s = spec();
        assert!(matches!(
            extract_json(&s, r#"{"resourceType": "Patient", "id": "x"}"#),
            Err(SourceError::NotABundle(t)) if t == "Patient"
        ));
        assert!(matches!(
            extract_json(&s, r#"{"resourceType": "Bundle", "entry": [{"resource": "#),
            Err(SourceError::Bundle { .. })
        ));
        let read = |entries: &[String]| extract_json(&s, &bundle(&entries.join(",")));
        // a resource about a patient the bundle does not hold: counted, skipped
        let rows = read(&[patient("a", "male"), sbp("Patient/zz", "1", "final")]).unwrap();
        assert_eq!(rows.report.count(IssueKind::UnresolvedSubject), 1);
        assert_eq!(rows.incomplete, ["a"]);
        assert!(matches!(
            read(&[patient("a", "male"), patient("a", "male")]),
            Err(SourceError::DuplicatePatient { ref id, line: 2, .. }) if id == "a"
        ));
        // repeated measurements: the latest (here: the last in source order, both undated)
        let rows = read(&[
            patient("a", "male"),
            sbp("Patient/a", "1", "final"),
            sbp("Patient/a", "2", "final"),
        ])
        .unwrap();
        assert_eq!(rows.rows[0].features, [2.0, 1.0]);
        // a commensurable unit is converted: 16 kPa = 120.0 mm[Hg]
        let kpa = sbp("Patient/a", "16", "final").replace("mm[Hg]", "kPa");
        let rows = read(&[patient("a", "male"), kpa]).unwrap();
        assert!(
            (rows.rows[0].features[0] - 120.01).abs() < 0.01,
            "{:?}",
            rows.rows
        );
        assert_eq!(rows.report.units["sbp"].converted, 1);
        // one that is not is counted and the value is missing
        let kg = sbp("Patient/a", "16", "final").replace("mm[Hg]", "kg");
        let rows = read(&[patient("a", "male"), kg]).unwrap();
        assert_eq!(rows.report.count(IssueKind::Unit), 1);
        assert_eq!(rows.incomplete, ["a"]);
        // a unit that is only display text is read by its spelling, and the report says how
        let text = |unit: &str| {
            sbp("Patient/a", "120", "final").replace(
                r#""system": "http://unitsofmeasure.org", "code": "mm[Hg]""#,
                &format!(r#""unit": "{unit}""#),
            )
        };
        let rows = read(&[patient("a", "male"), text("mm Hg")]).unwrap();
        assert_eq!(rows.rows[0].features[0], 120.0);
        let t = &rows.report.units["sbp"].text_only["mm Hg"];
        assert_eq!(
            (t.values, t.read_as.as_deref(), t.refused),
            (1, Some("mm[Hg]"), 0)
        );
        let rows = read(&[patient("a", "male"), text("millimetres")]).unwrap();
        assert_eq!(rows.report.units["sbp"].text_only["millimetres"].refused, 1);
        // a UCUM code beside it is no display text
        let coded = sbp("Patient/a", "120", "final")
            .replace(r#""code": "mm[Hg]""#, r#""code": "mm[Hg]", "unit": "mmHg""#);
        let rows = read(&[patient("a", "male"), coded]).unwrap();
        assert!(rows.report.units["sbp"].text_only.is_empty());
        let bad_tag = patient("a", "male").replace("\"train\"", "\"holdout\"");
        assert!(matches!(
            read(&[bad_tag]),
            Err(SourceError::BadSplitTag { .. })
        ));
        let no_id = r#"{"resource": {"resourceType": "Patient"}}"#.to_owned();
        let rows = read(&[no_id]).unwrap();
        assert_eq!(rows.report.count(IssueKind::MissingId), 1);
        assert!(rows.rows.is_empty());
    }
}
