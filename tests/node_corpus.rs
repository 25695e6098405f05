//! The generated ICU federation read as hospitals export it: Bulk Data NDJSON (gzipped) per
//! hospital, each through its own code map, for the task types (binary mortality, survival,
//! time series, multi-label outcomes). Values are checked against the raw resources by hand-written
//! recomputation, not against the extractor's own output.
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use ehds_core::domain::DataCategory;
use ehds_node::check::Check;
use ehds_node::codemap::CodeMap;
use ehds_node::features::{FeatureSpec, Task};
use ehds_node::fhir_source::load;
use ehds_node::report::IssueKind;
use ehds_node::{DataSource, SiteRows, SplitPlan};
use ehds_tools::corpus::{generate, SITES};
use serde_json::Value;

const PATIENTS: usize = 120;
const SEED: u64 = 2026;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/icu-federation")
}

fn spec(name: &str) -> FeatureSpec {
    FeatureSpec::from_file(&dir().join(format!("{name}.features.json"))).unwrap()
}

fn read_site(spec: &FeatureSpec, site: &str) -> SiteRows {
    let map = CodeMap::from_file(&dir().join(format!("{site}.codemap.json")), spec).unwrap();
    load(spec, &dir().join(site), Some(&map)).unwrap()
}

fn gunzip(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn resources(site: &str, ty: &str) -> Vec<Value> {
    String::from_utf8(gunzip(&dir().join(site).join(format!("{ty}.ndjson.gz"))))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn t(v: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap())
        .unwrap()
        .timestamp()
}

/// With `UPDATE_EXAMPLES=1` the test first rewrites the committed corpus; without it, it
/// fails when the generator's output drifts from it (compared decompressed, so a different
/// gzip implementation does not matter).
#[test]
fn committed_corpus_regenerates_identically() {
    if std::env::var_os("UPDATE_EXAMPLES").is_some_and(|v| v == "1") {
        generate(&dir(), &SITES, PATIENTS, SEED, true).unwrap();
    }
    let tmp = tempfile::tempdir().unwrap();
    let counts = generate(tmp.path(), &SITES, PATIENTS, SEED, true).unwrap();
    for site in SITES {
        for ty in [
            "Patient",
            "Encounter",
            "Condition",
            "MedicationRequest",
            "Observation",
        ] {
            let name = format!("{}/{ty}.ndjson.gz", site.key);
            assert!(
                gunzip(&tmp.path().join(&name)) == gunzip(&dir().join(&name)),
                "examples/icu-federation/{name} differs from what the generator writes; \
                 regenerate it (examples/icu-federation/README.md)"
            );
        }
    }
    for c in &counts {
        assert_eq!(c.patients, PATIENTS);
        assert!(c.observations > 50 * PATIENTS, "{c:?}");
        assert!(c.in_hospital_deaths > 5 && c.deaths < PATIENTS / 2, "{c:?}");
    }
}

#[test]
fn mortality_rows_through_each_code_map() {
    let s = spec("mortality");
    for site in SITES {
        let rows = read_site(&s, site.key);
        let r = &rows.report;
        assert_eq!(r.bad_inputs(), 0, "{}: {:?}", site.key, r.examples);
        // one row per inpatient stay; the outpatient visits are excluded by class
        assert_eq!(rows.rows.len(), PATIENTS, "{}", site.key);
        assert!(r.excluded["encounter class not included"] > 0);
        let deaths = rows.rows.iter().filter(|r| r.label == 1).count();
        assert!(
            deaths > 5 && deaths < PATIENTS / 2,
            "{}: {deaths}",
            site.key
        );
        // the conditions are found whatever terminology the site codes them in
        let ckd = rows
            .columns
            .iter()
            .position(|c| c == "chronic_kidney_disease")
            .unwrap();
        assert!(
            rows.rows.iter().any(|r| r.features[ckd] == 1.0),
            "{}",
            site.key
        );
        let drugs = rows
            .columns
            .iter()
            .position(|c| c == "diabetes_drugs")
            .unwrap();
        assert!(
            rows.rows.iter().any(|r| r.features[drugs] >= 1.0),
            "{}",
            site.key
        );
        let u = |name: &str| r.units.get(name).cloned().unwrap_or_default();
        match site.key {
            "north" => {
                assert!(u("glucose_max").found.contains_key("mmol/L"));
                assert_eq!(u("glucose_max").converted, u("glucose_max").found["mmol/L"]);
                assert!(u("creatinine_slope").found.contains_key("umol/L"));
            }
            "west" => {
                assert!(u("temp_max").converted > 0 && u("temp_max").found.contains_key("[degF]"))
            }
            _ => assert!(u("sbp_min").found["mm[Hg]"] > 0), // from panel components
        }
        assert!(rows
            .site_data(site.key, &SplitPlan::new(0.2, 0.2, 1))
            .is_ok());
    }
    // without its code map, the south site finds none of the SNOMED-coded conditions
    let raw = load(&s, &dir().join("south"), None).unwrap();
    let ckd = raw
        .columns
        .iter()
        .position(|c| c == "chronic_kidney_disease")
        .unwrap();
    assert!(raw.rows.iter().all(|r| r.features[ckd] == 0.0));
}

#[test]
fn mortality_values_recomputed_by_hand() {
    let s = spec("mortality");
    let rows = read_site(&s, "north");
    let patients = resources("north", "Patient");
    let encounters = resources("north", "Encounter");
    let observations = resources("north", "Observation");
    for row in rows.rows.iter().take(15) {
        let stay = encounters
            .iter()
            .find(|e| e["id"] == row.encounter.as_deref().unwrap())
            .unwrap();
        let admit = t(&stay["period"]["start"]);
        let subject = format!("Patient/{}", row.pseudonym);
        let in_day = |code: &str| -> Vec<(i64, f64)> {
            observations
                .iter()
                .filter(|o| o["subject"]["reference"] == subject.as_str())
                .filter(|o| o["code"]["coding"][0]["code"] == code)
                .map(|o| {
                    (
                        t(&o["effectiveDateTime"]),
                        o["valueQuantity"]["value"].as_f64().unwrap(),
                    )
                })
                .filter(|(when, _)| *when >= admit && *when <= admit + 24 * 3600)
                .collect()
        };
        let col = |name: &str| row.features[rows.columns.iter().position(|c| c == name).unwrap()];
        let hr: Vec<f64> = in_day("8867-4").into_iter().map(|x| x.1).collect();
        if hr.is_empty() {
            assert!(col("hr_max").is_nan() && col("hr_max#missing") == 1.0);
        } else {
            let max = hr.iter().cloned().fold(f64::MIN, f64::max);
            assert!((f64::from(col("hr_max")) - max).abs() < 1e-4);
            assert_eq!(col("hr_max#missing"), 0.0);
        }
        // glucose: mmol/L at this site, mg/dL in the study (molar mass 180.156 g/mol)
        let glucose = in_day("15074-8");
        let max = glucose.iter().map(|x| x.1).fold(f64::MIN, f64::max) * 180.156 / 10.0;
        assert!(
            (f64::from(col("glucose_max")) - max).abs() < 1e-3 * max,
            "{} vs {max}",
            col("glucose_max")
        );
        // age in full years at admission
        let p = patients
            .iter()
            .find(|p| p["id"] == row.pseudonym.as_str())
            .unwrap();
        let birth = chrono::NaiveDate::parse_from_str(p["birthDate"].as_str().unwrap(), "%Y-%m-%d")
            .unwrap();
        let at = chrono::DateTime::from_timestamp(admit, 0)
            .unwrap()
            .date_naive();
        let age = at.years_since(birth).unwrap();
        assert_eq!(col("age"), age as f32);
        // death within 30 days of admission
        let died = p["deceasedDateTime"]
            .as_str()
            .map(|d| chrono::DateTime::parse_from_rfc3339(d).unwrap().timestamp())
            .is_some_and(|d| d > admit && d - admit <= 30 * 86_400);
        assert_eq!(row.label, u32::from(died), "{}", row.pseudonym);
    }
}

/// Three outcomes as one multi-label label: each bit recomputed from the raw resources (north
/// records creatinine in umol/L under the molar LOINC code; the label reads mg/dL).
#[test]
fn outcome_bits_recomputed_by_hand() {
    let s = spec("outcomes");
    assert_eq!(s.task(), Task::Multilabel { labels: 3 });
    let rows = read_site(&s, "north");
    assert_eq!(rows.task, Task::Multilabel { labels: 3 });
    assert_eq!(rows.rows.len(), PATIENTS);
    let patients = resources("north", "Patient");
    let encounters = resources("north", "Encounter");
    let observations = resources("north", "Observation");
    let mut positives = [0; 3];
    for row in &rows.rows {
        let stay = encounters
            .iter()
            .find(|e| e["id"] == row.encounter.as_deref().unwrap())
            .unwrap();
        let admit = t(&stay["period"]["start"]);
        let p = patients
            .iter()
            .find(|p| p["id"] == row.pseudonym.as_str())
            .unwrap();
        let death = p["deceasedDateTime"]
            .as_str()
            .map(|d| chrono::DateTime::parse_from_rfc3339(d).unwrap().timestamp());
        let died_within =
            |days: i64| death.is_some_and(|d| d > admit && d - admit <= days * 86_400);
        let subject = format!("Patient/{}", row.pseudonym);
        let creatinine_max = observations
            .iter()
            .filter(|o| o["subject"]["reference"] == subject.as_str())
            .filter(|o| o["code"]["coding"][0]["code"] == "14682-9")
            .filter(|o| {
                let when = t(&o["effectiveDateTime"]);
                when > admit && when <= admit + 72 * 3600
            })
            .map(|o| o["valueQuantity"]["value"].as_f64().unwrap() / 88.42)
            .fold(f64::MIN, f64::max);
        let expected = u32::from(died_within(30))
            | u32::from(died_within(365)) << 1
            | u32::from(creatinine_max > 2.0) << 2;
        assert_eq!(row.label, expected, "{}", row.pseudonym);
        for (k, n) in positives.iter_mut().enumerate() {
            *n += (row.label >> k & 1) as usize;
        }
    }
    // every label has positives and negatives at this site
    assert!(
        positives.iter().all(|&n| n > 0 && n < PATIENTS),
        "{positives:?}"
    );
}

#[test]
fn survival_times_are_censored_at_follow_up_or_the_last_record() {
    let s = spec("survival");
    assert_eq!(s.task(), Task::Survival);
    let rows = read_site(&s, "west");
    assert_eq!(rows.task, Task::Survival);
    assert_eq!(rows.rows.len(), PATIENTS);
    let patients = resources("west", "Patient");
    let encounters = resources("west", "Encounter");
    for row in &rows.rows {
        let p = patients
            .iter()
            .find(|p| p["id"] == row.pseudonym.as_str())
            .unwrap();
        let mine: Vec<&Value> = encounters
            .iter()
            .filter(|e| e["subject"]["reference"] == format!("Patient/{}", row.pseudonym).as_str())
            .collect();
        let admit = mine
            .iter()
            .filter(|e| e["class"]["code"] == "IMP")
            .map(|e| t(&e["period"]["start"]))
            .min()
            .unwrap();
        let time = row.time.unwrap() as f64;
        match p["deceasedDateTime"].as_str() {
            Some(d) if t(&Value::from(d)) - admit <= 365 * 86_400 => {
                assert_eq!(row.label, 1);
                assert!((time - (t(&Value::from(d)) - admit) as f64 / 86_400.0).abs() < 1e-3);
            }
            _ => {
                assert_eq!(row.label, 0);
                // censored at the last record (the follow-up visit) or at 365 days
                let last = mine
                    .iter()
                    .map(|e| t(&e["period"]["end"]))
                    .chain(p["deceasedDateTime"].as_str().map(|d| t(&Value::from(d))))
                    .max()
                    .unwrap();
                let expect = ((last - admit) as f64 / 86_400.0).min(365.0);
                assert!(
                    (time - expect).abs() < 0.02,
                    "{} {time} vs {expect}",
                    row.pseudonym
                );
            }
        }
    }
    let tensors = rows.tensors(&SplitPlan::new(0.2, 0.2, 3)).unwrap();
    assert_eq!(tensors.train.time.len(), tensors.train.n);
    assert_eq!(
        tensors.train.features.len(),
        tensors.train.n * tensors.n_features
    );
    assert!(tensors.train.labels.contains(&1));
    // the engine's binary path refuses a survival target rather than train on the event flag
    assert!(rows
        .site_data("west", &SplitPlan::new(0.2, 0.2, 3))
        .is_err());
}

#[test]
fn time_series_bins_and_masks() {
    let s = spec("timeseries");
    let rows = read_site(&s, "south");
    let shape = rows.series.clone().unwrap();
    assert_eq!(shape.steps, 24);
    assert_eq!(
        shape.channels,
        ["hr", "rr", "sbp", "temp", "spo2", "lactate"]
    );
    let k = shape.channels.len();
    let encounters = resources("south", "Encounter");
    let observations = resources("south", "Observation");
    for row in rows.rows.iter().take(10) {
        let series = row.series.as_ref().unwrap();
        assert_eq!(series.values.len(), 24 * k);
        let admit = t(&encounters
            .iter()
            .find(|e| e["id"] == row.encounter.as_deref().unwrap())
            .unwrap()["period"]["start"]);
        let subject = format!("Patient/{}", row.pseudonym);
        // heart rate: mean of each hour's readings, the mask where there was one
        let mut bins: Vec<Vec<f64>> = vec![vec![]; 24];
        for o in observations.iter().filter(|o| {
            o["subject"]["reference"] == subject.as_str()
                && o["code"]["coding"][0]["code"] == "8867-4"
        }) {
            let d = t(&o["effectiveDateTime"]) - admit;
            if (0..24 * 3600).contains(&d) {
                bins[(d / 3600) as usize].push(o["valueQuantity"]["value"].as_f64().unwrap());
            }
        }
        let mut last = f32::NAN;
        for (b, vals) in bins.iter().enumerate() {
            let (v, m) = (series.values[b * k], series.mask[b * k]);
            if vals.is_empty() {
                assert_eq!(m, 0);
                assert!(v.is_nan() && last.is_nan() || v == last, "carried forward");
            } else {
                let mean = vals.iter().sum::<f64>() / vals.len() as f64;
                assert_eq!(m, 1);
                assert!((f64::from(v) - mean).abs() < 1e-3);
                last = v;
            }
        }
        // systolic pressure comes from the panel's components at this site
        assert!(series.mask.iter().skip(2).step_by(k).any(|m| *m == 1));
    }
    let tensors = rows.tensors(&SplitPlan::new(0.2, 0.2, 5)).unwrap();
    for set in [&tensors.train, &tensors.val, &tensors.test] {
        assert_eq!(set.series.len(), set.n * 24 * k);
        assert_eq!(set.mask.len(), set.series.len());
        assert!(set.series.iter().all(|v| v.is_finite()));
    }
    // standardised with the training part's observed bins: mean 0 there
    for c in 0..k {
        let obs: Vec<f32> = tensors
            .train
            .series
            .iter()
            .zip(&tensors.train.mask)
            .skip(c)
            .step_by(k)
            .filter(|(_, m)| **m == 1)
            .map(|(v, _)| *v)
            .collect();
        let mean = obs.iter().sum::<f32>() / obs.len() as f32;
        assert!(mean.abs() < 1e-3, "channel {c}: {mean}");
    }
}

#[test]
fn imputation_is_fitted_on_training_rows_only() {
    let s = spec("mortality");
    let rows = read_site(&s, "west");
    let (train, _, _) = rows.train_val(&SplitPlan::new(0.2, 0.2, 9)).unwrap();
    let col = rows
        .columns
        .iter()
        .position(|c| c == "lactate_max")
        .unwrap();
    let mut observed: Vec<f32> = train
        .iter()
        .map(|r| r.features[col])
        .filter(|v| !v.is_nan())
        .collect();
    observed.sort_by(f32::total_cmp);
    let n = observed.len();
    let median = if n % 2 == 1 {
        observed[n / 2]
    } else {
        (observed[n / 2 - 1] + observed[n / 2]) / 2.0
    };
    let data = rows
        .site_data("west", &SplitPlan::new(0.2, 0.2, 9))
        .unwrap();
    // a training row whose lactate was imputed carries the median, standardised
    let imputed = train.iter().position(|r| r.features[col].is_nan());
    if let Some(i) = imputed {
        let z = data.train.row(i)[col];
        let mean = train
            .iter()
            .map(|r| {
                if r.features[col].is_nan() {
                    median
                } else {
                    r.features[col]
                }
            })
            .map(f64::from)
            .sum::<f64>()
            / train.len() as f64;
        let var = train
            .iter()
            .map(|r| {
                if r.features[col].is_nan() {
                    median
                } else {
                    r.features[col]
                }
            })
            .map(|v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / train.len() as f64;
        assert!((f64::from(z) - (f64::from(median) - mean) / var.sqrt()).abs() < 1e-4);
    }
    assert!(data.train.features().iter().all(|v| v.is_finite()));
}

#[test]
fn private_features_stay_local_and_need_a_declared_category() {
    let s = spec("mortality");
    let rows = read_site(&s, "west");
    assert_eq!(rows.private_columns, ["west_spo2_mean"]);
    assert!(rows.rows.iter().all(|r| r.private.len() == 1));
    let data = rows
        .site_data("west", &SplitPlan::new(0.2, 0.2, 1))
        .unwrap();
    assert_eq!(data.train.n_features(), s.n_columns());
    let source = DataSource::Mapped {
        data: Box::new(DataSource::Fhir(dir().join("west"))),
        code_map: dir().join("west.codemap.json"),
    };
    assert!(source.read_for_study(&s, &[DataCategory::EhrData]).is_ok());
    let tmp = tempfile::tempdir().unwrap();
    let map = std::fs::read_to_string(dir().join("west.codemap.json")).unwrap();
    let genetic = map.replace(
        r#""name": "west_spo2_mean",
      "category": "ehr_data""#,
        r#""name": "west_spo2_mean",
      "category": "genetic_data""#,
    );
    assert_ne!(genetic, map);
    std::fs::write(tmp.path().join("map.json"), genetic).unwrap();
    let source = DataSource::Mapped {
        data: Box::new(DataSource::Fhir(dir().join("west"))),
        code_map: tmp.path().join("map.json"),
    };
    let err = source
        .read_for_study(&s, &[DataCategory::EhrData])
        .unwrap_err();
    assert!(err.to_string().contains("genetic_data"), "{err}");
}

/// A Bulk Data export with every kind of bad input: each is counted with its file, line and
/// resource, and the rest is read.
#[test]
fn bad_input_is_counted_with_its_location() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let patient = |id: &str| {
        format!(
            r#"{{"resourceType":"Patient","id":"{id}","birthDate":"1950-01-01","gender":"male","meta":{{"tag":[{{"system":"urn:ehds-gateway:split","code":"train"}}]}}}}"#
        )
    };
    let stay = |id: &str, p: &str| {
        format!(
            r#"{{"resourceType":"Encounter","id":"{id}","status":"finished","class":{{"code":"IMP"}},"subject":{{"reference":"Patient/{p}"}},"period":{{"start":"2024-01-01T00:00:00Z","end":"2024-01-03T00:00:00Z"}}}}"#
        )
    };
    let hr = |id: &str, p: &str, when: &str, unit: &str| {
        format!(
            r#"{{"resourceType":"Observation","id":"{id}","status":"final","code":{{"coding":[{{"system":"http://loinc.org","code":"8867-4"}}]}},"subject":{{"reference":"Patient/{p}"}},"effectiveDateTime":"{when}","valueQuantity":{{"value":90,"unit":"{unit}"}}}}"#
        )
    };
    std::fs::write(
        d.join("Patient.ndjson"),
        [
            patient("a"),
            patient("b"),
            "{not json".into(),
            r#"{"resourceType":"Procedure","id":"x"}"#.into(),
            r#"{"resourceType":"NoSuchFhirType","id":"y"}"#.into(),
        ]
        .join("\n"),
    )
    .unwrap();
    let ckd = |id: &str, p: &str, when: &str| {
        format!(
            r#"{{"resourceType":"Condition","id":"{id}","code":{{"coding":[{{"system":"http://snomed.info/sct","code":"709044004"}}]}},"subject":{{"reference":"Patient/{p}"}},"onsetDateTime":"{when}"}}"#
        )
    };
    std::fs::write(
        d.join("Condition.ndjson"),
        [
            ckd("c1", "a", "2023-05-01"),
            ckd("c2", "nobody", "2023-05-01"),
            ckd("c3", "b", "2023-02-30"),
        ]
        .join("\n"),
    )
    .unwrap();
    std::fs::write(
        d.join("Encounter.ndjson"),
        [stay("e1", "a"), stay("e2", "b")].join("\n"),
    )
    .unwrap();
    let obs = [
        hr("o1", "a", "2024-01-01T05:00:00Z", "/min"),
        hr("o2", "ghost", "2024-01-01T05:00:00Z", "/min"),
        hr("o3", "a", "yesterday", "/min"),
        hr("o4", "a", "2024-01-01T06:00:00Z", "furlongs"),
        hr("o1", "a", "2024-01-01T07:00:00Z", "/min"),
        hr("o5", "b", "2024-01-01T02:00:00Z", "bpm"),
        r#"{"resourceType":"Observation","id":"o6","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"8867-4"}]},"subject":{"reference":"Patient/b"},"valueQuantity":{"value":"ninety"}}"#.into(),
        r#"{"resourceType":"Observation","id":"o7","status":"final","code":{"coding":[{"system":"http://loinc.org","code":"8867-4"}]},"effectiveDateTime":"2024-01-01T05:00:00Z","valueQuantity":{"value":80,"unit":"/min"}}"#.into(),
    ];
    // gzipped, as exports are
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, obs.join("\n").as_bytes()).unwrap();
    std::fs::write(d.join("Observation.ndjson.gz"), gz.finish().unwrap()).unwrap();
    let s = spec("mortality");
    let rows = load(&s, d, None).unwrap();
    let r = &rows.report;
    let at = |kind: IssueKind| r.examples.iter().find(|e| e.kind == kind).unwrap();
    assert_eq!(r.count(IssueKind::MalformedJson), 1);
    assert_eq!(
        (
            at(IssueKind::MalformedJson).file.as_deref(),
            at(IssueKind::MalformedJson).line
        ),
        (Some("Patient.ndjson"), Some(3))
    );
    // a type the specification does not read and a type FHIR does not have: counted, skipped
    assert_eq!(r.count(IssueKind::TypeNotRead), 2);
    let not_read: Vec<_> = r
        .examples
        .iter()
        .filter(|e| e.kind == IssueKind::TypeNotRead)
        .map(|e| (e.line, e.detail.contains("NoSuchFhirType")))
        .collect();
    assert!(not_read.contains(&(Some(5), true)), "{not_read:?}");
    // references to patients the export does not hold, from any resource type
    assert_eq!(r.count(IssueKind::UnresolvedSubject), 2);
    let unresolved = |rid: &str| {
        r.examples
            .iter()
            .find(|e| e.kind == IssueKind::UnresolvedSubject && e.resource.as_deref() == Some(rid))
            .unwrap_or_else(|| panic!("{rid}: {:?}", r.examples))
    };
    assert!(unresolved("Observation/o2")
        .detail
        .contains("Patient/ghost"));
    let c2 = unresolved("Condition/c2");
    assert!(c2.detail.contains("Patient/nobody"));
    assert_eq!(
        (c2.file.as_deref(), c2.line),
        (Some("Condition.ndjson"), Some(2))
    );
    // a resource without a subject
    assert_eq!(r.count(IssueKind::NoSubject), 1);
    assert_eq!(
        at(IssueKind::NoSubject).resource.as_deref(),
        Some("Observation/o7")
    );
    // dates that do not parse: free text, and a day February does not have
    assert_eq!(r.count(IssueKind::BadDate), 2);
    assert_eq!(at(IssueKind::BadDate).line, Some(3));
    let bad_dates: Vec<_> = r
        .examples
        .iter()
        .filter(|e| e.kind == IssueKind::BadDate)
        .map(|e| (e.file.as_deref(), e.resource.as_deref()))
        .collect();
    assert!(
        bad_dates.contains(&(Some("Condition.ndjson"), Some("Condition/c3"))),
        "{bad_dates:?}"
    );
    assert_eq!(r.count(IssueKind::Unit), 1);
    assert_eq!(
        at(IssueKind::Unit).resource.as_deref(),
        Some("Observation/o4")
    );
    assert!(at(IssueKind::Unit).detail.contains("furlongs"));
    assert_eq!(r.count(IssueKind::DuplicateId), 1);
    assert_eq!(at(IssueKind::DuplicateId).line, Some(5));
    assert_eq!(r.count(IssueKind::InvalidResource), 1);
    assert_eq!(
        at(IssueKind::InvalidResource).resource.as_deref(),
        Some("Observation/o6")
    );
    // the rest was read: both stays are rows, their heart rates are the good readings
    assert_eq!(rows.rows.len(), 2);
    let hr_max = rows.columns.iter().position(|c| c == "hr_max").unwrap();
    assert_eq!(rows.rows[0].features[hr_max], 90.0);
    assert_eq!(rows.rows[1].features[hr_max], 90.0); // `bpm` read as /min
                                                     // a gzip file that breaks off stops the read: what follows is lost
    let bytes = std::fs::read(d.join("Observation.ndjson.gz")).unwrap();
    std::fs::write(d.join("Observation.ndjson.gz"), &bytes[..bytes.len() - 12]).unwrap();
    let err = load(&s, d, None).unwrap_err();
    assert!(err.to_string().contains("Observation.ndjson.gz"), "{err}");
    // two Patients with the same id cannot be told apart: the read stops with an error that
    // names the id and where the second one is, and no rows exist to be trained on or uploaded
    std::fs::write(d.join("Observation.ndjson.gz"), &bytes).unwrap();
    assert!(load(&s, d, None).is_ok());
    std::fs::write(
        d.join("Patient.ndjson"),
        [patient("a"), patient("b"), patient("a")].join("\n"),
    )
    .unwrap();
    let err = load(&s, d, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Patient.ndjson line 3: patient `a` appears twice"
    );
}

