//! Records as third-party tools write them: Patients with `deceasedBoolean`, Observations
//! with a date-only `effectiveDateTime` and a unit as display text, Conditions with a
//! clinical status and no date, MedicationRequests without `authoredOn`. Every record that
//! matches a feature and does not count is counted under the feature and the reason.
use crate::check::Check;
use crate::features::FeatureSpec;
use crate::fhir_source::extract_json;
use crate::report::IgnoreReason::{self, *};
use crate::SiteRows;

const SCT: &str = "http://snomed.info/sct";
const RXNORM: &str = "http://www.nlm.nih.gov/research/umls/rxnorm";

fn spec(cohort: &str, features: &str, label: &str) -> FeatureSpec {
    FeatureSpec::from_json(&format!(
        r#"{{"name": "t", {cohort} "features": [{features}],
            "label": {{"name": "y", "category": "ehr_data", "source": {label}}}}}"#
    ))
    .unwrap()
}

const AT_2024: &str =
    r#""cohort": {"unit": "patient", "index": {"date": "2024-01-01"}, "category": "ehr_data"},"#;

fn condition_feature(name: &str, extra: &str) -> String {
    format!(
        r#"{{"name": "{name}", "category": "ehr_data",
            "source": {{"condition": {{"codes": [{{"system": "{SCT}", "code": "38341003"}}]{extra}}}}},
            "transform": {{"kind": "presence"}}}}"#
    )
}

fn medication_feature(name: &str, extra: &str) -> String {
    format!(
        r#"{{"name": "{name}", "category": "ehr_data",
            "source": {{"medication": {{"codes": [{{"system": "{RXNORM}", "code": "860975"}}]{extra}}}}},
            "transform": {{"kind": "presence"}}}}"#
    )
}

fn hba1c_feature(aggregate: &str) -> String {
    format!(
        r#"{{"name": "hba1c", "category": "ehr_data",
            "source": {{"observation": {{"system": "http://loinc.org", "code": "4548-4",
                        "aggregate": "{aggregate}"}}}},
            "transform": {{"kind": "number", "unit": "%"}},
            "missing": {{"impute": "mean"}}}}"#
    )
}

fn bundle(entries: &[String]) -> String {
    format!(
        r#"{{"resourceType": "Bundle", "type": "collection", "entry": [{}]}}"#,
        entries.join(",")
    )
}

fn entry(resource: String) -> String {
    format!(r#"{{"resource": {resource}}}"#)
}

fn patient(id: &str, extra: &str) -> String {
    entry(format!(
        r#"{{"resourceType": "Patient", "id": "{id}", "gender": "female",
            "birthDate": "1950-03-01"{extra}}}"#
    ))
}

/// A Condition of the problem list: a clinical status, and a date only when given.
fn condition(id: &str, subject: &str, extra: &str) -> String {
    entry(format!(
        r#"{{"resourceType": "Condition", "id": "{id}",
            "subject": {{"reference": "Patient/{subject}"}},
            "code": {{"coding": [{{"system": "{SCT}", "code": "38341003"}}],
                      "text": "Hypertension"}}{extra}}}"#
    ))
}

fn clinical(status: &str) -> String {
    format!(
        r#", "clinicalStatus": {{"coding": [{{"system":
            "http://terminology.hl7.org/CodeSystem/condition-clinical", "code": "{status}"}}]}}"#
    )
}

fn request(id: &str, subject: &str, extra: &str) -> String {
    entry(format!(
        r#"{{"resourceType": "MedicationRequest", "id": "{id}", "intent": "order",
            "subject": {{"reference": "Patient/{subject}"}},
            "medicationCodeableConcept": {{"coding": [{{"system": "{RXNORM}", "code": "860975"}}]}}{extra}}}"#
    ))
}

fn hba1c(id: &str, subject: &str, extra: &str) -> String {
    entry(format!(
        r#"{{"resourceType": "Observation", "id": "{id}", "status": "final",
            "subject": {{"reference": "Patient/{subject}"}},
            "code": {{"coding": [{{"system": "http://loinc.org", "code": "4548-4"}}]}}{extra}}}"#
    ))
}

/// Per kept row: (patient, features).
fn features(rows: &SiteRows) -> Vec<(&str, Vec<f32>)> {
    rows.rows
        .iter()
        .map(|r| (r.pseudonym.as_str(), r.features.clone()))
        .collect()
}

