//! Third-party FHIR written by other projects' generators, as they write it: PySynthea's
//! patient Bundles (tests/data/synthea-py: Synthea's disease modules, `urn:uuid:` references,
//! SNOMED CT conditions with onset and abatement times, `deceasedDateTime`, blood pressure as a
//! panel and as separate Observations) and carebundle's Bulk Data exports
//! (tests/data/carebundle: ICD-10-CM problem-list conditions with date-only onsets,
//! display-text units beside UCUM codes) and clinosim's (tests/data/clinosim: a hospital's
//! catchment over a quarter, `deceasedBoolean: false` for the living, resolved encounter
//! diagnoses, prescriptions by drug name only), each three hospitals, converted once (see each
//! SOURCE.md). Each corpus is read through a feature specification typical of a study on such
//! data, and every per-feature figure `ehds-node check` reports (rows, exclusions, label
//! balance, missing values, means after unit conversion, condition and prescription counts) is
//! checked against the same figure recomputed here from the raw resources, walked with
//! serde_json by the documented rules, never copied from the node's output.
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Datelike, NaiveDate};
use ehds_node::check::Check;
use ehds_node::features::FeatureSpec;
use ehds_node::fhir_source::{load_with, Options};
use ehds_node::report::IssueKind;
use serde_json::Value;

fn data(corpus: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(corpus)
}

const SITES: [&str; 3] = ["h1", "h2", "h3"];

// ---------------------------------------------------------------------------------------------
// The raw resources, walked independently of the node.

/// Every resource of one hospital's files (gzipped NDJSON or gzipped Bundles), with each
/// Bundle entry's `fullUrl` mapped to `Type/id`.
struct Raw {
    resources: Vec<Value>,
    full_urls: HashMap<String, String>,
}

fn gunzip(path: &Path) -> Box<dyn BufRead> {
    let file = std::fs::File::open(path).unwrap();
    Box::new(BufReader::new(flate2::read::GzDecoder::new(file)))
}

fn read_raw(dir: &Path) -> Raw {
    let mut raw = Raw {
        resources: vec![],
        full_urls: HashMap::new(),
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_str().unwrap().to_owned();
        if name.ends_with(".ndjson.gz") {
            for line in gunzip(&f).lines() {
                let line = line.unwrap();
                if !line.trim().is_empty() {
                    raw.resources.push(serde_json::from_str(&line).unwrap());
                }
            }
        } else if name.ends_with(".json.gz") {
            let mut text = String::new();
            gunzip(&f).read_to_string(&mut text).unwrap();
            let bundle: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(bundle["resourceType"], "Bundle");
            for e in bundle["entry"].as_array().unwrap() {
                let r = &e["resource"];
                if let Some(url) = e["fullUrl"].as_str() {
                    raw.full_urls.insert(
                        url.to_owned(),
                        format!("{}/{}", r["resourceType"].as_str().unwrap(), id(r)),
                    );
                }
                raw.resources.push(r.clone());
            }
        }
    }
    raw
}

fn id(r: &Value) -> &str {
    r["id"].as_str().unwrap()
}

fn of_type<'a>(raw: &'a Raw, t: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    raw.resources.iter().filter(move |r| r["resourceType"] == t)
}

/// The Patient id a resource's `subject` names (`Patient/<id>` or a Bundle entry's fullUrl).
fn subject(raw: &Raw, r: &Value) -> String {
    let reference = r["subject"]["reference"].as_str().unwrap();
    let target = raw
        .full_urls
        .get(reference)
        .map_or(reference, |t| t.as_str());
    target
        .strip_prefix("Patient/")
        .unwrap_or_else(|| panic!("{reference} is not a Patient"))
        .to_owned()
}

/// A FHIR date or dateTime as seconds since the epoch (a date alone: its first instant, UTC).
fn instant(text: &str) -> i64 {
    if text.len() == 10 {
        NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp()
    } else {
        DateTime::parse_from_rfc3339(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .timestamp()
    }
}

fn date(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(&text[..10], "%Y-%m-%d").unwrap()
}

fn full_years(birth: NaiveDate, at: NaiveDate) -> i64 {
    let mut y = i64::from(at.year() - birth.year());
    if (at.month(), at.day()) < (birth.month(), birth.day()) {
        y -= 1;
    }
    y
}

fn codings(cc: &Value) -> impl Iterator<Item = (&str, &str)> {
    cc["coding"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c["system"].as_str()?, c["code"].as_str()?)))
}

