//! The README's run command, shortened: `ehds-tools demo` walks the whole flow on the bundled
//! example federation (gateway, four node agent processes, an Art. 69 data request answered by
//! federated statistics, study, model export, audit verify)
//! and exits 0 only when the study completed and the audit chain verified.

use std::process::Command;

#[test]
fn the_demo_runs_the_whole_flow_on_the_example_federation() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("demo");
    let out = Command::new(env!("CARGO_BIN_EXE_ehds-tools"))
        .args(["demo", "--rounds", "2"])
        .arg("--federation")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/federation"))
        .arg("--data-dir")
        .arg(&data)
        .env_remove("EHDS_CONFIG")
        .output()
        .expect("the demo starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed\n{stdout}\n{stderr}");
    for line in [
        "opt-outs  6 registered",
        "(Art. 69): count by 4 of 4 hospitals, output checked: released",
        "passed the output check",
        "chain verified",
    ] {
        assert!(stdout.contains(line), "`{line}` missing from\n{stdout}");
    }
    // two aggregated rounds with their epsilon, the model and the audit export on disk
    let rounds: Vec<&str> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with(['1', '2']) && l.split_whitespace().count() == 8)
        .collect();
    assert_eq!(rounds.len(), 2, "{stdout}");
    let model = std::fs::read(data.join("model.safetensors")).expect("model written");
    fl_engine::load_safetensors(&model).expect("a valid parameter file");
    let bundle: serde_json::Value = serde_json::from_slice(
        &std::fs::read(data.join("audit-fhir-bundle.json")).expect("audit export written"),
    )
    .unwrap();
    let events = bundle["entry"].as_array().expect("a Bundle");
    assert!(events
        .iter()
        .any(|e| e["resource"]["subtype"][0]["code"] == "study.round.aggregate"));
}
