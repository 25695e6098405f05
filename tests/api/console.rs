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
    reqwest::Client::builder()
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
        (
            app.officer(),
            "/console/applications",
            "Decision due (Art. 68)",
        ),
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
