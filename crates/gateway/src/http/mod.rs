//! HTTP API. Each resource has its module with a `router()`; this module merges them and adds
//! the layers once: request id, tracing, body limit, timeout, compression, optional CORS,
//! authentication for `/v1`, and the auditing of every refusal.

pub mod applications;
pub mod audit;
pub mod catalogue;
pub mod dev_oidc;
pub mod error;
pub mod extract;
pub mod guard;
pub mod health;
pub mod metrics;
pub mod node_tasks;
pub mod openapi;
pub mod optouts;
pub mod permits;
pub mod register;
pub mod server;
pub mod statistics;
pub mod studies;
pub mod study_events;

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
    app::Requester,
    auth::{Authenticator, Principal},
    authz::{Action, Authorizer, Resource},
    configuration::Settings,
    federation::Federation,
    store::Store,
};
use ehds_core::{
    dev_issuer::DevIssuer,
    domain::{
        audit::{Actor, AuditSubject, NewAuditEvent},
        optout::PseudonymKey,
    },
};
use error::{ApiError, ProblemInfo};
use extract::Caller;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    /// How the HDAB runs the procedure on applications.
    pub procedure: Arc<crate::app::applications::ProcedureRules>,
    pub auth: Arc<Authenticator>,
    pub authz: Arc<Authorizer>,
    pub settings: Arc<Settings>,
    /// The URL the gateway is reached at: `public_url`, else the address it is bound to (the
    /// catalogue's IRIs are built on it).
    pub base_url: String,
    pub dev: Option<Arc<DevIssuer>>,
    pub pseudonym_key: PseudonymKey,
    /// The opt-out sets of recent match requests (every holder of a round asks for the same).
    pub optout_scopes: Arc<crate::app::optouts::ScopeCache>,
    pub federation: Arc<Federation>,
    pub unauthenticated: Arc<guard::UnauthenticatedLimits>,
    pub principals: Arc<guard::PrincipalLimits>,
    /// Signs the audit log's checkpoints (`GET /v1/audit/log/checkpoint`).
    pub log_signer: Arc<translog::NoteSigner>,
    /// Who may read `GET /metrics`.
    pub metrics_access: metrics::MetricsAccess,
}

impl AppState {
    /// The HDAB's small-cell rule for per-holder figures researchers see.
    pub fn small_cells(&self) -> ehds_core::domain::small_cell::SmallCellRule {
        ehds_core::domain::small_cell::SmallCellRule::new(
            self.settings.federation.small_cell_threshold,
        )
    }

    /// Asks the policies; a denial is a 403 that the refusal middleware audits.
    pub fn authorize(
        &self,
        caller: &Caller,
        action: Action,
        resource: &Resource<'_>,
    ) -> Result<(), ApiError> {
        if self.authz.is_allowed(&caller.principal, action, resource)? {
            return Ok(());
        }
        // A record the caller may not even read answers as if it did not exist, so ids cannot
        // be probed; the refusal is audited like any other.
        if let Some((read, kind, id)) = visibility(resource) {
            if read == action || !self.authz.is_allowed(&caller.principal, read, resource)? {
                return Err(ApiError::not_found(kind, id).action(action));
            }
        }
        Err(ApiError::forbidden(action))
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

/// One page of a list, the same for every kind of record: the `rows` read in `tx` for the
/// caller's scope (the store's pre-filter), each kept only if the policy lets the caller `read`
/// it, and the listing audited as one `list` entry with the number returned, in that
/// transaction. The caller was authorised for `list` before its query was parsed.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn list_visible<T, V>(
    state: &AppState,
    caller: &Caller,
    (list, read): (Action, Action),
    subject: AuditSubject,
    mut tx: Box<dyn crate::store::Tx>,
    rows: Vec<T>,
    resource: impl for<'a> Fn(&'a T) -> Resource<'a>,
    view: impl Fn(T) -> V,
) -> error::ApiResult<Vec<V>> {
    let mut visible = Vec::new();
    for row in rows {
        if state.allows(caller, read, &resource(&row))? {
            visible.push(view(row));
        }
    }
    crate::app::reads::record_list(&mut *tx, &caller.requester(), list, subject, visible.len())
        .await?;
    tx.commit().await?;
    Ok(visible)
}

