//! The console's screens. Each handler reads or changes through the API as the signed-in user
//! (`Console::call`) and renders what came back; a problem the API answered is shown in place
//! with the API's status, and a form's field errors next to its fields.

use std::sync::LazyLock;

use axum::{
    extract::{Path, Query, RawForm, State},
    http::{header, HeaderValue, Method, StatusCode},
    response::{IntoResponse, Redirect, Response},
};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use super::{
    render,
    session::{check_csrf, Form, Session},
    ApiReply, Console, BASE,
};
use ehds_core::domain::{application::ResearchFlag, category::DataCategory, purpose::Purpose};

const PAGE: u64 = 50;

/// The context every signed-in page starts from.
fn context(session: &Session, title: &str) -> Map<String, Value> {
    let mut c = Map::new();
    c.insert("title".into(), json!(title));
    c.insert("user".into(), session.user());
    c.insert("csrf".into(), json!(session.csrf));
    c.insert("v".into(), json!(*super::assets::VERSION));
    c
}

fn page(status: StatusCode, template: &str, c: Map<String, Value>) -> Response {
    render(status, template, Value::Object(c))
}

/// A page for a problem the API answered on a read.
fn problem_page(session: &Session, reply: &ApiReply) -> Response {
    let mut c = context(session, "Refused");
    let problem = reply.problem();
    c.insert("status".into(), json!(reply.status.as_u16()));
    c.insert("code".into(), problem["code"].clone());
    c.insert("detail".into(), problem["detail"].clone());
    c.insert("details".into(), problem);
    page(reply.status, "error.html", c)
}

async fn get(console: &Console, session: &Session, path: &str) -> Result<ApiReply, Response> {
    let reply = console
        .call(
            &session.token,
            session.request_id.as_ref(),
            Method::GET,
            path,
            None,
            &[],
        )
        .await?;
    if !reply.ok() {
        return Err(problem_page(session, &reply));
    }
    Ok(reply)
}

async fn post(
    console: &Console,
    session: &Session,
    path: &str,
    body: &Value,
    extra: &[(header::HeaderName, String)],
) -> Result<ApiReply, Response> {
    console
        .call(
            &session.token,
            session.request_id.as_ref(),
            Method::POST,
            path,
            Some(body),
            extra,
        )
        .await
}

fn see_other(path: &str) -> Response {
    Redirect::to(path).into_response()
}

/// The unknown-page answer of the console.
pub async fn not_found() -> Response {
    render(
        StatusCode::NOT_FOUND,
        "error.html",
        json!({"title": "Not found", "status": 404, "code": "route_not_found",
               "detail": "no such page in the console", "v": *super::assets::VERSION}),
    )
}

#[derive(serde::Deserialize)]
pub struct Paging {
    offset: Option<u64>,
}

fn paging(c: &mut Map<String, Value>, offset: u64, shown: usize) {
    c.insert("offset".into(), json!(offset));
    c.insert(
        "prev".into(),
        json!((offset > 0).then(|| offset.saturating_sub(PAGE))),
    );
    c.insert(
        "next".into(),
        json!((shown as u64 >= PAGE).then_some(offset + PAGE)),
    );
}

pub async fn home(State(console): State<Console>, session: Session) -> Response {
    let mut c = context(&session, "Overview");
    if session.principal.has(crate::auth::Role::HdabOfficer) {
        if let Ok(reply) = get(
            &console,
            &session,
            "/v1/applications?limit=200&status=submitted,assessing,awaiting_confirmation",
        )
        .await
        {
            let waiting = reply.body.as_array().map_or(0, |a| a.len());
            c.insert("waiting".into(), json!(waiting));
        }
    }
    page(StatusCode::OK, "home.html", c)
}

// ---------------------------------------------------------------- applications

/// Adds the deadline the application's state runs against (the API computes it: the Art. 68
/// decision, an answer to a request for information, the publication) and the days left.
fn with_deadline(mut application: Value, now: DateTime<Utc>) -> Value {
    let due = application["clocks"]["next_due"]
        .as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|d| d.with_timezone(&Utc));
    if let Some(due) = due {
        application["decision_due"] = json!(due.format("%Y-%m-%d").to_string());
        application["days_left"] = json!((due - now).num_days());
    }
    application
}

pub async fn applications(
    State(console): State<Console>,
    session: Session,
    Query(p): Query<Paging>,
) -> Response {
    let offset = p.offset.unwrap_or(0);
    let reply = match get(
        &console,
        &session,
        &format!("/v1/applications?limit={PAGE}&offset={offset}"),
    )
    .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    let now = Utc::now();
    let mut items: Vec<Value> = reply
        .body
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|a| with_deadline(a, now))
        .collect();
    // The queue first, the nearest deadline on top; the others after it.
    items.sort_by(|a, b| {
        let open = |x: &Value| x["decision_due"].is_null();
        (open(a), a["decision_due"].as_str()).cmp(&(open(b), b["decision_due"].as_str()))
    });
    let mut c = context(&session, "Applications");
    paging(&mut c, offset, items.len());
    c.insert("applications".into(), Value::Array(items));
    page(StatusCode::OK, "applications.html", c)
}

pub async fn application(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<String>,
) -> Response {
    application_page(
        &console,
        &session,
        &id,
        StatusCode::OK,
        json!({}),
        json!({}),
        None,
    )
    .await
}

async fn application_page(
    console: &Console,
    session: &Session,
    id: &str,
    status: StatusCode,
    errors: Value,
    values: Value,
    problem: Option<Value>,
) -> Response {
    let reply = match get(console, session, &format!("/v1/applications/{}", enc(id))).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    let mut c = context(session, "Application");
    c.insert("application".into(), with_deadline(reply.body, Utc::now()));
    c.insert("errors".into(), errors);
    c.insert("values".into(), values);
    c.insert("problem".into(), problem.unwrap_or(Value::Null));
    page(status, "application.html", c)
}

