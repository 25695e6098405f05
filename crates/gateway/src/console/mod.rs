//! The web console (docs/console.md): server-rendered pages under `/console` for the HDAB
//! officer, the researcher and the auditor.
//!
//! Every screen is a client of the API inside the same process: a page or an action becomes a
//! request to the `/v1` router that carries the signed-in user's token. Authentication, body
//! parsing, the Cedar decision, the application service with its audit entry, the auditing of a
//! refusal and the problem codes are therefore exactly the API's, and there is no second path to
//! keep in step with it.

pub mod assets;
mod pages;
mod session;
mod views;

use std::sync::LazyLock;

use axum::{
    body::Body,
    extract::Request,
    http::{header, HeaderMap, HeaderValue, Method, StatusCode},
    middleware::{self, Next},
    response::{Html, IntoResponse, Response},
    routing::{get, post},
    Router,
};
use serde_json::{json, Map, Value};
use tower::ServiceExt;

use crate::http::AppState;
pub use session::{CSRF_COOKIE, TOKEN_COOKIE};

/// Where the console is mounted.
pub const BASE: &str = "/console";

/// The largest API response a page reads into memory (lists are paged well below this).
const MAX_API_BODY: usize = 16 * 1024 * 1024;

/// No inline script or style, nothing from another origin, no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; \
                   frame-ancestors 'none'";

#[derive(Clone)]
pub struct Console {
    state: AppState,
    /// The `/v1` API with its authentication and refusal auditing, called in process.
    api: Router,
}

/// The API's answer to one in-process request.
pub struct ApiReply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl ApiReply {
    pub fn ok(&self) -> bool {
        self.status.is_success()
    }

    /// The problem document's field errors by field name, for the form that sent them.
    pub fn field_errors(&self) -> Value {
        let mut out = serde_json::Map::new();
        for e in self.body["errors"].as_array().into_iter().flatten() {
            // `purposes[1]` is shown at the `purposes` field.
            let field = e["field"].as_str().unwrap_or("");
            let field = field.split('[').next().unwrap_or(field).to_owned();
            let message = e["message"].as_str().unwrap_or("").to_owned();
            out.entry(field)
                .and_modify(|m| {
                    if let Value::String(s) = m {
                        s.push_str("; ");
                        s.push_str(&message);
                    }
                })
                .or_insert(Value::String(message));
        }
        if out.is_empty() {
            if let Some((field, message)) = self.body["detail"].as_str().and_then(body_field) {
                out.insert(field, Value::String(message));
            }
        }
        Value::Object(out)
    }
}

/// The members every problem document has.
const PROBLEM_HEAD: [&str; 5] = ["type", "title", "status", "code", "detail"];
/// The problem members the console lists item by item.
const PROBLEM_LISTS: [&str; 2] = ["errors", "reasons"];

impl ApiReply {
    /// The problem document as the console shows it: title, code and detail; every field
    /// error with its field, code and message; every reason with its code and message; and
    /// any other member the API added (`current_state`, `current_etag`, …) as a fact.
    pub fn problem(&self) -> Value {
        let Value::Object(body) = &self.body else {
            return json!({"title": self.status.canonical_reason().unwrap_or("Error"),
                          "code": "", "detail": self.body.as_str().unwrap_or_default()});
        };
        let mut problem: Map<String, Value> = body
            .iter()
            .filter(|(k, _)| PROBLEM_HEAD.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let errors: Vec<Value> = body
            .get("errors")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|e| json!({"field": e["field"], "code": e["code"], "message": e["message"]}))
            .collect();
        problem.insert("errors".into(), Value::Array(errors));
        let reasons: Vec<Value> = body
            .get("reasons")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|r| {
                // A reason without a sentence is shown with its facts as the API gave them.
                let message = match r["message"].as_str() {
                    Some(m) => m.to_owned(),
                    None => r
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(k, _)| *k != "code" && *k != "message")
                        .map(|(k, v)| format!("{k}: {}", shown(v)))
                        .collect::<Vec<_>>()
                        .join("; "),
                };
                json!({"code": r["code"].as_str().unwrap_or_default(), "message": message})
            })
            .collect();
        problem.insert("reasons".into(), Value::Array(reasons));
        let facts: Vec<Value> = body
            .iter()
            .filter(|(k, _)| {
                !PROBLEM_HEAD.contains(&k.as_str()) && !PROBLEM_LISTS.contains(&k.as_str())
            })
            .map(|(k, v)| json!({"name": k.replace('_', " "), "value": shown(v)}))
            .collect();
        problem.insert("facts".into(), Value::Array(facts));
        Value::Object(problem)
    }
}

/// A JSON value as text: a string as it is, anything else as JSON.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The field a body that failed to parse names in the API's detail (`requested_period: missing
/// field `start``, `invalid type: … at privacy_budget.epsilon`), with the API's message.
fn body_field(detail: &str) -> Option<(String, String)> {
    let rest = detail
        .split_once("target type: ")
        .map_or(detail, |(_, rest)| rest);
    let (path, message) = match rest.split_once(": ") {
        Some((path, message)) if !path.contains(' ') => (path, message),
        _ => ("", rest),
    };
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|m| m.split('`').next());
    let field = match (path, missing) {
        ("", Some(name)) => name.to_owned(),
        (path, Some(name)) => format!("{path}.{name}"),
        ("", None) => return None,
        (path, None) => path.to_owned(),
    };
    let field = field.split('[').next().unwrap_or(&field).to_owned();
    Some((field, message.to_owned()))
}

