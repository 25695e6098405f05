use serde_json::json;

use crate::both_backends;
use crate::helpers::*;

async fn application_to_permit_to_revocation(app: TestApp) {
    // Arrange: a researcher applies.
    let created = app.apply(&application()).await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["status"], "submitted");
    let app_id = created.body["id"].as_str().unwrap().to_owned();
    assert_eq!(
        created.headers["location"],
        format!("/v1/applications/{app_id}").as_str()
    );

    // A rejection needs reasons; approval issues a permit.
    let no_reason = app
        .post(
            &format!("/v1/applications/{app_id}/decision"),
            &app.officer(),
            &json!({"decision": "reject"}),
        )
        .await;
    assert_eq!(
        (no_reason.status.as_u16(), no_reason.code()),
        (422, "reason_required")
    );
    let decided = app
        .post(
            &format!("/v1/applications/{app_id}/decision"),
            &app.officer(),
            &json!({"decision": "approve", "conditions": "results reviewed before publication"}),
        )
        .await;
    assert_eq!(decided.status, 200, "{}", decided.text);
    let permit = &decided.body["permit"];
    let pid = permit["id"].as_str().unwrap().to_owned();
    assert_eq!(permit["status"], "active");
    assert_eq!(permit["privacy_budget"]["epsilon_remaining"], 8.0);
    let again = app
        .post(
            &format!("/v1/applications/{app_id}/decision"),
            &app.officer(),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(
        (
            again.status.as_u16(),
            again.code(),
            again.body["current_state"].as_str()
        ),
        (409, "invalid_transition", Some("approved"))
    );

    // The researcher sees the permit; the check allows permitted processing.
    let read = app
        .get(&format!("/v1/permits/{pid}"), &app.researcher())
        .await;
    assert_eq!(read.status, 200);
    let etag = read.headers["etag"].to_str().unwrap().to_owned();
    let check_body = json!({"purpose": "scientific_research", "categories": ["ehr_data"], "data_holders": ["hosp-1"], "epsilon": 1.0});
    let ok = app
        .post(
            &format!("/v1/permits/{pid}/check"),
            &app.holder("hosp-1"),
            &check_body,
        )
        .await;
    assert_eq!(ok.body["allowed"], true, "{}", ok.text);

    // Every failed condition is reported.
    let bad = app.post(&format!("/v1/permits/{pid}/check"), &app.officer(),
        &json!({"purpose": "education_teaching", "categories": ["genetic_genomic", "ehr_data"], "data_holders": ["hosp-9"], "epsilon": 9.0})).await;
    assert_eq!(bad.body["allowed"], false);
    let codes: Vec<&str> = bad.body["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "purpose_not_permitted",
            "category_not_permitted",
            "data_holder_not_permitted",
            "budget_exceeded"
        ]
    );

    // Suspension stops processing; reinstatement restores it.
    let suspended = app
        .post(
            &format!("/v1/permits/{pid}/suspend"),
            &app.officer(),
            &json!({"reason": "Art. 63 finding"}),
        )
        .await;
    assert_eq!(suspended.body["status"], "suspended", "{}", suspended.text);
    let denied = app
        .post(
            &format!("/v1/permits/{pid}/check"),
            &app.holder("hosp-1"),
            &check_body,
        )
        .await;
    assert_eq!(denied.body["reasons"][0]["code"], "permit_not_active");
    let twice = app
        .post(
            &format!("/v1/permits/{pid}/suspend"),
            &app.officer(),
            &json!({"reason": "again"}),
        )
        .await;
    assert_eq!(
        (twice.status.as_u16(), twice.body["current_state"].as_str()),
        (409, Some("suspended"))
    );
    let reinstated = app
        .post(
            &format!("/v1/permits/{pid}/reinstate"),
            &app.officer(),
            &json!({}),
        )
        .await;
    assert_eq!(reinstated.body["status"], "active");

    // Amendments need a fresh ETag and keep the old terms as a version.
    let amend = json!({"categories": ["ehr_data", "health_determinants", "genetic_genomic"], "reason": "genomics substudy"});
    let missing = app
        .post(&format!("/v1/permits/{pid}/amend"), &app.officer(), &amend)
        .await;
    assert_eq!(
        (missing.status.as_u16(), missing.code()),
        (428, "precondition_required")
    );
    let stale = app
        .post_if_match(
            &format!("/v1/permits/{pid}/amend"),
            &app.officer(),
            &etag,
            &amend,
        )
        .await;
    assert_eq!((stale.status.as_u16(), stale.code()), (412, "stale_etag"));
    let current = app
        .get(&format!("/v1/permits/{pid}"), &app.officer())
        .await
        .headers["etag"]
        .to_str()
        .unwrap()
        .to_owned();
    let amended = app
        .post_if_match(
            &format!("/v1/permits/{pid}/amend"),
            &app.officer(),
            &current,
            &amend,
        )
        .await;
    assert_eq!(amended.status, 200, "{}", amended.text);
    assert_eq!(amended.body["terms_version"], 2);
    let versions = app
        .get(&format!("/v1/permits/{pid}/versions"), &app.researcher())
        .await;
    assert_eq!(versions.body.as_array().unwrap().len(), 2);
    assert_eq!(
        versions.body[0]["terms"]["categories"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(versions.body[1]["reason"], "genomics substudy");

    // One extension, early enough, at most ten more years.
    let etag = amended.headers["etag"].to_str().unwrap().to_owned();
    let extended = app
        .post_if_match(
            &format!("/v1/permits/{pid}/extend"),
            &app.officer(),
            &etag,
            &json!({"expires_at": in_days(730), "reason": "follow-up"}),
        )
        .await;
    assert_eq!(extended.status, 200, "{}", extended.text);
    let etag = extended.headers["etag"].to_str().unwrap().to_owned();
    let second = app
        .post_if_match(
            &format!("/v1/permits/{pid}/extend"),
            &app.officer(),
            &etag,
            &json!({"expires_at": in_days(900), "reason": "more"}),
        )
        .await;
    assert_eq!(
        (second.status.as_u16(), second.code()),
        (409, "already_extended")
    );

    // Revocation is final.
    let revoked = app
        .post(
            &format!("/v1/permits/{pid}/revoke"),
            &app.officer(),
            &json!({"reason": "data exfiltration"}),
        )
        .await;
    assert_eq!(revoked.body["status"], "revoked");
    let back = app
        .post(
            &format!("/v1/permits/{pid}/reinstate"),
            &app.officer(),
            &json!({}),
        )
        .await;
    assert_eq!(
        (
            back.status.as_u16(),
            back.code(),
            back.body["current_state"].as_str()
        ),
        (409, "invalid_transition", Some("revoked"))
    );
    let after = app
        .post(
            &format!("/v1/permits/{pid}/check"),
            &app.holder("hosp-1"),
            &check_body,
        )
        .await;
    assert_eq!(after.body["allowed"], false);

    // The trail records each step against the permit.
    let trail = app.audit(&format!("permit_id={pid}&outcome=success")).await;
    let actions: Vec<&str> = trail
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    for expected in [
        "application.decide",
        "permit.suspend",
        "permit.reinstate",
        "permit.amend",
        "permit.extend",
        "permit.revoke",
    ] {
        assert!(
            actions.contains(&expected),
            "{expected} missing from {actions:?}"
        );
    }
    let refused = app.audit(&format!("permit_id={pid}&outcome=denied")).await;
    assert!(refused.iter().any(|e| e["detail"]["code"] == "stale_etag"));
    assert!(
        refused.iter().any(|e| e["action"] == "permit.check"),
        "denied checks are on the record"
    );
}
both_backends!(application_to_permit_to_revocation);

async fn applicants_withdraw_only_their_own_undecided_applications(app: TestApp) {
    let id = app.apply(&application()).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let colleague = app.token("bob", &["researcher"], Some("uni-a"));
    let by_colleague = app
        .post(
            &format!("/v1/applications/{id}/withdraw"),
            &colleague,
            &json!({}),
        )
        .await;
    assert_eq!(by_colleague.status, 403);
    let withdrawn = app
        .post(
            &format!("/v1/applications/{id}/withdraw"),
            &app.researcher(),
            &json!({}),
        )
        .await;
    assert_eq!(withdrawn.body["status"], "withdrawn", "{}", withdrawn.text);
    let decide = app
        .post(
            &format!("/v1/applications/{id}/decision"),
            &app.officer(),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(
        (
            decide.status.as_u16(),
            decide.body["current_state"].as_str()
        ),
        (409, Some("withdrawn"))
    );
}
both_backends!(applicants_withdraw_only_their_own_undecided_applications);

async fn expiry_is_derived_from_time_and_survives_a_restart(app: TestApp) {
    let mut body = application();
    body["requested_period"]["end"] =
        json!((chrono::Utc::now() + chrono::Duration::seconds(2)).to_rfc3339());
    let (_, permit) = app
        .permit_with(&body, &json!({"decision": "approve"}))
        .await;
    let pid = permit["id"].as_str().unwrap().to_owned();
    assert_eq!(permit["status"], "active");
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let read = app.get(&format!("/v1/permits/{pid}"), &app.officer()).await;
    assert_eq!(read.body["status"], "expired");
    let check = app
        .post(
            &format!("/v1/permits/{pid}/check"),
            &app.officer(),
            &json!({"purpose": "scientific_research"}),
        )
        .await;
    assert_eq!(check.body["reasons"][0]["code"], "permit_expired");
    let revoke = app
        .post(
            &format!("/v1/permits/{pid}/revoke"),
            &app.officer(),
            &json!({"reason": "late"}),
        )
        .await;
    assert_eq!(
        (
            revoke.status.as_u16(),
            revoke.body["current_state"].as_str()
        ),
        (409, Some("expired"))
    );

    // A second gateway on the same database records the expiry at start-up.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        app.data_dir.join("optout-pseudonym.key"),
        dir.path().join("optout-pseudonym.key"),
    )
    .unwrap();
    let restarted = TestApp::spawn_on(app.backend, dir, app.database_url.clone(), |_| {}).await;
    let read = restarted
        .get(&format!("/v1/permits/{pid}"), &restarted.officer())
        .await;
    assert_eq!(read.body["status"], "expired");
    assert_eq!(read.body["state"]["status"], "expired");
    let expiry = restarted
        .audit(&format!("permit_id={pid}&action=permit.expire"))
        .await;
    assert_eq!(expiry.len(), 1);
    assert_eq!(expiry[0]["actor"]["sub"], "system");
}
both_backends!(expiry_is_derived_from_time_and_survives_a_restart);
