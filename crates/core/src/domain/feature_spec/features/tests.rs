use super::*;

fn spec_with(feature: &str) -> String {
    format!(
        r#"{{"name": "t", "features": [{feature}],
           "label": {{"name": "y", "category": "ehr_data",
                      "source": {{"condition": {{"system": "s", "code": "c"}}}}}}}}"#
    )
}

fn indexed(features: &str, label: &str) -> String {
    format!(
        r#"{{"name": "t",
            "cohort": {{"unit": "encounter", "index": "admission", "category": "ehr_data"}},
            "features": [{features}],
            "label": {{"name": "y", "category": "ehr_data", "source": {label}}}}}"#
    )
}

const AGE: &str = r#"{"name": "age", "category": "ehr_data",
    "source": {"observation": {"system": "http://loinc.org", "code": "30525-0"}},
    "transform": {"kind": "number", "unit": "a"}}"#;

#[test]
fn parses_and_reports_columns_and_categories() {
    let cp = r#"{"name": "cp", "category": "health_determinants",
        "source": {"observation": {"system": "x", "code": "cp",
                                   "method": {"system": "m", "code": "k"}}},
        "transform": {"kind": "one_hot", "levels": ["1", "2", "3"]}}"#;
    let s = FeatureSpec::from_json(&spec_with(&format!("{AGE}, {cp}"))).unwrap();
    assert_eq!(s.columns(), vec!["age", "cp=2", "cp=3"]);
    assert_eq!(
        s.categories(),
        BTreeSet::from(["ehr_data".to_owned(), "health_determinants".to_owned()])
    );
    let Source::Observation(o) = &s.features[1].source else {
        panic!("an observation source")
    };
    assert!(o.codes.matches(Some("x"), "cp"));
    assert!(o.method.as_ref().unwrap().matches(Some("m"), "k"));
    // no cohort: no index, no window, the latest value
    assert_eq!(o.window, None);
    assert_eq!(o.aggregate, Aggregate::Latest);
    assert_eq!(s.task(), Task::Binary);
    assert!(!s.cohort.has_index());
}

#[test]
fn unknown_category_and_transform_are_typed_errors() {
    let bad_cat = AGE.replace("ehr_data", "horoscope_data");
    assert!(matches!(
        FeatureSpec::from_json(&spec_with(&bad_cat)),
        Err(SpecError::UnknownCategory { category, .. }) if category == "horoscope_data"
    ));
    let bad_kind = AGE.replace("\"number\"", "\"log\"");
    assert!(matches!(
        FeatureSpec::from_json(&spec_with(&bad_kind)),
        Err(SpecError::UnknownTransform { kind, .. }) if kind == "log"
    ));
    let extra_field = AGE.replace("\"unit\"", "\"units\"");
    assert!(matches!(
        FeatureSpec::from_json(&spec_with(&extra_field)),
        Err(SpecError::InvalidTransform { .. })
    ));
    let bad_unit = AGE.replace("\"a\"", "\"parsecs-ish\"");
    assert!(matches!(
        FeatureSpec::from_json(&spec_with(&bad_unit)),
        Err(SpecError::InvalidTransform { .. })
    ));
    let gender_number = r#"{"name": "sex", "category": "ehr_data",
        "source": {"patient": "gender"}, "transform": {"kind": "number"}}"#;
    assert!(matches!(
        FeatureSpec::from_json(&spec_with(gender_number)),
        Err(SpecError::Incompatible { .. })
    ));
    assert!(matches!(
        FeatureSpec::from_json(&spec_with(&format!("{AGE}, {AGE}"))),
        Err(SpecError::DuplicateColumn(c)) if c == "age"
    ));
    assert!(matches!(
        FeatureSpec::from_json(&spec_with("")),
        Err(SpecError::NoFeatures)
    ));
    assert!(matches!(
        FeatureSpec::from_json("{"),
        Err(SpecError::Json(_))
    ));
}

