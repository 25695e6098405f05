//! `GET /metrics`: Prometheus text with request latencies, audit appends, node activity and
//! the governance state, behind a bearer token; its refusals are audited.
use std::collections::BTreeMap;

use serde_json::json;

use crate::helpers::{Backend, TestApp};

const TOKEN: &str = "prometheus-scrape-token-0123456789";

/// One scrape: series (name and labels) and their values.
pub struct Scrape(Vec<(String, BTreeMap<String, String>, f64)>);

impl Scrape {
    /// The value of the one series of `name` carrying `labels` (and perhaps others).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let found: Vec<f64> = self
            .0
            .iter()
            .filter(|(n, l, _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, _, v)| *v)
            .collect();
        assert!(found.len() <= 1, "{name} {labels:?} matches {found:?}");
        found.first().copied()
    }

    /// Like `value`, 0 where the series does not exist yet (counters before their first event).
    pub fn count(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, labels).unwrap_or(0.0)
    }

    fn parse(text: &str) -> Self {
        let mut series = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let (key, value) = line.rsplit_once(' ').expect("series and value");
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("value of {line}"));
            let (name, labels) = match key.split_once('{') {
                Some((name, rest)) => (name, rest.strip_suffix('}').expect("closing brace")),
                None => (key, ""),
            };
            let mut map = BTreeMap::new();
            // label values here never contain `",` (ids, route templates, phases)
            for pair in labels.split("\",").filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once("=\"").expect("label=\"value\"");
                map.insert(k.to_owned(), v.trim_end_matches('"').to_owned());
            }
            series.push((name.to_owned(), map, value));
        }
        Scrape(series)
    }
}

/// Scrapes `app`'s `/metrics`, with `token` when given.
pub async fn scrape_with(app: &TestApp, token: Option<&str>) -> Scrape {
    let mut req = app.client.get(format!("{}/metrics", app.base));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = app.send(req).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.headers["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    Scrape::parse(&r.text)
}

/// Scrapes a gateway in development mode without a token file (open).
pub async fn scrape(app: &TestApp) -> Scrape {
    scrape_with(app, None).await
}

async fn with_token(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, |s| {
        let file = s.data_dir.join("metrics.token");
        std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
        s.metrics.bearer_token_file = Some(file);
    })
    .await
}

async fn metrics_report_requests_budgets_and_nodes(backend: Backend) {
    let app = with_token(backend).await;

    // without the token, or with another one: 401, audited
    for token in [None, Some("not-the-token-at-all")] {
        let mut req = app.client.get(format!("{}/metrics", app.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let r = app.send(req).await;
        assert_eq!(r.status, 401, "{}", r.text);
        assert_eq!(r.code(), "invalid_metrics_token");
        assert_eq!(r.headers["content-type"], "application/problem+json");
    }
    let refused = app.audit("outcome=denied").await;
    let on_metrics: Vec<_> = refused
        .iter()
        .filter(|e| e["detail"]["path"] == "/metrics")
        .collect();
    assert_eq!(on_metrics.len(), 2, "{refused:?}");
    assert!(on_metrics
        .iter()
        .all(|e| e["detail"]["code"] == "invalid_metrics_token"));

    // the permit's budget, expiry and state
    let permit = app.permit().await;
    let id = permit["id"].as_str().unwrap();
    let before = scrape_with(&app, Some(TOKEN)).await;
    let permit_label = [("permit", id)];
    let budget = permit["privacy_budget"]["epsilon_total"].as_f64().unwrap();
    assert_eq!(
        before.value("ehds_permit_epsilon_budget", &permit_label),
        Some(budget)
    );
    assert_eq!(
        before.value("ehds_permit_epsilon_remaining", &permit_label),
        Some(budget)
    );
    let expires = chrono::DateTime::parse_from_rfc3339(permit["expires_at"].as_str().unwrap())
        .unwrap()
        .timestamp() as f64;
    assert_eq!(
        before.value("ehds_permit_expiry_timestamp_seconds", &permit_label),
        Some(expires)
    );
    assert_eq!(
        before.value("ehds_permit_suspended", &permit_label),
        Some(0.0)
    );

    // requests are timed per route template (the id is not a label value)
    let reads = 3;
    for _ in 0..reads {
        let r = app.get(&format!("/v1/permits/{id}"), &app.officer()).await;
        assert_eq!(r.status, 200);
    }
    let suspended = app
        .post(
            &format!("/v1/permits/{id}/suspend"),
            &app.officer(),
            &json!({"reason": "Art. 63 procedure opened"}),
        )
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.text);
    // a node asks for tasks
    let asked_at = chrono::Utc::now().timestamp() as f64;
    let r = app.get("/v1/node/tasks", &app.holder("hosp-1")).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let after = scrape_with(&app, Some(TOKEN)).await;
    let route = [
        ("method", "GET"),
        ("route", "/v1/permits/{id}"),
        ("status", "200"),
    ];
    let timed = after.count("ehds_http_request_duration_seconds_count", &route)
        - before.count("ehds_http_request_duration_seconds_count", &route);
    assert!(timed >= reads as f64, "{timed} timed reads");
    assert!(after
        .0
        .iter()
        .all(|(_, labels, _)| labels.get("route").is_none_or(|r| !r.contains(id))));
    // the suspension and its audit entry committed: at least that one append
    let appends = after.count("ehds_audit_entries_appended_total", &[])
        - before.count("ehds_audit_entries_appended_total", &[]);
    assert!(appends >= 1.0, "{appends}");
    assert_eq!(
        after.value("ehds_permit_suspended", &permit_label),
        Some(1.0)
    );
    let seen = after
        .value(
            "ehds_node_last_seen_timestamp_seconds",
            &[("data_holder", "hosp-1")],
        )
        .expect("the node's poll is recorded");
    assert!(
        seen >= asked_at - 1.0 && seen <= asked_at + 60.0,
        "{seen} vs {asked_at}"
    );

    // the opt-out registry's version and the pool
    let registered = app
        .post(
            "/v1/opt-outs",
            &app.registrar(),
            &json!({"subject_pseudonym": "psn-metrics-subject-0001", "member_state": "DE"}),
        )
        .await;
    assert_eq!(registered.status, 201, "{}", registered.text);
    let version = registered.body["registry_version"].as_f64().unwrap();
    let now = scrape_with(&app, Some(TOKEN)).await;
    assert_eq!(
        now.value("ehds_optout_registry_version", &[]),
        Some(version)
    );
    let max = match backend {
        Backend::Sqlite => 8.0,
        Backend::Postgres => 16.0,
    };
    assert_eq!(now.value("ehds_db_pool_max_connections", &[]), Some(max));
    let in_use = now
        .value("ehds_db_pool_connections", &[("state", "in_use")])
        .unwrap();
    let idle = now
        .value("ehds_db_pool_connections", &[("state", "idle")])
        .unwrap();
    assert!(
        in_use + idle <= max && in_use + idle >= 1.0,
        "{in_use} + {idle}"
    );

    // a revoked permit leaves no series behind
    let revoked = app
        .post(
            &format!("/v1/permits/{id}/revoke"),
            &app.officer(),
            &json!({"reason": "the non-compliance was confirmed"}),
        )
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    let gone = scrape_with(&app, Some(TOKEN)).await;
    assert_eq!(
        gone.value("ehds_permit_epsilon_budget", &permit_label),
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_report_requests_budgets_and_nodes_sqlite() {
    metrics_report_requests_budgets_and_nodes(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_report_requests_budgets_and_nodes_postgres() {
    metrics_report_requests_budgets_and_nodes(Backend::Postgres).await
}
