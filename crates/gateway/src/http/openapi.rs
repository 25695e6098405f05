//! The OpenAPI 3.1 document, generated from the handlers, served at `/openapi.json` with a
//! reference page at `/docs` whose assets are embedded. `openapi/openapi.json` in the repository is this document; a test
//! fails when they drift.

use axum::{http::StatusCode, routing::get, Json, Router};
use utoipa::{
    openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    Modify, OpenApi,
};
use utoipa_swagger_ui::SwaggerUi;

use super::{
    applications, audit, catalogue, error, health, metrics, node_tasks, optouts, permits, register,
    statistics, studies, study_events, AppState,
};
use ehds_core::domain;

#[derive(OpenApi)]
#[openapi(
    info(title = "ehds-gateway", description = "Governance gateway for federated learning under the European Health Data Space regulation (EU) 2025/327: data access applications, data permits, the Art. 71 opt-out registry, federated studies whose every round passes the governance check, and a hash-chained audit trail kept as a verifiable log (signed Merkle-tree checkpoints, inclusion and consistency proofs)."),
    paths(
        health::healthz, health::readyz, metrics::scrape,
        applications::create, applications::list, applications::read, applications::submit,
        applications::request_information, applications::answer_information, applications::confirm_complete,
        applications::extend, applications::route_to_trusted_holder, applications::send_fee_estimate,
        applications::accept_fee_estimate, applications::decide, applications::confirm_grant,
        applications::publish, applications::withdraw, applications::propose_conversion,
        applications::accept_conversion,
        permits::list, permits::read, permits::versions, permits::suspend, permits::reinstate, permits::revoke,
        permits::amend, permits::extend, permits::check_permit,
        optouts::register, optouts::read, optouts::withdraw, optouts::import, optouts::filter,
        optouts::match_opt_outs,
        audit::events, audit::verify, audit::records_of_processing,
        audit::log_checkpoint, audit::log_key, audit::log_inclusion, audit::log_consistency,
        studies::create, studies::list, studies::read, studies::rounds, studies::cancel, studies::model,
        study_events::events,
        node_tasks::fetch, node_tasks::parameters, node_tasks::result,
        node_tasks::secagg_view, node_tasks::secagg_submit,
        register::list, register::read, register::feed,
        statistics::create, statistics::list, statistics::read, statistics::review,
        statistics::statistics_tasks, statistics::statistics_result,
        catalogue::publish, catalogue::new_version, catalogue::withdraw,
        catalogue::read_catalogue, catalogue::read_dataset,
    ),
    components(schemas(
        error::Problem, domain::FieldError, domain::Purpose, domain::DataCategory,
        domain::audit::AuditEntry, domain::audit::VerifyReport, domain::check::DenyReason,
        domain::study_request::StudyRefusal, audit::ExportFormat,
        audit::InclusionProof, audit::ConsistencyProof, study_events::StudyProgress,
    )),
    modifiers(&BearerAuth, &OperationIds, &ResponseDescriptions),
    tags(
        (name = "applications", description = "Data access applications (Art. 67-68)"),
        (name = "register", description = "The public register (Art. 57(1)(j), 58): no authentication"),
        (name = "catalogue", description = "The Art. 77 dataset catalogue in HealthDCAT-AP: data holders publish; reading is public (JSON-LD or Turtle)"),
        (name = "permits", description = "Data permits and their lifecycle (Art. 63, 68)"),
        (name = "opt-outs", description = "The opt-out registry (Art. 71)"),
        (name = "audit", description = "Audit trail (GDPR Art. 30, EHDS Art. 73)"),
        (name = "studies", description = "Federated studies run under a permit"),
        (name = "statistics", description = "Statistics answered by the federation under output checking (Art. 69)"),
        (name = "node", description = "The data-holder node protocol"),
        (name = "operations", description = "Health, readiness and metrics"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        // the static token Prometheus presents at `/metrics` (`metrics.bearer_token_file`)
        components.add_security_scheme(
            "metrics_token",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Operation ids must be unique in a document (clients name their methods after them), but the
/// handlers are named per resource module (`permits::read`, `optouts::read`): each id is prefixed
/// with its operation's tag, e.g. `permits_read`.
struct OperationIds;

impl Modify for OperationIds {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                let tag = operation
                    .tags
                    .as_ref()
                    .and_then(|t| t.first())
                    .map(|t| t.replace('-', "_"));
                if let (Some(tag), Some(id)) = (tag, operation.operation_id.as_mut()) {
                    *id = format!("{tag}_{id}");
                }
            }
        }
    }
}

/// OpenAPI 3.1 requires a description on every response; a response the handler's attribute
/// does not describe gets its status code's reason phrase ("Not Found", "Conflict").
struct ResponseDescriptions;

impl Modify for ResponseDescriptions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                for (status, response) in operation.responses.responses.iter_mut() {
                    if let utoipa::openapi::RefOr::T(response) = response {
                        if response.description.is_empty() {
                            response.description = status
                                .parse::<u16>()
                                .ok()
                                .and_then(|s| StatusCode::from_u16(s).ok())
                                .and_then(|s| s.canonical_reason())
                                .unwrap_or("Response")
                                .to_owned();
                        }
                    }
                }
            }
        }
    }
}

pub fn spec() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

pub fn spec_json() -> String {
    spec()
        .to_pretty_json()
        .expect("the OpenAPI document serialises")
        + "\n"
}

/// `/openapi.json` and the reference page at `/docs`. The page's assets (Swagger UI, from the
/// `utoipa-swagger-ui-vendored` crate) are embedded in the binary: it works on networks that
/// cannot reach the internet.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/openapi.json", get(|| async { Json(spec()) }))
        .merge(SwaggerUi::new("/docs").url("/docs/openapi.json", spec()))
}
