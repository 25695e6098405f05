//! Fleet benchmark: one federated study through one gateway, and through two and three
//! replicas of it on one PostgreSQL behind a round-robin TCP balancer, as the Kubernetes
//! deployment runs it.
//!
//! Each run starts everything as separate processes from the release binaries: the gateway
//! replicas (`ehds-gateway serve --dev`, one data directory, one fresh database), the balancer
//! (in this process), and four node agents (`ehds-node run`) reading the example federation's
//! FHIR Bundles. It imports the example opt-outs, issues a permit and times one study from
//! submission to completion: FedAvg on the logistic model, client-level DP, 12 rounds, all
//! four holders in every round. The node agents spread over the replicas (a connection goes to
//! the next replica), so results, long polls and the round loop live on different replicas:
//! what is measured is how fast a change on one replica reaches the others.
//!
//! Run (release binaries first):
//!
//! ```text
//! cargo build --release -p ehds-gateway -p ehds-node
//! cargo bench --bench fleet -- [--replicas 1,2,3] [--rounds 12] [--repeat 3]
//!     [--gateway-bin PATH]
//! ```
//!
//! `--gateway-bin` times another gateway build with the same nodes and study (an earlier
//! version, for the ratio against it); each configuration alternates with the others
//! `--repeat` times and the medians are printed, with the ratio of each to one replica.
//! `TEST_POSTGRES_URL` names the administrative PostgreSQL URL (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); a database is created per run and dropped.

#[path = "../tests/support/balancer.rs"]
mod balancer;
#[path = "common/env.rs"]
mod env;
#[path = "../tests/api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{bail, Context};
use balancer::Balancer;
use ehds_core::{
    dev_issuer::DevIssuer,
    domain::{PermitId, StudyId},
};
use ehds_node::client::{DevTokens, GatewayClient, OptOutImport};
use helpers::{
    example_features, example_federation_dir, federation_application, free_port, EXAMPLE_HOSPITALS,
};
use serde_json::{json, Value};
use tokio::process::{Child, Command};

fn hospitals() -> Vec<&'static str> {
    EXAMPLE_HOSPITALS.iter().map(|h| h.0).collect()
}

struct Options {
    replicas: Vec<usize>,
    rounds: u64,
    repeat: usize,
    gateways: Vec<PathBuf>,
}

fn options() -> anyhow::Result<Options> {
    let mut o = Options {
        replicas: vec![1, 2, 3],
        rounds: 12,
        repeat: 3,
        gateways: vec![ehds_tools::built_program("ehds-gateway")],
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--replicas" => {
                o.replicas = value()?
                    .split(',')
                    .map(|n| n.parse().context("--replicas 1,2,3"))
                    .collect::<anyhow::Result<_>>()?
            }
            "--rounds" => o.rounds = value()?.parse()?,
            "--repeat" => o.repeat = value()?.parse()?,
            "--gateway-bin" => o.gateways.push(value()?.into()),
            // cargo bench passes --bench
            "--bench" => {}
            other => bail!("unknown option {other}"),
        }
    }
    Ok(o)
}

/// Processes killed when dropped.
struct Processes(Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.start_kill();
        }
    }
}

