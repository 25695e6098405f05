//! The audit trail: exports in every format, reads of audit data are audited, and tampering
//! behind the gateway's back (edit, delete, reorder) is detected by the API and by the offline
//! verifier, which name the first bad entry.

use serde_json::json;

use crate::both_backends;
use crate::helpers::*;

/// Runs SQL as someone with direct database access, bypassing the append-only triggers the way
/// an attacker with owner rights could.
pub(crate) async fn tamper(app: &TestApp, statements: &[&str]) {
    match app.backend {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&app.database_url).await.unwrap();
            let mut tx = pool.begin().await.unwrap();
            for drop in [
                "drop trigger audit_event_no_update",
                "drop trigger audit_event_no_delete",
                "drop trigger audit_event_tree_once",
            ] {
                sqlx::query(drop).execute(&mut *tx).await.unwrap();
            }
            for s in statements {
                sqlx::query(sqlx::AssertSqlSafe(*s))
                    .execute(&mut *tx)
                    .await
                    .unwrap();
            }
            tx.commit().await.unwrap();
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
            let mut tx = pool.begin().await.unwrap();
            sqlx::query("alter table audit_event disable trigger user")
                .execute(&mut *tx)
                .await
                .unwrap();
            for s in statements {
                sqlx::query(sqlx::AssertSqlSafe(*s))
                    .execute(&mut *tx)
                    .await
                    .unwrap();
            }
            sqlx::query("alter table audit_event enable trigger user")
                .execute(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }
    }
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

fn offline_verify(app: &TestApp) -> (i32, serde_json::Value) {
    let out = std::process::Command::new(ehds_tools::built_program("ehds-gateway"))
        .args(["audit", "verify", "--database-url", &app.database_url])
        .env_remove("EHDS_CONFIG")
        .output()
        .expect("the CLI runs");
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), report)
}

async fn an_edited_entry_is_named(app: TestApp) {
    some_history(&app).await;
    let ok = app.get("/v1/audit/verify", &app.auditor()).await;
    assert_eq!(ok.body["valid"], true, "{}", ok.text);
    let (code, report) = offline_verify(&app);
    assert_eq!((code, report["valid"].as_bool()), (0, Some(true)));

    tamper(
        &app,
        &["update audit_event set actor_sub = 'someone-else' where seq = 3"],
    )
    .await;
    let bad = app.get("/v1/audit/verify", &app.auditor()).await;
    assert_eq!(bad.body["valid"], false);
    assert_eq!(
        bad.body["first_bad"],
        json!({"seq": 3, "problem": "hash_mismatch"})
    );
    let (code, report) = offline_verify(&app);
    assert_eq!(code, 1);
    assert_eq!(report["first_bad"]["seq"], 3);
    assert_eq!(report["entries_checked"], 2);
}
both_backends!(an_edited_entry_is_named);

async fn a_deleted_entry_is_named(app: TestApp) {
    some_history(&app).await;
    tamper(&app, &["delete from audit_event where seq = 2"]).await;
    let (code, report) = offline_verify(&app);
    assert_eq!(code, 1);
    assert_eq!(
        report["first_bad"],
        json!({"seq": 3, "problem": {"sequence_gap": {"expected": 2}}})
    );
}
both_backends!(a_deleted_entry_is_named);

async fn reordered_entries_are_named(app: TestApp) {
    some_history(&app).await;
    // Swap entries 2 and 3 wholesale, sequence numbers included.
    tamper(
        &app,
        &[
            "update audit_event set seq = -2 where seq = 2",
            "update audit_event set seq = 2 where seq = 3",
            "update audit_event set seq = 3 where seq = -2",
        ],
    )
    .await;
    let bad = app.get("/v1/audit/verify", &app.auditor()).await;
    assert_eq!(bad.body["valid"], false);
    assert_eq!(bad.body["first_bad"]["seq"], 2, "{}", bad.text);
}
both_backends!(reordered_entries_are_named);

