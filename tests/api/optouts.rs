//! Art. 71 semantics: opt-outs bind permits issued after them, withdrawals do not reach back,
//! amendments are judged at their own time, the 71(4) exception lifts exclusion, and the
//! registry is versioned and append-only.

use serde_json::{json, Value};

use crate::both_backends;
use crate::helpers::*;

fn subject(n: u32) -> String {
    format!("psn-cohort-subject-{n:04}")
}

async fn register(app: &TestApp, n: u32) -> Value {
    let r = app
        .post(
            "/v1/opt-outs",
            &app.registrar(),
            &json!({"subject_pseudonym": subject(n), "member_state": "DE"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body
}

async fn withdraw(app: &TestApp, record: &Value) -> Value {
    let id = record["record_id"].as_str().unwrap();
    let r = app
        .post(
            &format!("/v1/opt-outs/{id}/withdraw"),
            &app.registrar(),
            &json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

async fn filter(app: &TestApp, body: Value) -> Value {
    let r = app
        .post("/v1/opt-outs/filter", &app.holder("hosp-1"), &body)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

fn excluded(v: &Value) -> Vec<String> {
    v["exclude"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

async fn opt_outs_bind_only_permits_issued_after_them(app: TestApp) {
    let s1 = register(&app, 1).await; // in force at issue
    let s3 = register(&app, 3).await;
    withdraw(&app, &s3).await; // withdrawn before issue
    let s4 = register(&app, 4).await; // withdrawn after issue
    let before_s1_version = s1["registry_version"].as_i64().unwrap() - 1;

    let permit = app.permit().await;
    let pid = permit["id"].as_str().unwrap().to_owned();
    register(&app, 2).await; // after issue
    let withdrawn = withdraw(&app, &s4).await;
    assert_eq!(withdrawn["status"], "withdrawn");
    assert_eq!(
        withdrawn["events"].as_array().unwrap().len(),
        2,
        "history is kept"
    );

    let all: Vec<String> = (1..=5).map(subject).collect();
    let at_issue = filter(&app, json!({"permit_id": pid, "subjects": all})).await;
    assert_eq!(excluded(&at_issue), [subject(1), subject(4)]);
    assert_eq!(at_issue["checked"], 5);
    assert_eq!(at_issue["exception_applied"], false);
    let strict = filter(
        &app,
        json!({"permit_id": pid, "subjects": all, "policy": "strict"}),
    )
    .await;
    assert_eq!(excluded(&strict), [subject(1), subject(2), subject(4)]);

    // Pinning an earlier registry version reproduces an earlier answer.
    let pinned = filter(
        &app,
        json!({"permit_id": pid, "subjects": all, "registry_version": before_s1_version}),
    )
    .await;
    assert!(excluded(&pinned).is_empty());
    let future = app
        .post(
            "/v1/opt-outs/filter",
            &app.holder("hosp-1"),
            &json!({"permit_id": pid, "subjects": all, "registry_version": 10_000}),
        )
        .await;
    assert_eq!(
        (future.status.as_u16(), future.code()),
        (422, "unknown_registry_version")
    );

    // Data added by an amendment is judged at the amendment: subject 2 opted out before it.
    let etag = app.permit_etag(&pid).await;
    let amended = app.post_if_match(&format!("/v1/permits/{pid}/amend"), &app.officer(), &etag,
        &json!({"categories": ["ehr_data", "health_determinants", "biobank_data"], "reason": "biobank linkage"})).await;
    assert_eq!(amended.status, 200, "{}", amended.text);
    let old_data = filter(
        &app,
        json!({"permit_id": pid, "subjects": all, "categories": ["ehr_data"]}),
    )
    .await;
    assert_eq!(excluded(&old_data), [subject(1), subject(4)]);
    let new_data = filter(
        &app,
        json!({"permit_id": pid, "subjects": all, "categories": ["biobank_data"]}),
    )
    .await;
    assert_eq!(excluded(&new_data), [subject(1), subject(2)]);

    // The audit trail records counts, never pseudonyms.
    let trail = app
        .audit(&format!("action=optout.filter&permit_id={pid}"))
        .await;
    assert!(trail.len() >= 5);
    let text = serde_json::to_string(&trail).unwrap();
    assert!(
        !text.contains(&subject(1)),
        "pseudonyms must not reach the audit trail"
    );
    assert_eq!(trail[0]["detail"]["excluded"], 2);
    let register_audit = app.audit("action=optout.register").await;
    assert!(!serde_json::to_string(&register_audit)
        .unwrap()
        .contains("psn-cohort"));

    // Filtering for a revoked permit is refused.
    app.post(
        &format!("/v1/permits/{pid}/revoke"),
        &app.officer(),
        &json!({"reason": "breach"}),
    )
    .await;
    let r = app
        .post(
            "/v1/opt-outs/filter",
            &app.holder("hosp-1"),
            &json!({"permit_id": pid, "subjects": all}),
        )
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (409, "permit_not_active"));
}
both_backends!(opt_outs_bind_only_permits_issued_after_them);

async fn the_article_71_4_exception_lifts_exclusion(app: TestApp) {
    register(&app, 7).await;
    let mut body = application();
    body["applicant"]["public_body"] = json!(true);
    body["purposes"] = json!(["public_occupational_health", "scientific_research"]);
    body["research_flags"] = json!(["important_public_interest"]);
    body["optout_exception"] = json!({"justification": "Pandemic surveillance needs complete coverage.",
        "national_law_basis": "IfSG 13(2)", "no_alternative_means": true});
    let (_, without) = app
        .permit_with(&body, &json!({"decision": "approve"}))
        .await;
    let (_, with) = app
        .permit_with(
            &body,
            &json!({"decision": "approve", "grant_optout_exception": true}),
        )
        .await;
    assert!(without["terms"]["optout_exception"].is_null());
    assert_eq!(
        with["terms"]["optout_exception"]["national_law_basis"],
        "IfSG 13(2)"
    );
    let subjects = vec![subject(7)];
    let a = filter(
        &app,
        json!({"permit_id": without["id"], "subjects": subjects}),
    )
    .await;
    assert_eq!(excluded(&a), [subject(7)]);
    let b = filter(&app, json!({"permit_id": with["id"], "subjects": subjects})).await;
    assert!(excluded(&b).is_empty());
    assert_eq!(b["exception_applied"], true);

    // Not requested, not grantable.
    let id = app.apply(&application()).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = app
        .post(
            &format!("/v1/applications/{id}/decision"),
            &app.officer(),
            &json!({"decision": "approve", "grant_optout_exception": true}),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "optout_exception_not_requested")
    );
}
both_backends!(the_article_71_4_exception_lifts_exclusion);

async fn bulk_imports_are_all_or_nothing_and_idempotent(app: TestApp) {
    let import = |ct: &'static str, body: String| {
        app.send(
            app.client
                .post(format!("{}/v1/opt-outs/import", app.base))
                .bearer_auth(app.registrar())
                .header("content-type", ct)
                .body(body),
        )
    };
    let ndjson = format!(
        "{}\n{}\n\n{}\n",
        json!({"subject_pseudonym": subject(10), "id": "src-10"}),
        json!({"subject_pseudonym": subject(11), "member_state": "HU", "id": "src-11"}),
        json!({"subject_pseudonym": subject(11), "withdrawn": true})
    );
    let r = import("application/x-ndjson", ndjson.clone()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (r.body["registered"].as_u64(), r.body["withdrawn"].as_u64()),
        (Some(2), Some(1))
    );
    let again = import("application/x-ndjson", ndjson).await;
    assert_eq!(
        (
            again.body["registered"].as_u64(),
            again.body["unchanged"].as_u64()
        ),
        (Some(0), Some(3))
    );
    let version = again.body["registry_version"].as_i64().unwrap();

    // One bad line refuses the whole import.
    let bad = format!(
        "{}\n{}\n",
        json!({"subject_pseudonym": subject(12)}),
        json!({"subject_pseudonym": "19850101-1234-5678"})
    );
    let r = import("application/x-ndjson", bad).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "identifier_not_pseudonymous")
    );
    assert_eq!(r.body["errors"][0]["field"], "line 2: subject_pseudonym");
    let r = import("text/csv", "a,b".into()).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (415, "unsupported_media_type")
    );

    // FHIR R4 Consent: deny provision = opt-out, inactive = withdrawn.
    let consent = |id: &str, n: u32, status: &str| {
        json!({"fullUrl": format!("urn:uuid:{id}"), "resource": {
        "resourceType": "Consent", "id": id, "status": status,
        "scope": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/consentscope", "code": "research"}]},
        "category": [{"coding": [{"system": "http://loinc.org", "code": "59284-0"}]}],
        "patient": {"identifier": {"system": "urn:pseudonym", "value": subject(n)}},
        "policyRule": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/v3-ActCode", "code": "OPTOUT"}]},
        "provision": {"type": "deny", "period": {"start": "2026-01-01T00:00:00Z"}}}})
    };
    let bundle = json!({"resourceType": "Bundle", "type": "collection",
        "entry": [consent("c20", 20, "active"), consent("c21", 21, "active")]});
    let r = import("application/fhir+json", bundle.to_string()).await;
    assert_eq!(r.body["registered"], 2, "{}", r.text);
    assert!(r.body["registry_version"].as_i64().unwrap() > version);
    let withdrawal = json!({"resourceType": "Bundle", "type": "collection", "entry": [consent("c21", 21, "inactive")]});
    let r = import("application/fhir+json", withdrawal.to_string()).await;
    assert_eq!(r.body["withdrawn"], 1, "{}", r.text);
    let permit_consent = json!({"resourceType": "Bundle", "type": "collection", "entry": [{"resource": {
        "resourceType": "Consent", "status": "active", "patient": {"reference": format!("Patient/{}", subject(30))},
        "provision": {"type": "permit"}}}]});
    let r = import("application/fhir+json", permit_consent.to_string()).await;
    assert_eq!((r.status.as_u16(), r.code()), (422, "not_an_opt_out"));

    // The effect is visible through a permit issued now.
    let pid = app.permit().await["id"].as_str().unwrap().to_owned();
    let subjects: Vec<String> = [10, 11, 12, 20, 21].into_iter().map(subject).collect();
    let f = filter(&app, json!({"permit_id": pid, "subjects": subjects})).await;
    assert_eq!(excluded(&f), [subject(10), subject(20)]);
}
both_backends!(bulk_imports_are_all_or_nothing_and_idempotent);

async fn the_registry_refuses_rewrites_of_history(app: TestApp) {
    register(&app, 40).await;
    let sql = "update optout_event set kind = 'withdrawn'";
    let result = match app.backend {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&app.database_url).await.unwrap();
            sqlx::query(sql).execute(&pool).await.map(|_| ())
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
            sqlx::query(sql).execute(&pool).await.map(|_| ())
        }
    };
    assert!(result.unwrap_err().to_string().contains("append-only"));
}
both_backends!(the_registry_refuses_rewrites_of_history);

