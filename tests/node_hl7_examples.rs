//! Third-party FHIR: the official HL7 FHIR R4 example resources (tests/data/hl7-r4-examples,
//! converted once from HL7's examples package, see its SOURCE.md). Every Patient,
//! Observation, Condition, MedicationRequest, MedicationStatement and Encounter example either
//! extracts correctly or is skipped with a precise, per-resource reason, and none crashes the
//! node, read together or one at a time.
use std::path::PathBuf;

use ehds_node::codemap::CodeMap;
use ehds_node::features::FeatureSpec;
use ehds_node::fhir_source::{extract_ndjson, load_with, Options};
use ehds_node::report::IssueKind;
use ehds_node::SiteRows;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/hl7-r4-examples")
}

/// One row per patient at a fixed index date; a source of every kind.
const SPEC: &str = r#"{
  "name": "hl7-examples",
  "cohort": {"unit": "patient", "index": {"date": "2020-01-01"}, "category": "ehr_data"},
  "features": [
    {"name": "sex", "category": "ehr_data", "source": {"patient": "gender"},
     "transform": {"kind": "one_hot", "levels": ["male", "female", "other", "unknown"], "drop_first": false},
     "missing": {"impute": "constant", "value": 0, "indicator": true}},
    {"name": "age", "category": "ehr_data", "source": {"patient": "age"},
     "transform": {"kind": "number", "unit": "a"}, "missing": {"impute": "median", "indicator": true}},
    {"name": "deceased", "category": "ehr_data", "source": {"patient": "deceased"},
     "transform": {"kind": "boolean"}},
    {"name": "weight", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "29463-7"}},
     "transform": {"kind": "number", "unit": "kg"}, "missing": {"impute": "mean"}},
    {"name": "sbp", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "8480-6"}},
     "transform": {"kind": "number", "unit": "mm[Hg]"}, "missing": {"impute": "mean"}},
    {"name": "temp", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "8310-5"}},
     "transform": {"kind": "number", "unit": "[degF]"}, "missing": {"impute": "mean"}},
    {"name": "glucose", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "2345-7"}},
     "transform": {"kind": "number", "unit": "mg/dL"}, "missing": {"impute": "mean"}},
    {"name": "hb", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "718-7"}},
     "transform": {"kind": "number", "unit": "mmol/L"}, "missing": {"impute": "mean"}},
    {"name": "pco2", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "11557-6"}},
     "transform": {"kind": "number", "unit": "mm[Hg]"}, "missing": {"impute": "mean"}},
    {"name": "bicarbonate", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "1963-8"}},
     "transform": {"kind": "number", "unit": "mmol/L"}, "missing": {"impute": "mean"}},
    {"name": "apgar_1min", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "9272-6"}},
     "transform": {"kind": "number"}, "missing": {"impute": "mean"}},
    {"name": "conditions", "category": "ehr_data",
     "source": {"condition": {"codes": [{"system": "http://snomed.info/sct", "code": "3*"},
                                        {"system": "http://snomed.info/sct", "code": "1*"}]}},
     "transform": {"kind": "count"}},
    {"name": "rx_drugs", "category": "ehr_data",
     "source": {"medication": {"codes": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "1*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "2*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "3*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "4*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "5*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "6*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "7*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "8*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "9*"}]}},
     "transform": {"kind": "count"}}
  ],
  "label": {"name": "death_10y", "category": "ehr_data", "source": {"death": {"within": "3650d"}}}
}"#;

/// The same resources one row per Encounter.
const ENCOUNTERS: &str = r#"{
  "name": "hl7-encounters",
  "cohort": {"unit": "encounter", "index": "admission", "category": "ehr_data",
             "include": {"encounter_class": ["IMP", "AMB", "HH"]}},
  "features": [
    {"name": "age", "category": "ehr_data", "source": {"patient": "age"},
     "transform": {"kind": "number"}, "missing": {"impute": "median", "indicator": true}},
    {"name": "hr", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "8867-4",
                "window": {"from": "-36500d"}}},
     "transform": {"kind": "number", "unit": "/min"}, "missing": {"impute": "mean", "indicator": true}}
  ],
  "label": {"name": "condition_after", "category": "ehr_data",
            "source": {"condition": {"codes": [{"system": "http://snomed.info/sct", "code": "1*"}, {"system": "http://snomed.info/sct", "code": "2*"}, {"system": "http://snomed.info/sct", "code": "3*"}, {"system": "http://snomed.info/sct", "code": "4*"}, {"system": "http://snomed.info/sct", "code": "5*"}, {"system": "http://snomed.info/sct", "code": "6*"}, {"system": "http://snomed.info/sct", "code": "7*"}, {"system": "http://snomed.info/sct", "code": "8*"}, {"system": "http://snomed.info/sct", "code": "9*"}]}}}
}"#;

fn spec(text: &str) -> FeatureSpec {
    FeatureSpec::from_json(text).unwrap()
}

