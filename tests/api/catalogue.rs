//! The Art. 77 dataset catalogue: a data holder publishes HealthDCAT-AP descriptions of its own
//! datasets, versions and withdraws them; anyone reads the catalogue as JSON-LD or Turtle
//! without a token; malformed descriptions are refused with the SHACL path of every problem,
//! audited, and nothing of them is stored.

use serde_json::{json, Value};

use crate::both_backends;
use crate::helpers::*;

fn dataset(org: &str) -> Value {
    json!({
        "identifier": format!("{org}-icu"),
        "title": { "en": "ICU admissions", "de": "Intensivaufnahmen" },
        "description": { "en": "Adult ICU stays, \"de-identified\"." },
        "keywords": { "en": ["intensive care"] },
        "themes": ["HEAL"],
        "publisher": { "organisation": org, "name": "Hospital" },
        "contact_point": { "name": "Data desk", "email": format!("data@{org}.eu") },
        "health_categories": ["ehr_data"],
        "dataset_type": "personal_data",
        "provenance": { "en": "Extracted from the EHR." },
        "number_of_records": 12345,
        "access_rights": "non_public",
        "publicly_funded": true,
        "quality_label": { "coverage": { "statement": "All admissions since 2015." } },
        "available_features": ["age", "lactate"],
        "distributions": [{ "access_url": format!("https://{org}.eu/fhir"), "format": "JSON" }]
    })
}

async fn publish(app: &TestApp, org: &str, body: &Value) -> Reply {
    app.post("/v1/catalogue/datasets", &app.holder(org), body)
        .await
}

/// Reads without a token, asking for `accept`.
async fn public(app: &TestApp, path: &str, accept: &str) -> Reply {
    app.send(
        app.client
            .get(format!("{}{path}", app.base))
            .header("accept", accept),
    )
    .await
}

