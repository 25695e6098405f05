//! Identity-provider interoperability: a real OpenID Connect provider (the `oidc-provider`
//! package, pinned in tests/oidc-provider) issues the tokens, and the gateway runs in production
//! mode trusting it by discovery. Researcher, officer and auditor tokens come from the
//! provider's client-credentials grant (clients whose tokens carry their role under the
//! Keycloak-style `realm_access.roles`), the node logs in through the same grant with each
//! client authentication method, signing keys rotate, and forged tokens are refused with
//! distinct codes. Forgeries that need a key the gateway trusts are signed with the provider's
//! own current key, which its test-only `/admin/signing-key` hands out.
//!
//! Needs `node` (and `npm` once, to install the provider). Without `node` the tests say so and
//! pass, unless `CI` is set: there a missing `node` fails them.

#[path = "api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

use std::{
    path::PathBuf,
    process::Stdio,
    time::{Duration, Instant},
};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ehds_gateway::{configuration::Settings, startup::Application};
use ehds_node::client::{
    ClientAuth, ClientCredentials, ClientError, ClientKey, ClientLogin, GatewayClient, TokenSource,
};
use serde_json::{json, Value};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use helpers::*;

const AUDIENCE: &str = "ehds-gateway";
const RESOURCE: &str = "urn:ehds:gateway";
const SCOPE: &str = "gateway";
/// How long the gateway keeps the provider's key set before fetching it again.
const JWKS_MAX_AGE: Duration = Duration::from_secs(4);

fn provider_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oidc-provider")
}

/// Whether these tests can run: `node` present (and the provider installed, with `npm ci` the
/// first time). Without `node` they are skipped outside CI and fail in it.
fn node_ready() -> bool {
    static READY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *READY.get_or_init(|| {
        let has_node = std::process::Command::new("node")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !has_node {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set but `node` is missing: the identity-provider tests cannot run"
            );
            eprintln!("SKIPPED: `node` is not installed, the identity-provider tests do not run");
            return false;
        }
        if !provider_dir().join("node_modules/oidc-provider").exists() {
            let status = std::process::Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(provider_dir())
                .status()
                .expect("`npm` runs (install it beside `node`)");
            assert!(status.success(), "npm ci in tests/oidc-provider failed");
        }
        true
    })
}

/// A client registered at the provider.
struct Registration {
    client_id: &'static str,
    method: &'static str,
    secret: Option<&'static str>,
    jwk: Option<Value>,
    roles: &'static [&'static str],
    org: Option<&'static str>,
}

impl Registration {
    fn secret(
        client_id: &'static str,
        method: &'static str,
        roles: &'static [&'static str],
        org: Option<&'static str>,
    ) -> Self {
        Self {
            client_id,
            method,
            secret: Some("s3cret-of-the-client"),
            jwk: None,
            roles,
            org,
        }
    }
}

/// The running provider; stopped when dropped.
struct Provider {
    issuer: String,
    http: reqwest::Client,
    _process: Child,
}

impl Provider {
    async fn start(clients: &[Registration]) -> Provider {
        Self::start_with_console(clients, Value::Null).await
    }

