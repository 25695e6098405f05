//! Art. 69 data requests and the statistics runs that answer them, through the API, with the
//! holders' nodes played by the test (their partials computed with `ehds_stats` over small
//! tables): validation, the governance check and the one budget, the node protocol's refusals,
//! output checking, the officer's review, and the trail.

use serde_json::{json, Value};

use crate::both_backends;
use crate::helpers::*;

fn features() -> Value {
    example_features()
}

/// A data request of alice's organisation for two holders, declaring `queries`.
fn data_request(queries: Value, epsilon: f64) -> Value {
    let mut body = federation_application(&["cleveland", "va"], epsilon, "record");
    body["kind"] = json!("data_request");
    body["research_flags"] = json!([]);
    body["statistics"] = json!({"feature_spec": features(), "queries": queries});
    body
}

fn by_sex() -> Value {
    json!({"statistic": "count", "group_by": [{"column": "sex", "levels": [0, 1]}]})
}

/// A holder's partial for `query` over `sexes` (one row per value), the other variables missing.
fn partial(query: &Value, sexes: &[f64]) -> Value {
    let spec =
        ehds_core::domain::feature_spec::features::FeatureSpec::from_json(&features().to_string())
            .unwrap();
    let columns = ehds_core::domain::statistics::variables(&spec);
    let sex = columns.iter().position(|c| c == "sex").unwrap();
    let rows = sexes
        .iter()
        .map(|s| {
            let mut r = vec![f64::NAN; columns.len()];
            r[sex] = *s;
            r
        })
        .collect();
    let table = ehds_stats::Table::new(columns, rows).unwrap();
    let q = ehds_stats::Query::parse(
        serde_json::from_value(query.clone()).unwrap(),
        &Default::default(),
    )
    .unwrap();
    serde_json::to_value(ehds_stats::partial(&q, &table).unwrap()).unwrap()
}

fn sexes(women: usize, men: usize) -> Vec<f64> {
    [vec![0.0; women], vec![1.0; men]].concat()
}

async fn tasks_of(app: &TestApp, holder: &str) -> Vec<Value> {
    let r = app
        .get("/v1/node/statistics-tasks", &app.holder(holder))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body.as_array().cloned().unwrap()
}

async fn answer(app: &TestApp, holder: &str, task: &Value, partial: Value) -> Reply {
    app.post(
        &format!(
            "/v1/node/statistics-tasks/{}/result",
            task["task_id"].as_str().unwrap()
        ),
        &app.holder(holder),
        &json!({
            "registry_version": task["registry_version"],
            "opted_out": 0,
            "incomplete": 0,
            "partial": partial,
        }),
    )
    .await
}

