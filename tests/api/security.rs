//! Attacks from outside: oversized and forged credentials, hostile request ids, control
//! characters, slow or idle connections, floods without credentials, stored-timestamp rewrites,
//! readable data files and probing for ids. Each refusal is precise and bounded, and nothing a
//! caller without credentials sends can grow the audit trail beyond the documented bound.

use std::{
    io::{Read, Write},
    time::{Duration, Instant},
};

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde_json::json;

use crate::audit::tamper;
use crate::both_backends;
use crate::helpers::*;

/// A token whose header names `kid` and whose signature is garbage: no credentials at all.
fn forged_token(kid: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": kid}).to_string());
    format!("{header}.e30.AAAA")
}

/// Entries and stored bytes of the audit trail, read straight from the database.
async fn audit_size(app: &TestApp) -> (i64, i64) {
    let q = "select count(*), coalesce(sum(length(actor_sub) + length(actor_roles) \
             + coalesce(length(actor_organisation), 0) + length(action) + length(resource_type) \
             + coalesce(length(resource_id), 0) + coalesce(length(permit_id), 0) \
             + coalesce(length(request_id), 0) + length(detail) + 200), 0) from audit_event";
    match app.backend {
        Backend::Sqlite => {
            let pool = sqlx::SqlitePool::connect(&app.database_url).await.unwrap();
            sqlx::query_as(q).fetch_one(&pool).await.unwrap()
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
            let (n, bytes): (i64, Option<i64>) = sqlx::query_as(sqlx::AssertSqlSafe(
                q.replace("coalesce(sum(", "cast(coalesce(sum(")
                    .replace("+ 200), 0)", "+ 200), 0) as bigint)"),
            ))
            .fetch_one(&pool)
            .await
            .unwrap();
            (n, bytes.unwrap_or(0))
        }
    }
}

async fn caller_controlled_text_never_reaches_a_401_or_the_trail(app: TestApp) {
    let kid = "K".repeat(6000);
    let r = app.get("/v1/permits", &forged_token(&kid)).await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "unknown_signing_key"));
    assert!(!r.text.contains("KKKK"), "the kid is echoed: {}", r.text);
    assert!(r.text.len() < 1024, "{}", r.text.len());

    let long = format!("{}.e30.AAAA", "A".repeat(9000));
    let r = app.get("/v1/permits", &long).await;
    assert_eq!((r.status.as_u16(), r.code()), (401, "invalid_token"));

    let garbage = app.get("/v1/permits", "not-a-jws").await;
    assert_eq!(garbage.status, 401);

    let refusals = app.audit("outcome=denied").await;
    assert!(refusals.len() >= 2, "{refusals:?}");
    for e in &refusals {
        let text = e.to_string();
        assert!(!text.contains("KKKK") && text.len() < 2048, "{text}");
        assert_eq!(e["actor"]["sub"], "anonymous");
    }
}
both_backends!(caller_controlled_text_never_reaches_a_401_or_the_trail);

async fn oversized_heads_are_refused_with_a_problem(app: TestApp) {
    // Between the documented limit (16 KiB) and the connection's read buffer: a problem.
    let r = app
        .send(
            app.client
                .get(format!("{}/v1/permits", app.base))
                .header("x-padding", "p".repeat(20 * 1024)),
        )
        .await;
    assert_eq!(r.status, 431);
    assert_eq!(r.code(), "header_too_large");
    assert_eq!(
        r.headers["content-type"], "application/problem+json",
        "{:?}",
        r.headers
    );
    // Far beyond it (the 300 kB kid of the report): refused before it is even parsed.
    let r = app
        .client
        .get(format!("{}/v1/permits", app.base))
        .bearer_auth(forged_token(&"K".repeat(300_000)))
        .send()
        .await;
    // (the gateway may close the connection before the client has sent it all)
    match r {
        Ok(r) => {
            assert_eq!(r.status(), 431);
            assert_eq!(r.headers()["content-type"], "application/problem+json");
        }
        Err(e) => assert!(e.is_request() || e.is_connect() || e.is_body(), "{e}"),
    }
    // Neither reached the audit trail with its padding.
    for e in app.audit("").await {
        assert!(e.to_string().len() < 2048);
    }
}
both_backends!(oversized_heads_are_refused_with_a_problem);

