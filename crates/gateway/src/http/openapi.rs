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
        domain::study_request::StudyRefusal, crate::app::audit_exports::ExportFormat,
        crate::app::audit::InclusionProof, crate::app::audit::ConsistencyProof,
        study_events::StudyProgress,
    )),
    modifiers(&BearerAuth, &OperationIds, &ProblemResponses, &StatusLists, &QueryStrings, &ResponseDescriptions),
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

/// Every operation of the document, with its method: what the modifiers below walk.
fn operations_mut(
    openapi: &mut utoipa::openapi::OpenApi,
) -> impl Iterator<Item = (&'static str, &mut utoipa::openapi::path::Operation)> {
    openapi.paths.paths.values_mut().flat_map(|item| {
        [
            ("get", &mut item.get),
            ("put", &mut item.put),
            ("post", &mut item.post),
            ("delete", &mut item.delete),
            ("patch", &mut item.patch),
        ]
        .into_iter()
        .filter_map(|(method, operation)| operation.as_mut().map(|o| (method, o)))
    })
}

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
        for (_, operation) in operations_mut(openapi) {
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

/// Every refusal the server can give, on every operation. Most come from the layers in front of
/// the handlers (the request head and query checks, authentication and its throttling, body
/// limits, the request timeout, the database's state), so they are the same for every operation
/// of a kind; a handler's own attribute documents the refusals particular to it. Every 4xx and
/// 5xx is a problem document (RFC 9457), `application/problem+json`.
struct ProblemResponses;

impl ProblemResponses {
    fn problem(status: u16) -> utoipa::openapi::RefOr<utoipa::openapi::Response> {
        let description = match status {
            400 => "Malformed request: query, headers or parameters (problem `code` says which)",
            401 => "Missing, invalid or expired bearer token",
            403 => "The caller's roles or policies do not allow this",
            404 => "No such record, or one the caller may not read",
            408 => "The request took longer than the server waits",
            409 => "The record's state does not allow this now, or it changed concurrently",
            412 => "The record changed since the caller read it (If-Match)",
            413 => "Body over the size limit",
            415 => "Body not in a media type this operation accepts",
            422 => "Body well-formed but invalid (`errors` lists every problem by path)",
            429 => "Too many requests; retry after `Retry-After` seconds",
            431 => "Request head over the size limit",
            500 => "Internal error (logged with the request id)",
            503 => "The database cannot take the request now (`database_unavailable`, `storage_full`, `storage_read_only`); retry after `Retry-After` seconds",
            _ => "Refused",
        };
        let content = utoipa::openapi::ContentBuilder::new()
            .schema(Some(utoipa::openapi::Ref::from_schema_name("Problem")))
            .build();
        utoipa::openapi::ResponseBuilder::new()
            .description(description)
            .content(PROBLEM, content)
            .build()
            .into()
    }
}

const PROBLEM: &str = "application/problem+json";

impl Modify for ProblemResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{path::ParameterIn, RefOr};
        for (method, operation) in operations_mut(openapi) {
            for (status, response) in operation.responses.responses.iter_mut() {
                if let (true, RefOr::T(response)) =
                    (status.starts_with('4') || status.starts_with('5'), response)
                {
                    if let Some(body) = response.content.shift_remove("application/json") {
                        response.content.insert(PROBLEM.to_owned(), body);
                    }
                }
            }
            // an operation whose every security alternative names a scheme needs a token
            let secured = operation.security.as_ref().is_some_and(|alternatives| {
                !alternatives.is_empty()
                    && alternatives
                        .iter()
                        .all(|r| serde_json::to_value(r).is_ok_and(|v| v != serde_json::json!({})))
            });
            let by_id = operation
                .parameters
                .iter()
                .flatten()
                .any(|p| matches!(p, RefOr::T(p) if p.parameter_in == ParameterIn::Path));
            let mut statuses = vec![400, 408, 431, 500, 503];
            if secured {
                statuses.extend([401, 403, 429]);
            }
            // a record named in the path, or in the body (a permit a filter runs under)
            if by_id || secured {
                statuses.push(404);
            }
            if operation.request_body.is_some() {
                statuses.extend([413, 415, 422]);
            }
            if method != "get" {
                statuses.push(409);
            }
            for status in statuses {
                operation
                    .responses
                    .responses
                    .entry(status.to_string())
                    .or_insert_with(|| Self::problem(status));
            }
        }
    }
}

