//! The `ehds-gateway` program as an operator runs it: the node agent's and the demonstration's
//! former commands say where they went, and `ehds-gateway node ...` still runs the node agent
//! installed beside it (for one release).

use std::{os::unix::fs::PermissionsExt, path::PathBuf, process::Command};

/// Held by each test for its whole body: a program a test writes and then runs would be "busy"
/// (ETXTBSY) whenever another test's fork, taken while the file was open for writing, had not
/// yet exec'd.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A copy of the gateway program alone in a folder of its own.
fn lone_gateway(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("ehds-gateway");
    std::fs::copy(env!("CARGO_BIN_EXE_ehds-gateway"), &path).unwrap();
    path
}

#[test]
fn the_node_agent_and_the_demo_say_where_they_went() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let gateway = lone_gateway(dir.path());
    let out = Command::new(&gateway)
        .args(["node", "check", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("run `ehds-node check --json`"), "{stderr}");

    let out = Command::new(&gateway)
        .args(["demo", "--rounds", "2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cargo run --release -- demo"), "{stderr}");
}

#[test]
fn the_node_alias_runs_the_node_agent_beside_the_gateway() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let gateway = lone_gateway(dir.path());
    // a stand-in node agent that shows the arguments it was given
    let node = dir.path().join("ehds-node");
    std::fs::write(&node, "#!/bin/sh\necho \"node agent: $*\"\nexit 3\n").unwrap();
    std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(&gateway)
        .args(["node", "log", "verify", "--state-dir", "/var/lib/ehds-node"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "the agent's exit status");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "node agent: log verify --state-dir /var/lib/ehds-node\n"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("deprecated"));
}

#[test]
fn the_gateway_lists_its_own_commands_only() {
    let _serial = one_at_a_time();
    let out = Command::new(env!("CARGO_BIN_EXE_ehds-gateway"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        commands,
        ["serve", "token", "audit", "openapi", "model", "help"],
        "{help}"
    );
}
