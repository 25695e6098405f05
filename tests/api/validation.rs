//! Bad input: each gets a precise 4xx problem, nothing is stored, and the refusal is audited.

use serde_json::{json, Value};

use crate::both_backends;
use crate::helpers::*;

fn with(path: &[&str], value: Value) -> Value {
    let mut body = application();
    let mut target = &mut body;
    for key in &path[..path.len() - 1] {
        target = &mut target[*key];
    }
    target[path[path.len() - 1]] = value;
    body
}

async fn bad_applications_are_refused_precisely_and_nothing_is_stored(app: TestApp) {
    let cases: Vec<(&str, Value, u16, &str)> = vec![
        (
            "unknown field",
            with(&["surprise"], json!(1)),
            422,
            "invalid_body",
        ),
        (
            "wrong type",
            with(&["purposes"], json!("scientific_research")),
            422,
            "invalid_body",
        ),
        (
            "unknown purpose",
            with(&["purposes"], json!(["scientific_research", "marketing"])),
            422,
            "unknown_purpose",
        ),
        (
            "prohibited use",
            with(
                &["purposes"],
                json!(["scientific_research", "advertising_marketing"]),
            ),
            422,
            "prohibited_use",
        ),
        (
            "reserved purpose",
            with(
                &["purposes"],
                json!(["scientific_research", "official_statistics"]),
            ),
            422,
            "purpose_reserved_for_public_bodies",
        ),
        (
            "unknown category",
            with(&["categories"], json!(["ehr"])),
            422,
            "unknown_category",
        ),
        (
            "empty holders",
            with(&["data_holders"], json!([])),
            422,
            "empty_list",
        ),
        (
            "non-EU state",
            with(&["member_states"], json!(["US"])),
            422,
            "unknown_member_state",
        ),
        (
            "inverted period",
            with(
                &["requested_period"],
                json!({"start": in_days(30), "end": in_days(10)}),
            ),
            422,
            "invalid_period",
        ),
        (
            "past period",
            with(
                &["requested_period"],
                json!({"start": in_days(-30), "end": in_days(-10)}),
            ),
            422,
            "period_in_past",
        ),
        (
            "too long",
            with(
                &["requested_period"],
                json!({"start": in_days(0), "end": in_days(3700)}),
            ),
            422,
            "duration_exceeds_maximum",
        ),
        (
            "zero epsilon",
            with(&["privacy_budget", "epsilon"], json!(0.0)),
            422,
            "invalid_epsilon",
        ),
        (
            "negative epsilon",
            with(&["privacy_budget", "epsilon"], json!(-1.0)),
            422,
            "invalid_epsilon",
        ),
        (
            "delta of one",
            with(&["privacy_budget", "delta"], json!(1.0)),
            422,
            "invalid_delta",
        ),
        (
            "bad unit",
            with(&["privacy_budget", "unit"], json!("patient")),
            422,
            "invalid_budget_unit",
        ),
        (
            "no Art. 54 declaration",
            with(&["declares_no_prohibited_use"], json!(false)),
            422,
            "prohibited_use_not_excluded",
        ),
        (
            "other organisation",
            with(&["applicant", "organisation"], json!("uni-b")),
            422,
            "organisation_mismatch",
        ),
        (
            "71(4) for a private body",
            with(
                &["optout_exception"],
                json!({"justification": "x", "national_law_basis": "y", "no_alternative_means": true}),
            ),
            422,
            "validation_failed",
        ),
    ];
    let token = app.researcher();
    for (name, body, status, code) in &cases {
        let r = app.post("/v1/applications", &token, body).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (*status, *code),
            "{name}: {}",
            r.text
        );
        assert_eq!(
            r.headers["content-type"], "application/problem+json",
            "{name}"
        );
    }
    let raw = |body: &'static str, ct: &'static str| {
        app.client
            .post(format!("{}/v1/applications", app.base))
            .bearer_auth(&token)
            .header("content-type", ct)
            .body(body)
    };
    let malformed = app.send(raw("{\"title\": ", "application/json")).await;
    assert_eq!(
        (malformed.status.as_u16(), malformed.code()),
        (400, "malformed_json")
    );
    // A key named twice, at the top or nested, is refused rather than read as its last value.
    for twice in [
        r#"{"title": "A study", "title": "Another study"}"#,
        r#"{"applicant": {"public_body": true, "public_body": false}}"#,
    ] {
        let r = app.send(raw(twice, "application/json")).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (422, "duplicate_key"),
            "{}",
            r.text
        );
        assert!(r.text.contains("duplicate key"), "{}", r.text);
    }
    let wrong_type = app.send(raw("{}", "text/plain")).await;
    assert_eq!(
        (wrong_type.status.as_u16(), wrong_type.code()),
        (415, "unsupported_media_type")
    );
    let huge = format!("{{\"title\": \"{}\"}}", "x".repeat(100 * 1024));
    let oversize = app
        .send(
            app.client
                .post(format!("{}/v1/applications", app.base))
                .bearer_auth(&token)
                .header("content-type", "application/json")
                .body(huge),
        )
        .await;
    assert_eq!(
        (oversize.status.as_u16(), oversize.code()),
        (413, "payload_too_large")
    );

    // The multi-error case names every field.
    let many = app.post("/v1/applications", &token, &with(&["optout_exception"],
        json!({"justification": "", "national_law_basis": "y", "no_alternative_means": false}))).await;
    let fields: Vec<&str> = many.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"optout_exception_requires_public_body")
            && fields.contains(&"optout_exception_alternative_exists")
            && fields.contains(&"required"),
        "{fields:?}"
    );

    // Nothing was stored...
    let listed = app.get("/v1/applications", &app.officer()).await;
    assert_eq!(listed.body.as_array().unwrap().len(), 0);
    // ...and every refusal is on the record, attributed to the caller.
    let refused = app.audit("outcome=denied&actor=alice").await;
    assert_eq!(refused.len(), cases.len() + 6, "{refused:#?}");
    assert!(refused
        .iter()
        .all(|e| e["http_status"].as_u64().unwrap() >= 400));
}
both_backends!(bad_applications_are_refused_precisely_and_nothing_is_stored);