/// One study through `replicas` processes of `gateway`; seconds from submission to completion.
async fn run_once(gateway: &Path, replicas: usize, rounds: u64) -> anyhow::Result<f64> {
    let dir = tempfile::tempdir()?;
    let data_dir = dir.path().join("gateway");
    let (database_url, database) = env::create_postgres_database().await?;
    let ports: Vec<u16> = (0..replicas).map(|_| free_port()).collect();
    let balancer = Balancer::start(ports.clone()).await;
    let base = format!("http://127.0.0.1:{}", balancer.port);
    let mut processes = Processes(vec![]);
    for (i, port) in ports.iter().enumerate() {
        let log = std::fs::File::create(dir.path().join(format!("gateway-{i}.log")))?;
        processes.0.push(
            Command::new(gateway)
                .args(["serve", "--dev"])
                .env("EHDS_DATABASE_URL", &database_url)
                .env("EHDS_DATA_DIR", &data_dir)
                .env("EHDS_LISTEN", format!("127.0.0.1:{port}"))
                .env("EHDS_PUBLIC_URL", &base)
                .env("HOSTNAME", format!("replica-{i}"))
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .kill_on_drop(true)
                .spawn()?,
        );
        // one after the other: the first creates the keys in the data directory
        let direct = GatewayClient::new(&format!("http://127.0.0.1:{port}"))?;
        let until = Instant::now() + Duration::from_secs(60);
        while direct.readyz().await.is_err() {
            if Instant::now() > until {
                bail!("replica {i} did not start");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let dev = Arc::new(DevIssuer::load_or_create(&data_dir, &base, "ehds-gateway")?);
    let client = GatewayClient::new(&base)?;
    let as_ = |sub: &str, role: &str, org: &str| {
        client.with_tokens(DevTokens::new(dev.clone(), sub, role, Some(org)))
    };
    let (researcher, officer, registrar) = (
        as_("alice", "researcher", "uni-a"),
        as_("olaf", "hdab_officer", "hdab-de"),
        as_("rita", "optout_registrar", "hdab-de"),
    );
    registrar
        .import_opt_outs(OptOutImport::Ndjson(
            std::fs::read(example_federation_dir().join("optouts.ndjson"))?.into(),
        ))
        .await?;
    let application = researcher
        .create_application(&serde_json::from_value(federation_application(
            &hospitals(),
            100.0,
            "data_holder",
        ))?)
        .await?;
    let permit = officer.approve_application(application.id).await?;
    for org in hospitals() {
        let state = dir.path().join("nodes").join(org);
        std::fs::create_dir_all(&state)?;
        let log = std::fs::File::create(dir.path().join(format!("node-{org}.log")))?;
        processes.0.push(
            Command::new(ehds_tools::built_program("ehds-node"))
                .args(["run", "--gateway", &base, "--org", org, "--poll-wait", "5"])
                .arg("--fhir")
                .arg(example_federation_dir().join(format!("{org}.json")))
                .arg("--dev-key-dir")
                .arg(&data_dir)
                .arg("--state-dir")
                .arg(&state)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .kill_on_drop(true)
                .spawn()?,
        );
    }
    let started = Instant::now();
    let created = researcher.create_study(&study(permit, rounds)?).await?;
    let id = StudyId::parse(created["id"].as_str().context("study id")?)
        .map_err(|(_, e)| anyhow::anyhow!(e))?;
    let until = started + Duration::from_secs(900);
    let view = loop {
        let view = researcher.study_rounds(id).await?;
        if view["status"] != "running" {
            break view;
        }
        if Instant::now() > until {
            bail!("the study did not finish in 900 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let seconds = started.elapsed().as_secs_f64();
    if view["status"] != "completed" {
        bail!("the study ended {}: {view}", view["status"]);
    }
    drop(processes);
    drop(balancer);
    tokio::time::sleep(Duration::from_millis(300)).await;
    env::drop_postgres_database(&database).await?;
    Ok(seconds)
}

fn study(permit: PermitId, rounds: u64) -> anyhow::Result<Value> {
    Ok(json!({
        "title": "Fleet benchmark",
        "permit_id": permit,
        "purpose": "scientific_research",
        "categories": ["ehr_data"],
        "data_holders": hospitals(),
        "feature_spec": example_features(),
        "model": {"architecture": "logistic"},
        "strategy": {"name": "fedavg"},
        "optimizer": {"name": "sgd", "lr": 0.1},
        "local_steps": 5,
        "batch_size": 16,
        "rounds": rounds,
        "min_sites": 4,
        "round_deadline_seconds": 300,
        "dp": {"level": "client", "clip_norm": 1.0, "target_epsilon": 50.0},
        "seed": 7
    }))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let o = options()?;
    println!(
        "fleet: {} rounds, {} repeats, load {}",
        o.rounds,
        o.repeat,
        env::loadavg()
    );
    let mut times: Vec<Vec<Vec<f64>>> = vec![vec![vec![]; o.replicas.len()]; o.gateways.len()];
    for r in 0..o.repeat {
        for (g, gateway) in o.gateways.iter().enumerate() {
            for (k, &n) in o.replicas.iter().enumerate() {
                let s = run_once(gateway, n, o.rounds).await?;
                println!("  repeat {r} gateway {g} replicas {n}: {s:.2} s");
                times[g][k].push(s);
            }
        }
    }
    println!("\n| gateway | replicas | median s | vs one replica |");
    println!("|---|---:|---:|---:|");
    for (g, gateway) in o.gateways.iter().enumerate() {
        let one = median(times[g][0].clone());
        for (k, &n) in o.replicas.iter().enumerate() {
            let m = median(times[g][k].clone());
            println!("| {} | {n} | {m:.2} | {:.2}x |", gateway.display(), m / one);
        }
    }
    Ok(())
}
