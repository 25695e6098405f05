//! A database written by an earlier version of the gateway (commit 1391c75, before audit actions
//! were typed) still opens: its audit chain verifies and every action it names is one the
//! gateway knows. How the fixture was made: tests/data/audit-trail-1391c75/SOURCE.md.

use std::{collections::BTreeSet, path::PathBuf};

use ehds_core::domain::audit::AuditAction;

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
    // Its applications moved into the procedure: decided ones count as published, open ones
    // as complete on receipt, with their decision clock running from then.
    let apps = app.get("/v1/applications", &app.officer()).await;
    assert_eq!(apps.status, 200, "{}", apps.text);
    let apps = apps.body.as_array().unwrap();
    assert!(!apps.is_empty());
    for a in apps {
        match a["status"].as_str().unwrap() {
            "approved" | "rejected" => {
                assert!(a["procedure"]["published_at"].is_string(), "{a}");
                assert!(a["clocks"]["next_due"].is_null(), "{a}");
            }
            "assessing" => assert!(a["clocks"]["decision_due"].is_string(), "{a}"),
            "withdrawn" => {}
            other => panic!("a legacy application reads as {other}"),
        }
    }
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

    // Migration 0003 made its entries the first leaves of the audit tree, in order: the signed
    // checkpoint's root is the tree recomputed here from the exported entries, the tree of the
    // entries before the migration is a prefix of it, and the offline check passes.
    let key = app.get("/v1/audit/log/key", &app.auditor()).await.text;
    let verifier = translog::NoteVerifier::from_key_string(key.trim()).unwrap();
    let note = app
        .get("/v1/audit/log/checkpoint", &app.auditor())
        .await
        .text;
    let opened = translog::Note::open(&note, &[verifier]).expect("the checkpoint verifies");
    let cp = translog::Checkpoint::parse(&opened.text).unwrap();
    let exported: Vec<ehds_core::domain::audit::AuditEntry> = serde_json::from_value(
        app.get("/v1/audit/events?limit=10000", &app.auditor())
            .await
            .body,
    )
    .unwrap();
    let before = stored.len() as u64;
    assert!(cp.size > before && exported.len() as u64 >= cp.size);
    let mut tree = translog::MemoryTree::new();
    for e in &exported[..cp.size as usize] {
        tree.append(&e.canonical_bytes());
    }
    assert_eq!(tree.root(), cp.root);
    let proof = app
        .get(
            &format!("/v1/audit/log/consistency?from={before}&to={}", cp.size),
            &app.auditor(),
        )
        .await;
    assert_eq!(proof.status, 200, "{}", proof.text);
    let hashes: Vec<translog::Hash> = proof.body["hashes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            use base64::Engine;
            let b = base64::engine::general_purpose::STANDARD
                .decode(h.as_str().unwrap())
                .unwrap();
            translog::Hash::try_from(b.as_slice()).unwrap()
        })
        .collect();
    translog::verify_consistency(
        before,
        cp.size,
        &hashes,
        &tree.root_at(before).unwrap(),
        &cp.root,
    )
    .expect("the pre-migration tree is a prefix of today's");
    let kept = app.data_dir.join("kept.checkpoint");
    std::fs::write(&kept, &note).unwrap();
    let out = std::process::Command::new(ehds_tools::built_program("ehds-gateway"))
        .args([
            "audit",
            "verify",
            "--database-url",
            &app.database_url,
            "--checkpoint",
        ])
        .arg(&kept)
        .args(["--key", key.trim()])
        .env_remove("EHDS_CONFIG")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The success entries of the fixture: action, resource type and detail, as stored text.
async fn stored_details(db: &std::path::Path) -> Vec<(String, String, String)> {
    use sqlx::Row;
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect(&format!("sqlite://{}?mode=ro", db.display()))
        .await
        .expect("the fixture opens");
    let rows = sqlx::query(
        "select action, resource_type, detail from audit_event where outcome = 'success' \
         order by seq",
    )
    .fetch_all(&pool)
    .await
    .expect("the fixture has an audit table");
    pool.close().await;
    rows.iter()
        .map(|r| (r.get("action"), r.get("resource_type"), r.get("detail")))
        .collect()
}

