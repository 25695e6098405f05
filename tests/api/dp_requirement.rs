//! Differential privacy as a permit term: the HDAB's decision sets which privacy plans the
//! permit's studies may use (`dp_requirement`), amendments change it, and a study whose plan
//! the permit does not allow is refused with the reason, stored nowhere, audited.

use serde_json::{json, Value};

use crate::both_backends;
use crate::helpers::*;

const TWO: [&str; 2] = ["cleveland", "hungarian"];

fn client_dp() -> Value {
    json!({"level": "client", "clip_norm": 1.0, "noise_multiplier": 2.0})
}

fn record_dp() -> Value {
    json!({"level": "record", "clip_norm": 1.0, "noise_multiplier": 1.0, "sampling_rate": 0.1})
}

fn no_dp() -> Value {
    json!({"level": "none"})
}

fn study_with(permit: &str, dp: Value) -> Value {
    let mut body = study_body(permit, &TWO);
    body["dp"] = dp;
    body
}

/// Issues a permit for the two hospitals with the decision's `dp_requirement` (none: the
/// default); returns (permit id, the permit as issued).
async fn permit_requiring(app: &TestApp, requirement: Option<&str>) -> (String, Value) {
    let mut decision = json!({"decision": "approve"});
    if let Some(r) = requirement {
        decision["dp_requirement"] = json!(r);
    }
    let (_, permit) = app
        .permit_with(&federation_application(&TWO, 100.0, "record"), &decision)
        .await;
    (permit["id"].as_str().unwrap().to_owned(), permit)
}

async fn studies_stored(app: &TestApp) -> usize {
    let r = app.get("/v1/studies", &app.researcher()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body.as_array().unwrap().len()
}

async fn refusals_audited(app: &TestApp) -> Vec<Value> {
    app.audit("action=study.create&outcome=denied").await
}

/// Expects `body` refused because the permit does not allow its DP level; checks the reason,
/// that nothing was stored and that the refusal is audited once.
async fn refused_dp(app: &TestApp, body: &Value, level: &str, requirement: &str, allowed: &[&str]) {
    let stored = studies_stored(app).await;
    let before = refusals_audited(app).await.len();
    let r = app.post("/v1/studies", &app.researcher(), body).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "study_not_permitted"),
        "{}",
        r.text
    );
    let reasons = r.body["reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 1, "{}", r.text);
    assert_eq!(
        reasons[0],
        json!({"code": "dp_level_not_permitted", "level": level,
        "dp_requirement": requirement, "permitted_levels": allowed,
        "message": format!(
            "the permit's privacy requirement `{requirement}` does not allow DP level \
             `{level}`; it allows {}",
            allowed.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ")
        )}),
        "{}",
        r.text
    );
    assert_eq!(
        studies_stored(app).await,
        stored,
        "a refused study was stored"
    );
    let trail = refusals_audited(app).await;
    assert_eq!(trail.len(), before + 1, "the refusal is audited once");
    assert_eq!(
        trail.last().unwrap()["detail"]["code"],
        "study_not_permitted"
    );
}

async fn epsilon_planned(app: &TestApp, id: &str) -> f64 {
    let r = app
        .get(&format!("/v1/studies/{id}"), &app.researcher())
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["epsilon_planned"].as_f64().unwrap()
}

