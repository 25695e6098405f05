//! Secure aggregation over HTTP: what a study may ask for, and a round the test's own three
//! nodes run through the gateway's relay with the `secagg` client, one of them dropping out
//! after it shared its keys. The gateway must reveal the mean of the others' updates exactly
//! and refuse any update in clear.

use std::time::{Duration, Instant};

use ehds_gateway::{
    domain::study::TaskKind,
    federation::{
        secure_aggregation::{self as sa, NodeMessage, Relayed, SecaggView},
        wire::{decode_fit_ins, encode_update, NodeTask},
    },
};
use fl_engine::{FitIns, ParameterSet};
use secagg::{Client, ClientId};
use serde_json::{json, Value};

use crate::both_backends;
use crate::helpers::*;

const THREE: [&str; 3] = ["cleveland", "hungarian", "switzerland"];
const FOUR: [&str; 4] = ["cleveland", "hungarian", "switzerland", "va"];

fn with(mut body: Value, edits: &[(&str, Value)]) -> Value {
    for (path, v) in edits {
        let mut at = &mut body;
        let parts: Vec<&str> = path.split('.').collect();
        for p in &parts[..parts.len() - 1] {
            at = &mut at[*p];
        }
        at[parts[parts.len() - 1]] = v.clone();
    }
    body
}

async fn none_allowed_permit(app: &TestApp, holders: &[&str]) -> String {
    let (_, permit) = app
        .permit_with(
            &federation_application(holders, 10.0, "record"),
            &json!({"decision": "approve", "dp_requirement": "none_allowed"}),
        )
        .await;
    permit["id"].as_str().unwrap().to_owned()
}

fn secure_study(permit: &str, holders: &[&str]) -> Value {
    with(
        study_body(permit, holders),
        &[
            ("dp", json!({"level": "none"})),
            ("secure_aggregation", json!({})),
        ],
    )
}

fn field_codes(r: &Reply) -> Vec<(String, String)> {
    r.body["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors in {}", r.text))
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_owned(),
                e["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn studies_listed(app: &TestApp) -> usize {
    let r = app.get("/v1/studies", &app.researcher()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body.as_array().unwrap().len()
}

// 1. Which studies may run under secure aggregation: refused with a precise code on its field,
// nothing stored, the refusal audited.
async fn secure_aggregation_is_checked_at_submission(app: TestApp) {
    let permit = none_allowed_permit(&app, &THREE).await;
    let alice = app.researcher();
    let base = secure_study(&permit, &THREE);
    let cases = [
        (
            with(base.clone(), &[("strategy", json!({"name": "scaffold"}))]),
            "strategy.name",
            "strategy_incompatible_with_secure_aggregation",
        ),
        (
            with(
                base.clone(),
                &[(
                    "dp",
                    json!({"level": "client", "clip_norm": 1.0, "noise_multiplier": 2.0}),
                )],
            ),
            "dp.level",
            "dp_level_incompatible_with_secure_aggregation",
        ),
        (
            with(base.clone(), &[("aggregation", json!({"rule": "median"}))]),
            "aggregation",
            "aggregation_incompatible_with_secure_aggregation",
        ),
        (
            with(
                base.clone(),
                &[
                    ("data_holders", json!(["cleveland", "hungarian"])),
                    ("min_sites", json!(2)),
                ],
            ),
            "secure_aggregation",
            "secure_aggregation_needs_three_holders",
        ),
        (
            with(
                base.clone(),
                &[("secure_aggregation", json!({"neighbours": 1}))],
            ),
            "secure_aggregation.neighbours",
            "out_of_range",
        ),
        (
            with(
                base.clone(),
                &[("secure_aggregation", json!({"threshold": 1}))],
            ),
            "secure_aggregation.threshold",
            "out_of_range",
        ),
    ];
    for (body, field, code) in cases {
        let before = app.audit("action=study.create&outcome=denied").await.len();
        let r = app.post("/v1/studies", &alice, &body).await;
        assert_eq!(r.status, 422, "{}", r.text);
        assert!(
            field_codes(&r).contains(&(field.to_owned(), code.to_owned())),
            "{field} {code}: {}",
            r.text
        );
        let trail = app.audit("action=study.create&outcome=denied").await;
        assert_eq!(trail.len(), before + 1, "the refusal is audited once");
    }
    assert_eq!(studies_listed(&app).await, 0, "a refused study was stored");
    let r = app.post("/v1/studies", &alice, &base).await;
    assert_eq!(r.status, 201, "{}", r.text);
}

both_backends!(secure_aggregation_is_checked_at_submission);

/// One of the test's nodes: the holder's token and its task.
struct Holder<'a> {
    app: &'a TestApp,
    token: String,
    task: NodeTask,
}

