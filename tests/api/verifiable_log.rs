//! The verifiable audit log: signed checkpoints that verify with the served key, inclusion
//! proofs of every entry, consistency proofs between checkpoints, the precise refusals of bad
//! proof parameters, `audit verify --checkpoint` against truncation and rewriting behind the
//! gateway's back, and the witness.

use base64::Engine;
use ehds_core::domain::audit::AuditEntry;
use serde_json::{json, Value};
use translog::{Checkpoint, Hash, MemoryTree, Note, NoteVerifier};

use crate::audit::tamper;
use crate::both_backends;
use crate::helpers::*;

fn b64(s: &str) -> Hash {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64");
    Hash::try_from(bytes.as_slice()).expect("32 bytes")
}

fn hashes(body: &Value) -> Vec<Hash> {
    body["hashes"]
        .as_array()
        .expect("hashes")
        .iter()
        .map(|h| b64(h.as_str().unwrap()))
        .collect()
}

async fn log_key(app: &TestApp) -> (String, NoteVerifier) {
    let r = app.get("/v1/audit/log/key", &app.auditor()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let key = r.text.trim().to_owned();
    let verifier = NoteVerifier::from_key_string(&key).expect("a verifier key");
    (key, verifier)
}

/// The signed checkpoint now: the note and what it says, opened with the served key.
async fn checkpoint(app: &TestApp) -> (String, Checkpoint) {
    let (_, verifier) = log_key(app).await;
    let r = app.get("/v1/audit/log/checkpoint", &app.auditor()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    let opened = Note::open(&r.text, &[verifier]).expect("the note verifies");
    (
        r.text.clone(),
        Checkpoint::parse(&opened.text).expect("a checkpoint"),
    )
}

async fn some_history(app: &TestApp) {
    let permit = app.permit().await;
    let pid = permit["id"].as_str().unwrap();
    app.post(
        &format!("/v1/permits/{pid}/suspend"),
        &app.officer(),
        &json!({"reason": "finding"}),
    )
    .await;
    app.get("/v1/permits", "not-a-token").await;
}

async fn entries(app: &TestApp) -> Vec<AuditEntry> {
    app.audit("")
        .await
        .into_iter()
        .map(|e| serde_json::from_value(e).expect("an exported entry"))
        .collect()
}

async fn the_checkpoint_verifies_with_the_served_key(app: TestApp) {
    some_history(&app).await;
    let (key, verifier) = log_key(&app).await;
    let (note, cp) = checkpoint(&app).await;
    assert_eq!(cp.origin, verifier.name());
    assert!(key.starts_with(&format!("{}+", cp.origin)));
    assert!(cp.origin.ends_with("/audit"), "{}", cp.origin);
    // The checkpoint covers every entry so far, its own read included (an export returns the
    // entries before its own).
    let all = entries(&app).await;
    assert_eq!(cp.size, all.len() as u64);
    // The root is the tree of the exported entries, recomputed here.
    let mut tree = MemoryTree::new();
    for e in &all[..cp.size as usize] {
        tree.append(&e.canonical_bytes());
    }
    assert_eq!(tree.root(), cp.root);
    // A note signed by another key is refused.
    let other = translog::NoteSigner::from_seed(&cp.origin, &[9; 32]).unwrap();
    assert!(Note::open(&note, &[other.verifier()]).is_err());
    // Reading checkpoints and proofs is on the record.
    let reads = app.audit("action=audit.proof").await;
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0]["detail"]["proof"], "checkpoint");
}
both_backends!(the_checkpoint_verifies_with_the_served_key);