async fn publish_and_read_publicly(app: TestApp) {
    let r = publish(&app, "cleveland", &dataset("cleveland")).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_owned();
    assert_eq!(r.body["revision"], 1);
    assert_eq!(r.body["status"], "published");
    assert_eq!(
        r.headers["location"].to_str().unwrap(),
        format!("/v1/catalogue/datasets/{id}")
    );
    let iri = format!("{}/v1/catalogue/datasets/{id}", app.base);
    assert_eq!(r.body["iri"], iri);

    // the catalogue, JSON-LD by default, without a token
    let c = public(&app, "/v1/catalogue", "*/*").await;
    assert_eq!(c.status, 200, "{}", c.text);
    assert_eq!(c.headers["content-type"], "application/ld+json");
    assert_eq!(
        c.body["@context"]["healthdcatap"],
        "http://healthdataportal.eu/ns/health#"
    );
    assert_eq!(c.body["@type"][0], "dcat:Catalog");
    let d = &c.body["dcat:dataset"][0];
    assert_eq!(d["@id"], iri.as_str());
    assert_eq!(
        d["healthdcatap:numberOfRecords"][0],
        json!({ "@value": "12000", "@type": "xsd:nonNegativeInteger" })
    );
    assert_eq!(
        d["healthdcatap:hdab"][0]["foaf:name"][0]["@value"],
        "Example Health Data Access Body"
    );
    assert_eq!(
        d["dqv:hasQualityAnnotation"][0]["oa:hasBody"][0]["rdf:value"][0]["@value"],
        "All admissions since 2015."
    );
    assert_eq!(
        c.body["hydra:view"][0]["hydra:totalItems"][0]["@value"],
        "1"
    );

    // Turtle on request
    let t = public(&app, "/v1/catalogue", "text/turtle").await;
    assert_eq!(t.status, 200);
    assert_eq!(t.headers["content-type"], "text/turtle; charset=utf-8");
    assert!(t
        .text
        .starts_with("@prefix adms: <http://www.w3.org/ns/adms#> .\n"));
    assert!(
        t.text.contains(&format!("    dcat:dataset <{iri}> ;\n")),
        "{}",
        t.text
    );
    assert!(t
        .text
        .contains("    dct:description \"Adult ICU stays, \\\"de-identified\\\".\"@en ;\n"));
    assert!(t
        .text
        .contains("    healthdcatap:numberOfRecords \"12000\"^^xsd:nonNegativeInteger ;\n"));

    // one dataset, both ways
    let one = public(
        &app,
        &format!("/v1/catalogue/datasets/{id}"),
        "application/ld+json",
    )
    .await;
    assert_eq!(one.status, 200);
    assert_eq!(one.body["@id"], iri.as_str());
    assert_eq!(one.body["dct:title"].as_array().unwrap().len(), 2);
    let one = public(&app, &format!("/v1/catalogue/datasets/{id}"), "text/turtle").await;
    assert!(one
        .text
        .contains(&format!("\n<{iri}>\n    a dcat:Dataset ;\n")));

    // a new version by its holder; the catalogue shows it, with its revision
    let mut changed = dataset("cleveland");
    changed["title"] = json!({ "en": "ICU admissions 2015-2025" });
    let v = app
        .send(
            app.client
                .put(format!("{}/v1/catalogue/datasets/{id}", app.base))
                .bearer_auth(app.holder("cleveland"))
                .json(&changed),
        )
        .await;
    assert_eq!(v.status, 200, "{}", v.text);
    assert_eq!(v.body["revision"], 2);
    let one = public(
        &app,
        &format!("/v1/catalogue/datasets/{id}"),
        "application/ld+json",
    )
    .await;
    assert_eq!(
        one.body["dct:title"][0]["@value"],
        "ICU admissions 2015-2025"
    );
    assert_eq!(one.body["owl:versionInfo"][0]["@value"], "2");

    // each change is audited with its revision
    let created = app.audit("action=catalogue.create").await;
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["resource_type"], "catalogue_dataset");
    assert_eq!(created[0]["resource_id"], id.as_str());
    assert_eq!(created[0]["outcome"], "success");
    assert_eq!(created[0]["detail"]["revision"], 1);
    let updated = app.audit("action=catalogue.update").await;
    assert_eq!(updated[0]["detail"]["revision"], 2);

    // withdrawn: gone from the catalogue, 410 for the dataset, no second withdrawal
    let w = app
        .send(
            app.client
                .delete(format!("{}/v1/catalogue/datasets/{id}", app.base))
                .bearer_auth(app.holder("cleveland")),
        )
        .await;
    assert_eq!(w.status, 200, "{}", w.text);
    assert_eq!(w.body["status"], "withdrawn");
    let c = public(&app, "/v1/catalogue", "application/ld+json").await;
    assert!(c.body.get("dcat:dataset").is_none(), "{}", c.text);
    let gone = public(&app, &format!("/v1/catalogue/datasets/{id}"), "text/turtle").await;
    assert_eq!(gone.status, 410);
    let again = app
        .send(
            app.client
                .delete(format!("{}/v1/catalogue/datasets/{id}", app.base))
                .bearer_auth(app.holder("cleveland")),
        )
        .await;
    assert_eq!(again.status, 409);
    assert_eq!(again.code(), "dataset_withdrawn");
    assert_eq!(
        app.audit("action=catalogue.withdraw&outcome=success")
            .await
            .len(),
        1
    );
}
both_backends!(publish_and_read_publicly);

