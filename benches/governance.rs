//! Governance-check benchmark: latency and throughput of `POST /v1/permits/{id}/check` on SQLite
//! and PostgreSQL, with the baselines that say where the time goes.
//!
//! For each backend it starts the real gateway in-process on a loopback port with a fresh
//! database, issues one permit, warms up, and then measures, each at concurrency 1 and 16:
//!
//! * `GET /healthz`: HTTP round trip through the full middleware stack, no token, no database;
//! * `POST /v1/permits/{id}/check` as the data holder: token verification, policy decision,
//!   permit read and one hash-chained audit append in one transaction;
//! * the token verification alone (`Authenticator::authenticate`, in-process, no HTTP): of
//!   the token every check sends, which the authenticator remembers once verified, and of a
//!   token not seen before each time (the signature checked);
//! * the policy decision alone (`Authorizer::is_allowed` for the check, Cedar, in-process);
//! * store transactions without HTTP: `get_permit` + commit (read-only baseline),
//!   `append_audit` + commit (one chained entry), and `get_permit` + `append_audit` + commit
//!   (the store work of one check).
//!
//! Every loop is bounded by a request count and by a time limit. At the end the whole audit chain
//! is verified, so the concurrent appends are shown to have kept it intact.
//!
//! Run: `cargo bench -p ehds-gateway --bench governance`
//!
//! Environment (all optional):
//! * `EHDS_BENCH_REQUESTS`: operations per measurement (default 2000);
//! * `EHDS_BENCH_SECONDS`: time bound per measurement (default 10);
//! * `EHDS_BENCH_WARMUP`: warm-up requests per endpoint (default 200);
//! * `EHDS_BENCH_BACKENDS`: `sqlite,postgres` (default both);
//! * `EHDS_BENCH_COMMIT`: `group,each` (default both): the store's commit mode, group commit or
//!   one flush per transaction (the store before group commit), each on a fresh gateway, so
//!   one run gives their ratio;
//! * `TEST_POSTGRES_URL`: administrative PostgreSQL URL (default
//!   `postgres://postgres@127.0.0.1:5432/postgres`); a database is created per run and dropped.
//!
//! A positional argument `sqlite` or `postgres` also selects the backend.

// The gateway in this process runs on the allocator the `ehds-gateway` program ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{
    future::Future,
    path::Path,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use anyhow::{bail, Context};
use ehds_core::{
    dev_issuer::DevIssuer,
    domain::{
        application::ApplicationRequest,
        audit::{Actor, ChainVerifier, NewAuditEvent},
        PermitId,
    },
};
use ehds_gateway::{
    auth::Authenticator,
    authz::{Action, Authorizer, Resource},
    configuration::Settings,
    startup::Application,
    store::{AuditFilter, CommitMode, Store},
};
use ehds_node::client::GatewayClient;
use serde_json::{json, Value};

const CONCURRENCY: [usize; 2] = [1, 16];