fn has_code(cc: &Value, system: &str, pattern: &str) -> bool {
    codings(cc).any(|(s, c)| {
        s == system
            && match pattern.strip_suffix('*') {
                Some(prefix) => c.starts_with(prefix),
                None => c == pattern,
            }
    })
}

fn status_in(cc: &Value, codes: &[&str]) -> bool {
    codings(cc).any(|(_, c)| codes.contains(&c))
}

/// A coded Observation value (the Observation's own, or a component's with the code), with
/// its time: `(time, value, UCUM code)`. Observations entered in error or cancelled do not
/// count.
fn observations(raw: &Raw, patient: &str, system: &str, code: &str) -> Vec<(i64, f64, String)> {
    let mut out = vec![];
    for o in of_type(raw, "Observation") {
        if matches!(o["status"].as_str(), Some("entered-in-error" | "cancelled"))
            || subject(raw, o) != patient
        {
            continue;
        }
        let when = o["effectiveDateTime"]
            .as_str()
            .or(o["effectivePeriod"]["start"].as_str())
            .map(instant);
        let mut parts = vec![o];
        parts.extend(o["component"].as_array().into_iter().flatten());
        for p in parts {
            if has_code(&p["code"], system, code) {
                let q = &p["valueQuantity"];
                let v = q["value"].as_f64().expect("a quantity");
                let unit = q["code"].as_str().or(q["unit"].as_str()).unwrap();
                out.push((when.expect("a dated Observation"), v, unit.to_owned()));
            }
        }
    }
    out
}

/// The latest value at or before `index` (every value without one), converted by `convert`
/// from its UCUM unit.
fn latest(
    raw: &Raw,
    patient: &str,
    code: &str,
    index: Option<i64>,
    convert: &dyn Fn(f64, &str) -> f64,
) -> Option<f64> {
    observations(raw, patient, "http://loinc.org", code)
        .into_iter()
        .filter(|(t, _, _)| index.is_none_or(|i| *t <= i))
        .max_by_key(|(t, _, _)| *t)
        .map(|(_, v, u)| convert(v, &u))
}

/// Whether a Condition of `codes` counts for `patient` at `index` (without one: ever):
/// neither refuted nor entered in error; dated at or before the index by onset (or
/// recorded date), or undated and active (recurrence, relapse) on the problem list.
fn has_condition(
    raw: &Raw,
    patient: &str,
    system: &str,
    codes: &[&str],
    index: Option<i64>,
) -> bool {
    of_type(raw, "Condition").any(|c| {
        if subject(raw, c) != patient
            || !codes.iter().any(|p| has_code(&c["code"], system, p))
            || status_in(&c["verificationStatus"], &["refuted", "entered-in-error"])
        {
            return false;
        }
        let when = c["onsetDateTime"]
            .as_str()
            .or(c["onsetPeriod"]["start"].as_str())
            .or(c["recordedDate"].as_str())
            .map(instant);
        match (when, index) {
            (_, None) => true,
            (Some(t), Some(i)) => t <= i,
            (None, Some(_)) => {
                status_in(&c["clinicalStatus"], &["active", "recurrence", "relapse"])
            }
        }
    })
}

/// MedicationRequests of an RxNorm drug for `patient` that count at `index` (without one:
/// all): not entered in error, cancelled or draft; authored at or before the index, or
/// undated and active, on hold, completed or stopped.
fn prescriptions(raw: &Raw, patient: &str, index: Option<i64>) -> usize {
    of_type(raw, "MedicationRequest")
        .filter(|m| {
            assert!(
                m.get("medicationReference").is_none(),
                "the walker reads coded medications only"
            );
            let status = m["status"].as_str().unwrap_or("");
            subject(raw, m) == patient
                && !matches!(status, "entered-in-error" | "cancelled" | "draft")
                && codings(&m["medicationCodeableConcept"])
                    .any(|(s, _)| s == "http://www.nlm.nih.gov/research/umls/rxnorm")
                && match (m["authoredOn"].as_str().map(instant), index) {
                    (_, None) => true,
                    (Some(t), Some(i)) => t <= i,
                    (None, Some(_)) => {
                        matches!(status, "active" | "on-hold" | "completed" | "stopped")
                    }
                }
        })
        .count()
}