pub async fn decide(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<String>,
    raw: RawForm,
) -> Response {
    let form = Form::parse(&raw);
    let path = format!("{BASE}/applications/{id}/decision");
    if let Err(r) = check_csrf(&console, &session, &form, &path).await {
        return r;
    }
    let mut body = Map::new();
    if let Some(d) = form.get("decision") {
        body.insert("decision".into(), json!(d));
    }
    for field in ["reason", "conditions", "dp_requirement"] {
        if let Some(v) = form.get(field) {
            body.insert(field.into(), json!(v));
        }
    }
    if form.get("grant_optout_exception").is_some() {
        body.insert("grant_optout_exception".into(), json!(true));
    }
    let reply = match post(
        &console,
        &session,
        &format!("/v1/applications/{}/decision", enc(&id)),
        &Value::Object(body),
        &[],
    )
    .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    if reply.ok() {
        return match reply.body["permit"]["id"].as_str() {
            Some(permit) => see_other(&format!("{BASE}/permits/{}", enc(permit))),
            None => see_other(&format!("{BASE}/applications/{}", enc(&id))),
        };
    }
    application_page(
        &console,
        &session,
        &id,
        reply.status,
        reply.field_errors(),
        form.values(),
        Some(reply.problem()),
    )
    .await
}

/// The steps of the procedure the application page offers: the form's fields become the API
/// body, the API decides whether the step is allowed (docs/hdab-procedure.md).
const STEPS: [(&str, &str); 11] = [
    ("submit", "submit"),
    ("information-requests", "information-requests"),
    ("information", "information"),
    ("completeness", "completeness"),
    ("extension", "extension"),
    ("fee-acceptance", "fee-estimate/acceptance"),
    ("confirmation", "confirmation"),
    ("publication", "publication"),
    ("withdraw", "withdraw"),
    ("conversion-proposal", "conversion-proposal"),
    ("conversion", "conversion"),
];

pub async fn application_step(
    State(console): State<Console>,
    session: Session,
    Path((id, step)): Path<(String, String)>,
    raw: RawForm,
) -> Response {
    let form = Form::parse(&raw);
    let path = format!("{BASE}/applications/{id}/step/{step}");
    if let Err(r) = check_csrf(&console, &session, &form, &path).await {
        return r;
    }
    let Some((_, api)) = STEPS.iter().find(|(name, _)| *name == step) else {
        return not_found().await;
    };
    let mut body = Map::new();
    for field in ["questions", "answer", "reasons", "reason"] {
        if let Some(v) = form.get(field) {
            body.insert(field.into(), json!(v));
        }
    }
    if let Some(months) = form.get("months") {
        body.insert(
            "months".into(),
            months
                .trim()
                .parse::<u32>()
                .map_or(json!(months), |m| json!(m)),
        );
    }
    if let Some(confirm) = form.get("confirm") {
        body.insert("confirm".into(), json!(confirm == "true"));
    }
    if let Some(statistics) = form.get("statistics") {
        // the declared statistics as JSON; text that is not JSON goes to the API as it is,
        // which names the problem
        body.insert(
            "statistics".into(),
            serde_json::from_str(statistics).unwrap_or_else(|_| json!(statistics)),
        );
    }
    let reply = match post(
        &console,
        &session,
        &format!("/v1/applications/{}/{api}", enc(&id)),
        &Value::Object(body),
        &[],
    )
    .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    if reply.ok() {
        return match reply.body["permit"]["id"].as_str() {
            Some(permit) => see_other(&format!("{BASE}/permits/{}", enc(permit))),
            None => see_other(&format!("{BASE}/applications/{}", enc(&id))),
        };
    }
    application_page(
        &console,
        &session,
        &id,
        reply.status,
        reply.field_errors(),
        form.values(),
        Some(reply.problem()),
    )
    .await
}

/// The lists a form offers, from the domain's own enumerations.
fn vocabulary() -> Value {
    json!({
        "purposes": Purpose::ALL.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        "categories": DataCategory::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        "research_flags": ResearchFlag::ALL,
        "strategies": *STRATEGIES,
    })
}

/// The federated methods a study may name, read from the API's own schema of the strategy.
static STRATEGIES: LazyLock<Vec<String>> = LazyLock::new(|| {
    let spec = crate::http::openapi::spec();
    spec["components"]["schemas"]["StrategyConfig"]["oneOf"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|variant| {
            // a variant with settings of its own is one object; one without, a reference and
            // the tag
            let parts = variant["allOf"].as_array().cloned().unwrap_or_default();
            std::iter::once(variant)
                .chain(parts.iter())
                .find_map(|part| part["properties"]["name"]["enum"][0].as_str())
                .map(str::to_owned)
        })
        .collect()
});

pub async fn application_form(session: Session) -> Response {
    let mut c = context(&session, "Apply for a data permit");
    c.insert("vocabulary".into(), vocabulary());
    c.insert("errors".into(), json!({}));
    c.insert(
        "values".into(),
        json!({"applicant.organisation": session.principal.organisation.as_ref().map(|o| o.to_string())}),
    );
    page(StatusCode::OK, "application_form.html", c)
}

/// A form's number as a JSON number, or as the text typed (the API then names the field).
fn number(form: &Form, name: &str) -> Option<Value> {
    let v = form.get(name)?;
    Some(match v.parse::<f64>() {
        Ok(n) if v.contains(['.', 'e', 'E']) => json!(n),
        Ok(_) => v
            .parse::<i64>()
            .map(|i| json!(i))
            .unwrap_or_else(|_| json!(v)),
        Err(_) => json!(v),
    })
}