async fn malformed_descriptions_name_their_shacl_paths_and_store_nothing(app: TestApp) {
    let mut bad = dataset("cleveland");
    bad["title"] = json!({});
    bad["number_of_records"] = json!(4);
    bad["contact_point"] = json!({ "name": "Desk" });
    bad["themes"] = json!(["HEALTH"]);
    bad["distributions"][0]["access_url"] = json!("ftp://cleveland.eu/x");
    let r = publish(&app, "cleveland", &bad).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.headers["content-type"], "application/problem+json");
    let errors: Vec<(String, String)> = r.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_owned(),
                e["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("dct:title", "required"),
        ("dcat:theme[0]", "unknown_theme"),
        ("dcat:contactPoint", "contact_unreachable"),
        ("healthdcatap:numberOfRecords", "small_count"),
        ("dcat:distribution[0]/dcat:accessURL", "invalid_iri"),
    ];
    assert_eq!(
        errors,
        expected.map(|(f, c)| (f.to_owned(), c.to_owned())),
        "{}",
        r.text
    );

    // nothing stored, the refusal on record
    let c = public(&app, "/v1/catalogue", "application/ld+json").await;
    assert!(c.body.get("dcat:dataset").is_none(), "{}", c.text);
    assert_eq!(
        c.body["hydra:view"][0]["hydra:totalItems"][0]["@value"],
        "0"
    );
    assert!(app
        .audit("action=catalogue.create&outcome=success")
        .await
        .is_empty());
    let refused = app.audit("action=catalogue.create&outcome=denied").await;
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0]["http_status"], 422);
    assert_eq!(refused[0]["detail"]["code"], "validation_failed");

    // a new version that breaks the profile leaves the published one as it was
    let ok = publish(&app, "cleveland", &dataset("cleveland")).await;
    let id = ok.body["id"].as_str().unwrap().to_owned();
    let mut bad = dataset("cleveland");
    bad["access_rights"] = json!("open");
    let r = app
        .send(
            app.client
                .put(format!("{}/v1/catalogue/datasets/{id}", app.base))
                .bearer_auth(app.holder("cleveland"))
                .json(&bad),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["errors"][0]["field"], "dct:accessRights");
    let one = public(
        &app,
        &format!("/v1/catalogue/datasets/{id}"),
        "application/ld+json",
    )
    .await;
    assert_eq!(one.body["owl:versionInfo"][0]["@value"], "1");
    let refused = app.audit("action=catalogue.update&outcome=denied").await;
    assert_eq!(refused[0]["resource_id"], id.as_str());
}
both_backends!(malformed_descriptions_name_their_shacl_paths_and_store_nothing);

async fn holders_publish_only_for_their_own_organisation(app: TestApp) {
    // for another organisation: refused by the policies, audited, nothing stored
    let r = publish(&app, "hungarian", &dataset("cleveland")).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let refused = app.audit("action=catalogue.create&outcome=denied").await;
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0]["http_status"], 403);
    // neither researchers nor officers publish
    for token in [app.researcher(), app.officer()] {
        let r = app
            .post("/v1/catalogue/datasets", &token, &dataset("cleveland"))
            .await;
        assert_eq!(r.status, 403, "{}", r.text);
    }
    // no token at all
    let r = app
        .send(
            app.client
                .post(format!("{}/v1/catalogue/datasets", app.base))
                .json(&dataset("cleveland")),
        )
        .await;
    assert_eq!(r.status, 401);
    let c = public(&app, "/v1/catalogue", "application/ld+json").await;
    assert!(c.body.get("dcat:dataset").is_none(), "{}", c.text);

    // another holder can neither version nor withdraw a dataset, nor take it over
    let ok = publish(&app, "cleveland", &dataset("cleveland")).await;
    assert_eq!(ok.status, 201);
    let id = ok.body["id"].as_str().unwrap().to_owned();
    let other = app
        .send(
            app.client
                .put(format!("{}/v1/catalogue/datasets/{id}", app.base))
                .bearer_auth(app.holder("hungarian"))
                .json(&dataset("hungarian")),
        )
        .await;
    assert_eq!(other.status, 403, "{}", other.text);
    let other = app
        .send(
            app.client
                .delete(format!("{}/v1/catalogue/datasets/{id}", app.base))
                .bearer_auth(app.holder("hungarian")),
        )
        .await;
    assert_eq!(other.status, 403, "{}", other.text);
    let moved = app
        .send(
            app.client
                .put(format!("{}/v1/catalogue/datasets/{id}", app.base))
                .bearer_auth(app.holder("cleveland"))
                .json(&dataset("hungarian")),
        )
        .await;
    assert_eq!(moved.status, 422, "{}", moved.text);
    assert_eq!(moved.code(), "publisher_changed");
    let one = public(
        &app,
        &format!("/v1/catalogue/datasets/{id}"),
        "application/ld+json",
    )
    .await;
    assert_eq!(one.status, 200);
    assert_eq!(one.body["owl:versionInfo"][0]["@value"], "1");
    assert_eq!(
        app.audit("action=catalogue.update&outcome=denied")
            .await
            .len(),
        2
    );
}
both_backends!(holders_publish_only_for_their_own_organisation);