fn glucose_map(s: &FeatureSpec) -> CodeMap {
    CodeMap::from_json(
        r#"{"codes": [{"study": {"system": "http://loinc.org", "code": "2345-7"},
                        "local": [{"system": "http://loinc.org", "code": "15074-8"}]}]}"#,
        s,
    )
    .unwrap()
}

fn read(text: &str) -> SiteRows {
    let s = spec(text);
    let map = glucose_map(&s);
    load_with(
        &s,
        &corpus(),
        &Options {
            code_map: Some(&map),
            keep_all_issues: true,
        },
    )
    .unwrap()
}

fn value(rows: &SiteRows, patient: &str, column: &str) -> f32 {
    let c = rows.columns.iter().position(|c| c == column).unwrap();
    rows.rows
        .iter()
        .find(|r| r.pseudonym == patient)
        .unwrap()
        .features[c]
}

#[test]
fn every_example_extracts_or_is_skipped_with_a_reason() {
    let rows = read(SPEC);
    let r = &rows.report;
    assert_eq!(r.resources["Patient"], 22);
    assert_eq!(r.resources["Observation"], 64);
    assert_eq!(r.resources["Condition"], 12);
    assert_eq!(r.resources["MedicationRequest"], 40);
    assert_eq!(r.resources["MedicationStatement"], 7);
    assert_eq!(r.resources["Encounter"], 10);
    assert_eq!(r.resources["Medication"], 23);
    // every HL7 example is valid FHIR R4: none is malformed for the node
    assert_eq!(r.count(IssueKind::MalformedJson), 0, "{:?}", r.examples);
    assert_eq!(r.count(IssueKind::InvalidResource), 0, "{:?}", r.examples);
    // every issue names its file, line and (where the resource has one) id
    for e in &r.examples {
        assert!(e.file.is_some() && e.line.is_some(), "{e:?}");
        if e.kind != IssueKind::ValueType {
            let line = e.line.unwrap() as usize;
            let text = std::fs::read_to_string(corpus().join(e.file.as_deref().unwrap())).unwrap();
            let resource: serde_json::Value =
                serde_json::from_str(text.lines().nth(line - 1).unwrap()).unwrap();
            if let Some(id) = resource["id"].as_str() {
                assert_eq!(
                    e.resource.as_deref(),
                    Some(format!("{}/{id}", resource["resourceType"].as_str().unwrap()).as_str()),
                    "{e:?}"
                );
            }
        }
    }
    let reasons = |kind: IssueKind| -> Vec<String> {
        r.examples
            .iter()
            .filter(|e| e.kind == kind)
            .map(|e| format!("{} {}", e.resource.clone().unwrap_or_default(), e.detail))
            .collect()
    };
    // an Observation the specification reads whose subject is a contained resource, not a
    // Patient of the export: skipped, named
    let unresolved = reasons(IssueKind::UnresolvedSubject);
    assert_eq!(unresolved.len(), 1, "{unresolved:?}");
    assert!(
        unresolved[0].contains("Observation/1minute-apgar-score")
            && unresolved[0].contains("#newborn")
    );
    // patients: pat3 died in 2015, before the index; pat4 is deceased without a date
    assert_eq!(r.excluded["died at or before the index"], 1);
    assert_eq!(r.excluded["deceased without a date of death"], 1);
    assert_eq!(rows.rows.len(), 20);
    // patient by patient: every Patient example is a row, except exactly the two excluded
    let ids: std::collections::BTreeSet<String> =
        std::fs::read_to_string(corpus().join("Patient.ndjson"))
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["id"].as_str().unwrap().to_owned()
            })
            .collect();
    assert_eq!(ids.len(), 22);
    let in_rows: std::collections::BTreeSet<String> =
        rows.rows.iter().map(|r| r.pseudonym.clone()).collect();
    let missing: Vec<&String> = ids.difference(&in_rows).collect();
    assert_eq!(missing, ["pat3", "pat4"], "{missing:?}");
    assert!(in_rows.is_subset(&ids));
}