async fn bad_permit_requests_are_refused_precisely(app: TestApp) {
    let permit = app.permit().await;
    let pid = permit["id"].as_str().unwrap();
    let officer = app.officer();
    let cases: Vec<(String, Value, u16, &str)> = vec![
        (
            format!("/v1/permits/{pid}/suspend"),
            json!({"reason": "  "}),
            422,
            "reason_required",
        ),
        (
            format!("/v1/permits/{pid}/suspend"),
            json!({"reason": "x", "extra": 1}),
            422,
            "invalid_body",
        ),
        (
            format!("/v1/permits/{pid}/check"),
            json!({"purpose": "advertising_marketing"}),
            422,
            "prohibited_use",
        ),
        (
            format!("/v1/permits/{pid}/check"),
            json!({"purpose": "scientific_research", "epsilon": 0}),
            422,
            "invalid_epsilon",
        ),
        (
            "/v1/permits/not-a-uuid/check".into(),
            json!({"purpose": "scientific_research"}),
            404,
            "invalid_path",
        ),
        (
            format!("/v1/permits/{}/check", uuid::Uuid::new_v4()),
            json!({"purpose": "scientific_research"}),
            404,
            "not_found",
        ),
    ];
    for (path, body, status, code) in &cases {
        let r = app.post(path, &officer, body).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (*status, *code),
            "{path}: {}",
            r.text
        );
    }
    let etag = permit["etag"].as_str().unwrap();
    let amend_path = format!("/v1/permits/{pid}/amend");
    let amend = |body: Value| {
        let (app, path, officer) = (&app, amend_path.clone(), officer.clone());
        async move { app.post_if_match(&path, &officer, etag, &body).await }
    };
    let r = amend(json!({"epsilon": -2.0, "reason": "x"})).await;
    assert_eq!((r.status.as_u16(), r.code()), (422, "invalid_epsilon"));
    let r = amend(json!({"purposes": ["policy_regulatory"], "reason": "x"})).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "purpose_reserved_for_public_bodies")
    );
    let r = amend(json!({"reason": "nothing"})).await;
    assert_eq!((r.status.as_u16(), r.code()), (422, "empty_amendment"));
    let r = app
        .post_if_match(
            &format!("/v1/permits/{pid}/extend"),
            &officer,
            etag,
            &json!({"expires_at": in_days(100), "reason": "earlier than now"}),
        )
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (422, "invalid_extension"));
    let r = app
        .post_if_match(
            &format!("/v1/permits/{pid}/extend"),
            &officer,
            etag,
            &json!({"expires_at": in_days(365 * 12), "reason": "too long"}),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "duration_exceeds_maximum")
    );
    let r = app.get("/v1/permits?limit=0", &officer).await;
    assert_eq!((r.status.as_u16(), r.code()), (400, "invalid_query"));
    let r = app.get("/v1/permits?colour=blue", &officer).await;
    assert_eq!((r.status.as_u16(), r.code()), (400, "invalid_query"));

    // The permit is untouched.
    let read = app.get(&format!("/v1/permits/{pid}"), &officer).await;
    assert_eq!(read.body["row_version"], serde_json::Value::Null);
    assert_eq!(read.body["etag"], permit["etag"]);
    assert_eq!(read.body["terms_version"], 1);
}
both_backends!(bad_permit_requests_are_refused_precisely);