/// The holder's side of `POST /v1/opt-outs/match`, written here from RFC 9497 and the answer's
/// documented fields (not through the node agent's client): which of `subjects` the answer
/// excludes, and the answer itself.
async fn match_opt_outs(app: &TestApp, subjects: &[String], body: Value) -> (Vec<String>, Value) {
    use base64::{engine::general_purpose::STANDARD as B64, Engine as _};
    use ehds_core::{domain::optout::salted_match, oprf::Blinded};
    let blinds: Vec<Blinded> = subjects
        .iter()
        .map(|s| Blinded::new(s.as_bytes()).unwrap())
        .collect();
    let mut body = body;
    body["blinded"] = json!(blinds
        .iter()
        .map(|b| B64.encode(b.element))
        .collect::<Vec<_>>());
    let r = app
        .post("/v1/opt-outs/match", &app.holder("hosp-1"), &body)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let salt = B64.decode(r.body["salt"].as_str().unwrap()).unwrap();
    let sent: Vec<&str> = r.body["opted_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let evaluated = r.body["evaluated"].as_array().unwrap();
    assert_eq!(evaluated.len(), subjects.len());
    let mut out = Vec::new();
    for ((subject, blind), z) in subjects.iter().zip(&blinds).zip(evaluated) {
        let z = B64.decode(z.as_str().unwrap()).unwrap();
        let value = blind.finalize(subject.as_bytes(), &z).unwrap();
        if sent.contains(&salted_match(&salt, &value).as_str()) {
            out.push(subject.clone());
        }
    }
    (out, r.body)
}

async fn holders_match_opt_outs_without_sending_pseudonyms(app: TestApp) {
    let s1 = register(&app, 1).await;
    let s3 = register(&app, 3).await;
    withdraw(&app, &s3).await;
    let s4 = register(&app, 4).await;
    let permit = app.permit().await;
    let pid = permit["id"].as_str().unwrap().to_owned();
    register(&app, 2).await; // after issue
    withdraw(&app, &s4).await; // after issue: does not re-include
    let all: Vec<String> = (1..=5).map(subject).collect();

    // The same exclusions as the disclosing filter, for each policy and pinned version.
    for extra in [
        json!({}),
        json!({"policy": "strict"}),
        json!({"registry_version": s1["registry_version"].as_i64().unwrap() - 1}),
    ] {
        let mut body = json!({"permit_id": pid});
        let mut filter_body = json!({"permit_id": pid, "subjects": all});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
            filter_body[k] = v.clone();
        }
        let (matched, answer) = match_opt_outs(&app, &all, body).await;
        assert_eq!(
            matched,
            excluded(&filter(&app, filter_body).await),
            "{extra}"
        );
        assert_eq!(answer["unmatchable"], 0);
        // padded: the answer does not tell how many opted out
        assert_eq!(answer["opted_out"].as_array().unwrap().len(), 64);
    }
    let (matched, first) = match_opt_outs(&app, &all, json!({"permit_id": pid})).await;
    assert_eq!(matched, [subject(1), subject(4)]);
    // Two answers share no entry: a fresh salt each time, so they cannot be linked.
    let (_, second) = match_opt_outs(&app, &all, json!({"permit_id": pid})).await;
    let entries = |v: &Value| -> Vec<String> {
        v["opted_out"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().to_owned())
            .collect()
    };
    let second_entries = entries(&second);
    assert_eq!(first["key_id"], second["key_id"]);
    assert_eq!(first["key_id"].as_str().unwrap().len(), 64);
    assert!(entries(&first).iter().all(|e| !second_entries.contains(e)));

    // The audit entry counts what was evaluated and in scope, never whom.
    let trail = app
        .audit(&format!("action=optout.filter&permit_id={pid}"))
        .await;
    let last = &trail.last().unwrap()["detail"];
    assert_eq!(last["evaluated"], 5);
    assert_eq!(last["in_scope"], 2);
    assert_eq!(last["sent"], 64);
    assert_eq!(last["unmatchable"], 0);
    assert!(!serde_json::to_string(&trail)
        .unwrap()
        .contains("psn-cohort"));

    // Malformed elements are refused field by field, and the refusal is audited.
    let r = app
        .post(
            "/v1/opt-outs/match",
            &app.holder("hosp-1"),
            &json!({"permit_id": pid, "blinded": ["not base64!", "AAAA", base64_zero_element()]}),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let errors = r.body["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 3, "{}", r.text);
    assert!(errors.iter().all(|e| e["code"] == "invalid_element"));
    assert_eq!(errors[2]["field"], "blinded[2]");
    let refused = app.audit("action=optout.filter").await;
    let refused = refused.last().unwrap();
    assert_eq!(refused["outcome"], "denied", "{refused}");
    assert_eq!(refused["http_status"], 422);

    // Under the Art. 71(4) exception nobody matches.
    let mut body = application();
    body["applicant"]["public_body"] = json!(true);
    body["purposes"] = json!(["public_occupational_health", "scientific_research"]);
    body["research_flags"] = json!(["important_public_interest"]);
    body["optout_exception"] = json!({"justification": "Pandemic surveillance needs complete coverage.",
        "national_law_basis": "IfSG 13(2)", "no_alternative_means": true});
    let (_, exempt) = app
        .permit_with(
            &body,
            &json!({"decision": "approve", "grant_optout_exception": true}),
        )
        .await;
    let (matched, answer) = match_opt_outs(&app, &all, json!({"permit_id": exempt["id"]})).await;
    assert!(matched.is_empty());
    assert_eq!(answer["exception_applied"], true);
}
both_backends!(holders_match_opt_outs_without_sending_pseudonyms);

/// The identity element, which RFC 9497 refuses as input.
fn base64_zero_element() -> String {
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into()
}

/// Deletes every match value, as a registry written before they were kept holds none.
async fn forget_match_values(app: &TestApp) {
    if app.database_url.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
        sqlx::query("delete from optout_match")
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    } else {
        let pool = sqlx::SqlitePool::connect(&app.database_url).await.unwrap();
        sqlx::query("delete from optout_match")
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    }
}

async fn opt_outs_without_match_values_are_reported_until_imported_again(app: TestApp) {
    let ndjson = format!(
        "{}\n{}\n",
        json!({"subject_pseudonym": subject(21), "id": "src-21"}),
        json!({"subject_pseudonym": subject(22), "id": "src-22"}),
    );
    let import = || {
        app.send(
            app.client
                .post(format!("{}/v1/opt-outs/import", app.base))
                .bearer_auth(app.registrar())
                .header("content-type", "application/x-ndjson")
                .body(ndjson.clone()),
        )
    };
    assert_eq!(import().await.status, 200);
    let permit = app.permit().await;
    let all: Vec<String> = (20..=23).map(subject).collect();
    let body = json!({"permit_id": permit["id"]});

    // As a registry written before match values were kept.
    forget_match_values(&app).await;
    let (matched, answer) = match_opt_outs(&app, &all, body.clone()).await;
    assert!(matched.is_empty());
    assert_eq!(answer["unmatchable"], 2, "said, never silently missed");

    // Importing the registry again from its source (nothing new to record) restores them.
    let again = import().await;
    assert_eq!(again.body["unchanged"], 2, "{}", again.text);
    let (matched, answer) = match_opt_outs(&app, &all, body).await;
    assert_eq!(matched, [subject(21), subject(22)]);
    assert_eq!(answer["unmatchable"], 0);
}
both_backends!(opt_outs_without_match_values_are_reported_until_imported_again);
