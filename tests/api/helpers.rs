//! Spawns the real gateway on a random port with a fresh database per test, and speaks HTTP.

use std::{path::PathBuf, sync::Arc};

use ehds_core::dev_issuer::DevIssuer;
use ehds_gateway::{configuration::Settings, startup::Application};
use reqwest::{header::HeaderMap, StatusCode};
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub dev: Arc<DevIssuer>,
    pub database_url: String,
    pub backend: Backend,
    pub data_dir: PathBuf,
    /// The running gateway's state, for tests that drive its background work directly.
    pub state: Option<ehds_gateway::http::AppState>,
    _dir: tempfile::TempDir,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Reply {
    pub fn code(&self) -> &str {
        self.body.get("code").and_then(Value::as_str).unwrap_or("")
    }
}

/// The PostgreSQL server used for tests; each test gets its own database on it. In order:
/// `TEST_POSTGRES_URL`; a server listening on 127.0.0.1:5432 (trust authentication, user
/// `postgres`); else a throwaway cluster this test process starts from the system's `initdb`
/// and `postgres` (`EHDS_TEST_POSTGRES=throwaway` asks for one even when a server listens).
fn postgres_admin_url() -> String {
    // one answer per test process, a failure included (a second initdb would fail differently)
    static URL: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    let url = URL.get_or_init(|| {
        if let Ok(url) = std::env::var("TEST_POSTGRES_URL") {
            return Ok(url);
        }
        let forced = std::env::var("EHDS_TEST_POSTGRES").is_ok_and(|v| v == "throwaway");
        let listening = std::net::TcpStream::connect_timeout(
            &([127, 0, 0, 1], 5432).into(),
            std::time::Duration::from_secs(1),
        )
        .is_ok();
        if listening && !forced {
            return Ok("postgres://postgres@127.0.0.1:5432/postgres".into());
        }
        throwaway_postgres::start()
    });
    match url {
        Ok(url) => url.clone(),
        Err(e) => panic!(
            "no PostgreSQL for the tests: {e}. Install the PostgreSQL server packages (Debian: \
             postgresql), start a server on 127.0.0.1:5432, or set TEST_POSTGRES_URL"
        ),
    }
}

/// A port nothing listens on right now, for a process the test starts.
pub fn try_free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// [`try_free_port`], for tests and benches, where a machine without a free port is a failure.
#[allow(dead_code)] // the API suite starts no processes of its own
pub fn free_port() -> u16 {
    try_free_port().expect("a free local port")
}

/// A PostgreSQL cluster in a temporary directory for this test process. A watchdog shell
/// stops the server and removes the directory once the test process is gone, however it ends.
mod throwaway_postgres {
    use std::{
        path::{Path, PathBuf},
        process::{Command, Stdio},
        time::{Duration, Instant},
    };

    const PROGRAMS: [&str; 4] = ["initdb", "postgres", "pg_isready", "pg_ctl"];

