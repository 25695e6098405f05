//! Signing in and the console session.
//!
//! After sign-in the console keeps the access token in an HttpOnly, SameSite=Strict cookie
//! (Secure when the gateway's public URL is https) and verifies it on every request exactly as
//! the API verifies a bearer token. Every POST also carries a CSRF token: a random value in a
//! second cookie that each form repeats in a hidden field (double submit); a POST whose field
//! does not match is refused with 403 and audited. SameSite=Strict alone already keeps other
//! sites' forms from carrying the session; the token also covers a sibling subdomain that
//! could plant cookies.
//!
//! Development mode offers a role picker that mints a development token; production signs in
//! with the configured OpenID Connect issuer (authorization code flow with PKCE).

use axum::{
    extract::{FromRequestParts, Query, RawForm},
    http::{header, request::Parts, HeaderMap, HeaderValue, Method, StatusCode},
    response::{IntoResponse, Redirect, Response},
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use openidconnect::{
    core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata},
    AuthorizationCode, ClientId, CsrfToken, IssuerUrl, Nonce, OAuth2TokenResponse,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use ring::rand::{SecureRandom, SystemRandom};
use serde::Deserialize;
use serde_json::json;

use super::{render, Console, BASE};
use crate::{
    auth::{Principal, Role},
    http::error::ProblemInfo,
};

pub const TOKEN_COOKIE: &str = "ehds_console";
pub const CSRF_COOKIE: &str = "ehds_console_csrf";
/// The sign-in in flight with the issuer: state, PKCE verifier and nonce.
const FLOW_COOKIE: &str = "ehds_console_oidc";
/// How long a development sign-in lasts.
const DEV_SESSION_SECONDS: i64 = 8 * 3600;

/// The roles the console has screens for, with the identity the development picker suggests.
const DEV_IDENTITIES: [(Role, &str, &str); 3] = [
    (Role::Researcher, "alice", "uni-a"),
    (Role::HdabOfficer, "officer-1", "hdab-de"),
    (Role::Auditor, "audrey", "hdab-de"),
];

/// The signed-in user of a console request.
pub struct Session {
    pub token: String,
    pub principal: Principal,
    pub csrf: String,
    pub request_id: Option<HeaderValue>,
}

impl Session {
    /// What every page's layout shows of the user.
    pub fn user(&self) -> serde_json::Value {
        let officer = self.principal.has(Role::HdabOfficer);
        let researcher = self.principal.has(Role::Researcher);
        let auditor = self.principal.has(Role::Auditor);
        let mut nav: Vec<(&str, &str)> = vec![("/console/", "Overview")];
        if officer || researcher {
            nav.extend([
                ("/console/applications", "Applications"),
                ("/console/permits", "Permits"),
                ("/console/studies", "Studies"),
                ("/console/statistics", "Statistics"),
            ]);
        }
        if researcher {
            nav.extend([
                ("/console/applications/new", "Apply"),
                ("/console/studies/new", "New study"),
            ]);
        }
        if auditor {
            nav.extend([
                ("/console/audit", "Audit trail"),
                ("/console/audit/records", "Records of processing"),
            ]);
        }
        json!({
            "nav": nav.iter().map(|(href, label)| json!({"href": href, "label": label})).collect::<Vec<_>>(),
            "sub": self.principal.sub,
            "organisation": self.principal.organisation.as_ref().map(|o| o.to_string()),
            "roles": self.principal.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
            "officer": officer,
            "researcher": researcher,
            "auditor": auditor,
        })
    }
}

impl FromRequestParts<Console> for Session {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, console: &Console) -> Result<Self, Response> {
        let token = cookie(&parts.headers, TOKEN_COOKIE);
        let csrf = cookie(&parts.headers, CSRF_COOKIE);
        let (Some(token), Some(csrf)) = (token, csrf) else {
            return Err(to_login());
        };
        match console.state.auth.authenticate(&token).await {
            Ok(principal) => Ok(Session {
                token,
                principal,
                csrf,
                request_id: parts.headers.get("x-request-id").cloned(),
            }),
            // An expired or foreign token: sign in again.
            Err(_) => Err(to_login()),
        }
    }
}

fn to_login() -> Response {
    Redirect::to(&format!("{BASE}/login")).into_response()
}