/// Sends `head` on a connection of its own and reads the answer to its end.
fn raw_exchange(app: &TestApp, head: &str) -> (String, serde_json::Value) {
    let address = app.base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (
        head.to_ascii_lowercase(),
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}")),
    )
}

/// Heads that the HTTP parser refuses before the router sees them (more than 100 fields, a
/// malformed field line) are answered with problem documents too, and the connection closed.
async fn heads_the_parser_refuses_are_problem_documents(app: TestApp) {
    let fields: String = (0..120).map(|i| format!("x-field-{i}: v\r\n")).collect();
    let (head, problem) = raw_exchange(
        &app,
        &format!("GET /v1/permits HTTP/1.1\r\nhost: gateway\r\n{fields}\r\n"),
    );
    assert!(head.starts_with("http/1.1 431 "), "{head}");
    assert!(
        head.contains("content-type: application/problem+json"),
        "{head}"
    );
    assert!(head.contains("connection: close"), "{head}");
    assert_eq!(
        (problem["status"].as_u64(), problem["code"].as_str()),
        (Some(431), Some("header_too_large"))
    );

    let (head, problem) = raw_exchange(
        &app,
        "GET /v1/permits HTTP/1.1\r\nhost: gateway\r\nno colon here\r\n\r\n",
    );
    assert!(head.starts_with("http/1.1 400 "), "{head}");
    assert_eq!(problem["code"], "malformed_request");
    // the gateway still answers
    assert_eq!(app.get("/v1/permits", &app.officer()).await.status, 200);
}
both_backends!(heads_the_parser_refuses_are_problem_documents);

/// One caller over its quota is answered 429 with `Retry-After`, while other callers are not
/// held back; the 429s are counted for the minute's summary entry, not audited one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_over_its_quota_is_answered_429_and_others_are_not() {
    let app = spawn_with(Backend::Sqlite, |s| {
        s.http.per_principal_per_second = 1;
        s.http.per_principal_burst = 4;
    })
    .await;
    let officer = app.officer();
    for _ in 0..4 {
        assert_eq!(app.get("/v1/permits", &officer).await.status, 200);
    }
    let r = app.get("/v1/permits", &officer).await;
    assert_eq!((r.status.as_u16(), r.code()), (429, "too_many_requests"));
    assert_eq!(r.headers["content-type"], "application/problem+json");
    let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&wait), "{wait}");
    // another caller is not held back by the officer's quota
    let researcher = app.get("/v1/permits", &app.researcher()).await;
    assert_eq!(researcher.status, 200);
    // after the wait the officer's quota has refilled
    tokio::time::sleep(Duration::from_secs(wait)).await;
    assert_eq!(app.get("/v1/permits", &officer).await.status, 200);
    let individually = app.audit("outcome=denied").await;
    assert!(
        individually.iter().all(|e| e["http_status"] != 429),
        "{individually:?}"
    );
}

async fn request_ids_are_kept_only_when_well_formed(app: TestApp) {
    let send = |id: String| {
        app.send(
            app.client
                .get(format!("{}/v1/permits", app.base))
                .bearer_auth(app.officer())
                .header("x-request-id", id),
        )
    };
    let kept = send("trace-0192f3a4.7c1e:1".into()).await;
    assert_eq!(kept.status, 200);
    assert_eq!(kept.headers["x-request-id"], "trace-0192f3a4.7c1e:1");

    for hostile in ["R".repeat(5000), "has spaces and ; semicolons".into()] {
        let r = send(hostile.clone()).await;
        assert_eq!(r.status, 200);
        let echoed = r.headers["x-request-id"].to_str().unwrap();
        assert_ne!(echoed, hostile);
        assert!(uuid::Uuid::parse_str(echoed).is_ok(), "{echoed}");
    }
    // Refused requests carry the generated id into the trail, never the hostile one.
    let r = app
        .send(
            app.client
                .get(format!("{}/v1/permits", app.base))
                .bearer_auth(forged_token("k1"))
                .header("x-request-id", "Q".repeat(3000)),
        )
        .await;
    assert_eq!(r.status, 401);
    let generated = r.headers["x-request-id"].to_str().unwrap().to_owned();
    let entries = app.audit("outcome=denied").await;
    assert!(entries
        .iter()
        .any(|e| e["request_id"] == generated.as_str()));
    assert!(entries
        .iter()
        .all(|e| e["request_id"].as_str().unwrap_or("").len() <= 64));
}
both_backends!(request_ids_are_kept_only_when_well_formed);

