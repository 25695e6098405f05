//! The web console: its pages per role, its actions going through the same Cedar decisions and
//! audit entries as the API, its CSRF check, and its sign-in (development picker, OpenID
//! Connect redirect with PKCE).

use reqwest::{redirect::Policy, StatusCode};
use serde_json::{json, Value};

use crate::both_backends;
use crate::helpers::*;

const CSRF: &str = "test-csrf-token-0123456789";

/// A browser-like client that never follows redirects, so each answer can be asserted.
fn browser() -> reqwest::Client {
    ehds_http::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
}

struct Page {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    text: String,
}

async fn page(app: &TestApp, path: &str, token: &str) -> Page {
    let r = browser()
        .get(format!("{}{path}", app.base))
        .header(
            "cookie",
            format!("ehds_console={token}; ehds_console_csrf={CSRF}"),
        )
        .send()
        .await
        .unwrap();
    Page {
        status: r.status(),
        headers: r.headers().clone(),
        text: r.text().await.unwrap(),
    }
}

async fn submit(app: &TestApp, path: &str, token: &str, form: &[(&str, &str)]) -> Page {
    let r = browser()
        .post(format!("{}{path}", app.base))
        .header(
            "cookie",
            format!("ehds_console={token}; ehds_console_csrf={CSRF}"),
        )
        .form(form)
        .send()
        .await
        .unwrap();
    Page {
        status: r.status(),
        headers: r.headers().clone(),
        text: r.text().await.unwrap(),
    }
}

