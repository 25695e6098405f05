//! One error type for the API. Every refusal is `application/problem+json` (RFC 9457) with a
//! stable `code`; 5xx details are logged, never sent.

use axum::{
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use serde_json::{json, Map, Value};

use crate::{
    auth::AuthError,
    store::{StoreError, Unavailable},
};
use ehds_core::domain::{
    audit::{AuditAction, AuditSubject},
    permit::TransitionError,
    FieldError,
};

/// What the refusal-auditing middleware learns about a problem response.
#[derive(Debug, Clone)]
pub struct ProblemInfo {
    pub code: &'static str,
    pub detail: String,
    pub action: Option<AuditAction>,
    pub resource_type: Option<&'static str>,
    pub resource_id: Option<String>,
    pub permit_id: Option<String>,
}

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub detail: String,
    pub errors: Vec<FieldError>,
    pub extra: Map<String, Value>,
    pub action: Option<AuditAction>,
    pub resource: Option<AuditSubject>,
    pub permit_id: Option<String>,
    headers: Vec<(header::HeaderName, HeaderValue)>,
    source: Option<anyhow::Error>,
}

/// Longest problem `detail` sent or stored: details may quote what the caller sent (a serde
/// error names the offending value), so they are cut to a fixed size.
pub const MAX_DETAIL: usize = 1024;
pub use crate::app::refusals::bounded;

pub type ApiResult<T, E = ApiError> = Result<T, E>;

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            code,
            detail: detail.into(),
            errors: vec![],
            extra: Map::new(),
            action: None,
            resource: None,
            permit_id: None,
            headers: vec![],
            source: None,
        }
    }

    pub fn invalid(errors: Vec<FieldError>) -> Self {
        let detail = match errors.as_slice() {
            [one] => one.message.clone(),
            many => format!("{} fields are invalid", many.len()),
        };
        let code = match errors.as_slice() {
            [one] => one.code,
            _ => "validation_failed",
        };
        Self {
            errors,
            ..Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, detail)
        }
    }

    pub fn field(field: &str, code: &'static str, message: impl Into<String>) -> Self {
        Self::invalid(vec![FieldError::new(field, code, message)])
    }

    pub fn not_found(what: &str, id: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} {id} does not exist"),
        )
    }

    pub fn forbidden(action: impl Into<AuditAction>) -> Self {
        let action = action.into();
        Self::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("the caller may not perform `{action}` on this resource"),
        )
        .action(action)
    }

    pub fn conflict(e: TransitionError) -> Self {
        let mut err = Self::new(StatusCode::CONFLICT, e.code, e.message);
        err.extra
            .insert("current_state".into(), json!(e.current_state));
        err
    }

    pub fn unauthorized(e: AuthError) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, e.code, e.message)
    }

    pub fn internal(e: impl Into<anyhow::Error>) -> Self {
        let e = e.into();
        if let Some(state) = Unavailable::in_chain(&e) {
            return Self::unavailable(state, e);
        }
        Self {
            source: Some(e),
            ..Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "internal error",
            )
        }
    }

    pub fn action(mut self, action: impl Into<AuditAction>) -> Self {
        self.action = Some(action.into());
        self
    }

    /// Names the record the refusal was about (and the permit, when it is one) in its audit
    /// entry.
    pub fn on(mut self, subject: AuditSubject) -> Self {
        if let AuditSubject::Permit(id) = subject {
            self.permit_id = Some(id.to_string());
        }
        self.resource = Some(subject);
        self
    }

    pub fn with_header(mut self, name: header::HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }

    /// Adds `reasons`: each reason's code and facts as it serialises, and its `message`, the
    /// sentence a person reads (the console shows it; a client may too).
    pub fn with_reasons<R: serde::Serialize + std::fmt::Display>(self, reasons: &[R]) -> Self {
        let listed = reasons
            .iter()
            .map(|r| {
                let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
                if let Value::Object(m) = &mut v {
                    m.insert("message".into(), json!(r.to_string()));
                }
                v
            })
            .collect();
        self.with("reasons", Value::Array(listed))
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict => Self::new(
                StatusCode::CONFLICT,
                "concurrent_modification",
                "the record was changed by another request; read it again and retry",
            ),
            other => Self::internal(other),
        }
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        Self::internal(e)
    }
}

impl ApiError {
    /// 503 for a database that cannot take the request now (down, full, read-only), with
    /// `Retry-After`; the cause is still logged.
    fn unavailable(state: Unavailable, source: anyhow::Error) -> Self {
        Self {
            source: Some(source),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                state.code(),
                state.detail(),
            )
        }
        .with_header(header::RETRY_AFTER, HeaderValue::from_static("5"))
    }
}

/// The members every problem document has (RFC 9457 plus the stable `code`): the one place
/// their names and the `type` URI scheme are written, for the router's answers and for those
/// the connection layer rewrites.
pub fn problem_body(status: StatusCode, code: &str, detail: &str) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert(
        "type".into(),
        json!(format!("urn:ehds-gateway:problem:{code}")),
    );
    body.insert(
        "title".into(),
        json!(status.canonical_reason().unwrap_or("Error")),
    );
    body.insert("status".into(), json!(status.as_u16()));
    body.insert("code".into(), json!(code));
    body.insert("detail".into(), json!(detail));
    body
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Some(source) = &self.source {
            tracing::error!(error = ?source, code = self.code, "request failed");
        }
        let detail = bounded(&self.detail, MAX_DETAIL);
        let mut body = problem_body(self.status, self.code, &detail);
        if !self.errors.is_empty() {
            body.insert("errors".into(), json!(self.errors));
        }
        body.extend(self.extra);
        let info = ProblemInfo {
            code: self.code,
            detail,
            action: self.action,
            resource_type: self.resource.map(|r| r.resource_type()),
            resource_id: self.resource.and_then(|r| r.resource_id()),
            permit_id: self.permit_id,
        };
        let mut response = (self.status, axum::Json(Value::Object(body))).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer error=\"invalid_token\""),
            );
        }
        for (name, value) in self.headers {
            response.headers_mut().insert(name, value);
        }
        response.extensions_mut().insert(info);
        response
    }
}

/// The problem body, for the OpenAPI document.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Problem {
    #[schema(example = "urn:ehds-gateway:problem:invalid_transition")]
    pub r#type: String,
    pub title: String,
    pub status: u16,
    /// Stable machine-readable code.
    pub code: String,
    pub detail: String,
    pub errors: Option<Vec<FieldError>>,
}
