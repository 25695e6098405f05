use std::collections::BTreeMap;

use chrono::TimeZone;

use super::graph::{Hdab, PageView, Site};
use super::label::LabelStatementForm;
use super::*;

fn texts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(l, t)| ((*l).to_owned(), (*t).to_owned()))
        .collect()
}

/// What HealthDCAT-AP requires and nothing more.
pub(super) fn minimal_form() -> DatasetForm {
    DatasetForm {
        identifier: "icu-2024".into(),
        title: texts(&[("en", "ICU admissions")]),
        description: texts(&[("en", "Adult ICU stays.")]),
        keywords: [("en".to_owned(), vec!["intensive care".to_owned()])].into(),
        themes: vec!["HEAL".into()],
        publisher: PublisherForm {
            organisation: "hospital-a".into(),
            name: "Hospital A".into(),
        },
        contact_point: ContactForm {
            name: "Data desk".into(),
            email: Some("data@hospital-a.eu".into()),
            url: None,
        },
        health_categories: vec!["ehr_data".into()],
        dataset_type: "personal_data".into(),
        provenance: texts(&[("en", "Extracted from the EHR.")]),
        access_rights: "non_public".into(),
        distributions: vec![DistributionForm {
            access_url: "https://hospital-a.eu/fhir".into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Every field the form has.
pub(super) fn full_form() -> DatasetForm {
    DatasetForm {
        identifier: "cardio-registry".into(),
        title: texts(&[
            ("de", "Kardiologisches Register"),
            ("en", "Cardiology registry"),
        ]),
        description: texts(&[
            ("de", "Alle Herzkatheter-Eingriffe."),
            (
                "en",
                "Every catheterisation, with \"quoted\" notes\nand a second line.",
            ),
        ]),
        keywords: [
            (
                "en".to_owned(),
                vec!["cardiology".to_owned(), "registry".to_owned()],
            ),
            ("de".to_owned(), vec!["Kardiologie".to_owned()]),
        ]
        .into(),
        themes: vec!["HEAL".into(), "SOCI".into()],
        publisher: PublisherForm {
            organisation: "hospital-b".into(),
            name: "Universitätsklinikum B".into(),
        },
        contact_point: ContactForm {
            name: "Registry office".into(),
            email: Some("registry@hospital-b.eu".into()),
            url: Some("https://hospital-b.eu/registry".into()),
        },
        health_categories: vec!["ehr_data".into(), "medical_mortality_registry".into()],
        dataset_type: "personal_data".into(),
        provenance: texts(&[("en", "Entered by the cath lab at each procedure.")]),
        temporal: Some(PeriodForm {
            start: "2015-01-01".into(),
            end: Some("2024-12-31".into()),
        }),
        spatial: vec!["DE".into(), "AT".into()],
        number_of_records: Some(123_456),
        number_of_unique_individuals: Some(45_678),
        population_coverage: texts(&[("en", "Adults treated in the region's two centres.")]),
        min_typical_age: Some(18),
        max_typical_age: Some(95),
        access_rights: "non_public".into(),
        publicly_funded: true,
        quality_label: Some(QualityLabelForm {
            documentation: Some(LabelStatementForm {
                statement: "Data dictionary and FHIR profiles published.".into(),
                evidence: Some("https://hospital-b.eu/registry/dictionary".into()),
            }),
            coverage: Some(LabelStatementForm {
                statement: "Complete for both centres since 2015.".into(),
                evidence: None,
            }),
            ..Default::default()
        }),
        available_features: vec!["age".into(), "lvef".into(), "death_30d".into()],
        distributions: vec![
            DistributionForm {
                access_url: "https://hospital-b.eu/fhir".into(),
                title: texts(&[("en", "FHIR R4 API at the holder's node")]),
                media_type: Some("application/fhir+json".into()),
                format: Some("JSON".into()),
            },
            DistributionForm {
                access_url: "https://hospital-b.eu/registry/extract".into(),
                title: BTreeMap::new(),
                media_type: Some("text/csv".into()),
                format: Some("CSV".into()),
            },
        ],
        version: Some("2024.2".into()),
        legal_basis: vec!["gdpr_6_1_e".into(), "gdpr_9_2_j".into()],
        purposes: vec!["scientific_research".into(), "official_statistics".into()],
        applicable_legislation: vec!["http://data.europa.eu/eli/reg/2016/679/oj".into()],
    }
}

fn rule() -> SmallCellRule {
    SmallCellRule::new(10)
}

pub(super) fn hdab() -> Hdab {
    Hdab {
        name: "Example HDAB".into(),
        email: Some(Email::parse("hdab@example.eu").unwrap()),
        url: None,
        member_state: Some(MemberState::parse("DE").unwrap()),
    }
}

pub(super) fn entry(form: &DatasetForm, id: u128, revision: i64) -> CatalogueEntry {
    let at = chrono::Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
    CatalogueEntry {
        id: DatasetId(uuid::Uuid::from_u128(id)),
        revision,
        status: EntryStatus::Published,
        issued: at,
        modified: at + chrono::Duration::days(revision - 1),
        dataset: Dataset::parse(form, rule()).expect("the example parses"),
    }
}

fn errors(form: &DatasetForm) -> Vec<(String, &'static str)> {
    Dataset::parse(form, rule())
        .expect_err("the form is invalid")
        .into_iter()
        .map(|f| (f.field, f.code))
        .collect()
}

#[test]
fn the_examples_parse() {
    let d = Dataset::parse(&minimal_form(), rule()).unwrap();
    assert_eq!(d.applicable_legislation, [Iri(EHDS_ELI.into())]);
    let d = Dataset::parse(&full_form(), rule()).unwrap();
    assert_eq!(d.applicable_legislation.len(), 2);
    assert_eq!(d.number_of_records.unwrap().get(), 120_000);
    assert_eq!(d.number_of_unique_individuals.unwrap().get(), 45_000);
    assert_eq!(d.keywords.len(), 3);
    assert_eq!(d.publisher.organisation.as_str(), "hospital-b");
}

#[test]
fn every_problem_is_reported_at_once_under_its_shacl_path() {
    let form = DatasetForm {
        identifier: " ".into(),
        title: BTreeMap::new(),
        description: texts(&[("xx_1", "x"), ("en", "")]),
        keywords: BTreeMap::new(),
        themes: vec!["HEALTH".into(), "HEAL".into(), "HEAL".into()],
        publisher: PublisherForm {
            organisation: "a b".into(),
            name: "".into(),
        },
        contact_point: ContactForm {
            name: "Desk".into(),
            email: None,
            url: None,
        },
        health_categories: vec![],
        dataset_type: "records".into(),
        provenance: BTreeMap::new(),
        temporal: Some(PeriodForm {
            start: "2024-02-30".into(),
            end: None,
        }),
        spatial: vec!["US".into()],
        number_of_records: Some(7),
        number_of_unique_individuals: Some(20),
        min_typical_age: Some(200),
        max_typical_age: Some(30),
        access_rights: "open".into(),
        publicly_funded: true,
        available_features: vec!["bad name".into()],
        distributions: vec![DistributionForm {
            access_url: "ftp://x.eu/data".into(),
            title: texts(&[("en", "")]),
            media_type: Some("csv".into()),
            format: Some("csv".into()),
        }],
        version: Some("".into()),
        legal_basis: vec!["consent".into()],
        purposes: vec!["marketing".into()],
        applicable_legislation: vec!["not an iri".into()],
        ..Default::default()
    };
    let expected: Vec<(&str, &str)> = vec![
        ("dct:identifier", "required"),
        ("dct:title", "required"),
        ("dct:description@en", "required"),
        ("dct:description@xx_1", "invalid_language"),
        ("dcat:keyword", "required"),
        ("dcat:theme[0]", "unknown_theme"),
        ("dcat:theme[2]", "duplicate_value"),
        ("dct:publisher/dct:identifier", "invalid_organisation"),
        ("dct:publisher/foaf:name", "required"),
        ("dcat:contactPoint", "contact_unreachable"),
        ("healthdcatap:healthCategory", "required"),
        ("dct:type", "unknown_dataset_type"),
        ("dct:provenance", "required"),
        ("dct:temporal/dcat:startDate", "invalid_date"),
        ("dct:spatial[0]", "unknown_member_state"),
        ("healthdcatap:numberOfRecords", "small_count"),
        ("healthdcatap:numberOfUniqueIndividuals", "exceeds_records"),
        ("healthdcatap:minTypicalAge", "invalid_age"),
        ("healthdcatap:maxTypicalAge", "invalid_age_range"),
        ("dct:accessRights", "unknown_access_rights"),
        ("dqv:hasQualityAnnotation", "label_required"),
        ("ehdsgw:availableFeature[0]", "invalid_feature"),
        ("dcat:distribution[0]/dcat:accessURL", "invalid_iri"),
        ("dcat:distribution[0]/dct:title@en", "required"),
        ("dcat:distribution[0]/dcat:mediaType", "invalid_media_type"),
        ("dcat:distribution[0]/dct:format", "invalid_format"),
        ("dcat:version", "required"),
        ("dpv:hasLegalBasis[0]", "unknown_legal_basis"),
        ("dpv:hasPurpose[0]", "unknown_purpose"),
        ("dcatap:applicableLegislation[0]", "invalid_iri"),
    ];
    let found = errors(&form);
    let found: Vec<(&str, &str)> = found.iter().map(|(f, c)| (f.as_str(), *c)).collect();
    assert_eq!(found, expected);
}

#[test]
fn the_remaining_error_paths() {
    // a title only in a language of no Member State; keywords that are blank; a period
    // ending before it starts; a bad end date; no distribution; an e-mail and URL that are not
    let mut form = minimal_form();
    form.title = texts(&[("ja", "集中治療")]);
    form.keywords = [("en".to_owned(), vec![" ".to_owned()])].into();
    form.temporal = Some(PeriodForm {
        start: "2024-01-02".into(),
        end: Some("2024-01-01".into()),
    });
    form.distributions.clear();
    form.contact_point.email = Some("not-an-address".into());
    form.contact_point.url = Some("https:///nohost".into());
    form.identifier = "x".repeat(MAX_SHORT_CHARS + 1);
    assert_eq!(
        errors(&form),
        [
            ("dct:identifier".to_owned(), "too_long"),
            ("dct:title".to_owned(), "no_official_language"),
            ("dcat:keyword@en[0]".to_owned(), "required"),
            (
                "dcat:contactPoint/vcard:hasEmail".to_owned(),
                "invalid_email"
            ),
            ("dcat:contactPoint/vcard:hasURL".to_owned(), "invalid_iri"),
            ("dct:temporal/dcat:endDate".to_owned(), "invalid_period"),
            ("dcat:distribution".to_owned(), "required"),
        ]
    );
    let mut form = minimal_form();
    form.temporal = Some(PeriodForm {
        start: "2024-01-01".into(),
        end: Some("31.12.2024".into()),
    });
    form.quality_label = Some(QualityLabelForm::default());
    form.keywords = [("e n".to_owned(), vec!["k".to_owned()])].into();
    assert_eq!(
        errors(&form),
        [
            ("dcat:keyword@e n".to_owned(), "invalid_language"),
            ("dct:temporal/dcat:endDate".to_owned(), "invalid_date"),
            ("dqv:hasQualityAnnotation".to_owned(), "empty_label"),
        ]
    );
}

#[test]
fn counts_are_rounded_down_and_small_ones_refused() {
    let publish = |n| PublishedCount::publish(n, SmallCellRule::new(10)).map(|c| c.get());
    assert_eq!(publish(0), Ok(0));
    assert_eq!(publish(9).unwrap_err().0, "small_count");
    assert_eq!(publish(1).unwrap_err().0, "small_count");
    assert_eq!(publish(10), Ok(10));
    assert_eq!(publish(99), Ok(99));
    assert_eq!(publish(123), Ok(120));
    assert_eq!(publish(45_678), Ok(45_000));
    assert_eq!(publish(1_000_001), Ok(1_000_000));
    // rounding never goes below the threshold
    let high = |n| PublishedCount::publish(n, SmallCellRule::new(155)).map(|c| c.get());
    assert_eq!(high(159), Ok(155));
    assert_eq!(high(154).unwrap_err().0, "small_count");
    assert_eq!(high(1_234), Ok(1_200));
}

#[test]
fn small_parsers_accept_and_refuse() {
    assert_eq!(parse_lang("de-AT"), Ok("de-at".into()));
    assert!(parse_lang("e").is_err());
    assert!(parse_lang("en-").is_err());
    assert!(parse_lang("en\"@").is_err());
    assert!(Iri::parse_web("https://a.eu/x?y=1#z").is_ok());
    for bad in [
        "https://a.eu/x y",
        "https://a.eu/<x>",
        "https://",
        "javascript:alert(1)",
        "https://a.eu/\u{0}",
    ] {
        assert!(Iri::parse_web(bad).is_err(), "{bad}");
    }
    assert!(Email::parse("a.b@c.eu").is_ok());
    for bad in [
        "a@b",
        "@b.eu",
        "a@.eu",
        "a b@c.eu",
        "a@b.eu?subject=x",
        "a>@b.eu",
    ] {
        assert!(Email::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(
        MediaType::parse("Text/CSV").unwrap().iri(),
        "https://www.iana.org/assignments/media-types/text/csv"
    );
    assert_eq!(
        LegalBasis::parse("gdpr_9_2_j").unwrap().iri(),
        "https://w3id.org/dpv/legal/eu/gdpr#A9-2-j"
    );
    assert_eq!(
        serde_json::to_value(LegalBasis::Gdpr6_1E).unwrap(),
        "gdpr_6_1_e"
    );
    for (basis, code, _) in LegalBasis::ALL {
        assert_eq!(LegalBasis::parse(code), Ok(basis));
        assert_eq!(serde_json::to_value(basis).unwrap(), code);
    }
    assert_eq!(
        graph::country_iri(&MemberState::parse("EL").unwrap()),
        "http://publications.europa.eu/resource/authority/country/GRC"
    );
    assert_eq!(
        graph::category_iri(DataCategory::BiobankData),
        "http://data.europa.eu/eli/reg/2025/327/art_51/par_1/pnt_q/oj"
    );
}

#[test]
fn the_stored_dataset_reads_back_the_same() {
    let d = Dataset::parse(&full_form(), rule()).unwrap();
    let json = serde_json::to_string(&d).unwrap();
    let back: Dataset = serde_json::from_str(&json).unwrap();
    assert_eq!(back, d);
}

#[test]
fn a_minimal_dataset_in_turtle() {
    let hdab = hdab();
    let site = Site {
        base: "https://hdab.example.eu",
        hdab: &hdab,
    };
    let ttl = turtle::statements(&[site.dataset(&entry(&minimal_form(), 1, 1))]);
    assert_eq!(
        ttl,
        r#"
<https://hdab.example.eu/v1/catalogue/datasets/00000000-0000-0000-0000-000000000001>
    a dcat:Dataset ;
    dct:identifier "icu-2024" ;
    dct:title "ICU admissions"@en ;
    dct:description "Adult ICU stays."@en ;
    dcat:keyword "intensive care"@en ;
    dcat:theme <http://publications.europa.eu/resource/authority/data-theme/HEAL> ;
    dct:type <http://publications.europa.eu/resource/authority/dataset-type/PERSONAL_DATA> ;
    dct:accessRights <http://publications.europa.eu/resource/authority/access-right/NON_PUBLIC> ;
    dcatap:applicableLegislation <http://data.europa.eu/eli/reg/2025/327/oj> ;
    dct:publisher [
        a foaf:Agent ;
        foaf:name "Hospital A" ;
        dct:identifier "hospital-a" ;
        dcat:contactPoint [
            a vcard:Kind ;
            vcard:fn "Data desk" ;
            vcard:hasEmail <mailto:data@hospital-a.eu>
        ]
    ] ;
    dcat:contactPoint [
        a vcard:Kind ;
        vcard:fn "Data desk" ;
        vcard:hasEmail <mailto:data@hospital-a.eu>
    ] ;
    healthdcatap:hdab [
        a foaf:Agent ;
        foaf:name "Example HDAB" ;
        dcat:contactPoint [
            a vcard:Kind ;
            vcard:fn "Example HDAB" ;
            vcard:hasEmail <mailto:hdab@example.eu> ;
            vcard:hasURL <https://hdab.example.eu>
        ]
    ] ;
    healthdcatap:healthCategory <http://data.europa.eu/eli/reg/2025/327/art_51/par_1/pnt_a/oj> ;
    dct:provenance [
        a dct:ProvenanceStatement ;
        rdfs:label "Extracted from the EHR."@en
    ] ;
    dcat:distribution [
        a dcat:Distribution ;
        dcat:accessURL <https://hospital-a.eu/fhir> ;
        dcatap:applicableLegislation <http://data.europa.eu/eli/reg/2025/327/oj>
    ] ;
    owl:versionInfo "1" ;
    dct:issued "2026-03-01T12:00:00Z"^^xsd:dateTime ;
    dct:modified "2026-03-01T12:00:00Z"^^xsd:dateTime ;
    dcat:landingPage <https://hdab.example.eu/v1/applications> .
"#
    );
}

#[test]
fn the_full_dataset_carries_every_field() {
    let hdab = hdab();
    let site = Site {
        base: "https://hdab.example.eu",
        hdab: &hdab,
    };
    let node = site.dataset(&entry(&full_form(), 2, 3));
    let ttl = turtle::statements(std::slice::from_ref(&node));
    for line in [
        r#"    dct:title "Kardiologisches Register"@de, "Cardiology registry"@en ;"#,
        r#"    dct:description "Alle Herzkatheter-Eingriffe."@de, "Every catheterisation, with \"quoted\" notes\nand a second line."@en ;"#,
        r#"    dcat:keyword "Kardiologie"@de, "cardiology"@en, "registry"@en ;"#,
        r#"    healthdcatap:numberOfRecords "120000"^^xsd:nonNegativeInteger ;"#,
        r#"    healthdcatap:numberOfUniqueIndividuals "45000"^^xsd:nonNegativeInteger ;"#,
        r#"    healthdcatap:minTypicalAge "18"^^xsd:nonNegativeInteger ;"#,
        r#"    dct:spatial <http://publications.europa.eu/resource/authority/country/DEU>, <http://publications.europa.eu/resource/authority/country/AUT> ;"#,
        r#"        dcat:startDate "2015-01-01"^^xsd:date ;"#,
        r#"    dpv:hasPurpose <http://data.europa.eu/eli/reg/2025/327/art_53/par_1/pnt_e/oj>, <http://data.europa.eu/eli/reg/2025/327/art_53/par_1/pnt_c/oj> ;"#,
        r#"    dpv:hasLegalBasis <https://w3id.org/dpv/legal/eu/gdpr#A6-1-e>, <https://w3id.org/dpv/legal/eu/gdpr#A9-2-j> ;"#,
        r#"        dct:conformsTo <http://data.europa.eu/eli/reg/2025/327/art_78/par_3/pnt_a/oj> ;"#,
        r#"        rdfs:seeAlso <https://hospital-b.eu/registry/dictionary>"#,
        r#"            rdf:value "Complete for both centres since 2015.""#,
        r#"        dcat:mediaType <https://www.iana.org/assignments/media-types/application/fhir+json> ;"#,
        r#"        dct:format <http://publications.europa.eu/resource/authority/file-type/CSV>"#,
        r#"    ehdsgw:availableFeature "age", "lvef", "death_30d" ;"#,
        r#"    dcat:version "2024.2" ;"#,
        r#"    owl:versionInfo "3" ;"#,
        r#"    dct:modified "2026-03-03T12:00:00Z"^^xsd:dateTime ;"#,
        r#"    dcatap:applicableLegislation <http://data.europa.eu/eli/reg/2025/327/oj>, <http://data.europa.eu/eli/reg/2016/679/oj> ;"#,
        r#"    dct:publisher ["#,
        r#"        foaf:name "Universitätsklinikum B" ;"#,
    ] {
        assert!(ttl.lines().any(|l| l == line), "missing line {line}\n{ttl}");
    }
    // JSON-LD says the same
    let doc = jsonld::document(&node);
    assert_eq!(
        doc["healthdcatap:numberOfRecords"][0],
        serde_json::json!({ "@value": "120000", "@type": "xsd:nonNegativeInteger" })
    );
    assert_eq!(doc["dct:title"][0]["@language"], "de");
    assert_eq!(
        doc["dqv:hasQualityAnnotation"][1]["oa:hasBody"][0]["rdf:value"][0]["@value"],
        "Complete for both centres since 2015."
    );
    assert_eq!(
        doc["dcat:contactPoint"][0]["vcard:hasURL"][0]["@id"],
        "https://hospital-b.eu/registry"
    );
}

#[test]
fn catalogue_pages_link_to_each_other() {
    let hdab = hdab();
    let site = Site {
        base: "https://hdab.example.eu",
        hdab: &hdab,
    };
    let entries = [entry(&minimal_form(), 1, 1), entry(&full_form(), 2, 1)];
    let view = PageView {
        page: 2,
        per_page: 2,
        total: 5,
    };
    let node = site.catalogue(&entries, view);
    let ttl = turtle::statements(std::slice::from_ref(&node));
    for line in [
        "<https://hdab.example.eu/v1/catalogue>",
        "    a dcat:Catalog ;",
        r#"    dct:title "Dataset catalogue of Example HDAB"@en ;"#,
        "    dcat:dataset <https://hdab.example.eu/v1/catalogue/datasets/00000000-0000-0000-0000-000000000001>, <https://hdab.example.eu/v1/catalogue/datasets/00000000-0000-0000-0000-000000000002> ;",
        "    hydra:view <https://hdab.example.eu/v1/catalogue?page=2&per_page=2> .",
        "<https://hdab.example.eu/v1/catalogue?page=2&per_page=2>",
        "    a hydra:PartialCollectionView ;",
        "    hydra:first <https://hdab.example.eu/v1/catalogue?page=1&per_page=2> ;",
        "    hydra:last <https://hdab.example.eu/v1/catalogue?page=3&per_page=2> ;",
        r#"    hydra:totalItems "5"^^xsd:nonNegativeInteger ;"#,
        "    hydra:previous <https://hdab.example.eu/v1/catalogue?page=1&per_page=2> ;",
        "    hydra:next <https://hdab.example.eu/v1/catalogue?page=3&per_page=2> .",
        "<https://hdab.example.eu/v1/catalogue/datasets/00000000-0000-0000-0000-000000000002>",
    ] {
        assert!(ttl.lines().any(|l| l == line), "missing line {line}\n{ttl}");
    }
    // the last page has no next, the first no previous
    let last = turtle::statements(&[site.catalogue(
        &[],
        PageView {
            page: 3,
            per_page: 2,
            total: 5,
        },
    )]);
    assert!(!last.contains("hydra:next") && last.contains("hydra:previous"));
    let first = turtle::statements(&[site.catalogue(
        &[],
        PageView {
            page: 1,
            per_page: 2,
            total: 0,
        },
    )]);
    assert!(!first.contains("hydra:next") && !first.contains("hydra:previous"));
    assert!(first.contains("hydra:last <https://hdab.example.eu/v1/catalogue?page=1&per_page=2>"));
    let doc = jsonld::document(&node);
    assert_eq!(doc["dcat:dataset"].as_array().unwrap().len(), 2);
    assert_eq!(
        doc["hydra:view"][0]["@type"][0],
        "hydra:PartialCollectionView"
    );
}

/// A valid graph with what HealthDCAT-AP requires taken out: the CI's negative check, which
/// the SHACL validation must report as non-conforming.
fn broken(mut node: rdf::Node) -> rdf::Node {
    node.props.retain(|(p, _)| {
        !matches!(
            *p,
            "dct:title" | "dcat:contactPoint" | "healthdcatap:healthCategory"
        )
    });
    node.add(
        "healthdcatap:numberOfRecords",
        vec![rdf::Object::plain("many")],
    );
    node
}

/// Writes the example catalogues the CI validates with pyshacl (`scripts/catalogue/
/// validate.py`) into `$EHDS_CATALOGUE_EXAMPLES`: `valid/` must conform, `broken/` must not.
/// Without the variable it still renders every example.
#[test]
fn writes_the_examples_the_ci_validates() {
    let hdab = hdab();
    let site = Site {
        base: "https://hdab.example.eu",
        hdab: &hdab,
    };
    let minimal = entry(&minimal_form(), 1, 1);
    let full = entry(&full_form(), 2, 2);
    let mut public = minimal_form();
    public.access_rights = "public".into();
    public.identifier = "icu-2024-open".into();
    let several = [minimal.clone(), full.clone(), entry(&public, 3, 1)];
    let one_page = PageView {
        page: 1,
        per_page: 50,
        total: 1,
    };
    let valid: Vec<(&str, rdf::Node)> = vec![
        (
            "minimal-dataset",
            site.catalogue(std::slice::from_ref(&minimal), one_page),
        ),
        (
            "full-dataset",
            site.catalogue(std::slice::from_ref(&full), one_page),
        ),
        (
            "catalogue-of-several",
            site.catalogue(
                &several,
                PageView {
                    page: 1,
                    per_page: 50,
                    total: 3,
                },
            ),
        ),
        (
            "catalogue-second-page",
            site.catalogue(
                &several[2..],
                PageView {
                    page: 2,
                    per_page: 2,
                    total: 3,
                },
            ),
        ),
    ];
    let broken = vec![(
        "dataset-without-title-contact-category",
        site.catalogue(
            &[],
            PageView {
                page: 1,
                per_page: 50,
                total: 1,
            },
        )
        .with(
            "dcat:dataset",
            vec![rdf::Object::node(broken(site.dataset(&minimal)))],
        ),
    )];
    let dir = std::env::var_os("EHDS_CATALOGUE_EXAMPLES").map(std::path::PathBuf::from);
    for (kind, examples) in [("valid", &valid), ("broken", &broken)] {
        for (name, node) in examples {
            let ttl = turtle::document(std::slice::from_ref(node));
            let json = serde_json::to_string_pretty(&jsonld::document(node)).unwrap();
            assert!(ttl.contains("a dcat:Catalog") && json.contains("dcat:Catalog"));
            if let Some(dir) = &dir {
                let at = dir.join(kind);
                std::fs::create_dir_all(&at).unwrap();
                std::fs::write(at.join(format!("{name}.ttl")), &ttl).unwrap();
                std::fs::write(at.join(format!("{name}.jsonld")), &json).unwrap();
            }
        }
    }
}