#[test]
fn time_needs_an_index() {
    let windowed = r#"{"name": "hr", "category": "ehr_data",
        "source": {"observation": {"system": "http://loinc.org", "code": "8867-4",
                   "window": {"from": "-24h"}, "aggregate": "max"}},
        "transform": {"kind": "number", "unit": "/min"}}"#;
    let age = r#"{"name": "age", "category": "ehr_data", "source": {"patient": "age"},
        "transform": {"kind": "number", "unit": "a"}}"#;
    for f in [windowed, age] {
        let err = FeatureSpec::from_json(&spec_with(f)).unwrap_err();
        assert!(err.to_string().contains("needs an index"), "{err}");
    }
    let death = r#"{"death": {"within": "30d"}}"#;
    let s = FeatureSpec::from_json(&indexed(&format!("{windowed}, {age}"), death)).unwrap();
    let Source::Observation(o) = &s.features[0].source else {
        panic!()
    };
    assert_eq!(o.window.unwrap().from, Some(Span(-24 * 3600)));
    assert_eq!(
        s.label.source,
        LabelSource::Death {
            within: Span(30 * 86_400)
        }
    );
    let no_index_death =
        spec_with(AGE).replace(r#"{"condition": {"system": "s", "code": "c"}}"#, death);
    assert!(FeatureSpec::from_json(&no_index_death).is_err());
}