    /// The directory holding `initdb`, `postgres` and `pg_isready`: on the `PATH`, or the
    /// newest of Debian's `/usr/lib/postgresql/<version>/bin`.
    fn bin_dir() -> Result<PathBuf, String> {
        let complete = |d: &Path| PROGRAMS.iter().all(|p| d.join(p).is_file());
        let on_path = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .find(|d| complete(d));
        if let Some(dir) = on_path {
            return Ok(dir);
        }
        let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .map_err(|_| {
                "initdb, postgres and pg_isready are neither on the PATH nor under \
                 /usr/lib/postgresql"
                    .to_owned()
            })?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let version = e.file_name().to_str()?.parse().ok()?;
                let bin = e.path().join("bin");
                complete(&bin).then_some((version, bin))
            })
            .collect();
        versions.sort();
        versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
            "no initdb, postgres and pg_isready under /usr/lib/postgresql".to_owned()
        })
    }

    /// Whether this process runs as root (`/proc/self` belongs to the effective user).
    fn is_root() -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
    }

    /// PostgreSQL refuses to run as root: as root, run it as the `postgres` system user.
    fn as_server_user(program: &Path) -> Command {
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    fn free_port() -> Result<u16, String> {
        super::try_free_port().map_err(|e| e.to_string())
    }

    /// `initdb` of a new cluster under `root` (its `data` directory), owned by the server's
    /// user; the programs' directory.
    fn init(root: &Path) -> Result<PathBuf, String> {
        let bin = bin_dir()?;
        let data = root.join("data");
        std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
        if is_root() {
            let owned = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(root)
                .status()
                .map_err(|e| format!("chown: {e}"))?;
            if !owned.success() {
                return Err("cannot hand the cluster directory to the postgres user".into());
            }
        }
        let init = as_server_user(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .stdout(Stdio::null())
            .output()
            .map_err(|e| format!("initdb: {e}"))?;
        if !init.status.success() {
            return Err(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&init.stderr)
            ));
        }
        Ok(bin)
    }

    /// A cluster of one test's own, which the test stops and starts under a running gateway.
    /// Stopped and removed when dropped.
    #[allow(dead_code)]
    pub struct OwnCluster {
        bin: PathBuf,
        root: PathBuf,
        port: u16,
    }

    #[allow(dead_code)]
    impl OwnCluster {
        pub fn start() -> Result<Self, String> {
            let root =
                std::env::temp_dir().join(format!("ehds-own-pg-{}", uuid::Uuid::new_v4().simple()));
            let bin = init(&root)?;
            let this = Self {
                bin,
                root,
                port: free_port()?,
            };
            this.resume()?;
            Ok(this)
        }

        pub fn url(&self) -> String {
            format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
        }

        /// `pg_ctl stop -m fast`: every connection is terminated, as in a restart or failover.
        pub fn stop(&self) -> Result<(), String> {
            self.pg_ctl(&["stop", "-m", "fast"])
        }

        pub fn resume(&self) -> Result<(), String> {
            let options = format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
                 -c synchronous_commit=off -c full_page_writes=off -c max_connections=100",
                self.port,
                self.root.display()
            );
            let log = self.root.join("server.log");
            self.pg_ctl(&["start", "-o", &options, "-l", &log.to_string_lossy()])
        }

        fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
            let out = as_server_user(&self.bin.join("pg_ctl"))
                .arg("-D")
                .arg(self.root.join("data"))
                .args(["-w", "-t", "60"])
                .args(args)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("pg_ctl: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "pg_ctl {args:?}: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ))
            }
        }
    }

    impl Drop for OwnCluster {
        fn drop(&mut self) {
            let _ = self.pg_ctl(&["stop", "-m", "immediate"]);
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    pub fn start() -> Result<String, String> {
        let root = std::env::temp_dir().join(format!("ehds-test-pg-{}", std::process::id()));
        let data = root.join("data");
        let bin = init(&root)?;
        let port = free_port()?;
        // the watchdog: start the server, wait while the test process lives, then stop it
        let script = r#"
            "$1/postgres" -D "$2" -p "$3" -k "$4" -c listen_addresses=127.0.0.1                 -c fsync=off -c synchronous_commit=off -c full_page_writes=off                 -c max_connections=300 >/dev/null 2>&1 &
            server=$!
            while [ -d "/proc/$5" ] && kill -0 "$server" 2>/dev/null; do sleep 1; done
            kill -INT "$server" 2>/dev/null
            wait "$server"
            rm -rf "$4"
        "#;
        let mut watchdog = as_server_user(Path::new("sh"));
        watchdog
            .args(["-c", script, "sh"])
            .arg(&bin)
            .arg(&data)
            .arg(port.to_string())
            .arg(&root)
            .arg(std::process::id().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        watchdog
            .spawn()
            .map_err(|e| format!("starting postgres: {e}"))?;
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new(bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return Ok(format!("postgres://postgres@127.0.0.1:{port}/postgres"));
            }
            if Instant::now() > until {
                return Err(format!("the throwaway server on port {port} did not start"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

// for the system tests that restart the database under a running gateway
#[allow(unused_imports)]
pub use throwaway_postgres::OwnCluster;

pub async fn fresh_postgres_database() -> String {
    use sqlx::Executor;
    let admin = postgres_admin_url();
    let name = format!("ehds_test_{}", uuid::Uuid::new_v4().simple());
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&admin)
        .await
        .expect("PostgreSQL must be running for the test suite (see README)");
    pool.execute(sqlx::AssertSqlSafe(format!("create database {name}")))
        .await
        .expect("create test database");
    pool.close().await;
    let (base, _) = admin.rsplit_once('/').expect("database URL has a path");
    format!("{base}/{name}")
}

/// The gateway's error log goes to the test's captured output, so a failing test shows why
/// the server answered 500; `TEST_LOG` (an `EnvFilter`, e.g. `info`) shows more.
fn log_server_errors() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("TEST_LOG").unwrap_or_else(|_| EnvFilter::new("error"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> TestApp {
        Self::spawn_with(backend, |_| {}).await
    }

    /// A gateway on a fresh database with `tweak` applied to its settings.
    pub async fn spawn_with(backend: Backend, tweak: impl FnOnce(&mut Settings)) -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        let database_url = match backend {
            Backend::Sqlite => format!(
                "sqlite://{}?mode=rwc",
                dir.path().join("gateway.db").display()
            ),
            Backend::Postgres => fresh_postgres_database().await,
        };
        Self::spawn_on(backend, dir, database_url, tweak).await
    }

    pub async fn spawn_on(
        backend: Backend,
        dir: tempfile::TempDir,
        database_url: String,
        tweak: impl FnOnce(&mut Settings),
    ) -> TestApp {
        log_server_errors();
        let mut settings = Settings {
            listen: "127.0.0.1:0".parse().unwrap(),
            data_dir: dir.path().to_path_buf(),
            database_url: Some(database_url.clone()),
            ..Default::default()
        };
        settings.http.body_limit_bytes = 64 * 1024;
        tweak(&mut settings);
        let app = Application::build(settings.clone(), true)
            .await
            .expect("gateway starts");
        let base = app.base_url().to_owned();
        let state = Some(app.state().clone());
        tokio::spawn(app.run_until_stopped(std::future::pending()));
        let dev = Arc::new(
            DevIssuer::load_or_create(dir.path(), &base, &settings.auth.audience).unwrap(),
        );
        TestApp {
            base,
            client: ehds_http::builder().build().unwrap(),
            dev,
            database_url,
            backend,
            data_dir: dir.path().to_path_buf(),
            state,
            _dir: dir,
        }
    }

    pub fn token(&self, sub: &str, roles: &[&str], org: Option<&str>) -> String {
        let roles: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
        self.dev.mint(sub, &roles, org, 600).unwrap()
    }

    pub fn officer(&self) -> String {
        self.token("officer-1", &["hdab_officer"], Some("hdab-de"))
    }
    pub fn researcher(&self) -> String {
        self.token("alice", &["researcher"], Some("uni-a"))
    }
    pub fn auditor(&self) -> String {
        self.token("audrey", &["auditor"], Some("hdab-de"))
    }
    pub fn registrar(&self) -> String {
        self.token("reg-1", &["optout_registrar"], Some("hdab-de"))
    }
    pub fn holder(&self, org: &str) -> String {
        self.token(&format!("node-{org}"), &["data_holder"], Some(org))
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let resp = req.send().await.expect("request reaches the gateway");
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn get(&self, path: &str, token: &str) -> Reply {
        self.send(
            self.client
                .get(format!("{}{path}", self.base))
                .bearer_auth(token),
        )
        .await
    }

    pub async fn post(&self, path: &str, token: &str, body: &Value) -> Reply {
        self.send(
            self.client
                .post(format!("{}{path}", self.base))
                .bearer_auth(token)
                .json(body),
        )
        .await
    }

    /// The permit's current ETag, as an officer reads it (for `If-Match` on its changes).
    pub async fn permit_etag(&self, pid: &str) -> String {
        let r = self
            .get(&format!("/v1/permits/{pid}"), &self.officer())
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body["etag"].as_str().unwrap().to_owned()
    }

    pub async fn post_if_match(&self, path: &str, token: &str, etag: &str, body: &Value) -> Reply {
        self.send(
            self.client
                .post(format!("{}{path}", self.base))
                .bearer_auth(token)
                .header("if-match", etag)
                .json(body),
        )
        .await
    }

    /// Audit entries matching `query` (e.g. `outcome=denied`), read as an auditor.
    pub async fn audit(&self, query: &str) -> Vec<Value> {
        let r = self
            .get(
                &format!("/v1/audit/events?limit=10000&{query}"),
                &self.auditor(),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body.as_array().cloned().unwrap_or_default()
    }

    pub async fn apply(&self, body: &Value) -> Reply {
        self.post("/v1/applications", &self.researcher(), body)
            .await
    }

    /// Applies as alice (uni-a) and has the officer approve; returns (application id, permit).
    pub async fn permit_with(&self, body: &Value, decision: &Value) -> (String, Value) {
        let created = self.apply(body).await;
        assert_eq!(created.status, 201, "{}", created.text);
        let id = created.body["id"].as_str().unwrap().to_owned();
        let decided = self
            .post(
                &format!("/v1/applications/{id}/decision"),
                &self.officer(),
                decision,
            )
            .await;
        assert_eq!(decided.status, 200, "{}", decided.text);
        (id, decided.body["permit"].clone())
    }

    pub async fn permit(&self) -> Value {
        self.permit_with(&application(), &json!({"decision": "approve"}))
            .await
            .1
    }
}

pub fn in_days(days: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::days(days)).to_rfc3339()
}

/// A valid application from alice's organisation for two hospitals.
pub fn application() -> Value {
    json!({
        "title": "Federated model of heart-disease risk",
        "applicant": {"organisation": "uni-a", "public_body": false},
        "purposes": ["scientific_research"],
        "research_flags": ["algorithm_training"],
        "categories": ["ehr_data", "health_determinants"],
        "data_holders": ["hosp-1", "hosp-2"],
        "member_states": ["DE", "HU"],
        "requested_period": {"start": in_days(0), "end": in_days(365)},
        "privacy_budget": {"epsilon": 8.0, "delta": 1e-5, "unit": "record"},
        "justification": "Training a risk model across hospitals without moving records.",
        "declares_no_prohibited_use": true
    })
}

/// Runs an async test body once on SQLite and once on PostgreSQL.
#[macro_export]
macro_rules! both_backends {
    ($name:ident) => {
        mod $name {
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                $name($crate::helpers::TestApp::spawn($crate::helpers::Backend::Sqlite).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                $name($crate::helpers::TestApp::spawn($crate::helpers::Backend::Postgres).await)
                    .await
            }
        }
    };
}

/// The hospitals of the example federation (`examples/federation`) and the member states the
/// example assigns them.
pub const EXAMPLE_HOSPITALS: [(&str, &str); 4] = [
    ("cleveland", "DE"),
    ("hungarian", "HU"),
    ("switzerland", "AT"),
    ("va", "NL"),
];

pub fn example_federation_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/federation")
}

/// The example federation's feature specification (13 inputs, all `ehr_data`).
pub fn example_features() -> Value {
    let path = example_federation_dir().join("heart_disease.features.json");
    serde_json::from_slice(&std::fs::read(path).expect("example feature spec")).unwrap()
}

/// An application from alice's organisation for `holders` (hospitals of the example
/// federation), `ehr_data` only, with the given budget (`unit`: `record` or `data_holder`).
pub fn federation_application(holders: &[&str], epsilon: f64, unit: &str) -> Value {
    let states: Vec<&str> = EXAMPLE_HOSPITALS
        .iter()
        .filter(|h| holders.contains(&h.0))
        .map(|h| h.1)
        .collect();
    json!({
        "title": "Federated heart-disease risk model",
        "applicant": {"organisation": "uni-a", "public_body": false},
        "purposes": ["scientific_research"],
        "research_flags": ["algorithm_training"],
        "categories": ["ehr_data"],
        "data_holders": holders,
        "member_states": if states.is_empty() { vec!["DE"] } else { states },
        "requested_period": {"start": in_days(0), "end": in_days(365)},
        "privacy_budget": {"epsilon": epsilon, "delta": 1e-5, "unit": unit},
        "justification": "Train a risk model across hospitals without moving any record.",
        "declares_no_prohibited_use": true
    })
}

/// A small valid study on the example feature specification: FedAvg on a logistic model,
/// client-level DP with a fixed noise multiplier, one round, every holder needed.
pub fn study_body(permit_id: &str, holders: &[&str]) -> Value {
    json!({
        "title": "Coronary artery disease risk",
        "permit_id": permit_id,
        "purpose": "scientific_research",
        "categories": ["ehr_data"],
        "data_holders": holders,
        "feature_spec": example_features(),
        "model": {"architecture": "logistic"},
        "strategy": {"name": "fedavg"},
        "optimizer": {"name": "sgd", "lr": 0.1},
        "local_steps": 20,
        "batch_size": 8,
        "rounds": 1,
        "min_sites": holders.len(),
        "round_deadline_seconds": 120,
        "dp": {"level": "client", "clip_norm": 1.0, "noise_multiplier": 2.0},
        "seed": 7
    })
}

impl TestApp {
    /// Creates a permit from `body` (approved as is); returns its id.
    pub async fn permit_id(&self, body: &Value) -> String {
        let (_, permit) = self
            .permit_with(body, &json!({"decision": "approve"}))
            .await;
        permit["id"].as_str().expect("permit id").to_owned()
    }

    /// Submits a study as alice and expects it to be accepted; returns its id.
    pub async fn submit_study(&self, body: &Value) -> String {
        let created = self.post("/v1/studies", &self.researcher(), body).await;
        assert_eq!(created.status, 201, "{}", created.text);
        created.body["id"].as_str().expect("study id").to_owned()
    }

    /// Polls `GET {path}` as `token` until `done` holds for the body, for at most `secs`.
    pub async fn wait_for(
        &self,
        path: &str,
        token: &str,
        secs: u64,
        what: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let r = self.get(path, token).await;
            if r.status == 200 && done(&r.body) {
                return r.body;
            }
            assert!(
                std::time::Instant::now() < until,
                "timed out after {secs} s waiting for {what}; last answer from {path}: {} {}",
                r.status,
                r.text
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

/// One server-sent event: its type, id and data.
#[derive(Debug)]
pub struct StreamedEvent {
    pub event: String,
    pub id: Option<String>,
    pub data: String,
}

/// Reads server-sent events from `resp` until an `end` event or the connection closes.
pub async fn read_events(mut resp: reqwest::Response) -> Vec<StreamedEvent> {
    let mut buffer = String::new();
    let mut events = Vec::new();
    while let Some(chunk) = resp.chunk().await.expect("the stream reads") {
        buffer.push_str(std::str::from_utf8(&chunk).expect("UTF-8 events"));
        while let Some(at) = buffer.find("\n\n") {
            let block: String = buffer.drain(..at + 2).collect();
            let mut e = StreamedEvent {
                event: "message".into(),
                id: None,
                data: String::new(),
            };
            let mut fields = 0;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    e.event = v.trim().to_owned();
                    fields += 1;
                } else if let Some(v) = line.strip_prefix("data:") {
                    e.data.push_str(v.trim_start());
                    fields += 1;
                } else if let Some(v) = line.strip_prefix("id:") {
                    e.id = Some(v.trim().to_owned());
                }
            }
            // keep-alive comments carry no field
            if fields > 0 {
                let end = e.event == "end";
                events.push(e);
                if end {
                    return events;
                }
            }
        }
    }
    events
}