/// When the Patient died: `deceasedDateTime`, else the end of an Encounter whose discharge
/// disposition is `exp`.
fn death(raw: &Raw, p: &Value) -> Option<i64> {
    if let Some(d) = p["deceasedDateTime"].as_str() {
        return Some(instant(d));
    }
    of_type(raw, "Encounter")
        .filter(|e| subject(raw, e) == id(p))
        .filter(|e| status_in(&e["hospitalization"]["dischargeDisposition"], &["exp"]))
        .filter_map(|e| e["period"]["end"].as_str().map(instant))
        .min()
}

// ---------------------------------------------------------------------------------------------
// Expected figures and the node's.

/// One expected column: its values over the cohort's rows (`None`: missing).
struct Expected {
    rows: usize,
    excluded: BTreeMap<String, u64>,
    label: BTreeMap<String, usize>,
    columns: Vec<(&'static str, Vec<Option<f64>>)>,
}

fn check(corpus: &str, site: &str, spec: &str) -> Value {
    let spec = FeatureSpec::from_json(spec).unwrap();
    let rows = load_with(
        &spec,
        &data(corpus).join(site),
        &Options {
            code_map: None,
            keep_all_issues: true,
        },
    )
    .unwrap();
    let r = &rows.report;
    for kind in [
        IssueKind::MalformedJson,
        IssueKind::InvalidResource,
        IssueKind::UnresolvedSubject,
        IssueKind::NoSubject,
        IssueKind::BadDate,
        IssueKind::Unit,
        IssueKind::DuplicateId,
    ] {
        assert_eq!(
            r.count(kind),
            0,
            "{corpus}/{site} {kind:?}: {:?}",
            r.examples
        );
    }
    serde_json::to_value(Check::new(&spec, rows)).unwrap()
}

fn compare(corpus: &str, site: &str, got: &Value, want: &Expected) {
    let at = format!("{corpus}/{site}");
    assert_eq!(got["cohort"]["rows"], want.rows, "{at}: {}", got["cohort"]);
    let excluded: BTreeMap<String, u64> =
        serde_json::from_value(got["cohort"]["excluded"].clone()).unwrap();
    assert_eq!(excluded, want.excluded, "{at}");
    let label: BTreeMap<String, usize> =
        serde_json::from_value(got["label"]["counts"].clone()).unwrap();
    assert_eq!(label, want.label, "{at}");
    let columns = got["columns"].as_array().unwrap();
    for (name, values) in &want.columns {
        let col = columns
            .iter()
            .find(|c| c["name"] == *name)
            .unwrap_or_else(|| panic!("{at}: no column {name} in {got}"));
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        let missing = values.len() - present.len();
        assert_eq!(col["missing"], missing, "{at} {name}: {col}");
        match col["mean"].as_f64() {
            None => assert!(present.is_empty(), "{at} {name}: {col}"),
            Some(m) => {
                let mean = present.iter().sum::<f64>() / present.len() as f64;
                assert!(
                    (m - mean).abs() <= 1e-4 * mean.abs().max(1.0),
                    "{at} {name}: node {m}, recomputed {mean} over {} values",
                    present.len()
                );
            }
        }
    }
}

fn counts(pairs: impl IntoIterator<Item = (String, usize)>) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for (k, v) in pairs {
        if v > 0 {
            *m.entry(k).or_default() += v;
        }
    }
    m
}

fn kg_to_lb(v: f64, unit: &str) -> f64 {
    assert_eq!(unit, "kg");
    v / 0.453_592_37
}

fn same(unit: &'static str) -> impl Fn(f64, &str) -> f64 {
    move |v, u| {
        assert_eq!(u, unit);
        v
    }
}

fn one(b: bool) -> Option<f64> {
    Some(if b { 1.0 } else { 0.0 })
}

// ---------------------------------------------------------------------------------------------
// Synthea: a cardiometabolic five-year mortality study of adults at 2021-01-01.