struct Config {
    requests: usize,
    limit: Duration,
    warmup: usize,
    backends: Vec<Backend>,
    commits: Vec<CommitMode>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl Config {
    fn from_env() -> Self {
        let mut names: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .collect();
        if names.is_empty() {
            names = std::env::var("EHDS_BENCH_BACKENDS")
                .unwrap_or_else(|_| "sqlite,postgres".into())
                .split(',')
                .map(|s| s.trim().to_owned())
                .collect();
        }
        let backends = names
            .iter()
            .filter_map(|n| match n.as_str() {
                "sqlite" => Some(Backend::Sqlite),
                "postgres" | "postgresql" => Some(Backend::Postgres),
                _ => None,
            })
            .collect();
        let commits = std::env::var("EHDS_BENCH_COMMIT")
            .unwrap_or_else(|_| "group,each".into())
            .split(',')
            .filter_map(|m| match m.trim() {
                "group" => Some(CommitMode::Group),
                "each" => Some(CommitMode::Each),
                _ => None,
            })
            .collect();
        Self {
            commits,
            requests: env_usize("EHDS_BENCH_REQUESTS", 2000).max(1),
            limit: Duration::from_secs(env_usize("EHDS_BENCH_SECONDS", 10).max(1) as u64),
            warmup: env_usize("EHDS_BENCH_WARMUP", 200),
            backends,
        }
    }
}

/// The outcome of one measurement: per-operation latencies of the operations that finished.
struct Stats {
    ok: usize,
    errors: usize,
    first_error: Option<String>,
    wall: Duration,
    latencies_ns: Vec<u64>,
    cpu: CpuUse,
}

#[path = "common/cpu.rs"]
mod cpu;
use cpu::{cpu_snapshot, CpuUse};

impl Stats {
    fn percentile(&self, p: f64) -> Duration {
        if self.latencies_ns.is_empty() {
            return Duration::ZERO;
        }
        // Nearest rank.
        let rank = ((p / 100.0) * self.latencies_ns.len() as f64).ceil() as usize;
        let i = rank.clamp(1, self.latencies_ns.len()) - 1;
        Duration::from_nanos(self.latencies_ns[i])
    }
    fn max(&self) -> Duration {
        Duration::from_nanos(self.latencies_ns.last().copied().unwrap_or(0))
    }
    fn per_second(&self) -> f64 {
        self.ok as f64 / self.wall.as_secs_f64()
    }
}

/// Runs `op` `n` times (or until `limit` has passed) from `concurrency` tasks that pull work
/// from a shared counter; times each call.
async fn measure<F, Fut>(concurrency: usize, n: usize, limit: Duration, op: F) -> Stats
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = cpu_snapshot();
    let start = Instant::now();
    let deadline = start + limit;
    let mut workers = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let op = op.clone();
        let next = next.clone();
        workers.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(n / concurrency + 1);
            let mut errors = 0usize;
            let mut first_error = None;
            while Instant::now() < deadline && next.fetch_add(1, Ordering::Relaxed) < n {
                let t = Instant::now();
                let r = op().await;
                let elapsed = t.elapsed().as_nanos() as u64;
                match r {
                    Ok(()) => lat.push(elapsed),
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert(e);
                    }
                }
            }
            (lat, errors, first_error)
        }));
    }
    let mut latencies_ns = Vec::with_capacity(n);
    let mut errors = 0;
    let mut first_error = None;
    for w in workers {
        let (lat, e, fe) = w.await.expect("benchmark worker panicked");
        latencies_ns.extend(lat);
        errors += e;
        if first_error.is_none() {
            first_error = fe;
        }
    }
    let wall = start.elapsed();
    let cpu = cpu_snapshot().since(&cpu_before);
    latencies_ns.sort_unstable();
    Stats {
        ok: latencies_ns.len(),
        errors,
        first_error,
        wall,
        latencies_ns,
        cpu,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn print_header() {
    let cols = [
        "p50 ms", "p90 ms", "p99 ms", "max ms", "ops/s", "self", "pg", "other",
    ];
    println!(
        "| {:<14} | {:<44} | {:>4} | {:>5} | {:>3} | {:>8} | {:>8} | {:>8} | {:>8} | {:>9} | {:>5} | {:>5} | {:>5} |",
        "backend/commit", "operation", "conc", "ok", "err", cols[0], cols[1], cols[2], cols[3], cols[4],
        cols[5], cols[6], cols[7]
    );
    println!(
        "|{:-<16}|{:-<46}|{:->6}|{:->7}|{:->5}|{:->10}|{:->10}|{:->10}|{:->10}|{:->11}|{:->7}|{:->7}|{:->7}|",
        "", "", "", "", "", "", "", "", "", "", "", "", ""
    );
}

fn report(setup: &str, operation: &str, concurrency: usize, s: &Stats, cfg: &Config) {
    println!(
        "| {:<14} | {:<44} | {:>4} | {:>5} | {:>3} | {:>8} | {:>8} | {:>8} | {:>8} | {:>9.0} | {:>5.2} | {:>5.2} | {:>5.2} |",
        setup,
        operation,
        concurrency,
        s.ok,
        s.errors,
        ms(s.percentile(50.0)),
        ms(s.percentile(90.0)),
        ms(s.percentile(99.0)),
        ms(s.max()),
        s.per_second(),
        s.cpu.this_process,
        s.cpu.postgres,
        s.cpu.other,
    );
    if s.ok + s.errors < cfg.requests {
        println!(
            "|          | (stopped by the {} s time bound after {} of {} operations)",
            cfg.limit.as_secs(),
            s.ok + s.errors,
            cfg.requests
        );
    }
    if let Some(e) = &s.first_error {
        println!("|          | first error: {e}");
    }
}

#[path = "common/env.rs"]
mod env;
use env::{create_postgres_database, drop_postgres_database, loadavg};

/// A running gateway with one permit that the data holder `hosp-1` may check.
struct Gateway {
    /// Anonymous client of the gateway (`/healthz`).
    client: GatewayClient,
    /// The same connection pool, as the data holder.
    holder: GatewayClient,
    store: Arc<dyn Store>,
    auth: Arc<Authenticator>,
    authz: Arc<Authorizer>,
    permit: PermitId,
    holder_token: String,
    /// Tokens of the data holder never sent before, one per first verification measured.
    fresh_tokens: Arc<Vec<String>>,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
}

fn application_body() -> anyhow::Result<ApplicationRequest> {
    let now = chrono::Utc::now();
    Ok(serde_json::from_value(json!({
        "title": "Federated model of heart-disease risk",
        "applicant": {"organisation": "uni-a", "public_body": false},
        "purposes": ["scientific_research"],
        "research_flags": ["algorithm_training"],
        "categories": ["ehr_data", "health_determinants"],
        "data_holders": ["hosp-1", "hosp-2"],
        "member_states": ["DE", "HU"],
        "requested_period": {"start": now.to_rfc3339(), "end": (now + chrono::Duration::days(365)).to_rfc3339()},
        "privacy_budget": {"epsilon": 8.0, "delta": 1e-5, "unit": "record"},
        "justification": "Training a risk model across hospitals without moving records.",
        "declares_no_prohibited_use": true
    }))?)
}

async fn start_gateway(
    data_dir: &Path,
    database_url: String,
    commit: CommitMode,
    fresh_tokens: usize,
) -> anyhow::Result<Gateway> {
    let mut settings = Settings {
        listen: "127.0.0.1:0".parse()?,
        data_dir: data_dir.to_path_buf(),
        database_url: Some(database_url),
        ..Settings::default()
    };
    settings.audit.commit = commit;
    // one data holder sends every check: its quota would cap what is measured
    settings.http.per_principal_per_second = 0;
    let audience = settings.auth.audience.clone();
    let app = Application::build(settings, true).await?;
    let base = app.base_url().to_owned();
    let store = app.state().store.clone();
    let auth = app.state().auth.clone();
    let authz = app.state().authz.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until_stopped(async {
        let _ = stopped.await;
    }));

    let dev = DevIssuer::load_or_create(data_dir, &base, &audience)?;
    let mint =
        |sub: &str, role: &str, org: &str| dev.mint(sub, &[role.to_owned()], Some(org), 3600);
    let researcher = mint("alice", "researcher", "uni-a")?;
    let officer = mint("officer-1", "hdab_officer", "hdab-de")?;
    let holder_token = mint("node-hosp-1", "data_holder", "hosp-1")?;
    let fresh_tokens = (0..fresh_tokens)
        .map(|i| mint(&format!("node-hosp-1-{i}"), "data_holder", "hosp-1"))
        .collect::<anyhow::Result<Vec<_>>>()?;

    let client = GatewayClient::builder(&base)
        .pool_max_idle_per_host(64)
        .build()?;
    let created = client
        .with_token(researcher)
        .create_application(&application_body()?)
        .await
        .context("application")?;
    let permit = client
        .with_token(officer)
        .approve_application(created.id)
        .await
        .context("decision")?;
    Ok(Gateway {
        holder: client.with_token(holder_token.clone()),
        client,
        store,
        auth,
        authz,
        permit,
        holder_token,
        fresh_tokens: Arc::new(fresh_tokens),
        stop,
        server,
    })
}

