//! Whole federated studies with real node agents: four `ehds-node run` processes, one
//! per hospital of the example federation, each reading its own FHIR Bundle and talking to the
//! gateway over HTTP. One test drives a study end to end on each database; the other kills the
//! gateway process in the middle of a round, restarts it, and checks that the study finishes
//! with exactly the model an uninterrupted run of the same study produces.

#[path = "support/balancer.rs"]
mod balancer;
#[path = "api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use ehds_core::{
    dev_issuer::DevIssuer,
    domain::{audit::AuditEntry, PermitId, StudyId},
};
use ehds_node::client::{DevTokens, GatewayClient, ModelFile, OptOutImport};
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use balancer::Balancer;
use helpers::*;

/// The gateway program.
fn gateway_bin() -> std::path::PathBuf {
    ehds_tools::built_program("ehds-gateway")
}

/// The node agent program a data holder installs.
fn node_bin() -> std::path::PathBuf {
    ehds_tools::built_program("ehds-node")
}

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
        let data = vec![
            "--fhir".into(),
            example_federation_dir()
                .join(format!("{org}.json"))
                .into_os_string(),
        ];
        self.spawn_reading(org, gateway, key_dir, work, max_tasks, data);
    }

    /// Same, reading the records named by `data` (`--fhir`, `--code-map`, ...).
    fn spawn_reading(
        &mut self,
        org: &str,
        gateway: &str,
        key_dir: &Path,
        work: &Path,
        max_tasks: Option<usize>,
        mut data: Vec<std::ffi::OsString>,
    ) {
        data.extend(["--dev-key-dir".into(), key_dir.into()]);
        self.start(org, gateway, work, max_tasks, data, None);
    }

    /// Starts the node agent of `org` as a hospital runs it outside development mode: with a
    /// bearer token obtained elsewhere, so that it may reach the gateway through any URL, and
    /// a policy that accepts FedAvg studies under secure aggregation only, formal DP or not.
    fn spawn_with_token(&mut self, org: &str, gateway: &str, token: &str, work: &Path) {
        let policy = work.join(format!("policy-{org}.toml"));
        std::fs::write(
            &policy,
            "[accept]\npermits = [\"*\"]\npurposes = [\"scientific_research\"]\n\
             categories = [\"ehr_data\"]\nmethods = [\"fedavg\"]\n\
             [privacy]\nrequire_formal_dp = false\nrequire_secure_aggregation = true\n",
        )
        .unwrap();
        let args = vec![
            "--fhir".into(),
            example_federation_dir()
                .join(format!("{org}.json"))
                .into_os_string(),
            "--policy".into(),
            policy.into_os_string(),
        ];
        self.start(org, gateway, work, None, args, Some(token));
    }

    /// Runs `node run` for `org` against `gateway` with `args` (records, credentials) and,
    /// if given, a bearer token; state and log go under `work`.
    fn start(
        &mut self,
        org: &str,
        gateway: &str,
        work: &Path,
        max_tasks: Option<usize>,
        args: Vec<std::ffi::OsString>,
        token: Option<&str>,
    ) {
        let state = work.join("nodes").join(org);
        std::fs::create_dir_all(&state).unwrap();
        let log_path = work.join(format!("node-{org}-{}.log", self.logs.len()));
        let log = std::fs::File::create(&log_path).unwrap();
        let mut cmd = Command::new(node_bin());
        cmd.args(["run", "--gateway", gateway, "--org", org])
            .args(["--poll-wait", "5"])
            .args(args)
            .arg("--state-dir")
            .arg(&state)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .kill_on_drop(true);
        if let Some(m) = max_tasks {
            cmd.args(["--max-tasks", &m.to_string()]);
        }
        if let Some(token) = token {
            cmd.env("EHDS_NODE_TOKEN", token);
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

/// What the tests need of a gateway, in-process or not: a client for each caller.
struct Gateway {
    researcher: GatewayClient,
    officer: GatewayClient,
    auditor: GatewayClient,
    registrar: GatewayClient,
}

impl Gateway {
    /// Callers of the gateway at `base`, with tokens minted by its development key.
    fn new(base: &str, dev: Arc<DevIssuer>) -> Self {
        let client = GatewayClient::new(base).unwrap();
        let as_ = |sub: &str, role: &str, org: &str| {
            client.with_tokens(DevTokens::new(dev.clone(), sub, role, Some(org)))
        };
        Self {
            researcher: as_("alice", "researcher", "uni-a"),
            officer: as_("olaf", "hdab_officer", "hdab-de"),
            auditor: as_("audrey", "auditor", "hdab-de"),
            registrar: as_("rita", "optout_registrar", "hdab-de"),
        }
    }

    async fn audit(&self, filter: &[(&str, &str)]) -> Vec<AuditEntry> {
        let mut pairs = vec![("limit", "10000")];
        pairs.extend_from_slice(filter);
        self.auditor
            .audit_events(&pairs)
            .await
            .expect("the auditor reads the trail")
    }

    /// Imports the example opt-outs, then has alice apply for the four hospitals and the
    /// officer approve: the opt-outs bind the permit. Returns the permit id.
    async fn optouts_then_permit(&self) -> PermitId {
        let imported = self
            .registrar
            .import_opt_outs(OptOutImport::Ndjson(example_optouts().into()))
            .await
            .expect("opt-outs imported");
        assert_eq!(imported["registered"], example_optout_count(), "{imported}");
        self.permit(federation_application(&hospitals(), 10.0, "data_holder"))
            .await
    }

    /// Alice applies with `application`, the officer approves; returns the permit id.
    async fn permit(&self, application: Value) -> PermitId {
        let request = serde_json::from_value(application).expect("a well-formed application");
        let application = self
            .researcher
            .create_application(&request)
            .await
            .expect("application accepted");
        self.officer
            .approve_application(application.id)
            .await
            .expect("application approved")
    }

    async fn submit(&self, body: &Value) -> StudyId {
        let created = self
            .researcher
            .create_study(body)
            .await
            .expect("study accepted");
        StudyId::parse(created["id"].as_str().unwrap()).unwrap()
    }

    /// Waits (up to `secs`) until the study is no longer running; returns its rounds view.
    async fn wait_until_done(&self, study: StudyId, secs: u64, nodes: &Nodes) -> Value {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            let view = self.researcher.study_rounds(study).await.unwrap();
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

    /// Waits until round `round` of `study` is collecting with at least one result stored.
    async fn collecting_with_a_result(&self, study: StudyId, round: u64, nodes: &Nodes) {
        let id_text = study.to_string();
        let until = Instant::now() + Duration::from_secs(240);
        loop {
            let results = self
                .audit(&[("action", "node.task.result"), ("outcome", "success")])
                .await
                .into_iter()
                .filter(|e| e.detail["study"] == id_text.as_str() && e.detail["round"] == round)
                .count();
            let view = self.researcher.study_rounds(study).await.unwrap();
            let collecting = view["rounds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["round"] == round && r["phase"] == "collecting");
            if results >= 1 && collecting {
                return;
            }
            assert!(
                Instant::now() < until,
                "round {round} never collected a result: {view}\n{}",
                nodes.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The final model: its bytes and the `x-model-digest` header.
    async fn model(&self, study: StudyId) -> ModelFile {
        self.researcher
            .study_model(study)
            .await
            .expect("the model is released")
    }

    async fn epsilon_spent(&self, permit: PermitId) -> f64 {
        let view = self.officer.permit(permit).await.unwrap();
        view["privacy_budget"]["epsilon_spent"].as_f64().unwrap()
    }
}

/// The study both tests run: Ditto on a logistic model with client-level DP on the four
/// hospitals, few rounds and little local work.
fn ditto_study(permit: PermitId, rounds: u64) -> Value {
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
/// The aggregated round whose model has the strictly lowest example-weighted validation loss
/// over the holders that evaluated it, and that loss.
fn best_validation_round(aggregated: &[Value]) -> (u64, f64) {
    let mut best: Option<(u64, f64)> = None;
    for r in aggregated {
        let Some(sites) = r["evaluation"]["sites"].as_array() else {
            continue;
        };
        let (sum, n) = sites.iter().fold((0.0, 0.0), |(s, n), site| {
            let v = &site["validation"];
            let k = v["n"].as_f64().unwrap_or_else(|| panic!("{site}"));
            (s + k * v["loss"].as_f64().unwrap(), n + k)
        });
        if n > 0.0 && best.is_none_or(|(_, b)| sum / n < b) {
            best = Some((r["round"].as_u64().unwrap(), sum / n));
        }
    }
    best.expect("some round was evaluated")
}

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

/// Ditto on a logistic model with client-level DP on the four hospitals, few rounds and
/// little local work. The gateway shows every count (small-cell threshold 1) so that the test
/// can recompute the best-validation release from the rounds view: switzerland's validation
/// part is below the default threshold of 10. The default rule is tested in the API suite
/// (`small_counts_are_withheld_from_the_researcher`).
async fn whole_study_on_four_node_processes(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.federation.small_cell_threshold = 1).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let permit = gw.optouts_then_permit().await;
    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in hospitals() {
        nodes.spawn(org, &app.base, &app.data_dir, work.path(), None);
    }
    let rounds = 3;
    let id = gw.submit(&ditto_study(permit, rounds)).await;

    let view = gw.wait_until_done(id, 300, &nodes).await;
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
        // a holder's training loss and the clip count come from unprivatised per-holder
        // quantities: not shown under DP
        assert!(sites.iter().all(|s| s["train_loss"].is_null()), "{r}");
        assert!(r.get("clipped_updates").is_none(), "{r}");
        // this gateway shows every count (small-cell threshold 1): each holder's exclusions
        let per_site: u64 = sites
            .iter()
            .map(|s| s["excluded_subjects"].as_u64().unwrap())
            .sum();
        assert_eq!(r["excluded_subjects"], per_site, "{r}");
        assert_eq!(per_site, optouts, "every example opt-out is excluded: {r}");
    }
    assert_eq!(view["small_cell_threshold"], 1, "{view}");
    // the auditor's trail has the same counts
    let results = gw
        .audit(&[
            ("action", "node.task.result"),
            ("permit_id", &permit.to_string()),
        ])
        .await;
    for round in 1..=rounds {
        let excluded: u64 = results
            .iter()
            .filter(|e| e.detail["round"] == round && e.detail["kind"] == "fit")
            .map(|e| e.detail["excluded_subjects"].as_u64().unwrap())
            .sum();
        assert_eq!(excluded, optouts, "round {round}");
    }
    let last = aggregated.last().unwrap();
    let epsilon = last["epsilon_total"].as_f64().unwrap();
    assert!(epsilon > 0.0 && epsilon <= 8.0 + 1e-9, "{last}");
    assert_eq!(
        last["evaluation"]["sites"].as_array().unwrap().len(),
        4,
        "{last}"
    );
    let spent = gw.epsilon_spent(permit).await;
    assert!((spent - epsilon).abs() < 1e-9, "{spent} vs {epsilon}");

    // the released model is the round with the lowest example-weighted validation loss
    let (best_round, best_loss) = best_validation_round(&aggregated);
    let model = gw.model(id).await;
    let (params, meta) = fl_engine::load_safetensors(&model.bytes).expect("a valid parameter file");
    assert!(!params.is_empty());
    assert_eq!(meta.digest, model.digest);
    assert_eq!(meta.study, id.to_string());
    assert_eq!(meta.round, best_round);
    assert_eq!(model.round, Some(best_round));
    assert_eq!(model.selection.as_deref(), Some("best_validation"));
    let id_text = id.to_string();
    let aggregate = gw
        .audit(&[
            ("action", "study.round.aggregate"),
            ("resource_id", &id_text),
        ])
        .await;
    assert_eq!(aggregate.len() as u64, rounds);
    assert_eq!(
        aggregate[best_round as usize - 1].detail["model_digest"],
        model.digest
    );
    assert!(aggregate.iter().all(|e| e.detail["contributors"] == 4));
    let released = gw
        .audit(&[("action", "study.model"), ("resource_id", &id_text)])
        .await;
    let detail = &released.last().expect("the release is audited").detail;
    assert_eq!(detail["round"], best_round, "{detail}");
    assert_eq!(detail["selection"], "best_validation", "{detail}");
    let audited_loss = detail["validation_loss"].as_f64().unwrap();
    assert!((audited_loss - best_loss).abs() < 1e-9, "{detail}");

    // the release carries the gateway's provenance, signed with the audit log's key
    let key = app.get("/v1/audit/log/key", &app.auditor()).await;
    assert_eq!(key.status, 200, "{}", key.text);
    let verify_model = |bytes: &[u8], name: &str| {
        let file = work.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        std::process::Command::new(gateway_bin())
            .args(["model", "verify"])
            .arg(&file)
            .args(["--key", key.text.trim()])
            .output()
            .unwrap()
    };
    let verified = verify_model(&model.bytes, "released.safetensors");
    assert!(verified.status.success(), "{verified:?}");
    let statement: Value = serde_json::from_slice(&verified.stdout).unwrap();
    assert_eq!(statement["permit"], permit.to_string(), "{statement}");
    assert_eq!(statement["study"], id_text, "{statement}");
    assert_eq!(statement["method"], "Ditto", "{statement}");
    assert_eq!(statement["round"], best_round, "{statement}");
    assert_eq!(statement["rounds"], rounds, "{statement}");
    assert_eq!(statement["dp"], "client", "{statement}");
    assert_eq!(statement["digest"], model.digest, "{statement}");
    assert_eq!(statement["contributors"].as_array().unwrap().len(), 4);
    assert!((statement["epsilon"].as_f64().unwrap() - epsilon).abs() < 1e-9);
    // the tree head it names includes the release's own audit entry
    let release_seq = released.last().unwrap().seq;
    assert!(statement["audit_log_size"].as_u64().unwrap() >= release_seq as u64);
    // an edited statement no longer verifies
    let mut extra = meta.extra.clone();
    let forged = extra["provenance"].replace("dp client", "dp record");
    extra.insert("provenance".into(), forged);
    let (edited, _) =
        fl_engine::save_safetensors_with(&params, &meta.study, meta.round, None, &extra).unwrap();
    let refused = verify_model(&edited, "edited.safetensors");
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("signature does not verify"),
        "{refused:?}"
    );

    // each node kept its own best (personalised: Ditto) model and exports it to its hospital
    for org in hospitals() {
        let out = work.path().join(format!("best-{org}.safetensors"));
        let export = std::process::Command::new(node_bin())
            .args(["export-model", "--study", &id_text, "--state-dir"])
            .arg(work.path().join("nodes").join(org))
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(export.status.success(), "{export:?}");
        let printed: Value = serde_json::from_slice(&export.stdout).unwrap();
        let (local, meta) = fl_engine::load_safetensors(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(meta.site.as_deref(), Some(org));
        assert_eq!(meta.extra["checkpoint"], "best_local");
        assert_eq!(printed["round"], meta.round, "{printed}");
        assert!(meta.round <= rounds, "{printed}");
        // the site's own validation loss of that round's model, as it reported it
        let evaluation = if meta.round == 0 {
            view["initial_evaluation"].clone()
        } else {
            aggregated[meta.round as usize - 1]["evaluation"].clone()
        };
        let reported = evaluation["sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["data_holder"] == org)
            .and_then(|s| s["validation"]["loss"].as_f64());
        if let Some(reported) = reported {
            let kept = printed["validation_loss"].as_f64().unwrap();
            assert!((kept - reported).abs() < 1e-9, "{printed} vs {evaluation}");
        }
        // Ditto's personal model has the global model's architecture
        assert_eq!(
            local.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            params.iter().map(|(n, _)| n).collect::<Vec<_>>()
        );
    }

    let verify = gw.auditor.verify_audit().await.unwrap();
    assert_eq!(verify["valid"], true, "{verify}");
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_study_on_four_node_processes_sqlite() {
    whole_study_on_four_node_processes(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_study_on_four_node_processes_postgres() {
    whole_study_on_four_node_processes(Backend::Postgres).await
}

// ---------------------------------------------------------------------------------------------
// An Art. 69 data request answered by federated statistics.

/// The pooled truth, computed here without the statistics pipeline: each hospital's rows as the
/// node reads them, the example opt-outs dropped, then plain loops.
struct Truth {
    /// `[sex][label]` counts.
    by_sex_and_label: [[u64; 2]; 2],
    /// Per label: (n, mean age).
    age_by_label: [(u64, f64); 2],
    under_32: u64,
}

fn pooled_truth() -> Truth {
    use ehds_node::{agent::DataSource, FeatureSpec};
    let spec = FeatureSpec::from_json(&example_features().to_string()).unwrap();
    let opted_out = ehds_node::opted_out_at(
        &String::from_utf8(example_optouts()).unwrap(),
        chrono::Utc::now(),
    )
    .unwrap();
    let (age, sex) = (
        spec.columns().iter().position(|c| c == "age").unwrap(),
        spec.columns().iter().position(|c| c == "sex").unwrap(),
    );
    let mut t = Truth {
        by_sex_and_label: [[0; 2]; 2],
        age_by_label: [(0, 0.0); 2],
        under_32: 0,
    };
    let mut age_sums = [0.0f64; 2];
    for org in hospitals() {
        let mut rows = DataSource::Fhir(example_federation_dir().join(format!("{org}.json")))
            .read(&spec)
            .unwrap();
        rows.exclude(&opted_out);
        for r in &rows.rows {
            let label = r.label as usize;
            t.by_sex_and_label[r.features[sex] as usize][label] += 1;
            t.age_by_label[label].0 += 1;
            age_sums[label] += f64::from(r.features[age]);
            t.under_32 += u64::from(r.features[age] < 32.0);
        }
    }
    for (l, sum) in age_sums.iter().enumerate() {
        t.age_by_label[l].1 = sum / t.age_by_label[l].0 as f64;
    }
    t
}

/// The released counts of a count table's cells, in cell order (`None`: suppressed).
fn released_counts(answer: &Value) -> Vec<Option<u64>> {
    answer["values"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["value"]["n"].as_u64())
        .collect()
}

async fn data_request_answered_by_four_node_processes(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    gw.registrar
        .import_opt_outs(OptOutImport::Ndjson(example_optouts().into()))
        .await
        .expect("opt-outs imported");
    let mut request = federation_application(&hospitals(), 3.0, "record");
    request["kind"] = json!("data_request");
    request["research_flags"] = json!([]);
    request["statistics"] = json!({
        "feature_spec": example_features(),
        "queries": [
            {"statistic": "count", "group_by": [
                {"column": "sex", "levels": [0, 1]},
                {"column": "coronary_heart_disease", "levels": [0, 1]}]},
            {"statistic": "mean", "variable": "age", "bounds": {"lo": 0, "hi": 120},
             "group_by": [{"column": "coronary_heart_disease", "levels": [0, 1]}]},
            {"statistic": "count", "group_by": [{"column": "sex", "levels": [0, 1]}],
             "dp": {"mechanism": "laplace", "epsilon": 1.0}},
            {"statistic": "count", "filters": [{"column": "age", "op": "lt", "value": 32}]}
        ]
    });
    let permit = gw.permit(request).await;
    // the declared privacy is charged to the permit's one budget at the grant
    assert!((gw.epsilon_spent(permit).await - 1.0).abs() < 1e-12);
    // a permit issued for a data request runs no study
    let refused = gw
        .researcher
        .create_study(&ditto_study(permit, 1))
        .await
        .expect_err("no study under a data request's permit");
    assert_eq!(refused.code(), Some("study_not_permitted"), "{refused}");

    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in hospitals() {
        nodes.spawn(org, &app.base, &app.data_dir, work.path(), None);
    }
    let permit_filter = permit.to_string();
    let until = Instant::now() + Duration::from_secs(120);
    let runs = loop {
        let runs = gw
            .officer
            .statistics_runs(&[("permit_id", &permit_filter)])
            .await
            .unwrap();
        let runs = runs.as_array().unwrap().clone();
        if runs.len() == 4 && runs.iter().all(|r| r["status"] != "computing") {
            break runs;
        }
        assert!(Instant::now() < until, "{runs:?}\n{}", nodes.logs());
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    nodes.kill().await;
    // newest first: back to the declared order
    let runs: Vec<Value> = runs.into_iter().rev().collect();
    let truth = pooled_truth();

    // 1. the cross-tabulation: exactly the pooled counts, every holder answered, every
    //    opt-out left out (6, below the minimum count: not shown)
    let table = &runs[0];
    assert_eq!(table["status"], "released", "{table}");
    assert_eq!(table["holders_answered"], 4, "{table}");
    assert_eq!(table["not_counted"]["opted_out"]["count"], Value::Null);
    assert_eq!(
        table["not_counted"]["opted_out"]["reasons"],
        json!(["threshold_count"]),
        "{table}"
    );
    let expected: Vec<Option<u64>> = truth
        .by_sex_and_label
        .iter()
        .flatten()
        .map(|n| Some(*n))
        .collect();
    assert_eq!(released_counts(&table["answer"]), expected, "{table}");

    // 2. means: the pooled mean age per label
    let means = &runs[1];
    assert_eq!(means["status"], "released", "{means}");
    for (l, cell) in means["answer"]["values"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let (n, mean) = truth.age_by_label[l];
        assert_eq!(cell["value"]["n"], n, "{cell}");
        let got = cell["value"]["mean"].as_f64().unwrap();
        assert!((got - mean).abs() < 1e-9, "{got} vs {mean}");
    }

    // 3. under differential privacy only noisy values come back, each near the truth
    let noisy = &runs[2];
    assert_eq!(noisy["status"], "released", "{noisy}");
    assert_eq!(noisy["answer"]["form"], "noisy", "{noisy}");
    for (sex, cell) in noisy["answer"]["values"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let exact = truth.by_sex_and_label[sex].iter().sum::<u64>() as f64;
        let n = &cell["value"]["n"];
        let (value, half_width) = (
            n["value"].as_f64().unwrap(),
            n["half_width_95"].as_f64().unwrap(),
        );
        // three 95% half-widths of a Laplace: exceeded with probability below 1e-3
        assert!(
            (value - exact).abs() <= 3.0 * half_width,
            "{value} vs {exact}: {cell}"
        );
    }

    // 4. a small count: flagged, nothing shown until an officer decides, and then the count
    //    stays suppressed
    assert!(truth.under_32 < 10, "{}", truth.under_32);
    let small = &runs[3];
    assert_eq!(small["status"], "under_review", "{small}");
    assert_eq!(small["answer"], Value::Null);
    let id = small["id"].as_str().unwrap();
    let seen = gw
        .researcher
        .statistics_runs(&[("permit_id", &permit_filter), ("status", "under_review")])
        .await
        .unwrap();
    assert_eq!(
        seen[0]["checked"],
        Value::Null,
        "the researcher does not see the verdict"
    );
    let released = gw
        .officer
        .review_statistics(
            id,
            "release",
            "a count below ten is shown as suppressed only",
        )
        .await
        .unwrap();
    assert_eq!(released["status"], "released", "{released}");
    assert_eq!(released_counts(&released["answer"]), vec![None]);
    let again = gw
        .officer
        .review_statistics(id, "withhold", "second thoughts")
        .await
        .expect_err("a released answer is final");
    assert_eq!(again.code(), Some("invalid_transition"), "{again}");

    // the trail: each run requested, answered by every holder, completed; the review
    let count = |entries: &[AuditEntry]| entries.len();
    let p = permit.to_string();
    assert_eq!(
        count(
            &gw.audit(&[("action", "statistics.request"), ("permit_id", &p)])
                .await
        ),
        4
    );
    assert_eq!(
        count(
            &gw.audit(&[("action", "node.statistics.result"), ("permit_id", &p)])
                .await
        ),
        16
    );
    assert_eq!(
        count(
            &gw.audit(&[("action", "statistics.complete"), ("permit_id", &p)])
                .await
        ),
        4
    );
    assert_eq!(
        count(
            &gw.audit(&[("action", "statistics.review"), ("resource_id", id)])
                .await
        ),
        2,
        "the release, and the refused second decision"
    );
    let verify = gw.auditor.verify_audit().await.unwrap();
    assert_eq!(verify["valid"], true, "{verify}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_request_answered_by_four_node_processes_sqlite() {
    data_request_answered_by_four_node_processes(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_request_answered_by_four_node_processes_postgres() {
    data_request_answered_by_four_node_processes(Backend::Postgres).await
}

// ---------------------------------------------------------------------------------------------
// Crash and resume.

/// `ehds-gateway serve --dev` as its own process.
struct GatewayProcess {
    child: Child,
}

impl GatewayProcess {
    /// Starts it with settings of its own in `env`, and waits until it is ready.
    async fn start(
        database_url: &str,
        data_dir: &Path,
        port: u16,
        log: &Path,
        env: &[(&str, String)],
    ) -> Self {
        let client = GatewayClient::new(&format!("http://127.0.0.1:{port}")).unwrap();
        // the port of a killed gateway may take a moment to be free again
        for _ in 0..5 {
            let out = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .unwrap();
            let mut child = Command::new(gateway_bin())
                .args(["serve", "--dev"])
                .env("EHDS_DATABASE_URL", database_url)
                .env("EHDS_DATA_DIR", data_dir)
                .env("EHDS_LISTEN", format!("127.0.0.1:{port}"))
                .env("EHDS_FEDERATION__TICK_MILLIS", "100")
                .env("RUST_LOG", "info")
                .envs(env.iter().map(|(k, v)| (k, v)))
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
                if client.readyz().await.is_ok() {
                    return Self { child };
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

/// Lease time of the replicas under test: how long a killed owner's study waits.
const LEASE_SECONDS: u64 = 3;

/// One gateway, or replicas of it on one database behind a [`Balancer`].
struct Gateways {
    database_url: String,
    data_dir: PathBuf,
    replicas: Vec<(u16, PathBuf, Option<GatewayProcess>)>,
    balancer: Option<Balancer>,
}

impl Gateways {
    async fn start(database_url: &str, data_dir: &Path, dir: &Path, replicas: usize) -> Self {
        let mut this = Self {
            database_url: database_url.to_owned(),
            data_dir: data_dir.to_owned(),
            replicas: vec![],
            balancer: None,
        };
        let ports: Vec<u16> = (0..replicas).map(|_| free_port()).collect();
        if replicas > 1 {
            this.balancer = Some(Balancer::start(ports.clone()).await);
        }
        for (i, port) in ports.into_iter().enumerate() {
            let log = dir.join(format!("gateway-{i}.log"));
            // one after the other: the first creates the keys in the data directory
            let process = this.start_replica(i, port, &log).await;
            this.replicas.push((port, log, Some(process)));
        }
        this
    }

    async fn start_replica(&self, i: usize, port: u16, log: &Path) -> GatewayProcess {
        let mut env = vec![("HOSTNAME", format!("replica-{i}"))];
        if let Some(b) = &self.balancer {
            // tokens name the address the clients use, which is the balancer's
            env.push(("EHDS_PUBLIC_URL", format!("http://127.0.0.1:{}", b.port)));
            env.push(("EHDS_FEDERATION__LEASE_SECONDS", LEASE_SECONDS.to_string()));
        }
        GatewayProcess::start(&self.database_url, &self.data_dir, port, log, &env).await
    }

    /// The URL the clients use.
    fn base(&self) -> String {
        let port = match &self.balancer {
            Some(b) => b.port,
            None => self.replicas[0].0,
        };
        format!("http://127.0.0.1:{port}")
    }

    async fn kill(&mut self, i: usize) {
        if let Some(mut p) = self.replicas[i].2.take() {
            p.kill().await;
        }
    }

    async fn restart(&mut self, i: usize) {
        self.kill(i).await;
        let (port, log) = (self.replicas[i].0, self.replicas[i].1.clone());
        self.replicas[i].2 = Some(self.start_replica(i, port, &log).await);
    }

    async fn kill_all(&mut self) {
        for i in 0..self.replicas.len() {
            self.kill(i).await;
        }
    }

    fn logs(&self) -> String {
        self.replicas
            .iter()
            .map(|(_, log, _)| format!("--- {}\n{}", log.display(), tail(log, 30)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn log_text(&self) -> String {
        self.replicas
            .iter()
            .map(|(_, log, _)| std::fs::read_to_string(log).unwrap())
            .collect()
    }
}

/// The replica (`HOSTNAME=replica-<i>`) holding lease `name` now, if any (PostgreSQL).
async fn lease_owner(database_url: &str, name: &str) -> Option<usize> {
    let pool = sqlx::PgPool::connect(database_url).await.unwrap();
    let owner: Option<String> = sqlx::query_scalar("select owner from lease where name = $1")
        .bind(name)
        .fetch_optional(&pool)
        .await
        .unwrap();
    pool.close().await;
    let owner = owner?;
    let (host, _) = owner.split_once('/')?;
    host.strip_prefix("replica-")?.parse().ok()
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

/// What happens to the gateway in the middle of round 2 of [`reproducible_run`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interruption {
    None,
    /// SIGKILL, and the same process started again.
    Restart,
    /// SIGKILL of the replica holding the study's lease; the others carry on.
    KillLeaseOwner,
}

/// Runs the reproducible study on fresh gateway processes (`replicas` of them behind a
/// balancer, on one database) and a fresh database, interrupted while round 2 is collecting
/// with results stored.
async fn reproducible_run(
    backend: Backend,
    replicas: usize,
    interruption: Interruption,
) -> RunResult {
    let crash = interruption != Interruption::None;
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("gateway");
    let database_url = fresh_database(backend, dir.path()).await;
    let mut gateway = Gateways::start(&database_url, &data_dir, dir.path(), replicas).await;
    let base = gateway.base();
    let dev = DevIssuer::load_or_create(&data_dir, &base, "ehds-gateway").unwrap();
    let gw = Gateway::new(&base, Arc::new(dev));
    let permit = gw.optouts_then_permit().await;

    let mut nodes = Nodes::new();
    for org in hospitals() {
        // with a crash to come, `va` stops after its first task, so that round 2 waits for it
        let max_tasks = (crash && org == "va").then_some(1);
        nodes.spawn(org, &base, &data_dir, dir.path(), max_tasks);
    }
    let rounds = 3;
    let mut body = ditto_study(permit, rounds);
    body["dp"]["noise_seed"] = json!(20_260_101);
    let id = gw.submit(&body).await;
    let id_text = id.to_string();

    if crash {
        // Round 2 collecting, at least one of its results stored: kill the gateway.
        gw.collecting_with_a_result(id, 2, &nodes).await;
        match interruption {
            Interruption::Restart => {
                // the surviving nodes keep retrying while the gateway is down
                gateway.kill(0).await;
                tokio::time::sleep(Duration::from_secs(1)).await;
                gateway.restart(0).await;
            }
            Interruption::KillLeaseOwner => {
                let lease = format!("study:{id}");
                let owner = lease_owner(&database_url, &lease)
                    .await
                    .expect("a replica drives the study");
                gateway.kill(owner).await;
                let killed = Instant::now();
                // another replica takes the study over once the lease runs out
                loop {
                    match lease_owner(&database_url, &lease).await {
                        Some(o) if o != owner => break,
                        _ => {}
                    }
                    assert!(
                        killed.elapsed() < Duration::from_secs(LEASE_SECONDS + 10),
                        "no replica took the study over:\n{}",
                        gateway.logs()
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            Interruption::None => unreachable!(),
        }
        nodes.spawn("va", &base, &data_dir, dir.path(), None);
    }

    let view = gw.wait_until_done(id, 300, &nodes).await;
    nodes.kill().await;
    assert_eq!(
        view["status"],
        "completed",
        "{view}\n{}\n{}",
        nodes.logs(),
        gateway.logs()
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
            .audit(&[("action", "study.round.start"), ("resource_id", &id_text)])
            .await;
        assert_eq!(starts.len() as u64, rounds, "{starts:?}");
    }

    // The budget was spent once per round, and the permit says what the study says.
    let spent = gw.epsilon_spent(permit).await;
    let study_spent = view["epsilon_spent"].as_f64().unwrap();
    assert!((spent - study_spent).abs() < 1e-9, "{spent} vs {view}");
    let last = aggregated.last().unwrap();
    assert!((last["epsilon_total"].as_f64().unwrap() - study_spent).abs() < 1e-12);
    assert!(study_spent <= 8.0 + 1e-9);

    // The released model is the one the last aggregation recorded.
    let ModelFile {
        bytes,
        digest,
        round,
        ..
    } = gw.model(id).await;
    let (_, meta) = fl_engine::load_safetensors(&bytes).expect("a valid parameter file");
    assert_eq!(meta.digest, digest);
    let aggregate = gw
        .audit(&[
            ("action", "study.round.aggregate"),
            ("resource_id", &id_text),
        ])
        .await;
    assert_eq!(aggregate.len() as u64, rounds, "{aggregate:?}");
    assert_eq!(aggregate.last().unwrap().detail["round"], rounds);
    // the released model is one of the round's aggregates (the best by validation loss)
    let released = round.expect("the release names its round");
    assert_eq!(meta.round, released);
    assert_eq!(
        aggregate[released as usize - 1].detail["model_digest"],
        digest
    );

    let verify = gw.auditor.verify_audit().await.unwrap();
    assert_eq!(verify["valid"], true, "{verify}");
    // Every opt-out check of the run went through the match protocol (no node sent its
    // cohort), and no pseudonym a node holds is in the gateway's database or its log.
    let checks = gw.audit(&[("action", "optout.filter")]).await;
    assert!(checks.len() as u64 >= rounds * 4, "{checks:?}");
    for c in &checks {
        assert!(
            c.detail["evaluated"].as_u64().unwrap() >= 64,
            "{:?}",
            c.detail
        );
        assert!(
            c.detail.get("checked").is_none(),
            "a node disclosed its cohort: {:?}",
            c.detail
        );
        assert_eq!(c.detail["unmatchable"], 0, "{:?}", c.detail);
    }
    // a node evaluates each subject once: after its first check it sends only padding
    assert!(
        checks.iter().any(|c| c.detail["evaluated"] == 64),
        "{checks:?}"
    );
    gateway.kill_all().await;
    let held = example_pseudonyms();
    assert!(held.len() > 900, "{}", held.len());
    let stored = database_text(&database_url, dir.path()).await;
    assert!(
        stored.len() > 10_000,
        "the database read as text: {} bytes",
        stored.len()
    );
    let logged = gateway.log_text();
    let leaked: Vec<&String> = held
        .iter()
        .filter(|p| stored.contains(p.as_str()) || logged.contains(p.as_str()))
        .collect();
    assert!(leaked.is_empty(), "the gateway kept pseudonyms: {leaked:?}");
    let offline = std::process::Command::new(gateway_bin())
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

/// The pseudonyms of every Patient in the example federation's Bundles: the subjects the four
/// nodes hold.
fn example_pseudonyms() -> Vec<String> {
    let mut out = Vec::new();
    for org in hospitals() {
        let text = std::fs::read(example_federation_dir().join(format!("{org}.json"))).unwrap();
        let bundle: Value = serde_json::from_slice(&text).unwrap();
        for e in bundle["entry"].as_array().unwrap() {
            if e["resource"]["resourceType"] == "Patient" {
                out.push(e["resource"]["id"].as_str().unwrap().to_owned());
            }
        }
    }
    out
}

/// Everything a gateway's database holds, as text: the SQLite files byte for byte (with the
/// write-ahead log a killed process leaves), or every PostgreSQL table's rows.
async fn database_text(database_url: &str, dir: &Path) -> String {
    if database_url.starts_with("sqlite") {
        let mut text = String::new();
        for name in ["gateway.db", "gateway.db-wal"] {
            if let Ok(bytes) = std::fs::read(dir.join(name)) {
                text.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
        return text;
    }
    use sqlx::Row;
    let pool = sqlx::PgPool::connect(database_url).await.unwrap();
    let tables: Vec<String> = sqlx::query(
        "select table_name::text from information_schema.tables where table_schema = 'public'",
    )
    .fetch_all(&pool)
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect();
    let mut text = tables.join("\n");
    for t in tables {
        let rows: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "select string_agg(t::text, E'\\n') from \"{t}\" t"
        )))
        .fetch_one(&pool)
        .await
        .unwrap();
        text.push_str(&rows.unwrap_or_default());
    }
    pool.close().await;
    text
}

/// A gateway killed mid-round resumes the study at the same round; the result is bit for bit
/// the model of the same study run without interruption.
async fn crash_and_resume_gives_the_uninterrupted_model(backend: Backend) {
    let crashed = reproducible_run(backend, 1, Interruption::Restart).await;
    let reference = reproducible_run(backend, 1, Interruption::None).await;
    same_study(&crashed, &reference);
}

/// The interrupted run released the model of the uninterrupted one, spending the same budget
/// on the same samples.
fn same_study(crashed: &RunResult, reference: &RunResult) {
    assert_eq!(
        crashed.digest, reference.digest,
        "the resumed study's model differs from the uninterrupted run's"
    );
    let eps = |r: &RunResult| r.view["epsilon_spent"].as_f64().unwrap();
    assert!((eps(crashed) - eps(reference)).abs() < 1e-12);
    let samples = |r: &RunResult| -> Vec<Value> {
        r.view["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["samples"].clone())
            .collect()
    };
    assert_eq!(samples(crashed), samples(reference));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_and_resume_postgres() {
    crash_and_resume_gives_the_uninterrupted_model(Backend::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_and_resume_sqlite() {
    crash_and_resume_gives_the_uninterrupted_model(Backend::Sqlite).await
}

/// PostgreSQL stopped (every connection terminated) and started again while a round collects:
/// the same gateway process carries on, the nodes ride out the outage, and the study finishes
/// with each round aggregated once, the budget spent once and the audit chain whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_study_outlives_a_postgres_restart() {
    let cluster = OwnCluster::start().expect("a PostgreSQL cluster of the test's own");
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("gateway");
    let mut gateway = Gateways::start(&cluster.url(), &data_dir, dir.path(), 1).await;
    let base = gateway.base();
    let dev = DevIssuer::load_or_create(&data_dir, &base, "ehds-gateway").unwrap();
    let gw = Gateway::new(&base, Arc::new(dev));
    let permit = gw.optouts_then_permit().await;
    let mut nodes = Nodes::new();
    for org in hospitals() {
        // `va` stops after its first task, so that round 2 waits for it while the database
        // restarts
        let max_tasks = (org == "va").then_some(1);
        nodes.spawn(org, &base, &data_dir, dir.path(), max_tasks);
    }
    let rounds = 3;
    let id = gw.submit(&ditto_study(permit, rounds)).await;
    gw.collecting_with_a_result(id, 2, &nodes).await;

    cluster.stop().unwrap();
    // while the database is down the gateway answers 503 with a code, never 500
    let down = GatewayClient::new(&base).unwrap().readyz().await;
    assert!(down.is_err_and(|e| e.to_string().contains("503")));
    let refused = gw
        .researcher
        .study_rounds(id)
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("database_unavailable"), "{refused}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster.resume().unwrap();
    nodes.spawn("va", &base, &data_dir, dir.path(), None);

    let view = gw.wait_until_done(id, 300, &nodes).await;
    nodes.kill().await;
    assert_eq!(
        view["status"],
        "completed",
        "{view}\n{}\n{}",
        nodes.logs(),
        gateway.logs()
    );
    aggregated_once_each(&view, rounds);
    let spent = gw.epsilon_spent(permit).await;
    assert!((spent - view["epsilon_spent"].as_f64().unwrap()).abs() < 1e-9);
    let verify = gw.auditor.verify_audit().await.unwrap();
    assert_eq!(verify["valid"], true, "{verify}");
    assert!(
        gateway.log_text().contains("database_unavailable"),
        "the outage is not in the gateway's log"
    );
    gateway.kill_all().await;
}

/// Whether this machine lets an unprivileged process mount a file system of its own (user and
/// mount namespaces).
fn can_mount_privately() -> bool {
    std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `cmd` in the mount namespace of process `pid` (as the owner of its user namespace).
fn in_namespace_of(pid: u32, cmd: &str) -> std::process::Output {
    std::process::Command::new("nsenter")
        .args(["-t", &pid.to_string(), "-U", "-m", "sh", "-c", cmd])
        .stdin(Stdio::null())
        .output()
        .expect("nsenter runs")
}

/// The gateway's SQLite database on a file system that fills up (a small tmpfs in the
/// gateway's own mount namespace; its data directory with the keys stays outside): writes are
/// answered 503 `storage_full` with `Retry-After`, never 500; nothing of a refused write is
/// stored; once space returns, writes succeed again without a restart and the audit chain
/// verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_storage_full_answers_503_and_recovers() {
    if !can_mount_privately() {
        assert!(
            std::env::var_os("CI").is_none(),
            "this test needs `unshare --user --mount` (user namespaces) and `nsenter`"
        );
        eprintln!("skipped: no user namespaces here to mount a small file system in");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("gateway");
    let db_dir = dir.path().join("db");
    std::fs::create_dir_all(&db_dir).unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let log = dir.path().join("gateway.log");
    let out = std::fs::File::create(&log).unwrap();
    let mut child = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg(r#"mount -t tmpfs -o size=48m tmpfs "$1" && shift && exec "$@""#)
        .arg("sh")
        .arg(&db_dir)
        .arg(gateway_bin())
        .args(["serve", "--dev"])
        .env(
            "EHDS_DATABASE_URL",
            format!("sqlite://{}?mode=rwc", db_dir.join("gateway.db").display()),
        )
        .env("EHDS_DATA_DIR", &data_dir)
        .env("EHDS_LISTEN", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let client = GatewayClient::new(&base).unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while client.readyz().await.is_err() {
        assert!(Instant::now() < until, "{}", tail(&log, 30));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pid = child.id().unwrap();
    let dev = DevIssuer::load_or_create(&data_dir, &base, "ehds-gateway").unwrap();
    let gw = Gateway::new(&base, Arc::new(dev));
    let apply = || async {
        let request =
            serde_json::from_value(federation_application(&hospitals(), 1.0, "data_holder"))
                .unwrap();
        gw.researcher.create_application(&request).await
    };
    apply().await.expect("an application while there is space");

    // fill the file system the database lives on
    let filler = db_dir.join("filler");
    in_namespace_of(pid, &format!("cat /dev/zero > '{}'", filler.display()));
    let mut stored = 1;
    let mut refused = None;
    for _ in 0..5000 {
        match apply().await {
            Ok(_) => stored += 1,
            Err(e) => {
                refused = Some(e.to_string());
                break;
            }
        }
    }
    let refused = refused.expect("a full file system refused a write");
    assert!(
        refused.contains("503") && refused.contains("storage_full"),
        "{refused}\n{}",
        tail(&log, 20)
    );
    // reads that write nothing are still served
    client.healthz().await.unwrap();
    // still full: refused again, the same way
    let again = apply().await.unwrap_err().to_string();
    assert!(
        again.contains("storage_full"),
        "{again}\n{}",
        tail(&log, 20)
    );

    // space returns: writes succeed again, in the same process
    let freed = in_namespace_of(pid, &format!("rm -f '{}'", filler.display()));
    assert!(freed.status.success(), "{freed:?}");
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        match apply().await {
            Ok(_) => break,
            Err(e) => assert!(
                Instant::now() < until,
                "no recovery: {e}\n{}",
                tail(&log, 20)
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stored += 1;
    // exactly the answered writes are stored: none of the refused ones, none twice
    let created = gw
        .audit(&[("action", "application.create"), ("outcome", "success")])
        .await;
    assert_eq!(created.len(), stored);
    let verify = gw.auditor.verify_audit().await.unwrap();
    assert_eq!(verify["valid"], true, "{verify}");
    let _ = child.kill().await;
}

/// Three replicas on one PostgreSQL behind a balancer, the nodes spread over them: the replica
/// driving the study is killed mid-round, another takes the study over within the lease time,
/// and the study releases the model one gateway releases undisturbed, each round aggregated
/// once and the budget spent once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_take_over_the_study_of_a_killed_one() {
    let fleet = reproducible_run(Backend::Postgres, 3, Interruption::KillLeaseOwner).await;
    let reference = reproducible_run(Backend::Postgres, 1, Interruption::None).await;
    same_study(&fleet, &reference);
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
    // the provider metadata OpenID Connect Discovery 1.0 §3 requires
    let discovery = json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "jwks_uri": format!("{base}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
    });
    let jwks = dev.jwks();
    let app = Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || async move { Json(discovery) }),
        )
        .route("/jwks", get(move || async move { Json(jwks) }))
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
    use ehds_core::domain::OrgId;
    use ehds_node::{
        agent::{Agent, AgentConfig, Credentials, DataSource},
        client::{ClientAuth, ClientLogin},
    };
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let (idp, issued) = identity_provider(app.dev.clone(), "cleveland").await;
    let permit = gw
        .permit(federation_application(&["cleveland"], 8.0, "record"))
        .await;
    let study = gw
        .submit(&study_body(&permit.to_string(), &["cleveland"]))
        .await;
    let state = tempfile::tempdir().unwrap();
    // outside development mode a node runs under its hospital's policy
    let policy = node_policy(
        state.path(),
        &format!(
            r#"[accept]
permits = ["{permit}"]
purposes = ["scientific_research"]
categories = ["ehr_data"]
methods = ["fedavg"]
[privacy]
min_noise_multiplier = 1.0
max_epsilon_per_permit = 8.0
"#
        ),
    );
    let agent = |secret: &str| {
        Agent::new(AgentConfig {
            gateway: app.base.clone(),
            organisation: OrgId::parse("cleveland").unwrap(),
            credentials: Credentials::ClientCredentials(ClientLogin {
                issuer: idp.clone(),
                client_id: "node-cleveland".into(),
                auth: ClientAuth::SecretBasic(secret.into()),
                scopes: vec![],
                resource: None,
                audience: None,
            }),
            source: DataSource::Fhir(example_federation_dir().join("cleveland.json")),
            state_dir: state.path().to_path_buf(),
            poll_wait_seconds: 5,
            max_tasks: Some(1),
            policy: policy.clone(),
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
    let results = gw
        .audit(&[("action", "node.task.result"), ("outcome", "success")])
        .await;
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].actor.organisation.as_deref(), Some("cleveland"));
    assert_eq!(results[0].detail["study"], study.to_string());
    // the node logged its acceptance with the permit's epsilon by its own accounting
    let log = std::fs::read_to_string(state.path().join("node-log.jsonl")).unwrap();
    let entries: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 1, "{log}");
    assert_eq!(entries[0]["decision"], "accepted");
    assert_eq!(entries[0]["permit_id"], permit.to_string());
    let epsilon = entries[0]["permit_epsilon"].as_f64().unwrap();
    assert!(epsilon > 0.0 && epsilon <= 8.0, "{epsilon}");
}

/// A policy written to `dir` and loaded as `node run --policy` would.
fn node_policy(dir: &Path, toml: &str) -> ehds_node::agent::NodePolicy {
    let file = dir.join("node-policy.toml");
    std::fs::write(&file, toml).unwrap();
    ehds_node::agent::NodePolicy::load(&file).unwrap()
}

/// The node refuses what its policy does not allow, whatever the gateway sends: a study
/// without formal DP, a method it did not list, and a round that would take the permit past
/// its own epsilon ceiling. Each refusal is in its log with its code; `node log verify` checks
/// the chain and names an edited line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_policy_refuses_what_the_hospital_did_not_allow() {
    use ehds_core::domain::OrgId;
    use ehds_node::agent::{Agent, AgentConfig, Credentials, DataSource};
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let permit = gw
        .permit(federation_application(&["cleveland"], 8.0, "record"))
        .await;
    let state = tempfile::tempdir().unwrap();
    let policy = node_policy(
        state.path(),
        r#"[accept]
permits = ["*"]
purposes = ["scientific_research"]
categories = ["ehr_data"]
methods = ["fedavg"]
[privacy]
max_epsilon_per_permit = 0.05
"#,
    );
    let mut fedprox = study_body(&permit.to_string(), &["cleveland"]);
    fedprox["strategy"] = json!({"name": "fedprox", "mu": 0.1});
    gw.submit(&fedprox).await;
    gw.submit(&study_body(&permit.to_string(), &["cleveland"]))
        .await;
    let mut agent = Agent::new(AgentConfig {
        gateway: app.base.clone(),
        organisation: OrgId::parse("cleveland").unwrap(),
        credentials: Credentials::Dev {
            issuer: app.dev.clone(),
            sub: "node-cleveland".into(),
            organisation: OrgId::parse("cleveland").unwrap(),
        },
        source: DataSource::Fhir(example_federation_dir().join("cleveland.json")),
        state_dir: state.path().to_path_buf(),
        poll_wait_seconds: 5,
        max_tasks: Some(2),
        policy,
    })
    .unwrap();
    tokio::time::timeout(Duration::from_secs(120), agent.run())
        .await
        .expect("the node decides on both tasks")
        .unwrap();

    let log_file = state.path().join("node-log.jsonl");
    let log = std::fs::read_to_string(&log_file).unwrap();
    let entries: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let codes: std::collections::BTreeSet<&str> = entries
        .iter()
        .map(|e| e["code"].as_str().unwrap_or("accepted"))
        .collect();
    assert_eq!(
        codes,
        ["method_not_accepted", "node_budget_exhausted"].into(),
        "{log}"
    );
    assert!(entries.iter().all(|e| e["decision"] == "refused"), "{log}");
    // nothing was trained or sent
    let results = gw.audit(&[("action", "node.task.result")]).await;
    assert!(results.is_empty(), "{results:?}");
    assert!(!state.path().join("privacy-ledger.json").exists());

    let verify = || {
        std::process::Command::new(node_bin())
            .args(["log", "verify", "--state-dir"])
            .arg(state.path())
            .output()
            .unwrap()
    };
    let ok = verify();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("2 entries, chain intact"));
    std::fs::write(
        &log_file,
        log.replacen(r#""decision":"refused""#, r#""decision":"accepted""#, 1),
    )
    .unwrap();
    let tampered = verify();
    assert_eq!(tampered.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&tampered.stderr).contains("line 1"),
        "{}",
        String::from_utf8_lossy(&tampered.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// Hospital exports.

fn icu_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/icu-federation")
}

/// One node process per ICU hospital in `sites`, each reading its gzipped Bulk Data export
/// through its own code map.
fn icu_nodes(app: &TestApp, sites: &[&str], work: &std::path::Path) -> Nodes {
    let mut nodes = Nodes::new();
    for org in sites {
        let data = vec![
            "--fhir".into(),
            icu_dir().join(org).into_os_string(),
            "--code-map".into(),
            icu_dir()
                .join(format!("{org}.codemap.json"))
                .into_os_string(),
        ];
        nodes.spawn_reading(org, &app.base, &app.data_dir, work, None, data);
    }
    nodes
}

/// Binary 30-day mortality on the generated ICU federation: three node processes, each
/// reading its gzipped FHIR Bulk Data export through its own code map (SNOMED CT vs ICD-10
/// conditions, ATC vs RxNorm drugs, molar vs mass labs, Fahrenheit, blood-pressure panels),
/// one row per inpatient stay with imputed, windowed features.
/// A small logistic study by FedAvg with client-level DP over every site of `sites`.
fn logistic_fedavg_study(
    title: &str,
    permit: &str,
    sites: &[&str],
    spec: Value,
    rounds: u64,
) -> Value {
    json!({
        "title": title,
        "permit_id": permit,
        "purpose": "scientific_research",
        "categories": ["ehr_data"],
        "data_holders": sites,
        "feature_spec": spec,
        "model": {"architecture": "logistic"},
        "strategy": {"name": "fedavg"},
        "optimizer": {"name": "adamw", "lr": 0.05},
        "local_steps": 20,
        "batch_size": 8,
        "rounds": rounds,
        "min_sites": sites.len(),
        "round_deadline_seconds": 180,
        "dp": {"level": "client", "clip_norm": 1.0, "noise_multiplier": 1.0},
        "seed": 5
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mortality_study_on_bulk_data_exports() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let sites = ["north", "south", "west"];
    let mut application = federation_application(&sites, 10.0, "data_holder");
    application["member_states"] = json!(["DE", "IT", "FR"]);
    let permit = gw.permit(application).await.to_string();

    let work = tempfile::tempdir().unwrap();
    let mut nodes = icu_nodes(&app, &sites, work.path());
    let spec: Value = serde_json::from_str(
        &std::fs::read_to_string(icu_dir().join("mortality.features.json")).unwrap(),
    )
    .unwrap();
    let rounds = 2;
    let body = logistic_fedavg_study(
        "30-day mortality after ICU admission",
        &permit,
        &sites,
        spec,
        rounds,
    );
    let id = gw.submit(&body).await;
    let view = gw.wait_until_done(id, 300, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    let aggregated = aggregated_once_each(&view, rounds);
    for r in &aggregated {
        let per_site = r["sites"].as_array().unwrap();
        assert_eq!(per_site.len(), 3, "{r}");
        for s in per_site {
            assert_eq!(s["contributed"], true, "{r}");
            // about 80 % of each site's ~85 tagged training stays (validation split aside)
            let n = s["samples"].as_u64().unwrap();
            assert!((50..=100).contains(&n), "{r}");
        }
    }
    let ModelFile { bytes, .. } = gw.model(id).await;
    let (params, _) = fl_engine::load_safetensors(&bytes).expect("a valid parameter file");
    assert!(!params.is_empty());
}

/// Records as a third-party generator writes them (carebundle's FHIR Bulk Data exports,
/// tests/data/carebundle, see its SOURCE.md): hypertension on the problem list from age, sex,
/// vitals, labs and other problems, a logistic model trained by FedAvg on three node processes,
/// each reading its hospital's untagged export and splitting its patients itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hypertension_study_on_a_third_party_generator_s_exports() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/carebundle");
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let sites = ["h1", "h2", "h3"];
    let mut application = federation_application(&sites, 10.0, "data_holder");
    application["member_states"] = json!(["DE", "IT", "FR"]);
    let permit = gw.permit(application).await.to_string();

    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in sites {
        let data = vec!["--fhir".into(), corpus.join(org).into_os_string()];
        nodes.spawn_reading(org, &app.base, &app.data_dir, work.path(), None, data);
    }
    let spec: Value = serde_json::from_str(
        &std::fs::read_to_string(corpus.join("hypertension.features.json")).unwrap(),
    )
    .unwrap();
    let rounds = 2;
    let mut body = logistic_fedavg_study(
        "Hypertension from one visit's vitals, labs and problem list",
        &permit,
        &sites,
        spec,
        rounds,
    );
    body["test_fraction"] = json!(0.3);
    body["validation_fraction"] = json!(0.4);
    let id = gw.submit(&body).await;
    let view = gw.wait_until_done(id, 300, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    let aggregated = aggregated_once_each(&view, rounds);
    for r in &aggregated {
        let per_site = r["sites"].as_array().unwrap();
        assert_eq!(per_site.len(), 3, "{r}");
        for s in per_site {
            assert_eq!(s["contributed"], true, "{r}");
        }
    }
    // each hospital's 40 patients, untagged, split by the node itself: every patient in one
    // part, 30 % tested, 40 % of the rest validated, the others trained on (parts large enough
    // for the holders' metrics to pass the small-cell rule)
    let last = aggregated.last().unwrap();
    let evaluated = last["evaluation"]["sites"].as_array().unwrap();
    assert_eq!(evaluated.len(), 3, "{last}");
    for s in evaluated {
        let holder = s["data_holder"].as_str().unwrap();
        let trained = last["sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["data_holder"] == holder)
            .unwrap_or_else(|| panic!("{holder} not in {last}"))["samples"]
            .as_u64()
            .unwrap();
        let n = |part: &str| {
            s[part]["n"]
                .as_u64()
                .unwrap_or_else(|| panic!("{holder}: no {part} part in {s}\n{}", nodes.logs()))
        };
        let (validation, test) = (n("validation"), n("test"));
        assert!((10..=14).contains(&test), "{s}");
        assert!((10..=13).contains(&validation), "{s}");
        assert_eq!(trained + validation + test, 40, "{holder}: {last}");
        let auroc = s["test"]["auroc"].as_f64().unwrap_or_else(|| panic!("{s}"));
        assert!((0.0..=1.0).contains(&auroc), "{s}");
    }
    let ModelFile { bytes, .. } = gw.model(id).await;
    let (params, _) = fl_engine::load_safetensors(&bytes).expect("a valid parameter file");
    assert!(!params.is_empty());
}

/// Starts the three ICU hospitals' node processes (each reading its Bulk Data export through
/// its code map), submits a study of `spec` with `model`, `strategy` and `extra` fields on two
/// rounds, and returns the finished study's rounds view.
async fn icu_study(spec: &str, model: Value, extra: &[(&str, Value)]) -> Value {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let sites = ["north", "south", "west"];
    // a generous budget: the test is about the task, not the noise (client-level DP with
    // three sites and a small noise multiplier; reproducible noise in development mode)
    let mut application = federation_application(&sites, 1e6, "data_holder");
    application["member_states"] = json!(["DE", "IT", "FR"]);
    let permit = gw.permit(application).await.to_string();
    let work = tempfile::tempdir().unwrap();
    let mut nodes = icu_nodes(&app, &sites, work.path());
    let features: Value = serde_json::from_str(
        &std::fs::read_to_string(icu_dir().join(format!("{spec}.features.json"))).unwrap(),
    )
    .unwrap();
    let mut body = json!({
        "title": format!("ICU {spec} study"),
        "permit_id": permit,
        "purpose": "scientific_research",
        "categories": ["ehr_data"],
        "data_holders": sites,
        "feature_spec": features,
        "model": model,
        "strategy": {"name": "fedavg"},
        "optimizer": {"name": "adam", "lr": 0.01},
        "local_steps": 30,
        "batch_size": 32,
        "rounds": 2,
        "min_sites": 3,
        "round_deadline_seconds": 180,
        "dp": {"level": "client", "clip_norm": 10.0, "noise_multiplier": 0.005,
               "noise_seed": 3},
        "seed": 5
    });
    for (k, v) in extra {
        body[*k] = v.clone();
    }
    let id = gw.submit(&body).await;
    let view = gw.wait_until_done(id, 300, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    aggregated_once_each(&view, 2);
    let ModelFile { bytes, .. } = gw.model(id).await;
    let (params, _) = fl_engine::load_safetensors(&bytes).expect("a valid parameter file");
    assert!(!params.is_empty());
    view
}

/// The holders' evaluation of the last round's model: the uniform mean on test data and each
/// site's test metrics.
fn last_evaluation(view: &Value) -> (Value, Vec<Value>) {
    let last = view["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|r| r["phase"] == "aggregated")
        .unwrap();
    let ev = &last["evaluation"];
    let sites = ev["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 3, "{last}");
    (
        ev["mean_test"].clone(),
        sites.iter().map(|s| s["test"].clone()).collect(),
    )
}

/// One-year survival after the first inpatient stay: a Cox model (partial likelihood,
/// Breslow ties) trained by FedAvg on three hospitals' exports, scored by Harrell's C-index and
/// the integrated Brier score at each hospital.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survival_study_with_a_cox_model_on_bulk_data_exports() {
    let view = icu_study(
        "survival",
        json!({"architecture": "net", "backbone": {"kind": "mlp", "hidden": [8],
               "norm": {"kind": "layer"}}}),
        &[],
    )
    .await;
    let (mean, sites) = last_evaluation(&view);
    assert_eq!(mean["task"], "survival", "{mean}");
    for s in &sites {
        let c = s["c_index"]
            .as_f64()
            .unwrap_or_else(|| panic!("no C-index: {s}"));
        assert!((0.0..=1.0).contains(&c), "{s}");
        let ibs = s["integrated_brier"].as_f64().unwrap();
        assert!(ibs > 0.0 && ibs < 0.5, "{s}");
    }
    let c = mean["c_index"].as_f64().unwrap();
    let per_site = sites
        .iter()
        .map(|s| s["c_index"].as_f64().unwrap())
        .sum::<f64>()
        / 3.0;
    assert!(
        (c - per_site).abs() < 1e-12,
        "uniform mean {c} vs {per_site}"
    );
    // the generated hazards depend on age, sepsis and lactate: the federated model ranks
    // held-out patients better than chance
    assert!(c > 0.6, "mean test C-index {c}: {mean}");
}

/// 30-day mortality from the first 24 hourly bins of six vitals and labs, by a recurrent
/// `backbone` over the masked series (missing bins carry the state) trained by FedAvg with a
/// weighted BCE loss; the round metrics carry AUROC, calibration and the predicted-positive
/// rate.
async fn time_series_study(backbone: Value) {
    let view = icu_study(
        "timeseries",
        json!({"architecture": "net", "backbone": backbone}),
        &[("loss", json!({"BceWithLogits": {"pos_weight": 2.0}}))],
    )
    .await;
    let (mean, sites) = last_evaluation(&view);
    for s in &sites {
        for k in ["auroc", "brier", "ece", "predicted_positive_rate", "f1"] {
            let v = s[k].as_f64().unwrap_or_else(|| panic!("no {k}: {s}"));
            assert!((0.0..=1.0).contains(&v), "{k}: {s}");
        }
    }
    let ppr = mean["predicted_positive_rate"].as_f64().unwrap();
    assert!(ppr > 0.0 && ppr < 1.0, "collapsed to one class: {mean}");
    let auroc = mean["auroc"].as_f64().unwrap();
    assert!(auroc > 0.6, "mean test AUROC {auroc}: {mean}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_series_study_with_a_gru_on_bulk_data_exports() {
    time_series_study(json!({"kind": "gru", "hidden": 8})).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_series_study_with_an_lstm_on_bulk_data_exports() {
    time_series_study(json!({"kind": "lstm", "hidden": 8})).await
}

/// The thesis's LSTM + static-MLP fusion: the LSTM's last state over the series beside an MLP
/// over age, sex and the two comorbidities.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_series_study_with_lstm_and_static_fusion_on_bulk_data_exports() {
    time_series_study(json!({"kind": "fusion", "cell": "lstm", "hidden": 8, "static_hidden": [4]}))
        .await
}

/// Each holder's evaluation of the last aggregated round's model, by holder name.
fn last_sites(view: &Value) -> Vec<Value> {
    let last = view["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|r| r["phase"] == "aggregated")
        .unwrap();
    let mut sites = last["evaluation"]["sites"].as_array().unwrap().clone();
    sites.sort_by_key(|s| s["data_holder"].as_str().unwrap().to_owned());
    sites
}

/// Checks that a binary summary's rates are those of one confusion matrix of its `n` rows
/// (precision, recall, F1, accuracy, balanced accuracy and the predicted-positive rate read at
/// one threshold); returns its (predicted positives, true positives).
fn one_confusion_matrix(m: &Value) -> (f64, f64) {
    let get = |k: &str| m[k].as_f64().unwrap_or_else(|| panic!("no {k}: {m}"));
    let whole = |v: f64, what: &str| {
        assert!((v - v.round()).abs() < 1e-6, "{what} {v} is no count: {m}");
        v.round()
    };
    let n = get("n");
    let pp = whole(get("predicted_positive_rate") * n, "predicted positives");
    let tp = whole(get("precision") * pp, "true positives");
    if tp > 0.0 {
        let pos = whole(tp / get("recall"), "positives");
        let tn = n - pos - (pp - tp);
        let close = |a: f64, b: f64, what: &str| assert!((a - b).abs() < 1e-9, "{what}: {m}");
        close(get("f1"), 2.0 * tp / (pp + pos), "F1");
        close(get("accuracy"), (tp + tn) / n, "accuracy");
        close(
            get("balanced_accuracy"),
            (tp / pos + tn / (n - pos)) / 2.0,
            "balanced accuracy",
        );
    }
    (pp, tp)
}

/// The binary mortality study with each holder's decision threshold chosen on its own
/// validation part (maximal F1), against the same study at the default 0.5: the threshold does
/// not touch training, so both release the same model and every holder reports the same loss,
/// AUROC and calibration; what is read at a threshold is read at the holder's own, which every
/// holder reports with its validation and test metrics. A holder whose validation part holds one
/// class only keeps 0.5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decision_thresholds_chosen_on_each_holder_s_validation_part() {
    let model = json!({"architecture": "logistic"});
    let fixed = last_sites(&icu_study("mortality", model.clone(), &[]).await);
    let chosen = icu_study(
        "mortality",
        model,
        &[("threshold", json!({"rule": "max_f1"}))],
    )
    .await;
    let chosen = last_sites(&chosen);
    assert_eq!(chosen.len(), 3);
    for (f, c) in fixed.iter().zip(&chosen) {
        assert_eq!(f["data_holder"], c["data_holder"]);
        let t = c["validation"]["threshold"].as_f64().unwrap();
        if c["validation"]["auroc"].is_null() {
            // one class in the holder's validation part: no cut to choose, 0.5 kept
            assert_eq!(t, 0.5, "{c}");
        } else {
            // chosen between two of the holder's validation scores: 0.5 only by accident
            assert!(t > 0.0 && t < 1.0 && t != 0.5, "{c}");
        }
        for part in ["validation", "test"] {
            let (f, c) = (&f[part], &c[part]);
            assert_eq!(f["threshold"], 0.5, "{f}");
            assert_eq!(c["threshold"].as_f64(), Some(t), "{c}");
            for k in ["n", "loss", "auroc", "auprc", "brier", "ece"] {
                assert_eq!(f[k], c[k], "{k}: {f} vs {c}");
            }
            one_confusion_matrix(f);
            one_confusion_matrix(c);
        }
        // the best F1 among the validation cuts is at least that of the cut at 0.5
        let f1 = |m: &Value| m["validation"]["f1"].as_f64().unwrap();
        assert!(f1(c) >= f1(f), "{c} vs {f}");
    }
    let choosing = chosen
        .iter()
        .filter(|c| !c["validation"]["auroc"].is_null())
        .count();
    assert!(choosing >= 2, "{chosen:?}");
    // some holder calls other rows positive than at 0.5
    assert!(
        fixed.iter().zip(&chosen).any(|(f, c)| {
            one_confusion_matrix(&f["test"]).0 != one_confusion_matrix(&c["test"]).0
        }),
        "{chosen:?}"
    );
}

/// The binary mortality label as a two-class softmax with class-weighted cross-entropy under
/// FedPer (a shared extractor, site-local heads), and three ICU outcomes (death within 30 days,
/// within a year, creatinine above 2 mg/dL within 72 hours) declared as a multi-label label and
/// trained with per-label BCE: the nodes build class-index and bit-mask targets, the holders
/// report macro metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_class_and_multi_label_studies_on_bulk_data_exports() {
    let view = icu_study(
        "mortality",
        json!({"architecture": "head_net", "backbone": {"kind": "mlp", "hidden": [8],
               "norm": {"kind": "group", "groups": 2}}}),
        &[
            ("task", json!({"multiclass": {"classes": 2}})),
            (
                "loss",
                json!({"CrossEntropy": {"class_weights": [1.0, 3.0]}}),
            ),
            ("strategy", json!({"name": "fedper"})),
        ],
    )
    .await;
    let (mean, sites) = last_evaluation(&view);
    for s in &sites {
        for k in ["auroc", "f1", "brier", "ece", "balanced_accuracy"] {
            let v = s[k].as_f64().unwrap_or_else(|| panic!("no {k}: {s}"));
            assert!((0.0..=1.0).contains(&v), "{k}: {s}");
        }
    }
    assert!(mean["auroc"].as_f64().unwrap() > 0.6, "{mean}");

    let view = icu_study(
        "outcomes",
        json!({"architecture": "mlp", "hidden": [8]}),
        &[
            ("task", json!({"multilabel": {"labels": 3}})),
            (
                "loss",
                json!({"MultiLabelBce": {"pos_weight": [2.0, 2.0, 2.0]}}),
            ),
        ],
    )
    .await;
    let (mean, sites) = last_evaluation(&view);
    assert_eq!(
        mean["task"],
        json!({"multi_label": {"labels": 3}}),
        "{mean}"
    );
    for s in &sites {
        for k in [
            "auroc",
            "f1",
            "balanced_accuracy",
            "predicted_positive_rate",
        ] {
            let v = s[k].as_f64().unwrap_or_else(|| panic!("no {k}: {s}"));
            assert!((0.0..=1.0).contains(&v), "{k}: {s}");
        }
    }
    // macro AUROC over the three labels, better than chance
    assert!(mean["auroc"].as_f64().unwrap() > 0.6, "{mean}");
}

/// The UCI angiographic disease status (0 to 4, a coded Observation in the example bundles) as
/// a five-class label: a softmax regression by FedAvg on the four hospitals' bundles, the
/// holders' macro metrics better than chance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_class_disease_status_on_the_example_bundles() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let permit = gw
        .permit(federation_application(&hospitals(), 1e6, "data_holder"))
        .await;
    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in hospitals() {
        nodes.spawn(org, &app.base, &app.data_dir, work.path(), None);
    }
    let spec: Value = serde_json::from_slice(
        &std::fs::read(example_federation_dir().join("heart_disease_severity.features.json"))
            .unwrap(),
    )
    .unwrap();
    let mut body = ditto_study(permit, 2);
    body["title"] = json!("Angiographic disease status across four hospitals");
    body["feature_spec"] = spec;
    body["task"] = json!({"multiclass": {"classes": 5}});
    body["strategy"] = json!({"name": "fedavg"});
    body["optimizer"] = json!({"name": "adam", "lr": 0.05});
    body["local_steps"] = json!(30);
    body["batch_size"] = json!(16);
    body["dp"] = json!({"level": "client", "clip_norm": 10.0, "noise_multiplier": 0.005,
                        "noise_seed": 3});
    let id = gw.submit(&body).await;
    let view = gw.wait_until_done(id, 300, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    let last = aggregated_once_each(&view, 2).pop().unwrap();
    let ev = &last["evaluation"];
    let mean = &ev["mean_test"];
    let sites = ev["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 4, "{last}");
    for s in sites {
        let t = &s["test"];
        for k in ["f1", "accuracy", "balanced_accuracy"] {
            let v = t[k].as_f64().unwrap_or_else(|| panic!("no {k}: {t}"));
            assert!((0.0..=1.0).contains(&v), "{k}: {t}");
        }
        // the macro AUROC needs every class among a site's test rows
        if let Some(v) = t["auroc"].as_f64() {
            assert!((0.0..=1.0).contains(&v), "auroc: {t}");
        }
    }
    // chance: balanced accuracy 1/5, macro AUROC 0.5 (over the sites that have one)
    assert!(mean["balanced_accuracy"].as_f64().unwrap() > 0.25, "{mean}");
    assert!(mean["auroc"].as_f64().unwrap() > 0.6, "{mean}");
}

// ---------------------------------------------------------------------------------------------
// Images.

fn digits_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/digits-federation")
}

/// Handwritten digits as FHIR Media: three node processes each decode their holder's 8x8 PNGs
/// (inline, or from a Binary the Media names) into the study's `[1, 8, 8]` image input, and a
/// ResNet-style CNN learns the ten classes by FedAvg (3 rounds of 60 local Adam steps). Chance
/// is a balanced accuracy (macro recall) of 0.1; the holders' validation parts (about 25 digits
/// each) must average above 0.6, which guessing cannot reach (the run reaches about 0.9).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cnn_study_on_the_digit_image_federation() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let sites = ["imaging-a", "imaging-b", "imaging-c"];
    let mut application = federation_application(&sites, 1e6, "data_holder");
    application["member_states"] = json!(["DE", "FR", "IT"]);
    let permit = gw.permit(application).await.to_string();
    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in sites {
        let data = vec![
            "--fhir".into(),
            digits_dir().join(format!("{org}.json")).into_os_string(),
        ];
        nodes.spawn_reading(org, &app.base, &app.data_dir, work.path(), None, data);
    }
    let spec: Value =
        serde_json::from_slice(&std::fs::read(digits_dir().join("digits.features.json")).unwrap())
            .unwrap();
    let rounds = 3;
    let id = gw
        .submit(&json!({
            "title": "Handwritten digits across three holders",
            "permit_id": permit,
            "purpose": "scientific_research",
            "categories": ["ehr_data"],
            "data_holders": sites,
            "feature_spec": spec,
            "model": {"architecture": "net",
                      "backbone": {"kind": "cnn", "stages": [12, 24], "groups": 3}},
            "strategy": {"name": "fedavg"},
            "optimizer": {"name": "adam", "lr": 0.01},
            "local_steps": 60,
            "batch_size": 32,
            "rounds": rounds,
            "min_sites": 3,
            "round_deadline_seconds": 180,
            "dp": {"level": "client", "clip_norm": 10.0, "noise_multiplier": 0.005,
                   "noise_seed": 3},
            "seed": 5
        }))
        .await;
    let view = gw.wait_until_done(id, 300, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    let last = aggregated_once_each(&view, rounds).pop().unwrap();
    let sites_eval = last["evaluation"]["sites"].as_array().unwrap();
    assert_eq!(sites_eval.len(), 3, "{last}");
    let mut sum = 0.0;
    for s in sites_eval {
        let v = &s["validation"];
        let b = v["balanced_accuracy"]
            .as_f64()
            .unwrap_or_else(|| panic!("no balanced accuracy: {s}"));
        assert!((0.0..=1.0).contains(&b), "{s}");
        sum += b;
    }
    let mean = sum / 3.0;
    assert!(
        mean > 0.6,
        "mean validation balanced accuracy {mean}: {last}"
    );
    let ModelFile { bytes, .. } = gw.model(id).await;
    let (params, _) = fl_engine::load_safetensors(&bytes).expect("a valid parameter file");
    let names: Vec<&str> = params.names().collect();
    assert!(names.iter().any(|k| k.contains("stem")), "{names:?}");
}

// ---------------------------------------------------------------------------------------------
// A study without formal DP, under a permit that allows it.

/// q-FedAvg supports neither DP level; under a `none_allowed` permit it runs with
/// `"dp": {"level": "none"}` on the four node processes: no clipping, no noise, no DP-SGD, no epsilon spent, and the model is released
/// after the output check with a release entry recording that no formal DP applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qfedavg_without_formal_dp_under_a_none_allowed_permit() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let (_, issued) = app
        .permit_with(
            &federation_application(&hospitals(), 1.0, "data_holder"),
            &json!({"decision": "approve", "dp_requirement": "none_allowed"}),
        )
        .await;
    assert_eq!(issued["terms"]["dp_requirement"], "none_allowed");
    let permit = PermitId::parse(issued["id"].as_str().unwrap()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in hospitals() {
        nodes.spawn(org, &app.base, &app.data_dir, work.path(), None);
    }
    let rounds = 2;
    let mut body = ditto_study(permit, rounds);
    body["strategy"] = json!({"name": "qfedavg", "q": 1.0});
    body["optimizer"] = json!({"name": "sgd", "lr": 0.1});
    body["local_steps"] = json!(10);
    body["dp"] = json!({"level": "none"});
    body["release"] = json!("last");
    let id = gw.submit(&body).await;

    let view = gw.wait_until_done(id, 180, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    assert_eq!(view["dp"], "none", "{view}");
    assert_eq!(view["epsilon_spent"], 0.0, "{view}");
    let aggregated = aggregated_once_each(&view, rounds);
    let last = aggregated.last().unwrap();
    assert_eq!(
        last["evaluation"]["sites"].as_array().unwrap().len(),
        4,
        "{last}"
    );
    for r in aggregated {
        assert_eq!(r["dp"], "none", "{r}");
        assert_eq!(r["epsilon_round"], 0.0, "{r}");
        assert_eq!(r["epsilon_total"], 0.0, "{r}");
        assert_eq!(
            r["noise_std_on_mean"],
            Value::Null,
            "no noise is added: {r}"
        );
        let sites = r["sites"].as_array().unwrap();
        assert!(sites.iter().all(|s| s["contributed"] == true), "{r}");
        // without formal DP there is no guarantee for it to undercut: each holder's loss is shown
        assert!(sites.iter().all(|s| s["train_loss"].is_f64()), "{r}");
    }
    assert_eq!(gw.epsilon_spent(permit).await, 0.0);

    let model = gw.model(id).await;
    let (params, meta) = fl_engine::load_safetensors(&model.bytes).expect("a valid parameter file");
    assert!(!params.is_empty());
    params.ensure_finite().expect("a finite model");
    // the study asked for the last round's model rather than the best one
    assert_eq!(meta.round, rounds);
    assert_eq!(model.selection.as_deref(), Some("last"));
    let id_text = id.to_string();
    let released = gw
        .audit(&[("action", "study.model"), ("resource_id", &id_text)])
        .await;
    let entry = released.last().expect("the release is audited");
    assert_eq!(entry.detail["dp"], "none", "{:?}", entry.detail);
    assert_eq!(entry.detail["epsilon_spent"], 0.0);
    assert_eq!(entry.detail["digest"], model.digest);
}

/// FLTrust with a root holder on the four node processes, without formal DP: every round the
/// root holder's update `g0` weighs the other three (trust ReLU(cos(g_i, g0)), each rescaled
/// to ||g0||, trust-weighted mean). Each round's checkpoint is recomputed from what every node
/// trained (its saved state) and the model of the round before, with FLTrust written out here
/// rather than taken from the engine, and so is the number of updates each round's view says
/// got no trust.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fltrust_with_a_root_holder_through_node_processes() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let (_, issued) = app
        .permit_with(
            &federation_application(&hospitals(), 1.0, "data_holder"),
            &json!({"decision": "approve", "dp_requirement": "none_allowed"}),
        )
        .await;
    let permit = PermitId::parse(issued["id"].as_str().unwrap()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in hospitals() {
        nodes.spawn(org, &app.base, &app.data_dir, work.path(), None);
    }
    let root = hospitals()[0];
    // each node keeps the state of its last two rounds: two rounds can both be recomputed
    let rounds = 2;
    let mut body = ditto_study(permit, rounds);
    body["strategy"] = json!({"name": "fedavg"});
    body["optimizer"] = json!({"name": "sgd", "lr": 0.5});
    body["local_steps"] = json!(10);
    body["dp"] = json!({"level": "none"});
    body["release"] = json!("last");
    body["aggregation"] = json!({"rule": "fltrust", "root_holder": root});
    let id = gw.submit(&body).await;
    let view = gw.wait_until_done(id, 240, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    let aggregated = aggregated_once_each(&view, rounds);
    for r in &aggregated {
        let sites = r["sites"].as_array().unwrap();
        assert!(sites.iter().all(|s| s["contributed"] == true), "{r}");
        let round = r["round"].as_u64().unwrap();
        let start = checkpoint_model(&app, round - 1).await;
        let update = |org: &str| -> Vec<f64> {
            trained_model(work.path(), org, id, round)
                .iter()
                .zip(&start)
                .map(|(t, s)| f64::from(t - s))
                .collect()
        };
        let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let g0 = update(root);
        let mut combined = vec![0f64; g0.len()];
        let (mut total, mut untrusted) = (0.0, 0);
        for org in hospitals().into_iter().filter(|o| *o != root) {
            let g = update(org);
            let dot: f64 = g.iter().zip(&g0).map(|(a, b)| a * b).sum();
            let trust = (dot / (norm(&g) * norm(&g0))).max(0.0);
            for (c, v) in combined.iter_mut().zip(&g) {
                *c += trust * norm(&g0) / norm(&g) * v;
            }
            total += trust;
            untrusted += usize::from(trust == 0.0);
        }
        // no update agreeing with the root holder's: the model stays where it was
        let expected: Vec<f64> = start
            .iter()
            .zip(&combined)
            .map(|(w, c)| f64::from(*w) + if total > 0.0 { c / total } else { 0.0 })
            .collect();
        let got = checkpoint_model(&app, round).await;
        for (k, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert!(
                (f64::from(*g) - e).abs() <= 1e-5 * e.abs().max(1.0),
                "round {round}, value {k}: {g} vs {e}"
            );
        }
        assert_eq!(r["untrusted_updates"], untrusted, "{r}");
    }
    // the released model is the last checkpoint, and it moved from the initial one
    let model = gw.model(id).await;
    let (params, _) = fl_engine::load_safetensors(&model.bytes).expect("a valid parameter file");
    assert_eq!(params.to_flat(), checkpoint_model(&app, rounds).await);
    assert_ne!(params.to_flat(), checkpoint_model(&app, 0).await);
}

// ---------------------------------------------------------------------------------------------
// FedMAP and FedMode through real nodes, and FedMAP's tiers 2 and 3 on a hospital's own node.

/// Runs `strategy` for `rounds` rounds without formal DP on the four node processes, under a
/// `none_allowed` permit, after checking that client- and record-level DP are refused with
/// `refusals` (`(dp.level, code)` pairs). Returns the gateway, the nodes' work directory, the
/// study and its finished rounds view.
async fn study_without_formal_dp(
    strategy: Value,
    rounds: u64,
) -> (TestApp, Gateway, tempfile::TempDir, StudyId, Value) {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let (_, issued) = app
        .permit_with(
            &federation_application(&hospitals(), 1.0, "data_holder"),
            &json!({"decision": "approve", "dp_requirement": "none_allowed"}),
        )
        .await;
    let permit = PermitId::parse(issued["id"].as_str().unwrap()).unwrap();
    let mut body = ditto_study(permit, rounds);
    body["strategy"] = strategy;
    body["optimizer"] = json!({"name": "adam", "lr": 0.05});
    body["local_steps"] = json!(10);
    body["batch_size"] = json!(8);

    // the server reads per-holder values beside the model (site weights, loss curves) that
    // neither DP level covers: refused at once, nothing stored
    let record = json!({"level": "record", "clip_norm": 1.0, "noise_multiplier": 1.0,
                        "sampling_rate": 0.1});
    for (dp, code) in [
        (body["dp"].clone(), "strategy_refuses_client_dp"),
        (record, "strategy_refuses_record_dp"),
    ] {
        let mut refused = body.clone();
        refused["dp"] = dp;
        let r = app.post("/v1/studies", &app.researcher(), &refused).await;
        assert_eq!(r.status, 422, "{}", r.text);
        let errors = r.body["errors"].as_array().unwrap();
        assert!(
            errors
                .iter()
                .any(|e| e["field"] == "dp.level" && e["code"] == code),
            "{}",
            r.text
        );
    }
    let listed = app.get("/v1/studies", &app.researcher()).await;
    assert_eq!(
        listed.body.as_array().map(Vec::len),
        Some(0),
        "{}",
        listed.text
    );

    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in hospitals() {
        nodes.spawn(org, &app.base, &app.data_dir, work.path(), None);
    }
    body["dp"] = json!({"level": "none"});
    let id = gw.submit(&body).await;
    let view = gw.wait_until_done(id, 240, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    assert_eq!(view["dp"], "none", "{view}");
    assert_eq!(view["epsilon_spent"], 0.0, "{view}");
    let aggregated = aggregated_once_each(&view, rounds);
    for r in &aggregated {
        let sites = r["sites"].as_array().unwrap();
        assert_eq!(sites.len(), 4, "{r}");
        assert!(sites.iter().all(|s| s["contributed"] == true), "{r}");
        // what the method's server reads beside the model is not shown: a holder's part is
        // its counts and (without formal DP, above the small-cell threshold) its loss
        for s in sites {
            let mut keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
            keys.sort_unstable();
            assert_eq!(
                keys,
                [
                    "contributed",
                    "data_holder",
                    "excluded_subjects",
                    "samples",
                    "train_loss"
                ],
                "{r}"
            );
        }
        let evaluated = r["evaluation"]["sites"].as_array().unwrap();
        assert_eq!(evaluated.len(), 4, "{r}");
    }
    let last = aggregated.last().unwrap();
    let loss = last["evaluation"]["mean_validation"]["loss"]
        .as_f64()
        .unwrap_or_else(|| panic!("{last}"));
    assert!(loss.is_finite() && loss > 0.0 && loss < 1.0, "{last}");
    let model = gw.model(id).await;
    let (params, meta) = fl_engine::load_safetensors(&model.bytes).expect("a valid parameter file");
    params.ensure_finite().expect("a finite model");
    assert_eq!(meta.study, id.to_string());
    // the release is the global model alone: nothing of the method's extras
    assert!(
        params.names().all(|n| !n.contains('/')),
        "{:?}",
        params.names().collect::<Vec<_>>()
    );
    (app, gw, work, id, view)
}

/// Runs `ehds-node <args>`; returns its exit status success, stdout as JSON (or Null)
/// and stderr.
fn node_command(args: &[&std::ffi::OsStr]) -> (bool, Value, String) {
    let out = std::process::Command::new(node_bin())
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (
        out.status.success(),
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// FedMAP's tier 2 as the study's evaluation tier: with `"tier": "FineTuned"` every node
/// scores mu fine-tuned under the learnt prior on its own validation part, and that is what the
/// rounds view reports; mu itself (tier 3, scored by `node evaluate-model` on the same rows)
/// scores differently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fedmap_fine_tuned_tier_is_what_the_nodes_report() {
    let rounds = 2;
    let (_app, _gw, work, id, view) = study_without_formal_dp(
        json!({"name": "fedmap", "hidden": [8, 4], "alpha": 0.1, "tier": "FineTuned",
               "fine_tune_steps": 15}),
        rounds,
    )
    .await;
    let last = aggregated_once_each(&view, rounds).last().cloned().unwrap();
    let sites = last["evaluation"]["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 4, "{last}");
    let cleveland = sites
        .iter()
        .find(|s| s["data_holder"] == "cleveland")
        .unwrap_or_else(|| panic!("{last}"));
    let fine_tuned = cleveland["validation"]["loss"].as_f64().unwrap();
    assert!(fine_tuned.is_finite() && fine_tuned > 0.0, "{cleveland}");

    let state = work.path().join("nodes").join("cleveland");
    let fhir = example_federation_dir().join("cleveland.json");
    let id_text = id.to_string();
    let args: Vec<&std::ffi::OsStr> = vec![
        "evaluate-model".as_ref(),
        "--state-dir".as_ref(),
        state.as_os_str(),
        "--study".as_ref(),
        id_text.as_ref(),
        "--fhir".as_ref(),
        fhir.as_os_str(),
    ];
    let (ok, t3, err) = node_command(&args);
    assert!(ok, "{err}");
    assert_eq!(t3["model"], "global", "{t3}");
    assert_eq!(t3["round"], rounds, "{t3}");
    assert_eq!(t3["validation"]["n"], cleveland["validation"]["n"], "{t3}");
    let global = t3["validation"]["loss"].as_f64().unwrap();
    assert!(
        (global - fine_tuned).abs() > 1e-6,
        "the node reported mu's own score: {global} vs {cleveland}"
    );
}

/// FedMAP (arXiv:2405.19000) through the gateway and four node processes without formal DP,
/// then tiers 2 and 3 on cleveland's node with its own records only: the last global mu
/// scored locally, mu fine-tuned with the learnt prior, the fine-tuned file scored again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fedmap_through_node_processes_and_its_tiers_on_a_hospital_node() {
    let rounds = 2;
    let (_app, gw, work, id, _) = study_without_formal_dp(
        json!({"name": "fedmap", "hidden": [8, 4], "alpha": 0.1}),
        rounds,
    )
    .await;
    let state = work.path().join("nodes").join("cleveland");
    let fhir = example_federation_dir().join("cleveland.json");
    let id_text = id.to_string();
    let common = |cmd: &'static str| -> Vec<std::ffi::OsString> {
        vec![
            cmd.into(),
            "--state-dir".into(),
            state.clone().into_os_string(),
            "--study".into(),
            id_text.clone().into(),
            "--fhir".into(),
            fhir.clone().into_os_string(),
        ]
    };
    let run = |args: Vec<std::ffi::OsString>| {
        let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        node_command(&refs)
    };
    let sane = |m: &Value| {
        let loss = m["loss"].as_f64().unwrap_or_else(|| panic!("{m}"));
        assert!(loss.is_finite() && loss > 0.0 && loss < 1.0, "{m}");
        assert!(m["n"].as_u64().unwrap() > 0, "{m}");
    };

    // T3: the last global model mu, on cleveland's validation and test parts
    let (ok, t3, err) = run(common("evaluate-model"));
    assert!(ok, "{err}");
    assert_eq!(t3["model"], "global", "{t3}");
    assert_eq!(t3["round"], rounds, "{t3}");
    assert_eq!(t3["site"], "cleveland", "{t3}");
    sane(&t3["validation"]);
    sane(&t3["test"]);

    // T2: mu fine-tuned with the prior the study learnt
    let t2_file = work.path().join("t2.safetensors");
    let mut args = common("fedmap-finetune");
    args.extend(["--out".into(), t2_file.clone().into_os_string()]);
    args.extend(["--steps".into(), "15".into()]);
    let (ok, t2, err) = run(args.clone());
    assert!(ok, "{err}");
    assert_eq!(t2["from_round"], rounds, "{t2}");
    assert_eq!(t2["steps"], 15, "{t2}");
    sane(&t2["validation"]);
    sane(&t2["test"]);
    // the same validation rows as the node's and as T3's
    assert_eq!(t2["validation"]["n"], t3["validation"]["n"], "{t2} {t3}");
    let bytes = std::fs::read(&t2_file).unwrap();
    let (params, meta) = fl_engine::load_safetensors(&bytes).unwrap();
    assert_eq!(meta.digest, t2["digest"]);
    assert_eq!(meta.extra["checkpoint"], "fedmap_fine_tuned");
    let spec: fl_engine::ModelSpec = serde_json::from_str(&meta.extra["model_spec"]).unwrap();
    fl_engine::Net::with_parameters(&spec, &params).expect("the file rebuilds the model");
    // the same run again gives the same model; an existing file needs --force
    let (ok, _, err) = run(args.clone());
    assert!(!ok && err.contains("--force"), "{err}");
    args.push("--force".into());
    let (ok, again, err) = run(args);
    assert!(ok, "{err}");
    assert_eq!(again["digest"], t2["digest"]);

    // the fine-tuned file scored by evaluate-model: the loss fine-tuning reported
    let mut args = common("evaluate-model");
    args.extend(["--model".into(), t2_file.into_os_string()]);
    let (ok, scored, err) = run(args);
    assert!(ok, "{err}");
    let (a, b) = (
        scored["validation"]["loss"].as_f64().unwrap(),
        t2["validation"]["loss"].as_f64().unwrap(),
    );
    assert!((a - b).abs() < 1e-9, "{scored} {t2}");

    // the released model, scored on the hospital's own data
    let released = work.path().join("released.safetensors");
    std::fs::write(&released, gw.model(id).await.bytes).unwrap();
    let mut args = common("evaluate-model");
    args.extend(["--model".into(), released.into_os_string()]);
    let (ok, scored, err) = run(args);
    assert!(ok, "{err}");
    sane(&scored["validation"]);

    // T1: the personalised model the node kept
    let t1 = work.path().join("t1.safetensors");
    let (ok, best, err) = run(vec![
        "export-model".into(),
        "--state-dir".into(),
        state.clone().into_os_string(),
        "--study".into(),
        id_text.clone().into(),
        "--out".into(),
        t1.into_os_string(),
    ]);
    assert!(ok, "{err}");
    assert!(best["validation_loss"].as_f64().unwrap() > 0.0, "{best}");

    // a study this node never worked on
    let mut args = common("fedmap-finetune");
    args[4] = StudyId::new().to_string().into();
    args.extend(["--out".into(), work.path().join("x").into_os_string()]);
    let (ok, _, err) = run(args);
    assert!(!ok && err.contains("has not worked a task of it"), "{err}");
}

/// FedMode (mode-connectivity aggregation) through the gateway and four node processes
/// without formal DP; fine-tuning with a prior is FedMAP's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fedmode_through_node_processes() {
    let (_app, _gw, work, id, _) =
        study_without_formal_dp(json!({"name": "fedmode", "curve_steps": 5}), 2).await;
    let args: Vec<std::ffi::OsString> = vec![
        "fedmap-finetune".into(),
        "--state-dir".into(),
        work.path().join("nodes").join("hungarian").into_os_string(),
        "--study".into(),
        id.to_string().into(),
        "--fhir".into(),
        example_federation_dir()
            .join("hungarian.json")
            .into_os_string(),
        "--out".into(),
        work.path().join("x.safetensors").into_os_string(),
    ];
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let (ok, _, err) = node_command(&refs);
    assert!(!ok && err.contains("not FedMAP"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// FENDA-FL with site-private features.

/// FENDA-FL (arXiv:2309.16825) with `model` (a global MLP extractor of 8 and a local one of 4)
/// on the ICU federation where the local extractor reads features only its site has: north
/// declares two site-private features (its own code map beside its export), west one, south
/// none. Each node widens its own local extractor; the global extractor, the only part that
/// leaves a node, keeps the study's width everywhere.
async fn fenda_with_site_private_features(model: Value) {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let sites = ["north", "south", "west"];
    let mut application = federation_application(&sites, 1e6, "data_holder");
    application["member_states"] = json!(["DE", "IT", "FR"]);
    let permit = gw.permit(application).await.to_string();
    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for (org, map) in [
        ("north", "north.private.codemap.json"),
        ("south", "south.codemap.json"),
        ("west", "west.codemap.json"),
    ] {
        let data = vec![
            "--fhir".into(),
            icu_dir().join(org).into_os_string(),
            "--code-map".into(),
            icu_dir().join(map).into_os_string(),
        ];
        nodes.spawn_reading(org, &app.base, &app.data_dir, work.path(), None, data);
    }
    let features: Value = serde_json::from_str(
        &std::fs::read_to_string(icu_dir().join("mortality.features.json")).unwrap(),
    )
    .unwrap();
    let rounds = 2;
    let id = gw
        .submit(&json!({
            "title": "30-day mortality with site-private features",
            "permit_id": permit,
            "purpose": "scientific_research",
            "categories": ["ehr_data"],
            "data_holders": sites,
            "feature_spec": features,
            "model": model,
            "strategy": {"name": "fenda_fl"},
            "optimizer": {"name": "adam", "lr": 0.01},
            "local_steps": 20,
            "batch_size": 16,
            "rounds": rounds,
            "min_sites": 3,
            "round_deadline_seconds": 180,
            "dp": {"level": "client", "clip_norm": 10.0, "noise_multiplier": 0.005,
                   "noise_seed": 3},
            "seed": 5
        }))
        .await;
    let view = gw.wait_until_done(id, 300, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    let aggregated = aggregated_once_each(&view, rounds);
    for r in &aggregated {
        let per_site = r["sites"].as_array().unwrap();
        assert!(per_site.iter().all(|s| s["contributed"] == true), "{r}");
        assert_eq!(r["evaluation"]["sites"].as_array().unwrap().len(), 3, "{r}");
    }
    // the released model: the study's global extractor, as wide as the study's row
    let ModelFile { bytes, .. } = gw.model(id).await;
    let (released, _) = fl_engine::load_safetensors(&bytes).unwrap();
    let global = released
        .get("global.fc0.weight")
        .expect("a global extractor");
    let width = global.shape[1];
    assert_eq!(global.shape, [8, width]);

    // each hospital's own model: the same global part, a local extractor of its own width
    for (org, private) in [("north", 2), ("south", 0), ("west", 1)] {
        let out = work.path().join(format!("{org}.safetensors"));
        let (ok, best, err) = node_command(&[
            std::ffi::OsStr::new("export-model"),
            std::ffi::OsStr::new("--state-dir"),
            work.path().join("nodes").join(org).as_os_str(),
            std::ffi::OsStr::new("--study"),
            std::ffi::OsStr::new(&id.to_string()),
            std::ffi::OsStr::new("--out"),
            out.as_os_str(),
        ]);
        assert!(ok, "{org}: {err}");
        assert!(best["validation_loss"].as_f64().unwrap() > 0.0, "{best}");
        let (params, meta) = fl_engine::load_safetensors(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(
            params.get("local.fc0.weight").unwrap().shape,
            [4, width + private],
            "{org}"
        );
        for (name, t) in released.iter().filter(|(n, _)| n.starts_with("global.")) {
            assert_eq!(params.get(name).unwrap().shape, t.shape, "{org}: {name}");
        }
        assert_eq!(
            params.get("head.out.weight").unwrap().shape,
            [1, 12],
            "{org}"
        );
        // the kept model rebuilds from its own specification (the holder's widths)
        let spec: fl_engine::ModelSpec = serde_json::from_str(&meta.extra["model_spec"]).unwrap();
        assert_eq!(spec.inputs(), width + private, "{org}");
        fl_engine::Net::with_parameters(&spec, &params).expect("the kept model rebuilds");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenda_with_site_private_features_of_different_widths() {
    fenda_with_site_private_features(json!({"architecture": "fenda",
        "backbone": {"kind": "mlp", "hidden": [8]},
        "local_backbone": {"kind": "mlp", "hidden": [4]}}))
    .await
}

/// The plain-MLP FENDA form: the holders' local extractors take their private columns the
/// same way (the holder's model is the equivalent backbone model).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_mlp_fenda_with_site_private_features() {
    fenda_with_site_private_features(
        json!({"architecture": "fenda", "hidden": [8], "local_hidden": [4]}),
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// Secure aggregation through real node processes (docs/secure-aggregation.md).

/// FedAvg without formal DP under secure aggregation, on the hospitals of a `none_allowed`
/// permit, with `deadline` seconds per round.
async fn secure_fedavg(
    gw: &Gateway,
    app: &TestApp,
    rounds: u64,
    min_sites: usize,
    deadline: u64,
) -> StudyId {
    let (_, issued) = app
        .permit_with(
            &federation_application(&hospitals(), 1.0, "data_holder"),
            &json!({"decision": "approve", "dp_requirement": "none_allowed"}),
        )
        .await;
    let permit = PermitId::parse(issued["id"].as_str().unwrap()).unwrap();
    let mut body = ditto_study(permit, rounds);
    body["strategy"] = json!({"name": "fedavg"});
    body["optimizer"] = json!({"name": "sgd", "lr": 0.5});
    body["local_steps"] = json!(10);
    body["dp"] = json!({"level": "none"});
    body["release"] = json!("last");
    body["min_sites"] = json!(min_sites);
    body["round_deadline_seconds"] = json!(deadline);
    body["secure_aggregation"] = json!({});
    gw.submit(&body).await
}

/// Every value in every column of every table of the SQLite store at `url`, as bytes (text
/// as UTF-8, numbers as their text), with its table.
async fn every_stored_value(url: &str) -> Vec<(String, Vec<u8>)> {
    use sqlx::Row;
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap();
    let tables: Vec<String> =
        sqlx::query_scalar("select name from sqlite_master where type = 'table'")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert!(tables.iter().any(|t| t == "secagg_session"), "{tables:?}");
    let mut out = vec![];
    for table in tables {
        let columns: Vec<String> = sqlx::query(sqlx::AssertSqlSafe(format!(
            "pragma table_info(\"{table}\")"
        )))
        .fetch_all(&pool)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<String, _>("name"))
        .collect();
        for column in columns {
            let values: Vec<Option<Vec<u8>>> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "select cast(\"{column}\" as blob) from \"{table}\""
            )))
            .fetch_all(&pool)
            .await
            .unwrap();
            out.extend(values.into_iter().flatten().map(|v| (table.clone(), v)));
        }
    }
    pool.close().await;
    out
}

/// Whether `haystack` holds `needle` as a contiguous byte string.
fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// What node `org` trained in round `round` of study `id`, from the state it saved under
/// `work`: its model after local training, flat.
fn trained_model(work: &Path, org: &str, id: StudyId, round: u64) -> Vec<f32> {
    let state = work
        .join("nodes")
        .join(org)
        .join(id.to_string())
        .join(format!("state-{round}.json"));
    let saved: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    let trained: fl_engine::ParameterSet =
        serde_json::from_value(saved["site"]["params"].clone()).unwrap();
    trained.to_flat()
}

/// The global model checkpointed after round `round` (0: the initial model), flat; the
/// store holds one study.
async fn checkpoint_model(app: &TestApp, round: u64) -> Vec<f32> {
    let pool = sqlx::sqlite::SqlitePool::connect(&app.database_url)
        .await
        .unwrap();
    let model: Vec<u8> =
        sqlx::query_scalar("select global_model from study_checkpoint where round = $1")
            .bind(round as i64)
            .fetch_one(&pool)
            .await
            .unwrap();
    pool.close().await;
    fl_engine::load_safetensors(&model).unwrap().0.to_flat()
}

/// No row of any table of the gateway's SQLite store holds what a hospital's node sent in
/// round `round` of study `id`: each node's update is recomputed from what it kept under
/// `work` (its trained model, and its change to the global model of the round before), and
/// neither appears as f32 bytes anywhere; every parameter file stored is a global model (none
/// names a sender, as every update in clear does); no task holds a result; and the relay's
/// state is gone with the round.
async fn assert_no_update_stored(app: &TestApp, work: &Path, id: StudyId, round: u64) {
    let start = checkpoint_model(app, round - 1).await;
    let stored = every_stored_value(&app.database_url).await;
    for org in hospitals() {
        let trained = trained_model(work, org, id, round);
        assert_eq!(trained.len(), start.len());
        let bytes: Vec<u8> = trained.iter().flat_map(|v| v.to_le_bytes()).collect();
        let delta: Vec<u8> = trained
            .iter()
            .zip(&start)
            .flat_map(|(t, s)| (t - s).to_le_bytes())
            .collect();
        for (table, value) in &stored {
            assert!(!holds(value, &bytes), "{org}'s trained model is in {table}");
            assert!(!holds(value, &delta), "{org}'s update is in {table}");
        }
    }
    for (table, value) in &stored {
        if let Ok((_, meta)) = fl_engine::load_safetensors(value) {
            assert_eq!(meta.site, None, "a holder's parameter file is in {table}");
        }
    }
    let pool = sqlx::sqlite::SqlitePool::connect(&app.database_url)
        .await
        .unwrap();
    let with_result: i64 =
        sqlx::query_scalar("select count(*) from study_task where result is not null")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(with_result, 0);
    for table in [
        "secagg_session",
        "secagg_message",
        "secagg_masked_sum",
        "secagg_received",
    ] {
        let left: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("select count(*) from {table}")))
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(left, 0, "{table} keeps rows after the rounds closed");
    }
    pool.close().await;
}

/// FedAvg under secure aggregation on the four node processes: every round sums the four
/// masked updates, the model learns, and afterwards no row of any table of the gateway's store
/// holds a node's update. Each node's last update is recomputed from its own saved state (its
/// trained model) and the global model it started from; neither it, nor its change to the
/// global model, appears as f32 bytes anywhere; every parameter file stored is a global model
/// (none names a sender, as every update in clear does); no task holds a result; and the
/// relay's state is gone with the rounds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fedavg_under_secure_aggregation_through_node_processes() {
    let app = TestApp::spawn_with(Backend::Sqlite, |s| s.federation.small_cell_threshold = 1).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in hospitals() {
        nodes.spawn(org, &app.base, &app.data_dir, work.path(), None);
    }
    let rounds = 3;
    let id = secure_fedavg(&gw, &app, rounds, 4, 30).await;
    let view = gw.wait_until_done(id, 240, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    let aggregated = aggregated_once_each(&view, rounds);
    for r in &aggregated {
        let sites = r["sites"].as_array().unwrap();
        assert!(sites.iter().all(|s| s["contributed"] == true), "{r}");
    }
    let loss = |evaluation: &Value| {
        evaluation["mean_validation"]["loss"]
            .as_f64()
            .unwrap_or_else(|| panic!("{evaluation}"))
    };
    let before = loss(&view["initial_evaluation"]);
    let after = loss(&aggregated.last().unwrap()["evaluation"]);
    assert!(after < before, "the model learns: {before} -> {after}");
    let stages = gw
        .audit(&[
            ("action", "study.round.secagg"),
            ("resource_id", &id.to_string()),
        ])
        .await;
    assert_eq!(
        stages.len() as u64,
        3 * rounds,
        "three relayed stages a round"
    );

    assert_no_update_stored(&app, work.path(), id, rounds).await;
}

/// A hospital whose node never runs: each round's key advertisement closes at its deadline
/// with the other three, who mask only among themselves, and the study completes on three of
/// four holders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_aggregation_completes_without_an_absent_holder() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    let absent = hospitals()[3];
    for org in hospitals().into_iter().filter(|o| *o != absent) {
        nodes.spawn(org, &app.base, &app.data_dir, work.path(), None);
    }
    let rounds = 2;
    let id = secure_fedavg(&gw, &app, rounds, 3, 30).await;
    let view = gw.wait_until_done(id, 240, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    for r in aggregated_once_each(&view, rounds) {
        for s in r["sites"].as_array().unwrap() {
            assert_eq!(s["contributed"], s["data_holder"] != absent, "{r}");
        }
    }
}

/// FedAvg under client-level DP realised as distributed DP, on the four node processes: each
/// node clips its update and adds its share of discrete Gaussian noise before masking; every
/// round sums the four; the gateway adds no noise. The study and the permit spend exactly
/// what `secagg`'s accounting of the distributed discrete Gaussian gives for the planned
/// minimum of survivors, and so does each node's own ledger; no row of any table of the
/// gateway's store holds a node's trained model or its update.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distributed_dp_under_secure_aggregation_through_node_processes() {
    use secagg::ddg::{accounting, mechanism::DdgPlan};
    let app = TestApp::spawn_with(Backend::Sqlite, |s| s.federation.small_cell_threshold = 1).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in hospitals() {
        nodes.spawn(org, &app.base, &app.data_dir, work.path(), None);
    }
    let (_, issued) = app
        .permit_with(
            &federation_application(&hospitals(), 200.0, "data_holder"),
            &json!({"decision": "approve", "dp_requirement": "client",
                    "require_secure_aggregation": true}),
        )
        .await;
    let permit = PermitId::parse(issued["id"].as_str().unwrap()).unwrap();
    let rounds = 2;
    let mut body = ditto_study(permit, rounds);
    body["strategy"] = json!({"name": "fedavg"});
    body["optimizer"] = json!({"name": "sgd", "lr": 0.5});
    body["local_steps"] = json!(10);
    body["dp"] = json!({"level": "client", "clip_norm": 2.0, "noise_multiplier": 0.5,
                        "min_survivors": 3, "modulus_bits": 24});
    body["release"] = json!("last");
    body["min_sites"] = json!(3);
    body["round_deadline_seconds"] = json!(30);
    body["secure_aggregation"] = json!({});
    let id = gw.submit(&body).await;
    let study = gw.researcher.study(id).await.unwrap();
    let plan: DdgPlan = serde_json::from_value(study["spec"]["dp"]["distributed"].clone())
        .unwrap_or_else(|e| panic!("{e}: {study}"));
    assert_eq!(
        (plan.params.min_survivors, plan.params.modulus_bits),
        (3, 24)
    );
    let view = gw.wait_until_done(id, 240, &nodes).await;
    nodes.kill().await;
    assert_eq!(view["status"], "completed", "{view}\n{}", nodes.logs());
    for r in aggregated_once_each(&view, rounds) {
        let sites = r["sites"].as_array().unwrap();
        assert!(sites.iter().all(|s| s["contributed"] == true), "{r}");
        // the holders' noise over the four invited
        let noise = plan.central_variance(4).sqrt() / 4.0;
        let reported = r["noise_std_on_mean"].as_f64().unwrap();
        assert!((reported - noise).abs() <= 1e-12 * noise, "{r}");
    }

    // the spend, as the distributed mechanism's own accounting gives it
    let planned = accounting::epsilon(&plan, rounds as u32, 1e-5)
        .unwrap()
        .epsilon;
    let spent = view["epsilon_spent"].as_f64().unwrap();
    assert!(
        (spent - planned).abs() <= 1e-12 * planned,
        "{spent} {planned}"
    );
    let p = gw.officer.permit(permit).await.unwrap();
    let permit_spent = p["privacy_budget"]["epsilon_spent"].as_f64().unwrap();
    assert!((permit_spent - planned).abs() <= 1e-9 * planned, "{p}");
    // each node's own accountant counted the same mechanism for the same rounds
    for org in hospitals() {
        let log =
            std::fs::read_to_string(work.path().join("nodes").join(org).join("node-log.jsonl"))
                .unwrap();
        let fits: Vec<Value> = log
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["study_id"] == id.to_string() && e["kind"] == "fit")
            .collect();
        assert_eq!(fits.len() as u64, rounds, "{org}: {log}");
        let last = fits.last().unwrap()["permit_epsilon"].as_f64().unwrap();
        assert!(
            (last - planned).abs() <= 1e-12 * planned,
            "{org}: {last} {planned}"
        );
    }

    assert_no_update_stored(&app, work.path(), id, rounds).await;
}

/// A hospital's link to the gateway that fails in the middle of a round: an HTTP proxy that
/// forwards every request of one node to the gateway at `gateway` unchanged, except the node's
/// secure-aggregation message whose `kind` is `stage` (`share_keys`, `masked_input`, `unmask`),
/// which it answers 503 as a proxy does when the gateway is out of reach. The node retries that
/// message until its task's deadline; it never arrives. Returns the proxy's base URL and how
/// many times it refused the message.
async fn link_failing_at(gateway: &str, stage: &'static str) -> (String, Arc<AtomicUsize>) {
    use axum::{
        body::{Body, Bytes},
        http::{header, HeaderMap, Method, StatusCode, Uri},
        response::{IntoResponse, Response},
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let refused = Arc::new(AtomicUsize::new(0));
    let count = refused.clone();
    let upstream = gateway.trim_end_matches('/').to_owned();
    let http = ehds_http::builder().build().unwrap();
    let forward = move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
        let (count, upstream, http) = (count.clone(), upstream.clone(), http.clone());
        async move {
            if method == Method::POST && uri.path().ends_with("/secagg") {
                let message: Value = serde_json::from_slice(&body).unwrap_or_default();
                if message["kind"] == stage {
                    count.fetch_add(1, Ordering::SeqCst);
                    return (StatusCode::SERVICE_UNAVAILABLE, "gateway unreachable")
                        .into_response();
                }
            }
            let path = uri.path_and_query().map_or("/", |p| p.as_str());
            let mut request = http.request(method, format!("{upstream}{path}")).body(body);
            for (name, value) in &headers {
                if name != header::HOST && name != header::CONTENT_LENGTH {
                    request = request.header(name, value);
                }
            }
            let answer = match request.send().await {
                Ok(answer) => answer,
                Err(e) => return (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
            };
            let mut response = Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                if name != header::CONTENT_LENGTH && name != header::TRANSFER_ENCODING {
                    response = response.header(name, value);
                }
            }
            match answer.bytes().await {
                Ok(bytes) => response.body(Body::from(bytes)).unwrap(),
                Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
            }
        }
    };
    let app = axum::Router::new().fallback(forward);
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, refused)
}

/// A one-round FedAvg study under secure aggregation (`k = 3`, `t = 2` on the four
/// hospitals, `min_sites = 3`, one attempt per round) whose `dropped` hospitals' links fail
/// when their nodes send the message of `stage`; every other request of theirs gets through.
struct Dropouts {
    app: TestApp,
    gw: Gateway,
    work: tempfile::TempDir,
    id: StudyId,
    /// The rounds view once the study ended.
    view: Value,
}

impl Dropouts {
    async fn run(stage: &'static str, dropped: &[&str]) -> Self {
        let app =
            TestApp::spawn_with(Backend::Sqlite, |s| s.federation.max_round_attempts = 1).await;
        let gw = Gateway::new(&app.base, app.dev.clone());
        let work = tempfile::tempdir().unwrap();
        let mut nodes = Nodes::new();
        let mut refused = vec![];
        for org in hospitals() {
            if dropped.contains(&org) {
                let (link, count) = link_failing_at(&app.base, stage).await;
                nodes.spawn_with_token(org, &link, &app.holder(org), work.path());
                refused.push((org, count));
            } else {
                nodes.spawn(org, &app.base, &app.data_dir, work.path(), None);
            }
        }
        // the stages after the first get 10 % of the round each (`stage_deadline`): 4 s here,
        // so that a node slowed by a loaded machine is not taken for a dropout
        let id = secure_fedavg(&gw, &app, 1, 3, 40).await;
        let view = gw.wait_until_done(id, 150, &nodes).await;
        nodes.kill().await;
        // each dropped node got as far as the stage and tried to send its message
        for (org, count) in refused {
            assert!(
                count.load(Ordering::SeqCst) > 0,
                "{org} never sent its {stage} message\n{view}\n{}",
                nodes.logs()
            );
        }
        Self {
            app,
            gw,
            work,
            id,
            view,
        }
    }

    /// The one attempt at round 1.
    fn round(&self) -> &Value {
        let rounds = self.view["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 1, "{}", self.view);
        &rounds[0]
    }

    /// How many holders each stage's close relayed to, in order, from the audit trail.
    async fn stages_closed(&self) -> Vec<(String, u64)> {
        let mut closed = self
            .gw
            .audit(&[
                ("action", "study.round.secagg"),
                ("resource_id", &self.id.to_string()),
            ])
            .await;
        closed.sort_by_key(|e| e.seq);
        closed
            .iter()
            .map(|e| {
                let stage = e.detail["stage"].as_str().unwrap().to_owned();
                (stage, e.detail["continuing"].as_u64().unwrap())
            })
            .collect()
    }

    /// Which holders' messages of `stage` the relay accepted, from the audit trail.
    async fn accepted(&self, stage: &str) -> Vec<String> {
        let mut from: Vec<String> = self
            .gw
            .audit(&[("action", "node.task.secagg"), ("outcome", "success")])
            .await
            .into_iter()
            .filter(|e| e.detail["stage"] == stage)
            .map(|e| e.actor.organisation.unwrap())
            .collect();
        from.sort();
        from
    }

    /// The lines of `org`'s node log about the study.
    fn node_log(&self, org: &str) -> Vec<Value> {
        let log = self
            .work
            .path()
            .join("nodes")
            .join(org)
            .join("node-log.jsonl");
        std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["study_id"] == self.id.to_string())
            .collect()
    }

    /// The round aggregated the updates of exactly `contributors` (and the rounds view says
    /// so), the study completed, and the dropped holders' own logs show their acceptance of
    /// the task and no refusal: to a node a failed link is a dropout, not a refusal.
    async fn assert_aggregated(&self, contributors: &[&str], dropped: &[&str]) {
        assert_eq!(self.view["status"], "completed", "{}", self.view);
        let round = self.round();
        assert_eq!(round["phase"], "aggregated", "{round}");
        for s in round["sites"].as_array().unwrap() {
            let holder = s["data_holder"].as_str().unwrap();
            assert_eq!(s["contributed"], contributors.contains(&holder), "{round}");
        }
        // the new model is the initial one plus the mean of the contributors' updates, as
        // each recomputes it from what it kept: the masks of every holder, dropped or not,
        // cancelled out of the sum, and nothing else is in it
        let start = checkpoint_model(&self.app, 0).await;
        let model = checkpoint_model(&self.app, 1).await;
        let mean = |orgs: &[&str]| -> Vec<f64> {
            let trained: Vec<Vec<f32>> = orgs
                .iter()
                .map(|o| trained_model(self.work.path(), o, self.id, 1))
                .collect();
            start
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let sum: f64 = trained.iter().map(|t| f64::from(t[i] - s)).sum();
                    f64::from(*s) + sum / orgs.len() as f64
                })
                .collect()
        };
        let close = |a: &[f64]| {
            a.iter()
                .zip(&model)
                .all(|(x, m)| (x - f64::from(*m)).abs() <= 1e-5 * (1.0 + x.abs()))
        };
        assert!(
            close(&mean(contributors)),
            "{model:?} {:?}",
            mean(contributors)
        );
        if contributors.len() < 4 {
            // the check tells the two apart
            assert!(!close(&mean(&hospitals())), "{model:?}");
        }
        for org in dropped {
            let fits: Vec<Value> = self
                .node_log(org)
                .into_iter()
                .filter(|e| e["kind"] == "fit")
                .collect();
            assert_eq!(fits.len(), 1, "{org}: {fits:?}");
            assert_eq!(fits[0]["decision"], "accepted", "{org}: {fits:?}");
        }
        assert_no_update_stored(&self.app, self.work.path(), self.id, 1).await;
    }

    /// The round could not be unmasked: it failed with the protocol's reason, audited with
    /// it; the study (one attempt per round) failed; the model is still the initial one; and
    /// nothing of any holder's update is stored, nor the relay's state.
    async fn assert_failed(&self, reason: &str) {
        assert_eq!(self.view["status"], "failed", "{}", self.view);
        let round = self.round();
        assert_eq!(round["phase"], "failed", "{round}");
        let why = round["reason"].as_str().unwrap();
        assert!(why.starts_with(reason), "{why}");
        let sites = round["sites"].as_array().unwrap();
        assert!(sites.iter().all(|s| s["contributed"] == false), "{round}");
        let failed = self
            .gw
            .audit(&[
                ("action", "study.round.fail"),
                ("resource_id", &self.id.to_string()),
            ])
            .await;
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert_eq!(failed[0].detail["reason"], why, "{failed:?}");
        assert_eq!(failed[0].detail["study_status"], "failed", "{failed:?}");
        // the study says why it ended: the last attempt's own reason
        let study = self.gw.researcher.study(self.id).await.unwrap();
        assert_eq!(
            study["status_reason"],
            format!("round 1 failed at attempt 1 of 1: {why}"),
            "{study}"
        );
        let pool = sqlx::sqlite::SqlitePool::connect(&self.app.database_url)
            .await
            .unwrap();
        let checkpoints: Vec<i64> = sqlx::query_scalar("select round from study_checkpoint")
            .fetch_all(&pool)
            .await
            .unwrap();
        pool.close().await;
        assert_eq!(checkpoints, [0], "no model came of the round");
        assert_no_update_stored(&self.app, self.work.path(), self.id, 1).await;
    }
}

/// A hospital whose link fails after it advertised its keys (its ShareKeys message never
/// arrives): the relay closes ShareKeys at its deadline with the other three, who mask only
/// among themselves; the round sums exactly their three updates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_aggregation_survives_a_holder_dropping_after_advertising_its_keys() {
    let dropped = hospitals()[0];
    let run = Dropouts::run("share_keys", &[dropped]).await;
    let others: Vec<&str> = hospitals().into_iter().filter(|o| *o != dropped).collect();
    run.assert_aggregated(&others, &[dropped]).await;
    assert_eq!(
        run.stages_closed().await,
        [
            ("advertise_keys".into(), 4),
            ("share_keys".into(), 3),
            ("masked_input".into(), 3)
        ]
    );
    assert_eq!(run.accepted("share_keys").await, sorted(&others));
}

/// A hospital whose link fails after ShareKeys (its masked input never arrives): the three
/// others' inputs hold pairwise masks shared with it, which the relay removes by rebuilding
/// its mask key from their shares; the round sums exactly their three updates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_aggregation_survives_a_holder_dropping_after_share_keys() {
    let dropped = hospitals()[1];
    let run = Dropouts::run("masked_input", &[dropped]).await;
    let others: Vec<&str> = hospitals().into_iter().filter(|o| *o != dropped).collect();
    run.assert_aggregated(&others, &[dropped]).await;
    assert_eq!(
        run.stages_closed().await,
        [
            ("advertise_keys".into(), 4),
            ("share_keys".into(), 4),
            ("masked_input".into(), 3)
        ]
    );
    assert_eq!(run.accepted("share_keys").await, sorted(&hospitals()));
    assert_eq!(run.accepted("masked_input").await, sorted(&others));
}

/// A hospital whose link fails after its masked input arrived (its unmasking answer never
/// does): its input is in the sum, and the other three's shares rebuild its self mask; the
/// round sums all four updates, the dropped holder's included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_aggregation_survives_a_holder_dropping_after_its_masked_input() {
    let dropped = hospitals()[2];
    let run = Dropouts::run("unmask", &[dropped]).await;
    let others: Vec<&str> = hospitals().into_iter().filter(|o| *o != dropped).collect();
    run.assert_aggregated(&hospitals(), &[dropped]).await;
    assert_eq!(
        run.stages_closed().await,
        [
            ("advertise_keys".into(), 4),
            ("share_keys".into(), 4),
            ("masked_input".into(), 4)
        ]
    );
    assert_eq!(run.accepted("masked_input").await, sorted(&hospitals()));
    assert_eq!(run.accepted("unmasking").await, sorted(&others));
}

/// Two of four hospitals whose links fail after their masked inputs arrived: each holder's
/// secrets were shared with its three neighbours at threshold 2, and with two answers only,
/// no survivor's self mask can be rebuilt. The relay fails the round at its deadline without
/// a sum, audited with the protocol's reason; no model comes of it and nothing of any
/// holder's update is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_aggregation_fails_a_round_too_few_holders_can_unmask() {
    let dropped = [hospitals()[0], hospitals()[3]];
    let run = Dropouts::run("unmask", &dropped).await;
    run.assert_failed("secure aggregation failed at unmasking: 1 shares of client")
        .await;
    assert_eq!(
        run.stages_closed().await,
        [
            ("advertise_keys".into(), 4),
            ("share_keys".into(), 4),
            ("masked_input".into(), 4)
        ]
    );
    let answered: Vec<&str> = hospitals()
        .into_iter()
        .filter(|o| !dropped.contains(o))
        .collect();
    assert_eq!(run.accepted("unmasking").await, sorted(&answered));
}

/// Three of four hospitals whose links fail after ShareKeys: one masked input arrives, below
/// the threshold of 2, so the relay fails the round when the inputs are due, before anyone is
/// asked to unmask; no model comes of it and nothing of any holder's update is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_aggregation_fails_a_round_too_few_masked_inputs_reach() {
    let dropped = &hospitals()[1..];
    let run = Dropouts::run("masked_input", dropped).await;
    run.assert_failed("secure aggregation stopped at stage masked_input: round MaskedInputCollection has 1 participants, 2 needed")
        .await;
    assert_eq!(
        run.stages_closed().await,
        [("advertise_keys".into(), 4), ("share_keys".into(), 4)]
    );
    assert_eq!(run.accepted("masked_input").await, [hospitals()[0]]);
}

/// `orgs` in order, as owned strings.
fn sorted(orgs: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = orgs.iter().map(|o| o.to_string()).collect();
    v.sort();
    v
}

/// A relay that tampers with what it relays (here the stored key broadcasts, rewritten by a
/// trigger as a compromised store could, into another session): every node refuses the keys,
/// leaves the round's secure aggregation, and records why in its own hash-chained log, whose
/// chain `node log verify` still finds intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_log_a_relay_that_tampers_with_the_keys() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let gw = Gateway::new(&app.base, app.dev.clone());
    let pool = sqlx::sqlite::SqlitePool::connect(&app.database_url)
        .await
        .unwrap();
    sqlx::query(
        "create trigger tamper_keys after insert on secagg_message when new.kind = 'keys' begin \
           update secagg_message set message = cast(json_set(cast(new.message as text), \
             '$.session[0]', (json_extract(cast(new.message as text), '$.session[0]') + 1) % 256) \
             as blob) \
           where round_id = new.round_id and client = new.client and kind = new.kind; \
         end",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    let work = tempfile::tempdir().unwrap();
    let mut nodes = Nodes::new();
    for org in hospitals() {
        nodes.spawn(org, &app.base, &app.data_dir, work.path(), None);
    }
    let id = secure_fedavg(&gw, &app, 1, 3, 30).await;
    let log_of = |org: &str| work.path().join("nodes").join(org).join("node-log.jsonl");
    let aborted = |org: &str| -> Option<Value> {
        std::fs::read_to_string(log_of(org))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["study_id"] == id.to_string() && e["decision"] == "aborted")
    };
    let until = Instant::now() + Duration::from_secs(120);
    while !hospitals().iter().all(|o| aborted(o).is_some()) {
        assert!(
            Instant::now() < until,
            "no node logged the tampered keys\n{}",
            nodes.logs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    nodes.kill().await;
    for org in hospitals() {
        let entry = aborted(org).unwrap();
        assert_eq!(entry["kind"], "fit", "{entry}");
        assert_eq!(entry["round"], 1, "{entry}");
        assert_eq!(entry["code"], "secagg_wrong_session", "{entry}");
        assert_eq!(
            entry["reason"], "message belongs to another session",
            "{entry}"
        );
        // the task was accepted first, then the round left: both on the chain
        let state = work.path().join("nodes").join(org);
        let out = std::process::Command::new(node_bin())
            .args(["log", "verify", "--state-dir"])
            .arg(&state)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert!(stdout.contains("chain intact"), "{stdout}");
    }
}