const SNOMED: &str = "http://snomed.info/sct";

const SYNTHEA_SPEC: &str = r#"{
  "name": "synthea-mortality",
  "cohort": {"unit": "patient", "index": {"date": "2021-01-01"}, "category": "ehr_data",
             "include": {"age": {"min": 18}}},
  "features": [
    {"name": "sex", "category": "ehr_data", "source": {"patient": "gender"},
     "transform": {"kind": "one_hot", "levels": ["male", "female"], "drop_first": false},
     "missing": {"impute": "constant", "value": 0}},
    {"name": "age", "category": "ehr_data", "source": {"patient": "age"},
     "transform": {"kind": "number", "unit": "a"}, "missing": {"impute": "median"}},
    {"name": "bmi", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "39156-5"}},
     "transform": {"kind": "number", "unit": "kg/m2"}, "missing": {"impute": "mean", "indicator": true}},
    {"name": "weight_lb", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "29463-7"}},
     "transform": {"kind": "number", "unit": "[lb_av]"}, "missing": {"impute": "mean"}},
    {"name": "sbp", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "8480-6"}},
     "transform": {"kind": "number", "unit": "mm[Hg]"}, "missing": {"impute": "mean"}},
    {"name": "hba1c", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "4548-4"}},
     "transform": {"kind": "number", "unit": "%"}, "missing": {"impute": "mean", "indicator": true}},
    {"name": "hypertension", "category": "ehr_data",
     "source": {"condition": {"codes": [{"system": "http://snomed.info/sct", "code": "59621000"}]}},
     "transform": {"kind": "presence"}},
    {"name": "diabetes", "category": "ehr_data",
     "source": {"condition": {"codes": [{"system": "http://snomed.info/sct", "code": "44054006"}]}},
     "transform": {"kind": "presence"}},
    {"name": "prediabetes", "category": "ehr_data",
     "source": {"condition": {"codes": [{"system": "http://snomed.info/sct", "code": "714628002"}]}},
     "transform": {"kind": "presence"}},
    {"name": "ckd", "category": "ehr_data",
     "source": {"condition": {"codes": [{"system": "http://snomed.info/sct", "code": "431855005"},
                                        {"system": "http://snomed.info/sct", "code": "431856006"},
                                        {"system": "http://snomed.info/sct", "code": "433144002"},
                                        {"system": "http://snomed.info/sct", "code": "431857002"},
                                        {"system": "http://snomed.info/sct", "code": "433146000"}]}},
     "transform": {"kind": "presence"}},
    {"name": "prescriptions", "category": "ehr_data",
     "source": {"medication": {"codes": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "1*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "2*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "3*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "4*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "5*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "6*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "7*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "8*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "9*"}]}},
     "transform": {"kind": "count"}}
  ],
  "label": {"name": "death_5y", "category": "ehr_data", "source": {"death": {"within": "1826d"}}}
}"#;

fn synthea_expected(raw: &Raw) -> Expected {
    let index_day = NaiveDate::from_ymd_opt(2021, 1, 1).unwrap();
    let index = instant("2021-01-01");
    let mut excluded = BTreeMap::new();
    let mut rows = vec![];
    for p in of_type(raw, "Patient") {
        let died = death(raw, p);
        if died.is_some_and(|d| d <= index) {
            *excluded
                .entry("died at or before the index".into())
                .or_default() += 1;
            continue;
        }
        let age = full_years(date(p["birthDate"].as_str().unwrap()), index_day);
        if age < 18 {
            *excluded.entry("age outside the range".into()).or_default() += 1;
            continue;
        }
        rows.push((p, age, died.is_some_and(|d| d - index <= 1826 * 86_400)));
    }
    let column = |f: &dyn Fn(&Value, i64) -> Option<f64>| -> Vec<Option<f64>> {
        rows.iter().map(|(p, age, _)| f(p, *age)).collect()
    };
    let cond = |codes: &'static [&'static str]| {
        column(&|p, _| one(has_condition(raw, id(p), SNOMED, codes, Some(index))))
    };
    let obs = |code: &'static str, convert: &dyn Fn(f64, &str) -> f64| {
        column(&|p, _| latest(raw, id(p), code, Some(index), convert))
    };
    Expected {
        rows: rows.len(),
        excluded,
        label: counts([
            ("0".into(), rows.iter().filter(|r| !r.2).count()),
            ("1".into(), rows.iter().filter(|r| r.2).count()),
        ]),
        columns: vec![
            ("sex=male", column(&|p, _| one(p["gender"] == "male"))),
            ("sex=female", column(&|p, _| one(p["gender"] == "female"))),
            ("age", column(&|_, age| Some(age as f64))),
            ("bmi", obs("39156-5", &same("kg/m2"))),
            ("weight_lb", obs("29463-7", &kg_to_lb)),
            ("sbp", obs("8480-6", &same("mm[Hg]"))),
            ("hba1c", obs("4548-4", &same("%"))),
            ("hypertension", cond(&["59621000"])),
            ("diabetes", cond(&["44054006"])),
            ("prediabetes", cond(&["714628002"])),
            (
                "ckd",
                cond(&[
                    "431855005",
                    "431856006",
                    "433144002",
                    "431857002",
                    "433146000",
                ]),
            ),
            (
                "prescriptions",
                column(&|p, _| Some(prescriptions(raw, id(p), Some(index)) as f64)),
            ),
        ],
    }
}

