//! The Art. 67-68 procedure from outside: drafts, requests for information that stop the
//! clock, completeness, the one extension, fee estimates, partial grants with data
//! minimisation, the four-eyes rule, deadlines that act, and the public register.

use serde_json::{json, Value};

use crate::both_backends;
use crate::helpers::*;
use ehds_gateway::app::applications::sweep_deadlines;

fn step_path(id: &str, step: &str) -> String {
    format!("/v1/applications/{id}/{step}")
}

/// The `details` of the newest audit entry of `action` on application `id`.
async fn last_step(app: &TestApp, action: &str, id: &str) -> Value {
    let entries = app
        .audit(&format!("action={action}&resource_id={id}&outcome=success"))
        .await;
    entries.last().expect("an entry")["detail"].clone()
}

async fn the_procedure_from_draft_to_partial_grant(app: TestApp) {
    let officer = app.officer();
    let alice = app.researcher();

    // A draft is the applicant's organisation's own: the HDAB neither lists nor reads it.
    let draft = app
        .post("/v1/applications?draft=true", &alice, &application())
        .await;
    assert_eq!(draft.status, 201, "{}", draft.text);
    assert_eq!(draft.body["status"], "draft");
    let id = draft.body["id"].as_str().unwrap().to_owned();
    let hidden = app.get(&format!("/v1/applications/{id}"), &officer).await;
    assert_eq!((hidden.status.as_u16(), hidden.code()), (404, "not_found"));
    let listed = app.get("/v1/applications", &officer).await;
    assert!(
        listed.body.as_array().unwrap().is_empty(),
        "{}",
        listed.text
    );
    let in_register = app
        .send(app.client.get(format!("{}/v1/register", app.base)))
        .await;
    assert_eq!(in_register.status, 200, "{}", in_register.text);
    assert!(in_register.body["entries"].as_array().unwrap().is_empty());

    // Submitted: received, in the register, no decision clock before completeness.
    let submitted = app
        .post(&step_path(&id, "submit"), &alice, &json!({}))
        .await;
    assert_eq!(submitted.status, 200, "{}", submitted.text);
    assert_eq!(submitted.body["status"], "submitted");
    assert!(submitted.body["clocks"]["decision_due"].is_null());
    let register = app
        .send(app.client.get(format!("{}/v1/register/{id}", app.base)))
        .await;
    assert_eq!(register.status, 200, "{}", register.text);
    assert_eq!(register.body["status"], "received");
    assert!(register.body.get("applicant_sub").is_none());
    assert!(!register.text.contains("alice"), "{}", register.text);

    // Incomplete: the applicant owes an answer within four weeks; a decision cannot be taken.
    let blank = app
        .post(
            &step_path(&id, "information-requests"),
            &officer,
            &json!({"questions": "  "}),
        )
        .await;
    assert_eq!((blank.status.as_u16(), blank.code()), (422, "required"));
    let asked = app
        .post(
            &step_path(&id, "information-requests"),
            &officer,
            &json!({"questions": "Which sites' ethics approvals cover the study?"}),
        )
        .await;
    assert_eq!(asked.status, 200, "{}", asked.text);
    assert_eq!(asked.body["status"], "incomplete");
    let due = asked.body["clocks"]["information_due"].as_str().unwrap();
    let due = chrono::DateTime::parse_from_rfc3339(due).unwrap();
    let requested = chrono::DateTime::parse_from_rfc3339(
        asked.body["procedure"]["information_requests"][0]["requested_at"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(due - requested, chrono::Duration::days(28));
    let early = app
        .post(
            &step_path(&id, "decision"),
            &officer,
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(early.status, 409, "{}", early.text);
    assert_eq!(early.code(), "invalid_transition");
    assert_eq!(early.body["current_state"], "incomplete");
    assert_eq!(
        early.body["allowed_transitions"],
        json!(["answer_information", "withdraw", "lapse"])
    );
    // only the applicant answers
    let by_officer = app
        .post(
            &step_path(&id, "information"),
            &officer,
            &json!({"answer": "x"}),
        )
        .await;
    assert_eq!(by_officer.status, 403, "{}", by_officer.text);
    let mut amended = application();
    amended["justification"] = json!("Ethics approvals: hosp-1 EC-2026-17, hosp-2 EC-2026-31.");
    let answered = app
        .post(
            &step_path(&id, "information"),
            &alice,
            &json!({"answer": "Both sites approved; see the justification.", "application": amended}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    assert_eq!(answered.body["status"], "submitted");
    assert_eq!(
        answered.body["request"]["justification"],
        amended["justification"]
    );

    // Complete: the three-month clock starts; one extension with reasons.
    let complete = app
        .post(&step_path(&id, "completeness"), &officer, &json!({}))
        .await;
    assert_eq!(complete.status, 200, "{}", complete.text);
    assert_eq!(complete.body["status"], "assessing");
    let first_due = complete.body["clocks"]["decision_due"]
        .as_str()
        .unwrap()
        .to_owned();
    let bad = app
        .post(
            &step_path(&id, "extension"),
            &officer,
            &json!({"months": 4, "reasons": ""}),
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    let fields: Vec<&str> = bad.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["reasons", "months"]);
    let extended = app
        .post(
            &step_path(&id, "extension"),
            &officer,
            &json!({"months": 3, "reasons": "Cross-border request: four holders' costs to collect"}),
        )
        .await;
    assert_eq!(extended.status, 200, "{}", extended.text);
    let second_due = extended.body["clocks"]["decision_due"].as_str().unwrap();
    assert!(
        second_due > first_due.as_str(),
        "{second_due} after {first_due}"
    );
    let twice = app
        .post(
            &step_path(&id, "extension"),
            &officer,
            &json!({"months": 1, "reasons": "again"}),
        )
        .await;
    assert_eq!(
        (twice.status.as_u16(), twice.code()),
        (409, "invalid_transition")
    );

    // A fee estimate holds the decision until the applicant accepts it.
    let bad_fee = app
        .post(
            &step_path(&id, "fee-estimate"),
            &officer,
            &json!({"currency": "euro", "lines": [{"description": "processing", "amount_minor": -1}]}),
        )
        .await;
    assert_eq!(bad_fee.status, 422, "{}", bad_fee.text);
    let fee = app
        .post(
            &step_path(&id, "fee-estimate"),
            &officer,
            &json!({"currency": "EUR", "lines": [
                {"description": "HDAB processing, 6 h at EUR 90", "amount_minor": 54000},
                {"description": "data holders' preparation", "amount_minor": 12050}
            ]}),
        )
        .await;
    assert_eq!(fee.status, 200, "{}", fee.text);
    assert_eq!(fee.body["status"], "fee_pending");
    assert_eq!(fee.body["procedure"]["fee_estimate"]["total_minor"], 66050);
    let accepted_by_officer = app
        .post(
            &step_path(&id, "fee-estimate/acceptance"),
            &officer,
            &json!({}),
        )
        .await;
    assert_eq!(
        accepted_by_officer.status, 403,
        "{}",
        accepted_by_officer.text
    );
    let accepted = app
        .post(
            &step_path(&id, "fee-estimate/acceptance"),
            &alice,
            &json!({}),
        )
        .await;
    assert_eq!(accepted.status, 200, "{}", accepted.text);
    assert_eq!(accepted.body["status"], "assessing");

    // A partial grant: one holder, one category found unnecessary; reasons required.
    let without_reason = app
        .post(
            &step_path(&id, "decision"),
            &officer,
            &json!({"decision": "approve", "scope": {"data_holders": ["hosp-1"]}}),
        )
        .await;
    assert_eq!(
        (without_reason.status.as_u16(), without_reason.code()),
        (422, "reason_required")
    );
    let inconsistent = app
        .post(
            &step_path(&id, "decision"),
            &officer,
            &json!({"decision": "approve", "reason": "r",
                    "minimisation": [{"category": "health_determinants", "necessary": false}]}),
        )
        .await;
    assert_eq!(inconsistent.status, 422, "{}", inconsistent.text);
    assert_eq!(
        inconsistent.body["errors"][0]["code"],
        "unnecessary_category_granted"
    );
    let granted = app
        .post(
            &step_path(&id, "decision"),
            &officer,
            &json!({"decision": "approve",
                    "reason": "Granted for hosp-1's EHR data only: hosp-2 holds no eligible cohort",
                    "scope": {"data_holders": ["hosp-1"], "categories": ["ehr_data"]},
                    "minimisation": [
                        {"category": "ehr_data", "necessary": true, "note": "outcome and predictors"},
                        {"category": "health_determinants", "necessary": false, "note": "not used by the model"}
                    ]}),
        )
        .await;
    assert_eq!(granted.status, 200, "{}", granted.text);
    assert_eq!(granted.body["application"]["status"], "partially_approved");
    let permit = &granted.body["permit"];
    let holders: Vec<&str> = permit["terms"]["data_holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["value"].as_str().unwrap())
        .collect();
    assert_eq!(holders, ["hosp-1"]);
    assert_eq!(permit["terms"]["categories"].as_array().unwrap().len(), 1);

    // Each step is one audited entry naming the states it moved between.
    let step = last_step(&app, "application.assess", &id).await;
    assert_eq!(step["step"], "send_fee_estimate");
    let respond = last_step(&app, "application.respond", &id).await;
    assert_eq!(
        (
            respond["step"].as_str(),
            respond["from"].as_str(),
            respond["to"].as_str()
        ),
        (
            Some("accept_fee_estimate"),
            Some("fee_pending"),
            Some("assessing")
        )
    );
    let decided = last_step(&app, "application.decide", &id).await;
    assert_eq!(decided["decision"], "partially_approved");

    // The register shows the published decision, the permit and the accepted fee.
    let entry = app
        .send(app.client.get(format!("{}/v1/register/{id}", app.base)))
        .await;
    assert_eq!(entry.body["status"], "partially_approved", "{}", entry.text);
    assert_eq!(entry.body["extended_months"], 3);
    let decision = &entry.body["decision"];
    assert_eq!(decision["granted_data_holders"], json!(["hosp-1"]));
    assert_eq!(decision["fee"]["total_minor"], 66050);
    assert_eq!(decision["permit"]["status"], "active");
    assert!(!entry.text.contains("officer-1"), "{}", entry.text);
    let feed = app
        .send(app.client.get(format!("{}/v1/register/feed", app.base)))
        .await;
    assert_eq!(feed.status, 200);
    assert!(feed.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/atom+xml"));
    assert!(
        feed.text.contains(&format!("<id>urn:uuid:{id}</id>")),
        "{}",
        feed.text
    );
    assert!(feed
        .text
        .contains("<title>partially_approved: Federated model"));
}
both_backends!(the_procedure_from_draft_to_partial_grant);

async fn a_grant_needs_a_second_officer_under_four_eyes(app: TestApp) {
    let created = app.apply(&application()).await;
    let id = created.body["id"].as_str().unwrap().to_owned();
    let proposed = app
        .post(
            &step_path(&id, "decision"),
            &app.officer(),
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(proposed.status, 200, "{}", proposed.text);
    assert_eq!(
        proposed.body["application"]["status"],
        "awaiting_confirmation"
    );
    assert!(proposed.body["permit"].is_null());
    let same = app
        .post(
            &step_path(&id, "confirmation"),
            &app.officer(),
            &json!({"confirm": true}),
        )
        .await;
    assert_eq!(
        (same.status.as_u16(), same.code()),
        (409, "second_officer_required")
    );
    let second = app.token("officer-2", &["hdab_officer"], Some("hdab-de"));
    let no_reason = app
        .post(
            &step_path(&id, "confirmation"),
            &second,
            &json!({"confirm": false}),
        )
        .await;
    assert_eq!(
        (no_reason.status.as_u16(), no_reason.code()),
        (422, "reason_required")
    );
    let declined = app
        .post(
            &step_path(&id, "confirmation"),
            &second,
            &json!({"confirm": false, "reason": "add a publication review condition"}),
        )
        .await;
    assert_eq!(declined.status, 200, "{}", declined.text);
    assert_eq!(declined.body["application"]["status"], "assessing");
    let again = app
        .post(
            &step_path(&id, "decision"),
            &app.officer(),
            &json!({"decision": "approve", "conditions": "results reviewed before publication"}),
        )
        .await;
    assert_eq!(again.body["application"]["status"], "awaiting_confirmation");
    let confirmed = app
        .post(
            &step_path(&id, "confirmation"),
            &second,
            &json!({"confirm": true}),
        )
        .await;
    assert_eq!(confirmed.status, 200, "{}", confirmed.text);
    assert_eq!(confirmed.body["application"]["status"], "approved");
    assert_eq!(
        confirmed.body["permit"]["terms"]["conditions"],
        "results reviewed before publication"
    );
    assert_eq!(confirmed.body["application"]["decided_by"], "officer-2");
}

mod four_eyes {
    use super::*;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        a_grant_needs_a_second_officer_under_four_eyes(
            TestApp::spawn_with(Backend::Sqlite, |s| s.procedure.four_eyes = true).await,
        )
        .await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        a_grant_needs_a_second_officer_under_four_eyes(
            TestApp::spawn_with(Backend::Postgres, |s| s.procedure.four_eyes = true).await,
        )
        .await
    }
}

async fn deadlines_act_once_and_show_as_overdue(app: TestApp) {
    let officer = app.officer();
    let state = app.state.clone().expect("the gateway runs in process");
    let rules = state.procedure.clone();
    let store = state.store.clone();
    let sweep = |days: i64| {
        let rules = rules.clone();
        let store = store.clone();
        async move {
            let mut tx = store.begin().await.unwrap();
            let done = sweep_deadlines(
                &mut *tx,
                &rules,
                ehds_core::domain::time::now() + chrono::Duration::days(days),
            )
            .await
            .unwrap();
            tx.commit().await.unwrap();
            done
        }
    };
    // one application waits for an answer, another for its decision
    let asked = app.apply(&application()).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = app
        .post(
            &step_path(&asked, "information-requests"),
            &officer,
            &json!({"questions": "q"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let assessing = app.apply(&application()).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = app
        .post(&step_path(&assessing, "completeness"), &officer, &json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // nothing has passed yet
    let none = app.get("/v1/applications?overdue=true", &officer).await;
    assert_eq!(none.status, 200, "{}", none.text);
    assert!(none.body.as_array().unwrap().is_empty(), "{}", none.text);
    let done = sweep(0).await;
    assert_eq!((done.lapsed, done.raised), (0, 0));

    // 27 days on: the answer is not yet late
    assert_eq!(sweep(27).await.lapsed, 0);
    // 29 days on the request lapses; a second sweep finds nothing more to do
    let done = sweep(29).await;
    assert_eq!((done.lapsed, done.raised), (1, 0));
    let lapsed = app
        .get(&format!("/v1/applications/{asked}"), &officer)
        .await;
    assert_eq!(lapsed.body["status"], "lapsed");
    let entry = app
        .audit(&format!("action=application.lapse&resource_id={asked}"))
        .await;
    assert_eq!(entry.len(), 1);
    assert_eq!(entry[0]["actor"]["sub"], "system");
    assert_eq!(sweep(29).await.lapsed, 0);

    // past the three months the decision deadline is raised once
    let done = sweep(100).await;
    assert_eq!((done.lapsed, done.raised), (0, 1));
    assert_eq!(sweep(100).await.raised, 0);
    let raised = app
        .audit(&format!(
            "action=application.deadline&resource_id={assessing}"
        ))
        .await;
    assert_eq!(raised.len(), 1);
    assert_eq!(raised[0]["detail"]["deadline"], "decision");

    // filters
    let by_state = app
        .get("/v1/applications?status=lapsed,incomplete", &officer)
        .await;
    let ids: Vec<&str> = by_state
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [asked.as_str()]);
    let bad = app.get("/v1/applications?status=pending", &officer).await;
    assert_eq!((bad.status.as_u16(), bad.code()), (400, "invalid_query"));
}
both_backends!(deadlines_act_once_and_show_as_overdue);

async fn decisions_wait_for_publication_when_the_hdab_reviews_them(app: TestApp) {
    let created = app.apply(&application()).await;
    let id = created.body["id"].as_str().unwrap().to_owned();
    let refused = app
        .post(
            &step_path(&id, "decision"),
            &app.officer(),
            &json!({"decision": "reject", "reason": "The purpose is not among Art. 53(1)'s"}),
        )
        .await;
    assert_eq!(refused.status, 200, "{}", refused.text);
    let clocks = &refused.body["application"]["clocks"];
    assert!(clocks["publication_due"].is_string(), "{clocks}");
    assert_eq!(clocks["next_due"], clocks["publication_due"]);
    let entry = app
        .send(app.client.get(format!("{}/v1/register/{id}", app.base)))
        .await;
    assert_eq!(entry.body["status"], "received");
    assert!(entry.body["decision"].is_null());
    // nor does the summary count it as decided (the count is below the small-cell threshold:
    // its key shows, its value does not)
    let register = app
        .send(app.client.get(format!("{}/v1/register", app.base)))
        .await;
    let by_status = &register.body["summary"]["by_status"];
    assert!(by_status.get("rejected").is_none(), "{by_status}");
    assert!(by_status.get("open").is_some(), "{by_status}");
    let published = app
        .post(&step_path(&id, "publication"), &app.officer(), &json!({}))
        .await;
    assert_eq!(published.status, 200, "{}", published.text);
    assert!(published.body["clocks"]["next_due"].is_null());
    let entry = app
        .send(app.client.get(format!("{}/v1/register/{id}", app.base)))
        .await;
    assert_eq!(entry.body["status"], "rejected");
    let register = app
        .send(app.client.get(format!("{}/v1/register", app.base)))
        .await;
    let by_status = &register.body["summary"]["by_status"];
    assert!(
        by_status.get("rejected").is_some_and(|n| n.is_null()),
        "{by_status}"
    );
    assert!(by_status.get("open").is_none(), "{by_status}");
    assert_eq!(
        entry.body["decision"]["reasons"],
        "The purpose is not among Art. 53(1)'s"
    );
    let twice = app
        .post(&step_path(&id, "publication"), &app.officer(), &json!({}))
        .await;
    assert_eq!(twice.status, 409, "{}", twice.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_wait_for_publication_when_the_hdab_reviews_them_sqlite() {
    decisions_wait_for_publication_when_the_hdab_reviews_them(
        TestApp::spawn_with(Backend::Sqlite, |s| s.procedure.publish_on_decision = false).await,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_wait_for_publication_when_the_hdab_reviews_them_postgres() {
    decisions_wait_for_publication_when_the_hdab_reviews_them(
        TestApp::spawn_with(Backend::Postgres, |s| {
            s.procedure.publish_on_decision = false
        })
        .await,
    )
    .await
}

async fn fees_follow_the_schedule(app: TestApp) {
    let officer = app.officer();
    let alice = app.researcher();
    let mut body = application();
    body["applicant"]["user_kinds"] = json!(["university_researcher"]);
    let id = app.apply(&body).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // a grant needs an accepted estimate once the HDAB charges fees (Art. 62(5))
    let early = app
        .post(
            &step_path(&id, "decision"),
            &officer,
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(
        (early.status.as_u16(), early.code()),
        (409, "fee_estimate_required")
    );
    let r = app
        .post(&step_path(&id, "completeness"), &officer, &json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let foreign = app
        .post(
            &step_path(&id, "fee-estimate"),
            &officer,
            &json!({"hours": 6.5, "holder_costs": [{"data_holder": "hosp-9", "amount_minor": 100}]}),
        )
        .await;
    assert_eq!(
        (foreign.status.as_u16(), foreign.code()),
        (422, "not_requested")
    );
    let estimate = app
        .post(
            &step_path(&id, "fee-estimate"),
            &officer,
            &json!({"hours": 6.4, "holder_costs": [{"data_holder": "hosp-1", "amount_minor": 12050}]}),
        )
        .await;
    assert_eq!(estimate.status, 200, "{}", estimate.text);
    let fee = &estimate.body["procedure"]["fee_estimate"];
    // 300.00 + 200.00 + 6.5 h x 90.00 = 1 085.00; 30% off = 325.50; plus hosp-1's 120.50
    let amounts: Vec<i64> = fee["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["amount_minor"].as_i64().unwrap())
        .collect();
    assert_eq!(amounts, [30_000, 20_000, 58_500, -32_550, 12_050]);
    assert_eq!(fee["total_minor"], 88_000);
    assert_eq!(fee["currency"], "EUR");
    let r = app
        .post(
            &step_path(&id, "fee-estimate/acceptance"),
            &alice,
            &json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let granted = app
        .post(
            &step_path(&id, "decision"),
            &officer,
            &json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(granted.status, 200, "{}", granted.text);
    let invoice = &granted.body["application"]["procedure"]["invoice"];
    assert_eq!(
        (
            invoice["total_minor"].as_i64(),
            invoice["holders_minor"].as_i64()
        ),
        (Some(88_000), Some(12_050))
    );

    // withdrawing after the estimate owes only the assessment, reduced alike
    let other = app.apply(&body).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.post(&step_path(&other, "completeness"), &officer, &json!({}))
        .await;
    let r = app
        .post(
            &step_path(&other, "fee-estimate"),
            &officer,
            &json!({"hours": 1}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let withdrawn = app
        .post(&step_path(&other, "withdraw"), &alice, &json!({}))
        .await;
    assert_eq!(withdrawn.status, 200, "{}", withdrawn.text);
    assert_eq!(
        withdrawn.body["procedure"]["invoice"]["total_minor"],
        21_000
    );
    // and a refusal is never invoiced
    let third = app.apply(&body).await.body["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = app
        .post(
            &step_path(&third, "decision"),
            &officer,
            &json!({"decision": "reject", "reason": "r"}),
        )
        .await;
    assert_eq!(refused.status, 200, "{}", refused.text);
    assert!(refused.body["application"]["procedure"]["invoice"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fees_follow_the_schedule_sqlite() {
    fees_follow_the_schedule(
        TestApp::spawn_with(Backend::Sqlite, |s| {
            s.fees = Some(ehds_core::domain::application::fees::FeeSchedule {
                currency: "EUR".into(),
                assessment_minor: 30_000,
                permit_minor: 20_000,
                hourly_minor: 9_000,
                reductions: vec![ehds_core::domain::application::fees::Reduction {
                    applies_to:
                        ehds_core::domain::application::fees::UserKind::UniversityResearcher,
                    percent: 30,
                }],
            })
        })
        .await,
    )
    .await
}