impl Holder<'_> {
    async fn view(&self) -> SecaggView {
        let r = self
            .app
            .get(
                &format!("/v1/node/tasks/{}/secagg", self.task.task_id),
                &self.token,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        serde_json::from_value(r.body).unwrap()
    }

    async fn send(&self, message: &NodeMessage) -> Reply {
        self.app
            .post(
                &format!("/v1/node/tasks/{}/secagg", self.task.task_id),
                &self.token,
                &serde_json::to_value(message).unwrap(),
            )
            .await
    }

    /// Waits (up to 20 s) for what the relay sends this holder when `stage` closes.
    async fn relayed(&self, stage: &str) -> Relayed {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let v = self.view().await;
            if v.stage != stage {
                return v.relayed.expect("the holder is still in");
            }
            assert!(Instant::now() < until, "the relay stays at {stage}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn result(&self, parameters: Option<String>) -> Reply {
        self.app
            .post(
                &format!("/v1/node/tasks/{}/result", self.task.task_id),
                &self.token,
                &json!({
                    "num_examples": 50,
                    "excluded_subjects": 0,
                    "registry_version": self.task.registry_version,
                    "parameters": parameters,
                }),
            )
            .await
    }
}

async fn task_of(app: &TestApp, token: &str, study: &str, kind: TaskKind) -> NodeTask {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let r = app.get("/v1/node/tasks", token).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let tasks: Vec<NodeTask> = serde_json::from_value(r.body).unwrap();
        if let Some(t) = tasks
            .into_iter()
            .find(|t| t.study_id.to_string() == study && t.kind == kind)
        {
            return t;
        }
        assert!(Instant::now() < until, "no {kind:?} task of {study}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn global(app: &TestApp, token: &str, task: &NodeTask) -> FitIns {
    let r = app
        .client
        .get(format!(
            "{}/v1/node/tasks/{}/parameters",
            app.base, task.task_id
        ))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    decode_fit_ins(&r.bytes().await.unwrap(), task.study_id, task.round).unwrap()
}

// 2. A round through the relay: four holders advertise and share keys, va then drops out; the
// others' masks with it are removed with the shares of its mask key, and the round's model is
// the global model plus the mean of the three other updates. Replays, wrong senders and clear updates
// are refused without changing anything.
async fn a_secure_round_survives_a_dropout_and_reveals_only_the_mean(app: TestApp) {
    let permit = none_allowed_permit(&app, &FOUR).await;
    let body = with(
        secure_study(&permit, &FOUR),
        &[
            ("min_sites", json!(3)),
            ("round_deadline_seconds", json!(8)),
        ],
    );
    let r = app.post("/v1/studies", &app.researcher(), &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_owned();

    let mut holders = vec![];
    for org in FOUR {
        let token = app.holder(org);
        let task = task_of(&app, &token, &id, TaskKind::Fit).await;
        assert_eq!(
            task.study
                .secure_aggregation
                .map(|s| (s.threshold, s.neighbours)),
            Some((2, 3)),
            "defaults for four holders: the complete graph, two of three neighbours"
        );
        holders.push(Holder {
            app: &app,
            token,
            task,
        });
    }
    let start = global(&app, &holders[0].token, &holders[0].task).await;
    let flat = start.params.to_flat();
    // holder i moves every entry by (i + 1) / 100
    let deltas: Vec<Vec<f32>> = (0..4)
        .map(|i| vec![(i + 1) as f32 / 100.0; flat.len()])
        .collect();

    let mut clients = vec![];
    for h in &holders {
        let v = h.view().await;
        assert_eq!((v.stage.as_str(), v.awaited), ("advertise_keys", true));
        assert_eq!(v.config.clients, 4);
        assert_eq!(v.config.vector_len, flat.len());
        clients.push(
            Client::new(v.config, ClientId(v.client), secagg::rng_from_os().unwrap()).unwrap(),
        );
    }
    let mut ids: Vec<u32> = clients.iter().map(|c| c.id().0).collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3, 4]);

    // a holder may only speak for itself
    let forged = clients[1].advertise_keys().unwrap();
    let r = holders[0].send(&NodeMessage::AdvertiseKeys(forged)).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "secagg_wrong_sender"),
        "{}",
        r.text
    );
    // `clients[1]` advertised nothing: its keys above never reached the relay
    clients[1] = Client::new(
        holders[1].view().await.config,
        clients[1].id(),
        secagg::rng_from_os().unwrap(),
    )
    .unwrap();

    for (h, c) in holders.iter().zip(clients.iter_mut()) {
        let m = NodeMessage::AdvertiseKeys(c.advertise_keys().unwrap());
        let r = h.send(&m).await;
        assert_eq!(r.status, 200, "{}", r.text);
        // a retried delivery is recognised, and changes nothing
        let again = h.send(&m).await;
        assert_eq!(again.code(), "secagg_message_replayed", "{}", again.text);
    }
    for (h, c) in holders.iter().zip(clients.iter_mut()) {
        let Relayed::Keys(keys) = h.relayed("advertise_keys").await else {
            panic!("keys expected")
        };
        let r = h
            .send(&NodeMessage::ShareKeys(c.share_keys(&keys).unwrap()))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let mut relays = vec![];
    for h in &holders {
        let Relayed::Shares(s) = h.relayed("share_keys").await else {
            panic!("shares expected")
        };
        relays.push(s);
    }
    // va stops here: it shared its keys but sends no masked input
    let encoder = sa::encoding(4).unwrap();
    for i in 0..3 {
        let h = &holders[i];
        // an update in clear is refused, nothing stored
        let clear = encode_update(
            &ParameterSet::from_flat(&start.params, &deltas[i]).unwrap(),
            &ParameterSet::new(),
            h.task.study_id,
            1,
            &h.task.data_holder,
        )
        .unwrap();
        let r = h.result(Some(clear)).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (422, "clear_update_refused"),
            "{}",
            r.text
        );
        let input = encoder.encode(&deltas[i]).unwrap();
        let masked = clients[i].masked_input(&relays[i], &input).unwrap();
        assert_ne!(masked.masked, input, "the input leaves the holder masked");
        let r = h.send(&NodeMessage::MaskedInput(masked)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let r = h.result(None).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    // the masked-input stage closes at its deadline with three of four
    for i in 0..3 {
        let Relayed::Unmask(request) = holders[i].relayed("masked_input").await else {
            panic!("unmask request expected")
        };
        assert_eq!(request.survivors.len(), 3);
        let r = holders[i]
            .send(&NodeMessage::Unmask(clients[i].unmask(&request).unwrap()))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let view = app
        .wait_for(
            &format!("/v1/studies/{id}/rounds"),
            &app.researcher(),
            30,
            "round 1 aggregated",
            |v| {
                v["rounds"]
                    .as_array()
                    .is_some_and(|rs| rs.iter().any(|r| r["phase"] == "aggregated"))
            },
        )
        .await;
    let round = &view["rounds"][0];
    let contributed: Vec<(String, bool)> = round["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["data_holder"].as_str().unwrap().to_owned(),
                s["contributed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        contributed,
        [
            ("cleveland".to_owned(), true),
            ("hungarian".to_owned(), true),
            ("switzerland".to_owned(), true),
            ("va".to_owned(), false)
        ],
        "{round}"
    );
    // the model every holder evaluates next: the start plus the mean of the two updates
    let eval = task_of(&app, &holders[0].token, &id, TaskKind::Evaluate).await;
    let next = global(&app, &holders[0].token, &eval)
        .await
        .params
        .to_flat();
    let expected_shift = (deltas[0][0] + deltas[1][0] + deltas[2][0]) / 3.0;
    for (a, b) in next.iter().zip(&flat) {
        assert!(
            (a - b - expected_shift).abs() < 1e-5,
            "{a} - {b} is not {expected_shift}"
        );
    }
    let stages = app
        .audit(&format!("action=study.round.secagg&resource_id={id}"))
        .await;
    let closed: Vec<&str> = stages
        .iter()
        .map(|e| e["detail"]["stage"].as_str().unwrap())
        .collect();
    assert_eq!(closed, ["advertise_keys", "share_keys", "masked_input"]);
    let accepted = app.audit("action=node.task.secagg&outcome=success").await;
    assert_eq!(
        accepted.len(),
        4 + 4 + 3 + 3,
        "one entry per accepted message"
    );
}

both_backends!(a_secure_round_survives_a_dropout_and_reveals_only_the_mean);

// 3. The HDAB's decision can require secure aggregation: a study without it is refused under
// such a permit (audited, nothing stored), one with it is accepted.
async fn a_permit_can_require_secure_aggregation(app: TestApp) {
    let (_, permit) = app
        .permit_with(
            &federation_application(&THREE, 10.0, "record"),
            &json!({"decision": "approve", "dp_requirement": "none_allowed",
                    "require_secure_aggregation": true}),
        )
        .await;
    assert_eq!(
        permit["terms"]["require_secure_aggregation"], true,
        "{permit}"
    );
    let permit = permit["id"].as_str().unwrap().to_owned();
    let alice = app.researcher();
    let plain = with(
        study_body(&permit, &THREE),
        &[("dp", json!({"level": "none"}))],
    );
    let r = app.post("/v1/studies", &alice, &plain).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "study_not_permitted"),
        "{}",
        r.text
    );
    assert_eq!(
        r.body["reasons"],
        json!([{"code": "secure_aggregation_required",
                "message": "the permit requires secure aggregation, which the study does not use"}]),
        "{}",
        r.text
    );
    let trail = app.audit("action=study.create&outcome=denied").await;
    assert_eq!(trail.len(), 1, "the refusal is audited");
    assert_eq!(studies_listed(&app).await, 0);
    let r = app
        .post("/v1/studies", &alice, &secure_study(&permit, &THREE))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
}

both_backends!(a_permit_can_require_secure_aggregation);