/// The action that makes a record visible to a caller, with the record's kind and id.
fn visibility(resource: &Resource<'_>) -> Option<(Action, &'static str, String)> {
    match resource {
        Resource::Application(a) => {
            Some((Action::ApplicationRead, "application", a.id.to_string()))
        }
        Resource::Permit(p) => Some((Action::PermitRead, "permit", p.id().to_string())),
        Resource::Study(s) => Some((Action::StudyRead, "study", s.id.to_string())),
        Resource::Task(t) => Some((Action::NodeTask, "task", t.id.to_string())),
        Resource::StatisticsRun(r) => {
            Some((Action::StatisticsRead, "statistics run", r.id.to_string()))
        }
        Resource::Service
        | Resource::OptOutRegistry
        | Resource::AuditLog
        | Resource::CatalogueDataset(_) => None,
    }
}

impl Caller {
    /// The caller as the application services record them.
    pub fn requester(&self) -> Requester<'_> {
        Requester {
            principal: &self.principal,
            request_id: self.request_id.as_deref(),
        }
    }

    /// A success entry for this caller, to append in the same transaction as the change.
    pub fn audit(&self, action: Action, subject: AuditSubject) -> NewAuditEvent {
        self.requester().audit(action, subject)
    }
}

/// The API's `/v1` operations, behind authentication and the audit of refusals.
fn v1(state: &AppState) -> Router<AppState> {
    let settings = &state.settings;
    Router::new()
        .merge(applications::router())
        .merge(permits::router())
        .merge(optouts::router(settings.http.body_limit_bytes))
        .merge(catalogue::router())
        .merge(audit::router())
        .merge(studies::router())
        .merge(statistics::router())
        .merge(node_tasks::router(settings.federation.max_update_bytes))
        .layer(middleware::from_fn_with_state(state.clone(), authenticate))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            audit_refusals,
        ))
}

/// The API as the console calls it in process, with the signed-in user's token.
pub fn api(state: AppState) -> Router {
    Router::new()
        .nest("/v1", v1(&state))
        .layer(DefaultBodyLimit::max(state.settings.http.body_limit_bytes))
        .with_state(state)
}

/// The API and the public documents (health, metrics, the contract, the register and the
/// catalogue), and the answer to any other path. Front ends are mounted beside it
/// (`startup`), then [`layers`] wraps them all.
pub fn router(state: AppState) -> Router {
    let mut app = Router::new()
        .merge(health::router())
        .merge(metrics::router(state.clone()))
        .merge(openapi::router())
        .merge(register::router())
        .merge(catalogue::public_router())
        .nest("/v1", v1(&state))
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "route_not_found", "no such route")
        });
    if state.dev.is_some() {
        app = app.merge(dev_oidc::router());
    }
    app.with_state(state)
}

/// What every request and answer passes through, the console's included: request metrics,
/// CORS, the body limit, head checks, request ids, tracing, compression and the request
/// timeout.
pub fn layers(app: Router, settings: &Settings) -> Router {
    let app = app.route_layer(middleware::from_fn(metrics::record_request));

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
                .layer(SetSensitiveRequestHeadersLayer::new([header::AUTHORIZATION, header::COOKIE]))
                .layer(middleware::from_fn_with_state(
                    settings.http.max_header_bytes,
                    check_request_head,
                ))
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
}

/// Appends the counts of refusals held back from the audit trail in the last minute, if any.
pub async fn record_refusal_summary(state: &AppState) -> anyhow::Result<()> {
    let counts = state.unauthenticated.take_summary();
    crate::app::refusals::record_refusal_summary(state.store.as_ref(), &counts, 60).await?;
    Ok(())
}