/// The `status` filters of the lists take comma-separated state names: their schemas name the
/// states, from the domain's own lists.
struct StatusLists;

impl Modify for StatusLists {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use ehds_core::domain::{application::ApplicationStatus, statistics::RunStatus};
        use utoipa::openapi::{RefOr, Schema};
        let lists = [
            (
                "/v1/applications",
                ApplicationStatus::ALL.map(|s| s.as_str()).to_vec(),
            ),
            (
                "/v1/statistics",
                RunStatus::ALL.map(|s| s.as_str()).to_vec(),
            ),
        ];
        for (path, names) in lists {
            let one = format!("(?:{})?", names.join("|"));
            let pattern = format!("^{one}(?:,{one})*$");
            let operation = openapi
                .paths
                .paths
                .get_mut(path)
                .and_then(|i| i.get.as_mut());
            for parameter in operation
                .into_iter()
                .flat_map(|o| o.parameters.iter_mut().flatten())
            {
                if let RefOr::T(p) = parameter {
                    if let (true, Some(RefOr::T(Schema::Object(schema)))) =
                        (p.name == "status", p.schema.as_mut())
                    {
                        schema.pattern = Some(pattern.clone());
                    }
                }
            }
        }
    }
}

/// Every query parameter that is free text refuses control characters (`400
/// control_character`, `http::extract`): its schema says so with a pattern.
struct QueryStrings;

impl Modify for QueryStrings {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{
            path::ParameterIn,
            schema::{SchemaType, Type},
            RefOr, Schema,
        };
        for (_, operation) in operations_mut(openapi) {
            for parameter in operation.parameters.iter_mut().flatten() {
                let RefOr::T(parameter) = parameter else {
                    continue;
                };
                if parameter.parameter_in != ParameterIn::Query {
                    continue;
                }
                let Some(RefOr::T(Schema::Object(schema))) = parameter.schema.as_mut() else {
                    continue;
                };
                let text = match &schema.schema_type {
                    SchemaType::Type(t) => *t == Type::String,
                    SchemaType::Array(ts) => ts.contains(&Type::String),
                    SchemaType::AnyValue => false,
                };
                if text
                    && schema.format.is_none()
                    && schema.enum_values.is_none()
                    && schema.pattern.is_none()
                {
                    schema.pattern = Some(NO_CONTROL_CHARACTERS.to_owned());
                }
            }
        }
    }
}

/// Text without C0 or C1 control characters (ECMA-262 regular expression, as JSON Schema uses).
const NO_CONTROL_CHARACTERS: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$";

/// OpenAPI 3.1 requires a description on every response; a response the handler's attribute
/// does not describe gets its status code's reason phrase ("Not Found", "Conflict").
struct ResponseDescriptions;

impl Modify for ResponseDescriptions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (_, operation) in operations_mut(openapi) {
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

/// The document as served: what the handlers declare, with the adjustments below made on its
/// JSON (utoipa's types cannot hold all of them).
pub fn spec() -> serde_json::Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the OpenAPI document serialises");
    merge_tagged_variants(&mut doc);
    refuse_control_characters_in_bodies(&mut doc);
    link_created_records(&mut doc);
    doc
}

