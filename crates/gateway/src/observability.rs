//! Prometheus metrics (`GET /metrics`, docs/observability.md): the one place that names them.
//!
//! Two kinds:
//! * events this process saw, through the `metrics` facade into its Prometheus recorder:
//!   request latency per route and status, committed audit appends, rounds started and closed
//!   by phase, node tasks that expired, when each data holder last polled. Store-side events
//!   are counted by the transaction and emitted only when it commits ([`TxEvents`]), so a
//!   rolled-back append or round never shows.
//! * the governance state, read from the database at scrape time ([`render_state`]): privacy
//!   budget and expiry of every permit still in force, the opt-out registry version, the
//!   connection pool. Every replica reports the same database, so dashboards take `max`.
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::store::{Page, Scope, Store};
use ehds_core::domain::study::RoundPhase;
use ehds_core::domain::{OrgId, PermitState};

pub const HTTP_REQUEST_DURATION: &str = "ehds_http_request_duration_seconds";
pub const AUDIT_APPENDS: &str = "ehds_audit_entries_appended_total";
pub const ROUNDS_STARTED: &str = "ehds_rounds_started_total";
pub const ROUNDS_CLOSED: &str = "ehds_rounds_closed_total";
pub const NODE_TASKS_EXPIRED: &str = "ehds_node_tasks_expired_total";
pub const NODE_LAST_SEEN: &str = "ehds_node_last_seen_timestamp_seconds";
pub const WEBHOOK_DELIVERIES: &str = "ehds_webhook_deliveries_total";
pub const APPLICATION_DEADLINES: &str = "ehds_application_deadlines_total";
pub const STATISTICS_RUNS: &str = "ehds_statistics_runs_total";
pub const PERMIT_EPSILON_BUDGET: &str = "ehds_permit_epsilon_budget";
pub const PERMIT_EPSILON_REMAINING: &str = "ehds_permit_epsilon_remaining";
pub const PERMIT_EXPIRY: &str = "ehds_permit_expiry_timestamp_seconds";
pub const PERMIT_SUSPENDED: &str = "ehds_permit_suspended";
pub const OPTOUT_REGISTRY_VERSION: &str = "ehds_optout_registry_version";
pub const DB_POOL_CONNECTIONS: &str = "ehds_db_pool_connections";
pub const DB_POOL_MAX: &str = "ehds_db_pool_max_connections";
pub const STORE_FLUSHES: &str = "ehds_store_flushes_total";
pub const STORE_FLUSHED_TRANSACTIONS: &str = "ehds_store_flushed_transactions_total";

/// Latency buckets (seconds): a cached read takes about a millisecond, a long poll up to its
/// maximum wait.
const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

static PROCESS: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process-wide recorder, installed on first use. Several gateways in one process (tests)
/// share it; in a deployment there is one per process.
pub fn process_metrics() -> &'static PrometheusHandle {
    PROCESS.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Full(HTTP_REQUEST_DURATION.to_owned()),
                &LATENCY_BUCKETS,
            )
            .expect("the bucket list is not empty")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            // Another recorder owns the facade (an embedding program): this handle then only
            // renders what this module records explicitly, which is nothing; say so once.
            tracing::warn!("a metrics recorder was already installed; /metrics shows state only");
        }
        describe_process_metrics();
        handle
    })
}

fn describe_process_metrics() {
    describe_histogram!(
        HTTP_REQUEST_DURATION,
        metrics::Unit::Seconds,
        "Time to answer a request, by method, route template and status."
    );
    describe_counter!(AUDIT_APPENDS, "Audit entries committed by this process.");
    describe_counter!(ROUNDS_STARTED, "Federated rounds opened by this process.");
    describe_counter!(
        ROUNDS_CLOSED,
        "Federated rounds closed by this process, by phase (aggregated, failed, discarded)."
    );
    describe_counter!(
        NODE_TASKS_EXPIRED,
        "Node tasks whose deadline passed without a result, by data holder."
    );
    describe_counter!(
        WEBHOOK_DELIVERIES,
        "Webhook events by endpoint and outcome (delivered, given_up after every attempt)."
    );
    describe_counter!(
        APPLICATION_DEADLINES,
        "Passed deadlines of the procedure on applications, by deadline (information, decision, fee_response, publication) and outcome (lapsed, overdue)."
    );
    describe_counter!(
        STATISTICS_RUNS,
        "Statistics runs (Art. 69) pooled and checked, by outcome (released, under_review, withheld, failed)."
    );
    describe_counter!(
        STORE_FLUSHES,
        "SQLite commits to disk; with group commit one flushes every transaction of its group."
    );
    describe_counter!(
        STORE_FLUSHED_TRANSACTIONS,
        "Transactions made durable by those commits (divided by the flushes: the mean group)."
    );
    describe_gauge!(
        NODE_LAST_SEEN,
        metrics::Unit::Seconds,
        "Unix time a data holder's node last asked this process for tasks."
    );
}

/// One SQLite commit that made `transactions` transactions durable.
pub fn store_flushed(transactions: usize) {
    counter!(STORE_FLUSHES).increment(1);
    counter!(STORE_FLUSHED_TRANSACTIONS).increment(transactions as u64);
}

