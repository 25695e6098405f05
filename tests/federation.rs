//! Whole federated studies with real node agents: four `ehds-gateway node run` processes, one
//! per hospital of the example federation, each reading its own FHIR Bundle and talking to the
//! gateway over HTTP. One test drives a study end to end on each database; the other kills the
//! gateway process in the middle of a round, restarts it, and checks that the study finishes
//! with exactly the model an uninterrupted run of the same study produces.

#[path = "api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use ehds_gateway::auth::dev::DevIssuer;
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use helpers::*;

const BIN: &str = env!("CARGO_BIN_EXE_ehds-gateway");

fn hospitals() -> Vec<&'static str> {
    EXAMPLE_HOSPITALS.iter().map(|h| h.0).collect()
}

fn example_optouts() -> Vec<u8> {
    std::fs::read(example_federation_dir().join("optouts.ndjson")).expect("example opt-outs")
}

fn example_optout_count() -> u64 {
    String::from_utf8(example_optouts())
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count() as u64
}

/// The last lines of a log file, for failure messages.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Node agent processes; killed when dropped.
struct Nodes {
    children: Vec<(String, Child)>,
    logs: Vec<PathBuf>,
}

impl Nodes {
    fn new() -> Self {
        Self {
            children: vec![],
            logs: vec![],
        }
    }

    /// Starts the node agent of `org` against `gateway`, minting its tokens with the
    /// development key in `key_dir`; state and log go under `work`.
    fn spawn(
        &mut self,
        org: &str,
        gateway: &str,
        key_dir: &Path,
        work: &Path,
        max_tasks: Option<usize>,
    ) {
        let state = work.join("nodes").join(org);
        std::fs::create_dir_all(&state).unwrap();
        let log_path = work.join(format!("node-{org}-{}.log", self.logs.len()));
        let log = std::fs::File::create(&log_path).unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args(["node", "run", "--gateway", gateway, "--org", org])
            .args(["--poll-wait", "5"])
            .arg("--fhir")
            .arg(example_federation_dir().join(format!("{org}.json")))
            .arg("--state-dir")
            .arg(&state)
            .arg("--dev-key-dir")
            .arg(key_dir)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .kill_on_drop(true);
        if let Some(m) = max_tasks {
            cmd.args(["--max-tasks", &m.to_string()]);
        }
        let child = cmd.spawn().expect("node agent starts");
        self.children.push((org.to_owned(), child));
        self.logs.push(log_path);
    }