fn keys(detail: &serde_json::Value) -> Vec<String> {
    detail
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// The typed details write, for every kind of entry the fixture holds, the keys the gateway
/// wrote before they were typed, in the same order (the hash covers the bytes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_details_write_the_keys_of_the_entries_before_them() {
    use ehds_core::domain::{
        audit_details::*,
        dp_requirement::DpRequirement,
        optout::FilterPolicy,
        study::{DpLevel, DpPlan},
        ApplicationId, Purpose, StudyId,
    };
    use serde_json::to_value;

    let now = chrono::Utc::now();
    let dp = DpPlan {
        level: DpLevel::Client,
        clip_norm: 1.0,
        noise_multiplier: 1.0,
        target_epsilon: None,
        sampling_rate: 1.0,
        steps_per_round: 1,
        delta: 1e-5,
        distributed: None,
    };
    let typed = |v: serde_json::Value| keys(&v);
    // keys added after the fixture was written come last: the fixture's entries are a prefix
    let typed_before = |v: serde_json::Value, added: &[&str]| {
        let k = keys(&v);
        let kept = k.len() - added.len();
        assert_eq!(&k[kept..], added, "added keys come last: {v}");
        k[..kept].to_vec()
    };
    let expected: Vec<(&str, &str, Vec<String>)> = vec![
        (
            "application.create",
            "application",
            typed(
                to_value(ApplicationCreated {
                    title: "",
                    purposes: &[],
                    categories: &[],
                })
                .unwrap(),
            ),
        ),
        (
            "application.decide",
            "application",
            typed(
                to_value(ApplicationDecided {
                    decision: "",
                    reason: None,
                })
                .unwrap(),
            ),
        ),
        (
            "application.decide",
            "permit",
            typed_before(
                to_value(PermitIssued::new(
                    ApplicationId::new(),
                    now,
                    false,
                    DpRequirement::default(),
                ))
                .unwrap(),
                &["dp_requirement"],
            ),
        ),
        (
            "application.list",
            "application",
            typed(to_value(Listed { returned: 0 }).unwrap()),
        ),
        (
            "permit.list",
            "permit",
            typed(to_value(Listed { returned: 0 }).unwrap()),
        ),
        (
            "permit.check",
            "permit",
            typed(
                to_value(PermitChecked {
                    allowed: true,
                    reasons: &[],
                    purpose: Purpose::ScientificResearch,
                    categories: &[],
                    data_holders: &[],
                    epsilon: None,
                })
                .unwrap(),
            ),
        ),
        (
            "optout.register",
            "opt_out",
            typed(
                to_value(OptOutRegistered {
                    registry_version: 0,
                    effective_at: now,
                    channel: "",
                })
                .unwrap(),
            ),
        ),
        (
            "optout.withdraw",
            "opt_out",
            typed(
                to_value(OptOutWithdrawn {
                    registry_version: 0,
                    effective_at: now,
                })
                .unwrap(),
            ),
        ),
        (
            "optout.import",
            "opt_out_registry",
            typed(
                to_value(OptOutsImported {
                    format: "",
                    registered: 0,
                    withdrawn: 0,
                    unchanged: 0,
                    registry_version: 0,
                })
                .unwrap(),
            ),
        ),
        (
            "optout.filter",
            "permit",
            typed(
                to_value(OptOutsFiltered {
                    registry_version: 0,
                    reference_time: now,
                    policy: FilterPolicy::default(),
                    exception_applied: false,
                    checked: 0,
                    excluded: 0,
                })
                .unwrap(),
            ),
        ),
        (
            "study.create",
            "study",
            typed(
                to_value(StudyCreated {
                    title: "",
                    purpose: Purpose::ScientificResearch,
                    categories: &[],
                    data_holders: &[],
                    strategy: "",
                    rounds: 0,
                    dp: &dp,
                    epsilon_planned: 0.0,
                    reproducible_noise: false,
                })
                .unwrap(),
            ),
        ),
        (
            "study.round.start",
            "study",
            typed(
                to_value(RoundStarted {
                    round: 0,
                    attempt: 0,
                    participants: &[],
                    registry_version: 0,
                    epsilon_round: 0.0,
                    epsilon_remaining: 0.0,
                    deadline: now,
                })
                .unwrap(),
            ),
        ),
        (
            "study.stop",
            "study",
            typed(
                to_value(StudyHalted {
                    reason: "",
                    discarded_round: None,
                    rounds_done: 0,
                })
                .unwrap(),
            ),
        ),
        (
            "node.tasks",
            "task",
            typed(to_value(TasksDelivered { delivered: vec![] }).unwrap()),
        ),
        (
            "node.task.parameters",
            "task",
            typed(
                to_value(ParametersSent {
                    study: StudyId::new(),
                    round: 0,
                    bytes: 0,
                })
                .unwrap(),
            ),
        ),
        (
            "audit.read",
            "audit_log",
            typed(
                to_value(AuditExported {
                    returned: 0,
                    format: String::new(),
                    first_seq: None,
                    last_seq: None,
                })
                .unwrap(),
            ),
        ),
        (
            "audit.verify",
            "audit_log",
            typed(
                to_value(ChainVerified {
                    valid: true,
                    entries_checked: 0,
                    first_bad: None,
                })
                .unwrap(),
            ),
        ),
    ];
    let transition = |change: PermitChange| {
        to_value(PermitTransition {
            from: 0,
            to: 0,
            status: "",
            change,
        })
        .unwrap()
    };
    let transitions = [
        (
            "permit.suspend",
            transition(PermitChange::Suspended { reason: "" }),
        ),
        (
            "permit.reinstate",
            transition(PermitChange::Reinstated { reason: None }),
        ),
        (
            "permit.revoke",
            transition(PermitChange::Revoked { reason: "" }),
        ),
    ];

    let stored = stored_details(&fixture()).await;
    for (action, resource_type, expected) in &expected {
        let details: Vec<serde_json::Value> = stored
            .iter()
            .filter(|(a, r, _)| a == action && r == resource_type)
            .map(|(_, _, d)| serde_json::from_str(d).unwrap())
            .collect();
        assert!(
            !details.is_empty(),
            "the fixture lacks {action} on {resource_type}"
        );
        for d in details {
            assert_eq!(&keys(&d), expected, "{action} on {resource_type}: {d}");
        }
    }
    for (action, typed) in transitions {
        let details: Vec<serde_json::Value> = stored
            .iter()
            .filter(|(a, _, _)| a == action)
            .map(|(_, _, d)| serde_json::from_str(d).unwrap())
            .collect();
        assert!(!details.is_empty(), "the fixture lacks {action}");
        for d in details {
            assert_eq!(keys(&d), keys(&typed), "{action}: {d}");
            assert_eq!(keys(&d["change"]), keys(&typed["change"]), "{action}: {d}");
        }
    }
}