async fn harvesters_page_through_the_catalogue(app: TestApp) {
    for n in 0..5 {
        let mut body = dataset("cleveland");
        body["identifier"] = json!(format!("dataset-{n}"));
        let r = publish(&app, "cleveland", &body).await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let mut seen = Vec::new();
    let mut next = Some(format!("{}/v1/catalogue?per_page=2", app.base));
    while let Some(url) = next.take() {
        let page = app
            .send(app.client.get(&url).header("accept", "application/ld+json"))
            .await;
        assert_eq!(page.status, 200, "{}", page.text);
        for d in page.body["dcat:dataset"].as_array().unwrap() {
            seen.push(
                d["dct:identifier"][0]["@value"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
        let view = &page.body["hydra:view"][0];
        assert_eq!(view["hydra:totalItems"][0]["@value"], "5");
        next = view["hydra:next"][0]["@id"].as_str().map(str::to_owned);
    }
    assert_eq!(
        seen,
        (0..5).map(|n| format!("dataset-{n}")).collect::<Vec<_>>()
    );
    let bad = public(&app, "/v1/catalogue?per_page=0", "text/turtle").await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.code(), "invalid_query");
}
both_backends!(harvesters_page_through_the_catalogue);

async fn applications_name_published_datasets_of_their_holders(app: TestApp) {
    let published = publish(&app, "hosp-1", &dataset("hosp-1")).await;
    assert_eq!(published.status, 201, "{}", published.text);
    let id = published.body["id"].as_str().unwrap().to_owned();
    let elsewhere = publish(&app, "hosp-9", &dataset("hosp-9")).await;
    let other = elsewhere.body["id"].as_str().unwrap().to_owned();
    let withdrawn = publish(&app, "hosp-2", &dataset("hosp-2")).await;
    let gone = withdrawn.body["id"].as_str().unwrap().to_owned();
    let w = app
        .send(
            app.client
                .delete(format!("{}/v1/catalogue/datasets/{gone}", app.base))
                .bearer_auth(app.holder("hosp-2")),
        )
        .await;
    assert_eq!(w.status, 200, "{}", w.text);

    let mut body = application();
    let unknown = "01a226de-2f60-77ff-aae7-a28f02dacc8a";
    body["datasets"] = json!([id, other, gone, unknown, "not-an-id", id]);
    let refused = app.apply(&body).await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    let codes: Vec<(String, String)> = refused.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_owned(),
                e["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        codes.contains(&("datasets[4]".into(), "invalid_id".into())),
        "{codes:?}"
    );
    assert!(
        codes.contains(&("datasets[5]".into(), "duplicate_value".into())),
        "{codes:?}"
    );
    // the form errors come first; with them fixed, the catalogue is consulted
    body["datasets"] = json!([id, other, gone, unknown]);
    let refused = app.apply(&body).await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    let codes: Vec<&str> = refused.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        vec![
            "dataset_holder_not_requested",
            "dataset_withdrawn",
            "dataset_not_found"
        ],
        "{}",
        refused.text
    );
    let none = app.get("/v1/applications", &app.officer()).await;
    assert_eq!(none.body, json!([]), "nothing stored");

    body["datasets"] = json!([id]);
    let created = app.apply(&body).await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["request"]["datasets"], json!([id]));
}
both_backends!(applications_name_published_datasets_of_their_holders);