fn request_id(req: &Request) -> Option<String> {
    req.headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Refuses request heads over the configured size with a problem document (hyper itself only
/// answers a bare 431 beyond its larger read buffer), and drops a client-supplied request id that
/// is not well formed, so that the layer after this one generates a fresh one.
async fn check_request_head(
    State(max_header_bytes): State<usize>,
    mut req: Request,
    next: Next,
) -> Response {
    if guard::head_bytes(&req) > max_header_bytes {
        return axum::response::IntoResponse::into_response(ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "header_too_large",
            format!("the request head exceeds {max_header_bytes} bytes"),
        ));
    }
    let ids = req.headers().get_all(&REQUEST_ID);
    let mut ids_iter = ids.iter();
    let keep = match (ids_iter.next(), ids_iter.next()) {
        (Some(one), None) => guard::is_well_formed_request_id(one),
        _ => false,
    };
    if !keep {
        req.headers_mut().remove(&REQUEST_ID);
    }
    next.run(req).await
}

/// The bearer token of a request: exactly one `Authorization` header whose scheme is `Bearer`
/// in any case (RFC 9110 §11.1).
fn bearer_token(req: &Request) -> Result<&str, ApiError> {
    let mut values = req.headers().get_all(header::AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return Err(match req.headers().contains_key(header::AUTHORIZATION) {
            true => ApiError::new(
                StatusCode::BAD_REQUEST,
                "duplicate_authorization",
                "a request may carry one `Authorization` header",
            ),
            false => ApiError::new(
                StatusCode::UNAUTHORIZED,
                "missing_token",
                "an `Authorization: Bearer <JWT>` header is required",
            ),
        });
    };
    let value = value.to_str().unwrap_or("");
    let token = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|token| !token.is_empty());
    token.ok_or_else(|| {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "missing_token",
            "an `Authorization: Bearer <JWT>` header is required",
        )
    })
}

/// Validates the bearer token and makes the caller available to handlers. A source that keeps
/// sending requests without valid credentials is answered 429 (held, then the connection
/// closed) until its quota refills.
async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let verified = match bearer_token(&req) {
        Ok(token) => state
            .auth
            .authenticate(token)
            .await
            .map_err(ApiError::unauthorized),
        Err(e) => Err(e),
    };
    let principal: Principal = match verified {
        Ok(p) => p,
        Err(refusal) => {
            let ip = guard::client_ip(&req, &state.settings.http);
            let refusal = match state.unauthenticated.charge_source(ip) {
                guard::SourceVerdict::Refuse => refusal,
                guard::SourceVerdict::Throttle => {
                    state.unauthenticated.hold_throttled().await;
                    ApiError::new(
                        StatusCode::TOO_MANY_REQUESTS,
                        "too_many_unauthenticated_requests",
                        "too many requests without valid credentials from this address; retry later",
                    )
                    .with_header(header::RETRY_AFTER, HeaderValue::from_static("60"))
                    // A new connection costs the client a handshake; keeping this one would
                    // let it queue the next request at once.
                    .with_header(header::CONNECTION, HeaderValue::from_static("close"))
                }
            };
            return axum::response::IntoResponse::into_response(refusal);
        }
    };
    if let Err(wait) = state.principals.charge(&principal.sub) {
        // not audited one by one (a runaway client would grow the trail at its own pace):
        // counted into the minute's summary entry, as throttled sources are
        let refusal = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            format!(
                "more requests from this caller than its quota of {} a second allows; retry after {wait} s",
                state.settings.http.per_principal_per_second
            ),
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from(wait));
        return axum::response::IntoResponse::into_response(refusal);
    }
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
    let status = response.status();
    let actor = match response.extensions().get::<Actor>() {
        Some(actor) => actor.clone(),
        None => {
            // Nobody vouches for this caller: its refusals are audited within the quotas only.
            if status == StatusCode::TOO_MANY_REQUESTS {
                state.unauthenticated.count(problem.code);
                return response;
            }
            if !state.unauthenticated.audit_individually(problem.code) {
                return response;
            }
            Actor::anonymous()
        }
    };
    record_refusal(&state, actor, method.as_str(), &path, rid, status, problem).await;
    response
}

/// Appends the audit entry of one refused request in its own transaction (the change it
/// attempted was rolled back). The API's refusal middleware and the console's own refusals
/// (a missing CSRF token) share it.
pub(crate) async fn record_refusal(
    state: &AppState,
    actor: Actor,
    method: &str,
    path: &str,
    request_id: Option<String>,
    status: StatusCode,
    problem: ProblemInfo,
) {
    let refused = crate::app::refusals::RefusedRequest {
        actor,
        action: problem.action,
        method,
        path,
        request_id,
        status: status.as_u16(),
        code: problem.code,
        detail: &problem.detail,
        resource_type: problem.resource_type,
        resource_id: problem.resource_id,
        permit_id: problem.permit_id,
    };
    let recorded = crate::app::refusals::record_refusal(state.store.as_ref(), refused);
    if let Err(e) = recorded.await {
        // The refusal stands; failing to record it is itself an incident for the operators.
        tracing::error!(error = %e, "failed to audit a refused request");
    }
}