    /// `console`: the web console's public client and the accounts that may sign in through
    /// the provider's login page (see provider.mjs).
    async fn start_with_console(clients: &[Registration], console: Value) -> Provider {
        let config = json!({
            "console": console,
            "audience": AUDIENCE,
            "resource": RESOURCE,
            "scope": SCOPE,
            "clients": clients.iter().map(|c| json!({
                "client_id": c.client_id,
                "method": c.method,
                "client_secret": c.secret,
                "jwk": c.jwk,
                "roles": c.roles,
                "org": c.org,
            })).collect::<Vec<_>>(),
        });
        // The tests of this file start their providers (each making an RSA key) at once,
        // beside their gateways, on CI's two cores; a start takes about a second. Once in
        // about a hundred starts a provider printed its runtime warnings but never its
        // listening line, not in 90 s: a silent one is replaced, twice at most.
        let config = config.to_string();
        const ATTEMPTS: u32 = 3;
        let mut attempt = 0;
        let (process, mut lines, line) = loop {
            attempt += 1;
            let mut process = Command::new("node")
                .arg(provider_dir().join("provider.mjs"))
                .arg(&config)
                // the provider leaves when its stdin closes, so it never outlives this process
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .expect("node starts the provider");
            let stdout = process.stdout.take().expect("piped stdout");
            let mut lines = BufReader::new(stdout).lines();
            match tokio::time::timeout(Duration::from_secs(45), lines.next_line()).await {
                Ok(line) => {
                    let line = line
                        .expect("the provider's stdout is readable")
                        .expect("the provider prints its issuer");
                    break (process, lines, line);
                }
                Err(_) if attempt < ATTEMPTS => {
                    eprintln!("the provider printed nothing in 45 s (attempt {attempt}); starting another");
                }
                Err(_) => panic!("the provider did not start in {ATTEMPTS} attempts of 45 s"),
            }
        };
        let issuer = line
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("unexpected provider output: {line}"))
            .to_owned();
        // keep reading: the provider logs to stdout later (its development login pages do)
        // and would die writing to a closed pipe
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Provider {
            issuer,
            http: ehds_http::builder().build().unwrap(),
            _process: process,
        }
    }

    /// An access token for the gateway from the client-credentials grant (`client_secret_basic`).
    async fn token(&self, client_id: &str) -> String {
        let r = self
            .http
            .post(format!("{}/token", self.issuer))
            .basic_auth(client_id, Some("s3cret-of-the-client"))
            .form(&[
                ("grant_type", "client_credentials"),
                ("resource", RESOURCE),
                ("scope", SCOPE),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "token for {client_id}");
        let body: Value = r.json().await.unwrap();
        body["access_token"].as_str().unwrap().to_owned()
    }

    async fn admin(&self, what: &str) -> Value {
        let r = self
            .http
            .post(format!("{}/admin/{what}", self.issuer))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{what}");
        r.json().await.unwrap()
    }

    /// The provider's current signing key: (kid, private PEM, public PEM).
    async fn signing_key(&self) -> (String, String, String) {
        let k: Value = self
            .http
            .get(format!("{}/admin/signing-key", self.issuer))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let s = |f: &str| k[f].as_str().unwrap().to_owned();
        (s("kid"), s("private_pem"), s("public_pem"))
    }
}