/// A date picker's day as the API's date-time (midnight UTC).
fn day(form: &Form, name: &str) -> Option<Value> {
    let v = form.get(name)?;
    Some(match chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d") {
        Ok(d) => json!(format!("{d}T00:00:00Z")),
        Err(_) => json!(v),
    })
}

/// Comma- or line-separated values.
fn list(form: &Form, name: &str) -> Value {
    json!(form
        .get(name)
        .unwrap_or("")
        .split([',', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>())
}

fn insert_some(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        map.insert(key.into(), v);
    }
}

pub async fn application_submit(
    State(console): State<Console>,
    session: Session,
    raw: RawForm,
) -> Response {
    let form = Form::parse(&raw);
    if let Err(r) = check_csrf(
        &console,
        &session,
        &form,
        &format!("{BASE}/applications/new"),
    )
    .await
    {
        return r;
    }
    let mut body = Map::new();
    insert_some(&mut body, "title", form.get("title").map(|v| json!(v)));
    body.insert(
        "applicant".into(),
        json!({
            "organisation": form.get("applicant.organisation").unwrap_or(""),
            "public_body": form.get("applicant.public_body").is_some(),
        }),
    );
    body.insert("purposes".into(), json!(form.all("purposes")));
    body.insert("research_flags".into(), json!(form.all("research_flags")));
    body.insert("categories".into(), json!(form.all("categories")));
    body.insert("data_holders".into(), list(&form, "data_holders"));
    body.insert("member_states".into(), list(&form, "member_states"));
    let mut period = Map::new();
    insert_some(&mut period, "start", day(&form, "requested_period.start"));
    insert_some(&mut period, "end", day(&form, "requested_period.end"));
    body.insert("requested_period".into(), Value::Object(period));
    let mut budget = Map::new();
    insert_some(
        &mut budget,
        "epsilon",
        number(&form, "privacy_budget.epsilon"),
    );
    insert_some(&mut budget, "delta", number(&form, "privacy_budget.delta"));
    insert_some(
        &mut budget,
        "unit",
        form.get("privacy_budget.unit").map(|v| json!(v)),
    );
    body.insert("privacy_budget".into(), Value::Object(budget));
    insert_some(
        &mut body,
        "justification",
        form.get("justification").map(|v| json!(v)),
    );
    body.insert(
        "declares_no_prohibited_use".into(),
        json!(form.get("declares_no_prohibited_use").is_some()),
    );
    if form.get("kind") == Some("data_request") {
        body.insert("kind".into(), json!("data_request"));
    }
    if let Some(statistics) = form.get("statistics").filter(|s| !s.trim().is_empty()) {
        // JSON; text that is not goes to the API as it is, which names the problem
        body.insert(
            "statistics".into(),
            serde_json::from_str(statistics).unwrap_or_else(|_| json!(statistics)),
        );
    }
    if form.get("datasets").is_some_and(|s| !s.trim().is_empty()) {
        body.insert("datasets".into(), list(&form, "datasets"));
    }
    let reply = match post(
        &console,
        &session,
        "/v1/applications",
        &Value::Object(body),
        &[],
    )
    .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    if reply.ok() {
        let id = reply.body["id"].as_str().unwrap_or("");
        return see_other(&format!("{BASE}/applications/{}", enc(id)));
    }
    let mut c = context(&session, "Apply for a data permit");
    c.insert("vocabulary".into(), vocabulary());
    c.insert("errors".into(), reply.field_errors());
    c.insert("values".into(), form.values());
    c.insert(
        "selected".into(),
        selected(&form, &["purposes", "research_flags", "categories"]),
    );
    c.insert("problem".into(), reply.problem());
    page(reply.status, "application_form.html", c)
}

/// The boxes ticked in a form, to tick them again.
fn selected(form: &Form, names: &[&str]) -> Value {
    let mut out = Map::new();
    for name in names {
        out.insert((*name).into(), json!(form.all(name)));
    }
    Value::Object(out)
}

// ---------------------------------------------------------------- permits

pub async fn permits(
    State(console): State<Console>,
    session: Session,
    Query(p): Query<Paging>,
) -> Response {
    let offset = p.offset.unwrap_or(0);
    let reply = match get(
        &console,
        &session,
        &format!("/v1/permits?limit={PAGE}&offset={offset}"),
    )
    .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    let items = reply.body.as_array().cloned().unwrap_or_default();
    let mut c = context(&session, "Permits");
    paging(&mut c, offset, items.len());
    c.insert("permits".into(), Value::Array(items));
    page(StatusCode::OK, "permits.html", c)
}

pub async fn permit(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<String>,
) -> Response {
    permit_page(
        &console,
        &session,
        &id,
        StatusCode::OK,
        json!({}),
        json!({}),
        None,
    )
    .await
}

/// The permit's privacy budget over time: what remained after each aggregated round of each
/// of its studies (the studies the user may read).
async fn burn_down(console: &Console, session: &Session, permit: &Value) -> Value {
    let total = permit["privacy_budget"]["epsilon_total"]
        .as_f64()
        .unwrap_or(0.0);
    let Ok(studies) = get(console, session, "/v1/studies?limit=200").await else {
        return Value::Null;
    };
    let mut spends: Vec<(i64, f64)> = Vec::new();
    for study in studies.body.as_array().into_iter().flatten() {
        if study["permit_id"] != permit["id"] {
            continue;
        }
        let Some(id) = study["id"].as_str() else {
            continue;
        };
        let Ok(rounds) = get(console, session, &format!("/v1/studies/{}/rounds", enc(id))).await
        else {
            continue;
        };
        let mut before = 0.0;
        for round in rounds.body["rounds"].as_array().into_iter().flatten() {
            let (Some(after), Some(at)) = (
                round["epsilon_total"].as_f64(),
                round["closed_at"]
                    .as_str()
                    .and_then(|s| DateTime::parse_from_rfc3339(s).ok()),
            ) else {
                continue;
            };
            // A study's epsilon composes over its rounds; the permit is charged the increase.
            spends.push((at.timestamp(), after - before));
            before = after;
        }
    }
    spends.sort_by_key(|s| s.0);
    let issued = permit["issued_at"]
        .as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map_or(0, |d| d.timestamp());
    let mut times = vec![issued];
    let mut remaining = vec![total];
    let mut left = total;
    for (at, spent) in spends {
        left -= spent;
        times.push(at);
        remaining.push(left);
    }
    json!({"times": times, "remaining": remaining, "total": total})
}

async fn permit_page(
    console: &Console,
    session: &Session,
    id: &str,
    status: StatusCode,
    errors: Value,
    values: Value,
    problem: Option<Value>,
) -> Response {
    let permit = match get(console, session, &format!("/v1/permits/{}", enc(id))).await {
        Ok(r) => r.body,
        Err(r) => return r,
    };
    let versions = match get(
        console,
        session,
        &format!("/v1/permits/{}/versions", enc(id)),
    )
    .await
    {
        Ok(r) => r.body,
        Err(r) => return r,
    };
    let burn = burn_down(console, session, &permit).await;
    let mut c = context(session, "Permit");
    c.insert("burn_down".into(), json!(burn.to_string()));
    c.insert("permit".into(), permit);
    c.insert("versions".into(), versions);
    c.insert("errors".into(), errors);
    c.insert("values".into(), values);
    c.insert("problem".into(), problem.unwrap_or(Value::Null));
    page(status, "permit.html", c)
}

/// `POST /console/permits/{id}/{action}`: suspend, reinstate, revoke, amend or extend, sent to
/// the API with the permit's ETag from the page (a change made meanwhile is refused, 412).
pub async fn permit_action(
    State(console): State<Console>,
    session: Session,
    Path((id, action)): Path<(String, String)>,
    raw: RawForm,
) -> Response {
    let form = Form::parse(&raw);
    let path = format!("{BASE}/permits/{id}/{action}");
    if let Err(r) = check_csrf(&console, &session, &form, &path).await {
        return r;
    }
    let mut body = Map::new();
    match action.as_str() {
        "suspend" | "revoke" | "reinstate" => {
            insert_some(&mut body, "reason", form.get("reason").map(|v| json!(v)));
        }
        "extend" => {
            insert_some(&mut body, "expires_at", day(&form, "expires_at"));
            insert_some(&mut body, "reason", form.get("reason").map(|v| json!(v)));
        }
        "amend" => {
            insert_some(&mut body, "reason", form.get("reason").map(|v| json!(v)));
            insert_some(
                &mut body,
                "conditions",
                form.get("conditions").map(|v| json!(v)),
            );
            insert_some(&mut body, "epsilon", number(&form, "epsilon"));
            insert_some(
                &mut body,
                "dp_requirement",
                form.get("dp_requirement").map(|v| json!(v)),
            );
        }
        _ => return not_found().await,
    }
    let mut extra = Vec::new();
    if let Some(etag) = form.get("etag") {
        extra.push((header::IF_MATCH, etag.to_owned()));
    }
    let reply = match post(
        &console,
        &session,
        &format!("/v1/permits/{}/{action}", enc(&id)),
        &Value::Object(body),
        &extra,
    )
    .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    if reply.ok() {
        return see_other(&format!("{BASE}/permits/{}", enc(&id)));
    }
    let mut values = form.values();
    values["action"] = json!(action);
    permit_page(
        &console,
        &session,
        &id,
        reply.status,
        reply.field_errors(),
        values,
        Some(reply.problem()),
    )
    .await
}

// ---------------------------------------------------------------- studies

pub async fn studies(
    State(console): State<Console>,
    session: Session,
    Query(p): Query<Paging>,
) -> Response {
    let offset = p.offset.unwrap_or(0);
    let reply = match get(
        &console,
        &session,
        &format!("/v1/studies?limit={PAGE}&offset={offset}"),
    )
    .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    let items = reply.body.as_array().cloned().unwrap_or_default();
    let mut c = context(&session, "Studies");
    paging(&mut c, offset, items.len());
    c.insert("studies".into(), Value::Array(items));
    page(StatusCode::OK, "studies.html", c)
}

async fn study_form_page(
    console: &Console,
    session: &Session,
    status: StatusCode,
    errors: Value,
    values: Value,
    problem: Option<Value>,
) -> Response {
    let permits = match get(console, session, "/v1/permits?limit=200").await {
        Ok(r) => r.body,
        Err(r) => return r,
    };
    let mut c = context(session, "Submit a study");
    c.insert("vocabulary".into(), vocabulary());
    c.insert("permits".into(), permits);
    c.insert("errors".into(), errors);
    c.insert("values".into(), values);
    c.insert("problem".into(), problem.unwrap_or(Value::Null));
    page(status, "study_form.html", c)
}

pub async fn study_form(State(console): State<Console>, session: Session) -> Response {
    let defaults = json!({
        "purpose": "scientific_research", "model.architecture": "logistic",
        "strategy": "fedavg", "optimizer.name": "adamw", "optimizer.lr": "0.01",
        "local_steps": "20", "batch_size": "16", "rounds": "5", "min_sites": "2",
        "round_deadline_seconds": "120", "dp.level": "client", "dp.clip_norm": "1.0",
        "dp.target_epsilon": "1.0",
    });
    study_form_page(
        &console,
        &session,
        StatusCode::OK,
        json!({}),
        defaults,
        None,
    )
    .await
}

/// A JSON field of a form: parsed when it is JSON, else passed as text for the API to name.
fn json_field(form: &Form, name: &str) -> Option<Value> {
    let v = form.get(name)?;
    Some(serde_json::from_str(v).unwrap_or_else(|_| json!(v)))
}

pub async fn study_submit(
    State(console): State<Console>,
    session: Session,
    raw: RawForm,
) -> Response {
    let form = Form::parse(&raw);
    if let Err(r) = check_csrf(&console, &session, &form, &format!("{BASE}/studies/new")).await {
        return r;
    }
    let mut body = Map::new();
    for field in ["title", "permit_id", "purpose"] {
        insert_some(&mut body, field, form.get(field).map(|v| json!(v)));
    }
    body.insert("categories".into(), json!(form.all("categories")));
    body.insert("data_holders".into(), list(&form, "data_holders"));
    insert_some(&mut body, "feature_spec", json_field(&form, "feature_spec"));
    insert_some(&mut body, "task", json_field(&form, "task"));
    let mut model = Map::new();
    insert_some(
        &mut model,
        "architecture",
        form.get("model.architecture").map(|v| json!(v)),
    );
    let hidden: Vec<Value> = form
        .get("model.hidden")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u64>()
                .map(|n| json!(n))
                .unwrap_or_else(|_| json!(s))
        })
        .collect();
    model.insert("hidden".into(), Value::Array(hidden));
    body.insert("model".into(), Value::Object(model));
    let mut strategy = match json_field(&form, "strategy.settings") {
        Some(Value::Object(m)) => m,
        Some(other) => {
            let mut m = Map::new();
            m.insert("settings".into(), other);
            m
        }
        None => Map::new(),
    };
    insert_some(
        &mut strategy,
        "name",
        form.get("strategy").map(|v| json!(v)),
    );
    body.insert("strategy".into(), Value::Object(strategy));
    let mut optimizer = Map::new();
    insert_some(
        &mut optimizer,
        "name",
        form.get("optimizer.name").map(|v| json!(v)),
    );
    insert_some(&mut optimizer, "lr", number(&form, "optimizer.lr"));
    body.insert("optimizer".into(), Value::Object(optimizer));
    for field in [
        "local_steps",
        "batch_size",
        "rounds",
        "min_sites",
        "round_deadline_seconds",
    ] {
        insert_some(&mut body, field, number(&form, field));
    }
    let mut dp = Map::new();
    insert_some(&mut dp, "level", form.get("dp.level").map(|v| json!(v)));
    for field in [
        "clip_norm",
        "noise_multiplier",
        "target_epsilon",
        "sampling_rate",
    ] {
        insert_some(&mut dp, field, number(&form, &format!("dp.{field}")));
    }
    body.insert("dp".into(), Value::Object(dp));
    let reply = match post(&console, &session, "/v1/studies", &Value::Object(body), &[]).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    if reply.ok() {
        let id = reply.body["id"].as_str().unwrap_or("");
        return see_other(&format!("{BASE}/studies/{}", enc(id)));
    }
    let mut values = form.values();
    values["selected_categories"] = json!(form.all("categories"));
    study_form_page(
        &console,
        &session,
        reply.status,
        reply.field_errors(),
        values,
        Some(reply.problem()),
    )
    .await
}