/// One answered request. `route` is the matched route template, never the raw path, so ids
/// do not become label values.
pub fn http_request(method: &str, route: &str, status: u16, elapsed: Duration) {
    histogram!(
        HTTP_REQUEST_DURATION,
        "method" => method.to_owned(),
        "route" => route.to_owned(),
        "status" => status.to_string()
    )
    .record(elapsed.as_secs_f64());
}

/// A webhook event was delivered or given up.
pub fn webhook_delivery(endpoint: &str, outcome: &'static str) {
    counter!(WEBHOOK_DELIVERIES, "endpoint" => endpoint.to_owned(), "outcome" => outcome)
        .increment(1);
}

/// A data holder's node asked for tasks.
pub fn node_seen(holder: &OrgId) {
    gauge!(NODE_LAST_SEEN, "data_holder" => holder.as_str().to_owned()).set(unix_now());
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// What a transaction did that the metrics count, emitted when (and only if) it commits.
#[derive(Debug, Default)]
pub struct TxEvents {
    audit_appends: u64,
    rounds_started: u64,
    rounds_closed: Vec<RoundPhase>,
    tasks_expired: Vec<String>,
}

impl TxEvents {
    pub fn audit_appended(&mut self) {
        self.audit_appends += 1;
    }

    pub fn round_started(&mut self) {
        self.rounds_started += 1;
    }

    pub fn round_closed(&mut self, phase: RoundPhase) {
        self.rounds_closed.push(phase);
    }

    pub fn task_expired(&mut self, holder: String) {
        self.tasks_expired.push(holder);
    }

    /// Called after the commit succeeded.
    pub fn emit(self) {
        if self.audit_appends > 0 {
            counter!(AUDIT_APPENDS).increment(self.audit_appends);
        }
        if self.rounds_started > 0 {
            counter!(ROUNDS_STARTED).increment(self.rounds_started);
        }
        for phase in self.rounds_closed {
            counter!(ROUNDS_CLOSED, "phase" => phase.as_str()).increment(1);
        }
        for holder in self.tasks_expired {
            counter!(NODE_TASKS_EXPIRED, "data_holder" => holder).increment(1);
        }
    }
}

/// Connections of the database pool.
#[derive(Debug, Clone, Copy)]
pub struct PoolUsage {
    pub open: u32,
    pub idle: u32,
    pub max: u32,
}

/// Permits read per page while rendering the state.
const PERMIT_PAGE: i64 = 500;

/// The governance state as Prometheus text, rendered by a recorder of its own for this scrape
/// so a permit that ended leaves no stale series behind.
pub async fn render_state(
    store: &dyn Store,
    now: ehds_core::domain::time::Timestamp,
) -> anyhow::Result<String> {
    let mut tx = store.begin().await?;
    let mut permits = Vec::new();
    let mut offset = 0;
    loop {
        let page = tx
            .list_permits(
                &Scope::All,
                Page {
                    limit: PERMIT_PAGE,
                    offset,
                },
            )
            .await?;
        let full = page.len() as i64 == PERMIT_PAGE;
        permits.extend(page);
        if !full {
            break;
        }
        offset += PERMIT_PAGE;
    }
    let registry_version = tx.optout_registry_version().await?;
    drop(tx);
    let pool = store.pool_usage();

    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        describe_gauge!(
            PERMIT_EPSILON_BUDGET,
            "Epsilon a permit in force grants (its privacy budget)."
        );
        describe_gauge!(
            PERMIT_EPSILON_REMAINING,
            "Epsilon a permit in force has left."
        );
        describe_gauge!(
            PERMIT_EXPIRY,
            metrics::Unit::Seconds,
            "Unix time a permit in force expires."
        );
        describe_gauge!(PERMIT_SUSPENDED, "1 while a permit is suspended.");
        describe_gauge!(
            OPTOUT_REGISTRY_VERSION,
            "Version of the Art. 71 opt-out registry (one per recorded change)."
        );
        describe_gauge!(
            DB_POOL_CONNECTIONS,
            "Database connections of this process, by state (in_use, idle)."
        );
        describe_gauge!(DB_POOL_MAX, "Most database connections this process opens.");
        for permit in &permits {
            let state = permit.state(now);
            let suspended = match state {
                PermitState::Active => 0.0,
                PermitState::Suspended { .. } => 1.0,
                // nothing left to watch once it ended
                PermitState::Revoked { .. } | PermitState::Expired { .. } => continue,
            };
            let id = permit.id().to_string();
            let budget = permit.terms().privacy_budget.epsilon.value();
            gauge!(PERMIT_EPSILON_BUDGET, "permit" => id.clone()).set(budget);
            gauge!(PERMIT_EPSILON_REMAINING, "permit" => id.clone())
                .set(permit.epsilon_remaining());
            gauge!(PERMIT_EXPIRY, "permit" => id.clone())
                .set(permit.record().expires_at.timestamp() as f64);
            gauge!(PERMIT_SUSPENDED, "permit" => id).set(suspended);
        }
        gauge!(OPTOUT_REGISTRY_VERSION).set(registry_version as f64);
        gauge!(DB_POOL_CONNECTIONS, "state" => "in_use")
            .set(f64::from(pool.open.saturating_sub(pool.idle)));
        gauge!(DB_POOL_CONNECTIONS, "state" => "idle").set(f64::from(pool.idle));
        gauge!(DB_POOL_MAX).set(f64::from(pool.max));
    });
    Ok(handle.render())
}
