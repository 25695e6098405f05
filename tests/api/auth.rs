//! Authentication: missing, forged, expired and misdirected tokens are refused with precise codes
//! and audited; the production path discovers an external issuer's keys.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ehds_core::dev_issuer::DevIssuer;
use serde_json::json;

use crate::both_backends;
use crate::helpers::*;

async fn bad_tokens_are_refused_and_audited(app: TestApp) {
    let now = chrono::Utc::now().timestamp();
    let roles = vec!["hdab_officer".to_string()];
    let valid = app.officer();
    let mut parts: Vec<String> = valid.split('.').map(str::to_owned).collect();
    let mut claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[1]).unwrap()).unwrap();
    claims["roles"] = json!(["hdab_officer", "auditor"]);
    parts[1] = URL_SAFE_NO_PAD.encode(claims.to_string());
    let tampered = parts.join(".");

    let stranger_dir = tempfile::tempdir().unwrap();
    let stranger =
        DevIssuer::load_or_create(stranger_dir.path(), &app.base, "ehds-gateway").unwrap();
    let kid = jsonwebtoken::decode_header(&valid).unwrap().kid.unwrap();
    let mut hs = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    hs.kid = Some(kid);
    let hmac = jsonwebtoken::encode(
        &hs,
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(b"public-key-bytes").unwrap(),
    )
    .unwrap();
    let none = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#),
        parts[1]
    );
    let other_audience =
        DevIssuer::load_or_create(&app.data_dir, &app.base, "another-service").unwrap();
    let other_issuer =
        DevIssuer::load_or_create(&app.data_dir, "http://127.0.0.1:1", "ehds-gateway").unwrap();

    let cases: Vec<(&str, Option<String>, &str)> = vec![
        ("missing", None, "missing_token"),
        ("garbage", Some("not.a.jwt".into()), "invalid_token"),
        ("tampered claims", Some(tampered), "invalid_signature"),
        (
            "unknown key",
            Some(stranger.mint("mallory", &roles, None, 600).unwrap()),
            "unknown_signing_key",
        ),
        (
            "HMAC with the public key",
            Some(hmac),
            "unsupported_algorithm",
        ),
        ("alg none", Some(none), "unsigned_token"),
        (
            "expired",
            Some(
                app.dev
                    .mint_at("officer-1", &roles, None, now - 7200, now - 3600)
                    .unwrap(),
            ),
            "token_expired",
        ),
        (
            "not yet valid",
            Some(
                app.dev
                    .mint_at("officer-1", &roles, None, now + 3600, now + 7200)
                    .unwrap(),
            ),
            "token_not_yet_valid",
        ),
        (
            "wrong audience",
            Some(other_audience.mint("officer-1", &roles, None, 600).unwrap()),
            "invalid_audience",
        ),
        (
            "wrong issuer",
            Some(other_issuer.mint("officer-1", &roles, None, 600).unwrap()),
            "invalid_issuer",
        ),
    ];
    for (name, token, code) in &cases {
        let mut req = app.client.get(format!("{}/v1/permits", app.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let r = app.send(req).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (401, *code),
            "{name}: {}",
            r.text
        );
        assert!(r.headers.contains_key("www-authenticate"), "{name}");
    }
    let refused = app.audit("outcome=denied&actor=anonymous").await;
    assert_eq!(refused.len(), cases.len());
    assert!(refused.iter().all(|e| e["http_status"] == 401));
    // A token within the leeway still works.
    let skewed = app
        .dev
        .mint_at("officer-1", &roles, None, now - 600, now - 5)
        .unwrap();
    assert_eq!(app.get("/v1/permits", &skewed).await.status, 200);
}
both_backends!(bad_tokens_are_refused_and_audited);

/// A gateway without --dev trusts only its configured issuer, found by OIDC discovery: here the
/// first gateway's development issuer plays the external identity provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn production_mode_uses_the_external_issuer_and_has_no_local_key() {
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
    let prod = ehds_gateway::startup::Application::build(settings, false)
        .await
        .unwrap();
    let base = prod.base_url().to_owned();
    tokio::spawn(prod.run_until_stopped(std::future::pending()));
    let client = ehds_http::builder().build().unwrap();

    let ok = client
        .get(format!("{base}/v1/permits"))
        .bearer_auth(idp.officer())
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let discovery = client
        .get(format!("{base}/dev/oidc/.well-known/openid-configuration"))
        .send()
        .await
        .unwrap();
    assert_eq!(discovery.status(), 404);
    assert!(
        !DevIssuer::key_path(dir.path()).exists(),
        "no local signing key without --dev"
    );

    let no_issuer = ehds_gateway::startup::Application::build(
        ehds_gateway::configuration::Settings {
            data_dir: dir.path().join("x"),
            listen: "127.0.0.1:0".parse().unwrap(),
            ..Default::default()
        },
        false,
    )
    .await;
    assert!(
        no_issuer.is_err(),
        "serve without --dev refuses to start without an issuer"
    );
}