#[test]
fn synthea_bundles_extract_as_recomputed_from_the_raw_resources() {
    let mut total = 0;
    for site in SITES {
        let raw = read_raw(&data("synthea-py").join(site));
        let want = synthea_expected(&raw);
        // the corpus is what it says: Synthea's Bundles, urn:uuid references, no tags of ours
        assert!(raw.full_urls.keys().all(|u| u.starts_with("urn:uuid:")));
        assert!(raw
            .resources
            .iter()
            .all(|r| !r.to_string().contains("urn:ehds-gateway")));
        let got = check("synthea-py", site, SYNTHEA_SPEC);
        compare("synthea-py", site, &got, &want);
        total += want.rows;
    }
    // three hospitals of 25 generated patients, living and dead, children and adults
    assert!(
        (30..75).contains(&total),
        "{total} adults alive at the index"
    );
}

// ---------------------------------------------------------------------------------------------
// carebundle: hypertension on the problem list from one visit's vitals, labs and problems.

const ICD10CM: &str = "http://hl7.org/fhir/sid/icd-10-cm";

/// One row per Patient, no index: the generator writes one visit per patient.
fn carebundle_spec() -> String {
    std::fs::read_to_string(data("carebundle").join("hypertension.features.json")).unwrap()
}

fn carebundle_expected(raw: &Raw) -> Expected {
    let as_of = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap();
    let patients: Vec<&Value> = of_type(raw, "Patient").collect();
    let column = |f: &dyn Fn(&Value) -> Option<f64>| -> Vec<Option<f64>> {
        patients.iter().map(|p| f(p)).collect()
    };
    let cond =
        |code: &'static str| column(&|p| one(has_condition(raw, id(p), ICD10CM, &[code], None)));
    let obs = |code: &'static str, convert: &dyn Fn(f64, &str) -> f64| {
        column(&|p| latest(raw, id(p), code, None, convert))
    };
    let hypertensive = patients
        .iter()
        .filter(|p| has_condition(raw, id(p), ICD10CM, &["I10*"], None))
        .count();
    Expected {
        rows: patients.len(),
        excluded: BTreeMap::new(),
        label: counts([
            ("0".into(), patients.len() - hypertensive),
            ("1".into(), hypertensive),
        ]),
        columns: vec![
            ("sex=male", column(&|p| one(p["gender"] == "male"))),
            ("sex=female", column(&|p| one(p["gender"] == "female"))),
            (
                "age",
                column(&|p| Some(full_years(date(p["birthDate"].as_str().unwrap()), as_of) as f64)),
            ),
            ("bmi", obs("39156-5", &same("kg/m2"))),
            // the generator writes `beats/minute` as the unit's text, `/min` as its UCUM code
            ("hr", obs("8867-4", &same("/min"))),
            (
                "temp_f",
                obs("8310-5", &|v, u| {
                    assert_eq!(u, "Cel");
                    v * 9.0 / 5.0 + 32.0
                }),
            ),
            (
                "hb_g_l",
                obs("718-7", &|v, u| {
                    assert_eq!(u, "g/dL");
                    v * 10.0
                }),
            ),
            ("hba1c", obs("4548-4", &same("%"))),
            ("diabetes", cond("E11*")),
            ("lipids", cond("E78*")),
            ("obesity", cond("E66*")),
            ("ckd", cond("N18*")),
        ],
    }
}