    fn logs(&self) -> String {
        self.logs
            .iter()
            .map(|p| format!("--- {}\n{}", p.display(), tail(p, 15)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    async fn kill(&mut self) {
        for (_, c) in &mut self.children {
            let _ = c.kill().await;
        }
    }
}

/// What the tests need of a gateway, in-process or not: its base URL and its development key.
struct Gateway {
    base: String,
    http: reqwest::Client,
    dev: DevIssuer,
}

impl Gateway {
    fn token(&self, sub: &str, role: &str, org: &str) -> String {
        self.dev
            .mint(sub, &[role.to_owned()], Some(org), 3600)
            .unwrap()
    }
    fn researcher(&self) -> String {
        self.token("alice", "researcher", "uni-a")
    }
    fn officer(&self) -> String {
        self.token("olaf", "hdab_officer", "hdab-de")
    }
    fn auditor(&self) -> String {
        self.token("audrey", "auditor", "hdab-de")
    }
    fn registrar(&self) -> String {
        self.token("rita", "optout_registrar", "hdab-de")
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> (u16, Value) {
        let r = req.send().await.expect("the gateway answers");
        let status = r.status().as_u16();
        let text = r.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str, token: &str) -> Value {
        let (status, body) = self
            .send(
                self.http
                    .get(format!("{}{path}", self.base))
                    .bearer_auth(token),
            )
            .await;
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    async fn post(&self, path: &str, token: &str, body: &Value) -> Value {
        let (status, answer) = self
            .send(
                self.http
                    .post(format!("{}{path}", self.base))
                    .bearer_auth(token)
                    .json(body),
            )
            .await;
        assert!(
            (200..300).contains(&status),
            "POST {path}: {status} {answer}"
        );
        answer
    }

    async fn audit(&self, query: &str) -> Vec<Value> {
        self.get(
            &format!("/v1/audit/events?limit=10000&{query}"),
            &self.auditor(),
        )
        .await
        .as_array()
        .cloned()
        .unwrap_or_default()
    }

    /// Imports the example opt-outs, then has alice apply for the four hospitals and the
    /// officer approve: the opt-outs bind the permit. Returns the permit id.
    async fn optouts_then_permit(&self) -> String {
        let (status, imported) = self
            .send(
                self.http
                    .post(format!("{}/v1/opt-outs/import", self.base))
                    .bearer_auth(self.registrar())
                    .header("content-type", "application/x-ndjson")
                    .body(example_optouts()),
            )
            .await;
        assert_eq!(status, 200, "{imported}");
        assert_eq!(imported["registered"], example_optout_count(), "{imported}");
        let application = self
            .post(
                "/v1/applications",
                &self.researcher(),
                &federation_application(&hospitals(), 10.0, "data_holder"),
            )
            .await;
        let id = application["id"].as_str().unwrap();
        let decided = self
            .post(
                &format!("/v1/applications/{id}/decision"),
                &self.officer(),
                &json!({"decision": "approve"}),
            )
            .await;
        decided["permit"]["id"].as_str().unwrap().to_owned()
    }

    /// Waits (up to `secs`) until the study is no longer running; returns its rounds view.
    async fn wait_until_done(&self, study: &str, secs: u64, nodes: &Nodes) -> Value {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            let view = self
                .get(&format!("/v1/studies/{study}/rounds"), &self.researcher())
                .await;
            if view["status"] != "running" {
                return view;
            }
            assert!(
                Instant::now() < until,
                "study {study} still running after {secs} s: {view}\n{}",
                nodes.logs()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The final model: its bytes and the `x-model-digest` header.
    async fn model(&self, study: &str) -> (Vec<u8>, String) {
        let r = self
            .http
            .get(format!("{}/v1/studies/{study}/model", self.base))
            .bearer_auth(self.researcher())
            .send()
            .await
            .unwrap();
        let status = r.status();
        let digest = r
            .headers()
            .get("x-model-digest")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let bytes = r.bytes().await.unwrap().to_vec();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        (bytes, digest)
    }
}

/// The study both tests run: Ditto on a logistic model with client-level DP on the four
/// hospitals, few rounds and little local work.
fn ditto_study(permit: &str, rounds: u64) -> Value {
    json!({
        "title": "Fed-Heart-Disease across four hospitals",
        "permit_id": permit,
        "purpose": "scientific_research",
        "categories": ["ehr_data"],
        "data_holders": hospitals(),
        "feature_spec": example_features(),
        "model": {"architecture": "logistic"},
        "strategy": {"name": "ditto", "lambda": 0.01},
        "optimizer": {"name": "adamw", "lr": 0.1},
        "local_steps": 20,
        "batch_size": 4,
        "rounds": rounds,
        "min_sites": 4,
        "round_deadline_seconds": 180,
        "dp": {"level": "client", "clip_norm": 1.0, "target_epsilon": 8.0},
        "seed": 11
    })
}

/// Every round aggregated exactly once, by all four hospitals; returns the aggregated rounds.
fn aggregated_once_each(view: &Value, rounds: u64) -> Vec<Value> {
    let all = view["rounds"].as_array().unwrap();
    let aggregated: Vec<Value> = all
        .iter()
        .filter(|r| r["phase"] == "aggregated")
        .cloned()
        .collect();
    for round in 1..=rounds {
        let n = aggregated.iter().filter(|r| r["round"] == round).count();
        assert_eq!(n, 1, "round {round} aggregated {n} times: {view}");
    }
    assert_eq!(aggregated.len() as u64, rounds, "{view}");
    aggregated
}

async fn whole_study_on_four_node_processes(app: TestApp) {
    let gw = Gateway {
        base: app.base.clone(),
        http: reqwest::Client::new(),
        dev: DevIssuer::load_or_create(&app.data_dir, &app.base, "ehds-gateway").unwrap(),
    };
    let permit = gw.optouts_then_permit().await;
    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in hospitals() {
        nodes.spawn(org, &gw.base, &app.data_dir, work.path(), None);
    }
    let rounds = 3;
    let created = gw
        .post(
            "/v1/studies",
            &gw.researcher(),
            &ditto_study(&permit, rounds),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_owned();

    let view = gw.wait_until_done(&id, 300, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());

    let aggregated = aggregated_once_each(&view, rounds);
    let optouts = example_optout_count();
    for r in &aggregated {
        let sites = r["sites"].as_array().unwrap();
        assert_eq!(sites.len(), 4, "{r}");
        assert!(sites.iter().all(|s| s["contributed"] == true), "{r}");
        assert!(
            sites.iter().all(|s| s["samples"].as_u64().unwrap() > 0),
            "{r}"
        );
        let per_site: u64 = sites
            .iter()
            .map(|s| s["excluded_subjects"].as_u64().unwrap())
            .sum();
        assert_eq!(r["excluded_subjects"], per_site, "{r}");
        assert!(per_site > 0, "{r}");
        assert_eq!(per_site, optouts, "every example opt-out is excluded: {r}");
    }
    let last = aggregated.last().unwrap();
    let epsilon = last["epsilon_total"].as_f64().unwrap();
    assert!(epsilon > 0.0 && epsilon <= 8.0 + 1e-9, "{last}");
    assert_eq!(
        last["evaluation"]["sites"].as_array().unwrap().len(),
        4,
        "{last}"
    );
    let permit_view = gw
        .get(&format!("/v1/permits/{permit}"), &gw.officer())
        .await;
    let spent = permit_view["privacy_budget"]["epsilon_spent"]
        .as_f64()
        .unwrap();
    assert!((spent - epsilon).abs() < 1e-9, "{permit_view}");

    let (bytes, digest) = gw.model(&id).await;
    let (params, meta) = fl_engine::load_safetensors(&bytes).expect("a valid parameter file");
    assert!(!params.is_empty());
    assert_eq!(meta.digest, digest);
    assert_eq!(meta.study, id);
    assert_eq!(meta.round, rounds);
    let aggregate = gw
        .audit(&format!("action=study.round.aggregate&resource_id={id}"))
        .await;
    assert_eq!(aggregate.len() as u64, rounds);
    assert_eq!(aggregate.last().unwrap()["detail"]["model_digest"], digest);
    assert!(aggregate.iter().all(|e| e["detail"]["contributors"] == 4));

    let verify = gw.get("/v1/audit/verify", &gw.auditor()).await;
    assert_eq!(verify["valid"], true, "{verify}");
}
both_backends!(whole_study_on_four_node_processes);

// ---------------------------------------------------------------------------------------------
// Crash and resume.

/// A port nothing listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `ehds-gateway serve --dev` as its own process.
struct GatewayProcess {
    child: Child,
}

impl GatewayProcess {
    async fn start(database_url: &str, data_dir: &Path, port: u16, log: &Path) -> Self {
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        // the port of a killed gateway may take a moment to be free again
        for _ in 0..5 {
            let out = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .unwrap();
            let mut child = Command::new(BIN)
                .args(["serve", "--dev"])
                .env("EHDS_DATABASE_URL", database_url)
                .env("EHDS_DATA_DIR", data_dir)
                .env("EHDS_LISTEN", format!("127.0.0.1:{port}"))
                .env("EHDS_FEDERATION__TICK_MILLIS", "100")
                .env("RUST_LOG", "info")
                .stdin(Stdio::null())
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .kill_on_drop(true)
                .spawn()
                .expect("the gateway starts");
            let until = Instant::now() + Duration::from_secs(60);
            while Instant::now() < until {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if let Ok(r) = http.get(format!("{base}/readyz")).send().await {
                    if r.status().is_success() {
                        return Self { child };
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let _ = child.kill().await;
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        panic!("the gateway did not start:\n{}", tail(log, 30));
    }

    /// SIGKILL: no shutdown, no flushing, whatever was in flight is lost.
    async fn kill(&mut self) {
        self.child.kill().await.unwrap();
    }
}

/// A fresh database of `backend` with its URL; SQLite lives in `dir`.
async fn fresh_database(backend: Backend, dir: &Path) -> String {
    match backend {
        Backend::Sqlite => format!("sqlite://{}?mode=rwc", dir.join("gateway.db").display()),
        Backend::Postgres => fresh_postgres_database().await,
    }
}

struct RunResult {
    digest: String,
    view: Value,
}

/// Runs the reproducible study on a fresh gateway process and database. With `crash`, the
/// gateway is killed while round 2 is collecting with results stored, and restarted.
async fn reproducible_run(backend: Backend, crash: bool) -> RunResult {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("gateway");
    let database_url = fresh_database(backend, dir.path()).await;
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let log = dir.path().join("gateway.log");
    let mut gateway = GatewayProcess::start(&database_url, &data_dir, port, &log).await;
    let gw = Gateway {
        base: base.clone(),
        http: reqwest::Client::new(),
        dev: DevIssuer::load_or_create(&data_dir, &base, "ehds-gateway").unwrap(),
    };
    let permit = gw.optouts_then_permit().await;

    let mut nodes = Nodes::new();
    for org in hospitals() {
        // with a crash to come, `va` stops after its first task, so that round 2 waits for it
        let max_tasks = (crash && org == "va").then_some(1);
        nodes.spawn(org, &base, &data_dir, dir.path(), max_tasks);
    }
    let rounds = 3;
    let mut body = ditto_study(&permit, rounds);
    body["dp"]["noise_seed"] = json!(20_260_101);
    let created = gw.post("/v1/studies", &gw.researcher(), &body).await;
    let id = created["id"].as_str().unwrap().to_owned();

    if crash {
        // Round 2 collecting, at least one of its results stored: kill the gateway.
        let until = Instant::now() + Duration::from_secs(240);
        loop {
            let results = gw
                .audit("action=node.task.result&outcome=success")
                .await
                .into_iter()
                .filter(|e| e["detail"]["study"] == id.as_str() && e["detail"]["round"] == 2)
                .count();
            let view = gw
                .get(&format!("/v1/studies/{id}/rounds"), &gw.researcher())
                .await;
            let collecting = view["rounds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["round"] == 2 && r["phase"] == "collecting");
            if results >= 1 && collecting {
                break;
            }
            assert!(
                Instant::now() < until,
                "round 2 never collected a result: {view}\n{}",
                nodes.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        gateway.kill().await;
        // the surviving nodes keep retrying while the gateway is down
        tokio::time::sleep(Duration::from_secs(1)).await;
        gateway = GatewayProcess::start(&database_url, &data_dir, port, &log).await;
        nodes.spawn("va", &base, &data_dir, dir.path(), None);
    }

    let view = gw.wait_until_done(&id, 300, &nodes).await;
    nodes.kill().await;
    assert_eq!(
        view["status"],
        "completed",
        "{view}\n{}\n--- gateway\n{}",
        nodes.logs(),
        tail(&log, 30)
    );
    let aggregated = aggregated_once_each(&view, rounds);
    assert!(aggregated.iter().all(|r| r["sites"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["contributed"] == true)));
    if crash {
        // the gateway died once; the round it died in was still collected and aggregated once
        let starts = gw
            .audit(&format!("action=study.round.start&resource_id={id}"))
            .await;
        assert_eq!(starts.len() as u64, rounds, "{starts:?}");
    }

    // The budget was spent once per round, and the permit says what the study says.
    let permit_view = gw
        .get(&format!("/v1/permits/{permit}"), &gw.officer())
        .await;
    let spent = permit_view["privacy_budget"]["epsilon_spent"]
        .as_f64()
        .unwrap();
    let study_spent = view["epsilon_spent"].as_f64().unwrap();
    assert!(
        (spent - study_spent).abs() < 1e-9,
        "{permit_view} vs {view}"
    );
    let last = aggregated.last().unwrap();
    assert!((last["epsilon_total"].as_f64().unwrap() - study_spent).abs() < 1e-12);
    assert!(study_spent <= 8.0 + 1e-9);

    // The released model is the one the last aggregation recorded.
    let (bytes, digest) = gw.model(&id).await;
    let (_, meta) = fl_engine::load_safetensors(&bytes).expect("a valid parameter file");
    assert_eq!(meta.digest, digest);
    let aggregate = gw
        .audit(&format!("action=study.round.aggregate&resource_id={id}"))
        .await;
    assert_eq!(aggregate.len() as u64, rounds, "{aggregate:?}");
    assert_eq!(aggregate.last().unwrap()["detail"]["round"], rounds);
    assert_eq!(aggregate.last().unwrap()["detail"]["model_digest"], digest);

    let verify = gw.get("/v1/audit/verify", &gw.auditor()).await;
    assert_eq!(verify["valid"], true, "{verify}");
    gateway.kill().await;
    let offline = std::process::Command::new(BIN)
        .args(["audit", "verify", "--database-url", &database_url])
        .env("EHDS_DATA_DIR", &data_dir)
        .output()
        .unwrap();
    assert!(
        offline.status.success(),
        "offline verification failed: {}{}",
        String::from_utf8_lossy(&offline.stdout),
        String::from_utf8_lossy(&offline.stderr)
    );
    RunResult { digest, view }
}

/// A gateway killed mid-round resumes the study at the same round; the result is bit for bit
/// the model of the same study run without interruption.
async fn crash_and_resume_gives_the_uninterrupted_model(backend: Backend) {
    let crashed = reproducible_run(backend, true).await;
    let reference = reproducible_run(backend, false).await;
    assert_eq!(
        crashed.digest, reference.digest,
        "the resumed study's model differs from the uninterrupted run's"
    );
    let eps = |r: &RunResult| r.view["epsilon_spent"].as_f64().unwrap();
    assert!((eps(&crashed) - eps(&reference)).abs() < 1e-12);
    let samples = |r: &RunResult| -> Vec<Value> {
        r.view["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["samples"].clone())
            .collect()
    };
    assert_eq!(samples(&crashed), samples(&reference));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_and_resume_postgres() {
    crash_and_resume_gives_the_uninterrupted_model(Backend::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_and_resume_sqlite() {
    crash_and_resume_gives_the_uninterrupted_model(Backend::Sqlite).await
}

/// A stand-in identity provider for the client-credentials grant: discovery plus a token
/// endpoint that accepts one client and hands out data-holder tokens signed with the gateway's
/// development key (the issuer the gateway trusts in development mode).
async fn identity_provider(
    dev: std::sync::Arc<DevIssuer>,
    org: &'static str,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use axum::{
        http::HeaderMap,
        routing::{get, post},
        Json, Router,
    };
    use base64::Engine as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let issued = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = issued.clone();
    let token_url = format!("{base}/token");
    let app = Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || {
                let token_url = token_url.clone();
                async move { Json(json!({ "token_endpoint": token_url })) }
            }),
        )
        .route(
            "/token",
            post(move |headers: HeaderMap, body: String| {
                let (dev, count) = (dev.clone(), count.clone());
                async move {
                    let expected = format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD.encode(format!("node-{org}:s3cret"))
                    );
                    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
                    if auth != Some(expected.as_str()) || body != "grant_type=client_credentials" {
                        return (axum::http::StatusCode::UNAUTHORIZED, Json(json!({"error": "invalid_client"})));
                    }
                    count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let token = dev.mint(&format!("node-{org}"), &["data_holder".into()], Some(org), 300).unwrap();
                    (axum::http::StatusCode::OK, Json(json!({"access_token": token, "token_type": "Bearer", "expires_in": 300})))
                }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, issued)
}

/// The node agent in production mode: it finds the token endpoint by OpenID Connect discovery,
/// obtains its data-holder token with the client-credentials grant, and completes its task; a
/// wrong secret gets it nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_agent_authenticates_with_client_credentials() {
    use ehds_gateway::{
        domain::OrgId,
        node::agent::{Agent, AgentConfig, Credentials, DataSource},
    };
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (idp, issued) = identity_provider(app.dev.clone(), "cleveland").await;
    let permit = app
        .permit_id(&federation_application(&["cleveland"], 8.0, "record"))
        .await;
    let study = app.submit_study(&study_body(&permit, &["cleveland"])).await;
    let state = tempfile::tempdir().unwrap();
    let agent = |secret: &str| {
        Agent::new(AgentConfig {
            gateway: app.base.clone(),
            organisation: OrgId::parse("cleveland").unwrap(),
            credentials: Credentials::ClientCredentials {
                issuer: idp.clone(),
                client_id: "node-cleveland".into(),
                client_secret: secret.into(),
            },
            source: DataSource::Fhir(example_federation_dir().join("cleveland.json")),
            state_dir: state.path().to_path_buf(),
            poll_wait_seconds: 5,
            max_tasks: Some(1),
        })
        .unwrap()
    };
    assert!(
        agent("wrong").run().await.is_err(),
        "a wrong secret must not get a token"
    );
    assert_eq!(issued.load(std::sync::atomic::Ordering::SeqCst), 0);
    tokio::time::timeout(Duration::from_secs(120), agent("s3cret").run())
        .await
        .expect("the agent finishes its task")
        .expect("the agent works with its client credentials");
    assert_eq!(issued.load(std::sync::atomic::Ordering::SeqCst), 1);
    let results = app.audit("action=node.task.result&outcome=success").await;
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["actor"]["organisation"], "cleveland");
    assert_eq!(results[0]["detail"]["study"], study.as_str());
}