/// A submitted form, with repeated fields (check boxes) kept.
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn parse(raw: &RawForm) -> Self {
        Form(url::form_urlencoded::parse(&raw.0).into_owned().collect())
    }

    /// The field's value, trimmed; empty counts as absent.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }

    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, v)| k == name && !v.trim().is_empty())
            .map(|(_, v)| v.trim().to_owned())
            .collect()
    }

    /// The fields as a JSON object, to show the form again as it was sent.
    pub fn values(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        for (k, v) in &self.0 {
            if k != "csrf" {
                out.entry(k.clone()).or_insert(json!(v));
            }
        }
        serde_json::Value::Object(out)
    }
}

/// Refuses a POST whose CSRF field does not repeat the cookie: 403, audited as the API audits
/// its refusals.
pub async fn check_csrf(
    console: &Console,
    session: &Session,
    form: &Form,
    path: &str,
) -> Result<(), Response> {
    if form
        .get("csrf")
        .is_some_and(|sent| same(sent.as_bytes(), session.csrf.as_bytes()))
    {
        return Ok(());
    }
    let detail = "the form's CSRF token is missing or does not match this session";
    crate::http::record_refusal(
        &console.state,
        session.principal.actor(),
        Method::POST.as_str(),
        path,
        session
            .request_id
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        StatusCode::FORBIDDEN,
        ProblemInfo {
            code: "csrf_mismatch",
            detail: detail.into(),
            action: None,
            resource_type: None,
            resource_id: None,
            permit_id: None,
        },
    )
    .await;
    Err(render(
        StatusCode::FORBIDDEN,
        "error.html",
        json!({"user": session.user(), "csrf": session.csrf, "title": "Refused",
               "status": 403, "code": "csrf_mismatch", "detail": detail}),
    ))
}

/// Compares without an early exit, so a guess learns nothing from the timing.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The value of cookie `name`, if the request carries it once.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty())
}

