//! A database written by an earlier version of the gateway (commit 1391c75, before audit actions
//! were typed) still opens: its audit chain verifies and every action it names is one the
//! gateway knows. How the fixture was made: tests/data/audit-trail-1391c75/SOURCE.md.

use std::{collections::BTreeSet, path::PathBuf};

use ehds_gateway::domain::audit::AuditAction;

use crate::helpers::*;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/audit-trail-1391c75/gateway.db")
}

/// The actions the fixture's trail holds, read from the file itself.
async fn stored_actions(db: &std::path::Path) -> Vec<String> {
    use sqlx::Row;
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect(&format!("sqlite://{}?mode=ro", db.display()))
        .await
        .expect("the fixture opens");
    let rows = sqlx::query("select action from audit_event order by seq")
        .fetch_all(&pool)
        .await
        .expect("the fixture has an audit table");
    pool.close().await;
    rows.iter().map(|r| r.get::<String, _>("action")).collect()
}

/// Actions the fixture is known to hold: requests of every resource, refused requests with and
/// without an action, a node's work and the round loop's own entries.
const EXPECTED: [&str; 12] = [
    "application.decide",
    "permit.suspend",
    "optout.import",
    "optout.filter",
    "study.create",
    "node.tasks",
    "node.task.parameters",
    "study.round.start",
    "study.stop",
    "http.get",
    "http.post",
    "audit.verify",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_trail_written_before_typed_actions_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gateway.db");
    std::fs::copy(fixture(), &db).expect("copy the fixture");

    let stored = stored_actions(&db).await;
    assert!(
        stored.len() >= 40,
        "the fixture holds {} entries",
        stored.len()
    );
    for action in &stored {
        let parsed = AuditAction::parse(action)
            .unwrap_or_else(|| panic!("stored action {action:?} does not parse"));
        assert_eq!(parsed.as_str(), action);
    }
    let kinds: BTreeSet<&str> = stored.iter().map(String::as_str).collect();
    for expected in EXPECTED {
        assert!(
            kinds.contains(expected),
            "the fixture lacks {expected}: {kinds:?}"
        );
    }

    // The gateway opens the file as it is and verifies the whole chain.
    let url = format!("sqlite://{}?mode=rwc", db.display());
    let app = TestApp::spawn_on(Backend::Sqlite, dir, url, |_| {}).await;
    let report = app.get("/v1/audit/verify", &app.auditor()).await;
    assert_eq!(report.status, 200, "{}", report.text);
    assert_eq!(report.body["valid"], true, "{}", report.text);
    assert!(
        report.body["entries_checked"].as_u64().unwrap() >= stored.len() as u64,
        "{}",
        report.text
    );
    // and exports it with the FHIR coding of each action
    let fhir = app
        .get("/v1/audit/events?format=fhir&limit=10000", &app.auditor())
        .await;
    assert_eq!(fhir.status, 200, "{}", fhir.text);
    let entries = fhir.body["entry"].as_array().unwrap();
    assert!(entries.len() >= stored.len());
    for (e, action) in entries.iter().zip(&stored) {
        let coding = AuditAction::parse(action).unwrap().fhir_action().code();
        assert_eq!(e["resource"]["action"], coding, "{action}");
    }
}