async fn a_data_request_is_answered_and_checked(app: TestApp) {
    let (application_id, permit) = app
        .permit_with(
            &data_request(json!([by_sex()]), 1.0),
            &json!({"decision": "approve"}),
        )
        .await;
    let pid = permit["id"].as_str().unwrap().to_owned();
    assert_eq!(permit["terms"]["statistics_only"], true, "{permit}");

    // the declared query runs: one task per holder, each with only what it needs
    let tasks = tasks_of(&app, "cleveland").await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let task = &tasks[0];
    assert_eq!(task["permit_id"], pid.as_str());
    assert!(task.get("data_holders").is_none(), "{task}");
    let va_task = tasks_of(&app, "va").await.remove(0);

    // a node answers only its own task, with the query's shape
    let other = answer(&app, "va", task, partial(&by_sex(), &sexes(20, 20))).await;
    assert_eq!(other.status, 403, "{}", other.text);
    let mean = json!({"statistic": "mean", "variable": "age"});
    let wrong = answer(&app, "cleveland", task, partial(&mean, &sexes(20, 20))).await;
    assert_eq!(wrong.status, 422, "{}", wrong.text);
    assert_eq!(wrong.code(), "partial_mismatch");
    let stale = app
        .post(
            &format!(
                "/v1/node/statistics-tasks/{}/result",
                task["task_id"].as_str().unwrap()
            ),
            &app.holder("cleveland"),
            &json!({"registry_version": 99, "opted_out": 0, "incomplete": 0,
                    "partial": partial(&by_sex(), &sexes(1, 1))}),
        )
        .await;
    assert_eq!(stale.code(), "wrong_registry_version", "{}", stale.text);

    let ok = answer(&app, "cleveland", task, partial(&by_sex(), &sexes(20, 30))).await;
    assert_eq!(ok.status, 204, "{}", ok.text);
    let twice = answer(&app, "cleveland", task, partial(&by_sex(), &sexes(20, 30))).await;
    assert_eq!(twice.status, 409, "{}", twice.text);
    assert_eq!(twice.code(), "task_closed");
    assert!(tasks_of(&app, "cleveland").await.is_empty());

    // still computing: nothing to see
    let runs = app
        .get(
            &format!("/v1/statistics?application_id={application_id}"),
            &app.researcher(),
        )
        .await;
    assert_eq!(runs.body[0]["status"], "computing", "{}", runs.text);
    assert_eq!(runs.body[0]["answer"], Value::Null);

    // the last holder's part pools and checks the run: 3 women at va make 23 in all
    let ok = answer(&app, "va", &va_task, partial(&by_sex(), &sexes(3, 12))).await;
    assert_eq!(ok.status, 204, "{}", ok.text);
    let run = app
        .get(
            &format!("/v1/statistics?permit_id={pid}"),
            &app.researcher(),
        )
        .await
        .body[0]
        .clone();
    assert_eq!(run["status"], "released", "{run}");
    assert_eq!(run["holders_answered"], 2);
    assert_eq!(run["answer"]["form"], "checked");
    let counts: Vec<u64> = run["answer"]["values"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["value"]["n"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, vec![23, 42]);
    assert!(run["answer_due"].is_string(), "{run}");

    // another organisation's researcher sees none of it
    let bob = app.token("bob", &["researcher"], Some("uni-b"));
    let id = run["id"].as_str().unwrap();
    let hidden = app.get(&format!("/v1/statistics/{id}"), &bob).await;
    assert_eq!(hidden.status, 404, "{}", hidden.text);
    let listed = app.get("/v1/statistics", &bob).await;
    assert_eq!(listed.body, json!([]));

    // nothing else runs under the data request's permit, and no study
    let undeclared = app
        .post(
            &format!("/v1/permits/{pid}/statistics"),
            &app.researcher(),
            &json!({"purpose": "scientific_research", "feature_spec": features(),
                    "query": {"statistic": "count"}}),
        )
        .await;
    assert_eq!(undeclared.status, 422, "{}", undeclared.text);
    assert_eq!(undeclared.code(), "query_not_declared");
    let study = app
        .post(
            "/v1/studies",
            &app.researcher(),
            &study_body(&pid, &["cleveland", "va"]),
        )
        .await;
    assert_eq!(study.status, 422, "{}", study.text);
    assert!(
        study.text.contains("permit_for_statistics_only"),
        "{}",
        study.text
    );

    // the trail
    for (action, n) in [
        ("statistics.request", 1),
        ("node.statistics.result", 2),
        ("statistics.complete", 1),
    ] {
        let entries = app
            .audit(&format!("action={action}&permit_id={pid}&outcome=success"))
            .await;
        assert_eq!(entries.len(), n, "{action}: {entries:?}");
    }
    let refused = app
        .audit("action=node.statistics.result&outcome=denied")
        .await;
    assert!(refused.len() >= 3, "{refused:?}");
}
both_backends!(a_data_request_is_answered_and_checked);

async fn a_flagged_answer_waits_for_an_officer(app: TestApp) {
    let (_, permit) = app
        .permit_with(&application(), &json!({"decision": "approve"}))
        .await;
    let pid = permit["id"].as_str().unwrap().to_owned();
    let mut spec = features();
    // the plain application covers ehr_data and health_determinants: the example reads ehr_data
    spec["name"] = json!("sex only");
    let run = app
        .post(
            &format!("/v1/permits/{pid}/statistics"),
            &app.researcher(),
            &json!({"purpose": "scientific_research", "feature_spec": spec, "query": by_sex(),
                    "data_holders": ["hosp-1"]}),
        )
        .await;
    assert_eq!(run.status, 201, "{}", run.text);
    assert_eq!(run.body["answer_due"], Value::Null, "not a data request");
    let id = run.body["id"].as_str().unwrap().to_owned();
    let task = tasks_of(&app, "hosp-1").await.remove(0);
    let ok = answer(&app, "hosp-1", &task, partial(&by_sex(), &sexes(4, 40))).await;
    assert_eq!(ok.status, 204, "{}", ok.text);

    let seen = app
        .get(&format!("/v1/statistics/{id}"), &app.researcher())
        .await;
    assert_eq!(seen.body["status"], "under_review", "{}", seen.text);
    assert_eq!(seen.body["checked"], Value::Null);
    let officer = app
        .get(&format!("/v1/statistics/{id}"), &app.officer())
        .await;
    assert_eq!(
        officer.body["checked"]["summary"]["suppressed"], 2,
        "{}",
        officer.text
    );

    // only an officer decides, with a justification
    let by_researcher = app
        .post(
            &format!("/v1/statistics/{id}/review"),
            &app.researcher(),
            &json!({"decision": "release", "justification": "mine"}),
        )
        .await;
    assert_eq!(by_researcher.status, 403, "{}", by_researcher.text);
    let blank = app
        .post(
            &format!("/v1/statistics/{id}/review"),
            &app.officer(),
            &json!({"decision": "release", "justification": " "}),
        )
        .await;
    assert_eq!(blank.status, 422, "{}", blank.text);
    let withheld = app
        .post(
            &format!("/v1/statistics/{id}/review"),
            &app.officer(),
            &json!({"decision": "withhold", "justification": "four women at one site"}),
        )
        .await;
    assert_eq!(withheld.status, 200, "{}", withheld.text);
    assert_eq!(withheld.body["status"], "withheld");
    let after = app
        .get(&format!("/v1/statistics/{id}"), &app.researcher())
        .await;
    assert_eq!(after.body["answer"], Value::Null);
    assert_eq!(
        after.body["review"]["justification"],
        "four women at one site"
    );
    let again = app
        .post(
            &format!("/v1/statistics/{id}/review"),
            &app.officer(),
            &json!({"decision": "release", "justification": "changed my mind"}),
        )
        .await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert_eq!(again.body["current_state"], "withheld");
}
both_backends!(a_flagged_answer_waits_for_an_officer);

async fn statistics_and_studies_spend_one_budget(app: TestApp) {
    let (_, permit) = app
        .permit_with(&application(), &json!({"decision": "approve"}))
        .await;
    let pid = permit["id"].as_str().unwrap().to_owned();
    let ask = |epsilon: f64| {
        json!({"purpose": "scientific_research", "feature_spec": features(),
               "query": {"statistic": "count", "dp": {"mechanism": "laplace", "epsilon": epsilon}}})
    };
    let first = app
        .post(
            &format!("/v1/permits/{pid}/statistics"),
            &app.researcher(),
            &ask(6.0),
        )
        .await;
    assert_eq!(first.status, 201, "{}", first.text);
    assert_eq!(first.body["charge"]["epsilon"], 6.0);
    let view = app.get(&format!("/v1/permits/{pid}"), &app.officer()).await;
    assert_eq!(
        view.body["privacy_budget"]["epsilon_spent"], 6.0,
        "{}",
        view.text
    );
    // 8 in all: 6 spent, so 3 more are refused with the reason, and nothing is stored
    let over = app
        .post(
            &format!("/v1/permits/{pid}/statistics"),
            &app.researcher(),
            &ask(3.0),
        )
        .await;
    assert_eq!(over.status, 422, "{}", over.text);
    assert_eq!(over.code(), "statistics_not_permitted");
    assert_eq!(
        over.body["reasons"][0]["code"], "budget_exceeded",
        "{}",
        over.text
    );
    let runs = app
        .get(
            &format!("/v1/statistics?permit_id={pid}"),
            &app.researcher(),
        )
        .await;
    assert_eq!(runs.body.as_array().unwrap().len(), 1);
    // a study planning more than the 2 left is refused too
    let study = app
        .post(
            "/v1/studies",
            &app.researcher(),
            &study_body(&pid, &["hosp-1", "hosp-2"]),
        )
        .await;
    assert_eq!(study.status, 422, "{}", study.text);

    // distributed noise and a delta above the permit's are refused by field
    let distributed = app
        .post(
            &format!("/v1/permits/{pid}/statistics"),
            &app.researcher(),
            &json!({"purpose": "scientific_research", "feature_spec": features(),
                    "query": {"statistic": "count",
                              "dp": {"mechanism": "gaussian", "rho": 0.1, "placement": "distributed"}}}),
        )
        .await;
    assert_eq!(
        distributed.code(),
        "placement_not_offered",
        "{}",
        distributed.text
    );
    // a query over a variable the specification does not define, and a purpose not granted
    let bad = app
        .post(
            &format!("/v1/permits/{pid}/statistics"),
            &app.researcher(),
            &json!({"purpose": "education", "feature_spec": features(),
                    "query": {"statistic": "mean", "variable": "bmi"}}),
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.text);
}
both_backends!(statistics_and_studies_spend_one_budget);

async fn a_data_request_is_validated_whole(app: TestApp) {
    // every problem at once, under its path
    let mut body = data_request(
        json!([
            {"statistic": "mean", "variable": "bmi"},
            {"statistic": "median"},
            by_sex()
        ]),
        1.0,
    );
    body["categories"] = json!(["genetic_genomic"]);
    let refused = app.apply(&body).await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    let fields: Vec<&str> = refused.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["field"].as_str())
        .collect();
    assert!(fields.contains(&"statistics.feature_spec"), "{fields:?}");
    assert!(fields.contains(&"statistics.queries[0]"), "{fields:?}");
    assert!(
        fields
            .iter()
            .any(|f| f.starts_with("statistics.queries[1]")),
        "{fields:?}"
    );
    // statistics belong to a data request, and a data request declares them
    let mut plain = application();
    plain["statistics"] = json!({"feature_spec": features(), "queries": [by_sex()]});
    assert_eq!(
        app.apply(&plain).await.code(),
        "statistics_only_in_data_request"
    );
    let mut bare = data_request(json!([by_sex()]), 1.0);
    bare.as_object_mut().unwrap().remove("statistics");
    assert_eq!(app.apply(&bare).await.code(), "statistics_required");
    let listed = app.get("/v1/applications", &app.officer()).await;
    assert_eq!(listed.body, json!([]), "nothing stored");

    // no extension for a data request (Art. 69(3))
    let created = app.apply(&data_request(json!([by_sex()]), 1.0)).await;
    let id = created.body["id"].as_str().unwrap();
    let extended = app
        .post(
            &format!("/v1/applications/{id}/extension"),
            &app.officer(),
            &json!({"months": 2, "reasons": "complex"}),
        )
        .await;
    assert_eq!(extended.status, 409, "{}", extended.text);

    // a grant its budget cannot pay for is refused, and nothing is stored
    let dp = json!({"statistic": "count", "dp": {"mechanism": "laplace", "epsilon": 2.0}});
    let created = app.apply(&data_request(json!([dp]), 1.0)).await;
    let id = created.body["id"].as_str().unwrap();
    let grant = app
        .post(
            &format!("/v1/applications/{id}/decision"),
            &app.officer(),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(grant.status, 422, "{}", grant.text);
    assert_eq!(grant.code(), "statistics_not_permitted", "{}", grant.text);
    let still = app
        .get(&format!("/v1/applications/{id}"), &app.officer())
        .await;
    assert_ne!(still.body["status"], "approved", "{}", still.text);
    let permits = app.get("/v1/permits", &app.officer()).await;
    assert_eq!(permits.body, json!([]), "no permit half-issued");
}
both_backends!(a_data_request_is_validated_whole);

async fn an_application_converts_to_a_data_request_with_the_applicants_agreement(app: TestApp) {
    let created = app.apply(&application()).await;
    let id = created.body["id"].as_str().unwrap().to_owned();
    let statistics = json!({"statistics": {"feature_spec": features(), "queries": [by_sex()]}});
    let step = |path: &str| format!("/v1/applications/{id}/{path}");
    // nothing to agree to yet
    let early = app
        .post(&step("conversion"), &app.researcher(), &statistics)
        .await;
    assert_eq!(early.status, 409, "{}", early.text);
    let complete = app
        .post(&step("completeness"), &app.officer(), &json!({}))
        .await;
    assert_eq!(complete.status, 200, "{}", complete.text);
    let proposed = app
        .post(
            &step("conversion-proposal"),
            &app.officer(),
            &json!({"reasons": "counts by sex answer the stated question"}),
        )
        .await;
    assert_eq!(proposed.status, 200, "{}", proposed.text);
    let allowed = &proposed.body["allowed_transitions"];
    assert!(
        allowed
            .as_array()
            .unwrap()
            .contains(&json!("accept_conversion")),
        "{allowed}"
    );
    assert!(!allowed
        .as_array()
        .unwrap()
        .contains(&json!("propose_conversion")));
    // only the applicant agrees, with statistics the application's categories cover
    let by_officer = app
        .post(&step("conversion"), &app.officer(), &statistics)
        .await;
    assert_eq!(by_officer.status, 403, "{}", by_officer.text);
    let bad = app
        .post(
            &step("conversion"),
            &app.researcher(),
            &json!({"statistics": {"feature_spec": features(),
                                   "queries": [{"statistic": "mean", "variable": "bmi"}]}}),
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    assert_eq!(bad.body["errors"][0]["field"], "statistics.queries[0]");
    let agreed = app
        .post(&step("conversion"), &app.researcher(), &statistics)
        .await;
    assert_eq!(agreed.status, 200, "{}", agreed.text);
    assert_eq!(agreed.body["request"]["kind"], "data_request");
    assert!(agreed.body["procedure"]["conversion"]["accepted_at"].is_string());
    // a data request has no extension, and its grant starts its statistics
    let extension = app
        .post(
            &step("extension"),
            &app.officer(),
            &json!({"months": 1, "reasons": "busy"}),
        )
        .await;
    assert_eq!(extension.status, 409, "{}", extension.text);
    let granted = app
        .post(
            &step("decision"),
            &app.officer(),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(granted.status, 200, "{}", granted.text);
    assert_eq!(granted.body["permit"]["terms"]["statistics_only"], true);
    let runs = app
        .get(
            &format!("/v1/statistics?application_id={id}"),
            &app.researcher(),
        )
        .await;
    assert_eq!(runs.body.as_array().unwrap().len(), 1, "{}", runs.text);
    let steps: Vec<String> = app
        .audit(&format!("action=application.respond&resource_id={id}"))
        .await
        .iter()
        .filter_map(|e| e["detail"]["step"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        steps,
        vec!["accept_conversion"],
        "the refusals carry no step"
    );
}
both_backends!(an_application_converts_to_a_data_request_with_the_applicants_agreement);

async fn an_unanswered_data_request_raises_its_answer_deadline_once(app: TestApp) {
    let state = app.state.clone().expect("the gateway runs in process");
    let (id, _) = app
        .permit_with(
            &data_request(json!([by_sex()]), 1.0),
            &json!({"decision": "approve"}),
        )
        .await;
    let sweep = |days: i64| {
        let state = state.clone();
        async move {
            let mut tx = state.store.begin().await.unwrap();
            ehds_gateway::app::statistics::sweep(
                &mut *tx,
                &state.procedure.statistics,
                ehds_core::domain::time::now() + chrono::Duration::days(days),
            )
            .await
            .unwrap();
            tx.commit().await.unwrap();
        }
    };
    let raised_query = format!("action=application.deadline&resource_id={id}");
    // nothing is due yet
    sweep(0).await;
    assert!(app.audit(&raised_query).await.is_empty());
    // no holder answers: three months on, the answer deadline is raised, and the run, past
    // its holders' deadline too, fails
    let run = app
        .get(
            &format!("/v1/statistics?application_id={id}"),
            &app.officer(),
        )
        .await;
    assert_eq!(run.body[0]["status"], "computing", "{}", run.text);
    sweep(95).await;
    let entries = app.audit(&raised_query).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["detail"]["deadline"], "answer");
    assert_eq!(entries[0]["actor"]["sub"], "system");
    sweep(96).await;
    assert_eq!(app.audit(&raised_query).await.len(), 1, "raised once");
    let failed = app
        .get(
            &format!("/v1/statistics?application_id={id}"),
            &app.officer(),
        )
        .await;
    assert_eq!(failed.body[0]["status"], "failed", "{}", failed.text);
    assert_eq!(failed.body[0]["overdue"], true);
}
both_backends!(an_unanswered_data_request_raises_its_answer_deadline_once);