#[test]
fn example_values_by_hand() {
    let rows = read(SPEC);
    // Patient/example: male, born 1974-12-25: 45 full years on 2020-01-01
    assert_eq!(value(&rows, "example", "age"), 45.0);
    assert_eq!(value(&rows, "example", "sex=male"), 1.0);
    assert_eq!(value(&rows, "example", "age#missing"), 0.0);
    // Patient/ihe-pcd has no gender and no birth date: imputed, flagged
    assert_eq!(value(&rows, "ihe-pcd", "sex#missing"), 1.0);
    assert!(value(&rows, "ihe-pcd", "age").is_nan());
    assert_eq!(value(&rows, "ihe-pcd", "age#missing"), 1.0);
    // Observation/example: 185 [lb_av] = 83.91 kg
    assert!((value(&rows, "example", "weight") - 83.914_6).abs() < 1e-3);
    // Observation/blood-pressure: systolic 107 mm[Hg] from the panel's component (the
    // cancelled panel is ignored)
    assert_eq!(value(&rows, "example", "sbp"), 107.0);
    // Observation/body-temperature: 36.5 Cel = 97.7 [degF]
    assert!((value(&rows, "example", "temp") - 97.7).abs() < 1e-3);
    // Observation/f001: glucose 6.3 mmol/L under the molar code = 113.5 mg/dL (code map)
    assert!((value(&rows, "f001", "glucose") - 113.498).abs() < 1e-2);
    // Observation/f005: hemoglobin 7.2 g/dL = 4.468 mmol/L (monomer molar mass 16114.5)
    assert!((value(&rows, "f001", "hb") - 4.468).abs() < 1e-3);
    // Observation/f003: pCO2 6.2 kPa = 46.5 mm[Hg]
    assert!((value(&rows, "f001", "pco2") - 46.50).abs() < 0.01);
    // Observation/f203 codes its unit in SNOMED CT (258813002) and writes `mmol/l`: the
    // human-readable unit is valid UCUM (`l` is the litre), so 28 mmol/L is read
    assert_eq!(value(&rows, "f201", "bicarbonate"), 28.0);
    // Patient/f201: Conditions f201 (386661006), f202 (363346000), f203 (10001005) and f204
    // (36225005, `differential`: neither refuted nor void) match the prefixes 3* and 1*;
    // f205 (87628006) does not
    assert_eq!(value(&rows, "f201", "conditions"), 4.0);
    // Patient/example: the stroke (422504002) is 4*, not matched; 39065001 matches 3*;
    // the family history (312824007) has no date but is active: known at the index, counted
    assert_eq!(value(&rows, "example", "conditions"), 2.0);
    // pat1's requests and statements whose medication carries an RxNorm code, inline, in a
    // contained Medication or in a Medication resource: 12 (most contained Medications are
    // coded in SNOMED CT only; MedicationStatement/example007 is RxNorm and undated but
    // active: known at the index)
    assert_eq!(value(&rows, "pat1", "rx_drugs"), 12.0);
    // nothing that matched was set aside silently: sbp and temp each have an
    // entered-in-error or cancelled Observation, the Apgar score names no Patient, and the
    // label's undated death is counted under it
    let ignored = |name: &str| {
        rows.report.ignored.get(name).map_or(vec![], |m| {
            m.iter()
                .map(|(k, n)| format!("{k:?} {n}"))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(ignored("sbp"), ["Status 1"]);
    assert_eq!(ignored("temp"), ["Status 1"]);
    assert_eq!(ignored("apgar_1min"), ["Unresolved 1"]);
    assert_eq!(ignored("death_10y"), ["Undated 1"]);
    assert!(ignored("conditions").is_empty() && ignored("rx_drugs").is_empty());
    let matched = &rows.report.matched;
    assert_eq!((matched["conditions"], matched["rx_drugs"]), (8, 12));
    // nobody in the examples is recorded dead after 2020
    assert!(rows.rows.iter().all(|r| r.label == 0));
    // the examples carry no train/test tags: the node splits them itself, patient by patient
    let plan = ehds_node::SplitPlan::new(0.2, 0.2, 1);
    assert_eq!(
        rows.assign(&plan).unwrap().decided_by,
        ehds_node::DecidedBy::Node
    );
    let (train, test) = rows.train_test(&plan).unwrap();
    assert_eq!(train.len() + test.len(), rows.rows.len());
    assert!(rows
        .dataset()
        .unwrap()
        .features()
        .iter()
        .all(|v| v.is_finite()));
}

#[test]
fn encounter_rows_from_the_examples() {
    let rows = read(ENCOUNTERS);
    let r = &rows.report;
    // 10 Encounters: `example` has no period (no start) and is excluded with that reason
    assert_eq!(r.excluded["encounter without a start"], 7);
    let encounters: Vec<&str> = rows
        .rows
        .iter()
        .filter_map(|r| r.encounter.as_deref())
        .collect();
    assert_eq!(encounters, ["home", "emerg", "f203"]);
    // Patient/example's heart rate (44 /min, 1999) is before both of its encounters
    let hr = rows.columns.iter().position(|c| c == "hr").unwrap();
    assert_eq!(rows.rows[0].features[hr], 44.0);
    // f201's stay 2013-03-11: conditions with onset after admission (f201, 2013-04-02; f205,
    // 2013-04-04) make the label 1
    assert_eq!(rows.rows[2].label, 1);
}

/// One resource at a time: a malformed, partial or odd example never takes the node down.
#[test]
fn each_example_alone_never_crashes_the_node() {
    for text in [SPEC, ENCOUNTERS] {
        let s = spec(text);
        for file in std::fs::read_dir(corpus()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_none_or(|e| e != "ndjson") {
                continue;
            }
            let content = std::fs::read_to_string(&path).unwrap();
            for line in content.lines() {
                let rows = extract_ndjson(&s, line, &Options::default()).unwrap();
                let _ = rows.dataset();
                // and cut in half: counted as malformed, never a panic
                let half = &line[..line.len() / 2];
                let rows = extract_ndjson(&s, half, &Options::default()).unwrap();
                assert_eq!(rows.report.count(IssueKind::MalformedJson), 1);
            }
        }
    }
}
