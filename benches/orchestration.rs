//! Orchestration benchmark: what the gateway itself spends per federated round (governance,
//! task dispatch, upload validation, DP aggregation, budget, checkpoint, audit), without any
//! training, and how that grows with the number of data holders.
//!
//! For each backend and each federation size N it starts the real gateway in-process on a
//! loopback port with a fresh database, issues a permit naming N data holders (`node-0000`, ...),
//! starts N simulated nodes and submits a study (logistic model on the example feature
//! specification, FedAvg, client-level DP with a fixed noise multiplier, one local step,
//! `min_sites = N`). A simulated node is a tokio task that speaks the real node protocol over
//! HTTP: it long-polls `GET /v1/node/tasks?wait=`, downloads the parameters, and uploads them
//! unchanged (`encode_update` of what `decode_fit_ins` gave it) with fixed counts and no
//! evaluation. Nothing is trained, so what is measured is the gateway's work.
//!
//! Round times come from the server's own timestamps, the `recorded_at` of the audit entries
//! the round loop and the node requests append (stamped inside their transactions). A round
//! runs from its `study.round.start` entry to its `study.round.aggregate` entry; in between the
//! bench reports when the last task was delivered, the last parameters downloaded and the last
//! result accepted, and the aggregation transition alone (from the later of the round's
//! `closed_at` and the last result). The cycle runs from one start entry to the next. Medians
//! skip round 1 when there are at least three rounds (warm-up); every round is printed.
//!
//! Baselines from the same run, so that ratios carry to other machines: one authenticated and
//! audited `GET /v1/permits/{id}` (token check, Cedar, permit read, one audit append) on a
//! second, two-holder permit; one in-process store transaction appending one audit entry; and
//! `GET /healthz`. After the study it also times, in-process, the reads every node request
//! makes before its own work (task, study, permit, the round's registry version), the reads of
//! one wake-up of the round loop while a round collects (study, permit, open round, the count of
//! the round's tasks and results), and the
//! reads of a long poll woken by a change that brings it no task (its pending tasks).
//!
//! With `--secure` it measures what secure aggregation adds to the whole round: in the same
//! process, gateway and nodes, it runs a study without it and one with it, alternately
//! (`--pairs` times each), on an MLP of about `--params` parameters, without DP in both (the
//! permit allows studies without formal DP). In the secure study a simulated node downloads the
//! parameters and takes part in the secure aggregation with a zero delta through the node
//! agent's own `secure_round` (encoding, key agreement, Shamir sharing, masking and unmasking,
//! each stage posted to and polled from `/v1/node/tasks/{id}/secagg`); its result goes out
//! after its masked input, as a real node's does. Nothing is trained in either study. The
//! graph is complete below 100 holders and SecAgg+ with `2⌈log₂ N⌉` neighbours from 100 on
//! (the secagg bench's rule); the threshold is the study default.
//!
//! The simulated nodes run on a tokio runtime of their own (threads named `sim-node`), so that a
//! sampler thread can split the process's CPU per round between the nodes and the gateway (the
//! rest of the process). With `--separate-nodes` they run in a second process instead (the bench
//! started again with the internal flag `--sim-nodes` and a file naming its nodes and their
//! tokens, reporting its counts on its standard output): the gateway's process then
//! holds one socket per node instead of two, which 10,000 holders need where the open-file limit
//! is 20,000, and its peak RSS is the gateway's alone; the nodes' CPU is that process's.
//!
//! Run: `cargo bench -p ehds-tools --bench orchestration -- [options]`
//!
//! * `--backend sqlite|postgres|both` (default both);
//! * `--nodes 4,100,1000` (default; 10,100 with `--secure`);
//! * `--rounds R`: rounds per study (default 5; 3 with `--secure`);
//! * `--rounds-large R`: rounds for N >= 1000 (default 4; 3 with `--secure`);
//! * `--timeout S`: give up on a study after S seconds (default 600);
//! * `--params 10000,1000000`: an MLP of about this many parameters instead of the logistic
//!   model (default with `--secure`: 10000,1000000);
//! * `--secure`: each case with and without secure aggregation, alternately;
//! * `--pairs P`: with `--secure`, studies of each kind per case (default 2);
//! * `--separate-nodes`: the simulated nodes in a process of their own.
//!
//! `TEST_POSTGRES_URL` names the administrative PostgreSQL URL (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); a database is created per run and dropped.
//! Each configuration runs in a process of its own (the bench starts itself again with the
//! internal flag `--run-one`), so its peak RSS (`VmHWM`) is that run's: the gateway and the
//! simulated nodes together, or the gateway alone with `--separate-nodes`.

// The gateway in this process runs on the allocator the `ehds-gateway` program ships with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{
    path::Path,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use anyhow::{bail, ensure, Context};
use chrono::{DateTime, Utc};
use ehds_core::{
    dev_issuer::DevIssuer,
    domain::{
        application::ApplicationRequest,
        audit::{Actor, AuditEntry, ChainVerifier, NewAuditEvent},
        study::{RoundPhase, StudyStatus, TaskKind},
        time, OrgId, PermitId, StudyId,
    },
    wire::{encode_update, NodeTask, TaskResultBody},
};
use ehds_gateway::{
    configuration::Settings,
    startup::Application,
    store::{AuditFilter, CommitMode, Store},
};
use ehds_node::{
    agent::secure_round,
    client::{GatewayClient, RetryPolicy},
};
use serde_json::{json, Value};

/// Seconds a simulated node's long poll waits for a task.
const POLL_WAIT_SECONDS: u64 = 10;
/// Operations per baseline measurement (after as many again for warm-up, at most).
const BASELINE_OPS: usize = 300;
/// How long a simulated node waits for an answer before it retries: a secure-aggregation
/// message of a large model can wait minutes for the store's lock, and a shorter timeout would
/// retry it and add to the load.
const NODE_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// Name prefix of the simulated nodes' runtime threads.
const NODE_THREADS: &str = "sim-node";
/// How often the sampler thread reads the CPU counters.
const CPU_SAMPLE_EVERY: Duration = Duration::from_millis(20);
const FEATURES: &str = "examples/federation/heart_disease.features.json";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        }
    }
}

struct Config {
    backends: Vec<Backend>,
    nodes: Vec<usize>,
    rounds: u64,
    rounds_large: u64,
    timeout: Duration,
    /// Model sizes to run (an MLP of about this many parameters each); empty: the logistic
    /// model.
    params: Vec<usize>,
    /// Each case with and without secure aggregation, alternately, without DP.
    secure: bool,
    /// With `secure`: studies of each kind per case.
    pairs: u64,
    /// Internal: run exactly one configuration in this process.
    run_one: bool,
    /// The store's commit mode (`--commit group|each`), for the ratio against one flush per
    /// transaction.
    commit: CommitMode,
    /// The simulated nodes in a process of their own.
    separate_nodes: bool,
}

const USAGE: &str = "options: --backend sqlite|postgres|both  --nodes 4,100,1000  --rounds R  \
                     --rounds-large R (N >= 1000)  --timeout SECONDS  --params 10000,1000000  \
                     --secure  --pairs P  --commit group|each  --separate-nodes";