/// The gateway in production mode, trusting the provider, roles read from
/// `realm_access.roles`.
struct Gateway {
    base: String,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Gateway {
    async fn start(backend: Backend, issuer: &str) -> Gateway {
        Self::start_with(backend, issuer, |_| {}).await
    }

    async fn start_with(
        backend: Backend,
        issuer: &str,
        adjust: impl FnOnce(&mut Settings),
    ) -> Gateway {
        let dir = tempfile::tempdir().unwrap();
        let database_url = match backend {
            Backend::Sqlite => format!("sqlite://{}?mode=rwc", dir.path().join("g.db").display()),
            Backend::Postgres => fresh_postgres_database().await,
        };
        let mut settings = Settings {
            listen: "127.0.0.1:0".parse().unwrap(),
            data_dir: dir.path().to_path_buf(),
            database_url: Some(database_url),
            ..Default::default()
        };
        settings.auth.issuer = Some(issuer.to_owned());
        settings.auth.audience = AUDIENCE.into();
        settings.auth.roles_claim = "realm_access.roles".into();
        settings.auth.jwks_refresh_min_seconds = 0;
        settings.auth.jwks_max_age_seconds = JWKS_MAX_AGE.as_secs();
        adjust(&mut settings);
        let app = Application::build(settings, false)
            .await
            .expect("the gateway starts");
        let base = app.base_url().to_owned();
        tokio::spawn(app.run_until_stopped(std::future::pending()));
        Gateway {
            base,
            http: ehds_http::builder().build().unwrap(),
            _dir: dir,
        }
    }

    /// (status, problem code) of `GET /v1/permits` with `token`.
    async fn status(&self, token: &str) -> (u16, String) {
        let r = self
            .http
            .get(format!("{}/v1/permits", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        (status, body["code"].as_str().unwrap_or("").to_owned())
    }

    async fn audit(&self, auditor: &str, query: &str) -> Vec<Value> {
        let r = self
            .http
            .get(format!("{}/v1/audit/events?limit=10000&{query}", self.base))
            .bearer_auth(auditor)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.json().await.unwrap()
    }
}

fn staff() -> Vec<Registration> {
    vec![
        Registration::secret(
            "alice",
            "client_secret_basic",
            &["researcher"],
            Some("uni-a"),
        ),
        Registration::secret(
            "officer-1",
            "client_secret_basic",
            &["hdab_officer"],
            Some("hdab-de"),
        ),
        Registration::secret(
            "audrey",
            "client_secret_basic",
            &["auditor"],
            Some("hdab-de"),
        ),
    ]
}

/// A token signed with the provider's current key (what anyone holding a trusted key could
/// make): the claims a real token of `sub` would have, with `change` applied.
fn forge(
    issuer: &str,
    kid: &str,
    private_pem: &str,
    sub: &str,
    change: impl FnOnce(&mut Value),
) -> String {
    let now = chrono::Utc::now().timestamp();
    let mut claims = json!({
        "iss": issuer, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 600,
        "realm_access": {"roles": ["hdab_officer"]}, "org": "hdab-de",
    });
    change(&mut claims);
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(private_pem.as_bytes()).unwrap();
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

/// Tokens from the provider are accepted with the role of the nested claim; forged and
/// misdirected ones are refused, each with its own code, and every refusal is audited.
async fn provider_tokens_accepted_and_forgeries_refused(backend: Backend) {
    if !node_ready() {
        return;
    }
    let idp = Provider::start(&staff()).await;
    let gw = Gateway::start(backend, &idp.issuer).await;
    let (researcher, officer, auditor) = (
        idp.token("alice").await,
        idp.token("officer-1").await,
        idp.token("audrey").await,
    );

    // The role decides what each may do: only a researcher applies.
    let apply = |token: String| {
        gw.http
            .post(format!("{}/v1/applications", gw.base))
            .bearer_auth(token)
            .json(&application())
            .send()
    };
    assert_eq!(apply(researcher.clone()).await.unwrap().status(), 201);
    assert_eq!(apply(officer.clone()).await.unwrap().status(), 403);
    assert_eq!(gw.status(&officer).await, (200, String::new()));
    let by_alice = gw.audit(&auditor, "actor=alice&outcome=success").await;
    assert_eq!(by_alice.len(), 1, "{by_alice:?}");
    assert_eq!(by_alice[0]["actor"]["roles"], json!(["researcher"]));
    assert_eq!(by_alice[0]["actor"]["organisation"], "uni-a");

    let now = chrono::Utc::now().timestamp();
    let (kid, private_pem, public_pem) = idp.signing_key().await;
    let forged = |change: &dyn Fn(&mut Value)| forge(&idp.issuer, &kid, &private_pem, "x", change);
    let mut parts: Vec<String> = officer.split('.').map(str::to_owned).collect();
    let mut claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[1]).unwrap()).unwrap();
    claims["realm_access"]["roles"] = json!(["hdab_officer", "admin"]);
    parts[1] = URL_SAFE_NO_PAD.encode(claims.to_string());
    let tampered = parts.join(".");
    // the classic confusion: the issuer's public key used as an HMAC secret
    let mut hs = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    hs.kid = Some(kid.clone());
    let hmac = jsonwebtoken::encode(
        &hs,
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(public_pem.as_bytes()).unwrap(),
    )
    .unwrap();
    let unsigned = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"at+jwt"}"#),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "wrong audience",
            forged(&|c| c["aud"] = json!("another-service")),
            "invalid_audience",
        ),
        (
            "wrong issuer",
            forged(&|c| c["iss"] = json!("http://127.0.0.1:1")),
            "invalid_issuer",
        ),
        (
            "expired",
            forged(&|c| {
                c["iat"] = json!(now - 7200);
                c["exp"] = json!(now - 3600);
            }),
            "token_expired",
        ),
        (
            "not yet valid",
            forged(&|c| c["nbf"] = json!(now + 3600)),
            "token_not_yet_valid",
        ),
        ("alg none", unsigned, "unsigned_token"),
        ("HS256 with the public key", hmac, "unsupported_algorithm"),
        ("tampered roles", tampered, "invalid_signature"),
        (
            "unknown key id",
            forge(&idp.issuer, "not-published", &private_pem, "x", |_| {}),
            "unknown_signing_key",
        ),
    ];
    let codes: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.2).collect();
    assert_eq!(codes.len(), cases.len(), "every refusal has its own code");
    for (name, token, code) in &cases {
        assert_eq!(gw.status(token).await, (401, code.to_string()), "{name}");
    }
    // the same forgery with nothing changed is accepted: the cases differ in one thing each
    assert_eq!(gw.status(&forged(&|_| {})).await.0, 200);

    let refused = gw.audit(&auditor, "outcome=denied&actor=anonymous").await;
    let mut audited: Vec<&str> = refused
        .iter()
        .filter(|e| e["http_status"] == 401)
        .filter_map(|e| e["detail"]["code"].as_str())
        .collect();
    audited.sort();
    let mut expected: Vec<&str> = cases.iter().map(|c| c.2).collect();
    expected.sort();
    assert_eq!(audited, expected, "each refusal is audited with its code");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_tokens_accepted_and_forgeries_refused_sqlite() {
    provider_tokens_accepted_and_forgeries_refused(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_tokens_accepted_and_forgeries_refused_postgres() {
    provider_tokens_accepted_and_forgeries_refused(Backend::Postgres).await
}

fn kid_of(token: &str) -> String {
    jsonwebtoken::decode_header(token).unwrap().kid.unwrap()
}

/// The provider rotates its signing key: a token under the new key is accepted at once (the
/// unknown key id makes the gateway fetch the key set again), tokens under the old key still
/// work while it is published, and once the provider retires it they are refused within the
/// key set's maximum age, audited like every refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_key_rotation() {
    if !node_ready() {
        return;
    }
    let idp = Provider::start(&staff()).await;
    let gw = Gateway::start(Backend::Sqlite, &idp.issuer).await;
    let old = idp.token("officer-1").await;
    assert_eq!(gw.status(&old).await, (200, String::new()));

    let fetched = Instant::now();
    let rotated = idp.admin("rotate").await;
    let new = idp.token("officer-1").await;
    assert_eq!(kid_of(&new), rotated["kid"].as_str().unwrap());
    assert_ne!(kid_of(&new), kid_of(&old));
    assert_eq!(gw.status(&new).await, (200, String::new()));
    assert!(
        fetched.elapsed() < JWKS_MAX_AGE,
        "the new key was found by the unknown-kid refresh, not by the key set's age"
    );
    assert_eq!(gw.status(&old).await, (200, String::new()), "overlap");

    idp.admin("retire").await;
    tokio::time::sleep(JWKS_MAX_AGE + Duration::from_millis(500)).await;
    assert_eq!(
        gw.status(&old).await,
        (401, "unknown_signing_key".to_owned()),
        "a retired key no longer verifies"
    );
    assert_eq!(gw.status(&new).await, (200, String::new()));
    let auditor = idp.token("audrey").await;
    let refused = gw.audit(&auditor, "outcome=denied&actor=anonymous").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["detail"]["code"], "unknown_signing_key");
}