/// What a client can do next with the record an operation returns: OpenAPI links from the
/// answer that names a record (its id, at `pointer` in the body) to the operations on it, so
/// that generated clients and stateful testers follow the workflow the way a user does (file an
/// application, decide it, use the permit, run a study on it).
const LINKS: &[(&str, &str, &str, &[&str])] = &[
    (
        "applications_create",
        "201",
        "/id",
        &[
            "applications_read",
            "applications_submit",
            "applications_withdraw",
            "applications_request_information",
            "applications_decide",
            "register_read",
        ],
    ),
    (
        "applications_decide",
        "200",
        "/permit/id",
        &[
            "permits_read",
            "permits_versions",
            "permits_check_permit",
            "permits_amend",
            "permits_suspend",
            "statistics_create",
        ],
    ),
    (
        "studies_create",
        "201",
        "/id",
        &[
            "studies_read",
            "studies_rounds",
            "studies_events",
            "studies_cancel",
        ],
    ),
    ("studies_read", "200", "/permit_id", &["permits_read"]),
    (
        "opt_outs_register",
        "201",
        "/record_id",
        &["opt_outs_read", "opt_outs_withdraw"],
    ),
    (
        "catalogue_publish",
        "201",
        "/id",
        &[
            "catalogue_read_dataset",
            "catalogue_new_version",
            "catalogue_withdraw",
        ],
    ),
    (
        "statistics_create",
        "201",
        "/id",
        &["statistics_read", "statistics_review"],
    ),
];

fn link_created_records(doc: &mut serde_json::Value) {
    use serde_json::{json, Value};
    let mut by_id = std::collections::BTreeMap::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, ops) in paths {
            for (method, op) in ops.as_object().into_iter().flatten() {
                if let Some(id) = op["operationId"].as_str() {
                    by_id.insert(id.to_owned(), (path.clone(), method.clone()));
                }
            }
        }
    }
    for (from, status, pointer, targets) in LINKS {
        let (path, method) = by_id
            .get(*from)
            .unwrap_or_else(|| panic!("link source {from} is an operation"));
        let links: serde_json::Map<String, Value> = targets
            .iter()
            .map(|to| {
                assert!(by_id.contains_key(*to), "link target {to} is an operation");
                (
                    to.to_string(),
                    json!({
                        "operationId": to,
                        "parameters": {"path.id": format!("$response.body#{pointer}")},
                    }),
                )
            })
            .collect();
        let response = &mut doc["paths"][path][method]["responses"][*status];
        assert!(response.is_object(), "{from} answers {status}");
        response["links"] = Value::Object(links);
    }
}