#[test]
fn sources_transforms_and_missing_policies() {
    let cond = r#"{"name": "htn", "category": "ehr_data",
        "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10", "code": "I10*"},
                                           {"system": "http://snomed.info/sct", "code": "38341003"}]}},
        "transform": {"kind": "presence"}}"#;
    let meds = r#"{"name": "insulin_n", "category": "ehr_data",
        "source": {"medication": {"codes": [{"system": "http://www.whocc.no/atc", "code": "A10A*"}],
                   "window": {"from": "-365d"}}},
        "transform": {"kind": "count"}}"#;
    let lactate = r#"{"name": "lactate", "category": "ehr_data",
        "source": {"observation": {"system": "http://loinc.org", "code": "2524-7",
                   "window": {"from": "0h", "to": "24h"}, "aggregate": "mean"}},
        "transform": {"kind": "number", "unit": "mmol/L"},
        "missing": {"impute": "median", "indicator": true}}"#;
    let s = FeatureSpec::from_json(&indexed(
        &format!("{cond}, {meds}, {lactate}"),
        r#"{"survival": {"event": {"death": {}}, "follow_up": "365d"}}"#,
    ))
    .unwrap();
    assert_eq!(
        s.columns(),
        ["htn", "insulin_n", "lactate", "lactate#missing"]
    );
    assert_eq!(s.task(), Task::Survival);
    assert_eq!(
        s.features[2].missing,
        Missing {
            impute: Some(Impute::Median),
            indicator: true
        }
    );
    let Source::Condition {
        codes,
        window,
        require_date: false,
    } = &s.features[0].source
    else {
        panic!()
    };
    assert!(codes.matches(Some(ICD10), "I10.9") && codes.matches(Some(SNOMED), "38341003"));
    assert_eq!(*window, Some(Window::UP_TO_INDEX));
    // a numeric aggregate cannot be one-hot encoded; presence does not read observations
    let bad = lactate.replace(
        r#""kind": "number", "unit": "mmol/L""#,
        r#""kind": "presence""#,
    );
    assert!(matches!(
        FeatureSpec::from_json(&indexed(&bad, r#"{"death": {"within": "30d"}}"#)),
        Err(SpecError::Incompatible { .. })
    ));
    for missing in [
        r#"{"impute": "mode"}"#,
        r#"{"impute": "constant"}"#,
        r#"{"impute": "drop", "indicator": true}"#,
    ] {
        let f = AGE.replacen(
            r#""transform": {"kind": "number", "unit": "a"}"#,
            &format!(r#""transform": {{"kind": "number", "unit": "a"}}, "missing": {missing}"#),
            1,
        );
        assert!(FeatureSpec::from_json(&spec_with(&f)).is_err(), "{missing}");
    }
}

#[test]
fn time_series_and_labels() {
    let series = r#"{"name": "t",
        "cohort": {"unit": "encounter", "index": "admission", "category": "ehr_data"},
        "features": [{"name": "age", "category": "ehr_data", "source": {"patient": "age"},
                      "transform": {"kind": "number"}}],
        "time_series": {"hours": 24, "bin_minutes": 120, "channels": [
            {"name": "hr", "category": "ehr_data", "unit": "/min",
             "observation": {"system": "http://loinc.org", "code": "8867-4"}},
            {"name": "temp", "category": "health_determinants", "unit": "Cel", "aggregate": "max",
             "observation": {"system": "http://loinc.org", "code": "8310-5"}}]},
        "label": {"name": "aki", "category": "ehr_data",
                  "source": {"observation": {"system": "http://loinc.org", "code": "2160-0",
                             "within": "48h", "above": 2.0, "unit": "mg/dL"}}}}"#;
    let s = FeatureSpec::from_json(series).unwrap();
    let ts = s.series.as_ref().unwrap();
    assert_eq!(ts.steps(), 12);
    assert_eq!(ts.channel_names(), ["hr", "temp"]);
    assert_eq!(ts.channels[0].source.aggregate, Aggregate::Mean);
    assert!(s.categories().contains("health_determinants"));
    let LabelSource::Observation { source, above, .. } = &s.label.source else {
        panic!()
    };
    assert!(*above);
    assert_eq!(source.aggregate, Aggregate::Max);
    assert_eq!(source.window.unwrap().from, Some(Span(1)));
    let untiled = series.replace(r#""bin_minutes": 120"#, r#""bin_minutes": 7"#);
    assert!(FeatureSpec::from_json(&untiled).is_err());
    let clash = series.replace(r#""name": "temp""#, r#""name": "age""#);
    assert!(matches!(
        FeatureSpec::from_json(&clash),
        Err(SpecError::DuplicateColumn(c)) if c == "age"
    ));
    let both = series.replace(r#""above": 2.0"#, r#""above": 2.0, "below": 1.0"#);
    assert!(FeatureSpec::from_json(&both).is_err());
}

/// `hours * 60` past u32: the product once wrapped to 44, so 44-minute bins
/// "tiled" it as one bin, and the series then had 97,612,894 steps.
#[test]
fn time_series_hours_beyond_u32_minutes_are_refused() {
    let spec = |hours: u64, bin: u32| {
        format!(
            r#"{{"name": "t",
            "cohort": {{"unit": "encounter", "index": "admission", "category": "ehr_data"}},
            "features": [{{"name": "age", "category": "ehr_data", "source": {{"patient": "age"}},
                          "transform": {{"kind": "number"}}}}],
            "time_series": {{"hours": {hours}, "bin_minutes": {bin}, "channels": [
                {{"name": "hr", "category": "ehr_data", "unit": "/min",
                 "observation": {{"system": "http://loinc.org", "code": "8867-4"}}}}]}},
            "label": {{"name": "y", "category": "ehr_data",
                      "source": {{"condition": {{"system": "s", "code": "c"}}}}}}}}"#
        )
    };
    assert_eq!(refused_at(&spec(71_582_789, 44)), "time_series");
    assert_eq!(refused_at(&spec(u64::from(u32::MAX), 60)), "time_series");
    let s = FeatureSpec::from_json(&spec(166, 1)).unwrap();
    assert_eq!(s.series.unwrap().steps(), 9_960);
}

/// The field a refused specification names.
fn refused_at(text: &str) -> String {
    match FeatureSpec::from_json(text) {
        Err(SpecError::Invalid { at, .. }) => at,
        other => panic!("{other:?}"),
    }
}

#[test]
fn multi_class_labels_count_their_classes_and_categories() {
    let first_match = r#"{"first_match": {"classes": [
        {"name": "early_death", "source": {"death": {"within": "7d"}}},
        {"name": "readmitted", "category": "health_determinants",
         "source": {"condition": {"codes": [{"system": "http://snomed.info/sct", "code": "1*"}],
                                  "within": "30d"}}}],
        "otherwise": "neither"}}"#;
    let s = FeatureSpec::from_json(&indexed(AGE, first_match)).unwrap();
    assert_eq!(s.task(), Task::Multiclass { classes: 3 });
    assert_eq!(
        s.label.target_names(),
        ["early_death", "readmitted", "neither"]
    );
    // a class's own category is checked against the permit like the label's
    assert_eq!(
        s.categories(),
        BTreeSet::from(["ehr_data".to_owned(), "health_determinants".to_owned()])
    );
    let task = s.task();
    assert!(task.trains(StudyTask::Multiclass { classes: 3 }));
    assert!(!task.trains(StudyTask::Multiclass { classes: 2 }));
    assert!(!task.trains(StudyTask::Binary));
    assert!(!task.trains(StudyTask::Multilabel { labels: 3 }));

    let coded = r#"{"coded": {"observation": {"system": "urn:o", "code": "status"}, "classes": [
        {"name": "none", "codes": [{"system": "urn:v", "code": "0"}]},
        {"name": "any", "codes": [{"system": "urn:v", "code": "1"}, {"system": "urn:v", "code": "2"}]}]}}"#;
    let s = FeatureSpec::from_json(
        &spec_with(AGE).replace(r#"{"condition": {"system": "s", "code": "c"}}"#, coded),
    )
    .unwrap();
    assert_eq!(s.task(), Task::Multiclass { classes: 2 });
    let LabelSource::Coded { source, classes } = &s.label.source else {
        panic!("{:?}", s.label.source)
    };
    // no index: every Observation, the latest
    assert_eq!((source.window, source.aggregate), (None, Aggregate::Latest));
    assert!(classes[1].codes.matches(Some("urn:v"), "2"));
    // with an index the horizon is required
    assert_eq!(refused_at(&indexed(AGE, coded)), "label.coded");
    let s = FeatureSpec::from_json(&indexed(
        AGE,
        &coded.replace(r#""classes""#, r#""within": "48h", "classes""#),
    ))
    .unwrap();
    let LabelSource::Coded { source, .. } = &s.label.source else {
        panic!()
    };
    assert_eq!(
        source.window,
        Some(Window {
            from: Some(Span(1)),
            to: Span(48 * 3600)
        })
    );

    let bins = r#"{"bins": {"observation": {"system": "http://loinc.org", "code": "2160-0",
        "aggregate": "max"}, "within": "48h", "unit": "mg/dL",
        "classes": [{"name": "normal", "below": 1.2}, {"name": "raised", "below": 2.0}, {"name": "high"}]}}"#;
    let s = FeatureSpec::from_json(&indexed(AGE, bins)).unwrap();
    assert_eq!(s.task(), Task::Multiclass { classes: 3 });
    assert_eq!(
        s.task().default_study_task(),
        StudyTask::Multiclass { classes: 3 }
    );
}