fn check_body() -> Value {
    json!({
        "purpose": "scientific_research",
        "categories": ["ehr_data"],
        "data_holders": ["hosp-1"],
        "epsilon": 0.1
    })
}

/// One governance check over HTTP; an answer other than 200 with `allowed: true` is an error.
fn check_op(
    g: &Gateway,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
       + Send
       + Sync
       + 'static {
    let holder = g.holder.clone();
    let permit = g.permit;
    let body = Arc::new(check_body());
    move || {
        let (holder, body) = (holder.clone(), body.clone());
        Box::pin(async move {
            let outcome = holder
                .check_permit(permit, body.as_ref())
                .await
                .map_err(|e| e.to_string())?;
            if !outcome.allowed {
                return Err(format!("denied: {:?}", outcome.reasons));
            }
            Ok(())
        })
    }
}

fn healthz_op(
    g: &Gateway,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
       + Send
       + Sync
       + 'static {
    let client = g.client.clone();
    move || {
        let client = client.clone();
        Box::pin(async move { client.healthz().await.map_err(|e| e.to_string()) })
    }
}

#[derive(Clone, Copy)]
enum StoreWork {
    /// begin, get_permit, commit.
    Read,
    /// begin, append_audit, commit.
    Append,
    /// begin, get_permit, append_audit, commit: the store work of one check.
    ReadAppend,
}

impl StoreWork {
    fn label(self) -> &'static str {
        match self {
            StoreWork::Read => "store tx: get_permit + commit",
            StoreWork::Append => "store tx: append_audit + commit",
            StoreWork::ReadAppend => "store tx: get_permit + append_audit + commit",
        }
    }
}