impl Console {
    /// Sends one request to the API as `token`'s holder.
    pub async fn call(
        &self,
        token: &str,
        request_id: Option<&HeaderValue>,
        method: Method,
        path: &str,
        body: Option<&Value>,
        extra: &[(header::HeaderName, String)],
    ) -> Result<ApiReply, Response> {
        let response = self
            .send(token, request_id, method, path, body, extra)
            .await?;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), MAX_API_BODY)
            .await
            .map_err(|e| internal(&format!("reading the API's answer: {e}")))?;
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Ok(ApiReply {
            status,
            headers,
            body,
        })
    }

    /// Sends one request to the API and hands back its response unread (downloads, exports).
    pub async fn send(
        &self,
        token: &str,
        request_id: Option<&HeaderValue>,
        method: Method,
        path: &str,
        body: Option<&Value>,
        extra: &[(header::HeaderName, String)],
    ) -> Result<Response, Response> {
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"));
        if let Some(id) = request_id {
            builder = builder.header("x-request-id", id);
        }
        for (name, value) in extra {
            builder = builder.header(name, value);
        }
        let request = match body {
            Some(json) => builder
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(json.to_string())),
            None => builder.body(Body::empty()),
        }
        .map_err(|e| internal(&format!("building the API request: {e}")))?;
        match self.api.clone().oneshot(request).await {
            Ok(response) => Ok(response),
            Err(never) => match never {},
        }
    }
}

/// Templates are compiled into the binary; minijinja escapes HTML in every `.html` template.
static TEMPLATES: LazyLock<minijinja::Environment<'static>> = LazyLock::new(|| {
    let mut env = minijinja::Environment::new();
    for (name, source) in views::TEMPLATES {
        if let Err(e) = env.add_template(name, source) {
            // A template that does not parse is a build defect the tests catch on the first page.
            tracing::error!(template = name, error = %e, "console template does not parse");
        }
    }
    env
});

/// Renders `template` with `context` and the given status.
pub fn render(status: StatusCode, template: &str, context: Value) -> Response {
    let rendered = TEMPLATES
        .get_template(template)
        .and_then(|t| t.render(&context));
    match rendered {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => internal(&format!("rendering {template}: {e}")),
    }
}

/// A plain error page for the console's own failures (never the API's problems, which pages
/// show in place).
pub fn internal(message: &str) -> Response {
    tracing::error!(error = message, "console failure");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Html("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Error</title></head><body><main><h1>Something went wrong</h1><p>The console could not complete this page; see the gateway's log.</p></main></body></html>"),
    )
        .into_response()
}

pub fn router(state: AppState, api: Router) -> Router {
    let console = Console { state, api };
    Router::new()
        .route("/", get(pages::home))
        .route("/login", get(session::login_page))
        .route(
            "/login/dev",
            get(session::dev_picker).post(session::dev_login),
        )
        .route("/login/oidc", get(session::oidc_start))
        .route("/callback", get(session::oidc_callback))
        .route("/logout", post(session::logout))
        .route("/assets/{file}", get(assets::serve))
        .route("/applications", get(pages::applications))
        .route(
            "/applications/new",
            get(pages::application_form).post(pages::application_submit),
        )
        .route("/applications/{id}", get(pages::application))
        .route("/applications/{id}/decision", post(pages::decide))
        .route(
            "/applications/{id}/step/{step}",
            post(pages::application_step),
        )
        .route("/permits", get(pages::permits))
        .route("/permits/{id}", get(pages::permit))
        .route("/permits/{id}/{action}", post(pages::permit_action))
        .route("/studies", get(pages::studies))
        .route(
            "/studies/new",
            get(pages::study_form).post(pages::study_submit),
        )
        .route("/studies/{id}", get(pages::study))
        .route("/studies/{id}/progress", get(pages::study_progress))
        .route("/studies/{id}/events", get(pages::study_events))
        .route("/studies/{id}/model", get(pages::model_download))
        .route("/register", get(pages::register))
        .route("/statistics", get(pages::statistics))
        .route("/statistics/{id}", get(pages::statistics_run))
        .route("/statistics/{id}/review", post(pages::statistics_review))
        .route("/audit", get(pages::audit))
        .route("/audit/verify", get(pages::audit_verify))
        .route("/audit/export", get(pages::audit_export))
        .route("/audit/records", get(pages::records))
        .fallback(pages::not_found)
        .layer(middleware::from_fn(security_headers))
        .with_state(console)
}

/// The console's content security policy and the other headers every console page carries.
/// Assets set their own long-lived cache header; pages are never cached (they hold a user's
/// view of governed data).
async fn security_headers(req: Request, next: Next) -> Response {
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}