fn ignored(rows: &SiteRows, name: &str, why: IgnoreReason) -> u64 {
    rows.report
        .ignored
        .get(name)
        .and_then(|m| m.get(&why))
        .copied()
        .unwrap_or(0)
}

fn problem_list() -> Vec<String> {
    vec![
        patient("a", r#", "deceasedBoolean": true"#),
        condition("a1", "a", &clinical("active")),
        request("a2", "a", r#", "status": "active""#),
        patient("b", r#", "deceasedBoolean": false"#),
        condition("b1", "b", &clinical("resolved")),
        condition(
            "b2",
            "b",
            &format!(
                r#"{}, "onsetDateTime": "2020-05-01", "verificationStatus": {{"coding": [{{"system":
                "http://terminology.hl7.org/CodeSystem/condition-ver-status", "code": "refuted"}}]}}"#,
                clinical("active")
            ),
        ),
        request("b3", "b", r#", "status": "cancelled""#),
        request("b4", "b", ""),
        patient("c", ""),
        condition(
            "c1",
            "c",
            &format!(r#"{}, "onsetDateTime": "2025-02-01""#, clinical("active")),
        ),
        condition(
            "c2",
            "c",
            &format!(r#"{}, "onsetDateTime": "2019-02-01""#, clinical("resolved")),
        ),
    ]
}

#[test]
fn undated_active_conditions_and_current_prescriptions_count_at_the_index() {
    let s = spec(
        AT_2024,
        &[
            condition_feature("htn", ""),
            medication_feature("metformin", ""),
        ]
        .join(","),
        r#"{"patient": "deceased"}"#,
    );
    let rows = extract_json(&s, &bundle(&problem_list())).unwrap();
    // c2: dated, resolved later; it was there before the index, so history counts
    assert_eq!(
        features(&rows),
        [
            ("a", vec![1.0, 1.0]),
            ("b", vec![0.0, 0.0]),
            ("c", vec![1.0, 0.0])
        ]
    );
    let m = &rows.report.matched;
    assert_eq!((m["htn"], m["metformin"]), (5, 3));
    // b1 undated and resolved, b2 refuted: status; c1 after the index
    assert_eq!(ignored(&rows, "htn", Status), 2);
    assert_eq!(ignored(&rows, "htn", OutsideWindow), 1);
    assert_eq!(rows.report.ignored_total("htn"), 3);
    // b3 cancelled; b4 has no status to place it at the index
    assert_eq!(ignored(&rows, "metformin", Status), 1);
    assert_eq!(ignored(&rows, "metformin", Undated), 1);
    // the label: deceasedBoolean, ever
    let labels: Vec<u32> = rows.rows.iter().map(|r| r.label).collect();
    assert_eq!(labels, [1, 0, 0]);
}

#[test]
fn require_date_sets_every_undated_record_aside() {
    let s = spec(
        AT_2024,
        &[
            condition_feature("htn", r#", "require_date": true"#),
            medication_feature("metformin", r#", "require_date": true"#),
        ]
        .join(","),
        r#"{"patient": "deceased"}"#,
    );
    let rows = extract_json(&s, &bundle(&problem_list())).unwrap();
    assert_eq!(
        features(&rows),
        [
            ("a", vec![0.0, 0.0]),
            ("b", vec![0.0, 0.0]),
            ("c", vec![1.0, 0.0])
        ]
    );
    // a1 and b1: undated, whatever their status; b2 is refuted whatever its date
    assert_eq!(ignored(&rows, "htn", Undated), 2);
    assert_eq!(ignored(&rows, "htn", Status), 1);
    assert_eq!(ignored(&rows, "metformin", Undated), 2);
    assert_eq!(ignored(&rows, "metformin", Status), 1);
    // and the check says so, per feature
    let check = Check::new(&s, rows);
    let htn = check.columns.iter().find(|c| c.name == "htn").unwrap();
    assert_eq!((htn.matched, htn.ignored[&Undated]), (5, 2));
    let table = check.table();
    assert!(
        table.contains(
            "htn                                 5  undated 2, outside window 1, status 1"
        ),
        "{table}"
    );
    let json = serde_json::to_value(&check).unwrap();
    assert_eq!(json["columns"][0]["ignored"]["undated"], 2);
}

#[test]
fn require_date_needs_an_index_and_is_a_boolean() {
    let bad = FeatureSpec::from_json(&format!(
        r#"{{"name": "t", "features": [{}],
            "label": {{"name": "y", "category": "ehr_data", "source": {{"patient": "deceased"}}}}}}"#,
        condition_feature("htn", r#", "require_date": true"#)
    ))
    .unwrap_err()
    .to_string();
    assert!(bad.contains("`require_date` needs an index event"), "{bad}");
    let bad = FeatureSpec::from_json(&format!(
        r#"{{"name": "t", {AT_2024} "features": [{}],
            "label": {{"name": "y", "category": "ehr_data", "source": {{"patient": "deceased"}}}}}}"#,
        condition_feature("htn", r#", "require_date": "yes""#)
    ));
    assert!(bad.is_err());
    // a patient label reads deceased only
    let bad = FeatureSpec::from_json(&format!(
        r#"{{"name": "t", "features": [{}],
            "label": {{"name": "y", "category": "ehr_data", "source": {{"patient": "gender"}}}}}}"#,
        condition_feature("htn", "")
    ))
    .unwrap_err()
    .to_string();
    assert!(bad.contains("a patient label reads `deceased`"), "{bad}");
}

