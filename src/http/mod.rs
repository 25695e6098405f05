//! HTTP API. Each resource has its module with a `router()`; this module merges them and adds
//! the layers once: request id, tracing, body limit, timeout, compression, optional CORS,
//! authentication for `/v1`, and the auditing of every refusal.

pub mod applications;
pub mod audit;
pub mod dev_oidc;
pub mod error;
pub mod extract;
pub mod health;
pub mod node_tasks;
pub mod openapi;
pub mod optouts;
pub mod permits;
pub mod studies;

use std::{sync::Arc, time::Duration};

use axum::{
    extract::{DefaultBodyLimit, MatchedPath, Request, State},
    http::{header, HeaderName, HeaderValue, Method, StatusCode},
    middleware::{self, Next},
    response::Response,
    Router,
};
use tower::ServiceBuilder;
use tower_http::{
    compression::CompressionLayer,
    cors::{AllowOrigin, CorsLayer},
    request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer},
    sensitive_headers::SetSensitiveRequestHeadersLayer,
    timeout::TimeoutLayer,
    trace::{DefaultOnResponse, TraceLayer},
};

use crate::{
    auth::{dev::DevIssuer, Authenticator, Principal},
    authz::{Action, Authorizer, Resource},
    configuration::Settings,
    domain::{
        audit::{Actor, NewAuditEvent, Outcome},
        optout::PseudonymKey,
    },
    federation::Federation,
    store::Store,
};
use error::{ApiError, ProblemInfo};
use extract::Caller;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub auth: Arc<Authenticator>,
    pub authz: Arc<Authorizer>,
    pub settings: Arc<Settings>,
    pub dev: Option<Arc<DevIssuer>>,
    pub pseudonym_key: PseudonymKey,
    pub federation: Arc<Federation>,
}

impl AppState {
    /// Asks the policies; a denial is a 403 that the refusal middleware audits.
    pub fn authorize(
        &self,
        caller: &Caller,
        action: Action,
        resource: &Resource<'_>,
    ) -> Result<(), ApiError> {
        if self.authz.is_allowed(&caller.principal, action, resource)? {
            Ok(())
        } else {
            Err(ApiError::forbidden(action.name()))
        }
    }

    pub fn allows(
        &self,
        caller: &Caller,
        action: Action,
        resource: &Resource<'_>,
    ) -> Result<bool, ApiError> {
        Ok(self.authz.is_allowed(&caller.principal, action, resource)?)
    }
}

impl Caller {
    /// A success entry for this caller, to append in the same transaction as the change.
    pub fn audit(
        &self,
        action: Action,
        resource_type: &str,
        resource_id: Option<String>,
    ) -> NewAuditEvent {
        NewAuditEvent::success(
            &self.principal.actor(),
            action.name(),
            resource_type,
            resource_id,
        )
        .request(self.request_id.clone())
    }
}

pub fn router(state: AppState) -> Router {
    let settings = state.settings.clone();
    let v1 = Router::new()
        .merge(applications::router())
        .merge(permits::router())
        .merge(optouts::router(settings.http.body_limit_bytes))
        .merge(audit::router())
        .merge(studies::router())
        .merge(node_tasks::router(settings.federation.max_update_bytes))
        .layer(middleware::from_fn_with_state(state.clone(), authenticate))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            audit_refusals,
        ));

    let mut app = Router::new()
        .merge(health::router())
        .merge(openapi::router())
        .nest("/v1", v1)
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "route_not_found", "no such route")
        });
    if state.dev.is_some() {
        app = app.merge(dev_oidc::router());
    }

    let cors = (!settings.http.cors_allowed_origins.is_empty()).then(|| {
        let origins: Vec<HeaderValue> = settings
            .http
            .cors_allowed_origins
            .iter()
            .filter_map(|o| o.parse().ok())
            .collect();
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                header::IF_MATCH,
            ])
            .expose_headers([header::ETAG, header::LOCATION, REQUEST_ID])
    });

    app.layer(DefaultBodyLimit::max(settings.http.body_limit_bytes))
        .layer(
            ServiceBuilder::new()
                .layer(SetSensitiveRequestHeadersLayer::new([header::AUTHORIZATION]))
                .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
                .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
                    let id = req.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("");
                    tracing::info_span!("request", method = %req.method(), uri = %req.uri().path(), request_id = %id)
                }).on_response(DefaultOnResponse::new().level(tracing::Level::INFO)))
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                .layer(CompressionLayer::new())
                .layer(TimeoutLayer::with_status_code(
                    StatusCode::REQUEST_TIMEOUT,
                    Duration::from_secs(settings.http.request_timeout_seconds),
                ))
                .option_layer(cors),
        )
        .with_state(state)
}

fn request_id(req: &Request) -> Option<String> {
    req.headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Validates the bearer token and makes the caller available to handlers.
async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .map(str::to_owned);
    let Some(token) = token else {
        return axum::response::IntoResponse::into_response(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "missing_token",
            "an `Authorization: Bearer <JWT>` header is required",
        ));
    };
    let principal: Principal = match state.auth.authenticate(&token).await {
        Ok(p) => p,
        Err(e) => return axum::response::IntoResponse::into_response(ApiError::unauthorized(e)),
    };
    let actor = principal.actor();
    let rid = request_id(&req);
    req.extensions_mut().insert(Caller {
        principal,
        request_id: rid,
    });
    let mut response = next.run(req).await;
    response.extensions_mut().insert(actor);
    response
}

/// Appends an audit entry for every refused request (4xx and 5xx problems): the change the
/// request attempted was rolled back, but the attempt itself is on the record.
async fn audit_refusals(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let path = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| req.uri().path().to_owned());
    let rid = request_id(&req);
    let response = next.run(req).await;
    let Some(problem) = response.extensions().get::<ProblemInfo>().cloned() else {
        return response;
    };
    let actor = response
        .extensions()
        .get::<Actor>()
        .cloned()
        .unwrap_or_else(Actor::anonymous);
    let status = response.status();
    let event = NewAuditEvent {
        actor,
        action: problem
            .action
            .map(str::to_owned)
            .unwrap_or_else(|| format!("http.{}", method.as_str().to_lowercase())),
        outcome: if status.is_server_error() {
            Outcome::Failure
        } else {
            Outcome::Denied
        },
        resource_type: problem.resource_type.unwrap_or("request").to_owned(),
        resource_id: problem.resource_id,
        permit_id: problem.permit_id,
        request_id: rid,
        http_status: Some(status.as_u16()),
        detail: serde_json::json!({ "code": problem.code, "detail": problem.detail, "method": method.as_str(), "path": path }),
    };
    let recorded = async {
        let mut tx = state.store.begin().await?;
        tx.append_audit(event).await?;
        tx.commit().await
    };
    if let Err(e) = recorded.await {
        // The refusal stands; failing to record it is itself an incident for the operators.
        tracing::error!(error = %e, "failed to audit a refused request");
    }
    response
}
