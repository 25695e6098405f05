//! The gateway client against a live gateway: every refusal arrives as a typed problem with
//! the gateway's stable code, transient failures are retried under the policy and refusals
//! never are, a refused token is renewed, and the node protocol round-trips in the gateway's
//! own wire types.

#[path = "api/helpers.rs"]
#[allow(dead_code)]
mod helpers;

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use ehds_core::{
    domain::{application::ApplicationRequest, ApplicationId, PermitId, StudyId},
    wire::{encode_update, FilterRequest, TaskResultBody},
};
use ehds_node::client::{
    ClientError, Delivery, DevTokens, GatewayClient, RetryHook, RetryPolicy, TokenSource,
};
use http::StatusCode;
use serde_json::json;

use helpers::*;

fn client(app: &TestApp) -> GatewayClient {
    GatewayClient::new(&app.base).unwrap()
}

fn as_(app: &TestApp, sub: &str, role: &str, org: &str) -> GatewayClient {
    client(app).with_tokens(DevTokens::new(app.dev.clone(), sub, role, Some(org)))
}

fn request(body: serde_json::Value) -> ApplicationRequest {
    serde_json::from_value(body).expect("a well-formed application")
}

/// Counts the retries a client makes.
fn counter() -> (Arc<AtomicUsize>, RetryHook) {
    let n = Arc::new(AtomicUsize::new(0));
    let m = n.clone();
    (
        n,
        Arc::new(move |_, _| {
            m.fetch_add(1, Ordering::SeqCst);
        }),
    )
}

#[track_caller]
fn assert_problem(e: &ClientError, want_status: StatusCode, want_code: &str) {
    match e {
        ClientError::Problem {
            status,
            code,
            detail,
            body,
        } => {
            assert_eq!(*status, want_status, "{e}");
            assert_eq!(code, want_code, "{e}");
            assert!(!detail.is_empty(), "{e}");
            assert_eq!(body["code"], want_code);
            assert_eq!(body["status"], want_status.as_u16());
        }
        other => panic!("expected a {want_status} {want_code} problem, got {other:?}"),
    }
}

async fn refusals_are_typed_problems(app: TestApp) {
    let researcher = as_(&app, "alice", "researcher", "uni-a");
    let officer = as_(&app, "olaf", "hdab_officer", "hdab-de");

    // 404: a study that does not exist
    let missing = StudyId::new();
    let e = researcher.study(missing).await.unwrap_err();
    assert_problem(&e, StatusCode::NOT_FOUND, "not_found");
    assert!(
        matches!(&e, ClientError::Problem { detail, .. } if detail.contains(&missing.to_string()))
    );

    // 401: no token at all
    let e = client(&app).study(missing).await.unwrap_err();
    assert_problem(&e, StatusCode::UNAUTHORIZED, "missing_token");

    // 403: an officer may not apply
    let e = officer
        .create_application(&request(application()))
        .await
        .unwrap_err();
    assert_problem(&e, StatusCode::FORBIDDEN, "forbidden");

    // 422: a purpose the regulation does not know; every bad field is listed
    let mut bad = application();
    bad["purposes"] = json!(["marketing"]);
    let e = researcher
        .create_application(&request(bad))
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(StatusCode::UNPROCESSABLE_ENTITY), "{e}");
    let ClientError::Problem { body, .. } = &e else {
        panic!("expected a problem, got {e:?}")
    };
    let errors = body["errors"].as_array().expect("field errors");
    assert!(
        errors
            .iter()
            .any(|f| f["field"] == "purposes[0]" && f["code"] == "unknown_purpose"),
        "{body}"
    );
    assert_eq!(
        e.code(),
        Some(if errors.len() == 1 {
            "unknown_purpose"
        } else {
            "validation_failed"
        })
    );

    // 409: deciding twice; the document keeps the extra members
    let created = researcher
        .create_application(&request(application()))
        .await
        .expect("a valid application is accepted");
    let permit: PermitId = officer.approve_application(created.id).await.unwrap();
    let e = officer.approve_application(created.id).await.unwrap_err();
    assert_problem(&e, StatusCode::CONFLICT, "invalid_transition");
    let ClientError::Problem { body, .. } = &e else {
        unreachable!()
    };
    assert_eq!(body["current_state"], "approved", "{body}");
    assert!(!e.is_transient());

    // and the answers that succeed come back as the gateway's own types
    let outcome = as_(&app, "node-hosp-1", "data_holder", "hosp-1")
        .check_permit(
            permit,
            &json!({"purpose": "scientific_research", "categories": ["ehr_data"],
                    "data_holders": ["hosp-1"], "epsilon": 0.1}),
        )
        .await
        .unwrap();
    assert!(outcome.allowed, "{outcome:?}");
    let e = officer
        .approve_application(ApplicationId::new())
        .await
        .unwrap_err();
    assert_problem(&e, StatusCode::NOT_FOUND, "not_found");
}
both_backends!(refusals_are_typed_problems);

