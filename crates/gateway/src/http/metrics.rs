//! `GET /metrics` in the Prometheus text format, and the request timing behind its latency
//! histograms. What is measured is named in `crate::observability`.
use std::sync::Arc;
use std::time::Instant;

use axum::{
    extract::{MatchedPath, Request, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
    Router,
};
use sha2::{Digest, Sha256};

use super::{error::ApiError, AppState};
use crate::observability;
use ehds_core::domain::time;

/// Who may read `/metrics`.
#[derive(Clone)]
pub enum MetricsAccess {
    /// Whoever presents this bearer token (kept as its SHA-256, compared as digests).
    Token(Arc<[u8; 32]>),
    /// Anyone: development mode without a token file.
    Open,
    /// Nobody: no token file outside development mode.
    Disabled,
}

impl MetricsAccess {
    /// The token in `file` (surrounding whitespace ignored); without one, open in development
    /// mode and disabled otherwise.
    pub fn load(file: Option<&std::path::Path>, dev: bool) -> anyhow::Result<Self> {
        let Some(path) = file else {
            return Ok(if dev { Self::Open } else { Self::Disabled });
        };
        let text = std::fs::read_to_string(path).map_err(|e| {
            anyhow::anyhow!(
                "Failed to read metrics.bearer_token_file {}: {e}",
                path.display()
            )
        })?;
        let token = text.trim();
        anyhow::ensure!(
            token.len() >= 16,
            "the metrics bearer token in {} must have at least 16 characters",
            path.display()
        );
        Ok(Self::Token(Arc::new(
            Sha256::digest(token.as_bytes()).into(),
        )))
    }

    fn admits(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        match self {
            Self::Open => Ok(()),
            Self::Disabled => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "metrics_disabled",
                "metrics are served only with metrics.bearer_token_file set",
            )),
            Self::Token(expected) => {
                let presented = headers
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .map(|t| Sha256::digest(t.trim().as_bytes()));
                // digests of equal length, so the comparison time says nothing about the token
                let matches = presented.is_some_and(|p| p.as_slice() == &expected[..]);
                if matches {
                    Ok(())
                } else {
                    Err(ApiError::new(
                        StatusCode::UNAUTHORIZED,
                        "invalid_metrics_token",
                        "present the metrics bearer token",
                    ))
                }
            }
        }
    }
}

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/metrics", get(scrape))
        // refusals are audited like any other refused request
        .layer(middleware::from_fn_with_state(state, super::audit_refusals))
}

/// Prometheus metrics: request latencies, audit appends, rounds, node activity (this process)
/// and the governance state (privacy budgets, permit expiry, opt-out registry, database pool).
#[utoipa::path(get, path = "/metrics", tag = "operations",
    // open in development mode, the metrics token otherwise (`metrics.bearer_token_file`)
    security((), ("metrics_token" = [])),
    responses(
        (status = 200, description = "Prometheus text format 0.0.4", content_type = "text/plain"),
        (status = 401, body = super::error::Problem, description = "Missing or wrong metrics token"),
        (status = 404, body = super::error::Problem, description = "Metrics are not enabled")))]
pub async fn scrape(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.metrics_access.admits(&headers)?;
    let mut text = observability::process_metrics().render();
    text.push_str(
        &observability::render_state(state.store.as_ref(), time::now())
            .await
            .map_err(ApiError::internal)?,
    );
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response())
}

/// Times each routed request into the latency histogram, labelled with its route template.
pub async fn record_request(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let response = next.run(req).await;
    if let Some(route) = route {
        observability::http_request(
            method.as_str(),
            &route,
            response.status().as_u16(),
            started.elapsed(),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bearer(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
        );
        h
    }

    #[test]
    fn without_a_token_file_metrics_are_open_in_development_mode_only() {
        let open = MetricsAccess::load(None, true).unwrap();
        assert!(open.admits(&HeaderMap::new()).is_ok());
        let disabled = MetricsAccess::load(None, false).unwrap();
        let refused = disabled
            .admits(&bearer("anything-at-all-here"))
            .unwrap_err();
        assert_eq!(
            (refused.status, refused.code),
            (StatusCode::NOT_FOUND, "metrics_disabled")
        );
    }

    #[test]
    fn a_token_file_admits_exactly_its_token() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "  s3cret-scrape-token-value\n").unwrap();
        for dev in [true, false] {
            let access = MetricsAccess::load(Some(&file), dev).unwrap();
            assert!(access.admits(&bearer("s3cret-scrape-token-value")).is_ok());
            for wrong in [
                bearer("s3cret-scrape-token-valuE"),
                bearer(""),
                HeaderMap::new(),
            ] {
                let e = access.admits(&wrong).unwrap_err();
                assert_eq!(
                    (e.status, e.code),
                    (StatusCode::UNAUTHORIZED, "invalid_metrics_token")
                );
            }
        }
        std::fs::write(&file, "short").unwrap();
        assert!(MetricsAccess::load(Some(&file), false).is_err());
        assert!(MetricsAccess::load(Some(&dir.path().join("missing")), false).is_err());
    }
}