fn random_token() -> Result<String, Response> {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| super::internal("the system random source failed"))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// A console cookie: HttpOnly, scoped to the console, Secure behind https.
fn set_cookie(
    console: &Console,
    name: &str,
    value: &str,
    same_site: &str,
    max_age: Option<i64>,
) -> HeaderValue {
    let secure = if console.state.settings.public_url().starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    let age = max_age
        .map(|s| format!("; Max-Age={s}"))
        .unwrap_or_default();
    let value = format!("{name}={value}; Path={BASE}; HttpOnly; SameSite={same_site}{secure}{age}");
    // Names and values are ASCII from base64url, JWT and fixed names.
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Starts a session: the token and a fresh CSRF token.
fn session_cookies(
    console: &Console,
    token: &str,
    response: &mut Response,
) -> Result<(), Response> {
    let csrf = random_token()?;
    let headers = response.headers_mut();
    headers.append(
        header::SET_COOKIE,
        set_cookie(console, TOKEN_COOKIE, token, "Strict", None),
    );
    headers.append(
        header::SET_COOKIE,
        set_cookie(console, CSRF_COOKIE, &csrf, "Strict", None),
    );
    Ok(())
}

/// The pre-session CSRF token of the login form (the cookie it sets, and the value).
fn login_csrf(
    console: &Console,
    headers: &HeaderMap,
) -> Result<(String, Option<HeaderValue>), Response> {
    match cookie(headers, CSRF_COOKIE) {
        Some(existing) => Ok((existing, None)),
        None => {
            let fresh = random_token()?;
            let header = set_cookie(console, CSRF_COOKIE, &fresh, "Strict", None);
            Ok((fresh, Some(header)))
        }
    }
}

/// `GET /console/login`: the role picker in development mode, the issuer's sign-in otherwise.
pub async fn login_page(axum::extract::State(console): axum::extract::State<Console>) -> Response {
    if console.state.dev.is_some() {
        return Redirect::to(&format!("{BASE}/login/dev")).into_response();
    }
    render(
        StatusCode::OK,
        "login.html",
        json!({
            "title": "Sign in",
            "oidc": console.state.settings.console.client_id.is_some(),
            "issuer": console.state.auth.issuer(),
        }),
    )
}

/// `GET /console/login/dev`: the development role picker; there is none outside development
/// mode.
pub async fn dev_picker(
    axum::extract::State(console): axum::extract::State<Console>,
    headers: HeaderMap,
) -> Response {
    if console.state.dev.is_none() {
        return super::pages::not_found().await;
    }
    let (csrf, set) = match login_csrf(&console, &headers) {
        Ok(v) => v,
        Err(r) => return r,
    };
    let identities: Vec<_> = DEV_IDENTITIES
        .iter()
        .map(|(role, sub, org)| json!({"role": role.as_str(), "sub": sub, "org": org}))
        .collect();
    let mut response = render(
        StatusCode::OK,
        "dev_login.html",
        json!({"title": "Development sign-in", "csrf": csrf, "identities": identities}),
    );
    if let Some(set) = set {
        response.headers_mut().append(header::SET_COOKIE, set);
    }
    response
}

/// `POST /console/login/dev`: mints a development token for the chosen role.
pub async fn dev_login(
    axum::extract::State(console): axum::extract::State<Console>,
    headers: HeaderMap,
    raw: RawForm,
) -> Response {
    let Some(dev) = console.state.dev.clone() else {
        return super::pages::not_found().await;
    };
    let form = Form::parse(&raw);
    let cookie_csrf = cookie(&headers, CSRF_COOKIE);
    let matches = match (form.get("csrf"), cookie_csrf.as_deref()) {
        (Some(sent), Some(kept)) => same(sent.as_bytes(), kept.as_bytes()),
        _ => false,
    };
    if !matches {
        return render(
            StatusCode::FORBIDDEN,
            "error.html",
            json!({"title": "Refused", "status": 403, "code": "csrf_mismatch",
                   "detail": "the sign-in form's CSRF token is missing or does not match; reload the page"}),
        );
    }
    let Some((role, default_sub, default_org)) = form.get("role").and_then(|r| {
        DEV_IDENTITIES
            .iter()
            .find(|(role, _, _)| role.as_str() == r)
    }) else {
        return render(
            StatusCode::UNPROCESSABLE_ENTITY,
            "error.html",
            json!({"title": "Sign-in refused", "status": 422, "code": "unknown_role",
                   "detail": "choose researcher, hdab_officer or auditor"}),
        );
    };
    let sub = form.get("sub").unwrap_or(default_sub);
    let org = form.get("organisation").unwrap_or(default_org);
    let token = match dev.mint(
        sub,
        &[role.as_str().to_owned()],
        Some(org),
        DEV_SESSION_SECONDS,
    ) {
        Ok(t) => t,
        Err(e) => return super::internal(&format!("minting a development token: {e}")),
    };
    let mut response = Redirect::to(&format!("{BASE}/")).into_response();
    if let Err(r) = session_cookies(&console, &token, &mut response) {
        return r;
    }
    response
}

/// `POST /console/logout`: forgets the session's cookies.
pub async fn logout(
    axum::extract::State(console): axum::extract::State<Console>,
    session: Session,
    raw: RawForm,
) -> Response {
    let form = Form::parse(&raw);
    if let Err(r) = check_csrf(&console, &session, &form, &format!("{BASE}/logout")).await {
        return r;
    }
    let mut response = Redirect::to(&format!("{BASE}/login")).into_response();
    for name in [TOKEN_COOKIE, CSRF_COOKIE] {
        response.headers_mut().append(
            header::SET_COOKIE,
            set_cookie(&console, name, "", "Strict", Some(0)),
        );
    }
    response
}

fn oidc_http() -> Result<ehds_http::OidcClient, Response> {
    // The issuer's endpoints answer directly; the client follows no redirects, which would let
    // a discovery document send the gateway anywhere.
    ehds_http::OidcClient::new(std::time::Duration::from_secs(10))
        .map_err(|e| super::internal(&format!("building the OpenID Connect client: {e}")))
}

fn redirect_url(console: &Console) -> String {
    console
        .state
        .settings
        .console
        .redirect_url
        .clone()
        .unwrap_or_else(|| format!("{}{BASE}/callback", console.state.settings.public_url()))
}

fn sign_in_failed(status: StatusCode, code: &str, detail: String) -> Response {
    render(
        status,
        "error.html",
        json!({"title": "Sign-in failed", "status": status.as_u16(), "code": code, "detail": detail}),
    )
}

/// `GET /console/login/oidc`: sends the browser to the issuer's authorization endpoint with a
/// PKCE challenge (S256), a state and a nonce, remembered in a short-lived cookie.
pub async fn oidc_start(axum::extract::State(console): axum::extract::State<Console>) -> Response {
    let Some(client_id) = console.state.settings.console.client_id.clone() else {
        return super::pages::not_found().await;
    };
    let http = match oidc_http() {
        Ok(h) => h,
        Err(r) => return r,
    };
    let discovered = async {
        let issuer = IssuerUrl::new(console.state.auth.issuer().to_owned())?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &http).await?;
        let redirect = RedirectUrl::new(redirect_url(&console))?;
        anyhow::Ok(
            CoreClient::from_provider_metadata(metadata, ClientId::new(client_id), None)
                .set_redirect_uri(redirect),
        )
    };
    let client = match discovered.await {
        Ok(c) => c,
        Err(e) => {
            return sign_in_failed(
                StatusCode::BAD_GATEWAY,
                "issuer_unavailable",
                format!("the identity provider could not be reached: {e}"),
            )
        }
    };
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let settings = &console.state.settings.console;
    let mut request = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scopes(settings.scopes.iter().cloned().map(Scope::new))
        .set_pkce_challenge(challenge);
    if let Some(resource) = &settings.resource {
        request = request.add_extra_param("resource", resource.clone());
    }
    let (url, state, nonce) = request.url();
    let flow = format!(
        "{}.{}.{}",
        state.secret(),
        verifier.secret(),
        nonce.secret()
    );
    let mut response = Redirect::to(url.as_str()).into_response();
    // Lax: the issuer's redirect back is a cross-site navigation, which Strict would strip.
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&console, FLOW_COOKIE, &flow, "Lax", Some(600)),
    );
    response
}