/// Internally tagged enums (serde `tag = "name"`) come out as `allOf: [{$ref: X}, {name}]` per
/// variant. When X refuses unknown fields (`additionalProperties: false`) no instance satisfies
/// both, since the tag is unknown to X: validators and generated clients would refuse every
/// request the server accepts. Each such branch is written as the one object it means: X's
/// properties and required fields with the tag's, still closed to others.
fn merge_tagged_variants(doc: &mut serde_json::Value) {
    use serde_json::Value;
    let schemas = doc["components"]["schemas"].clone();
    fn walk(v: &mut Value, schemas: &Value) {
        match v {
            Value::Object(map) => {
                let merged = map
                    .get("allOf")
                    .and_then(Value::as_array)
                    .and_then(|parts| {
                        let [first, tag] = parts.as_slice() else {
                            return None;
                        };
                        let name = first
                            .get("$ref")?
                            .as_str()?
                            .strip_prefix("#/components/schemas/")?;
                        let target = schemas.get(name)?;
                        if target.get("additionalProperties") != Some(&Value::Bool(false))
                            || tag.get("$ref").is_some()
                            || tag.get("properties").is_none()
                        {
                            return None;
                        }
                        let mut out = target.clone();
                        let props = out["properties"].as_object_mut().map(std::mem::take);
                        let mut props = props.unwrap_or_default();
                        if let Some(extra) = tag["properties"].as_object() {
                            props.extend(extra.clone());
                        }
                        out["properties"] = Value::Object(props);
                        let mut required: Vec<Value> =
                            out["required"].as_array().cloned().unwrap_or_default();
                        for r in tag["required"].as_array().into_iter().flatten() {
                            if !required.contains(r) {
                                required.push(r.clone());
                            }
                        }
                        out["required"] = Value::Array(required);
                        out["type"] = Value::from("object");
                        Some(out)
                    });
                if let Some(mut merged) = merged {
                    map.remove("allOf");
                    if let (Some(m), Value::Object(rest)) =
                        (merged.as_object_mut(), Value::Object(std::mem::take(map)))
                    {
                        m.extend(rest);
                    }
                    *v = merged;
                }
                if let Value::Object(map) = v {
                    map.values_mut().for_each(|c| walk(c, schemas));
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|c| walk(c, schemas)),
            _ => {}
        }
    }
    walk(doc, &schemas);
}

/// Every string of every JSON body refuses C0 and C1 control characters other than tab, line
/// feed and carriage return, in values and in keys (`422 control_character`, `http::extract`):
/// each free-text string and each object of a request body's schemas says so. Schemas only
/// ever sent (the problem document, which may quote a refused key) are left alone.
fn refuse_control_characters_in_bodies(doc: &mut serde_json::Value) {
    use serde_json::Value;
    use std::collections::BTreeSet;
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                if let Some(name) = map
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/components/schemas/"))
                {
                    out.push(name.to_owned());
                }
                map.values().for_each(|c| refs(c, out));
            }
            Value::Array(items) => items.iter().for_each(|c| refs(c, out)),
            _ => {}
        }
    }
    // the component schemas a request body reaches
    let mut pending = Vec::new();
    for item in doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|p| p.values())
    {
        for operation in item.as_object().into_iter().flat_map(|m| m.values()) {
            if let Some(body) = operation.get("requestBody") {
                refs(body, &mut pending);
            }
        }
    }
    let mut requested = BTreeSet::new();
    while let Some(name) = pending.pop() {
        if requested.insert(name.clone()) {
            refs(&doc["components"]["schemas"][&name], &mut pending);
        }
    }
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                let object = match map.get("type") {
                    Some(Value::String(t)) => t == "object",
                    Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
                    _ => false,
                };
                if object && !map.contains_key("propertyNames") {
                    map.insert(
                        "propertyNames".into(),
                        serde_json::json!({"pattern": NO_CONTROL_CHARACTERS_IN_TEXT}),
                    );
                }
                let text = match map.get("type") {
                    Some(Value::String(t)) => t == "string",
                    Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                    _ => false,
                };
                if text
                    && !map.contains_key("format")
                    && !map.contains_key("enum")
                    && !map.contains_key("const")
                    && !map.contains_key("pattern")
                {
                    map.insert("pattern".into(), Value::from(NO_CONTROL_CHARACTERS_IN_TEXT));
                }
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    if let Some(schemas) = doc["components"]["schemas"].as_object_mut() {
        for (name, schema) in schemas.iter_mut() {
            if requested.contains(name) {
                walk(schema);
            }
        }
    }
    if let Some(paths) = doc["paths"].as_object_mut() {
        for item in paths.values_mut() {
            for operation in item
                .as_object_mut()
                .into_iter()
                .flat_map(|m| m.values_mut())
            {
                if let Some(body) = operation.get_mut("requestBody") {
                    walk(body);
                }
            }
        }
    }
}

/// Text without C0 or C1 control characters but tab, line feed and carriage return.
const NO_CONTROL_CHARACTERS_IN_TEXT: &str =
    "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F-\\u009F]*$";

pub fn spec_json() -> String {
    serde_json::to_string_pretty(&spec()).expect("the OpenAPI document serialises") + "\n"
}

/// `/openapi.json` and the reference page at `/docs`. The page's assets (Swagger UI, from the
/// `utoipa-swagger-ui-vendored` crate) are embedded in the binary: it works on networks that
/// cannot reach the internet.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/openapi.json", get(|| async { Json(spec()) }))
        .merge(SwaggerUi::new("/docs").external_url_unchecked("/docs/openapi.json", spec()))
}