/// A P-256 key for `private_key_jwt`: (PKCS#8 PEM, public JWK).
fn client_key(kid: &str) -> (String, Value) {
    use ring::{
        rand::SystemRandom,
        signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING},
    };
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref();
    let b64 = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
    let body: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        body.join("\n")
    );
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    });
    (pem, jwk)
}

/// The node's login through the `openidconnect` client: with each client authentication
/// method it obtains a data-holder token for its hospital and polls its tasks; a wrong secret
/// or a key the provider does not know gets no token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_logs_in_with_each_client_authentication_method() {
    if !node_ready() {
        return;
    }
    let (pem, jwk) = client_key("node-key-1");
    let (stranger_pem, _) = client_key("node-key-1");
    let mut clients = staff();
    clients.push(Registration::secret(
        "node-basic",
        "client_secret_basic",
        &["data_holder"],
        Some("cleveland"),
    ));
    clients.push(Registration::secret(
        "node-post",
        "client_secret_post",
        &["data_holder"],
        Some("hungarian"),
    ));
    clients.push(Registration {
        client_id: "node-jwt",
        method: "private_key_jwt",
        secret: None,
        jwk: Some(jwk),
        roles: &["data_holder"],
        org: Some("va"),
    });
    let idp = Provider::start(&clients).await;
    let gw = Gateway::start(Backend::Sqlite, &idp.issuer).await;
    let login = |client_id: &str, auth: ClientAuth| ClientLogin {
        issuer: idp.issuer.clone(),
        client_id: client_id.into(),
        auth,
        scopes: vec![SCOPE.into()],
        resource: Some(RESOURCE.into()),
        audience: None,
    };
    let secret = || "s3cret-of-the-client".to_owned();
    let key = |pem: &str| ClientKey::from_pem(pem.as_bytes(), Some("node-key-1".into())).unwrap();
    for (login, org) in [
        (
            login("node-basic", ClientAuth::SecretBasic(secret())),
            "cleveland",
        ),
        (
            login("node-post", ClientAuth::SecretPost(secret())),
            "hungarian",
        ),
        (
            login("node-jwt", ClientAuth::PrivateKeyJwt(key(&pem))),
            "va",
        ),
    ] {
        let method = login.auth.method();
        let source = std::sync::Arc::new(ClientCredentials::new(login).unwrap());
        let node = GatewayClient::new(&gw.base)
            .unwrap()
            .with_tokens(source.clone());
        let tasks = node
            .poll_tasks(0)
            .await
            .unwrap_or_else(|e| panic!("{method}: {e}"));
        assert!(tasks.is_empty(), "{method}");
        // the token decoded as the gateway read it: the provider's client, its hospital
        let token = source.token().await.unwrap();
        let claims: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(token.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims["iss"], idp.issuer.as_str(), "{method}");
        assert_eq!(claims["org"], org, "{method}");
    }
    // polling tasks is a data holder's: the researcher's token from the same provider is refused
    let researcher = GatewayClient::new(&gw.base)
        .unwrap()
        .with_token(idp.token("alice").await);
    let refused = researcher
        .poll_tasks(0)
        .await
        .expect_err("not a data holder");
    assert!(
        matches!(&refused, ClientError::Problem { status, .. } if status.as_u16() == 403),
        "{refused}"
    );
    for (login, what) in [
        (
            login("node-basic", ClientAuth::SecretBasic("wrong".into())),
            "a wrong basic secret",
        ),
        (
            login("node-post", ClientAuth::SecretPost("wrong".into())),
            "a wrong posted secret",
        ),
        (
            login("node-jwt", ClientAuth::PrivateKeyJwt(key(&stranger_pem))),
            "an unregistered key",
        ),
    ] {
        let source = ClientCredentials::new(login).unwrap();
        let e = source.token().await.expect_err(what);
        assert!(e.to_string().contains("invalid_client"), "{what}: {e}");
    }
}

