//! An authenticated caller's latency while callers without credentials flood the gateway.
//!
//! For each backend it starts the real gateway in-process on a loopback port with a fresh
//! database, issues one permit, and measures `GET /v1/permits/{id}` as its officer (token check,
//! Cedar, permit read, one audit append) sequentially:
//!
//! 1. idle (the baseline of the same run);
//! 2. while `--flooders` connections (default 4) of a second process send forged tokens with
//!    6 kB key ids and 1 kB request ids as fast as the gateway answers them.
//!
//! It prints p50 / p99 of both phases, their ratio, the flood's request rate and how many audit
//! entries and bytes the flood added (against the documented bound in docs/security.md).
//!
//! Run: `cargo bench -p ehds-gateway --bench flood` (options after `--`: `--backend
//! sqlite|postgres|both`, `--requests 2000`, `--flooders 4`, `--throttled-hold-ms N` (default:
//! the setting's, 1000; 0 answers throttled sources at once); PostgreSQL at
//! `TEST_POSTGRES_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`).

// The gateway in this process runs on the allocator the `ehds-gateway` program ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use ehds_core::dev_issuer::DevIssuer;
use ehds_gateway::{configuration::Settings, startup::Application};
use serde_json::{json, Value};

struct Args {
    backends: Vec<&'static str>,
    requests: usize,
    flooders: usize,
    /// `http.throttled_hold_ms` of the gateway under test (default: the setting's default).
    hold_ms: Option<u64>,
    /// Set in the flooding child process: the URL to flood.
    flood_child: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        backends: vec!["sqlite", "postgres"],
        requests: 2000,
        flooders: 4,
        hold_ms: None,
        flood_child: None,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let value = argv.get(i + 1).cloned().unwrap_or_default();
        match argv[i].as_str() {
            "--backend" => {
                a.backends = match value.as_str() {
                    "sqlite" => vec!["sqlite"],
                    "postgres" => vec!["postgres"],
                    _ => vec!["sqlite", "postgres"],
                };
                i += 1;
            }
            "--requests" => {
                a.requests = value.parse().expect("--requests N");
                i += 1;
            }
            "--throttled-hold-ms" => {
                a.hold_ms = Some(value.parse().expect("--throttled-hold-ms N"));
                i += 1;
            }
            "--flood-child" => {
                a.flood_child = Some(value);
                i += 1;
            }
            "--flooders" => {
                a.flooders = value.parse().expect("--flooders N");
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    a
}

async fn database(backend: &str, dir: &std::path::Path) -> anyhow::Result<String> {
    if backend == "sqlite" {
        return Ok(format!("sqlite://{}?mode=rwc", dir.join("g.db").display()));
    }
    use sqlx::Executor;
    let admin = std::env::var("TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let name = format!("ehds_bench_{}", uuid::Uuid::new_v4().simple());
    let pool = sqlx::PgPool::connect(&admin).await?;
    pool.execute(sqlx::AssertSqlSafe(format!("create database {name}")))
        .await?;
    let (base, _) = admin.rsplit_once('/').expect("URL with a path");
    Ok(format!("{base}/{name}"))
}

async fn audit_size(url: &str) -> anyhow::Result<(i64, i64)> {
    let q = "select count(*), cast(coalesce(sum(length(detail) + coalesce(length(request_id), 0) \
             + length(actor_sub) + length(action) + 200), 0) as bigint) from audit_event";
    Ok(if url.starts_with("sqlite") {
        sqlx::query_as(q)
            .fetch_one(&sqlx::SqlitePool::connect(url).await?)
            .await?
    } else {
        sqlx::query_as(q)
            .fetch_one(&sqlx::PgPool::connect(url).await?)
            .await?
    })
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn timed_reads(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    n: usize,
) -> anyhow::Result<Vec<f64>> {
    let mut ms = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = client.get(url).bearer_auth(token).send().await?;
        anyhow::ensure!(
            r.status() == 200,
            "authenticated read answered {}",
            r.status()
        );
        r.bytes().await?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms)
}

async fn run(backend: &'static str, args: &Args) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = database(backend, dir.path()).await?;
    let mut settings = Settings {
        listen: "127.0.0.1:0".parse()?,
        data_dir: dir.path().to_path_buf(),
        database_url: Some(url.clone()),
        ..Default::default()
    };
    if let Some(ms) = args.hold_ms {
        settings.http.throttled_hold_ms = ms;
    }
    // the measured officer's requests come back to back, faster than its quota
    settings.http.per_principal_per_second = 0;
    let app = Application::build(settings.clone(), true).await?;
    let base = app.base_url().to_owned();
    tokio::spawn(app.run_until_stopped(std::future::pending()));
    let dev = DevIssuer::load_or_create(dir.path(), &base, &settings.auth.audience)?;
    let officer = dev.mint("olaf", &["hdab_officer".into()], Some("hdab-de"), 3600)?;
    let researcher = dev.mint("alice", &["researcher".into()], Some("uni-a"), 3600)?;
    let client = ehds_http::builder().build().unwrap();
    let now = chrono::Utc::now();
    let created: Value = client
        .post(format!("{base}/v1/applications"))
        .bearer_auth(&researcher)
        .json(&json!({
            "title": "Flood benchmark", "applicant": {"organisation": "uni-a", "public_body": false},
            "purposes": ["scientific_research"], "research_flags": ["algorithm_training"],
            "categories": ["ehr_data"], "data_holders": ["hosp-1"], "member_states": ["DE"],
            "requested_period": {"start": now.to_rfc3339(), "end": (now + chrono::Duration::days(365)).to_rfc3339()},
            "privacy_budget": {"epsilon": 8.0, "delta": 1e-5, "unit": "record"},
            "justification": "Benchmark.", "declares_no_prohibited_use": true}))
        .send()
        .await?
        .json()
        .await?;
    let decided: Value = client
        .post(format!(
            "{base}/v1/applications/{}/decision",
            created["id"].as_str().unwrap_or_default()
        ))
        .bearer_auth(&officer)
        .json(&json!({"decision": "approve"}))
        .send()
        .await?
        .json()
        .await?;
    let permit_url = format!(
        "{base}/v1/permits/{}",
        decided["permit"]["id"].as_str().unwrap_or_default()
    );
    timed_reads(&client, &permit_url, &officer, 200).await?; // warm-up
    let idle = timed_reads(&client, &permit_url, &officer, args.requests).await?;

    let (rows_before, bytes_before) = audit_size(&url).await?;
    // The flood comes from a second process, as it would from another host: the gateway's
    // runtime serves it but does not also run its clients.
    let mut flood = tokio::process::Command::new(std::env::current_exe()?)
        .args(["--flood-child", &format!("{base}/v1/permits")])
        .args(["--flooders", &args.flooders.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let flooded = timed_reads(&client, &permit_url, &officer, args.requests).await?;
    let elapsed = started.elapsed().as_secs_f64();
    drop(flood.stdin.take()); // closing its stdin stops the flood
    let output = flood.wait_with_output().await?;
    let sent: f64 = String::from_utf8_lossy(&output.stdout).trim().parse()?;
    // The count covers the 0.5 s warm-up as well.
    let flood_rate = sent / (elapsed + 0.5);
    let (rows_after, bytes_after) = audit_size(&url).await?;
    let (p50_i, p99_i) = (percentile(&idle, 0.5), percentile(&idle, 0.99));
    let (p50_f, p99_f) = (percentile(&flooded, 0.5), percentile(&flooded, 0.99));
    println!(
        "{backend:8} hold {} ms | idle p50 {p50_i:.2} ms p99 {p99_i:.2} ms | flooded p50 {p50_f:.2} ms p99 {p99_f:.2} ms | p99 ratio {:.2} | flood {flood_rate:.0} req/s for {elapsed:.1} s | audit +{} entries (+{} authenticated reads), +{} kB",
        settings.http.throttled_hold_ms,
        p99_f / p99_i,
        rows_after - rows_before - args.requests as i64,
        args.requests,
        (bytes_after - bytes_before) / 1024,
    );
    Ok(())
}

/// The flooding process: `flooders` connections send forged tokens with 6 kB key ids and 1 kB
/// request ids to `url` as fast as they are answered, until stdin closes; then it prints how
/// many requests it sent.
async fn flood_child(url: String, flooders: usize) -> anyhow::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for w in 0..flooders {
        let (stop, sent, url) = (stop.clone(), sent.clone(), url.clone());
        let header = URL_SAFE_NO_PAD
            .encode(json!({"alg": "ES256", "kid": format!("{}{w}", "K".repeat(6000))}).to_string());
        let token = format!("{header}.e30.AAAA");
        tasks.push(tokio::spawn(async move {
            let client = ehds_http::builder().build().unwrap();
            while !stop.load(Ordering::Relaxed) {
                let n = sent.fetch_add(1, Ordering::Relaxed);
                let _ = client
                    .get(&url)
                    .bearer_auth(&token)
                    .header("x-request-id", format!("{}{n}", "Q".repeat(1000)))
                    .send()
                    .await;
            }
        }));
    }
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    })
    .await?;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    println!("{}", sent.load(Ordering::Relaxed));
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args();
    if let Some(url) = args.flood_child.clone() {
        return flood_child(url, args.flooders).await;
    }
    for backend in args.backends.clone() {
        run(backend, &args).await?;
    }
    Ok(())
}