#[test]
fn node_check_reports_without_a_gateway() {
    let s = spec("mortality");
    let check = Check::new(&s, read_site(&s, "north"));
    assert_eq!(check.cohort.rows, PATIENTS);
    assert_eq!(check.cohort.train + check.cohort.test, PATIENTS);
    let table = check.table();
    for needle in [
        "cohort",
        "glucose_max",
        "mmol/L",
        "excluded",
        "death_30d",
        "median",
    ] {
        assert!(table.contains(needle), "{needle}:\n{table}");
    }
    // the binary, as a hospital runs it
    let out = std::process::Command::new(ehds_tools::built_program("ehds-node"))
        .args(["check", "--json", "--spec"])
        .arg(dir().join("timeseries.features.json"))
        .arg("--fhir")
        .arg(dir().join("west"))
        .arg("--code-map")
        .arg(dir().join("west.codemap.json"))
        .env("EHDS_GATEWAY_URL", "http://127.0.0.1:9") // nothing listens; nothing is called
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["cohort"]["rows"], PATIENTS);
    // the split the node would use, and the warnings by their stable codes
    let split = &json["split"];
    assert!(split["decided_by"].is_string(), "{split}");
    let parts = ["train", "validation", "test"].map(|p| split[p].as_u64().unwrap());
    assert_eq!(parts.iter().sum::<u64>(), PATIENTS as u64, "{split}");
    for w in json["warnings"].as_array().expect("warnings") {
        assert!(w["code"].is_string() && w["subject"].is_string() && w["detail"].is_string());
    }
    assert_eq!(json["time_series"]["steps"], 24);
    let cats: BTreeSet<String> = serde_json::from_value(json["categories"].clone()).unwrap();
    assert_eq!(cats, BTreeSet::from(["ehr_data".to_owned()]));
    assert!(
        json["input"]["units"]["temp"]["converted"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn study_data_sets_lay_rows_out_as_the_study_reads_them() {
    use ehds_core::domain::study::StudyTask;
    // time series: [series | mask | static], series time-major
    let s = spec("timeseries");
    let rows = read_site(&s, "south");
    let tensors = rows.tensors(&SplitPlan::new(0.2, 0.2, 5)).unwrap();
    let data = tensors
        .site_data("south", rows.task, StudyTask::Binary)
        .unwrap();
    let layout = s.row_layout();
    let (t, k, d) = (24, 6, tensors.n_features);
    assert_eq!((layout.steps, layout.channels, layout.statics()), (t, k, d));
    assert_eq!(data.train.n_features(), layout.width());
    assert_eq!(layout.width(), 2 * t * k + d);
    assert_eq!(data.train.len(), tensors.train.n);
    for i in [0, tensors.train.n - 1] {
        let row = &data.train.features()[i * layout.width()..(i + 1) * layout.width()];
        assert_eq!(
            &row[..t * k],
            &tensors.train.series[i * t * k..(i + 1) * t * k]
        );
        let mask: Vec<f32> = tensors.train.mask[i * t * k..(i + 1) * t * k]
            .iter()
            .map(|&m| f32::from(m))
            .collect();
        assert_eq!(&row[t * k..2 * t * k], mask.as_slice());
        assert_eq!(
            &row[2 * t * k..],
            &tensors.train.features[i * d..(i + 1) * d]
        );
    }
    assert_eq!(data.train.labels(), tensors.train.labels.as_slice());
    // a binary label also trains a two-class softmax, never a survival model
    assert!(tensors
        .site_data("south", rows.task, StudyTask::Multiclass { classes: 2 })
        .is_ok());
    assert!(tensors
        .site_data("south", rows.task, StudyTask::Survival)
        .is_err());

    // survival: the engine's survival targets are the extracted days and events
    let s = spec("survival");
    let rows = read_site(&s, "west");
    let tensors = rows.tensors(&SplitPlan::new(0.2, 0.2, 3)).unwrap();
    let data = tensors
        .site_data("west", rows.task, StudyTask::Survival)
        .unwrap();
    assert_eq!(data.test.n_features(), s.row_layout().width());
    let (time, event) = data.test.survival_targets().unwrap();
    assert_eq!(time, tensors.test.time);
    let events: Vec<bool> = tensors.test.labels.iter().map(|&l| l == 1).collect();
    assert_eq!(event, events);
    assert!(event.contains(&true) && event.contains(&false));
    assert!(tensors
        .site_data("west", rows.task, StudyTask::Binary)
        .is_err());
}

#[test]
fn a_binary_study_on_static_features_gets_the_same_data_as_before() {
    use ehds_core::domain::study::StudyTask;
    let s = spec("mortality");
    let rows = read_site(&s, "north");
    let before = rows
        .site_data("north", &SplitPlan::new(0.2, 0.2, 9))
        .unwrap();
    let now = rows
        .tensors(&SplitPlan::new(0.2, 0.2, 9))
        .unwrap()
        .site_data("north", rows.task, StudyTask::Binary)
        .unwrap();
    for (a, b) in [
        (&before.train, &now.train),
        (&before.val, &now.val),
        (&before.test, &now.test),
    ] {
        assert_eq!(a.features(), b.features());
        assert_eq!(a.labels(), b.labels());
        assert_eq!(a.task(), b.task());
    }
}