/// Cookies a browser keeps for one origin (names are unique here; paths are not tracked).
#[derive(Default)]
struct Jar(std::collections::BTreeMap<String, String>);

impl Jar {
    fn take(&mut self, r: &reqwest::Response) {
        for v in r.headers().get_all(reqwest::header::SET_COOKIE) {
            let v = v.to_str().unwrap();
            let pair = v.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() || v.contains("Max-Age=0") {
                self.0.remove(name);
            } else {
                self.0.insert(name.to_owned(), value.to_owned());
            }
        }
    }

    fn header(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The console's production sign-in against the real provider, as a browser walks it:
/// the gateway sends the browser to the authorization endpoint with a PKCE challenge, the
/// officer signs in and consents on the provider's pages, the callback exchanges the code
/// (with the verifier and the resource indicator) and the session carries the officer's
/// nested role. A replayed callback (the code is spent, the sign-in is over) is refused.
#[tokio::test]
async fn console_signs_in_with_authorization_code_and_pkce() {
    if !node_ready() {
        return;
    }
    // the redirect URI is registered at the provider before the gateway starts: pick its port
    let port = helpers::free_port();
    let callback = format!("http://127.0.0.1:{port}/console/callback");
    let idp = Provider::start_with_console(
        &staff(),
        json!({
            "client_id": "ehds-console",
            "redirect_uri": callback,
            "accounts": {"officer-1": {"roles": ["hdab_officer"], "org": "hdab-de"}},
        }),
    )
    .await;
    let gw = Gateway::start_with(Backend::Sqlite, &idp.issuer, |s| {
        s.listen = format!("127.0.0.1:{port}").parse().unwrap();
        s.console.client_id = Some("ehds-console".into());
        s.console.redirect_url = Some(callback.clone());
        s.console.scopes = vec![SCOPE.into()];
        s.console.resource = Some(RESOURCE.into());
    })
    .await;
    assert_eq!(gw.base, format!("http://127.0.0.1:{port}"));
    let browser = ehds_http::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let (mut at_gateway, mut at_idp) = (Jar::default(), Jar::default());

    let start = browser
        .get(format!("{}/console/login/oidc", gw.base))
        .send()
        .await
        .unwrap();
    assert!(start.status().is_redirection(), "{}", start.status());
    at_gateway.take(&start);
    let mut next = start.headers()[reqwest::header::LOCATION]
        .to_str()
        .unwrap()
        .to_owned();
    let authorize = url::Url::parse(&next).unwrap();
    let query: std::collections::HashMap<_, _> = authorize.query_pairs().into_owned().collect();
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["resource"], RESOURCE);
    assert!(query["scope"].split(' ').any(|s| s == "openid"));
    assert!(query["scope"].split(' ').any(|s| s == SCOPE));

    // the provider's pages: a login form, then a consent form, each posted back
    let mut hops = 0;
    let landing = loop {
        hops += 1;
        assert!(hops < 20, "the sign-in does not come back: {next}");
        let url = if next.starts_with('/') {
            format!("{}{next}", idp.issuer)
        } else {
            next.clone()
        };
        if url.starts_with(&callback) {
            break url;
        }
        let r = browser
            .get(&url)
            .header(reqwest::header::COOKIE, at_idp.header())
            .send()
            .await
            .unwrap();
        at_idp.take(&r);
        let r = if r.status().is_success() {
            let page = r.text().await.unwrap();
            let prompt = if page.contains("name=\"login\"") {
                vec![("prompt", "login"), ("login", "officer-1")]
            } else {
                assert!(page.contains("value=\"consent\""), "{page}");
                vec![("prompt", "consent")]
            };
            let posted = browser
                .post(&url)
                .header(reqwest::header::COOKIE, at_idp.header())
                .form(&prompt)
                .send()
                .await
                .unwrap();
            at_idp.take(&posted);
            posted
        } else {
            r
        };
        assert!(r.status().is_redirection(), "{url}: {}", r.status());
        next = r.headers()[reqwest::header::LOCATION]
            .to_str()
            .unwrap()
            .to_owned();
    };

    let signed_in = browser
        .get(&landing)
        .header(reqwest::header::COOKIE, at_gateway.header())
        .send()
        .await
        .unwrap();
    let status = signed_in.status();
    at_gateway.take(&signed_in);
    assert_eq!(status, 200, "{}", signed_in.text().await.unwrap());
    assert!(
        at_gateway.0.contains_key("ehds_console"),
        "{:?}",
        at_gateway.0.keys()
    );

    // the session is the officer's: the officer's pages open, with the role shown
    let home = browser
        .get(format!("{}/console/applications", gw.base))
        .header(reqwest::header::COOKIE, at_gateway.header())
        .send()
        .await
        .unwrap();
    assert_eq!(home.status(), 200);
    let page = home.text().await.unwrap();
    assert!(
        page.contains("officer-1 · hdab-de · hdab_officer"),
        "{page}"
    );

    // the same callback again: the sign-in is over (its cookie was cleared), refused
    let again = browser
        .get(&landing)
        .header(reqwest::header::COOKIE, at_gateway.header())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 400);
    assert!(again
        .text()
        .await
        .unwrap()
        .contains("no_sign_in_in_progress"));
}