/// A refusal is final: even a client that retries sends it once.
#[tokio::test]
async fn a_refusal_is_not_retried() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let (retries, hook) = counter();
    let researcher = as_(&app, "alice", "researcher", "uni-a")
        .with_retry(RetryPolicy::attempts(3, Duration::from_millis(10)))
        .on_retry(hook);
    let e = researcher.study(StudyId::new()).await.unwrap_err();
    assert_problem(&e, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(retries.load(Ordering::SeqCst), 0);
}

/// A gateway that cannot be reached is a transport error, retried as the policy says.
#[tokio::test]
async fn an_unreachable_gateway_is_retried_then_reported() {
    // a port nobody listens on
    let port = helpers::free_port();
    let gone = GatewayClient::new(&format!("http://127.0.0.1:{port}")).unwrap();

    let e = gone.healthz().await.unwrap_err();
    assert!(matches!(e, ClientError::Transport(_)), "{e:?}");
    assert!(e.is_transient());
    assert_eq!(e.status(), None);

    let (retries, hook) = counter();
    let e = gone
        .with_retry(RetryPolicy::attempts(3, Duration::from_millis(10)))
        .on_retry(hook)
        .healthz()
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Transport(_)), "{e:?}");
    assert_eq!(retries.load(Ordering::SeqCst), 3);

    // with a deadline already past, nothing is retried
    let (retries, hook) = counter();
    let e = gone
        .with_retry(RetryPolicy::until(Instant::now()))
        .on_retry(hook)
        .healthz()
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Transport(_)), "{e:?}");
    assert_eq!(retries.load(Ordering::SeqCst), 0);
}