async fn store_tx(store: &dyn Store, permit: PermitId, work: StoreWork) -> Result<(), String> {
    let e = |e: ehds_gateway::store::StoreError| e.to_string();
    let mut tx = store.begin().await.map_err(e)?;
    if matches!(work, StoreWork::Read | StoreWork::ReadAppend) {
        tx.get_permit(permit)
            .await
            .map_err(e)?
            .ok_or("permit not found")?;
    }
    if matches!(work, StoreWork::Append | StoreWork::ReadAppend) {
        tx.append_audit(
            NewAuditEvent::success(
                &Actor::system(),
                // any action: the cost is the append, whatever it records
                ehds_gateway::authz::Action::PermitRead,
                ehds_core::domain::audit::AuditSubject::Permit(permit),
            )
            .permit(permit),
        )
        .await
        .map_err(e)?;
    }
    tx.commit().await.map_err(e)
}

fn store_op(
    g: &Gateway,
    work: StoreWork,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
       + Send
       + Sync
       + 'static {
    let store = g.store.clone();
    let permit = g.permit;
    move || {
        let store = store.clone();
        Box::pin(async move { store_tx(store.as_ref(), permit, work).await })
    }
}

fn auth_op(
    g: &Gateway,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
       + Send
       + Sync
       + 'static {
    let auth = g.auth.clone();
    let token = Arc::new(g.holder_token.clone());
    move || {
        let auth = auth.clone();
        let token = token.clone();
        Box::pin(async move {
            auth.authenticate(&token)
                .await
                .map(|_| ())
                .map_err(|e| format!("{e:?}"))
        })
    }
}

/// The first verification of a token: each call verifies a token not sent before, so the
/// signature is checked every time (a token seen before is answered from the authenticator's
/// memory, as `auth_op` measures). Runs out, with an error, after the tokens minted for it.
fn first_auth_op(
    g: &Gateway,
    next: Arc<AtomicUsize>,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
       + Send
       + Sync
       + 'static {
    let auth = g.auth.clone();
    let tokens = g.fresh_tokens.clone();
    move || {
        let (auth, tokens, next) = (auth.clone(), tokens.clone(), next.clone());
        Box::pin(async move {
            let token = tokens
                .get(next.fetch_add(1, Ordering::Relaxed))
                .ok_or("every token minted for first verifications was used")?;
            auth.authenticate(token)
                .await
                .map(|_| ())
                .map_err(|e| format!("{e:?}"))
        })
    }
}

/// The policy decision of a check (Cedar, in-process) for the data holder on the permit.
async fn policy_op(
    g: &Gateway,
) -> anyhow::Result<
    impl Fn() -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
        + Send
        + Sync
        + 'static,
> {
    let principal = Arc::new(
        g.auth
            .authenticate(&g.holder_token)
            .await
            .map_err(|e| anyhow::anyhow!("{e:?}"))?,
    );
    let permit = {
        let mut tx = g.store.begin().await?;
        let p = tx.get_permit(g.permit).await?.context("permit not found")?;
        tx.commit().await?;
        Arc::new(p)
    };
    let authz = g.authz.clone();
    Ok(move || {
        let (authz, principal, permit) = (authz.clone(), principal.clone(), permit.clone());
        Box::pin(async move {
            match authz.is_allowed(&principal, Action::PermitCheck, &Resource::Permit(&permit)) {
                Ok(true) => Ok(()),
                Ok(false) => Err("policy denied the check".to_owned()),
                Err(e) => Err(e.to_string()),
            }
        }) as std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
    })
}

/// Reads the whole audit trail in sequence order and verifies the hash chain.
async fn verify_chain(store: &dyn Store) -> anyhow::Result<(u64, bool)> {
    let mut verifier = ChainVerifier::default();
    let mut after = 0i64;
    loop {
        let mut tx = store.begin().await?;
        let page = tx
            .list_audit(&AuditFilter {
                after_seq: Some(after),
                limit: 5000,
                ..Default::default()
            })
            .await?;
        tx.commit().await?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for entry in &page {
            verifier.feed(entry);
        }
    }
    let r = verifier.finish();
    Ok((r.entries_checked, r.valid))
}