fn location(p: &Page) -> &str {
    p.headers
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

async fn permit_status(app: &TestApp, pid: &str) -> Value {
    let r = app.get(&format!("/v1/permits/{pid}"), &app.officer()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["status"].clone()
}

async fn pages_render_for_each_role(app: TestApp) {
    let (application_id, permit) = app
        .permit_with(&application(), &json!({"decision": "approve"}))
        .await;
    let pid = permit["id"].as_str().unwrap();
    let cases = [
        (app.officer(), "/console/", "Application queue"),
        (app.officer(), "/console/applications", "Next deadline"),
        (
            app.officer(),
            &format!("/console/applications/{application_id}") as &str,
            "Federated model of heart-disease risk",
        ),
        (app.officer(), "/console/permits", pid),
        (
            app.officer(),
            &format!("/console/permits/{pid}") as &str,
            "Privacy-budget burn-down",
        ),
        (
            app.researcher(),
            "/console/applications/new",
            "Art. 54 prohibited use",
        ),
        (app.researcher(), "/console/studies/new", pid),
        (app.researcher(), "/console/studies", "Submit a study"),
        (app.auditor(), "/console/audit", "Verify the hash chain"),
        (app.auditor(), "/console/audit/records", pid),
        (
            app.auditor(),
            "/console/audit/verify",
            "The chain is intact",
        ),
    ];
    for (token, path, expected) in cases {
        let p = page(&app, path, &token).await;
        assert_eq!(p.status, 200, "{path}: {}", p.text);
        assert!(p.text.contains(expected), "{path} lacks {expected:?}");
        let csp = p.headers["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert_eq!(p.headers["cache-control"], "no-store");
    }
    // The officer's permit page offers the actions; the researcher's view of the same permit
    // does not.
    let officer_view = page(&app, &format!("/console/permits/{pid}"), &app.officer()).await;
    assert!(officer_view.text.contains("/suspend"));
    let researcher_view = page(&app, &format!("/console/permits/{pid}"), &app.researcher()).await;
    assert_eq!(researcher_view.status, 200);
    assert!(!researcher_view.text.contains("/suspend"));
    // A page the role may not read shows the API's refusal with its status.
    let refused = page(&app, "/console/applications", &app.auditor()).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert!(refused.text.contains("forbidden"), "{}", refused.text);
    // Without a session the console asks to sign in.
    let anonymous = browser()
        .get(format!("{}/console/permits", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 303);
    assert_eq!(anonymous.headers()["location"], "/console/login");
    // Assets are embedded and cacheable for a year.
    let asset = browser()
        .get(format!("{}/console/assets/htmx.min.js", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(asset.status(), 200);
    assert!(asset.headers()["cache-control"]
        .to_str()
        .unwrap()
        .contains("max-age=31536000"));
    assert!(asset.text().await.unwrap().contains("htmx"));
}
both_backends!(pages_render_for_each_role);

async fn researcher_cannot_reach_officer_actions(app: TestApp) {
    let permit = app.permit().await;
    let pid = permit["id"].as_str().unwrap();
    let etag = permit["etag"].as_str().unwrap();
    let path = format!("/console/permits/{pid}/suspend");
    let refused = submit(
        &app,
        &path,
        &app.researcher(),
        &[
            ("csrf", CSRF),
            ("etag", etag),
            ("reason", "I would like to"),
        ],
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert!(refused.text.contains("forbidden"), "{}", refused.text);
    assert_eq!(permit_status(&app, pid).await, "active");
    // Cedar's refusal is on the record exactly as the API's.
    let denied = app.audit("outcome=denied&actor=alice").await;
    assert!(
        denied
            .iter()
            .any(|e| e["action"] == "permit.suspend" && e["http_status"] == 403),
        "{denied:?}"
    );
}
both_backends!(researcher_cannot_reach_officer_actions);

async fn officer_decides_and_manages_permits(app: TestApp) {
    let created = app.apply(&application()).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.body["id"].as_str().unwrap();
    // A rejection without reasons is refused with the API's field error shown at the field.
    let no_reason = submit(
        &app,
        &format!("/console/applications/{id}/decision"),
        &app.officer(),
        &[("csrf", CSRF), ("decision", "reject")],
    )
    .await;
    assert_eq!(no_reason.status, 422, "{}", no_reason.text);
    assert!(no_reason.text.contains("role=\"alert\""));
    let decided = submit(
        &app,
        &format!("/console/applications/{id}/decision"),
        &app.officer(),
        &[
            ("csrf", CSRF),
            ("decision", "approve"),
            ("conditions", "Publish the model card"),
            ("dp_requirement", "client"),
        ],
    )
    .await;
    assert_eq!(decided.status, 303, "{}", decided.text);
    let pid = location(&decided)
        .strip_prefix("/console/permits/")
        .expect("redirected to the permit")
        .to_owned();
    let permit = app
        .get(&format!("/v1/permits/{pid}"), &app.officer())
        .await
        .body;
    assert_eq!(permit["terms"]["conditions"], "Publish the model card");

    // Suspending needs a reason: the API's field error is shown next to the field.
    let etag = permit["etag"].as_str().unwrap().to_owned();
    let missing = submit(
        &app,
        &format!("/console/permits/{pid}/suspend"),
        &app.officer(),
        &[("csrf", CSRF), ("etag", &etag)],
    )
    .await;
    assert_eq!(missing.status, 422, "{}", missing.text);
    assert!(missing.text.contains("class=\"error\""), "{}", missing.text);
    assert_eq!(permit_status(&app, &pid).await, "active");

    let suspended = submit(
        &app,
        &format!("/console/permits/{pid}/suspend"),
        &app.officer(),
        &[
            ("csrf", CSRF),
            ("etag", &etag),
            ("reason", "Art. 63 inquiry"),
        ],
    )
    .await;
    assert_eq!(suspended.status, 303, "{}", suspended.text);
    assert_eq!(permit_status(&app, &pid).await, "suspended");
    // The page's ETag is stale now: the API's precondition refuses a second change from it.
    let stale = submit(
        &app,
        &format!("/console/permits/{pid}/reinstate"),
        &app.officer(),
        &[("csrf", CSRF), ("etag", &etag)],
    )
    .await;
    assert_eq!(stale.status, 412, "{}", stale.text);
    let etag = app
        .get(&format!("/v1/permits/{pid}"), &app.officer())
        .await
        .body["etag"]
        .as_str()
        .unwrap()
        .to_owned();
    let reinstated = submit(
        &app,
        &format!("/console/permits/{pid}/reinstate"),
        &app.officer(),
        &[("csrf", CSRF), ("etag", &etag)],
    )
    .await;
    assert_eq!(reinstated.status, 303, "{}", reinstated.text);
    assert_eq!(permit_status(&app, &pid).await, "active");
    let done = app.audit("outcome=success&actor=officer-1").await;
    for action in ["application.decide", "permit.suspend", "permit.reinstate"] {
        assert!(
            done.iter().any(|e| e["action"] == action),
            "{action}: {done:?}"
        );
    }
}
both_backends!(officer_decides_and_manages_permits);

async fn researcher_applies_with_the_api_validation(app: TestApp) {
    let start = in_days(1)[..10].to_owned();
    let end = in_days(300)[..10].to_owned();
    let form = |purpose: &'static str, epsilon: &'static str| {
        vec![
            ("csrf", CSRF.to_owned()),
            ("title", "Risk model".to_owned()),
            ("applicant.organisation", "uni-a".to_owned()),
            ("purposes", purpose.to_owned()),
            ("research_flags", "algorithm_training".to_owned()),
            ("categories", "ehr_data".to_owned()),
            ("data_holders", "hosp-1, hosp-2".to_owned()),
            ("member_states", "DE, HU".to_owned()),
            ("requested_period.start", start.clone()),
            ("requested_period.end", end.clone()),
            ("privacy_budget.epsilon", epsilon.to_owned()),
            ("privacy_budget.delta", "0.00001".to_owned()),
            ("privacy_budget.unit", "data_holder".to_owned()),
            ("justification", "Train without moving records.".to_owned()),
            ("declares_no_prohibited_use", "true".to_owned()),
        ]
    };
    let bad = form("advertising_marketing", "-1");
    let bad: Vec<(&str, &str)> = bad.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let bad = submit(&app, "/console/applications/new", &app.researcher(), &bad).await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    // The API's messages, each next to its field, and the form as it was sent.
    assert!(bad.text.contains("f-purposes-error"), "{}", bad.text);
    assert!(bad.text.contains("Art. 54"), "{}", bad.text);
    assert!(
        bad.text.contains("f-privacy_budget-epsilon-error"),
        "{}",
        bad.text
    );
    assert!(bad.text.contains("value=\"Risk model\""), "{}", bad.text);
    // A field the body cannot even be parsed without is named too.
    let empty = submit(
        &app,
        "/console/applications/new",
        &app.researcher(),
        &[("csrf", CSRF)],
    )
    .await;
    assert_eq!(empty.status, 422, "{}", empty.text);
    assert!(empty.text.contains("class=\"error\""), "{}", empty.text);
    assert!(app.get("/v1/applications", &app.officer()).await.body == json!([]));

    let good = form("scientific_research", "8");
    let good: Vec<(&str, &str)> = good.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let good = submit(&app, "/console/applications/new", &app.researcher(), &good).await;
    assert_eq!(good.status, 303, "{}", good.text);
    let listed = app.get("/v1/applications", &app.officer()).await.body;
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
    assert_eq!(listed[0]["applicant_sub"], "alice");
    assert_eq!(
        listed[0]["request"]["data_holders"],
        json!(["hosp-1", "hosp-2"])
    );
}
both_backends!(researcher_applies_with_the_api_validation);

async fn a_post_without_the_csrf_token_is_refused_and_audited(app: TestApp) {
    let permit = app.permit().await;
    let pid = permit["id"].as_str().unwrap();
    let etag = permit["etag"].as_str().unwrap();
    for csrf in [None, Some("another-value")] {
        let mut form = vec![("etag", etag), ("reason", "inquiry")];
        if let Some(c) = csrf {
            form.push(("csrf", c));
        }
        let refused = submit(
            &app,
            &format!("/console/permits/{pid}/suspend"),
            &app.officer(),
            &form,
        )
        .await;
        assert_eq!(refused.status, 403, "{}", refused.text);
        assert!(refused.text.contains("csrf_mismatch"));
    }
    assert_eq!(permit_status(&app, pid).await, "active");
    let denied = app.audit("outcome=denied&actor=officer-1").await;
    let csrf: Vec<_> = denied
        .iter()
        .filter(|e| e["detail"]["code"] == "csrf_mismatch")
        .collect();
    assert_eq!(csrf.len(), 2, "{denied:?}");
    assert_eq!(csrf[0]["http_status"], 403);
}
both_backends!(a_post_without_the_csrf_token_is_refused_and_audited);

/// The development picker mints a session whose cookies are HttpOnly and SameSite=Strict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn development_sign_in_sets_a_strict_http_only_session() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let picker = browser()
        .get(format!("{}/console/login", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(picker.status(), 303);
    let picker = browser()
        .get(format!("{}/console/login/dev", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(picker.status(), 200);
    let set = picker.headers()["set-cookie"].to_str().unwrap().to_owned();
    let csrf = set
        .strip_prefix("ehds_console_csrf=")
        .and_then(|s| s.split(';').next())
        .unwrap()
        .to_owned();
    let without = browser()
        .post(format!("{}/console/login/dev", app.base))
        .form(&[("role", "hdab_officer")])
        .send()
        .await
        .unwrap();
    assert_eq!(without.status(), 403);
    let signed_in = browser()
        .post(format!("{}/console/login/dev", app.base))
        .header("cookie", format!("ehds_console_csrf={csrf}"))
        .form(&[("role", "hdab_officer"), ("csrf", &csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 303);
    let cookies: Vec<String> = signed_in
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    let session = cookies
        .iter()
        .find(|c| c.starts_with("ehds_console="))
        .expect("session cookie");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(session.contains(attribute), "{session}");
    }
    let token = session
        .strip_prefix("ehds_console=")
        .and_then(|s| s.split(';').next())
        .unwrap();
    let home = page(&app, "/console/", token).await;
    assert_eq!(home.status, 200);
    assert!(home.text.contains("officer-1"), "{}", home.text);
}

/// Outside development mode there is no role picker; the console signs in through the
/// issuer with the authorization code flow and PKCE. The first gateway's development issuer
/// plays the identity provider (its discovery document names the endpoints).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn production_has_no_role_picker_and_signs_in_with_pkce() {
    let idp = TestApp::spawn(Backend::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let mut settings = ehds_gateway::configuration::Settings {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: dir.path().to_path_buf(),
        database_url: Some(format!(
            "sqlite://{}?mode=rwc",
            dir.path().join("prod.db").display()
        )),
        ..Default::default()
    };
    settings.auth.issuer = Some(idp.dev.issuer().to_owned());
    settings.console.client_id = Some("ehds-console".into());
    settings.console.redirect_url = Some("https://gateway.example/console/callback".into());
    let prod = ehds_gateway::startup::Application::build(settings, false)
        .await
        .unwrap();
    let base = prod.base_url().to_owned();
    tokio::spawn(prod.run_until_stopped(std::future::pending()));

    for picker in [
        browser().get(format!("{base}/console/login/dev")),
        browser()
            .post(format!("{base}/console/login/dev"))
            .header("cookie", "ehds_console_csrf=x")
            .form(&[("role", "hdab_officer"), ("csrf", "x")]),
    ] {
        assert_eq!(picker.send().await.unwrap().status(), 404);
    }
    let login = browser()
        .get(format!("{base}/console/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 200);
    assert!(login.text().await.unwrap().contains("/console/login/oidc"));

    let start = browser()
        .get(format!("{base}/console/login/oidc"))
        .send()
        .await
        .unwrap();
    assert_eq!(start.status(), 303);
    let to = url::Url::parse(start.headers()["location"].to_str().unwrap()).unwrap();
    assert_eq!(
        to.as_str().split('?').next().unwrap(),
        format!("{}/authorize", idp.dev.issuer())
    );
    let q: std::collections::HashMap<String, String> = to.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "ehds-console");
    assert_eq!(
        q["redirect_uri"],
        "https://gateway.example/console/callback"
    );
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["code_challenge"].len(), 43, "a base64url SHA-256");
    assert!(q["scope"].split(' ').any(|s| s == "openid"));
    assert!(q["state"].len() >= 16 && q["nonce"].len() >= 16);
    let flow = start.headers()["set-cookie"].to_str().unwrap();
    assert!(flow.starts_with("ehds_console_oidc="), "{flow}");
    assert!(
        flow.contains("HttpOnly") && flow.contains("SameSite=Lax"),
        "{flow}"
    );
    // The cookie holds the verifier whose challenge went to the issuer.
    let verifier = flow
        .strip_prefix("ehds_console_oidc=")
        .and_then(|s| s.split(';').next())
        .and_then(|s| s.split('.').nth(1))
        .unwrap();
    use base64::Engine;
    use sha2::Digest;
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    assert_eq!(q["code_challenge"], challenge);
    let state = &q["state"];
    assert!(flow.contains(state.as_str()));

    // A callback whose state is not the browser's is refused before any exchange.
    let forged = browser()
        .get(format!("{base}/console/callback?code=abc&state=forged"))
        .header(
            "cookie",
            format!(
                "ehds_console_oidc={}",
                flow.strip_prefix("ehds_console_oidc=")
                    .and_then(|s| s.split(';').next())
                    .unwrap()
            ),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 400);
    assert!(forged.text().await.unwrap().contains("state_mismatch"));
}

/// `text` as the console's templates write it into a page (minijinja's HTML escaping).
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
        .replace('/', "&#x2f;")
}

/// The study form as a browser sends it (every field, the empty ones too), with `edits`.
fn study_form(permit: &str, holders: &str, edits: &[(&str, &str)]) -> Vec<(String, String)> {
    let features = example_features().to_string();
    let mut form: Vec<(String, String)> = [
        ("csrf", CSRF),
        ("title", "Coronary artery disease risk"),
        ("permit_id", permit),
        ("purpose", "scientific_research"),
        ("categories", "ehr_data"),
        ("data_holders", holders),
        ("feature_spec", &features),
        ("task", ""),
        ("strategy", "fedavg"),
        ("strategy.settings", ""),
        ("model.architecture", "logistic"),
        ("model.hidden", ""),
        ("optimizer.name", "sgd"),
        ("optimizer.lr", "0.1"),
        ("local_steps", "20"),
        ("batch_size", "8"),
        ("rounds", "2"),
        ("min_sites", "2"),
        ("round_deadline_seconds", "120"),
        ("dp.level", "client"),
        ("dp.clip_norm", "1.0"),
        ("dp.target_epsilon", "2.0"),
        ("dp.noise_multiplier", ""),
        ("dp.sampling_rate", ""),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    for (name, value) in edits {
        let field = form.iter_mut().find(|(k, _)| k == name).expect("a field");
        field.1 = (*value).to_owned();
    }
    form
}

/// The JSON the API gets for `study_form(permit, holders, ..)` with these numbers.
fn study_json(permit: &str, holders: &[&str], lr: f64, rounds: i64, target_epsilon: f64) -> Value {
    json!({
        "title": "Coronary artery disease risk",
        "permit_id": permit,
        "purpose": "scientific_research",
        "categories": ["ehr_data"],
        "data_holders": holders,
        "feature_spec": example_features(),
        "model": {"architecture": "logistic", "hidden": []},
        "strategy": {"name": "fedavg"},
        "optimizer": {"name": "sgd", "lr": lr},
        "local_steps": 20,
        "batch_size": 8,
        "rounds": rounds,
        "min_sites": 2,
        "round_deadline_seconds": 120,
        "dp": {"level": "client", "clip_norm": 1.0, "target_epsilon": target_epsilon}
    })
}

async fn submit_owned(app: &TestApp, path: &str, token: &str, form: &[(String, String)]) -> Page {
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    submit(app, path, token, &form).await
}

/// A researcher's invalid study from the console form: the page shows every field error and
/// every reason the permit does not cover the study, in the API's own words and codes, and
/// nothing is stored; each refusal is audited as the API's.
async fn researcher_submits_a_study_with_the_api_validation(app: TestApp) {
    let permit = app
        .permit_id(&federation_application(
            &["cleveland", "hungarian"],
            8.0,
            "record",
        ))
        .await;

    // Field errors: no round, a negative learning rate.
    let form = study_form(
        &permit,
        "cleveland, hungarian",
        &[("rounds", "0"), ("optimizer.lr", "-1")],
    );
    let invalid = submit_owned(&app, "/console/studies/new", &app.researcher(), &form).await;
    assert_eq!(invalid.status, 422, "{}", invalid.text);
    assert!(invalid.text.contains("role=\"alert\""), "{}", invalid.text);
    for id in ["f-rounds-error", "f-optimizer-lr-error"] {
        assert!(invalid.text.contains(id), "{id}: {}", invalid.text);
    }
    // The form comes back as it was sent.
    assert!(
        invalid
            .text
            .contains("value=\"Coronary artery disease risk\""),
        "{}",
        invalid.text
    );

    // Reasons: a holder the permit does not name, and more epsilon than it has.
    let form = study_form(
        &permit,
        "cleveland, va",
        &[("rounds", "5"), ("dp.target_epsilon", "20")],
    );
    let refused = submit_owned(&app, "/console/studies/new", &app.researcher(), &form).await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert!(
        refused.text.contains("study_not_permitted"),
        "{}",
        refused.text
    );

    assert_eq!(
        app.get("/v1/studies", &app.researcher()).await.body,
        json!([]),
        "nothing is stored"
    );
    let denied = app.audit("action=study.create&outcome=denied").await;
    let codes: Vec<&str> = denied
        .iter()
        .map(|e| e["detail"]["code"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        codes,
        ["validation_failed", "study_not_permitted"],
        "{denied:?}"
    );

    // What the API answers the same study: every message of it is on the console's page.
    let api = app
        .post(
            "/v1/studies",
            &app.researcher(),
            &study_json(&permit, &["cleveland", "hungarian"], -1.0, 0, 2.0),
        )
        .await;
    assert_eq!(api.status, 422, "{}", api.text);
    let errors = api.body["errors"].as_array().expect("field errors");
    let fields: Vec<&str> = errors.iter().filter_map(|e| e["field"].as_str()).collect();
    assert!(
        fields.contains(&"rounds") && fields.contains(&"optimizer.lr"),
        "{fields:?}"
    );
    for e in errors {
        for part in ["field", "code", "message"] {
            let text = e[part].as_str().unwrap();
            assert!(
                invalid.text.contains(&escaped(text)),
                "{part} {text:?} missing from the console: {}",
                invalid.text
            );
        }
    }
    let api = app
        .post(
            "/v1/studies",
            &app.researcher(),
            &study_json(&permit, &["cleveland", "va"], 0.1, 5, 20.0),
        )
        .await;
    assert_eq!(
        (api.status.as_u16(), api.code()),
        (422, "study_not_permitted"),
        "{}",
        api.text
    );
    let reasons = api.body["reasons"].as_array().expect("reasons");
    let reason_codes: Vec<&str> = reasons.iter().filter_map(|r| r["code"].as_str()).collect();
    assert!(
        reason_codes.contains(&"data_holder_not_permitted") && reason_codes.len() == 2,
        "{reason_codes:?}"
    );
    for r in reasons {
        let message = r["message"].as_str().expect("each reason has its sentence");
        assert!(!message.is_empty());
        for text in [r["code"].as_str().unwrap(), message] {
            assert!(
                refused.text.contains(&escaped(text)),
                "{text:?} missing from the console: {}",
                refused.text
            );
        }
    }
    assert!(refused.text.contains("`va`"), "{}", refused.text);
}
both_backends!(researcher_submits_a_study_with_the_api_validation);

/// The officer amends, extends and revokes a permit through the console: each change is the
/// API's (state read back through the API, a new version of the terms on the page, the audit
/// entry), and a change the API refuses is shown with its message and changes nothing.
async fn officer_amends_extends_and_revokes_through_the_console(app: TestApp) {
    let permit = app.permit().await;
    let pid = permit["id"].as_str().unwrap().to_owned();
    let action = |name: &str| format!("/console/permits/{pid}/{name}");

    // Amend: new conditions and a smaller budget, as version 2 of the terms.
    let etag = app.permit_etag(&pid).await;
    let bad = submit(
        &app,
        &action("amend"),
        &app.officer(),
        &[
            ("csrf", CSRF),
            ("etag", &etag),
            ("reason", "Budget review"),
            ("epsilon", "-1"),
        ],
    )
    .await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    assert!(bad.text.contains("class=\"error\""), "{}", bad.text);
    let amended = submit(
        &app,
        &action("amend"),
        &app.officer(),
        &[
            ("csrf", CSRF),
            ("etag", &etag),
            ("reason", "Budget review after the first study"),
            ("conditions", "Publish the model card"),
            ("epsilon", "6"),
        ],
    )
    .await;
    assert_eq!(amended.status, 303, "{}", amended.text);
    assert_eq!(location(&amended), format!("/console/permits/{pid}"));
    let now = app
        .get(&format!("/v1/permits/{pid}"), &app.officer())
        .await
        .body;
    assert_eq!(now["terms_version"], 2, "{now}");
    assert_eq!(now["terms"]["conditions"], "Publish the model card");
    assert_eq!(now["privacy_budget"]["epsilon_total"], 6.0, "{now}");
    let versions = app
        .get(&format!("/v1/permits/{pid}/versions"), &app.officer())
        .await
        .body;
    assert_eq!(versions.as_array().map(Vec::len), Some(2), "{versions}");
    let shown = page(&app, &format!("/console/permits/{pid}"), &app.officer()).await;
    assert_eq!(shown.status, 200);
    assert!(
        shown.text.contains("<td>2</td>")
            && shown.text.contains("Budget review after the first study"),
        "the new version is listed: {}",
        shown.text
    );

    // Extend: a date before the current expiry is the API's field error; a later one holds.
    let etag = app.permit_etag(&pid).await;
    let earlier = in_days(100)[..10].to_owned();
    let refused = submit(
        &app,
        &action("extend"),
        &app.officer(),
        &[
            ("csrf", CSRF),
            ("etag", &etag),
            ("expires_at", &earlier),
            ("reason", "Follow-up"),
        ],
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert!(
        refused
            .text
            .contains("the new expiry must be later than the current one"),
        "{}",
        refused.text
    );
    let later = in_days(730)[..10].to_owned();
    let extended = submit(
        &app,
        &action("extend"),
        &app.officer(),
        &[
            ("csrf", CSRF),
            ("etag", &etag),
            ("expires_at", &later),
            ("reason", "Follow-up of the cohort"),
        ],
    )
    .await;
    assert_eq!(extended.status, 303, "{}", extended.text);
    let now = app
        .get(&format!("/v1/permits/{pid}"), &app.officer())
        .await
        .body;
    assert_eq!(
        now["expires_at"].as_str().map(|s| &s[..10]),
        Some(&later[..])
    );
    assert!(now["extended_at"].is_string(), "{now}");

    // Revoke: a reason is required; then the permit is revoked and offers no action.
    let etag = app.permit_etag(&pid).await;
    let no_reason = submit(
        &app,
        &action("revoke"),
        &app.officer(),
        &[("csrf", CSRF), ("etag", &etag)],
    )
    .await;
    assert_eq!(no_reason.status, 422, "{}", no_reason.text);
    assert_eq!(permit_status(&app, &pid).await, "active");
    let revoked = submit(
        &app,
        &action("revoke"),
        &app.officer(),
        &[
            ("csrf", CSRF),
            ("etag", &etag),
            ("reason", "Art. 63 breach of the conditions"),
        ],
    )
    .await;
    assert_eq!(revoked.status, 303, "{}", revoked.text);
    assert_eq!(permit_status(&app, &pid).await, "revoked");
    let shown = page(&app, &format!("/console/permits/{pid}"), &app.officer()).await;
    assert!(
        shown.text.contains("Art. 63 breach of the conditions"),
        "{}",
        shown.text
    );
    for form in ["/suspend", "/revoke", "/amend", "/extend"] {
        assert!(!shown.text.contains(form), "{form} offered: {}", shown.text);
    }

    // The trail has each change as the officer's, and each refusal.
    let done = app
        .audit(&format!(
            "outcome=success&actor=officer-1&resource_id={pid}"
        ))
        .await;
    for action in ["permit.amend", "permit.extend", "permit.revoke"] {
        let entries: Vec<_> = done.iter().filter(|e| e["action"] == action).collect();
        assert_eq!(entries.len(), 1, "{action}: {done:?}");
        assert_eq!(entries[0]["permit_id"], pid.as_str());
    }
    let refusals = app.audit("outcome=denied&actor=officer-1").await;
    for action in ["amend", "extend", "revoke"] {
        let path = format!("/v1/permits/{{id}}/{action}");
        assert!(
            refusals
                .iter()
                .any(|e| e["detail"]["path"] == path.as_str() && e["http_status"] == 422),
            "{action}: {refusals:?}"
        );
    }
}
both_backends!(officer_amends_extends_and_revokes_through_the_console);

/// The console relays a study's server-sent events to its owner as they come (here: the
/// study's state, then its cancellation and the end of the stream), audited as the API's
/// subscription; another organisation's researcher gets the API's 404 page, not a stream.
async fn study_events_stream_through_the_console(app: TestApp) {
    let permit = app
        .permit_id(&federation_application(
            &["cleveland", "hungarian"],
            50.0,
            "record",
        ))
        .await;
    let id = app
        .submit_study(&study_body(&permit, &["cleveland", "hungarian"]))
        .await;
    app.wait_for(
        &format!("/v1/studies/{id}/rounds"),
        &app.researcher(),
        30,
        "the study's first round to open",
        |v| v["status"] == "running" && v["rounds"].as_array().is_some_and(|r| !r.is_empty()),
    )
    .await;
    let url = format!("{}/console/studies/{id}/events", app.base);
    let cookie = |token: &str| format!("ehds_console={token}; ehds_console_csrf={CSRF}");

    let stranger = app.token("bob", &["researcher"], Some("uni-b"));
    let refused = browser()
        .get(&url)
        .header("cookie", cookie(&stranger))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 404);
    assert!(refused.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(refused.text().await.unwrap().contains("not_found"));
    let anonymous = browser().get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 303);

    let stream = browser()
        .get(&url)
        .header("cookie", cookie(&app.researcher()))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    assert!(stream.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("connect-src 'self'"));
    let reader = tokio::spawn(read_events(stream));
    // The first look has been sent once the subscription is on the trail.
    app.wait_for(
        &format!("/v1/audit/events?action=study.read&resource_id={id}"),
        &app.auditor(),
        30,
        "the subscription's audit entry",
        |entries| {
            entries
                .as_array()
                .is_some_and(|a| a.iter().any(|e| e["detail"]["view"] == "events"))
        },
    )
    .await;
    let cancelled = app
        .post(
            &format!("/v1/studies/{id}/cancel"),
            &app.researcher(),
            &json!({"reason": "wrong cohort"}),
        )
        .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    let events = tokio::time::timeout(std::time::Duration::from_secs(30), reader)
        .await
        .expect("the stream ends with the study")
        .unwrap();

    let last = events.last().expect("events");
    assert_eq!(
        (last.event.as_str(), last.data.as_str()),
        ("end", "cancelled")
    );
    let progress: Vec<Value> = events
        .iter()
        .filter(|e| e.event == "study")
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    assert_eq!(
        progress.first().map(|p| &p["status"]),
        Some(&json!("running"))
    );
    assert_eq!(
        progress.last().map(|p| &p["status"]),
        Some(&json!("cancelled"))
    );
    assert_eq!(progress[0]["study_id"], id.as_str());
    let round: Value = serde_json::from_str(
        &events
            .iter()
            .find(|e| e.event == "round")
            .expect("the open round")
            .data,
    )
    .unwrap();
    assert_eq!(round["round"], 1, "{round}");

    let subscriptions: Vec<Value> = app
        .audit(&format!(
            "action=study.read&resource_id={id}&outcome=success"
        ))
        .await
        .into_iter()
        .filter(|e| e["detail"]["view"] == "events")
        .collect();
    assert_eq!(subscriptions.len(), 1, "{subscriptions:?}");
    assert_eq!(
        subscriptions[0]["actor"]["sub"], "alice",
        "{subscriptions:?}"
    );
}
both_backends!(study_events_stream_through_the_console);

async fn the_procedure_runs_through_the_console(app: TestApp) {
    let created = app.apply(&application()).await;
    let id = created.body["id"].as_str().unwrap().to_owned();
    let officer = app.officer();
    let alice = app.researcher();
    // the queue shows that the decision clock has not started
    let queue = page(&app, "/console/applications", &officer).await;
    assert_eq!(queue.status, 200, "{}", queue.text);
    assert!(
        queue.text.contains("completeness check pending"),
        "{}",
        queue.text
    );
    // the officer's page offers the completeness check and the information request
    let shown = page(&app, &format!("/console/applications/{id}"), &officer).await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    assert!(shown.text.contains(&format!(
        "/console/applications/{id}/step/information-requests"
    )));
    assert!(
        !shown.text.contains("/step/withdraw"),
        "only the applicant withdraws"
    );
    let blank = submit(
        &app,
        &format!("/console/applications/{id}/step/information-requests"),
        &officer,
        &[("csrf", CSRF), ("questions", " ")],
    )
    .await;
    assert_eq!(blank.status, 422, "{}", blank.text);
    assert!(blank.text.contains("role=\"alert\""));
    let asked = submit(
        &app,
        &format!("/console/applications/{id}/step/information-requests"),
        &officer,
        &[
            ("csrf", CSRF),
            ("questions", "Which ethics approvals apply?"),
        ],
    )
    .await;
    assert_eq!(asked.status, 303, "{}", asked.text);
    let waiting = page(&app, &format!("/console/applications/{id}"), &alice).await;
    assert!(waiting.text.contains("Which ethics approvals apply?"));
    assert!(waiting.text.contains("Answer due (four weeks)"));
    let answered = submit(
        &app,
        &format!("/console/applications/{id}/step/information"),
        &alice,
        &[("csrf", CSRF), ("answer", "EC-2026-17 at both sites")],
    )
    .await;
    assert_eq!(answered.status, 303, "{}", answered.text);
    let complete = submit(
        &app,
        &format!("/console/applications/{id}/step/completeness"),
        &officer,
        &[("csrf", CSRF)],
    )
    .await;
    assert_eq!(complete.status, 303, "{}", complete.text);
    let extended = submit(
        &app,
        &format!("/console/applications/{id}/step/extension"),
        &officer,
        &[("csrf", CSRF), ("months", "2"), ("reasons", "four holders")],
    )
    .await;
    assert_eq!(extended.status, 303, "{}", extended.text);
    let queue = page(&app, "/console/applications", &officer).await;
    assert!(queue.text.contains("days left"), "{}", queue.text);
    let read = app.get(&format!("/v1/applications/{id}"), &officer).await;
    assert_eq!(read.body["status"], "assessing");
    assert_eq!(read.body["procedure"]["extension"]["months"], 2);
    assert_eq!(
        read.body["procedure"]["information_requests"][0]["answer"],
        "EC-2026-17 at both sites"
    );
    let unknown = submit(
        &app,
        &format!("/console/applications/{id}/step/lapse"),
        &officer,
        &[("csrf", CSRF)],
    )
    .await;
    assert_eq!(unknown.status, 404);
}
both_backends!(the_procedure_runs_through_the_console);

async fn an_officer_reviews_statistics_through_the_console(app: TestApp) {
    let (_, permit) = app
        .permit_with(&application(), &json!({"decision": "approve"}))
        .await;
    let pid = permit["id"].as_str().unwrap();
    let query = json!({"statistic": "count", "group_by": [{"column": "sex", "levels": [0, 1]}]});
    let run = app
        .post(
            &format!("/v1/permits/{pid}/statistics"),
            &app.researcher(),
            &json!({"purpose": "scientific_research", "feature_spec": example_features(),
                    "query": query, "data_holders": ["hosp-1"]}),
        )
        .await;
    assert_eq!(run.status, 201, "{}", run.text);
    let id = run.body["id"].as_str().unwrap().to_owned();
    // the holder's node answers: 3 women and 40 men, so the women's count is suppressed
    let task = app
        .get("/v1/node/statistics-tasks", &app.holder("hosp-1"))
        .await
        .body[0]
        .clone();
    let spec = ehds_core::domain::feature_spec::features::FeatureSpec::from_json(
        &example_features().to_string(),
    )
    .unwrap();
    let columns = ehds_core::domain::statistics::variables(&spec);
    let sex = columns.iter().position(|c| c == "sex").unwrap();
    let rows = (0..43)
        .map(|i| {
            let mut r = vec![f64::NAN; columns.len()];
            r[sex] = if i < 3 { 0.0 } else { 1.0 };
            r
        })
        .collect();
    let q = ehds_stats::Query::parse(serde_json::from_value(query).unwrap(), &Default::default())
        .unwrap();
    let partial = ehds_stats::partial(&q, &ehds_stats::Table::new(columns, rows).unwrap()).unwrap();
    let answered = app
        .post(
            &format!(
                "/v1/node/statistics-tasks/{}/result",
                task["task_id"].as_str().unwrap()
            ),
            &app.holder("hosp-1"),
            &json!({"registry_version": task["registry_version"], "opted_out": 0,
                    "incomplete": 0, "partial": partial}),
        )
        .await;
    assert_eq!(answered.status, 204, "{}", answered.text);

    let officer = app.officer();
    let queue = page(&app, "/console/statistics", &officer).await;
    assert_eq!(queue.status, 200, "{}", queue.text);
    assert!(
        queue.text.contains("Waiting for an output checker"),
        "{}",
        queue.text
    );
    let shown = page(&app, &format!("/console/statistics/{id}"), &officer).await;
    assert!(shown.text.contains("threshold_count"), "{}", shown.text);
    assert!(shown
        .text
        .contains(&format!("/console/statistics/{id}/review")));
    // the researcher sees neither the verdict nor the form
    let theirs = page(
        &app,
        &format!("/console/statistics/{id}"),
        &app.researcher(),
    )
    .await;
    assert_eq!(theirs.status, 200, "{}", theirs.text);
    assert!(!theirs.text.contains("/review\""), "{}", theirs.text);
    assert!(theirs.text.contains("Nothing is released yet"));
    let blank = submit(
        &app,
        &format!("/console/statistics/{id}/review"),
        &officer,
        &[
            ("csrf", CSRF),
            ("decision", "release"),
            ("justification", ""),
        ],
    )
    .await;
    assert_eq!(blank.status, 422, "{}", blank.text);
    let released = submit(
        &app,
        &format!("/console/statistics/{id}/review"),
        &officer,
        &[
            ("csrf", CSRF),
            ("decision", "release"),
            ("justification", "the small count stays suppressed"),
        ],
    )
    .await;
    assert_eq!(released.status, 303, "{}", released.text);
    let answer = page(
        &app,
        &format!("/console/statistics/{id}"),
        &app.researcher(),
    )
    .await;
    assert!(answer.text.contains("id=\"answer\""), "{}", answer.text);
    assert!(
        answer.text.contains("secondary_suppression"),
        "{}",
        answer.text
    );
}
both_backends!(an_officer_reviews_statistics_through_the_console);
