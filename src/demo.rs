//! `ehds-tools demo` (`cargo run --release -- demo`): the whole EHDS secondary-use flow on the bundled example federation,
//! from one command. A gateway on the embedded SQLite database in development mode, four node
//! agents as separate processes over real HTTP, each reading its hospital's FHIR Bundle; then
//! opt-out import, application, approval, a federated study with client-level differential
//! privacy, per-round figures, model export after the output check, and audit verification.

use std::{path::PathBuf, sync::Arc, time::Duration};

use anyhow::{bail, ensure, Context};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use ehds_core::{
    dev_issuer::DevIssuer,
    domain::{
        application::{
            ApplicantRequest, ApplicationKind, ApplicationRequest, BudgetRequest, PeriodRequest,
            ResearchFlag,
        },
        StudyId,
    },
};
use ehds_gateway::{configuration::Settings, startup::Application};
use ehds_node::client::{DevTokens, GatewayClient, OptOutImport};

/// The example federation's hospitals and the member states the example assigns them.
const HOSPITALS: [(&str, &str); 4] = [
    ("cleveland", "DE"),
    ("hungarian", "HU"),
    ("switzerland", "AT"),
    ("va", "NL"),
];

#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// The example federation (FHIR bundles, feature specification, opt-outs).
    #[arg(long, default_value = "examples/federation")]
    pub federation: PathBuf,
    /// Working directory of the demo; emptied first.
    #[arg(long, default_value = "data/demo")]
    pub data_dir: PathBuf,
    /// `ditto` (logistic regression), `fenda_fl` (FENDA-FL, two small extractors) or `hpfl`
    /// (shared 13 -> 10 backbone, a personal plug-in head per hospital).
    #[arg(long, default_value = "ditto")]
    pub strategy: String,
    #[arg(long, default_value_t = 15)]
    pub rounds: u64,
    /// Epsilon the whole study may spend (client-level DP; the permit grants 10).
    #[arg(long, default_value_t = 8.0)]
    pub target_epsilon: f64,
    /// Training and split seed (the DP noise stays secret whatever it is).
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

/// The demo's callers, each a client of the same gateway.
struct Callers {
    researcher: GatewayClient,
    officer: GatewayClient,
    registrar: GatewayClient,
    auditor: GatewayClient,
}

impl Callers {
    fn new(gateway: &GatewayClient, dev: Arc<DevIssuer>) -> Self {
        let as_ = |sub: &str, role: &str, org: &str| {
            gateway.with_tokens(DevTokens::new(dev.clone(), sub, role, Some(org)))
        };
        Self {
            researcher: as_("alice", "researcher", "uni-a"),
            officer: as_("olaf", "hdab_officer", "hdab-de"),
            registrar: as_("rita", "optout_registrar", "hdab-de"),
            auditor: as_("audrey", "auditor", "hdab-de"),
        }
    }
}

fn spawn_node(args: &DemoArgs, base: &str, audience: &str, org: &str) -> anyhow::Result<Child> {
    let dir = args.data_dir.join("nodes").join(org);
    std::fs::create_dir_all(&dir)?;
    let log = std::fs::File::create(dir.join("node.log"))?;
    Command::new(std::env::current_exe()?)
        .args([
            "node",
            "run",
            "--gateway",
            base,
            "--org",
            org,
            "--poll-wait",
            "10",
        ])
        .arg("--fhir")
        .arg(args.federation.join(format!("{org}.json")))
        .arg("--state-dir")
        .arg(&dir)
        .arg("--dev-key-dir")
        .arg(&args.data_dir)
        .args(["--dev-audience", audience])
        .env("RUST_LOG", "info")
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .context("starting a node agent")
}