#[test]
fn multi_label_labels_are_bits_of_binary_sources() {
    let labels = r#"{"labels": [
        {"name": "death_30d", "source": {"death": {"within": "30d"}}},
        {"name": "aki", "source": {"observation": {"system": "http://loinc.org", "code": "2160-0",
                                   "within": "48h", "above": 2.0, "unit": "mg/dL"}}}]}"#;
    let s = FeatureSpec::from_json(&indexed(AGE, labels)).unwrap();
    assert_eq!(s.task(), Task::Multilabel { labels: 2 });
    assert_eq!(s.label.target_names(), ["death_30d", "aki"]);
    assert!(s.task().trains(StudyTask::Multilabel { labels: 2 }));
    assert!(!s.task().trains(StudyTask::Multilabel { labels: 1 }));
    // a binary label still trains as two classes or one label
    assert!(Task::Binary.trains(StudyTask::Multiclass { classes: 2 }));
    assert!(Task::Binary.trains(StudyTask::Multilabel { labels: 1 }));
    assert!(!Task::Binary.trains(StudyTask::Multiclass { classes: 3 }));
}

#[test]
fn bad_classes_and_labels_name_their_field() {
    let death =
        |n: &str| format!(r#"{{"name": "{n}", "source": {{"death": {{"within": "30d"}}}}}}"#);
    // a survival target is not one label of several
    let nested = format!(
        r#"{{"labels": [{}, {{"name": "s", "source": {{"survival": {{"event": {{"death": {{}}}},
            "follow_up": "365d"}}}}}}]}}"#,
        death("a")
    );
    assert_eq!(refused_at(&indexed(AGE, &nested)), "label.labels[1]");
    // a nested source's own error names its place
    let bad_within = format!(
        r#"{{"first_match": {{"classes": [{}], "otherwise": "alive"}}}}"#,
        death("d").replace("30d", "-1d")
    );
    assert_eq!(
        refused_at(&indexed(AGE, &bad_within)),
        "label.first_match.classes[0]"
    );
    let dup = format!(r#"{{"labels": [{}, {}]}}"#, death("a"), death("a"));
    assert_eq!(refused_at(&indexed(AGE, &dup)), "label");
    let dup_otherwise = format!(
        r#"{{"first_match": {{"classes": [{}], "otherwise": "a"}}}}"#,
        death("a")
    );
    assert_eq!(refused_at(&indexed(AGE, &dup_otherwise)), "label");
    let one_class = format!(r#"{{"first_match": {{"classes": [{}]}}}}"#, death("a"));
    assert_eq!(
        refused_at(&indexed(AGE, &one_class)),
        "label.first_match.classes"
    );
    let many: Vec<String> = (0..33).map(|i| death(&format!("l{i}"))).collect();
    let too_many = format!(r#"{{"labels": [{}]}}"#, many.join(","));
    assert_eq!(refused_at(&indexed(AGE, &too_many)), "label.labels");
    assert_eq!(
        refused_at(&indexed(AGE, r#"{"labels": []}"#)),
        "label.labels"
    );
    let bins = |classes: &str| {
        format!(
            r#"{{"bins": {{"observation": {{"system": "urn:o", "code": "k"}}, "within": "1d",
                "classes": {classes}}}}}"#
        )
    };
    let unordered =
        bins(r#"[{"name": "a", "below": 2}, {"name": "b", "below": 1}, {"name": "c"}]"#);
    assert_eq!(
        refused_at(&indexed(AGE, &unordered)),
        "label.bins.classes[1]"
    );
    let bounded_last = bins(r#"[{"name": "a", "below": 1}, {"name": "b", "below": 2}]"#);
    assert_eq!(
        refused_at(&indexed(AGE, &bounded_last)),
        "label.bins.classes[1]"
    );
    let one_bin = bins(r#"[{"name": "a"}]"#);
    assert_eq!(refused_at(&indexed(AGE, &one_bin)), "label.bins.classes");
    let coded_mean = r#"{"coded": {"observation": {"system": "urn:o", "code": "k", "aggregate": "mean"},
        "within": "1d", "classes": [{"name": "a", "codes": [{"system": "v", "code": "1"}]},
                                    {"name": "b", "codes": [{"system": "v", "code": "2"}]}]}}"#;
    assert_eq!(refused_at(&indexed(AGE, coded_mean)), "label.coded");
    let bad_category = format!(
        r#"{{"labels": [{}]}}"#,
        death("a").replace(r#""source""#, r#""category": "horoscope_data", "source""#)
    );
    assert!(matches!(
        FeatureSpec::from_json(&indexed(AGE, &bad_category)),
        Err(SpecError::UnknownCategory { feature, .. }) if feature == "a"
    ));
}