async fn control_characters_are_refused_alike_on_both_databases(app: TestApp) {
    let mut body = application();
    body["title"] = json!("nul\u{0000}title");
    let r = app.apply(&body).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "control_character"),
        "{}",
        r.text
    );
    assert_eq!(r.body["errors"][0]["field"], "/title");

    let mut body = application();
    body["justification"] = json!("bell\u{0007}");
    assert_eq!(app.apply(&body).await.code(), "control_character");
    // Tab, newline and carriage return stay allowed in text.
    let mut body = application();
    body["justification"] = json!("line one\r\nline two\tand a tab");
    assert_eq!(app.apply(&body).await.status, 201);

    let permit = app.permit().await;
    let pid = permit["id"].as_str().unwrap();
    for (path, body) in [
        (
            format!("/v1/permits/{pid}/suspend"),
            json!({"reason": "x\u{0000}y"}),
        ),
        (
            format!("/v1/permits/{pid}/revoke"),
            json!({"reason": "\u{001b}[31m"}),
        ),
    ] {
        let r = app.post(&path, &app.officer(), &body).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (422, "control_character"),
            "{path}"
        );
    }
    let r = app
        .get("/v1/audit/events?actor=x%00y", &app.auditor())
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (400, "control_character"));
    let r = app
        .send(
            app.client
                .post(format!("{}/v1/opt-outs/import?channel=a%00b", app.base))
                .bearer_auth(app.registrar())
                .header("content-type", "application/x-ndjson")
                .body("{\"subject_pseudonym\": \"psn-hosp1-0000000001\"}\n"),
        )
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (400, "control_character"));

    // Nothing was stored: the permit is still active, one application besides the permit's.
    let read = app.get(&format!("/v1/permits/{pid}"), &app.officer()).await;
    assert_eq!(read.body["status"], "active");
    let apps = app.get("/v1/applications", &app.officer()).await;
    assert_eq!(apps.body.as_array().unwrap().len(), 2, "{}", apps.text);
    // And every refusal is on the record.
    let codes: Vec<String> = app
        .audit("outcome=denied")
        .await
        .iter()
        .filter_map(|e| e["detail"]["code"].as_str().map(str::to_owned))
        .collect();
    assert!(
        codes.iter().filter(|c| *c == "control_character").count() >= 6,
        "{codes:?}"
    );
}
both_backends!(control_characters_are_refused_alike_on_both_databases);

async fn authorization_headers_are_read_strictly(app: TestApp) {
    let officer = app.officer();
    let two = app
        .send(
            app.client
                .get(format!("{}/v1/permits", app.base))
                .header("authorization", format!("Bearer {officer}"))
                .header("authorization", "Bearer x.y.z"),
        )
        .await;
    assert_eq!(
        (two.status.as_u16(), two.code()),
        (400, "duplicate_authorization")
    );
    for scheme in ["BEARER", "bearer", "BeArEr"] {
        let r = app
            .send(
                app.client
                    .get(format!("{}/v1/permits", app.base))
                    .header("authorization", format!("{scheme} {officer}")),
            )
            .await;
        assert_eq!(r.status, 200, "{scheme}: {}", r.text);
    }
    let basic = app
        .send(
            app.client
                .get(format!("{}/v1/permits", app.base))
                .header("authorization", "Basic dXNlcjpwdw=="),
        )
        .await;
    assert_eq!(
        (basic.status.as_u16(), basic.code()),
        (401, "missing_token")
    );
}
both_backends!(authorization_headers_are_read_strictly);