fn number_list(v: &str, flag: &str) -> anyhow::Result<Vec<usize>> {
    v.split(',')
        .map(|n| n.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .with_context(|| format!("{flag} takes a list of numbers; {USAGE}"))
}

impl Config {
    fn from_args() -> anyhow::Result<Self> {
        let mut cfg = Config {
            backends: vec![Backend::Sqlite, Backend::Postgres],
            nodes: vec![],
            rounds: 0,
            rounds_large: 0,
            timeout: Duration::from_secs(600),
            params: vec![],
            secure: false,
            pairs: 2,
            run_one: false,
            commit: CommitMode::Group,
            separate_nodes: false,
        };
        // given or the mode's default
        let (mut nodes, mut rounds, mut rounds_large, mut params) = (None, None, None, None);
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            // `cargo bench` passes `--bench` to every bench binary.
            if arg == "--bench" {
                continue;
            }
            if arg == "--run-one" {
                cfg.run_one = true;
                continue;
            }
            if arg == "--separate-nodes" {
                cfg.separate_nodes = true;
                continue;
            }
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
                None => (arg.clone(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .with_context(|| format!("{flag} needs a value; {USAGE}"))
            };
            match flag.as_str() {
                "--backend" => {
                    cfg.backends = match value()?.as_str() {
                        "sqlite" => vec![Backend::Sqlite],
                        "postgres" | "postgresql" => vec![Backend::Postgres],
                        "both" => vec![Backend::Sqlite, Backend::Postgres],
                        other => bail!("unknown backend `{other}`; {USAGE}"),
                    }
                }
                "--nodes" => nodes = Some(number_list(&value()?, "--nodes")?),
                "--rounds" => rounds = Some(value()?.parse()?),
                "--rounds-large" => rounds_large = Some(value()?.parse()?),
                "--timeout" => cfg.timeout = Duration::from_secs(value()?.parse()?),
                "--params" => params = Some(number_list(&value()?, "--params")?),
                "--secure" => cfg.secure = true,
                "--pairs" => cfg.pairs = value()?.parse()?,
                "--commit" => {
                    cfg.commit = match value()?.as_str() {
                        "group" => CommitMode::Group,
                        "each" => CommitMode::Each,
                        other => bail!("unknown commit mode `{other}`; {USAGE}"),
                    }
                }
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => bail!("unknown argument `{other}`; {USAGE}"),
            }
        }
        let secure = cfg.secure;
        cfg.nodes = nodes.unwrap_or_else(|| match secure {
            true => vec![10, 100],
            false => vec![4, 100, 1000],
        });
        cfg.rounds = rounds.unwrap_or(if secure { 3 } else { 5 });
        cfg.rounds_large = rounds_large.unwrap_or(if secure { 3 } else { 4 });
        cfg.params = params.unwrap_or_else(|| match secure {
            true => vec![10_000, 1_000_000],
            false => vec![],
        });
        if cfg.nodes.iter().any(|&n| n == 0 || n > 99_999) {
            bail!("--nodes must lie in 1-99999");
        }
        if cfg.rounds == 0 || cfg.rounds_large == 0 {
            bail!("rounds must be at least 1");
        }
        if cfg.params.iter().any(|&p| p < 100) {
            bail!("--params must be at least 100");
        }
        if cfg.secure && (cfg.pairs == 0 || cfg.nodes.iter().any(|&n| n < 3)) {
            bail!("--secure needs --pairs of at least 1 and at least 3 nodes");
        }
        if cfg.run_one && (cfg.backends.len() != 1 || cfg.nodes.len() != 1 || cfg.params.len() > 1)
        {
            bail!("--run-one takes exactly one backend, federation size and model size");
        }
        Ok(cfg)
    }

    fn rounds_for(&self, nodes: usize) -> u64 {
        if nodes >= 1000 {
            self.rounds_large
        } else {
            self.rounds
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Machine measurements: CPU use from /proc (as in benches/governance.rs) and peak RSS.

#[path = "common/cpu.rs"]
mod cpu;
use cpu::{cpu_snapshot, CpuUse};

/// The process's peak resident set size in MiB (`VmHWM`).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The CPU counters at one instant: the machine's (busy, total) ticks, the gateway's (this
/// process less its simulated nodes' threads) and the simulated nodes' (their threads, or their
/// process).
#[derive(Clone, Copy)]
struct CpuSample {
    at: DateTime<Utc>,
    machine: (u64, u64),
    gateway: u64,
    nodes: u64,
}

/// A thread that reads the CPU counters every [`CPU_SAMPLE_EVERY`] until finished, so that a
/// round's CPU can be taken between the samples around its server timestamps.
struct CpuSampler {
    samples: Arc<Mutex<Vec<CpuSample>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl CpuSampler {
    /// Samples until finished; `node_process` is the simulated nodes' process, if apart.
    fn start(node_process: Option<u32>) -> Self {
        let samples: Arc<Mutex<Vec<CpuSample>>> = Default::default();
        let stop: Arc<std::sync::atomic::AtomicBool> = Default::default();
        let thread = std::thread::spawn({
            let (samples, stop) = (samples.clone(), stop.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    let node_threads = cpu::thread_ticks(NODE_THREADS);
                    let sample = CpuSample {
                        at: Utc::now(),
                        machine: cpu::machine_ticks().unwrap_or_default(),
                        gateway: cpu::self_ticks().saturating_sub(node_threads),
                        nodes: node_threads + node_process.map_or(0, cpu::pid_ticks),
                    };
                    if let Ok(mut s) = samples.lock() {
                        s.push(sample);
                    }
                    std::thread::sleep(CPU_SAMPLE_EVERY);
                }
            }
        });
        Self {
            samples,
            stop,
            thread,
        }
    }

    /// The samples so far.
    fn samples(&self) -> Vec<CpuSample> {
        self.samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

/// CPU seconds that the gateway and the simulated nodes used from `a` to `b`, taken between the last sample before `a` and the first after `b`.
fn cpu_between(samples: &[CpuSample], a: DateTime<Utc>, b: DateTime<Utc>) -> Option<(f64, f64)> {
    let from = samples.iter().rev().find(|s| s.at <= a)?;
    let to = samples.iter().find(|s| s.at >= b)?;
    let total = to
        .machine
        .1
        .checked_sub(from.machine.1)
        .filter(|&t| t > 0)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let wall = ms_between(from.at, to.at) / 1e3;
    // ticks over all ticks, times the CPUs, is cores in use; times the wall time, seconds
    let seconds = |ticks: u64| ticks as f64 / total as f64 * cpus * wall;
    let nodes = to.nodes.saturating_sub(from.nodes);
    let gateway = to.gateway.saturating_sub(from.gateway);
    Some((seconds(gateway), seconds(nodes)))
}

#[path = "common/env.rs"]
mod env;
use env::{create_postgres_database, drop_postgres_database, loadavg};

// ---------------------------------------------------------------------------------------------
// Statistics.

fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

fn ms_between(a: DateTime<Utc>, b: DateTime<Utc>) -> f64 {
    (b - a).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e3
}

/// Times `n` sequential runs of `op` after `warmup` untimed ones; milliseconds per run.
async fn time_ops<F, Fut>(warmup: usize, n: usize, mut op: F) -> anyhow::Result<Vec<f64>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    for _ in 0..warmup {
        op().await?;
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        op().await?;
        out.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Requests.

fn application_body(holders: &[String], epsilon: f64) -> anyhow::Result<ApplicationRequest> {
    let now = Utc::now();
    Ok(serde_json::from_value(json!({
        "title": "Federated heart-disease risk model",
        "applicant": {"organisation": "uni-a", "public_body": false},
        "purposes": ["scientific_research"],
        "research_flags": ["algorithm_training"],
        "categories": ["ehr_data"],
        "data_holders": holders,
        "member_states": ["DE"],
        "requested_period": {"start": now.to_rfc3339(), "end": (now + chrono::Duration::days(365)).to_rfc3339()},
        "privacy_budget": {"epsilon": epsilon, "delta": 1e-5, "unit": "data_holder"},
        "justification": "Measuring the gateway's own cost per federated round.",
        "declares_no_prohibited_use": true
    }))?)
}

/// What the studies of a run ask for.
struct StudyPlan {
    /// The logistic model, or an MLP of about this many parameters.
    params: Option<usize>,
    /// Without DP, under a permit that allows it (the `--secure` comparison); else client-level
    /// DP.
    no_dp: bool,
}

impl StudyPlan {
    /// An MLP with two hidden layers of width h on `inputs` features and one output has
    /// h² + (inputs + 3)·h + 1 parameters: the width that comes closest to `params`.
    fn model(&self, inputs: usize) -> Value {
        match self.params {
            None => json!({"architecture": "logistic"}),
            Some(p) => {
                let b = (inputs + 3) as f64;
                let h = ((b * b + 4.0 * (p as f64 - 1.0)).sqrt() - b) / 2.0;
                let h = (h.round() as usize).max(1);
                json!({"architecture": "mlp", "hidden": [h, h]})
            }
        }
    }

    /// The study, under secure aggregation with `neighbours` each when given.
    fn body(
        &self,
        permit: PermitId,
        holders: &[String],
        rounds: u64,
        features: &Value,
        neighbours: Option<u32>,
    ) -> Value {
        let inputs = features["features"].as_array().map_or(1, Vec::len);
        let mut body = json!({
            "title": "Orchestration benchmark",
            "permit_id": permit.to_string(),
            "purpose": "scientific_research",
            "categories": ["ehr_data"],
            "data_holders": holders,
            "feature_spec": features,
            "model": self.model(inputs),
            "strategy": {"name": "fedavg"},
            "optimizer": {"name": "sgd", "lr": 0.1},
            "local_steps": 1,
            "batch_size": 4,
            "rounds": rounds,
            "min_sites": holders.len(),
            "round_deadline_seconds": 3600,
            "dp": if self.no_dp {
                json!({"level": "none"})
            } else {
                json!({"level": "client", "clip_norm": 1.0, "noise_multiplier": 2.0})
            },
            "seed": 7,
        });
        if let Some(k) = neighbours {
            body["secure_aggregation"] = json!({ "neighbours": k });
        }
        body
    }
}

/// The secagg bench's graph for `n` holders: complete below 100, else `2⌈log₂ n⌉` neighbours.
fn neighbours(n: usize) -> u32 {
    if n < 100 {
        n as u32 - 1
    } else {
        2 * (n as f64).log2().ceil() as u32
    }
}

/// Issues a permit to `uni-a` naming `holders`, allowing studies without formal DP when
/// `allow_no_dp`; returns its id.
async fn issue_permit(
    researcher: &GatewayClient,
    officer: &GatewayClient,
    officer_token: &str,
    holders: &[String],
    allow_no_dp: bool,
) -> anyhow::Result<PermitId> {
    let created = researcher
        .create_application(&application_body(holders, 1000.0)?)
        .await
        .context("application")?;
    if !allow_no_dp {
        return officer
            .approve_application(created.id)
            .await
            .context("decision");
    }
    // the client's approval takes the default terms; this one sets the DP requirement
    let decided: Value = officer
        .http()
        .post(format!(
            "{}/v1/applications/{}/decision",
            officer.base_url(),
            created.id
        ))
        .bearer_auth(officer_token)
        .json(&json!({"decision": "approve", "dp_requirement": "none_allowed"}))
        .send()
        .await?
        .error_for_status()
        .context("decision")?
        .json()
        .await?;
    let id = decided["permit"]["id"]
        .as_str()
        .context("the decision names no permit")?;
    PermitId::parse(id).map_err(|e| anyhow::anyhow!(e.1))
}

// ---------------------------------------------------------------------------------------------
// Simulated nodes.

#[derive(Default)]
struct NodeStats {
    /// Nodes whose first (immediate) poll has been answered.
    polling: AtomicUsize,
    requests: AtomicU64,
    /// Requests retried after a transport error or a 5xx/408 answer.
    retries: AtomicU64,
    /// Answers that no retry fixed (the task is left alone).
    errors: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl NodeStats {
    fn error(&self, e: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut slot) = self.first_error.lock() {
            slot.get_or_insert(e);
        }
    }

    /// The counts as the node process reports them, one JSON line each time.
    fn report(&self) -> Value {
        json!({
            "polling": self.polling.load(Ordering::Relaxed),
            "requests": self.requests.load(Ordering::Relaxed),
            "retries": self.retries.load(Ordering::Relaxed),
            "errors": self.errors.load(Ordering::Relaxed),
            "first_error": self.first_error.lock().ok().and_then(|e| e.clone()),
        })
    }

    /// Takes the counts of a node process's report.
    fn take(&self, report: &Value) {
        let count = |k: &str| report[k].as_u64().unwrap_or(0);
        self.polling
            .store(count("polling") as usize, Ordering::Relaxed);
        self.requests.store(count("requests"), Ordering::Relaxed);
        self.retries.store(count("retries"), Ordering::Relaxed);
        self.errors.store(count("errors"), Ordering::Relaxed);
        if let (Some(e), Ok(mut slot)) = (report["first_error"].as_str(), self.first_error.lock()) {
            slot.get_or_insert_with(|| e.to_owned());
        }
    }
}

/// A simulated holder as the bench sets it up: its organisation, its token and the
/// training-example count it reports.
struct Seat {
    holder: String,
    token: String,
    examples: u64,
}

/// The simulated nodes of a run: tasks on a runtime of this process, or a process of their own.
enum SimNodes {
    InProcess {
        runtime: tokio::runtime::Runtime,
        tasks: Vec<tokio::task::JoinHandle<()>>,
    },
    Process {
        child: tokio::process::Child,
        reader: tokio::task::JoinHandle<()>,
    },
}

impl SimNodes {
    /// Starts the nodes of `seats` on a runtime of their own in this process, whose threads
    /// live as long as the run so that their CPU can be read.
    async fn in_process(
        client: &GatewayClient,
        seats: Vec<Seat>,
        stats: &Arc<NodeStats>,
    ) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
            .thread_name(NODE_THREADS)
            .thread_keep_alive(Duration::from_secs(24 * 3600))
            .enable_all()
            .build()?;
        let mut tasks = Vec::with_capacity(seats.len());
        start_gradually(client, seats, stats, |node| {
            tasks.push(runtime.spawn(node.run()))
        })
        .await?;
        Ok(Self::InProcess { runtime, tasks })
    }

    /// Starts the nodes of `seats` in a process of their own (this bench with `--sim-nodes`),
    /// whose reports keep `stats`.
    fn process(base: &str, seats: &[Seat], stats: &Arc<NodeStats>) -> anyhow::Result<Self> {
        use std::io::Write;
        use tokio::io::AsyncBufReadExt;
        let order = json!({
            "base": base,
            "seats": seats
                .iter()
                .map(|s| json!({"holder": s.holder, "token": s.token, "examples": s.examples}))
                .collect::<Vec<_>>(),
        });
        let dir = tempfile::tempdir()?;
        let order_file = dir.path().join("seats.json");
        std::fs::File::create(&order_file)?.write_all(order.to_string().as_bytes())?;
        let mut child = tokio::process::Command::new(std::env::current_exe()?)
            .arg("--sim-nodes")
            .arg(&order_file)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .context("the node process has no stdout")?;
        let stats = stats.clone();
        let reader = tokio::spawn(async move {
            // the order file goes once the nodes have read it, with this task
            let _dir = dir;
            let mut lines = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                match serde_json::from_str::<Value>(&line) {
                    Ok(report) => stats.take(&report),
                    Err(_) => println!("  node process: {line}"),
                }
            }
        });
        Ok(Self::Process { child, reader })
    }

    /// The nodes' process, when they run in one.
    fn pid(&self) -> Option<u32> {
        match self {
            Self::InProcess { .. } => None,
            Self::Process { child, .. } => child.id(),
        }
    }

    async fn stop(self) {
        match self {
            Self::InProcess { runtime, tasks } => {
                for t in &tasks {
                    t.abort();
                }
                runtime.shutdown_background();
            }
            Self::Process { mut child, reader } => {
                let _ = child.kill().await;
                reader.abort();
            }
        }
    }
}

/// The simulated nodes' process (`--sim-nodes FILE`): runs the nodes the file names against
/// its gateway and prints their counts as a JSON line every 50 ms, until it is stopped.
async fn sim_nodes(order_file: &Path) -> anyhow::Result<()> {
    use std::io::Write;
    let order: Value = serde_json::from_slice(&std::fs::read(order_file)?)?;
    let seats: Vec<Seat> = order["seats"]
        .as_array()
        .context("no seats")?
        .iter()
        .map(|s| Seat {
            holder: s["holder"].as_str().unwrap_or_default().to_owned(),
            token: s["token"].as_str().unwrap_or_default().to_owned(),
            examples: s["examples"].as_u64().unwrap_or(100),
        })
        .collect();
    room_for_descriptors(seats.len())?;
    let base = order["base"].as_str().context("no base")?;
    let client = GatewayClient::builder(base)
        .timeout(NODE_REQUEST_TIMEOUT)
        .build()?;
    let stats = Arc::new(NodeStats::default());
    let report = tokio::spawn({
        let stats = stats.clone();
        async move {
            let mut out = std::io::stdout();
            loop {
                // the bench is gone when its end of the pipe is
                if writeln!(out, "{}", stats.report())
                    .and_then(|_| out.flush())
                    .is_err()
                {
                    std::process::exit(0);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    start_gradually(&client, seats, &stats, |node| {
        tokio::spawn(node.run());
    })
    .await?;
    report.await?;
    Ok(())
}

/// Hands a node for each seat to `start`, pausing every 50 so that the nodes open their
/// connections gradually rather than in one burst.
async fn start_gradually(
    client: &GatewayClient,
    seats: Vec<Seat>,
    stats: &Arc<NodeStats>,
    mut start: impl FnMut(Node),
) -> anyhow::Result<()> {
    for (i, seat) in seats.into_iter().enumerate() {
        start(Node::of(client, seat, stats)?);
        if i % 50 == 49 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    Ok(())
}

struct Node {
    /// The gateway as this holder; transient failures are retried a few times, each retry
    /// counted in the stats.
    gateway: GatewayClient,
    holder: OrgId,
    /// Fixed training-example count the node reports.
    examples: u64,
    stats: Arc<NodeStats>,
}

impl Node {
    /// The node protocol client of `holder`: up to 4 retries, 100 ms after the first failure,
    /// doubling.
    fn client(gateway: &GatewayClient, token: String, stats: &Arc<NodeStats>) -> GatewayClient {
        let stats = stats.clone();
        gateway
            .with_token(token)
            .with_retry(RetryPolicy::attempts(4, Duration::from_millis(100)))
            .on_retry(Arc::new(move |_, _| {
                stats.retries.fetch_add(1, Ordering::Relaxed);
                stats.requests.fetch_add(1, Ordering::Relaxed);
            }))
    }

    fn of(client: &GatewayClient, seat: Seat, stats: &Arc<NodeStats>) -> anyhow::Result<Self> {
        Ok(Node {
            gateway: Node::client(client, seat.token, stats),
            holder: OrgId::parse(&seat.holder).map_err(|(_, m)| anyhow::anyhow!(m))?,
            examples: seat.examples,
            stats: stats.clone(),
        })
    }

    /// Counts a request's first attempt (the retry hook counts the others).
    fn request(&self) {
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
    }

    async fn run(self) {
        // One immediate poll opens the connection; then the long polls.
        self.request();
        if let Err(e) = self.gateway.poll_tasks(0).await {
            self.stats.error(format!("first poll: {e}"));
        }
        self.stats.polling.fetch_add(1, Ordering::Relaxed);
        loop {
            self.request();
            let tasks: Vec<NodeTask> = match self.gateway.poll_tasks(POLL_WAIT_SECONDS).await {
                Ok(t) => t,
                Err(e) => {
                    self.stats.error(format!("poll: {e}"));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            for task in tasks {
                if let Err(e) = self.work(&task).await {
                    self.stats.error(e);
                }
            }
        }
    }

    /// Fit: downloads the global model and returns it unchanged. Evaluate: counts only.
    /// Fit under secure aggregation: downloads the global model and sums a zero delta through
    /// the node agent's own secure round, which also sends the result.
    async fn work(&self, task: &NodeTask) -> Result<(), String> {
        let fit = task.kind == TaskKind::Fit;
        let mut body = TaskResultBody {
            num_examples: self.examples,
            excluded_subjects: 0,
            registry_version: task.registry_version,
            parameters: None,
            train_loss: fit.then_some(0.69),
            local_steps: fit.then_some(1),
            evaluation: None,
            data_quality: None,
        };
        if fit {
            self.request();
            let ins = self
                .gateway
                .task_parameters(task)
                .await
                .map_err(|e| format!("parameters: {e}"))?;
            if task.study.secure_aggregation.is_some() {
                let delta = vec![0.0; ins.params.to_flat().len()];
                return secure_round(&self.gateway, task, &delta, &body)
                    .await
                    .map_err(|e| format!("secure aggregation: {e:#}"));
            }
            body.parameters = Some(
                encode_update(
                    &ins.params,
                    &ins.extras,
                    task.study_id,
                    task.round,
                    &self.holder,
                )
                .map_err(|e| format!("encoding the update: {e}"))?,
            );
        }
        self.request();
        // a result the gateway already holds (an earlier attempt got through) is delivered
        self.gateway
            .submit_result(task.task_id, &body)
            .await
            .map(drop)
            .map_err(|e| format!("result: {e}"))
    }
}

// ---------------------------------------------------------------------------------------------
// One run: one backend, one federation size.

struct Baselines {
    healthz_ms: f64,
    permit_read_ms: f64,
    append_ms: f64,
}

/// Milestones of one aggregated round, from the server's timestamps: the `recorded_at` of the
/// audit entries, in ms after the round's `study.round.start` entry.
///
/// The round row's own `opened_at` and `closed_at` are the times the round loop read the clock
/// before it began the transition's transaction; on SQLite that is before it waited for the
/// writer lock, so they can predate commits they come after. The audit entries are stamped
/// inside the transaction.
struct RoundTimes {
    round: u64,
    /// `study.round.start` recorded (the start transition: governance check, Cedar, budget
    /// pre-check, registry pin, N task rows).
    start_at: DateTime<Utc>,
    /// The last `node.tasks` delivery of the round recorded.
    delivered: f64,
    /// The last `node.task.parameters` of the round recorded.
    downloaded: f64,
    /// The last `node.task.result` of the round recorded.
    uploaded: f64,
    /// Under secure aggregation, each `study.round.secagg` entry (a stage closed and relayed:
    /// keys, shares, masked inputs), in order.
    stages: Vec<f64>,
    /// `study.round.aggregate` recorded: DP aggregation, budget, checkpoint.
    aggregated: f64,
    /// The aggregation transition alone: from the later of `closed_at` and the last result to
    /// the aggregate entry.
    aggregation_tx: f64,
    /// Audit entries recorded from the start entry to the aggregate entry, both included.
    audit_entries: usize,
    /// Tasks delivered, parameter downloads and results accepted in the round.
    counts: [usize; 3],
    /// From this round's start entry to the next round's (absent for the last round).
    cycle: Option<f64>,
    /// CPU seconds of the gateway and of all simulated nodes from the start entry to the
    /// aggregate entry (NaN when the samples do not cover it).
    cpu: (f64, f64),
}

/// One study of a run.
struct StudyRun {
    secure: bool,
    rounds: Vec<RoundTimes>,
    study_seconds: f64,
    /// Average cores during the whole study.
    cpu: CpuUse,
    /// Size of the parameter file a node downloads.
    parameter_bytes: Option<u64>,
    /// The model's parameters, as the gateway counts them.
    parameter_count: Option<u64>,
    /// Node requests counted by the bench (the secure-aggregation exchange is not counted) and
    /// their retries.
    requests: u64,
    retries: u64,
    /// The process's peak RSS when the study ended.
    peak_rss_mib: Option<f64>,
}

impl StudyRun {
    /// Rounds the medians are taken over: all but the first when there are at least three.
    fn measured(&self) -> &[RoundTimes] {
        if self.rounds.len() >= 3 {
            &self.rounds[1..]
        } else {
            &self.rounds
        }
    }
}

/// Store reads timed in-process after the first study (medians, ms).
struct Reads {
    /// One wake-up of the round loop while a round collects.
    wake_ms: f64,
    /// What every node request reads before its own work.
    context_ms: f64,
    /// A long poll woken by a change that brings it no task.
    empty_poll_ms: f64,
}

struct RunResult {
    backend: Backend,
    nodes: usize,
    params: Option<usize>,
    studies: Vec<StudyRun>,
    baselines: Baselines,
    /// Absent under `--secure`.
    reads: Option<Reads>,
    errors: u64,
    first_error: Option<String>,
    /// The study that failed, and why; the run stopped there.
    failed: Option<String>,
    chain: (u64, bool),
}

impl RunResult {
    /// The measured rounds of every study with (`secure`) or without secure aggregation.
    fn rounds(&self, secure: bool) -> impl Iterator<Item = &RoundTimes> {
        self.studies
            .iter()
            .filter(move |s| s.secure == secure)
            .flat_map(StudyRun::measured)
    }
    /// The median of `f` over [`Self::rounds`].
    fn med(&self, secure: bool, f: impl Fn(&RoundTimes) -> f64) -> f64 {
        median(&self.rounds(secure).map(f).collect::<Vec<_>>())
    }
    /// The highest peak RSS at the end of a study of the kind.
    fn peak_rss(&self, secure: bool) -> Option<f64> {
        self.studies
            .iter()
            .filter(|s| s.secure == secure)
            .filter_map(|s| s.peak_rss_mib)
            .reduce(f64::max)
    }
}

async fn read_audit(store: &dyn Store, after: i64) -> anyhow::Result<Vec<AuditEntry>> {
    let mut out = Vec::new();
    let mut after = after;
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
        out.extend(page);
    }
    Ok(out)
}

async fn verify_chain(store: &dyn Store) -> anyhow::Result<(u64, bool)> {
    let mut verifier = ChainVerifier::default();
    for entry in &read_audit(store, 0).await? {
        verifier.feed(entry);
    }
    let r = verifier.finish();
    Ok((r.entries_checked, r.valid))
}

async fn audit_head(store: &dyn Store) -> anyhow::Result<i64> {
    Ok(read_audit(store, 0).await?.last().map_or(0, |e| e.seq))
}

async fn bench_run(
    backend: Backend,
    nodes: usize,
    params: Option<usize>,
    cfg: &Config,
    features: &Value,
) -> anyhow::Result<RunResult> {
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
    let result = run(backend, nodes, params, cfg, features, dir.path(), url).await;
    if let Some(name) = pg_name {
        if let Err(e) = drop_postgres_database(&name).await {
            eprintln!("could not drop database {name}: {e:#}");
        }
    }
    result
}

/// The gateway of a run as the bench sees it.
struct Harness<'a> {
    store: Arc<dyn Store>,
    researcher: GatewayClient,
    holders: Vec<String>,
    permit: PermitId,
    stats: Arc<NodeStats>,
    sampler: &'a CpuSampler,
    cfg: &'a Config,
    features: &'a Value,
}

/// Runs one study to its end and reads its rounds from the audit log.
async fn run_study(
    h: &Harness<'_>,
    plan: &StudyPlan,
    rounds: u64,
    secure: bool,
) -> anyhow::Result<(StudyRun, StudyId)> {
    let (store, stats, n) = (h.store.as_ref(), &h.stats, h.holders.len());
    let head = audit_head(store).await?;
    let before = (
        stats.requests.load(Ordering::Relaxed),
        stats.retries.load(Ordering::Relaxed),
    );
    let cpu_before = cpu_snapshot();
    let started = Instant::now();
    let body = plan.body(
        h.permit,
        &h.holders,
        rounds,
        h.features,
        secure.then(|| neighbours(n)),
    );
    let study = h.researcher.create_study(&body).await.context("study")?;
    let study_id = StudyId::parse(study["id"].as_str().context("study has no id")?)
        .map_err(|e| anyhow::anyhow!(e.1))?;
    // Wait for the end, reading the store directly (no HTTP request, no audit entry).
    let status = loop {
        let s = {
            let mut tx = store.begin().await?;
            let s = tx.get_study(study_id).await?.context("study vanished")?;
            tx.commit().await?;
            s
        };
        if !s.status().is_live() {
            break s;
        }
        if started.elapsed() > h.cfg.timeout {
            bail!(
                "the study did not finish within {} s ({} of {rounds} rounds aggregated)",
                h.cfg.timeout.as_secs(),
                s.rounds_done
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let study_seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_snapshot().since(&cpu_before);
    if status.status() != StudyStatus::Completed {
        bail!(
            "the study ended {}: {}",
            status.status().as_str(),
            status.status_reason.unwrap_or_default()
        );
    }

    // Server-side timestamps of every round.
    let db_rounds = {
        let mut tx = store.begin().await?;
        let r = tx.list_rounds(study_id).await?;
        tx.commit().await?;
        r
    };
    let audit = read_audit(store, head).await?;
    let parameter_bytes = audit
        .iter()
        .find(|e| e.action == "node.task.parameters")
        .and_then(|e| e.detail["bytes"].as_u64());
    // the sampler keeps running; what it has so far covers this study
    let samples = h.sampler.samples();
    let mut measured: Vec<RoundTimes> = Vec::new();
    for r in db_rounds
        .iter()
        .filter(|r| r.phase == RoundPhase::Aggregated)
    {
        let entry = |action: &str| {
            audit
                .iter()
                .find(|e| e.action == action && e.detail["round"].as_u64() == Some(r.round))
                .map(|e| e.recorded_at)
                .with_context(|| format!("no {action} entry for round {}", r.round))
        };
        let start_at = entry("study.round.start")?;
        let aggregated_at = entry("study.round.aggregate")?;
        // Entries of this round: recorded while it was open, and naming it where they name one
        // (a node's task list names none; evaluation results come after the aggregation).
        let in_round: Vec<&AuditEntry> = audit
            .iter()
            .filter(|e| e.recorded_at >= start_at && e.recorded_at <= aggregated_at)
            .filter(|e| {
                e.detail
                    .get("round")
                    .is_none_or(|v| v.as_u64() == Some(r.round))
            })
            .collect();
        let of = |action: &'static str| in_round.iter().filter(move |e| e.action == action);
        let last_at = |action: &'static str| of(action).map(|e| e.recorded_at).max();
        let after = |t: Option<DateTime<Utc>>| t.map_or(f64::NAN, |t| ms_between(start_at, t));
        let last_result = last_at("node.task.result").unwrap_or(start_at);
        let tx_start = r.closed_at.map_or(last_result, |c| c.max(last_result));
        if let Some(prev) = measured.last_mut() {
            prev.cycle = Some(ms_between(prev.start_at, start_at));
        }
        measured.push(RoundTimes {
            round: r.round,
            start_at,
            delivered: after(last_at("node.tasks")),
            downloaded: after(last_at("node.task.parameters")),
            uploaded: after(last_at("node.task.result")),
            stages: of("study.round.secagg")
                .map(|e| ms_between(start_at, e.recorded_at))
                .collect(),
            aggregated: ms_between(start_at, aggregated_at),
            aggregation_tx: ms_between(tx_start, aggregated_at),
            audit_entries: in_round.len(),
            counts: [
                of("node.tasks")
                    .map(|e| e.detail["delivered"].as_array().map_or(0, Vec::len))
                    .sum(),
                of("node.task.parameters").count(),
                of("node.task.result").count(),
            ],
            cycle: None,
            cpu: cpu_between(&samples, start_at, aggregated_at).unwrap_or((f64::NAN, f64::NAN)),
        });
    }
    if measured.len() as u64 != rounds || db_rounds.len() as u64 != rounds {
        println!(
            "  note: {} round attempts for {rounds} rounds ({} aggregated)",
            db_rounds.len(),
            measured.len()
        );
    }
    let run = StudyRun {
        secure,
        rounds: measured,
        study_seconds,
        cpu,
        parameter_bytes,
        parameter_count: study["parameter_count"].as_u64(),
        requests: stats.requests.load(Ordering::Relaxed) - before.0,
        retries: stats.retries.load(Ordering::Relaxed) - before.1,
        peak_rss_mib: peak_rss_mib(),
    };
    Ok((run, study_id))
}

async fn run(
    backend: Backend,
    n: usize,
    params: Option<usize>,
    cfg: &Config,
    features: &Value,
    data_dir: &Path,
    database_url: String,
) -> anyhow::Result<RunResult> {
    let mut settings = Settings {
        listen: "127.0.0.1:0".parse()?,
        data_dir: data_dir.to_path_buf(),
        database_url: Some(database_url),
        ..Settings::default()
    };
    settings.federation.tick_millis = 20;
    settings.http.body_limit_bytes = 16 * 1024 * 1024;
    settings.audit.commit = cfg.commit;
    // every node holds a long poll open: room for all of them and the baselines
    settings.http.max_connections = settings.http.max_connections.max(n + 256);
    let audience = settings.auth.audience.clone();
    let app = Application::build(settings, true).await?;
    let base = app.base_url().to_owned();
    let store = app.state().store.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until_stopped(async {
        let _ = stopped.await;
    }));

    let dev = DevIssuer::load_or_create(data_dir, &base, &audience)?;
    let mint =
        |sub: &str, role: &str, org: &str| dev.mint(sub, &[role.to_owned()], Some(org), 3600);
    let researcher = mint("alice", "researcher", "uni-a")?;
    let officer_token = mint("officer-1", "hdab_officer", "hdab-de")?;
    let client = |timeout: Duration| -> anyhow::Result<GatewayClient> {
        Ok(GatewayClient::builder(&base).timeout(timeout).build()?)
    };
    let client_of_bench = client(Duration::from_secs(POLL_WAIT_SECONDS + 30))?;
    let researcher = client_of_bench.with_token(researcher);
    let officer = client_of_bench.with_token(officer_token.clone());

    // The baselines, on a small permit of their own so that they do not grow with N.
    let small = issue_permit(
        &researcher,
        &officer,
        &officer_token,
        &["hosp-1".to_owned(), "hosp-2".to_owned()],
        false,
    )
    .await?;
    let healthz = time_ops(BASELINE_OPS / 3, BASELINE_OPS, || {
        let client = client_of_bench.clone();
        async move { client.healthz().await.context("healthz") }
    })
    .await?;
    let permit_read = time_ops(BASELINE_OPS / 3, BASELINE_OPS, || {
        let officer = officer.clone();
        async move {
            officer.permit(small).await.context("permit read")?;
            Ok(())
        }
    })
    .await?;
    let append = time_ops(BASELINE_OPS / 3, BASELINE_OPS, || {
        let store = store.clone();
        async move {
            let mut tx = store.begin().await?;
            tx.append_audit(
                NewAuditEvent::success(
                    &Actor::system(),
                    // any action: the cost is the append, whatever it records
                    ehds_gateway::authz::Action::PermitRead,
                    ehds_core::domain::audit::AuditSubject::Permit(small),
                )
                .permit(small),
            )
            .await?;
            tx.commit().await?;
            Ok(())
        }
    })
    .await?;
    let baselines = Baselines {
        healthz_ms: median(&healthz),
        permit_read_ms: median(&permit_read),
        append_ms: median(&append),
    };

    // The study's permit and its N nodes.
    // `node-0000`, ...; five digits from 10,000 holders on
    let width = if n > 10_000 { 5 } else { 4 };
    let holders: Vec<String> = (0..n).map(|i| format!("node-{i:0width$}")).collect();
    let permit = issue_permit(&researcher, &officer, &officer_token, &holders, cfg.secure).await?;
    let stats = Arc::new(NodeStats::default());
    let seats = holders
        .iter()
        .enumerate()
        .map(|(i, h)| {
            Ok(Seat {
                holder: h.clone(),
                token: mint(&format!("agent-{h}"), "data_holder", h)?,
                examples: 100 + (i as u64 % 200),
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let sim = if cfg.separate_nodes {
        SimNodes::process(&base, &seats, &stats)?
    } else {
        SimNodes::in_process(&client(NODE_REQUEST_TIMEOUT)?, seats, &stats).await?
    };
    let ready_by = Instant::now() + Duration::from_secs(60);
    while stats.polling.load(Ordering::Relaxed) < n {
        if Instant::now() > ready_by {
            bail!("the simulated nodes did not all start polling within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Every node has a connection and is sending its long poll; give the gateway time to take
    // them all in (a poll that arrives after the round starts finds its task at once anyway).
    tokio::time::sleep(Duration::from_millis(200 + n as u64)).await;

    let sampler = CpuSampler::start(sim.pid());
    let harness = Harness {
        store: store.clone(),
        researcher: researcher.clone(),
        holders: holders.clone(),
        permit,
        stats: stats.clone(),
        sampler: &sampler,
        cfg,
        features,
    };
    let plan = StudyPlan {
        params,
        no_dp: cfg.secure,
    };
    let rounds = cfg.rounds_for(n);
    // without and with secure aggregation, alternately, so that load hits both alike
    let kinds: Vec<bool> = if cfg.secure {
        (0..cfg.pairs).flat_map(|_| [false, true]).collect()
    } else {
        vec![false]
    };
    let mut studies = Vec::with_capacity(kinds.len());
    let mut first_study = None;
    // a study that fails ends the run, which still reports the studies before it
    let mut failed = None;
    for secure in kinds {
        match run_study(&harness, &plan, rounds, secure).await {
            Ok((study, id)) => {
                first_study.get_or_insert(id);
                studies.push(study);
            }
            Err(e) => {
                failed = Some(format!("{} study: {e:#}", kind(secure)));
                break;
            }
        }
    }
    drop(harness);
    sampler.finish();
    sim.stop().await;
    let reads = match (cfg.secure, first_study, &failed) {
        (false, Some(id), None) => Some(store_reads(store.as_ref(), id, &holders).await?),
        _ => None,
    };

    let chain = verify_chain(store.as_ref()).await?;
    let first_error = stats.first_error.lock().ok().and_then(|e| e.clone());
    drop((client_of_bench, researcher, officer));
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), server).await;
    drop(store);

    Ok(RunResult {
        backend,
        nodes: n,
        params,
        studies,
        baselines,
        reads,
        errors: stats.errors.load(Ordering::Relaxed),
        first_error,
        failed,
        chain,
    })
}

/// Times, in-process, the store reads of the node requests and the round loop on the first
/// round of `study_id`.
async fn store_reads(
    store: &dyn Store,
    study_id: StudyId,
    holders: &[String],
) -> anyhow::Result<Reads> {
    let n = holders.len();
    let first_round_id = {
        let mut tx = store.begin().await?;
        let r = tx.list_rounds(study_id).await?;
        tx.commit().await?;
        r.first().context("no rounds")?.id
    };
    // One wake-up of the round loop while a round collects reads the study, the permit, the open
    // round and the count of its tasks and results (`rounds::advance` and `collect`); timed
    // here on the first round.
    let wake = time_ops(5, 30, || async move {
        let mut tx = store.begin().await?;
        let s = tx.get_study(study_id).await?.context("study")?;
        tx.get_permit(s.spec.permit_id).await?.context("permit")?;
        tx.open_round(study_id).await?;
        let (tasks, _) = tx.count_fit_results(first_round_id).await?;
        ensure!(tasks as usize >= n, "round has {tasks} tasks");
        drop(tx);
        Ok(())
    })
    .await?;
    // What every node request reads before its own work: its task, the study, the permit and
    // the round's registry version (`live_context` in the node protocol).
    let some_task = {
        let mut tx = store.begin().await?;
        let tasks = tx.round_tasks(first_round_id).await?;
        tx.commit().await?;
        tasks.first().context("round without tasks")?.id
    };
    let context = time_ops(5, 100, || async move {
        let mut tx = store.begin().await?;
        let t = tx.get_task(some_task).await?.context("task")?;
        let s = tx.get_study(t.study_id).await?.context("study")?;
        tx.get_permit(s.spec.permit_id).await?.context("permit")?;
        tx.round_registry_version(t.round_id)
            .await?
            .context("round")?;
        drop(tx);
        Ok(())
    })
    .await?;
    // What a long poll woken by a change that brings it no task reads: its pending tasks
    // (none), in a transaction of its own.
    let idle_holder = OrgId::parse(&holders[0]).map_err(|(_, m)| anyhow::anyhow!(m))?;
    let empty_poll = time_ops(5, 100, || {
        let holder = idle_holder.clone();
        async move {
            let mut tx = store.begin().await?;
            let pending = tx.pending_tasks_for(&holder, time::now(), 10).await?;
            ensure!(pending.is_empty(), "the node still has tasks");
            drop(tx);
            Ok(())
        }
    })
    .await?;
    Ok(Reads {
        wake_ms: median(&wake),
        context_ms: median(&context),
        empty_poll_ms: median(&empty_poll),
    })
}

// ---------------------------------------------------------------------------------------------
// Output.

fn f1(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn f2(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else {
        format!("{v:.2}")
    }
}

fn kind(secure: bool) -> &'static str {
    if secure {
        "secure"
    } else {
        "plain"
    }
}

fn print_rounds(r: &RunResult) {
    println!(
        "  {} N={}: {} node errors; audit chain {} entries, {}",
        r.backend.name(),
        r.nodes,
        r.errors,
        r.chain.0,
        if r.chain.1 { "intact" } else { "BROKEN" }
    );
    if let Some(e) = &r.first_error {
        println!("    first node error: {e}");
    }
    if let Some(e) = &r.failed {
        println!("    FAILED: {e}");
    }
    for s in &r.studies {
        println!(
            "  {} study: {:.1} s; CPU during the study: self {:.2}, pg {:.2}, other {:.2} cores; \
             {} node requests{}, {} retries; {} parameters; peak RSS {} MiB",
            kind(s.secure),
            s.study_seconds,
            s.cpu.this_process,
            s.cpu.postgres,
            s.cpu.other,
            s.requests,
            if s.secure {
                " besides the secure-aggregation exchange"
            } else {
                ""
            },
            s.retries,
            s.parameter_count.map_or("?".into(), |c| c.to_string()),
            s.peak_rss_mib.map_or("-".into(), |m| format!("{m:.0}")),
        );
        if let Some(b) = s.parameter_bytes {
            println!("    parameter file: {b} bytes per download");
        }
        println!(
            "    round | delivered | parameters | results | secagg stages closed | aggregated | aggregation tx | to next start | gateway / nodes CPU s | audit entries | tasks/params/results"
        );
        for t in &s.rounds {
            let stages: Vec<String> = t.stages.iter().map(|&v| f1(v)).collect();
            println!(
                "    {:>5} | {:>9} | {:>10} | {:>7} | {:>20} | {:>10} | {:>14} | {:>13} | {:>21} | {:>13} | {}/{}/{}",
                t.round,
                f1(t.delivered),
                f1(t.downloaded),
                f1(t.uploaded),
                if stages.is_empty() { "-".into() } else { stages.join(" ") },
                f1(t.aggregated),
                f1(t.aggregation_tx),
                t.cycle.map_or("-".into(), f1),
                format!("{} / {}", f2(t.cpu.0), f2(t.cpu.1)),
                t.audit_entries,
                t.counts[0],
                t.counts[1],
                t.counts[2]
            );
        }
    }
    println!("    (ms after the round's study.round.start audit entry; server timestamps)");
}

/// A result table: a heading and a column line; the rows come from the runs.
type Table = (&'static str, &'static str, &'static str);

/// The orchestration tables.
const TABLES: [Table; 3] = [
    (
        "Per round, median over the measured rounds (round 1 skipped when there are >= 3):",
        "| backend | nodes | rounds | round ms | cycle ms | ms per node | audited GET ms | per node, in audited GETs | audit entries per node | peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ),
    (
        "Where the round's time goes (medians, ms after the round's start entry; the last three are durations):",
        "| backend | nodes | all tasks delivered | all parameters downloaded | all results accepted | aggregated | last result to aggregated | aggregation tx | aggregated to next start |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ),
    (
        "Baselines and single operations in the same runs (medians, ms; in-process = store only, no HTTP), and the load during the study:",
        "| backend | nodes | GET /healthz | GET /v1/permits/{id} | audit append tx | reads of a node request | reads of a loop wake-up | reads of an empty poll | CPU self / pg / other cores | node requests | retries | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ),
];

/// The `--secure` tables.
const SECURE_TABLES: [Table; 2] = [
    (
        "Whole round without and with secure aggregation, same process (medians over the measured rounds of all studies of each kind; CPU seconds per round from /proc samples between the round's start and aggregate entries):",
        "| backend | nodes | parameters | plain round ms | secure round ms | secure / plain | gateway CPU s per round, plain / secure | CPU per node ms per round, plain / secure | peak RSS MiB after plain / secure | audited GET ms |",
        "|---|---:|---:|---:|---:|---:|---|---|---|---:|",
    ),
    (
        "Where the round's time goes (medians, ms after the round's start entry; secure stages: when the relay closed the stage and stored what it relays):",
        "| backend | nodes | parameters | study | all parameters downloaded | keys relayed | shares relayed | unmasking asked | all results accepted | aggregated |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ),
];

/// The orchestration run's row of each of the [`TABLES`].
fn table_rows(r: &RunResult) -> anyhow::Result<Vec<String>> {
    let (s, reads) = match (r.studies.first(), &r.reads) {
        (Some(s), Some(reads)) => (s, reads),
        _ => bail!("an orchestration run has one study and its store reads"),
    };
    let med = |f: &dyn Fn(&RoundTimes) -> f64| r.med(false, f);
    let round = med(&|t| t.aggregated);
    let cycles: Vec<f64> = s.measured().iter().filter_map(|t| t.cycle).collect();
    let gaps: Vec<f64> = s
        .measured()
        .iter()
        .filter_map(|t| t.cycle.map(|c| c - t.aggregated))
        .collect();
    let per_node = round / r.nodes as f64;
    let entries = med(&|t| t.audit_entries as f64) / r.nodes as f64;
    let summary = format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        r.backend.name(),
        r.nodes,
        s.measured().len(),
        f1(round),
        f1(median(&cycles)),
        f2(per_node),
        f2(r.baselines.permit_read_ms),
        f1(per_node / r.baselines.permit_read_ms),
        f1(entries),
        s.peak_rss_mib.map_or("-".into(), |m| format!("{m:.0}")),
    );
    let phases = format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        r.backend.name(),
        r.nodes,
        f1(med(&|t| t.delivered)),
        f1(med(&|t| t.downloaded)),
        f1(med(&|t| t.uploaded)),
        f1(round),
        f1(med(&|t| t.aggregated - t.uploaded)),
        f1(med(&|t| t.aggregation_tx)),
        f1(median(&gaps)),
    );
    let baselines = format!(
        "| {} | {} | {:.3} | {:.3} | {:.3} | {:.2} | {:.2} | {:.2} | {:.2} / {:.2} / {:.2} | {} | {} | {} |",
        r.backend.name(),
        r.nodes,
        r.baselines.healthz_ms,
        r.baselines.permit_read_ms,
        r.baselines.append_ms,
        reads.context_ms,
        reads.wake_ms,
        reads.empty_poll_ms,
        s.cpu.this_process,
        s.cpu.postgres,
        s.cpu.other,
        s.requests,
        s.retries,
        r.errors
    );
    Ok(vec![summary, phases, baselines])
}

/// The `--secure` run's rows of the [`SECURE_TABLES`]: one in the first, two in the second.
fn secure_rows(r: &RunResult) -> Vec<(usize, String)> {
    let params = r.params.map_or("logistic".into(), |p| p.to_string());
    let round = |secure| r.med(secure, |t| t.aggregated);
    let pair = |f: &dyn Fn(bool) -> String| format!("{} / {}", f(false), f(true));
    let summary = format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        r.backend.name(),
        r.nodes,
        params,
        f1(round(false)),
        f1(round(true)),
        f2(round(true) / round(false)),
        pair(&|s| f2(r.med(s, |t| t.cpu.0))),
        pair(&|s| f1(r.med(s, |t| t.cpu.1) * 1e3 / r.nodes as f64)),
        pair(&|s| r.peak_rss(s).map_or("-".into(), |m| format!("{m:.0}"))),
        f2(r.baselines.permit_read_ms),
    );
    let mut rows = vec![(0, summary)];
    for secure in [false, true] {
        let stage = |i: usize| f1(r.med(secure, |t| t.stages.get(i).copied().unwrap_or(f64::NAN)));
        rows.push((
            1,
            format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.backend.name(),
                r.nodes,
                params,
                kind(secure),
                f1(r.med(secure, |t| t.downloaded)),
                stage(0),
                stage(1),
                stage(2),
                f1(r.med(secure, |t| t.uploaded)),
                f1(round(secure)),
            ),
        ));
    }
    rows
}

/// Raises this process's open-file limit to what `sockets` node connections need, with room
/// to spare: where gateway and nodes share the process each node's connection is a socket at
/// both ends, so 10,000 nodes need over 20,000 descriptors, more than many systems' default
/// soft limit. The hard limit is raised too where the process may (one with
/// CAP_SYS_RESOURCE); otherwise the run says how (or to run the nodes apart).
fn room_for_descriptors(sockets: usize) -> anyhow::Result<()> {
    let needed = (sockets + 1024) as libc::rlim_t;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit the call fills in.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        bail!("getrlimit: {}", std::io::Error::last_os_error());
    }
    if limit.rlim_cur >= needed {
        return Ok(());
    }
    let wanted = libc::rlimit {
        rlim_cur: needed,
        rlim_max: limit.rlim_max.max(needed),
    };
    // SAFETY: `wanted` is a valid rlimit; the call only reads it.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) } != 0 {
        bail!(
            "{sockets} node sockets need about {needed} open files in this process, and the \
             limit is {} (hard {}): raise it (`ulimit -n {needed}`), or run the nodes apart \
             (`--separate-nodes`), and run again",
            limit.rlim_cur,
            limit.rlim_max
        );
    }
    Ok(())
}

/// Marks the lines of a run's output that carry its table rows.
const ROW_MARK: &str = "@row";

/// Runs one configuration in this process and prints its details and its table rows.
async fn run_one(cfg: &Config, features: &Value) -> anyhow::Result<()> {
    let (backend, n) = (cfg.backends[0], cfg.nodes[0]);
    // one socket a node for the gateway, and one more each where the nodes share its process
    room_for_descriptors(if cfg.separate_nodes { n } else { 2 * n })?;
    let t = Instant::now();
    let r = bench_run(backend, n, cfg.params.first().copied(), cfg, features).await?;
    print_rounds(&r);
    println!("    run took {:.1} s", t.elapsed().as_secs_f64());
    let rows = if cfg.secure {
        secure_rows(&r)
    } else if r.failed.is_none() {
        table_rows(&r)?.into_iter().enumerate().collect()
    } else {
        vec![]
    };
    for (i, row) in rows {
        println!("{ROW_MARK}{i} {row}");
    }
    match r.failed {
        Some(e) => bail!(e),
        None => Ok(()),
    }
}

/// Runs every configuration in a process of its own (so that each has its own peak RSS and
/// starts from a fresh heap), forwarding its details and collecting its table rows.
async fn run_all(cfg: &Config) -> anyhow::Result<bool> {
    use tokio::io::AsyncBufReadExt;
    let exe = std::env::current_exe()?;
    let tables: &[Table] = if cfg.secure { &SECURE_TABLES } else { &TABLES };
    let mut rows: Vec<Vec<String>> = vec![Vec::new(); tables.len()];
    let mut failed = false;
    let params: Vec<Option<usize>> = if cfg.params.is_empty() {
        vec![None]
    } else {
        cfg.params.iter().copied().map(Some).collect()
    };
    for backend in cfg.backends.iter().copied() {
        for &n in &cfg.nodes {
            for p in &params {
                let mut args: Vec<String> = [
                    "--run-one",
                    "--backend",
                    match backend {
                        Backend::Sqlite => "sqlite",
                        Backend::Postgres => "postgres",
                    },
                ]
                .map(String::from)
                .into();
                for (flag, value) in [
                    ("--nodes", n.to_string()),
                    ("--rounds", cfg.rounds.to_string()),
                    ("--rounds-large", cfg.rounds_large.to_string()),
                    ("--timeout", cfg.timeout.as_secs().to_string()),
                    ("--pairs", cfg.pairs.to_string()),
                    (
                        "--commit",
                        match cfg.commit {
                            CommitMode::Group => "group",
                            CommitMode::Each => "each",
                        }
                        .to_owned(),
                    ),
                ] {
                    args.extend([flag.to_owned(), value]);
                }
                if let Some(p) = p {
                    args.extend(["--params".to_owned(), p.to_string()]);
                }
                if cfg.secure {
                    args.push("--secure".to_owned());
                }
                if cfg.separate_nodes {
                    args.push("--separate-nodes".to_owned());
                }
                let mut child = tokio::process::Command::new(&exe)
                    .args(&args)
                    .stdout(std::process::Stdio::piped())
                    .kill_on_drop(true)
                    .spawn()?;
                let stdout = child.stdout.take().context("child has no stdout")?;
                let mut lines = tokio::io::BufReader::new(stdout).lines();
                while let Some(line) = lines.next_line().await? {
                    match line
                        .strip_prefix(ROW_MARK)
                        .and_then(|rest| rest.split_once(' '))
                    {
                        Some((i, row)) => {
                            if let Some(table) =
                                i.parse::<usize>().ok().and_then(|i| rows.get_mut(i))
                            {
                                table.push(row.to_owned());
                            }
                        }
                        None => println!("{line}"),
                    }
                }
                if !child.wait().await?.success() {
                    println!("  {} N={n}: FAILED (see above)", backend.name());
                    failed = true;
                }
            }
        }
    }
    for ((heading, columns, rule), rows) in tables.iter().zip(&rows) {
        println!();
        println!("{heading}");
        println!();
        println!("{columns}");
        println!("{rule}");
        for row in rows {
            println!("{row}");
        }
    }
    Ok(failed)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--sim-nodes") {
        let order = args
            .next()
            .context("--sim-nodes takes the file of its nodes")?;
        return sim_nodes(Path::new(&order)).await;
    }
    let cfg = Config::from_args()?;
    if cfg.run_one {
        let features: Value = serde_json::from_slice(
            &std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(FEATURES))
                .with_context(|| format!("reading {FEATURES}"))?,
        )?;
        if let Err(e) = run_one(&cfg, &features).await {
            println!(
                "  {} N={}: FAILED: {e:#}",
                cfg.backends[0].name(),
                cfg.nodes[0]
            );
            std::process::exit(1);
        }
        return Ok(());
    }
    println!("orchestration benchmark");
    println!(
        "  backends {:?}; nodes {:?}; rounds {} ({} for N >= 1000); model {}; no training: nodes \
         return the parameters they receive{}",
        cfg.backends.iter().map(|b| b.name()).collect::<Vec<_>>(),
        cfg.nodes,
        cfg.rounds,
        cfg.rounds_large,
        if cfg.params.is_empty() {
            "logistic".to_owned()
        } else {
            format!("MLP of about {:?} parameters", cfg.params)
        },
        if cfg.secure {
            format!(
                "; under secure aggregation they sum a zero delta; {} studies of each kind per \
                 case, alternately, without DP",
                cfg.pairs
            )
        } else {
            String::new()
        }
    );
    println!(
        "  {} CPUs visible; each run in a process of its own, where {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if cfg.separate_nodes {
            "the gateway runs; the simulated nodes run in a second process"
        } else {
            "the gateway and the simulated nodes run on two tokio runtimes"
        }
    );
    println!("  load average (1/5/15 min) at start: {}", loadavg());
    println!();
    let started = Instant::now();
    let failed = run_all(&cfg).await?;
    println!();
    println!("  load average (1/5/15 min) at end:   {}", loadavg());
    println!("  total time: {:.1} s", started.elapsed().as_secs_f64());
    if failed {
        std::process::exit(1);
    }
    Ok(())
}