/// A database whose tree hashes were kept in `audit_log_tree` (migrations 0003-0005) moves them
/// into the rows they belong to (0006): every entry that had tree rows holds exactly the nodes
/// its leaf completed, level 0 first; entries without them stay empty for start-up to fill; the
/// old table is gone. The trail is 13 entries with a tree over the first 11 (sizes with several
/// trailing one bits), on both backends.
async fn tree_rows_move_into_the_audit_entries(backend: Backend) {
    use sqlx::migrate::Migrator;
    let dir = tempfile::tempdir().unwrap();
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(match backend {
        Backend::Sqlite => "migrations/sqlite",
        Backend::Postgres => "migrations/postgres",
    });
    // the migrations as a gateway before 0006 had them
    let before = dir.path().join("before-0006");
    std::fs::create_dir(&before).unwrap();
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if name.as_str() < "0006" {
            std::fs::copy(&path, before.join(name)).unwrap();
        }
    }
    let (entries, with_tree) = (13u64, 11u64);
    let mut tree = translog::MemoryTree::new();
    for seq in 1..=with_tree {
        tree.append(&seq.to_be_bytes());
    }
    let stored = |seq: u64| -> Vec<u8> {
        let leaf = seq - 1;
        (0..=leaf.trailing_ones())
            .flat_map(|level| {
                translog::SubtreeHashes::perfect(&tree, level, leaf >> level).unwrap()
            })
            .collect()
    };
    let insert_entry =
        "insert into audit_event (seq, event_id, recorded_at, actor_sub, actor_roles, \
        action, outcome, resource_type, detail, prev_hash, hash) \
        values ($1, $2, $3, 'someone', '[]', 'permit.read', 'success', 'permit', '{}', 'p', 'h')";
    let insert_node = "insert into audit_log_tree (level, idx, hash) values ($1, $2, $3)";
    let nodes: Vec<(i32, i64, Vec<u8>)> = (0..4u32)
        .flat_map(|level| {
            let tree = &tree;
            (0..with_tree >> level).map(move |idx| {
                let hash = translog::SubtreeHashes::perfect(tree, level, idx).unwrap();
                (level as i32, idx as i64, hash.to_vec())
            })
        })
        .collect();
    macro_rules! migrate_and_check {
        ($pool:expr) => {{
            let pool = $pool;
            Migrator::new(before.as_path())
                .await
                .unwrap()
                .run(&pool)
                .await
                .unwrap();
            for seq in 1..=entries as i64 {
                sqlx::query(insert_entry)
                    .bind(seq)
                    .bind(uuid::Uuid::new_v4())
                    .bind(chrono::Utc::now())
                    .execute(&pool)
                    .await
                    .unwrap();
            }
            for (level, idx, hash) in &nodes {
                sqlx::query(insert_node)
                    .bind(level)
                    .bind(idx)
                    .bind(hash)
                    .execute(&pool)
                    .await
                    .unwrap();
            }
            Migrator::new(folder.as_path())
                .await
                .unwrap()
                .run(&pool)
                .await
                .unwrap();
            let rows: Vec<(i64, Option<Vec<u8>>)> =
                sqlx::query_as("select seq, tree_nodes from audit_event order by seq")
                    .fetch_all(&pool)
                    .await
                    .unwrap();
            assert_eq!(rows.len() as u64, entries);
            for (seq, nodes) in rows {
                let seq = seq as u64;
                if seq <= with_tree {
                    assert_eq!(nodes, Some(stored(seq)), "entry {seq}");
                } else {
                    assert_eq!(nodes, None, "entry {seq}");
                }
            }
            let gone = sqlx::query("select 1 from audit_log_tree")
                .fetch_all(&pool)
                .await;
            assert!(gone.is_err(), "audit_log_tree is dropped");
            pool.close().await;
        }};
    }
    match backend {
        Backend::Sqlite => {
            let url = format!(
                "sqlite://{}?mode=rwc",
                dir.path().join("gateway.db").display()
            );
            migrate_and_check!(sqlx::SqlitePool::connect(&url).await.unwrap())
        }
        Backend::Postgres => {
            let url = fresh_postgres_database().await;
            migrate_and_check!(sqlx::PgPool::connect(&url).await.unwrap())
        }
    }
}

#[tokio::test]
async fn tree_rows_move_into_the_audit_entries_on_sqlite() {
    tree_rows_move_into_the_audit_entries(Backend::Sqlite).await;
}

#[tokio::test]
async fn tree_rows_move_into_the_audit_entries_on_postgres() {
    tree_rows_move_into_the_audit_entries(Backend::Postgres).await;
}