#[test]
fn carebundle_exports_extract_as_recomputed_from_the_raw_resources() {
    for site in SITES {
        let raw = read_raw(&data("carebundle").join(site));
        // the corpus is what it says: a Bulk Data export with date-only onsets and display-text
        // units, no tags of ours
        assert!(raw.full_urls.is_empty());
        assert!(
            of_type(&raw, "Condition").all(|c| c["onsetDateTime"].as_str().unwrap().len() == 10)
        );
        assert!(raw
            .resources
            .iter()
            .all(|r| !r.to_string().contains("urn:ehds-gateway")));
        let want = carebundle_expected(&raw);
        assert_eq!(want.rows, 40);
        let got = check("carebundle", site, &carebundle_spec());
        compare("carebundle", site, &got, &want);
        // every prescription is read (the generator writes RxNorm codes inline)
        let prescribed: usize = of_type(&raw, "Patient")
            .map(|p| prescriptions(&raw, id(p), None))
            .sum();
        assert!(prescribed > 0);
    }
}

// ---------------------------------------------------------------------------------------------
// clinosim: who of a hospital's catchment population died, from problems, vitals, labs and
// prescriptions, as of the export.

const CLINOSIM_SPEC: &str = r#"{
  "name": "clinosim-deceased",
  "features": [
    {"name": "sex", "category": "ehr_data", "source": {"patient": "gender"},
     "transform": {"kind": "one_hot", "levels": ["male", "female"], "drop_first": false},
     "missing": {"impute": "constant", "value": 0}},
    {"name": "age", "category": "ehr_data", "source": {"patient": {"age": {"as_of": "2025-03-31"}}},
     "transform": {"kind": "number", "unit": "a"}, "missing": {"impute": "median"}},
    {"name": "bmi", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "39156-5"}},
     "transform": {"kind": "number", "unit": "kg/m2"}, "missing": {"impute": "mean", "indicator": true}},
    {"name": "sbp", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "8480-6"}},
     "transform": {"kind": "number", "unit": "mm[Hg]"}, "missing": {"impute": "mean"}},
    {"name": "hr", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "8867-4"}},
     "transform": {"kind": "number", "unit": "/min"}, "missing": {"impute": "mean"}},
    {"name": "temp_f", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "8310-5"}},
     "transform": {"kind": "number", "unit": "[degF]"}, "missing": {"impute": "mean"}},
    {"name": "hba1c", "category": "ehr_data",
     "source": {"observation": {"system": "http://loinc.org", "code": "4548-4"}},
     "transform": {"kind": "number", "unit": "%"}, "missing": {"impute": "mean", "indicator": true}},
    {"name": "hypertension", "category": "ehr_data",
     "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "I10*"}]}},
     "transform": {"kind": "presence"}},
    {"name": "diabetes", "category": "ehr_data",
     "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "E11*"}]}},
     "transform": {"kind": "presence"}},
    {"name": "copd", "category": "ehr_data",
     "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "J44*"}]}},
     "transform": {"kind": "presence"}},
    {"name": "heart_failure", "category": "ehr_data",
     "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "I50*"}]}},
     "transform": {"kind": "presence"}},
    {"name": "ckd", "category": "ehr_data",
     "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10-cm", "code": "N18*"}]}},
     "transform": {"kind": "presence"}},
    {"name": "prescriptions", "category": "ehr_data",
     "source": {"medication": {"codes": [{"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "1*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "2*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "3*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "4*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "5*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "6*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "7*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "8*"}, {"system": "http://www.nlm.nih.gov/research/umls/rxnorm", "code": "9*"}]}},
     "transform": {"kind": "count"}}
  ],
  "label": {"name": "deceased", "category": "ehr_data", "source": {"patient": "deceased"}}
}"#;