pub async fn study(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<String>,
) -> Response {
    let study = match get(&console, &session, &format!("/v1/studies/{}", enc(&id))).await {
        Ok(r) => r.body,
        Err(r) => return r,
    };
    let mut c = context(&session, "Study");
    c.insert("study".into(), study);
    match progress_context(&console, &session, &id).await {
        Ok(progress) => c.extend(progress),
        Err(r) => return r,
    }
    page(StatusCode::OK, "study.html", c)
}

/// The rounds view (the small-cell rule already applied by the API) and the series the
/// charts draw.
async fn progress_context(
    console: &Console,
    session: &Session,
    id: &str,
) -> Result<Map<String, Value>, Response> {
    let rounds = get(console, session, &format!("/v1/studies/{}/rounds", enc(id)))
        .await?
        .body;
    let aggregated: Vec<&Value> = rounds["rounds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["phase"] == "aggregated")
        .collect();
    let series = |f: &dyn Fn(&Value) -> Value| aggregated.iter().map(|r| f(r)).collect::<Vec<_>>();
    let chart = json!({
        "round": series(&|r| r["round"].clone()),
        "validation_accuracy": series(&|r| r["evaluation"]["mean_validation_accuracy"].clone()),
        "test_accuracy": series(&|r| r["evaluation"]["mean_test_accuracy"].clone()),
        "validation_loss": series(&|r| r["evaluation"]["mean_validation"]["loss"].clone()),
        "epsilon": series(&|r| r["epsilon_total"].clone()),
    });
    let latest = rounds["rounds"]
        .as_array()
        .and_then(|a| a.last())
        .cloned()
        .unwrap_or(Value::Null);
    let mut c = Map::new();
    c.insert("study_id".into(), json!(id));
    c.insert("chart".into(), json!(chart.to_string()));
    // The round attempts the page starts from; console.js adds what the events bring.
    c.insert("rounds_json".into(), json!(rounds["rounds"].to_string()));
    c.insert("latest".into(), latest);
    c.insert(
        "running".into(),
        json!(rounds["status"] == "running" || rounds["status"] == "pending"),
    );
    c.insert("rounds".into(), rounds);
    Ok(c)
}

/// `GET /console/studies/{id}/progress`: the part of the study page htmx refreshes.
pub async fn study_progress(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<String>,
) -> Response {
    let mut c = context(&session, "Study progress");
    match progress_context(&console, &session, &id).await {
        Ok(progress) => c.extend(progress),
        Err(r) => return r,
    }
    page(StatusCode::OK, "study_progress.html", c)
}

/// `GET /console/studies/{id}/events`: the study's server-sent events, the API's stream
/// (`GET /v1/studies/{id}/events`) relayed as it comes. The API authorises and audits the
/// subscription as the signed-in user; its refusal is shown as any other.
pub async fn study_events(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<String>,
) -> Response {
    let response = match console
        .send(
            &session.token,
            session.request_id.as_ref(),
            Method::GET,
            &format!("/v1/studies/{}/events", enc(&id)),
            None,
            &[(header::ACCEPT, "text/event-stream".to_owned())],
        )
        .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    if !response.status().is_success() {
        return relay_problem(&session, response).await;
    }
    response
}

/// `GET /console/studies/{id}/model`: the released model, as the API serves it.
pub async fn model_download(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<String>,
) -> Response {
    let response = match console
        .send(
            &session.token,
            session.request_id.as_ref(),
            Method::GET,
            &format!("/v1/studies/{}/model", enc(&id)),
            None,
            &[],
        )
        .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    if !response.status().is_success() {
        return relay_problem(&session, response).await;
    }
    let (mut parts, body) = response.into_parts();
    parts.headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&format!(
            "attachment; filename=\"model-{}.safetensors\"",
            enc(&id)
        ))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment")),
    );
    Response::from_parts(parts, body)
}