#[test]
fn age_as_of_a_fixed_date_needs_no_index() {
    let age = |source: &str| {
        format!(
            r#"{{"name": "age", "category": "ehr_data", "source": {{"patient": {source}}},
                "transform": {{"kind": "number", "unit": "a"}}}}"#
        )
    };
    let refused = FeatureSpec::from_json(&format!(
        r#"{{"name": "t", "features": [{}], "label": {{"name": "y", "category": "ehr_data",
            "source": {{"patient": "deceased"}}}}}}"#,
        age(r#""age""#)
    ))
    .unwrap_err()
    .to_string();
    assert!(refused.contains("age needs an index event"), "{refused}");
    for bad in [
        r#"{"age": {"as_of": "30 June"}}"#,
        r#"{"age": {"as_of": "2024-06-30", "at": 1}}"#,
        r#"{"gender": {"as_of": "2024-06-30"}}"#,
    ] {
        let s = format!(
            r#"{{"name": "t", "features": [{}], "label": {{"name": "y", "category": "ehr_data",
                "source": {{"patient": "deceased"}}}}}}"#,
            age(bad)
        );
        assert!(FeatureSpec::from_json(&s).is_err(), "{bad}");
    }
    let s = spec(
        "",
        &age(r#"{"age": {"as_of": "2024-06-30"}}"#),
        r#"{"patient": "deceased"}"#,
    );
    let rows = extract_json(
        &s,
        &bundle(&[
            patient("a", r#", "deceasedBoolean": true"#),
            patient("b", r#", "deceasedDateTime": "2022-01-05""#),
            entry(r#"{"resourceType": "Patient", "id": "c", "birthDate": "1974-07-01"}"#.into()),
        ]),
    )
    .unwrap();
    // 1950-03-01 to 2024-06-30: 74; 1974-07-01: 49, a day short of 50
    let got: Vec<(&str, Vec<f32>, u32)> = rows
        .rows
        .iter()
        .map(|r| (r.pseudonym.as_str(), r.features.clone(), r.label))
        .collect();
    assert_eq!(
        got,
        [
            ("a", vec![74.0], 1),
            ("b", vec![74.0], 1),
            ("c", vec![49.0], 0)
        ]
    );
}

#[test]
fn a_dated_death_label_over_undated_deaths_is_answered_with_the_count() {
    let s = spec(
        AT_2024,
        &condition_feature("htn", ""),
        r#"{"death": {"within": "365d"}}"#,
    );
    let rows = extract_json(
        &s,
        &bundle(&[
            patient("a", r#", "deceasedBoolean": true"#),
            patient("b", r#", "deceasedBoolean": false"#),
            patient("c", r#", "deceasedDateTime": "2024-03-01""#),
            // discharged as expired, without an end: dead, but when is not recorded
            patient("d", ""),
            entry(
                r#"{"resourceType": "Encounter", "id": "e1", "status": "finished",
                    "subject": {"reference": "Patient/d"}, "period": {"start": "2023-11-01"},
                    "hospitalization": {"dischargeDisposition": {"coding": [{"system":
                    "http://terminology.hl7.org/CodeSystem/discharge-disposition", "code": "exp"}]}}}"#
                    .into(),
            ),
        ]),
    )
    .unwrap();
    let labels: Vec<(&str, u32)> = rows
        .rows
        .iter()
        .map(|r| (r.pseudonym.as_str(), r.label))
        .collect();
    assert_eq!(labels, [("b", 0), ("c", 1)]);
    assert_eq!(rows.report.excluded["deceased without a date of death"], 2);
    assert_eq!(ignored(&rows, "y", Undated), 2);
    // a, c and d have a recorded death; b's `false` is none
    assert_eq!(rows.report.matched["y"], 3);
    let check = Check::new(&s, rows);
    assert_eq!((check.label.matched, check.label.ignored[&Undated]), (3, 2));
    let table = check.table();
    assert!(
        table.contains("excluded          2  deceased without a date of death"),
        "{table}"
    );
}

#[test]
fn observations_that_do_not_count_are_counted() {
    let s = spec(
        AT_2024,
        &hba1c_feature("mean"),
        r#"{"patient": "deceased"}"#,
    );
    let q = |v: &str| format!(r#", "effectiveDateTime": "2023-06-01", "valueQuantity": {v}"#);
    let rows = extract_json(
        &s,
        &bundle(&[
            patient("a", ""),
            // display text only, no UCUM code: read by its spelling
            hba1c("o1", "a", &q(r#"{"value": 7.0, "unit": "%"}"#)),
            hba1c("o2", "a", &q(r#"{"value": 6.0, "unit": "%", "comparator": "<"}"#)),
            hba1c("o3", "a", &q(r#"{"unit": "%"}"#)),
            hba1c("o4", "a", &q(r#"{"value": 50, "unit": "kg"}"#)),
            hba1c("o5", "a", &q(r#"{"value": 9.0, "unit": "%", "comparator": "~"}"#)),
            hba1c(
                "o6",
                "a",
                r#", "effectiveDateTime": "2024-02-01", "valueQuantity": {"value": 9.0, "unit": "%"}"#,
            ),
            hba1c("o7", "a", r#", "valueQuantity": {"value": 9.0, "unit": "%"}"#),
            entry(
                r#"{"resourceType": "Observation", "id": "o8", "status": "entered-in-error",
                    "subject": {"reference": "Patient/a"}, "effectiveDateTime": "2023-06-01",
                    "code": {"coding": [{"system": "http://loinc.org", "code": "4548-4"}]},
                    "valueQuantity": {"value": 12.0, "unit": "%"}}"#
                    .into(),
            ),
            hba1c("o9", "nobody", &q(r#"{"value": 7.0, "unit": "%"}"#)),
        ]),
    )
    .unwrap();
    assert_eq!(features(&rows), [("a", vec![7.0])]);
    assert_eq!(rows.report.matched["hba1c"], 9);
    for (why, n) in [
        (Comparator, 1),
        (Value, 2),
        (Unit, 1),
        (OutsideWindow, 1),
        (Undated, 1),
        (Status, 1),
        (Unresolved, 1),
    ] {
        assert_eq!(ignored(&rows, "hba1c", why), n, "{why:?}");
    }
    assert_eq!(rows.report.ignored_total("hba1c"), 8);
}

#[test]
fn medication_references_resolve_or_are_reported() {
    let s = spec(
        AT_2024,
        &medication_feature("metformin", ""),
        r#"{"patient": "deceased"}"#,
    );
    let by_ref = |id: &str, subject: &str, reference: &str| {
        entry(format!(
            r#"{{"resourceType": "MedicationRequest", "id": "{id}", "status": "active",
                "intent": "order", "subject": {{"reference": "Patient/{subject}"}},
                "authoredOn": "2023-01-01", "medicationReference": {{"reference": "{reference}"}}}}"#
        ))
    };
    let medication = format!(
        r#"{{"fullUrl": "urn:uuid:5f2c", "resource": {{"resourceType": "Medication", "id": "m1",
            "code": {{"coding": [{{"system": "{RXNORM}", "code": "860975"}}]}}}}}}"#
    );
    let rows = extract_json(
        &s,
        &bundle(&[
            medication,
            patient("a", ""),
            by_ref("r1", "a", "urn:uuid:5f2c"),
            patient("b", ""),
            by_ref(
                "r2",
                "b",
                "http://example.org/fhir/Medication/m1/_history/3",
            ),
            patient("c", ""),
            by_ref("r3", "c", "#med"),
            by_ref("r4", "c", "Medication/gone"),
        ]),
    )
    .unwrap();
    assert_eq!(
        features(&rows),
        [("a", vec![1.0]), ("b", vec![1.0]), ("c", vec![0.0])]
    );
    let unresolved: Vec<&str> = rows
        .report
        .examples
        .iter()
        .filter(|e| e.kind == crate::report::IssueKind::UnresolvedMedication)
        .map(|e| e.detail.as_str())
        .collect();
    assert_eq!(
        unresolved,
        [
            "#med names no Medication contained in the resource",
            "Medication/gone names no Medication in the export"
        ]
    );
}

#[test]
fn a_series_counts_undated_and_out_of_horizon_observations() {
    let s = FeatureSpec::from_json(
        r#"{"name": "t", "cohort": {"unit": "patient", "index": {"date": "2024-01-01"},
              "category": "ehr_data"},
            "features": [{"name": "sex", "category": "ehr_data", "source": {"patient": "gender"},
              "transform": {"kind": "map", "values": {"male": 1, "female": 0}}}],
            "time_series": {"hours": 24, "bin_minutes": 60, "channels": [
              {"name": "hr", "category": "ehr_data", "unit": "/min", "aggregate": "mean",
               "observation": {"system": "http://loinc.org", "code": "8867-4"}}]},
            "label": {"name": "y", "category": "ehr_data", "source": {"patient": "deceased"}}}"#,
    )
    .unwrap();
    let hr = |id: &str, when: &str| {
        entry(format!(
            r#"{{"resourceType": "Observation", "id": "{id}", "status": "final",
                "subject": {{"reference": "Patient/a"}}{when},
                "code": {{"coding": [{{"system": "http://loinc.org", "code": "8867-4"}}]}},
                "valueQuantity": {{"value": 80, "unit": "/min"}}}}"#
        ))
    };
    let rows = extract_json(
        &s,
        &bundle(&[
            patient("a", ""),
            hr("h1", r#", "effectiveDateTime": "2024-01-01T03:00:00Z""#),
            hr("h2", ""),
            hr("h3", r#", "effectiveDateTime": "2024-01-03T03:00:00Z""#),
        ]),
    )
    .unwrap();
    assert_eq!(rows.rows.len(), 1);
    assert_eq!(rows.report.matched["hr"], 3);
    assert_eq!(ignored(&rows, "hr", Undated), 1);
    assert_eq!(ignored(&rows, "hr", OutsideWindow), 1);
}

#[test]
fn a_condition_label_after_the_index_never_reads_an_undated_one() {
    let s = spec(
        AT_2024,
        &medication_feature("metformin", ""),
        &format!(
            r#"{{"condition": {{"codes": [{{"system": "{SCT}", "code": "38341003"}}],
                 "within": "365d"}}}}"#
        ),
    );
    let rows = extract_json(
        &s,
        &bundle(&[
            patient("a", ""),
            condition("a1", "a", &clinical("active")),
            patient("b", ""),
            condition(
                "b1",
                "b",
                &format!(r#"{}, "onsetDateTime": "2024-03-01""#, clinical("active")),
            ),
            condition(
                "b2",
                "b",
                &format!(r#"{}, "onsetDateTime": "2023-03-01""#, clinical("active")),
            ),
        ]),
    )
    .unwrap();
    let labels: Vec<(&str, u32)> = rows
        .rows
        .iter()
        .map(|r| (r.pseudonym.as_str(), r.label))
        .collect();
    assert_eq!(labels, [("a", 0), ("b", 1)]);
    assert_eq!(ignored(&rows, "y", Undated), 1);
    assert_eq!(ignored(&rows, "y", OutsideWindow), 1);
    let check = Check::new(&s, rows);
    assert_eq!((check.label.matched, check.label.ignored[&Undated]), (3, 1));
}

#[test]
fn activity_before_any_matching_record_still_censors_survival() {
    let s = spec(
        AT_2024,
        &condition_feature("htn", ""),
        &format!(
            r#"{{"survival": {{"event": {{"condition": {{"codes": [{{"system": "{SCT}",
                 "code": "22298006"}}]}}}}, "follow_up": "365d"}}}}"#
        ),
    );
    // an Observation no part of the specification reads, met before anything else of `a`
    let visit = entry(
        r#"{"resourceType": "Observation", "id": "v1", "status": "final",
            "subject": {"reference": "Patient/a"}, "effectiveDateTime": "2024-03-01",
            "code": {"coding": [{"system": "http://loinc.org", "code": "29463-7"}]},
            "valueQuantity": {"value": 70, "unit": "kg"}}"#
            .into(),
    );
    let stray = visit.replace("Patient/a", "Patient/nobody");
    let rows = extract_json(
        &s,
        &bundle(&[
            visit,
            stray,
            patient("a", ""),
            condition(
                "a1",
                "a",
                &format!(r#"{}, "onsetDateTime": "2023-01-01""#, clinical("active")),
            ),
        ]),
    )
    .unwrap();
    let got: Vec<(&str, u32, Option<f32>)> = rows
        .rows
        .iter()
        .map(|r| (r.pseudonym.as_str(), r.label, r.time))
        .collect();
    // censored at the last record, 60 days after the index
    assert_eq!(got, [("a", 0, Some(60.0))]);
    // a reference met only to date activity is no unresolved subject
    assert_eq!(
        rows.report
            .count(crate::report::IssueKind::UnresolvedSubject),
        0
    );
}