async fn dp_requirement_is_a_permit_term(app: TestApp) {
    // The default decision keeps formal DP mandatory, at either level.
    let (default, issued) = permit_requiring(&app, None).await;
    assert_eq!(issued["terms"]["dp_requirement"], "client_or_record");
    let (client, issued) = permit_requiring(&app, Some("client")).await;
    assert_eq!(issued["terms"]["dp_requirement"], "client");
    let (record, _) = permit_requiring(&app, Some("record")).await;
    let (open, issued) = permit_requiring(&app, Some("none_allowed")).await;
    assert_eq!(issued["terms"]["dp_requirement"], "none_allowed");
    // the issuance entry records the requirement the decision set
    for (permit, requirement) in [
        (&default, "client_or_record"),
        (&client, "client"),
        (&record, "record"),
        (&open, "none_allowed"),
    ] {
        let issued = app
            .audit(&format!(
                "action=application.decide&resource_type=permit&resource_id={permit}"
            ))
            .await;
        assert_eq!(issued.len(), 1, "{issued:?}");
        assert_eq!(issued[0]["detail"]["event"], "permit.issued");
        assert_eq!(issued[0]["detail"]["dp_requirement"], requirement);
    }

    refused_dp(
        &app,
        &study_with(&default, no_dp()),
        "none",
        "client_or_record",
        &["client", "record"],
    )
    .await;
    refused_dp(
        &app,
        &study_with(&client, record_dp()),
        "record",
        "client",
        &["client"],
    )
    .await;
    refused_dp(
        &app,
        &study_with(&client, no_dp()),
        "none",
        "client",
        &["client"],
    )
    .await;
    refused_dp(
        &app,
        &study_with(&record, client_dp()),
        "client",
        "record",
        &["record"],
    )
    .await;
    refused_dp(
        &app,
        &study_with(&record, no_dp()),
        "none",
        "record",
        &["record"],
    )
    .await;

    // A study without formal DP takes no DP parameter.
    let before = refusals_audited(&app).await.len();
    let r = app
        .post(
            "/v1/studies",
            &app.researcher(),
            &study_with(
                &open,
                json!({"level": "none", "clip_norm": 1.0, "noise_multiplier": 2.0}),
            ),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "validation_failed"),
        "{}",
        r.text
    );
    let fields: Vec<_> = r.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["field"].as_str().unwrap(), e["code"].as_str().unwrap()))
        .collect();
    assert_eq!(
        fields,
        [
            ("dp.clip_norm", "not_applicable"),
            ("dp.noise_multiplier", "not_applicable")
        ],
        "{}",
        r.text
    );
    assert_eq!(refusals_audited(&app).await.len(), before + 1);
    // Formal DP still needs its clipping bound.
    let r = app
        .post(
            "/v1/studies",
            &app.researcher(),
            &study_with(&open, json!({"level": "client", "noise_multiplier": 2.0})),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "clip_norm_required"),
        "{}",
        r.text
    );
    // An unknown requirement is refused at the decision.
    let created = app
        .apply(&federation_application(&TWO, 10.0, "record"))
        .await;
    let app_id = created.body["id"].as_str().unwrap();
    let r = app
        .post(
            &format!("/v1/applications/{app_id}/decision"),
            &app.officer(),
            &json!({"decision": "approve", "dp_requirement": "sometimes"}),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "invalid_body"),
        "{}",
        r.text
    );
    assert_eq!(studies_stored(&app).await, 0);

    // Each permit accepts the plans it allows.
    let accepted = [
        (&default, client_dp()),
        (&default, record_dp()),
        (&client, client_dp()),
        (&record, record_dp()),
        (&open, client_dp()),
        (&open, record_dp()),
    ];
    for (permit, dp) in accepted {
        let id = app.submit_study(&study_with(permit, dp.clone())).await;
        assert!(epsilon_planned(&app, &id).await > 0.0, "{dp}");
    }
    // Without formal DP the plan spends nothing, and methods with no DP support are offered.
    for strategy in [
        json!({"name": "fedavg"}),
        json!({"name": "qfedavg", "q": 1.0}),
    ] {
        let mut body = study_with(&open, no_dp());
        body["strategy"] = strategy.clone();
        let id = app.submit_study(&body).await;
        let study = app
            .get(&format!("/v1/studies/{id}"), &app.researcher())
            .await;
        assert_eq!(study.body["spec"]["dp"]["level"], "none", "{}", study.text);
        assert_eq!(study.body["epsilon_planned"], 0.0, "{}", study.text);
    }
    // q-FedAvg supports no DP: under formal DP it is still refused for what it cannot honour.
    let mut body = study_with(&open, client_dp());
    body["strategy"] = json!({"name": "qfedavg", "q": 1.0});
    let r = app.post("/v1/studies", &app.researcher(), &body).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "strategy_refuses_client_dp"),
        "{}",
        r.text
    );
}
both_backends!(dp_requirement_is_a_permit_term);

async fn amendment_changes_the_dp_requirement(app: TestApp) {
    let (pid, _) = permit_requiring(&app, None).await;
    refused_dp(
        &app,
        &study_with(&pid, no_dp()),
        "none",
        "client_or_record",
        &["client", "record"],
    )
    .await;

    let path = format!("/v1/permits/{pid}/amend");
    let bad = app
        .post_if_match(
            &path,
            &app.officer(),
            &app.permit_etag(&pid).await,
            &json!({"dp_requirement": "sometimes", "reason": "relax DP"}),
        )
        .await;
    assert_eq!(
        (bad.status.as_u16(), bad.code()),
        (422, "unknown_dp_requirement"),
        "{}",
        bad.text
    );

    let amended = app
        .post_if_match(
            &path,
            &app.officer(),
            &app.permit_etag(&pid).await,
            &json!({"dp_requirement": "none_allowed", "reason": "output-checked models only"}),
        )
        .await;
    assert_eq!(amended.status, 200, "{}", amended.text);
    assert_eq!(amended.body["terms_version"], 2);
    assert_eq!(amended.body["terms"]["dp_requirement"], "none_allowed");
    let id = app.submit_study(&study_with(&pid, no_dp())).await;
    assert_eq!(epsilon_planned(&app, &id).await, 0.0);

    // Tightened to client-level DP: new record-level or no-DP plans are refused.
    let amended = app
        .post_if_match(
            &path,
            &app.officer(),
            &app.permit_etag(&pid).await,
            &json!({"dp_requirement": "client", "reason": "holder-level protection"}),
        )
        .await;
    assert_eq!(amended.status, 200, "{}", amended.text);
    assert_eq!(amended.body["terms"]["dp_requirement"], "client");
    for (dp, level) in [(record_dp(), "record"), (no_dp(), "none")] {
        let stored = studies_stored(&app).await;
        let r = app
            .post("/v1/studies", &app.researcher(), &study_with(&pid, dp))
            .await;
        assert_eq!(r.status, 422, "{}", r.text);
        assert_eq!(
            r.body["reasons"][0],
            json!({"code": "dp_level_not_permitted", "level": level,
                   "dp_requirement": "client", "permitted_levels": ["client"],
                   "message": format!("the permit's privacy requirement `client` does not \
                                       allow DP level `{level}`; it allows `client`")})
        );
        assert_eq!(studies_stored(&app).await, stored);
    }
    app.submit_study(&study_with(&pid, client_dp())).await;
}
both_backends!(amendment_changes_the_dp_requirement);