async fn records_the_caller_may_not_see_answer_as_missing(app: TestApp) {
    let permit = app.permit().await;
    let pid = permit["id"].as_str().unwrap();
    let stranger = app.token("mallory", &["researcher"], Some("uni-z"));
    let missing = uuid::Uuid::now_v7();
    let existing = app.get(&format!("/v1/permits/{pid}"), &stranger).await;
    let absent = app.get(&format!("/v1/permits/{missing}"), &stranger).await;
    assert_eq!(existing.status, 404, "{}", existing.text);
    assert_eq!(absent.status, 404);
    assert_eq!(existing.code(), absent.code());
    assert_eq!(
        existing.body["detail"].as_str().unwrap().replace(pid, "ID"),
        absent.body["detail"]
            .as_str()
            .unwrap()
            .replace(&missing.to_string(), "ID")
    );
    let app_id = permit["application_id"].as_str().unwrap();
    assert_eq!(
        app.get(&format!("/v1/applications/{app_id}"), &stranger)
            .await
            .status,
        404
    );
    // Acting on it is answered the same way.
    let r = app
        .post(
            &format!("/v1/permits/{pid}/check"),
            &app.holder("hosp-9"),
            &json!({"purpose": "scientific_research", "categories": ["ehr_data"], "data_holders": ["hosp-9"], "epsilon": 1.0}),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
    // The denial is still on the record, against the real permit.
    let denied = app
        .audit(&format!("outcome=denied&resource_id={pid}"))
        .await;
    assert!(
        denied
            .iter()
            .any(|e| e["actor"]["sub"] == "mallory" && e["http_status"] == 404),
        "{denied:?}"
    );
}
both_backends!(records_the_caller_may_not_see_answer_as_missing);

async fn a_rewritten_timestamp_is_caught(app: TestApp) {
    app.permit().await;
    let entries = app.audit("").await;
    let target = &entries[1];
    let seq = target["seq"].as_i64().unwrap();
    let at: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(target["recorded_at"].clone()).unwrap();
    let shifted = at
        .with_timezone(&chrono::FixedOffset::west_opt(12 * 3600).unwrap())
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, false);
    assert!(shifted.ends_with("-12:00"), "{shifted}");
    tamper(
        &app,
        &[&format!(
            "update audit_event set recorded_at = '{shifted}' where seq = {seq}"
        )],
    )
    .await;
    let report = app.get("/v1/audit/verify", &app.auditor()).await;
    let window = format!(
        "from={}&to={}",
        urlencode(&(at - chrono::Duration::seconds(1)).to_rfc3339()),
        urlencode(&(at + chrono::Duration::seconds(1)).to_rfc3339())
    );
    let found = app
        .audit(&window)
        .await
        .iter()
        .any(|e| e["seq"].as_i64() == Some(seq));
    match app.backend {
        // Text column: the filter misses the row, and verification says why.
        Backend::Sqlite => {
            assert_eq!(report.body["valid"], false, "{}", report.text);
            assert_eq!(
                report.body["first_bad"],
                json!({"seq": seq, "problem": "non_canonical_timestamp"})
            );
        }
        // timestamptz stores the instant: nothing changed, the window still finds it.
        Backend::Postgres => {
            assert_eq!(report.body["valid"], true, "{}", report.text);
            assert!(found);
        }
    }
}
both_backends!(a_rewritten_timestamp_is_caught);

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A gateway on `backend` with a fresh database and adjusted settings.
async fn spawn_with(
    backend: Backend,
    tweak: impl FnOnce(&mut ehds_gateway::configuration::Settings),
) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let url = match backend {
        Backend::Sqlite => format!("sqlite://{}?mode=rwc", dir.path().join("g.db").display()),
        Backend::Postgres => fresh_postgres_database().await,
    };
    TestApp::spawn_on(backend, dir, url, tweak).await
}

async fn noise_keys_are_sealed_and_sqlite_files_private(app: TestApp) {
    use std::os::unix::fs::PermissionsExt;
    let permit = app
        .permit_id(&federation_application(
            &["cleveland", "hungarian"],
            8.0,
            "data_holder",
        ))
        .await;
    app.submit_study(&study_body(&permit, &["cleveland", "hungarian"]))
        .await;
    let kek = app.data_dir.join("noise-keys.kek");
    let mode = std::fs::metadata(&kek).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // Whoever reads the database alone gets a sealed blob, not the key.
    let stored: Vec<u8> = match app.backend {
        Backend::Sqlite => {
            let db = app.database_url.trim_start_matches("sqlite://");
            let db = db.split('?').next().unwrap();
            for file in [db.to_owned(), format!("{db}-wal")] {
                let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o600, "{file}: {mode:o}");
            }
            let pool = sqlx::SqlitePool::connect(&app.database_url).await.unwrap();
            sqlx::query_scalar("select noise_key from study")
                .fetch_one(&pool)
                .await
                .unwrap()
        }
        Backend::Postgres => {
            let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
            sqlx::query_scalar("select noise_key from study")
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    assert!(stored.starts_with(b"EHDS-SEALED-1:"), "{stored:?}");
    assert!(stored.len() > 32 + 16);
}
both_backends!(noise_keys_are_sealed_and_sqlite_files_private);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_data_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("nested").join("data");
    let url = format!("sqlite://{}?mode=rwc", data.join("g.db").display());
    let holder = tempfile::tempdir().unwrap();
    let _app = TestApp::spawn_on(Backend::Sqlite, holder, url, |s| {
        s.data_dir = data.clone();
    })
    .await;
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
}