/// A gateway that answers 503 (overloaded, restarting behind a proxy) is retried until it
/// answers; the problem document of each failed try is typed like any other.
#[tokio::test]
async fn server_errors_are_retried_until_the_gateway_answers() {
    use axum::{routing::get, Json, Router};
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let stub = Router::new().route(
        "/v1/node/tasks",
        get(move || {
            let seen = seen.clone();
            async move {
                if seen.fetch_add(1, Ordering::SeqCst) < 2 {
                    (
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        Json(json!({"status": 503, "code": "unavailable", "detail": "starting"})),
                    )
                } else {
                    (axum::http::StatusCode::OK, Json(json!([])))
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, stub).await });

    let once = GatewayClient::new(&base).unwrap().with_token("t");
    let e = once.poll_tasks(0).await.unwrap_err();
    assert_problem(&e, StatusCode::SERVICE_UNAVAILABLE, "unavailable");
    assert!(e.is_transient());

    let (retries, hook) = counter();
    let tasks = once
        .with_retry(RetryPolicy::attempts(3, Duration::from_millis(10)))
        .on_retry(hook)
        .poll_tasks(0)
        .await
        .expect("the third try gets an answer");
    assert!(tasks.is_empty());
    assert_eq!(retries.load(Ordering::SeqCst), 1);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

/// Hands out a token the gateway refuses until it is told so, then a valid one.
struct StaleFirst {
    good: DevTokens,
    invalidated: AtomicUsize,
}

#[async_trait::async_trait]
impl TokenSource for StaleFirst {
    async fn token(&self) -> anyhow::Result<String> {
        if self.invalidated.load(Ordering::SeqCst) == 0 {
            Ok("not-a-token".into())
        } else {
            self.good.token().await
        }
    }

    async fn invalidate(&self) {
        self.invalidated.fetch_add(1, Ordering::SeqCst);
    }
}

/// A 401 tells the token source to renew; a retrying client then goes through, a client
/// that does not retry reports the refusal.
#[tokio::test]
async fn a_refused_token_is_renewed() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let source = Arc::new(StaleFirst {
        good: DevTokens::new(app.dev.clone(), "audrey", "auditor", Some("hdab-de")),
        invalidated: AtomicUsize::new(0),
    });

    let e = client(&app)
        .with_tokens(source.clone())
        .verify_audit()
        .await
        .unwrap_err();
    assert_problem(&e, StatusCode::UNAUTHORIZED, "invalid_token");
    assert_eq!(source.invalidated.load(Ordering::SeqCst), 1);

    source.invalidated.store(0, Ordering::SeqCst);
    let (retries, hook) = counter();
    let report = client(&app)
        .with_tokens(source.clone())
        .with_retry(RetryPolicy::attempts(2, Duration::from_millis(10)))
        .on_retry(hook)
        .verify_audit()
        .await
        .expect("the renewed token is accepted");
    assert_eq!(report["valid"], true, "{report}");
    assert_eq!(retries.load(Ordering::SeqCst), 1);
    assert_eq!(source.invalidated.load(Ordering::SeqCst), 1);
}

/// The node protocol in the gateway's wire types: a task, the opt-out filter, the global
/// model, a refused result (typed), the accepted one, and a repeated one.
#[tokio::test]
async fn the_node_protocol_round_trips_in_wire_types() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let researcher = as_(&app, "alice", "researcher", "uni-a");
    let officer = as_(&app, "olaf", "hdab_officer", "hdab-de");
    let node = as_(&app, "node-cleveland", "data_holder", "cleveland");

    let created = researcher
        .create_application(&request(federation_application(
            &["cleveland"],
            8.0,
            "record",
        )))
        .await
        .unwrap();
    let permit = officer.approve_application(created.id).await.unwrap();
    let study = researcher
        .create_study(&study_body(&permit.to_string(), &["cleveland"]))
        .await
        .unwrap();

    let until = Instant::now() + Duration::from_secs(60);
    let task = loop {
        if let Some(t) = node.poll_tasks(1).await.unwrap().into_iter().next() {
            break t;
        }
        assert!(Instant::now() < until, "no task for the node");
    };
    assert_eq!(task.permit_id, permit);
    assert_eq!(task.study_id.to_string(), study["id"].as_str().unwrap());
    assert_eq!(task.data_holder.as_str(), "cleveland");

    let filtered = node
        .filter_opt_outs(&FilterRequest {
            permit_id: permit,
            subjects: vec!["subject-0000000001".into(), "subject-0000000002".into()],
            categories: vec!["ehr_data".into()],
            policy: task.study.optout_policy,
            registry_version: Some(task.registry_version),
        })
        .await
        .unwrap();
    assert_eq!(filtered.checked, 2);
    assert!(filtered.exclude.is_empty());

    let ins = node.task_parameters(&task).await.unwrap();
    assert!(!ins.params.is_empty());
    let mut result = TaskResultBody {
        num_examples: 10,
        excluded_subjects: 0,
        registry_version: task.registry_version + 1,
        parameters: Some(
            encode_update(
                &ins.params,
                &ins.extras,
                task.study_id,
                task.round,
                &task.data_holder,
            )
            .unwrap(),
        ),
        train_loss: Some(0.69),
        local_steps: Some(1),
        evaluation: None,
        data_quality: None,
    };
    let e = node.submit_result(task.task_id, &result).await.unwrap_err();
    assert_problem(
        &e,
        StatusCode::UNPROCESSABLE_ENTITY,
        "registry_version_mismatch",
    );
    result.registry_version = task.registry_version;
    assert_eq!(
        node.submit_result(task.task_id, &result).await.unwrap(),
        Delivery::Accepted
    );
    assert_eq!(
        node.submit_result(task.task_id, &result).await.unwrap(),
        Delivery::AlreadyAccepted
    );

    // another holder's task is not this node's
    let other = as_(&app, "node-va", "data_holder", "va");
    let e = other.task_parameters(&task).await.unwrap_err();
    assert!(e.status().is_some_and(|s| s.is_client_error()), "{e:?}");
    assert!(e.code().is_some(), "{e:?}");
}