#[test]
fn binaries_without_an_id_resolve_by_full_url_and_a_second_copy_is_skipped() {
    use base64::Engine as _;
    let s = FeatureSpec::from_json(
        r#"{"name": "t", "image": {"name": "img", "category": "ehr_data",
              "media": {"modality": [{"system": "s", "code": "m"}]},
              "channels": 1, "height": 1, "width": 1},
            "label": {"name": "y", "category": "ehr_data", "source": {"patient": "deceased"}}}"#,
    )
    .unwrap();
    let png = |v: u8| {
        let png =
            crate::image::tests::png(1, 1, png::ColorType::Grayscale, png::BitDepth::Eight, &[v]);
        base64::engine::general_purpose::STANDARD.encode(png)
    };
    let media = |id: &str, subject: &str, url: &str, status: &str| {
        entry(format!(
            r#"{{"resourceType": "Media", "id": "{id}", "status": "{status}",
                "subject": {{"reference": "Patient/{subject}"}},
                "modality": {{"coding": [{{"system": "s", "code": "m"}}]}},
                "content": {{"contentType": "image/png", "url": "{url}"}}}}"#
        ))
    };
    let rows = extract_json(
        &s,
        &bundle(&[
            patient("a", ""),
            media("m1", "a", "urn:uuid:b-a", "completed"),
            format!(
                r#"{{"fullUrl": "urn:uuid:b-a", "resource": {{"resourceType": "Binary",
                    "contentType": "image/png", "data": "{}"}}}}"#,
                png(255)
            ),
            patient("b", ""),
            media("m2", "b", "Binary/b-b", "completed"),
            media("m3", "b", "Binary/b-b", "entered-in-error"),
            entry(format!(
                r#"{{"resourceType": "Binary", "id": "b-b", "contentType": "image/png",
                    "data": "{}"}}"#,
                png(0)
            )),
            entry(format!(
                r#"{{"resourceType": "Binary", "id": "b-b", "contentType": "image/png",
                    "data": "{}"}}"#,
                png(255)
            )),
            entry(format!(
                r#"{{"resourceType": "Binary", "contentType": "image/png", "data": "{}"}}"#,
                png(255)
            )),
        ]),
    )
    .unwrap();
    let got: Vec<(&str, f32)> = rows
        .rows
        .iter()
        .map(|r| (r.pseudonym.as_str(), r.image.as_ref().unwrap()[0]))
        .collect();
    assert_eq!(got, [("a", 1.0), ("b", 0.0)]);
    assert_eq!(rows.report.count(crate::report::IssueKind::DuplicateId), 1);
    assert_eq!(rows.report.count(crate::report::IssueKind::MissingId), 1);
    assert_eq!(rows.report.matched["img"], 3);
    assert_eq!(ignored(&rows, "img", Status), 1);
}