fn study_body(args: &DemoArgs, permit: &str, features: Value) -> anyhow::Result<Value> {
    let (model, strategy, lr) = match args.strategy.as_str() {
        "ditto" => (
            json!({"architecture": "logistic"}),
            json!({"name": "ditto", "lambda": 0.01}),
            0.1,
        ),
        "fenda_fl" => (
            json!({"architecture": "fenda", "hidden": [5], "local_hidden": [5]}),
            json!({"name": "fenda_fl"}),
            1e-3,
        ),
        "hpfl" => (
            json!({"architecture": "head_net", "hidden": [10]}),
            json!({"name": "hpfl"}),
            1e-3,
        ),
        other => bail!("--strategy must be ditto, fenda_fl or hpfl, not {other}"),
    };
    Ok(json!({
        "title": "Fed-Heart-Disease: coronary artery disease risk across four hospitals",
        "permit_id": permit,
        "purpose": "scientific_research",
        "categories": ["ehr_data"],
        "data_holders": HOSPITALS.iter().map(|h| h.0).collect::<Vec<_>>(),
        "feature_spec": features,
        "model": model,
        "strategy": strategy,
        "optimizer": {"name": "adamw", "lr": lr},
        "local_steps": 100,
        "batch_size": 4,
        "rounds": args.rounds,
        "min_sites": 3,
        "round_deadline_seconds": 120,
        "dp": {"level": "client", "clip_norm": 1.0, "target_epsilon": args.target_epsilon},
        "seed": args.seed,
    }))
}

fn fmt(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |x| format!("{x:.3}"))
}

/// A count of the rounds view, or `-` where the small-cell rule withheld it.
fn count(v: &Value) -> String {
    v.as_u64().map_or_else(|| "-".to_owned(), |n| n.to_string())
}

pub async fn run(args: DemoArgs, mut settings: Settings) -> anyhow::Result<i32> {
    ensure!(
        args.federation.join("heart_disease.features.json").exists(),
        "{} does not hold the example federation (run from the repository root or pass --federation)",
        args.federation.display()
    );
    if args.data_dir.exists() {
        std::fs::remove_dir_all(&args.data_dir)
            .with_context(|| format!("emptying {}", args.data_dir.display()))?;
    }
    settings.listen = "127.0.0.1:0".parse()?;
    settings.public_url = None;
    settings.data_dir = args.data_dir.clone();
    settings.database_url = None;
    settings.federation.tick_millis = 100;
    let app = Application::build(settings.clone(), true).await?;
    let base = app.base_url().to_owned();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until_stopped(async {
        let _ = stopped.await;
    }));
    println!(
        "gateway   {base} (SQLite in {}, development mode)",
        args.data_dir.display()
    );
    let dev = DevIssuer::load_or_create(&args.data_dir, &base, &settings.auth.audience)?;
    let callers = Callers::new(&GatewayClient::new(&base)?, Arc::new(dev));
    let outcome = walk(&args, &base, &settings.auth.audience, &callers).await;
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
    outcome
}

