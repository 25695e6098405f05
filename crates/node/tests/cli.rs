//! The `ehds-node` program as a hospital runs it: its commands, and a preflight of the example
//! federation's records that contacts no gateway.

use std::process::Command;

const NODE: &str = env!("CARGO_BIN_EXE_ehds-node");

fn example(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/federation")
        .join(name)
}

#[test]
fn the_node_agent_offers_the_holders_commands() {
    let out = Command::new(NODE).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // the holder's commands, and none of the gateway's or the generators'
    assert_eq!(
        commands,
        [
            "run",
            "check",
            "export-model",
            "evaluate-model",
            "fedmap-finetune",
            "log",
            "help"
        ],
        "{help}"
    );
}

#[test]
fn check_reads_a_hospitals_bundle_without_a_gateway() {
    let out = Command::new(NODE)
        .args(["check", "--json", "--spec"])
        .arg(example("heart_disease.features.json"))
        .arg("--fhir")
        .arg(example("cleveland.json"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["cohort"]["rows"].as_u64().unwrap();
    assert!(
        rows > 250,
        "the Cleveland site holds 303 patients: {report}"
    );

    // a run without credentials is refused before anything is read or sent
    let out = Command::new(NODE)
        .args([
            "run",
            "--gateway",
            "http://127.0.0.1:9",
            "--org",
            "cleveland",
        ])
        .arg("--fhir")
        .arg(example("cleveland.json"))
        .args(["--state-dir", "/nonexistent/ehds-node-state"])
        .env_remove("EHDS_NODE_TOKEN")
        .env_remove("EHDS_NODE_ISSUER")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("give exactly one of --issuer"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_agent_stops_on_sigterm() {
    // an agent that cannot reach its gateway keeps retrying; SIGTERM (`docker stop`, systemd)
    // ends it with status 0 even as the container's first process
    let state = tempfile::tempdir().unwrap();
    let mut agent = Command::new(NODE)
        .args([
            "run",
            "--gateway",
            "http://127.0.0.1:9",
            "--org",
            "cleveland",
        ])
        .arg("--fhir")
        .arg(example("cleveland.json"))
        .arg("--state-dir")
        .arg(state.path())
        .args(["--token", "not-a-real-token", "--policy"])
        .arg(example("../node-policy.toml"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(
        agent.try_wait().unwrap().is_none(),
        "the agent keeps retrying"
    );
    let kill = Command::new("kill")
        .args(["-TERM", &agent.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(status) = agent.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running 10 s after SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
}