async fn relay_problem(session: &Session, response: Response) -> Response {
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 64 * 1024)
        .await
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    problem_page(
        session,
        &ApiReply {
            status,
            headers: Default::default(),
            body,
        },
    )
}

// ---------------------------------------------------------------- audit

/// The trail's filters, passed on to `GET /v1/audit/events` as they are.
const FILTERS: [&str; 8] = [
    "from",
    "to",
    "actor",
    "action",
    "outcome",
    "resource_type",
    "resource_id",
    "permit_id",
];

fn filter_query(query: &[(String, String)]) -> Vec<(String, String)> {
    query
        .iter()
        .filter(|(k, v)| FILTERS.contains(&k.as_str()) && !v.trim().is_empty())
        .map(|(k, v)| {
            // A date picker's day is the API's midnight UTC.
            let v = match chrono::NaiveDate::parse_from_str(v.trim(), "%Y-%m-%d") {
                Ok(d) if k == "from" || k == "to" => format!("{d}T00:00:00Z"),
                _ => v.trim().to_owned(),
            };
            (k.clone(), v)
        })
        .collect()
}

fn encode_query(pairs: &[(String, String)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

pub async fn audit(
    State(console): State<Console>,
    session: Session,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let filters = filter_query(&query);
    let after: Option<u64> = query
        .iter()
        .find(|(k, _)| k == "after_seq")
        .and_then(|(_, v)| v.parse().ok());
    let mut api_query = filters.clone();
    api_query.push(("limit".into(), PAGE.to_string()));
    if let Some(after) = after {
        api_query.push(("after_seq".into(), after.to_string()));
    }
    let reply = match get(
        &console,
        &session,
        &format!("/v1/audit/events?{}", encode_query(&api_query)),
    )
    .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    let entries = reply.body.as_array().cloned().unwrap_or_default();
    let next = (entries.len() as u64 >= PAGE)
        .then(|| entries.last().and_then(|e| e["seq"].as_u64()))
        .flatten();
    let mut c = context(&session, "Audit trail");
    let shown: Map<String, Value> = query
        .iter()
        .filter(|(k, _)| FILTERS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    c.insert("filters".into(), Value::Object(shown));
    c.insert("query".into(), json!(encode_query(&filters)));
    c.insert(
        "next".into(),
        json!(next.map(|seq| {
            let mut q = filters.clone();
            q.push(("after_seq".into(), seq.to_string()));
            encode_query(&q)
        })),
    );
    c.insert("entries".into(), Value::Array(entries));
    c.insert("formats".into(), json!(["json", "jsonl", "csv", "fhir"]));
    page(StatusCode::OK, "audit.html", c)
}

/// `GET /console/audit/verify`: the chain verification, as a fragment for htmx.
pub async fn audit_verify(State(console): State<Console>, session: Session) -> Response {
    let reply = match console
        .call(
            &session.token,
            session.request_id.as_ref(),
            Method::GET,
            "/v1/audit/verify",
            None,
            &[],
        )
        .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    render(
        reply.status,
        "audit_verify.html",
        json!({"ok": reply.ok(), "report": reply.body}),
    )
}

/// `GET /console/audit/export?format=…&<filters>`: the API's export, downloaded.
pub async fn audit_export(
    State(console): State<Console>,
    session: Session,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let format = query
        .iter()
        .find(|(k, _)| k == "format")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| "json".into());
    let mut api_query = filter_query(&query);
    api_query.push(("format".into(), format.clone()));
    let response = match console
        .send(
            &session.token,
            session.request_id.as_ref(),
            Method::GET,
            &format!("/v1/audit/events?{}", encode_query(&api_query)),
            None,
            &[],
        )
        .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    if !response.status().is_success() {
        return relay_problem(&session, response).await;
    }
    let extension = match format.as_str() {
        "jsonl" => "jsonl",
        "csv" => "csv",
        _ => "json",
    };
    let (mut parts, body) = response.into_parts();
    parts.headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_str(&format!(
            "attachment; filename=\"audit-{format}.{extension}\""
        ))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment")),
    );
    Response::from_parts(parts, body)
}

pub async fn records(
    State(console): State<Console>,
    session: Session,
    Query(p): Query<Paging>,
) -> Response {
    let offset = p.offset.unwrap_or(0);
    let reply = match get(
        &console,
        &session,
        &format!("/v1/audit/records-of-processing?limit={PAGE}&offset={offset}"),
    )
    .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    let items = reply.body.as_array().cloned().unwrap_or_default();
    let mut c = context(&session, "Records of processing");
    paging(&mut c, offset, items.len());
    c.insert("records".into(), Value::Array(items));
    page(StatusCode::OK, "records.html", c)
}

/// A path segment from the user, percent-encoded.
fn enc(segment: &str) -> String {
    url::form_urlencoded::byte_serialize(segment.as_bytes()).collect()
}

/// The statistics runs (Art. 69): an officer's queue of answers to review first, then the rest.
pub async fn statistics(
    State(console): State<Console>,
    session: Session,
    Query(p): Query<Paging>,
) -> Response {
    let offset = p.offset.unwrap_or(0);
    let reply = match get(
        &console,
        &session,
        &format!("/v1/statistics?limit={PAGE}&offset={offset}"),
    )
    .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    let items = reply.body.as_array().cloned().unwrap_or_default();
    let (review, rest): (Vec<Value>, Vec<Value>) = items
        .iter()
        .cloned()
        .partition(|r| r["status"] == "under_review");
    let mut c = context(&session, "Statistics");
    paging(&mut c, offset, items.len());
    c.insert("review".into(), Value::Array(review));
    c.insert("runs".into(), Value::Array(rest));
    page(StatusCode::OK, "statistics.html", c)
}

/// One run: its clocks and holders, the checker's verdict (officers, under review) with the
/// review form, and the released answer as a table.
pub async fn statistics_run(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<String>,
) -> Response {
    statistics_page(
        &console,
        &session,
        &id,
        StatusCode::OK,
        json!({}),
        json!({}),
    )
    .await
}

async fn statistics_page(
    console: &Console,
    session: &Session,
    id: &str,
    status: StatusCode,
    errors: Value,
    values: Value,
) -> Response {
    let reply = match get(console, session, &format!("/v1/statistics/{}", enc(id))).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    let run = reply.body;
    let mut c = context(session, "Statistics run");
    c.insert("table".into(), cell_rows(&run["answer"]["values"]));
    let chart = answer_chart(&run["answer"]["values"]);
    c.insert("chart_kind".into(), chart["kind"].clone());
    if !chart.is_null() {
        // drawn by console.js from the attribute, as the study and permit charts are
        c.insert("chart".into(), json!(chart.to_string()));
    }
    c.insert("checked_table".into(), cell_rows(&run["checked"]));
    c.insert("run".into(), run);
    c.insert("errors".into(), errors);
    c.insert("values".into(), values);
    page(status, "statistics_run.html", c)
}

/// What the answer's plot draws: the released survival curves (time against S(t), one series
/// per cell), or one bar per cell of the released counts, means or noisy values. `null` when
/// nothing released has a value to draw.
fn answer_chart(release: &Value) -> Value {
    let cells = release["cells"].as_array().cloned().unwrap_or_default();
    let label = |cell: &Value| -> String {
        let parts: Vec<String> = cell["labels"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| match l["kind"].as_str() {
                Some("bin") => format!(
                    "{} [{}, {})",
                    l["column"].as_str().unwrap_or(""),
                    l["lo"],
                    l["hi"]
                ),
                _ => format!("{}={}", l["column"].as_str().unwrap_or(""), l["value"]),
            })
            .collect();
        if parts.is_empty() {
            "all".into()
        } else {
            parts.join(" ")
        }
    };
    let curves: Vec<(String, Vec<Value>)> = cells
        .iter()
        .filter_map(|c| Some((label(c), c["value"]["points"].as_array()?.clone())))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    if !curves.is_empty() {
        // one time axis: the grid is the query's, the same for every cell
        let times: Vec<Value> = curves[0].1.iter().map(|p| p["time"].clone()).collect();
        let series: Vec<Value> = curves
            .iter()
            .map(|(name, points)| {
                json!({"label": name, "values": points.iter().map(|p| p["survival"].clone()).collect::<Vec<_>>()})
            })
            .collect();
        return json!({"kind": "survival", "x": times, "series": series});
    }
    let value = |c: &Value| -> Value {
        let v = &c["value"];
        for key in ["mean", "n"] {
            match &v[key] {
                Value::Number(n) => return json!(n),
                Value::Object(noisy) if noisy.contains_key("value") => {
                    return noisy["value"].clone()
                }
                _ => {}
            }
        }
        Value::Null
    };
    let bars: Vec<(String, Value)> = cells
        .iter()
        .map(|c| (label(c), value(c)))
        .filter(|(_, v)| v.is_number())
        .collect();
    if bars.is_empty() {
        return Value::Null;
    }
    json!({
        "kind": "bars",
        "labels": bars.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>(),
        "x": (0..bars.len()).collect::<Vec<_>>(),
        "series": [{"label": if cells.iter().any(|c| c["value"]["mean"].is_number()) { "mean" } else { "count" },
                    "values": bars.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>()}],
    })
}

/// A release's cells as rows for a table: the grouping labels, the outcome with its reasons,
/// and the values in words (`n`, mean and SD, noisy values with their 95% half-width).
fn cell_rows(release: &Value) -> Value {
    let label = |l: &Value| match l["kind"].as_str() {
        Some("level") => format!("{} = {}", l["column"].as_str().unwrap_or(""), l["value"]),
        Some("bin") => format!(
            "{} in [{}, {}{}",
            l["column"].as_str().unwrap_or(""),
            l["lo"],
            l["hi"],
            if l["closed_hi"] == true { "]" } else { ")" }
        ),
        _ => l.to_string(),
    };
    let shown = |v: &Value| -> String {
        match v {
            Value::Object(m) if m.contains_key("half_width_95") => format!(
                "{:.1} ± {:.1}",
                m["value"].as_f64().unwrap_or(f64::NAN),
                m["half_width_95"].as_f64().unwrap_or(f64::NAN)
            ),
            Value::Number(n) => match n.as_u64() {
                Some(u) => u.to_string(),
                None => format!("{:.4}", n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::Null => "—".into(),
            other => other.to_string(),
        }
    };
    let rows: Vec<Value> = release["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|cell| {
            let values: Vec<String> = cell["value"]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| k.as_str() != "kind")
                .map(|(k, v)| format!("{k}: {}", shown(v)))
                .collect();
            json!({
                "labels": cell["labels"].as_array().into_iter().flatten().map(label).collect::<Vec<_>>().join(", "),
                "outcome": cell["outcome"],
                "reasons": cell["reasons"].as_array().into_iter().flatten().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
                "values": values.join("; "),
            })
        })
        .collect();
    Value::Array(rows)
}

/// An officer's release or withholding of a flagged answer.
pub async fn statistics_review(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<String>,
    raw: RawForm,
) -> Response {
    let form = Form::parse(&raw);
    let path = format!("{BASE}/statistics/{id}/review");
    if let Err(r) = check_csrf(&console, &session, &form, &path).await {
        return r;
    }
    let body = json!({
        "decision": form.get("decision").unwrap_or(""),
        "justification": form.get("justification").unwrap_or(""),
    });
    let reply = match post(
        &console,
        &session,
        &format!("/v1/statistics/{}/review", enc(&id)),
        &body,
        &[],
    )
    .await
    {
        Ok(r) => r,
        Err(r) => return r,
    };
    if reply.ok() {
        return see_other(&format!("{BASE}/statistics/{}", enc(&id)));
    }
    let mut errors = reply.field_errors();
    if errors.as_object().is_some_and(Map::is_empty) {
        // a refusal of the step itself (the run moved on): shown above the form
        errors["review"] = reply.problem()["detail"].clone();
    }
    statistics_page(&console, &session, &id, reply.status, errors, form.values()).await
}

/// The public register (Art. 57(1)(j), 58) as a page anyone may read, without signing in:
/// the same entries and small-cell-protected counts as `GET /v1/register`.
pub async fn register(State(console): State<Console>, Query(p): Query<Paging>) -> Response {
    let offset = p.offset.unwrap_or(0);
    let state = &console.state;
    let page_of = crate::store::Page {
        limit: PAGE as i64,
        offset: offset as i64,
    };
    let read = async {
        let mut tx = state.store.begin().await?;
        let entries = crate::app::register::entries(&mut *tx, page_of, chrono::Utc::now()).await?;
        let summary = crate::app::register::summary(&mut *tx, state.small_cells()).await?;
        tx.commit().await?;
        Ok::<_, crate::store::StoreError>((entries, summary))
    };
    let (entries, summary) = match read.await {
        Ok(v) => v,
        Err(e) => {
            tracing::error!(error = %e, "reading the public register");
            return super::internal("the register could not be read");
        }
    };
    let mut c = Map::new();
    c.insert("title".into(), json!("Public register"));
    c.insert("v".into(), json!(*super::assets::VERSION));
    paging(&mut c, offset, entries.len());
    c.insert("entries".into(), json!(entries));
    c.insert("summary".into(), json!(summary));
    page(StatusCode::OK, "register.html", c)
}

#[cfg(test)]
mod chart_tests {
    use super::*;

    #[test]
    fn released_cells_become_bars_and_suppressed_ones_are_left_out() {
        let release = json!({"cells": [
            {"labels": [{"kind": "level", "column": "sex", "value": 0.0}], "outcome": "suppressed",
             "reasons": ["threshold_count"], "value": null},
            {"labels": [{"kind": "level", "column": "sex", "value": 1.0}], "outcome": "released",
             "value": {"kind": "count", "n": 42}},
            {"labels": [{"kind": "bin", "column": "age", "lo": 40.0, "hi": 50.0}], "outcome": "released",
             "value": {"kind": "count", "n": {"value": 17.0, "sd": 1.4, "half_width_95": 4.2, "coverage": 0.95}}}
        ]});
        let chart = answer_chart(&release);
        assert_eq!(chart["kind"], "bars");
        assert_eq!(chart["labels"], json!(["sex=1.0", "age [40.0, 50.0)"]));
        assert_eq!(chart["series"][0]["values"], json!([42, 17.0]));
        assert_eq!(answer_chart(&json!({"cells": []})), Value::Null);
    }

    #[test]
    fn survival_curves_share_the_time_grid() {
        let point = |t: f64, s: f64| json!({"time": t, "survival": s, "at_risk": 20});
        let release = json!({"cells": [
            {"labels": [], "outcome": "released",
             "value": {"kind": "survival", "n": 40, "points": [point(0.0, 1.0), point(365.0, 0.8)]}}
        ]});
        let chart = answer_chart(&release);
        assert_eq!(chart["kind"], "survival");
        assert_eq!(chart["x"], json!([0.0, 365.0]));
        assert_eq!(chart["series"][0]["label"], "all");
        assert_eq!(chart["series"][0]["values"], json!([1.0, 0.8]));
    }
}