/// Art. 69: a health data request answered by federated statistics under output checking: the
/// holders' nodes compute their parts, the gateway pools and checks them.
async fn data_request(c: &Callers, features: &Value) -> anyhow::Result<()> {
    let mut request = application();
    request.title = "Coronary disease by sex across four hospitals".into();
    request.research_flags = vec![];
    request.privacy_budget.epsilon = 1.0;
    request.privacy_budget.unit = "record".into();
    request.justification =
        "Counts of coronary artery disease by sex, for a public-health report.".into();
    request.kind = ApplicationKind::DataRequest;
    request.statistics = Some(serde_json::from_value(json!({
        "feature_spec": features,
        "queries": [{"statistic": "count", "group_by": [
            {"column": "sex", "levels": [0, 1]},
            {"column": "coronary_heart_disease", "levels": [0, 1]}]}]
    }))?);
    let submitted = c
        .researcher
        .create_application(&request)
        .await
        .context("data request")?;
    let permit = c
        .officer
        .approve_application(submitted.id)
        .await
        .context("data request decision")?;
    let filter = permit.to_string();
    let run = loop {
        let runs = c
            .researcher
            .statistics_runs(&[("permit_id", &filter)])
            .await
            .context("statistics")?;
        match runs.get(0) {
            Some(r) if r["status"] != "computing" => break r.clone(),
            _ => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    };
    println!(
        "request   data request {} (Art. 69): {} by {} of 4 hospitals, output checked: {}",
        submitted.id,
        run["statistic"].as_str().unwrap_or("?"),
        run["holders_answered"],
        run["status"].as_str().unwrap_or("?")
    );
    let cells = run["answer"]["values"]["cells"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    println!("          sex     disease  count");
    for cell in &cells {
        let level = |i: usize| cell["labels"][i]["value"].as_f64().unwrap_or(f64::NAN);
        println!(
            "          {:<6}  {:<7}  {}",
            if level(0) == 1.0 { "male" } else { "female" },
            if level(1) == 1.0 { "yes" } else { "no" },
            count(&cell["value"]["n"])
        );
    }
    Ok(())
}

fn application() -> ApplicationRequest {
    let now = chrono::Utc::now();
    ApplicationRequest {
        title: "Federated heart-disease risk model".into(),
        applicant: ApplicantRequest {
            organisation: "uni-a".into(),
            public_body: false,
            user_kinds: vec![],
        },
        purposes: vec!["scientific_research".into()],
        research_flags: vec![ResearchFlag::AlgorithmTraining],
        categories: vec!["ehr_data".into()],
        data_holders: HOSPITALS.iter().map(|h| h.0.to_owned()).collect(),
        member_states: HOSPITALS.iter().map(|h| h.1.to_owned()).collect(),
        requested_period: PeriodRequest {
            start: now,
            end: now + chrono::Duration::days(365),
        },
        privacy_budget: BudgetRequest {
            epsilon: 10.0,
            delta: 1e-5,
            unit: "data_holder".into(),
        },
        justification: "Train a risk model across four hospitals without moving any record.".into(),
        optout_exception: None,
        declares_no_prohibited_use: true,
        kind: Default::default(),
        statistics: None,
        datasets: vec![],
    }
}

async fn walk(args: &DemoArgs, base: &str, audience: &str, c: &Callers) -> anyhow::Result<i32> {
    // Art. 71: opt-outs registered before the permit is issued bind it.
    let optouts = std::fs::read(args.federation.join("optouts.ndjson"))?;
    let imported = c
        .registrar
        .import_opt_outs(OptOutImport::Ndjson(optouts.into()))
        .await
        .context("opt-out import")?;
    println!(
        "opt-outs  {} registered (registry version {})",
        imported["registered"], imported["registry_version"]
    );

    let application = c
        .researcher
        .create_application(&application())
        .await
        .context("application")?;
    println!("apply     application {}", application.id);
    let permit = c
        .officer
        .approve_application(application.id)
        .await
        .context("decision")?;
    println!("permit    {permit} issued: epsilon 10 per data holder, delta 1e-5, 4 hospitals");

    let mut nodes = Vec::new();
    for (org, _) in HOSPITALS {
        nodes.push(spawn_node(args, base, audience, org)?);
    }
    println!(
        "nodes     {} node agents polling over HTTP (logs in {}/nodes)",
        nodes.len(),
        args.data_dir.display()
    );

    let features: Value = serde_json::from_slice(&std::fs::read(
        args.federation.join("heart_disease.features.json"),
    )?)?;
    data_request(c, &features).await?;

    let study = c
        .researcher
        .create_study(&study_body(args, &permit.to_string(), features)?)
        .await
        .context("study")?;
    let study_id = study["id"]
        .as_str()
        .and_then(|s| StudyId::parse(s).ok())
        .context("study id")?;
    println!(
        "study     {study_id}: {} with client-level DP, {} rounds, noise multiplier {:.2}, epsilon planned {:.2}",
        args.strategy, args.rounds, study["spec"]["dp"]["noise_multiplier"].as_f64().unwrap_or(0.0),
        study["epsilon_planned"].as_f64().unwrap_or(0.0)
    );

    let bar = ProgressBar::new(args.rounds);
    bar.set_style(
        ProgressStyle::with_template("rounds    [{bar:30}] {pos}/{len} {msg}")?
            .progress_chars("=> "),
    );
    let rounds = loop {
        let r = c
            .researcher
            .study_rounds(study_id)
            .await
            .context("rounds")?;
        let done = r["rounds"].as_array().map_or(0, |a| {
            a.iter().filter(|x| x["phase"] == "aggregated").count()
        });
        bar.set_position(done as u64);
        bar.set_message(format!(
            "epsilon {:.2}",
            r["epsilon_spent"].as_f64().unwrap_or(0.0)
        ));
        let status = r["status"].as_str().unwrap_or("").to_owned();
        if status != "running" {
            bar.finish();
            if status != "completed" {
                bail!(
                    "the study ended {status}: {}",
                    c.researcher.study(study_id).await.context("study")?["status_reason"]
                );
            }
            break r;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    for mut n in nodes {
        let _ = n.kill().await;
    }

    println!("\nround  val acc  test acc  test bal.acc  eps round  eps total  samples  excluded");
    if let Some(e) = rounds["initial_evaluation"].as_object() {
        println!(
            "{:>5}  {:>7}  {:>8}  {:>12}",
            0,
            fmt(&e["mean_validation_accuracy"]),
            fmt(&e["mean_test_accuracy"]),
            fmt(&e["mean_test_balanced_accuracy"])
        );
    }
    for r in rounds["rounds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["phase"] == "aggregated")
    {
        let e = &r["evaluation"];
        println!(
            "{:>5}  {:>7}  {:>8}  {:>12}  {:>9}  {:>9}  {:>7}  {:>8}",
            r["round"].to_string(),
            fmt(&e["mean_validation_accuracy"]),
            fmt(&e["mean_test_accuracy"]),
            fmt(&e["mean_test_balanced_accuracy"]),
            fmt(&r["epsilon_round"]),
            fmt(&r["epsilon_total"]),
            count(&r["samples"]),
            count(&r["excluded_subjects"])
        );
    }
    println!("(accuracy: uniform mean over the hospitals of each one's personalised model on its own held-out data;");
    println!(
        " a count shown as - is withheld: it would disclose a hospital's count below {})",
        rounds["small_cell_threshold"]
    );

    let model = c
        .researcher
        .study_model(study_id)
        .await
        .context("model export refused")?;
    let model_path = args.data_dir.join("model.safetensors");
    std::fs::write(&model_path, &model.bytes)?;
    println!(
        "\nmodel     round {} ({}) passed the output check; written to {} (sha256 {})",
        model
            .round
            .map_or_else(|| "?".to_owned(), |r| r.to_string()),
        model.selection.as_deref().unwrap_or("?"),
        model_path.display(),
        model.digest
    );

    let verify = c.auditor.verify_audit().await.context("audit verify")?;
    let permit = permit.to_string();
    let export = c
        .auditor
        .audit_events_fhir(&[("limit", "10000"), ("permit_id", &permit)])
        .await
        .context("audit export")?;
    let export_path = args.data_dir.join("audit-fhir-bundle.json");
    std::fs::write(&export_path, serde_json::to_vec_pretty(&export)?)?;
    println!(
        "audit     chain {} over {} entries; the permit's {} AuditEvents written to {}",
        if verify["valid"] == true {
            "verified"
        } else {
            "BROKEN"
        },
        verify["entries_checked"],
        export["entry"].as_array().map_or(0, Vec::len),
        export_path.display()
    );
    println!("          verify offline with: ehds-gateway audit verify --database-url sqlite://{}/ehds-gateway.db", args.data_dir.display());
    Ok(if verify["valid"] == true { 0 } else { 1 })
}