async fn the_trail_is_append_only_through_sql(app: TestApp) {
    some_history(&app).await;
    for sql in [
        "update audit_event set action = 'x'",
        "update audit_event set tree_nodes = null",
        "delete from audit_event",
    ] {
        let result = match app.backend {
            Backend::Sqlite => {
                let pool = sqlx::SqlitePool::connect(&app.database_url).await.unwrap();
                sqlx::query(sql).execute(&pool).await.map(|_| ())
            }
            Backend::Postgres => {
                let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
                sqlx::query(sql).execute(&pool).await.map(|_| ())
            }
        };
        assert!(
            result.unwrap_err().to_string().contains("append-only"),
            "{sql}"
        );
    }
    assert_eq!(
        app.get("/v1/audit/verify", &app.auditor()).await.body["valid"],
        true
    );
}
both_backends!(the_trail_is_append_only_through_sql);

async fn exports_come_in_every_format_and_reading_is_audited(app: TestApp) {
    some_history(&app).await;
    let auditor = app.auditor();
    let json_export = app.get("/v1/audit/events", &auditor).await;
    let entries = json_export.body.as_array().unwrap().clone();
    assert!(entries.len() >= 5);
    assert!(
        entries
            .windows(2)
            .all(|w| w[1]["prev_hash"] == w[0]["hash"]),
        "exported entries chain"
    );
    assert!(entries
        .iter()
        .any(|e| e["outcome"] == "denied" && e["http_status"] == 401));

    let jsonl = app.get("/v1/audit/events?format=jsonl", &auditor).await;
    assert_eq!(jsonl.headers["content-type"], "application/x-ndjson");
    assert_eq!(
        jsonl.text.lines().count(),
        entries.len() + 1,
        "the JSON export itself was audited"
    );

    let csv = app
        .get(
            "/v1/audit/events?format=csv&action=permit.suspend",
            &auditor,
        )
        .await;
    assert!(csv.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    let mut lines = csv.text.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("seq,recorded_at,actor_sub"));
    assert_eq!(lines.count(), 1);

    let fhir = app
        .get("/v1/audit/events?format=fhir&outcome=success", &auditor)
        .await;
    assert_eq!(fhir.headers["content-type"], "application/fhir+json");
    assert_eq!(fhir.body["resourceType"], "Bundle");
    let events = fhir.body["entry"].as_array().unwrap();
    assert!(!events.is_empty());
    for e in events {
        let r = &e["resource"];
        assert_eq!(r["resourceType"], "AuditEvent");
        for required in ["type", "recorded", "agent", "source", "action", "outcome"] {
            assert!(!r[required].is_null(), "AuditEvent.{required} missing");
        }
        assert_eq!(r["agent"][0]["requestor"], true);
        assert_eq!(r["source"]["observer"]["display"], "ehds-gateway");
    }
    let suspend = events
        .iter()
        .find(|e| e["resource"]["subtype"][0]["code"] == "permit.suspend")
        .unwrap();
    assert_eq!(suspend["resource"]["action"], "U");
    assert!(suspend["resource"]["agent"][0]["policy"][0]
        .as_str()
        .unwrap()
        .contains("/v1/permits/"));

    let reads = app.audit("action=audit.read").await;
    assert_eq!(reads.len(), 4, "each export is on the record");
    let bad = app.get("/v1/audit/events?format=xml", &auditor).await;
    assert_eq!((bad.status.as_u16(), bad.code()), (400, "invalid_query"));

    let ropa = app.get("/v1/audit/records-of-processing", &auditor).await;
    let record = &ropa.body[0];
    assert_eq!(record["purposes"], json!(["scientific_research"]));
    assert_eq!(
        record["categories_of_personal_data"][0]["article"],
        "51(1)(a)"
    );
    assert!(record["erasure"]["delete_spe_data_by"].is_string());
    assert!(record["controller"]["dpo_contact"].is_string());
}
both_backends!(exports_come_in_every_format_and_reading_is_audited);