async fn bench_backend(backend: Backend, commit: CommitMode, cfg: &Config) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (url, pg_name) = match backend {
        Backend::Sqlite => (
            format!(
                "sqlite://{}?mode=rwc",
                dir.path().join("gateway.db").display()
            ),
            None,
        ),
        Backend::Postgres => {
            let (url, name) = create_postgres_database().await?;
            (url, Some(name))
        }
    };
    let result = run_backend(backend, commit, cfg, dir.path(), url).await;
    if let Some(name) = pg_name {
        if let Err(e) = drop_postgres_database(&name).await {
            eprintln!("could not drop database {name}: {e:#}");
        }
    }
    result
}

async fn run_backend(
    backend: Backend,
    commit: CommitMode,
    cfg: &Config,
    data_dir: &Path,
    url: String,
) -> anyhow::Result<()> {
    // a new token for every first verification at each concurrency
    let g = start_gateway(data_dir, url, commit, CONCURRENCY.len() * cfg.requests).await?;
    let setup = format!(
        "{}/{}",
        backend.name(),
        match commit {
            CommitMode::Group => "group",
            CommitMode::Each => "each",
        }
    );
    let setup = setup.as_str();

    // Warm-up: opens the connection pools (HTTP and database), fetches the signing keys once,
    // and fills caches. Not counted.
    let warm = cfg.warmup;
    let warm_limit = Duration::from_secs(10);
    for s in [
        measure(16, warm, warm_limit, healthz_op(&g)).await,
        measure(16, warm, warm_limit, check_op(&g)).await,
        measure(1, warm, warm_limit, check_op(&g)).await,
        measure(4, warm, warm_limit, store_op(&g, StoreWork::ReadAppend)).await,
    ] {
        if s.errors > 0 {
            bail!(
                "warm-up failed on {}: {}",
                backend.name(),
                s.first_error.unwrap_or_default()
            );
        }
    }

    let (n, limit) = (cfg.requests, cfg.limit);
    for c in CONCURRENCY {
        let s = measure(c, n, limit, healthz_op(&g)).await;
        report(setup, "GET /healthz (HTTP only, no db)", c, &s, cfg);
    }
    for c in CONCURRENCY {
        let s = measure(c, n, limit, check_op(&g)).await;
        report(setup, "POST /v1/permits/{id}/check", c, &s, cfg);
    }
    for c in CONCURRENCY {
        let s = measure(c, n, limit, auth_op(&g)).await;
        report(
            setup,
            "token verification, same token (in-process)",
            c,
            &s,
            cfg,
        );
    }
    let next_fresh = Arc::new(AtomicUsize::new(0));
    for c in CONCURRENCY {
        let s = measure(c, n, limit, first_auth_op(&g, next_fresh.clone())).await;
        report(
            setup,
            "token verification, new token (in-process)",
            c,
            &s,
            cfg,
        );
    }
    for c in CONCURRENCY {
        let s = measure(c, n, limit, policy_op(&g).await?).await;
        report(setup, "policy decision, Cedar (in-process)", c, &s, cfg);
    }
    for work in [StoreWork::Read, StoreWork::Append, StoreWork::ReadAppend] {
        for c in CONCURRENCY {
            let s = measure(c, n, limit, store_op(&g, work)).await;
            report(setup, work.label(), c, &s, cfg);
        }
    }

    let t = Instant::now();
    let (entries, valid) = verify_chain(g.store.as_ref()).await?;
    println!(
        "|          | audit chain after the run: {entries} entries, {} (verified in {} ms)",
        if valid { "intact" } else { "BROKEN" },
        ms(t.elapsed())
    );

    let _ = g.stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), g.server).await;
    drop(g.store);
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cfg = Config::from_env();
    println!("governance benchmark");
    println!(
        "  {} operations per measurement, at most {} s each; concurrency {:?}; warm-up {} per endpoint",
        cfg.requests,
        cfg.limit.as_secs(),
        CONCURRENCY,
        cfg.warmup
    );
    println!(
        "  {} CPUs visible; tokio workers shared by the gateway and the load generator",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("  load average (1/5/15 min) at start: {}", loadavg());
    println!(
        "  self / pg / other: average cores busy during each measurement in this process (gateway\n  \
         and load generator), in the PostgreSQL server, and in everything else on the machine"
    );
    println!();
    print_header();
    let started = Instant::now();
    let mut failed = false;
    for backend in cfg.backends.iter().copied() {
        for commit in cfg.commits.iter().copied() {
            if let Err(e) = bench_backend(backend, commit, &cfg).await {
                println!("| {:<14} | FAILED: {e:#} ({commit:?})", backend.name());
                failed = true;
            }
        }
    }
    println!();
    println!("  load average (1/5/15 min) at end:   {}", loadavg());
    println!("  total time: {:.1} s", started.elapsed().as_secs_f64());
    if failed {
        std::process::exit(1);
    }
    Ok(())
}
