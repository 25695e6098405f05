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
    let Source::Condition { codes, window } = &s.features[0].source else {
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