async fn every_entry_has_an_inclusion_proof(app: TestApp) {
    some_history(&app).await;
    let (_, cp) = checkpoint(&app).await;
    let all = entries(&app).await;
    assert!(cp.size >= 5);
    for e in all.iter().filter(|e| e.seq as u64 <= cp.size) {
        let index = e.seq as u64 - 1;
        let r = app
            .get(
                &format!("/v1/audit/log/inclusion?index={index}&size={}", cp.size),
                &app.auditor(),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let leaf = translog::hash_leaf(&e.canonical_bytes());
        assert_eq!(b64(r.body["leaf_hash"].as_str().unwrap()), leaf);
        translog::verify_inclusion(index, cp.size, &leaf, &hashes(&r.body), &cp.root)
            .unwrap_or_else(|err| panic!("entry {}: {err}", e.seq));
    }
}
both_backends!(every_entry_has_an_inclusion_proof);

async fn a_newer_checkpoint_is_consistent_with_an_older_one(app: TestApp) {
    let (_, old) = checkpoint(&app).await;
    some_history(&app).await;
    let (_, new) = checkpoint(&app).await;
    assert!(new.size > old.size);
    let r = app
        .get(
            &format!(
                "/v1/audit/log/consistency?from={}&to={}",
                old.size, new.size
            ),
            &app.auditor(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    translog::verify_consistency(old.size, new.size, &hashes(&r.body), &old.root, &new.root)
        .expect("consistent");
    // The same size and the empty tree need no hashes.
    for (from, to) in [(new.size, new.size), (0, new.size)] {
        let r = app
            .get(
                &format!("/v1/audit/log/consistency?from={from}&to={to}"),
                &app.auditor(),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["hashes"], json!([]));
    }
    // A forged older root does not verify.
    let r = app
        .get(
            &format!(
                "/v1/audit/log/consistency?from={}&to={}",
                old.size, new.size
            ),
            &app.auditor(),
        )
        .await;
    assert!(translog::verify_consistency(
        old.size,
        new.size,
        &hashes(&r.body),
        &[7; 32],
        &new.root
    )
    .is_err());
}
both_backends!(a_newer_checkpoint_is_consistent_with_an_older_one);

async fn bad_proof_parameters_are_refused_precisely(app: TestApp) {
    let (_, cp) = checkpoint(&app).await;
    let n = cp.size;
    let far = n + 1000;
    for (path, code) in [
        (
            format!("/v1/audit/log/inclusion?index=0&size={far}"),
            "size_beyond_tree",
        ),
        (
            format!("/v1/audit/log/inclusion?index={n}&size={n}"),
            "index_out_of_range",
        ),
        (
            "/v1/audit/log/inclusion?index=0&size=0".to_owned(),
            "index_out_of_range",
        ),
        (
            format!("/v1/audit/log/consistency?from=1&to={far}"),
            "size_beyond_tree",
        ),
        (
            format!("/v1/audit/log/consistency?from={}&to={n}", n + 1),
            "sizes_out_of_order",
        ),
        (
            "/v1/audit/log/inclusion?index=-1&size=1".to_owned(),
            "invalid_query",
        ),
        (
            "/v1/audit/log/consistency?from=1".to_owned(),
            "invalid_query",
        ),
        (
            "/v1/audit/log/consistency?from=1&to=99999999999999999999999".to_owned(),
            "invalid_query",
        ),
    ] {
        let r = app.get(&path, &app.auditor()).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (400, code),
            "{path}: {}",
            r.text
        );
        assert_eq!(
            r.headers["content-type"], "application/problem+json",
            "{path}"
        );
    }
    // Refusals are audited under the action.
    let refused = app.audit("action=audit.proof&outcome=denied").await;
    assert!(refused.len() >= 5, "{refused:?}");
}
both_backends!(bad_proof_parameters_are_refused_precisely);

struct Cli {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn cli(args: &[&str]) -> Cli {
    let out = tokio::process::Command::new(ehds_tools::built_program("ehds-gateway"))
        .args(args)
        .env_remove("EHDS_CONFIG")
        .output()
        .await
        .expect("the CLI runs");
    Cli {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Keeps the checkpoint and the verifier key in files, as an auditor would.
async fn keep_checkpoint(app: &TestApp, dir: &std::path::Path) -> (String, String, Checkpoint) {
    let (key, _) = log_key(app).await;
    let (note, cp) = checkpoint(app).await;
    let note_path = dir.join("kept.checkpoint");
    std::fs::write(&note_path, note).unwrap();
    let key_path = dir.join("gateway.vkey");
    std::fs::write(&key_path, format!("{key}\n")).unwrap();
    (
        note_path.display().to_string(),
        key_path.display().to_string(),
        cp,
    )
}

async fn verify_with(app: &TestApp, note: &str, key: &str) -> Cli {
    cli(&[
        "audit",
        "verify",
        "--database-url",
        &app.database_url,
        "--checkpoint",
        note,
        "--key",
        key,
    ])
    .await
}

async fn verify_checkpoint_detects_removed_last_entries(app: TestApp) {
    let kept = tempfile::tempdir().unwrap();
    some_history(&app).await;
    let (note, key, cp) = keep_checkpoint(&app, kept.path()).await;
    app.get("/v1/audit/verify", &app.auditor()).await;

    let ok = verify_with(&app, &note, &key).await;
    assert_eq!(ok.code, 0, "{}{}", ok.stdout, ok.stderr);
    let report: Value = serde_json::from_str(&ok.stdout).unwrap();
    assert_eq!(report["valid"], true);
    assert_eq!(report["log"]["checkpoint"]["size"], cp.size);
    assert!(report["log"]["current"]["size"].as_u64().unwrap() > cp.size);
    assert_eq!(report["log"]["stored_tree_matches"], true);
    // The key may also be given inline.
    let inline = std::fs::read_to_string(&key).unwrap();
    assert_eq!(verify_with(&app, &note, inline.trim()).await.code, 0);

    // Removing the last entries leaves a chain that still verifies on its own.
    let keep = cp.size - 3;
    tamper(
        &app,
        &[&format!("delete from audit_event where seq > {keep}")],
    )
    .await;
    let (code, chain_only) = {
        let r = cli(&["audit", "verify", "--database-url", &app.database_url]).await;
        (r.code, r.stdout)
    };
    assert_eq!(code, 0, "the chain alone cannot see it: {chain_only}");
    let bad = verify_with(&app, &note, &key).await;
    assert_eq!(bad.code, 1, "{}{}", bad.stdout, bad.stderr);
    assert!(
        bad.stderr
            .contains(&format!("holds {keep} entries, fewer than the {}", cp.size)),
        "{}",
        bad.stderr
    );
    let report: Value = serde_json::from_str(&bad.stdout).unwrap();
    assert_eq!(report["valid"], false);
    assert_eq!(report["chain"]["valid"], true);
    assert_eq!(report["log"]["valid"], false);
}
both_backends!(verify_checkpoint_detects_removed_last_entries);

async fn verify_checkpoint_detects_a_rewritten_entry(app: TestApp) {
    let kept = tempfile::tempdir().unwrap();
    some_history(&app).await;
    let (note, key, _) = keep_checkpoint(&app, kept.path()).await;
    assert_eq!(verify_with(&app, &note, &key).await.code, 0);
    tamper(
        &app,
        &["update audit_event set actor_sub = 'someone-else' where seq = 3"],
    )
    .await;
    let bad = verify_with(&app, &note, &key).await;
    assert_eq!(bad.code, 1, "{}{}", bad.stdout, bad.stderr);
    assert!(
        bad.stderr
            .contains("no longer hash to the checkpoint's root"),
        "{}",
        bad.stderr
    );
    // A checkpoint signed by another key is refused outright.
    let other = translog::NoteSigner::from_seed("elsewhere/audit", &[3; 32]).unwrap();
    let other_key = other.verifier().to_key_string();
    let refused = verify_with(&app, &note, &other_key).await;
    assert_eq!(refused.code, 2, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("signature does not verify"),
        "{}",
        refused.stderr
    );
}
both_backends!(verify_checkpoint_detects_a_rewritten_entry);

async fn witness(app: &TestApp, key: &str, dir: &std::path::Path) -> Cli {
    cli(&[
        "audit",
        "witness",
        "--url",
        &app.base,
        "--key",
        key,
        "--dir",
        &dir.display().to_string(),
        "--token",
        &app.auditor(),
        "--once",
    ])
    .await
}

async fn the_witness_keeps_checkpoints_and_refuses_an_inconsistent_one(app: TestApp) {
    let (key, verifier) = log_key(&app).await;
    let dir = tempfile::tempdir().unwrap();
    let first = witness(&app, &key, dir.path()).await;
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert!(first.stdout.contains("First"), "{}", first.stdout);
    some_history(&app).await;
    let second = witness(&app, &key, dir.path()).await;
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    assert!(second.stdout.contains("Extended"), "{}", second.stdout);
    let kept_note = std::fs::read_to_string(dir.path().join("checkpoint")).unwrap();
    let kept = Checkpoint::parse(&Note::open(&kept_note, &[verifier]).unwrap().text).unwrap();
    assert!(dir
        .path()
        .join(format!("checkpoint.{}", kept.size))
        .exists());

    // Rewrite history: drop the last entries and the tree over them, then let the log grow
    // past the kept size again with other entries.
    let keep = kept.size - 2;
    // (the tree's hashes live in the rows: they go with them)
    tamper(
        &app,
        &[&format!("delete from audit_event where seq > {keep}")],
    )
    .await;
    for _ in 0..4 {
        let r = app.get("/v1/audit/verify", &app.auditor()).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let refused = witness(&app, &key, dir.path()).await;
    assert_eq!(refused.code, 1, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("inconsistent log"),
        "{}",
        refused.stderr
    );
    // The kept checkpoint is left as it was, as evidence.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("checkpoint")).unwrap(),
        kept_note
    );

    // A witness with another key refuses the gateway's checkpoint.
    let other = translog::NoteSigner::from_seed(verifier_name(&key), &[5; 32]).unwrap();
    let fresh = tempfile::tempdir().unwrap();
    let wrong = witness(&app, &other.verifier().to_key_string(), fresh.path()).await;
    assert_eq!(wrong.code, 1, "{}{}", wrong.stdout, wrong.stderr);
    assert!(!fresh.path().join("checkpoint").exists());
}
both_backends!(the_witness_keeps_checkpoints_and_refuses_an_inconsistent_one);

fn verifier_name(key: &str) -> &str {
    key.split('+').next().unwrap()
}

/// The log's origin and key come from the configuration: a signer key string for the origin
/// signs the checkpoints, and its verifier key is the one served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_origin_and_key_come_from_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let signer = translog::NoteSigner::from_seed("hdab.example/audit", &[42; 32]).unwrap();
    let key_file = dir.path().join("log-signer.key");
    std::fs::write(&key_file, signer.to_key_string() + "\n").unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("gateway.db").display()
    );
    let app = TestApp::spawn_on(Backend::Sqlite, dir, url, |s| {
        s.audit.log_origin = Some("hdab.example/audit".into());
        s.audit.log_key_file = Some(key_file.clone());
    })
    .await;
    let (key, _) = log_key(&app).await;
    assert_eq!(key, signer.verifier().to_key_string());
    let (_, cp) = checkpoint(&app).await;
    assert_eq!(cp.origin, "hdab.example/audit");
    assert!(!app.data_dir.join("audit-log.key").exists());
}

/// Two replicas starting together on a database whose older entries are not leaves yet (as an
/// earlier gateway version left it): one extends the tree, the other waits for it and finds
/// the tree complete; both start, and the tree matches the entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_extend_the_tree_once() {
    let app = TestApp::spawn(Backend::Postgres).await;
    some_history(&app).await;
    let written = entries(&app).await.len();
    tamper(&app, &["update audit_event set tree_nodes = null"]).await;
    let url = app.database_url.clone();
    let (a, _b) = tokio::join!(
        TestApp::spawn_on(
            Backend::Postgres,
            tempfile::tempdir().unwrap(),
            url.clone(),
            |_| {}
        ),
        TestApp::spawn_on(Backend::Postgres, tempfile::tempdir().unwrap(), url, |_| {}),
    );
    let kept = tempfile::tempdir().unwrap();
    let (note, key, cp) = keep_checkpoint(&a, kept.path()).await;
    assert!(cp.size as usize >= written, "{} < {written}", cp.size);
    let verified = verify_with(&a, &note, &key).await;
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
}