/// Speaks raw HTTP/1.1 so that a head can be sent slowly or not at all.
fn raw_connection(app: &TestApp) -> std::net::TcpStream {
    let addr = app.base.trim_start_matches("http://");
    let s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Whether the server closed the connection (read returns end of stream or a reset).
fn closed_by_server(mut s: std::net::TcpStream) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => {
                return matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
                )
            }
        }
    }
}

async fn slow_heads_and_idle_connections_are_closed_and_connections_are_capped(backend: Backend) {
    let app = spawn_with(backend, |s| {
        s.http.header_read_timeout_seconds = 1;
        s.http.max_connections = 3;
    })
    .await;
    // A head trickled one line at a time is cut off.
    let mut slow = raw_connection(&app);
    slow.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
    let trickle = std::thread::spawn(move || {
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(700));
            if slow.write_all(b"x-slow: 1\r\n").is_err() {
                break;
            }
        }
        closed_by_server(slow)
    });
    // A connection that never sends anything is closed too.
    let idle = raw_connection(&app);
    let idle = std::thread::spawn(move || closed_by_server(idle));
    assert!(tokio::task::spawn_blocking(move || trickle.join().unwrap())
        .await
        .unwrap());
    assert!(tokio::task::spawn_blocking(move || idle.join().unwrap())
        .await
        .unwrap());

    // With every slot held by silent connections, a new client waits in the backlog and is
    // served once the silent ones time out, instead of the process running out of descriptors.
    let hogs: Vec<_> = (0..3).map(|_| raw_connection(&app)).collect();
    let started = Instant::now();
    let r = app
        .send(app.client.get(format!("{}/healthz", app.base)))
        .await;
    assert_eq!(r.status, 200);
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "served before a slot freed"
    );
    drop(hogs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_heads_and_idle_connections_are_closed_sqlite() {
    slow_heads_and_idle_connections_are_closed_and_connections_are_capped(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_heads_and_idle_connections_are_closed_postgres() {
    slow_heads_and_idle_connections_are_closed_and_connections_are_capped(Backend::Postgres).await
}

/// Four connections without credentials send forged tokens with large key ids and hostile
/// request ids for three seconds: the trail grows by at most the documented bound. Throttled
/// answers are sent at once here (no hold), the fastest flood the gateway can be made to serve.
async fn a_flood_without_credentials_stays_within_the_audit_bound(backend: Backend) {
    let app = spawn_with(backend, |s| s.http.throttled_hold_ms = 0).await;
    let (rows_before, bytes_before) = audit_size(&app).await;
    let kid = "K".repeat(6000);
    let until = Instant::now() + Duration::from_secs(3);
    let mut floods = Vec::new();
    for worker in 0..4 {
        let client = ehds_http::builder().build().unwrap();
        let url = format!("{}/v1/permits", app.base);
        let token = forged_token(&format!("{kid}{worker}"));
        floods.push(tokio::spawn(async move {
            let (mut sent, mut throttled) = (0u64, 0u64);
            while Instant::now() < until {
                let r = client
                    .get(&url)
                    .bearer_auth(&token)
                    .header("x-request-id", format!("{}{sent}", "Q".repeat(900)))
                    .send()
                    .await
                    .unwrap();
                sent += 1;
                if r.status() == 429 {
                    throttled += 1;
                    assert!(r.headers().contains_key("retry-after"));
                } else {
                    assert_eq!(r.status(), 401);
                }
            }
            (sent, throttled)
        }));
    }
    let (mut sent, mut throttled) = (0, 0);
    for f in floods {
        let (s, t) = f.await.unwrap();
        sent += s;
        throttled += t;
    }
    let (rows_after, bytes_after) = audit_size(&app).await;
    let grown_rows = rows_after - rows_before;
    let grown_bytes = bytes_after - bytes_before;
    // Documented bound (docs/security.md): a burst of `unauthenticated_audited_per_minute`
    // individual entries plus that many per minute, each under 2 kB, and the summaries.
    let per_minute = 120;
    let bound_rows = per_minute + per_minute * 3 / 60 + 2;
    assert!(sent > 200, "the flood sent only {sent} requests");
    assert!(throttled > 0, "no source was throttled ({sent} sent)");
    assert!(
        grown_rows <= bound_rows,
        "{grown_rows} entries for {sent} refused requests (bound {bound_rows})"
    );
    assert!(
        grown_bytes <= bound_rows * 2048,
        "{grown_bytes} bytes for {grown_rows} entries"
    );
    // The refusals held back are counted in a summary entry, written at the next minute or
    // at shutdown; the counter is visible through the summary function meanwhile.
    let auditor = app.auditor();
    let ok = app.get("/v1/permits", &auditor).await;
    assert_ne!(ok.status, 429, "an authenticated caller is never throttled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_without_credentials_stays_within_the_audit_bound_sqlite() {
    a_flood_without_credentials_stays_within_the_audit_bound(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_without_credentials_stays_within_the_audit_bound_postgres() {
    a_flood_without_credentials_stays_within_the_audit_bound(Backend::Postgres).await
}

/// A throttled source's 429 is held for `throttled_hold_ms` and closes the connection, while a
/// caller with a valid token from the same address is answered at once; beyond
/// `throttled_held_max` held answers, 429s go out without the hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_answers_are_held_and_close_the_connection() {
    let hold = Duration::from_millis(400);
    let app = spawn_with(Backend::Sqlite, |s| {
        s.http.unauthenticated_per_source_per_minute = 3;
        s.http.throttled_hold_ms = hold.as_millis() as u64;
        s.http.throttled_held_max = 1;
    })
    .await;
    let client = ehds_http::builder().build().unwrap();
    let url = format!("{}/v1/permits", app.base);
    let forged = forged_token("k");
    for _ in 0..3 {
        let r = client.get(&url).bearer_auth(&forged).send().await.unwrap();
        assert_eq!(r.status(), 401);
    }
    let started = Instant::now();
    let r = client.get(&url).bearer_auth(&forged).send().await.unwrap();
    assert_eq!(r.status(), 429);
    assert!(
        started.elapsed() >= hold,
        "answered after {:?}",
        started.elapsed()
    );
    assert_eq!(r.headers()["connection"], "close");
    assert_eq!(r.headers()["retry-after"], "60");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["code"], "too_many_unauthenticated_requests");

    // While one answer is held (the most allowed), a second throttled request is answered
    // without waiting for it, and a valid token from the same address is never held.
    let held = tokio::spawn({
        let (client, url, forged) = (client.clone(), url.clone(), forged.clone());
        async move {
            let started = Instant::now();
            let r = client.get(&url).bearer_auth(&forged).send().await.unwrap();
            (r.status(), started.elapsed())
        }
    });
    tokio::time::sleep(hold / 4).await;
    let started = Instant::now();
    let r = ehds_http::builder()
        .build()
        .unwrap()
        .get(&url)
        .bearer_auth(&forged)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    let unheld = started.elapsed();
    let ok = app.get("/v1/permits", &app.officer()).await;
    assert_eq!(ok.status, 200);
    let (status, held_for) = held.await.unwrap();
    assert_eq!(status, 429);
    assert!(held_for >= hold, "held for {held_for:?}");
    assert!(
        unheld < held_for,
        "the answer beyond the held maximum took {unheld:?}, the held one {held_for:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_held_back_are_summarised() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    for _ in 0..150 {
        app.get("/v1/permits", &forged_token("k")).await;
    }
    let state = app.state.clone().expect("in-process gateway");
    ehds_gateway::http::record_refusal_summary(&state)
        .await
        .unwrap();
    let summaries = app.audit("action=http.refusals_summarised").await;
    assert_eq!(summaries.len(), 1, "{summaries:?}");
    let total = summaries[0]["detail"]["refusals"].as_u64().unwrap();
    let individual = app
        .audit("outcome=denied&resource_type=request")
        .await
        .iter()
        .filter(|e| e["action"] != "http.refusals_summarised")
        .count() as u64;
    // Every request is accounted for: audited one by one, or counted in the summary.
    assert_eq!(individual + total, 150, "{individual} + {total}");
}
