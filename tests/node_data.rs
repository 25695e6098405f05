//! The node's data side on the example federation: the committed FHIR Bundles regenerate
//! byte for byte, and reading them through the feature specification gives exactly the data
//! set the engine's own Heart Disease loader builds; the digit federation's Media give back
//! the source images.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use ehds_core::domain::{MemberState, SubjectPseudonym};
use ehds_node::csv_source::{read_csv, write_csv};
use ehds_node::features::FeatureSpec;
use ehds_node::fhir_source::load_bundle_file;
use ehds_node::report::IssueKind;
use ehds_node::{opted_out_at, SiteRows, SourceError, SpecError, SplitPlan};
use ehds_tools::example_federation::{convert, pseudonym, HOSPITALS, OPTOUT_LINES};
use ehds_tools::fhir_model::{extract, parse_bundle};
use fl_engine::data::{heart_disease, SiteData};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn federation() -> PathBuf {
    root().join("examples/federation")
}

fn spec() -> FeatureSpec {
    FeatureSpec::from_file(&federation().join("heart_disease.features.json")).unwrap()
}

fn site(key: &str) -> SiteRows {
    load_bundle_file(&spec(), &federation().join(format!("{key}.json"))).unwrap()
}

fn lines_in(key: &str) -> usize {
    let path = root().join(format!("fl_engine/data/heart_disease/processed.{key}.data"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// With `UPDATE_EXAMPLES=1` the test first rewrites the committed files (and then passes
/// trivially); without it, it fails whenever the converter's output drifts from them.
#[test]
fn committed_bundles_regenerate_byte_identically() {
    if std::env::var_os("UPDATE_EXAMPLES").is_some_and(|v| v == "1") {
        convert(&root().join("fl_engine/data/heart_disease"), &federation()).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let summary = convert(&root().join("fl_engine/data/heart_disease"), dir.path()).unwrap();
    let mut names: Vec<String> = HOSPITALS
        .iter()
        .map(|h| format!("{}.json", h.key))
        .collect();
    names.push("optouts.ndjson".into());
    for name in &names {
        let fresh = std::fs::read(dir.path().join(name)).unwrap();
        let committed = std::fs::read(federation().join(name))
            .unwrap_or_else(|e| panic!("examples/federation/{name}: {e}"));
        assert!(
            fresh == committed,
            "examples/federation/{name} differs from what the converter writes now; \
             regenerate it (see examples/federation/README.md)"
        );
    }
    let counts: Vec<(usize, usize, usize)> = summary
        .sites
        .iter()
        .map(|s| (s.patients, s.train, s.test))
        .collect();
    assert_eq!(
        counts,
        vec![
            (303, 199, 104),
            (294, 172, 89),
            (123, 30, 16),
            (200, 85, 45)
        ]
    );
    for s in &summary.sites {
        assert_eq!(s.patients, lines_in(s.hospital));
        assert!(s.observations > 8 * (s.train + s.test));
    }
    assert_eq!(summary.optouts, 6);
    let total: u64 = summary.sites.iter().map(|s| s.bytes).sum();
    assert!(total < 20_000_000, "{total} bytes");
}

#[test]
fn bundles_through_the_spec_equal_the_engine_loader() {
    let reference = heart_disease::load().unwrap();
    assert_eq!(
        spec().columns(),
        [
            "age",
            "sex",
            "trestbps",
            "chol",
            "fbs",
            "thalach",
            "exang",
            "oldpeak",
            "cp=2",
            "cp=3",
            "cp=4",
            "restecg=1",
            "restecg=2"
        ]
    );
    for (h, want) in HOSPITALS.iter().zip(&reference) {
        assert_eq!(h.key, want.name);
        let rows = site(h.key);
        assert_eq!(
            rows.rows.len() + rows.incomplete.len(),
            lines_in(h.key),
            "{}: every line is a subject",
            h.key
        );
        let (train, test) = rows.train_test(&SplitPlan::new(0.2, 0.2, 11)).unwrap();
        for (got, want, set) in [(&train, &want.train, "train"), (&test, &want.test, "test")] {
            assert_eq!(got.len(), want.len(), "{} {set} size", h.key);
            assert_eq!(got.n_features(), heart_disease::N_FEATURES);
            assert_eq!(got.labels(), want.labels(), "{} {set} labels", h.key);
            for (i, (a, b)) in got.features().iter().zip(want.features()).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-6 * b.abs().max(1.0),
                    "{} {set} row {} column {}: {a} vs {b}",
                    h.key,
                    i / heart_disease::N_FEATURES,
                    i % heart_disease::N_FEATURES
                );
            }
        }
    }
}

#[test]
fn site_data_matches_the_engine_preparation() {
    let reference = heart_disease::load().unwrap();
    let want = SiteData::prepare("va", &reference[3].train, &reference[3].test, 0.2, 11).unwrap();
    let got = site("va")
        .site_data("va", &SplitPlan::new(0.2, 0.2, 11))
        .unwrap();
    assert_eq!(got.train.len(), want.train.len());
    assert_eq!(got.val.labels(), want.val.labels());
    assert_eq!(got.test.labels(), want.test.labels());
    for (a, b) in got.train.features().iter().zip(want.train.features()) {
        assert!((a - b).abs() < 1e-4, "{a} vs {b}");
    }
}

#[test]
fn spec_reports_its_categories_and_refuses_unknown_ones() {
    assert_eq!(spec().categories(), BTreeSet::from(["ehr_data".to_owned()]));
    let text = std::fs::read_to_string(federation().join("heart_disease.features.json")).unwrap();
    // give the label a different category: both are reported
    let relabelled = text.replacen(
        r#""name": "coronary_heart_disease",
    "category": "ehr_data""#,
        r#""name": "coronary_heart_disease",
    "category": "clinical_trial_study""#,
        1,
    );
    assert_ne!(relabelled, text);
    assert_eq!(
        FeatureSpec::from_json(&relabelled).unwrap().categories(),
        BTreeSet::from(["clinical_trial_study".to_owned(), "ehr_data".to_owned()])
    );
    let unknown = text.replacen(r#""category": "ehr_data""#, r#""category": "ehr""#, 1);
    assert!(matches!(
        FeatureSpec::from_json(&unknown),
        Err(SpecError::UnknownCategory { feature, category }) if feature == "age" && category == "ehr"
    ));
    let unknown = text.replacen(r#""kind": "boolean""#, r#""kind": "yes_no""#, 1);
    assert!(matches!(
        FeatureSpec::from_json(&unknown),
        Err(SpecError::UnknownTransform { feature, kind }) if feature == "exang" && kind == "yes_no"
    ));
}

fn jan(day: u32) -> DateTime<Utc> {
    format!("2026-01-{day:02}T00:00:00Z").parse().unwrap()
}

#[test]
fn opt_outs_exclude_exactly_the_listed_subjects() {
    let text = std::fs::read_to_string(federation().join("optouts.ndjson")).unwrap();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(SubjectPseudonym::parse(v["subject_pseudonym"].as_str().unwrap()).is_ok());
        assert!(MemberState::parse(v["member_state"].as_str().unwrap()).is_ok());
    }
    assert!(opted_out_at(&text, jan(1) - chrono::Duration::seconds(1))
        .unwrap()
        .is_empty());
    let opted_out = opted_out_at(&text, jan(2)).unwrap();
    let listed: BTreeSet<String> = OPTOUT_LINES.iter().map(|(h, l)| pseudonym(h, *l)).collect();
    assert_eq!(opted_out, listed);

    let (mut from_rows, mut from_incomplete) = (0, 0);
    for h in HOSPITALS {
        let before = site(h.key);
        let mut after = before.clone();
        let ex = after.exclude(&opted_out);
        from_rows += ex.from_rows;
        from_incomplete += ex.from_incomplete;
        let names = |r: &SiteRows| -> BTreeSet<String> {
            r.rows
                .iter()
                .map(|r| r.pseudonym.clone())
                .chain(r.incomplete.iter().cloned())
                .collect()
        };
        let removed: BTreeSet<String> =
            names(&before).difference(&names(&after)).cloned().collect();
        let here: BTreeSet<String> = OPTOUT_LINES
            .iter()
            .filter(|(k, _)| *k == h.key)
            .map(|(k, l)| pseudonym(k, *l))
            .collect();
        assert_eq!(removed, here, "{}", h.key);
        assert_eq!(ex.total(), here.len());
        // everybody else is kept, in the same order with the same values
        let kept: Vec<_> = before
            .rows
            .iter()
            .filter(|r| !here.contains(&r.pseudonym))
            .collect();
        assert_eq!(kept, after.rows.iter().collect::<Vec<_>>());
        let (train, test) = after.train_test(&SplitPlan::new(0.2, 0.2, 11)).unwrap();
        assert_eq!(train.len() + test.len(), before.rows.len() - ex.from_rows);
    }
    assert_eq!((from_rows, from_incomplete), (5, 1));
}

#[test]
fn csv_round_trip() {
    let rows = site("hungarian");
    let mut buf = Vec::new();
    write_csv(&rows, &mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap();
    assert!(text.starts_with("pseudonym,split,label,age,sex,trestbps,"));
    let back = read_csv(&spec(), text.as_bytes()).unwrap();
    assert_eq!(back.columns, rows.columns);
    assert_eq!(back.rows, rows.rows);
    assert!(back.incomplete.is_empty());
    assert_eq!(
        back.train_test(&SplitPlan::new(0.2, 0.2, 11)).unwrap(),
        rows.train_test(&SplitPlan::new(0.2, 0.2, 11)).unwrap()
    );
}

#[test]
fn malformed_bundles_are_typed_errors() {
    let text = std::fs::read_to_string(federation().join("switzerland.json")).unwrap();
    assert!(matches!(
        parse_bundle(&text[..text.len() / 2]),
        Err(SourceError::Json(_))
    ));
    assert!(matches!(
        parse_bundle(r#"{"resourceType": "Observation"}"#),
        Err(SourceError::NotABundle(_))
    ));
    assert!(matches!(
        parse_bundle("\u{0}\u{1}garbage"),
        Err(SourceError::Json(_))
    ));
    // an Observation about a subject the bundle does not hold: counted with its entry and
    // resource, skipped; the subject it was meant for misses that value
    let first = pseudonym("switzerland", 0);
    let orphaned = text.replace(
        &format!("\"reference\": \"Patient/{first}\""),
        "\"reference\": \"Patient/psn-nobody-0000000000000000\"",
    );
    assert_ne!(orphaned, text);
    let rows = extract(&spec(), &parse_bundle(&orphaned).unwrap()).unwrap();
    assert_eq!(rows.report.count(IssueKind::UnresolvedSubject), 1);
    let issue = &rows.report.examples[0];
    assert!(issue
        .resource
        .as_deref()
        .unwrap()
        .starts_with(&format!("Observation/{first}")));
    assert!(issue.detail.contains("psn-nobody"), "{issue:?}");
    assert!(rows.incomplete.contains(&first));
    // a unit that does not convert into the specification's: counted, the value missing
    let wrong_unit = text.replacen("\"code\": \"mm[Hg]\"", "\"code\": \"kg\"", 1);
    let rows = extract(&spec(), &parse_bundle(&wrong_unit).unwrap()).unwrap();
    assert_eq!(rows.report.count(IssueKind::Unit), 1);
    assert_eq!(rows.report.units["trestbps"].refused, 1);
    // one that does is converted: 18.665 kPa reads back as 140.0 mm[Hg]
    let mmhg = "\"value\": 140.0,\n          \"unit\": \"mmHg\",\n          \"system\": \"http://unitsofmeasure.org\",\n          \"code\": \"mm[Hg]\"";
    let kpa = text.replacen(
        mmhg,
        "\"value\": 18.665,\n          \"unit\": \"kPa\",\n          \"system\": \"http://unitsofmeasure.org\",\n          \"code\": \"kPa\"",
        1,
    );
    assert_ne!(kpa, text);
    let converted = extract(&spec(), &parse_bundle(&kpa).unwrap()).unwrap();
    assert_eq!(converted.report.units["trestbps"].converted, 1);
    let original = site("switzerland");
    assert_eq!(converted.rows.len(), original.rows.len());
    for (a, b) in converted.rows.iter().zip(&original.rows) {
        for (x, y) in a.features.iter().zip(&b.features) {
            assert!((x - y).abs() < 0.01, "{x} vs {y}");
        }
    }
    assert!(matches!(
        load_bundle_file(&spec(), Path::new("/nonexistent/bundle.json")),
        Err(SourceError::Io(_))
    ));
}

/// Every `json` block of the federation README's "Writing a feature specification" section
/// parses with the node's own parsers, so the worked examples cannot drift from the code.
#[test]
fn readme_specification_examples_parse() {
    use ehds_node::codemap::CodeMap;
    use serde_json::{json, Map, Value};

    let text = std::fs::read_to_string(federation().join("README.md")).unwrap();
    let blocks: Vec<&str> = text
        .split("```json\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    let base = json!({
        "name": "readme",
        "cohort": { "unit": "encounter", "index": "admission", "category": "ehr_data" },
        "features": [ { "name": "age", "category": "ehr_data", "source": { "patient": "age" },
                        "transform": { "kind": "number", "unit": "a" } } ],
        "label": { "name": "death_30d", "category": "ehr_data",
                   "source": { "death": { "within": "30d" } } }
    });
    let parse = |v: &Value, block: &str| -> FeatureSpec {
        FeatureSpec::from_json(&v.to_string())
            .unwrap_or_else(|e| panic!("README example does not parse: {e}\n{block}"))
    };
    let key = |v: &Value| -> String {
        v.as_object()
            .and_then(|o| o.keys().next().cloned())
            .unwrap_or_default()
    };
    let (mut shown, mut maps) = (BTreeSet::new(), 0);
    for block in &blocks {
        let t = block.trim();
        let mut spec = base.clone();
        if t.starts_with('"') {
            // members of the specification object
            let members: Map<String, Value> = serde_json::from_str(&format!("{{{t}}}"))
                .unwrap_or_else(|e| panic!("README block is not JSON members: {e}\n{t}"));
            assert_eq!(members.len(), 1, "one member per block:\n{t}");
            for (k, v) in members {
                match k.as_str() {
                    "label" => shown.insert(format!("label:{}", key(&v["source"]))),
                    "cohort" => shown.insert(format!("cohort:{}", v["unit"].as_str().unwrap())),
                    other => shown.insert(other.to_owned()),
                };
                spec[k] = v;
            }
            parse(&spec, t);
        } else if t.starts_with("{ \"codes\"") {
            let spec = parse(&spec, t);
            let map = CodeMap::from_json(t, &spec)
                .unwrap_or_else(|e| panic!("README code map does not parse: {e}\n{t}"));
            assert!(!map.codes.is_empty() && !map.units.is_empty());
            assert_eq!(map.private_features.len(), 1);
            maps += 1;
        } else {
            // one or more features
            let features: Vec<Value> = serde_json::from_str(&format!("[{t}]"))
                .unwrap_or_else(|e| panic!("README block is not features: {e}\n{t}"));
            for f in &features {
                shown.insert(format!("feature:{}", key(&f["source"])));
                if f.get("missing").is_some() {
                    shown.insert("missing".into());
                }
            }
            spec["features"] = Value::Array(features);
            parse(&spec, t);
        }
    }
    assert_eq!(maps, 1);
    let want: BTreeSet<String> = [
        "cohort:encounter",
        "cohort:patient",
        "feature:patient",
        "feature:observation",
        "feature:condition",
        "feature:medication",
        "missing",
        "time_series",
        "label:condition",
        "label:medication",
        "label:death",
        "label:observation",
        "label:survival",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(shown, want, "one worked example per source kind");
}

/// The digit federation's bundles, read through its specification, give back the source
/// images: every subject kept with no input issue, the PNG (inline or from a Binary) decoded
/// to the CSV's intensities / 16 (within the 8-bit rounding the script applies), the digit as
/// its class, the CSV's split.
#[test]
fn the_digit_federation_reads_back_the_source_images() {
    let dir = root().join("examples/digits-federation");
    let spec = FeatureSpec::from_file(&dir.join("digits.features.json")).unwrap();
    let csv = std::fs::read_to_string(root().join("fl_engine/data/digits/digits.csv")).unwrap();
    let source: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let sites = ["imaging-a", "imaging-b", "imaging-c"];
    for (s, key) in sites.iter().enumerate() {
        let rows = load_bundle_file(&spec, &dir.join(format!("{key}.json"))).unwrap();
        assert_eq!(rows.report.bad_inputs(), 0, "{key}: {:?}", rows.report);
        assert!(rows.incomplete.is_empty(), "{key}");
        assert_eq!(rows.image_len, 64);
        assert!(rows.rows.len() > 100, "{key}: {}", rows.rows.len());
        for (k, row) in rows.rows.iter().enumerate() {
            // rows were dealt in turn: site s holds CSV rows s, s + 3, s + 6, ...
            let line = &source[s + 3 * k];
            let split = if line[0] == "test" { "test" } else { "train" };
            assert_eq!(row.split.map(|p| p.as_str()), Some(split), "{key} row {k}");
            assert_eq!(row.label.to_string(), line[1], "{key} row {k}");
            let image = row.image.as_ref().unwrap();
            for (got, v) in image.iter().zip(&line[2..]) {
                let want = v.parse::<f32>().unwrap() / 16.0;
                assert!((got - want).abs() <= 0.5 / 255.0 + 1e-6, "{key} row {k}");
            }
        }
    }
}