fn clinosim_expected(raw: &Raw) -> Expected {
    let as_of = NaiveDate::from_ymd_opt(2025, 3, 31).unwrap();
    let patients: Vec<&Value> = of_type(raw, "Patient").collect();
    let column = |f: &dyn Fn(&Value) -> Option<f64>| -> Vec<Option<f64>> {
        patients.iter().map(|p| f(p)).collect()
    };
    let cond =
        |code: &'static str| column(&|p| one(has_condition(raw, id(p), ICD10CM, &[code], None)));
    let obs = |code: &'static str, convert: &dyn Fn(f64, &str) -> f64| {
        column(&|p| latest(raw, id(p), code, None, convert))
    };
    // the simulator writes `deceasedBoolean: false` for the living and `deceasedDateTime` for
    // the dead
    let dead = patients
        .iter()
        .filter(|p| p["deceasedBoolean"] == true || p["deceasedDateTime"].is_string())
        .count();
    Expected {
        rows: patients.len(),
        excluded: BTreeMap::new(),
        label: counts([("0".into(), patients.len() - dead), ("1".into(), dead)]),
        columns: vec![
            ("sex=male", column(&|p| one(p["gender"] == "male"))),
            ("sex=female", column(&|p| one(p["gender"] == "female"))),
            (
                "age",
                column(&|p| Some(full_years(date(p["birthDate"].as_str().unwrap()), as_of) as f64)),
            ),
            ("bmi", obs("39156-5", &same("kg/m2"))),
            ("sbp", obs("8480-6", &same("mm[Hg]"))),
            ("hr", obs("8867-4", &same("/min"))),
            (
                "temp_f",
                obs("8310-5", &|v, u| {
                    assert_eq!(u, "Cel");
                    v * 9.0 / 5.0 + 32.0
                }),
            ),
            ("hba1c", obs("4548-4", &same("%"))),
            ("hypertension", cond("I10*")),
            ("diabetes", cond("E11*")),
            ("copd", cond("J44*")),
            ("heart_failure", cond("I50*")),
            ("ckd", cond("N18*")),
            (
                "prescriptions",
                column(&|p| Some(prescriptions(raw, id(p), None) as f64)),
            ),
        ],
    }
}

#[test]
fn clinosim_exports_extract_as_recomputed_from_the_raw_resources() {
    let mut dead = 0;
    for site in SITES {
        let raw = read_raw(&data("clinosim").join(site));
        assert!(raw
            .resources
            .iter()
            .all(|r| !r.to_string().contains("urn:ehds-gateway")));
        // the living carry `deceasedBoolean: false`, as many exports write it
        assert!(of_type(&raw, "Patient").any(|p| p["deceasedBoolean"] == false));
        let want = clinosim_expected(&raw);
        dead += want.label.get("1").copied().unwrap_or(0);
        let got = check("clinosim", site, CLINOSIM_SPEC);
        compare("clinosim", site, &got, &want);
    }
    assert!(dead > 0, "the simulated quarter records deaths");
}

/// `patient.deceased` as the label, as of the extraction and without an index: every Patient a
/// row, positive when the generator recorded a death (PySynthea writes `deceasedDateTime`).
#[test]
fn synthea_deceased_label_counts_every_recorded_death() {
    let spec = r#"{
      "name": "synthea-deceased",
      "features": [
        {"name": "age", "category": "ehr_data", "source": {"patient": {"age": {"as_of": "2026-01-01"}}},
         "transform": {"kind": "number", "unit": "a"}, "missing": {"impute": "median"}}
      ],
      "label": {"name": "deceased", "category": "ehr_data", "source": {"patient": "deceased"}}
    }"#;
    for site in SITES {
        let raw = read_raw(&data("synthea-py").join(site));
        let patients: Vec<&Value> = of_type(&raw, "Patient").collect();
        let dead = patients
            .iter()
            .filter(|p| p["deceasedDateTime"].is_string() || p["deceasedBoolean"] == true)
            .count();
        assert!(dead > 0);
        let got = check("synthea-py", site, spec);
        let label: BTreeMap<String, usize> =
            serde_json::from_value(got["label"]["counts"].clone()).unwrap();
        assert_eq!(
            label,
            counts([("0".into(), patients.len() - dead), ("1".into(), dead)]),
            "synthea-py/{site}"
        );
    }
}
