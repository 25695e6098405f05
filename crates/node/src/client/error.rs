//! What can go wrong when talking to the gateway, as values a caller can match on.

use http::StatusCode;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The gateway refused the request with a problem document (RFC 9457): `code` is the stable
    /// machine-readable reason, `body` the whole document (field `errors`, `reasons`, ...).
    #[error("the gateway refused ({status}): {code}: {detail}")]
    Problem {
        status: StatusCode,
        code: String,
        detail: String,
        body: Value,
    },
    /// An error status without a problem document (something in front of the gateway, or a
    /// request timed out in its middleware).
    #[error("the gateway answered {status}: {body}")]
    Status { status: StatusCode, body: String },
    /// No answer: connection refused or reset, timeout, a body cut off.
    #[error("the gateway could not be reached: {0}")]
    Transport(#[source] reqwest::Error),
    /// An answer that is not what the API promises.
    #[error("{what}: unexpected answer: {reason}")]
    Decode { what: String, reason: String },
    /// The token source could not supply a bearer token (a refused client-credentials login).
    #[error("no bearer token: {0:#}")]
    Token(#[source] anyhow::Error),
}

impl ClientError {
    /// Maps an error answer: a JSON body with a `code` is a problem document.
    pub(crate) fn from_answer(status: StatusCode, body: &[u8]) -> Self {
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        match parsed
            .as_ref()
            .and_then(|v| Some((v, v.get("code")?.as_str()?)))
        {
            Some((doc, code)) => ClientError::Problem {
                status,
                code: code.to_owned(),
                detail: doc
                    .get("detail")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                body: doc.clone(),
            },
            None => ClientError::Status {
                status,
                body: String::from_utf8_lossy(body).into_owned(),
            },
        }
    }

    pub(crate) fn decode(what: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        ClientError::Decode {
            what: what.into(),
            reason: reason.to_string(),
        }
    }

    /// The HTTP status of a refusal, if the gateway answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            ClientError::Problem { status, .. } | ClientError::Status { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    /// The problem document's `code`, if the gateway refused with one.
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Problem { code, .. } => Some(code),
            _ => None,
        }
    }

    /// Whether the same request may succeed later unchanged: no answer, a server error, a
    /// request timeout, or back-pressure. A refusal (4xx) will not change by itself.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Transport(_) => true,
            ClientError::Problem { status, .. } | ClientError::Status { status, .. } => {
                status.is_server_error()
                    || *status == StatusCode::REQUEST_TIMEOUT
                    || *status == StatusCode::TOO_MANY_REQUESTS
            }
            ClientError::Decode { .. } | ClientError::Token(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_document_becomes_a_typed_refusal() {
        let body = br#"{"type":"urn:ehds-gateway:problem:not_found","title":"Not Found",
            "status":404,"code":"not_found","detail":"study x does not exist"}"#;
        let e = ClientError::from_answer(StatusCode::NOT_FOUND, body);
        match &e {
            ClientError::Problem {
                status,
                code,
                detail,
                body,
            } => {
                assert_eq!(*status, StatusCode::NOT_FOUND);
                assert_eq!(code, "not_found");
                assert_eq!(detail, "study x does not exist");
                assert_eq!(body["title"], "Not Found");
            }
            other => panic!("expected a problem, got {other:?}"),
        }
        assert_eq!(e.code(), Some("not_found"));
        assert!(!e.is_transient());
    }

    #[test]
    fn an_error_without_a_problem_document_keeps_its_status_and_text() {
        let e = ClientError::from_answer(StatusCode::BAD_GATEWAY, b"upstream down");
        assert!(
            matches!(&e, ClientError::Status { status, body } if *status == StatusCode::BAD_GATEWAY && body == "upstream down")
        );
        assert!(e.is_transient());
        assert_eq!(e.code(), None);
        // JSON without a `code` is not a problem document either
        let e = ClientError::from_answer(StatusCode::REQUEST_TIMEOUT, br#"{"error":"slow"}"#);
        assert!(matches!(e, ClientError::Status { .. }));
        assert!(e.is_transient());
    }
}