#[derive(Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /console/callback`: exchanges the code (with the PKCE verifier) for tokens and keeps
/// the access token as the session.
pub async fn oidc_callback(
    axum::extract::State(console): axum::extract::State<Console>,
    headers: HeaderMap,
    Query(callback): Query<Callback>,
) -> Response {
    let Some(client_id) = console.state.settings.console.client_id.clone() else {
        return super::pages::not_found().await;
    };
    if let Some(error) = callback.error {
        return sign_in_failed(
            StatusCode::UNAUTHORIZED,
            "authorization_denied",
            format!("the identity provider answered `{error}`"),
        );
    }
    let flow = cookie(&headers, FLOW_COOKIE).unwrap_or_default();
    let mut parts = flow.splitn(3, '.');
    let (Some(state), Some(verifier), Some(nonce)) = (parts.next(), parts.next(), parts.next())
    else {
        return sign_in_failed(
            StatusCode::BAD_REQUEST,
            "no_sign_in_in_progress",
            "no sign-in is in progress in this browser; start again".into(),
        );
    };
    let (Some(code), Some(sent_state)) = (callback.code, callback.state) else {
        return sign_in_failed(
            StatusCode::BAD_REQUEST,
            "missing_code",
            "the callback carries no authorization code and state".into(),
        );
    };
    if !same(state.as_bytes(), sent_state.as_bytes()) {
        return sign_in_failed(
            StatusCode::BAD_REQUEST,
            "state_mismatch",
            "the callback's state is not the one this browser sent".into(),
        );
    }
    let http = match oidc_http() {
        Ok(h) => h,
        Err(r) => return r,
    };
    let exchanged = async {
        let issuer = IssuerUrl::new(console.state.auth.issuer().to_owned())?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &http).await?;
        let client = CoreClient::from_provider_metadata(metadata, ClientId::new(client_id), None)
            .set_redirect_uri(RedirectUrl::new(redirect_url(&console))?);
        let mut exchange = client
            .exchange_code(AuthorizationCode::new(code))?
            .set_pkce_verifier(PkceCodeVerifier::new(verifier.to_owned()));
        if let Some(resource) = &console.state.settings.console.resource {
            exchange = exchange.add_extra_param("resource", resource.clone());
        }
        let tokens = exchange.request_async(&http).await?;
        // The ID token, when the issuer sends one, must be for this client and this sign-in.
        if let Some(id_token) = tokens.id_token() {
            id_token.claims(&client.id_token_verifier(), &Nonce::new(nonce.to_owned()))?;
        }
        anyhow::Ok(tokens.access_token().secret().clone())
    };
    let token = match exchanged.await {
        Ok(t) => t,
        Err(e) => {
            return sign_in_failed(
                StatusCode::BAD_GATEWAY,
                "token_exchange_failed",
                format!("the identity provider did not exchange the code: {e}"),
            )
        }
    };
    // The access token is what every request is checked with; refuse one the API would refuse.
    if let Err(e) = console.state.auth.authenticate(&token).await {
        return sign_in_failed(StatusCode::UNAUTHORIZED, e.code, e.message);
    }
    // A page, not a redirect: the browser is still on the issuer's cross-site navigation, on
    // which it would not send the new SameSite=Strict cookie.
    let mut response = render(
        StatusCode::OK,
        "signed_in.html",
        json!({"title": "Signed in"}),
    );
    if let Err(r) = session_cookies(&console, &token, &mut response) {
        return r;
    }
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&console, FLOW_COOKIE, "", "Lax", Some(0)),
    );
    response
}
