//! Signed webhooks: permit state changes reach a configured receiver, signed as Standard
//! Webhooks prescribes, retried after a transient failure (same id), given up after a refusal,
//! in the order of the audit trail.
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::{body::Bytes, extract::State, http::HeaderMap, http::StatusCode, routing::post};
use base64::Engine as _;
use ehds_gateway::configuration::EndpointSettings;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::helpers::{Backend, TestApp};

const SECRET: &str = "a-webhook-secret-shared-with-hdab-ops";

/// What the receiver was sent, one entry per attempt.
#[derive(Clone, Debug)]
struct Received {
    id: String,
    timestamp: i64,
    signature: String,
    body: Bytes,
    answered: u16,
}

#[derive(Clone, Default)]
struct Receiver {
    received: Arc<Mutex<Vec<Received>>>,
}

/// Answers 503 to the very first attempt and 400 to any `permit.revoked` event, 204 otherwise.
async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let header = |n: &str| headers[n].to_str().unwrap().to_owned();
    let mut received = r.received.lock().unwrap();
    let event: Value = serde_json::from_slice(&body).unwrap();
    let answer = if received.is_empty() {
        StatusCode::SERVICE_UNAVAILABLE
    } else if event["type"] == "permit.revoked" {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::NO_CONTENT
    };
    received.push(Received {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp").parse().unwrap(),
        signature: header("webhook-signature"),
        body,
        answered: answer.as_u16(),
    });
    answer
}

fn signed(id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

async fn permit_changes_reach_a_signed_webhook(backend: Backend) {
    let receiver = Receiver::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let router = axum::Router::new()
        .route("/hook", post(receive))
        .with_state(receiver.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    let app = TestApp::spawn_with(backend, |s| {
        let secret_file = s.data_dir.join("webhook.secret");
        std::fs::write(&secret_file, SECRET).unwrap();
        s.webhooks.endpoints = vec![EndpointSettings {
            name: "hdab-ops".into(),
            url: url.clone(),
            secret_file,
            events: vec!["permit.*".into()],
        }];
        s.webhooks.retry_min_delay_ms = 50;
        s.webhooks.retry_max_delay_ms = 200;
        s.webhooks.poll_millis = 50;
    })
    .await;
    let permit = app.permit().await;
    let id = permit["id"].as_str().unwrap();
    for (action, reason) in [
        ("suspend", "Art. 63 procedure opened"),
        ("reinstate", "the procedure found no breach"),
        ("revoke", "a later breach was confirmed"),
    ] {
        let r = app
            .post(
                &format!("/v1/permits/{id}/{action}"),
                &app.officer(),
                &json!({"reason": reason}),
            )
            .await;
        assert_eq!(r.status, 200, "{action}: {}", r.text);
    }
    // a second permit's suspension: delivered after the refused revocation was given up
    let second = app.permit().await;
    let second_id = second["id"].as_str().unwrap();
    let r = app
        .post(
            &format!("/v1/permits/{second_id}/suspend"),
            &app.officer(),
            &json!({"reason": "Art. 63 procedure opened"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    let until = Instant::now() + Duration::from_secs(30);
    let received = loop {
        let received = receiver.received.lock().unwrap().clone();
        if received.len() >= 5 {
            break received;
        }
        assert!(Instant::now() < until, "only {received:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        receiver.received.lock().unwrap().len(),
        5,
        "nothing else: the decisions are not permit events, the refusal is not retried"
    );

    let events: Vec<Value> = received
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "permit.suspended",
            "permit.suspended",
            "permit.reinstated",
            "permit.revoked",
            "permit.suspended"
        ]
    );
    let answers: Vec<u16> = received.iter().map(|r| r.answered).collect();
    assert_eq!(answers, [503, 204, 204, 400, 204]);
    // the retry is the same message
    assert_eq!(received[0].id, received[1].id);
    assert_eq!(received[0].body, received[1].body);
    let ids: std::collections::BTreeSet<&str> =
        received[1..].iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), 4, "one id per event");

    let now = chrono::Utc::now().timestamp();
    for r in &received {
        assert_eq!(r.signature, signed(&r.id, r.timestamp, &r.body), "{r:?}");
        assert!((now - r.timestamp).abs() < 60, "{r:?}");
    }
    // each event names its permit and the audit entry that recorded the change, in trail order
    for (event, (permit, action)) in events[1..].iter().zip([
        (id, "permit.suspend"),
        (id, "permit.reinstate"),
        (id, "permit.revoke"),
        (second_id, "permit.suspend"),
    ]) {
        assert_eq!(event["resource_type"], "permit", "{event}");
        assert_eq!(event["resource_id"], permit, "{event}");
        let entries = app
            .audit(&format!("action={action}&resource_id={permit}"))
            .await;
        assert_eq!(entries.len(), 1);
        assert_eq!(event["audit_seq"], entries[0]["seq"], "{event}");
        assert_eq!(event["occurred_at"], entries[0]["recorded_at"], "{event}");
    }
    let seqs: Vec<i64> = events[1..]
        .iter()
        .map(|e| e["audit_seq"].as_i64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    let metrics = crate::metrics::scrape(&app).await;
    let outcome = |o: &str| {
        metrics.count(
            "ehds_webhook_deliveries_total",
            &[("endpoint", "hdab-ops"), ("outcome", o)],
        )
    };
    assert!(outcome("delivered") >= 3.0 && outcome("given_up") >= 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permit_changes_reach_a_signed_webhook_sqlite() {
    permit_changes_reach_a_signed_webhook(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permit_changes_reach_a_signed_webhook_postgres() {
    permit_changes_reach_a_signed_webhook(Backend::Postgres).await
}
