//! Secure aggregation over HTTP: what a study may ask for, and a round the test's own three
//! nodes run through the gateway's relay with the `secagg` client, one of them dropping out
//! after it shared its keys. The gateway must reveal the mean of the others' updates exactly
//! and refuse any update in clear.

use std::time::{Duration, Instant};

use ehds_core::{
    domain::study::TaskKind,
    secure_aggregation::{self as sa, NodeMessage, Relayed, SecaggView},
    wire::{decode_fit_ins, encode_update, NodeTask},
};
use fl_engine::{FitIns, ParameterSet};
use secagg::{
    ddg::{accounting, mechanism::DdgPlan},
    Client, ClientId,
};
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

/// Client-level DP with `extra` settings (`min_survivors`, `modulus_bits`, ...).
fn distributed_dp(extra: Value) -> Value {
    let mut dp = json!({"level": "client", "clip_norm": 1.0, "noise_multiplier": 1.0});
    for (k, v) in extra.as_object().unwrap() {
        dp[k] = v.clone();
    }
    dp
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
                    json!({"level": "record", "clip_norm": 1.0, "noise_multiplier": 2.0,
                           "sampling_rate": 0.1}),
                )],
            ),
            "dp.level",
            "dp_level_incompatible_with_secure_aggregation",
        ),
        // client-level DP is planned as the holders' distributed noise; impossible plans are
        // refused on their field
        (
            with(
                base.clone(),
                &[("dp", distributed_dp(json!({"min_survivors": 4})))],
            ),
            "dp.min_survivors",
            "min_survivors_above_holders",
        ),
        (
            // three holders: two neighbours each, threshold 2
            with(
                base.clone(),
                &[("dp", distributed_dp(json!({"min_survivors": 1})))],
            ),
            "dp.min_survivors",
            "min_survivors_below_threshold",
        ),
        (
            with(
                base.clone(),
                &[("dp", distributed_dp(json!({"modulus_bits": 3})))],
            ),
            "dp.modulus_bits",
            "modulus_too_small",
        ),
        (
            with(
                base.clone(),
                &[("dp", distributed_dp(json!({"modulus_bits": 64})))],
            ),
            "dp.modulus_bits",
            "out_of_range",
        ),
        (
            with(
                base.clone(),
                &[("dp", distributed_dp(json!({"noise_seed": 1})))],
            ),
            "dp.noise_seed",
            "not_applicable",
        ),
        (
            with(
                study_body(&permit, &THREE),
                &[("dp", distributed_dp(json!({"min_survivors": 3})))],
            ),
            "dp.min_survivors",
            "not_applicable",
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
        self.view_waiting(0).await
    }

    /// `GET …/secagg?wait=`: held while this holder has nothing to do in the current stage.
    async fn view_waiting(&self, wait: u64) -> SecaggView {
        let r = self
            .app
            .get(
                &format!("/v1/node/tasks/{}/secagg?wait={wait}", self.task.task_id),
                &self.token,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        serde_json::from_value(r.body).unwrap()
    }

    async fn send(&self, message: &NodeMessage) -> Reply {
        self.send_json(&serde_json::to_value(message).unwrap())
            .await
    }

    async fn send_json(&self, message: &Value) -> Reply {
        self.app
            .post(
                &format!("/v1/node/tasks/{}/secagg", self.task.task_id),
                &self.token,
                message,
            )
            .await
    }

    /// Waits for what the relay sends this holder when `stage` closes: one long poll, which
    /// the gateway answers when the round loop closes the stage (within 20 s).
    async fn relayed(&self, stage: &str) -> Relayed {
        let asked = Instant::now();
        let v = self.view_waiting(20).await;
        assert_ne!(
            v.stage,
            stage,
            "the long poll answered after {:?} with the relay still at {stage}",
            asked.elapsed()
        );
        v.relayed.expect("the holder is still in")
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

    // a holder the stage still waits for is answered at once, even when it asks to wait
    let asked = Instant::now();
    let v = holders[0].view_waiting(20).await;
    assert!(v.awaited && asked.elapsed() < Duration::from_secs(5));
    for (h, c) in holders.iter().zip(clients.iter_mut()) {
        let m = NodeMessage::AdvertiseKeys(c.advertise_keys().unwrap());
        let r = h.send(&m).await;
        assert_eq!(r.status, 200, "{}", r.text);
        // a retried delivery is recognised, and changes nothing
        let again = h.send(&m).await;
        assert_eq!(again.code(), "secagg_message_replayed", "{}", again.text);
    }
    for (i, (h, c)) in holders.iter().zip(clients.iter_mut()).enumerate() {
        let Relayed::Keys(keys) = h.relayed("advertise_keys").await else {
            panic!("keys expected")
        };
        let mut m =
            serde_json::to_value(NodeMessage::ShareKeys(c.share_keys(&keys).unwrap())).unwrap();
        assert!(m["shares"][0]["ciphertext"].is_string(), "base64: {m}");
        if i == 3 {
            // a gateway upgraded mid-stage finds the ShareKeys messages accepted so far inside
            // the relay's state, where releases before migration 0008 kept them: they must
            // be relayed with va's, which comes in their wire form, bytes as arrays of numbers
            let moved = messages_as_stored_before_their_table(&app, "share_keys").await;
            assert_eq!(moved, 3);
            as_arrays(&mut m, false);
            assert!(m["shares"][0]["ciphertext"].is_array(), "{m}");
        }
        let r = h.send_json(&m).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let mut relays = vec![];
    for h in &holders {
        let Relayed::Shares(s) = h.relayed("share_keys").await else {
            panic!("shares expected")
        };
        assert_eq!(s.shares.len(), 3, "one ciphertext from each neighbour");
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
    // a gateway upgraded mid-round finds the running sum inside the relay's state, where
    // releases before migration 0007 kept it: it must still unmask the right sum
    let moved = sum_as_stored_before_its_table(&app).await;
    assert!(moved.iter().any(|&x| x != 0), "three masked inputs are in");
    // the masked-input stage closes at its deadline with three of four
    for i in 0..3 {
        let Relayed::Unmask(request) = holders[i].relayed("masked_input").await else {
            panic!("unmask request expected")
        };
        assert_eq!(request.survivors.len(), 3);
        if i == 2 {
            // and the Unmasking answers accepted so far, the same way
            let moved = messages_as_stored_before_their_table(&app, "unmask").await;
            assert_eq!(moved, 2);
        }
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

/// `v` with every byte string written as an array of numbers, as releases before base64 wrote
/// them in messages and relay state: the named fields, and every fingerprint under `seen`.
fn as_arrays(v: &mut Value, under_seen: bool) {
    use base64::{engine::general_purpose::STANDARD, Engine};
    const BYTES: [&str; 4] = ["cipher_pk", "mask_pk", "ciphertext", "share"];
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if let (true, Value::String(s)) = (BYTES.contains(&k.as_str()), &*x) {
                    *x = json!(STANDARD.decode(s).unwrap());
                } else {
                    as_arrays(x, under_seen || k == "seen");
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| as_arrays(x, under_seen)),
        Value::String(s) if under_seen => *v = json!(STANDARD.decode(&*s).unwrap()),
        _ => {}
    }
}

/// A relay state as releases before migration 0008 wrote it, holding `messages` (holder,
/// stored message) under the field of `kind`: the ShareKeys messages and the Unmasking answers
/// inside it, each holder's keys as its whole AdvertiseKeys message, and every byte string an
/// array of numbers.
fn state_before_0008(state: &[u8], kind: Option<&str>, messages: &[(i64, Vec<u8>)]) -> Value {
    let mut state: Value = serde_json::from_slice(state).unwrap();
    for field in ["pending_shares", "responses"] {
        assert!(state.get(field).is_none(), "{state}");
        state[field] = json!({});
    }
    if let Some(kind) = kind {
        let field = match kind {
            "share_keys" => "pending_shares",
            "unmask" => "responses",
            other => panic!("no such kind {other}"),
        };
        for (client, m) in messages {
            state[field][client.to_string()] = serde_json::from_slice(m).unwrap();
        }
    }
    let session = state["config"]["session"].clone();
    for (id, k) in state["keys"].as_object_mut().unwrap() {
        k["session"] = session.clone();
        k["from"] = json!(id.parse::<u32>().unwrap());
    }
    as_arrays(&mut state, false);
    state
}

/// Rewrites the one open relay of `app`'s store as releases before migration 0008 wrote it
/// (`state_before_0008`), with the kept messages of `kind` moved into the state. Returns how
/// many moved.
async fn messages_as_stored_before_their_table(app: &TestApp, kind: &str) -> usize {
    macro_rules! on {
        ($pool:ty) => {{
            let pool = <$pool>::connect(&app.database_url).await.unwrap();
            let mut tx = pool.begin().await.unwrap();
            // the row is locked first, so that neither the round loop nor a message interleaves
            let states: Vec<Vec<u8>> = sqlx::query_scalar(
                "update secagg_session set row_version = row_version + 1 returning state",
            )
            .fetch_all(&mut *tx)
            .await
            .unwrap();
            assert_eq!(states.len(), 1, "one open relay");
            let kept: Vec<(i64, Vec<u8>)> =
                sqlx::query_as("select client, message from secagg_received where kind = $1")
                    .bind(kind)
                    .fetch_all(&mut *tx)
                    .await
                    .unwrap();
            let state = state_before_0008(&states[0], Some(kind), &kept);
            sqlx::query("update secagg_session set state = $1")
                .bind(serde_json::to_vec(&state).unwrap())
                .execute(&mut *tx)
                .await
                .unwrap();
            sqlx::query("delete from secagg_received")
                .execute(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
            pool.close().await;
            kept.len()
        }};
    }
    match app.backend {
        Backend::Sqlite => on!(sqlx::SqlitePool),
        Backend::Postgres => on!(sqlx::PgPool),
    }
}

/// Rewrites the one open relay of `app`'s store as releases before migration 0007 wrote it:
/// the running sum of the masked inputs as a JSON array inside the state, and no row of its
/// own; the rest as before migration 0008 (`state_before_0008`). Returns that sum.
async fn sum_as_stored_before_its_table(app: &TestApp) -> Vec<u64> {
    fn rewrite(state: &[u8], sum: &[u8]) -> (Vec<u8>, Vec<u64>) {
        let mut state = state_before_0008(state, None, &[]);
        assert!(state.get("masked_sum").is_none(), "{state}");
        // without distributed DP the ring is Z_2^64: eight bytes an entry
        let words: Vec<u64> = sum
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        state["masked_sum"] = json!(words);
        (serde_json::to_vec(&state).unwrap(), words)
    }
    macro_rules! on {
        ($pool:ty) => {{
            let pool = <$pool>::connect(&app.database_url).await.unwrap();
            let mut tx = pool.begin().await.unwrap();
            // the row is locked first, so the round loop cannot interleave
            let states: Vec<Vec<u8>> = sqlx::query_scalar(
                "update secagg_session set row_version = row_version + 1 returning state",
            )
            .fetch_all(&mut *tx)
            .await
            .unwrap();
            assert_eq!(states.len(), 1, "one open relay");
            let sum: Vec<u8> = sqlx::query_scalar("select masked_sum from secagg_masked_sum")
                .fetch_one(&mut *tx)
                .await
                .unwrap();
            let (state, words) = rewrite(&states[0], &sum);
            sqlx::query("update secagg_session set state = $1")
                .bind(state)
                .execute(&mut *tx)
                .await
                .unwrap();
            sqlx::query("delete from secagg_masked_sum")
                .execute(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
            pool.close().await;
            words
        }};
    }
    match app.backend {
        Backend::Sqlite => on!(sqlx::SqlitePool),
        Backend::Postgres => on!(sqlx::PgPool),
    }
}

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

/// A permit whose HDAB requires client-level DP and secure aggregation, over `holders`, with
/// `epsilon` for whole data holders.
async fn client_dp_secure_permit(app: &TestApp, holders: &[&str], epsilon: f64) -> String {
    let (_, permit) = app
        .permit_with(
            &federation_application(holders, epsilon, "data_holder"),
            &json!({"decision": "approve", "dp_requirement": "client",
                    "require_secure_aggregation": true}),
        )
        .await;
    permit["id"].as_str().unwrap().to_owned()
}

/// The study's distributed DP plan, as the gateway fixed it at submission.
fn plan_of(study: &Value) -> DdgPlan {
    serde_json::from_value(study["spec"]["dp"]["distributed"].clone())
        .unwrap_or_else(|e| panic!("{e}: {study}"))
}

// 4. Client-level DP under secure aggregation, realised as distributed DP, under a permit that
// requires both: the holders clip and add their shares of the noise before masking; the
// gateway adds none, decodes the sum, and spends exactly what the distributed mechanism's
// accounting gives for the minimum survivors, both at submission (the budget pre-check) and
// for the round.
async fn distributed_dp_runs_under_a_permit_requiring_client_level_dp(app: TestApp) {
    // little noise, so that the decoded mean can be checked closely: a large epsilon, which
    // the permit's budget is made to pay
    let permit = client_dp_secure_permit(&app, &THREE, 10_000.0).await;
    let alice = app.researcher();
    let body = with(
        study_body(&permit, &THREE),
        &[
            (
                "dp",
                json!({"level": "client", "clip_norm": 1.0, "noise_multiplier": 0.01}),
            ),
            ("secure_aggregation", json!({})),
            ("round_deadline_seconds", json!(30)),
        ],
    );
    let r = app.post("/v1/studies", &alice, &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_owned();
    let plan = plan_of(&r.body);
    assert_eq!(plan.params.min_survivors, 3, "defaults to min_sites");
    assert_eq!(plan.params.max_clients, 3);
    let one_round = accounting::epsilon(&plan, 1, 1e-5).unwrap().epsilon;
    assert_eq!(r.body["epsilon_planned"].as_f64().unwrap(), one_round);

    // the same study under a permit whose budget one round of it would pass: the pre-check
    // is the distributed mechanism's
    let poor = client_dp_secure_permit(&app, &THREE, 0.5).await;
    let refused = app
        .post(
            "/v1/studies",
            &alice,
            &with(body.clone(), &[("permit_id", json!(poor))]),
        )
        .await;
    assert_eq!(
        (refused.status.as_u16(), refused.code()),
        (422, "study_not_permitted"),
        "{}",
        refused.text
    );
    let mut reasons = refused.body["reasons"].clone();
    let message = reasons[0]
        .as_object_mut()
        .and_then(|r| r.remove("message"))
        .expect("a reason carries its sentence");
    assert!(
        message.as_str().unwrap().contains("one round spends"),
        "{message}"
    );
    assert_eq!(
        reasons,
        json!([{"code": "budget_too_small_for_one_round",
                "epsilon_one_round": one_round, "remaining": 0.5}]),
        "{}",
        refused.text
    );

    let mut holders = vec![];
    for org in THREE {
        let token = app.holder(org);
        let task = task_of(&app, &token, &id, TaskKind::Fit).await;
        let dp = task.study.dp.expect("the plan travels with the task");
        assert_eq!(
            dp.distributed,
            Some(plan),
            "the node gets the plan as fixed"
        );
        holders.push(Holder {
            app: &app,
            token,
            task,
        });
    }
    let start = global(&app, &holders[0].token, &holders[0].task).await;
    let flat = start.params.to_flat();
    assert_eq!(plan.params.dim, flat.len());
    // updates of norm 0.2, 0.4 and 3: the last is clipped to 1 on its holder
    let dim = flat.len() as f32;
    let norms = [0.2f32, 0.4, 3.0];
    let deltas: Vec<Vec<f32>> = norms
        .iter()
        .map(|n| vec![n / dim.sqrt(); flat.len()])
        .collect();
    let mut clients = vec![];
    for h in &holders {
        let v = h.view().await;
        assert_eq!(
            (v.config.modulus_bits, v.config.vector_len),
            (plan.params.modulus_bits, plan.padded_dim),
            "the session sums the plan's padded vectors in its ring"
        );
        clients.push(
            Client::new(v.config, ClientId(v.client), secagg::rng_from_os().unwrap()).unwrap(),
        );
    }
    for (h, c) in holders.iter().zip(clients.iter_mut()) {
        let r = h
            .send(&NodeMessage::AdvertiseKeys(c.advertise_keys().unwrap()))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
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
    let mut rng = secagg::rng_from_os().unwrap();
    for (i, (h, c)) in holders.iter().zip(clients.iter_mut()).enumerate() {
        let Relayed::Shares(shares) = h.relayed("share_keys").await else {
            panic!("shares expected")
        };
        let input = plan.encode(&deltas[i], &mut rng).unwrap();
        let r = h
            .send(&NodeMessage::MaskedInput(
                c.masked_input(&shares, &input).unwrap(),
            ))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let r = h.result(None).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    for (h, c) in holders.iter().zip(clients.iter_mut()) {
        let Relayed::Unmask(request) = h.relayed("masked_input").await else {
            panic!("unmask request expected")
        };
        let r = h
            .send(&NodeMessage::Unmask(c.unmask(&request).unwrap()))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let view = app
        .wait_for(
            &format!("/v1/studies/{id}/rounds"),
            &alice,
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
    // the noise the holders' shares add up to, over the three invited
    let noise = plan.central_variance(3).sqrt() / 3.0;
    assert!(noise >= 0.01 / 3.0, "{noise}");
    let reported = round["noise_std_on_mean"].as_f64().unwrap();
    assert!((reported - noise).abs() < 1e-12 * noise, "{round}");
    assert!(
        round["sites"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["train_loss"].is_null()),
        "{round}"
    );

    // the model every holder evaluates next: the start plus the mean of the clipped updates,
    // within six standard deviations of the holders' noise
    let eval = task_of(&app, &holders[0].token, &id, TaskKind::Evaluate).await;
    let next = global(&app, &holders[0].token, &eval)
        .await
        .params
        .to_flat();
    let clipped: f32 = norms.iter().map(|n| n.min(1.0)).sum();
    let shift = clipped / 3.0 / dim.sqrt();
    for (a, b) in next.iter().zip(&flat) {
        assert!(
            ((a - b - shift) as f64).abs() < 6.0 * noise,
            "{a} - {b} is not {shift} within the noise {noise}"
        );
    }

    // spent exactly as the distributed mechanism's accounting says, on the study and the permit
    let study = app.get(&format!("/v1/studies/{id}"), &alice).await;
    let spent = study.body["epsilon_spent"].as_f64().unwrap();
    assert!(
        (spent - one_round).abs() <= 1e-12 * one_round,
        "{spent} {one_round}"
    );
    let started = app
        .audit(&format!("action=study.round.start&resource_id={id}"))
        .await;
    let cost = started[0]["detail"]["epsilon_round"].as_f64().unwrap();
    assert!((cost - one_round).abs() <= 1e-12 * one_round, "{cost}");
    let p = app
        .get(&format!("/v1/permits/{permit}"), &app.officer())
        .await;
    let permit_spent = p.body["privacy_budget"]["epsilon_spent"].as_f64().unwrap();
    assert!(
        (permit_spent - one_round).abs() <= 1e-9 * one_round,
        "{}",
        p.text
    );
}

both_backends!(distributed_dp_runs_under_a_permit_requiring_client_level_dp);

// 5. Noise planned for all four holders, and one drops after sharing its keys: the masked
// inputs of three carry three quarters of the planned variance, so the round is discarded
// before the sum is unmasked: a failed round with the precise reason, audited, nothing spent,
// no unmasking asked of any holder.
async fn a_round_with_fewer_survivors_than_planned_is_discarded_before_unmasking(app: TestApp) {
    let permit = client_dp_secure_permit(&app, &FOUR, 50.0).await;
    let alice = app.researcher();
    let body = with(
        study_body(&permit, &FOUR),
        &[
            ("dp", distributed_dp(json!({"min_survivors": 4}))),
            ("secure_aggregation", json!({})),
            ("min_sites", json!(3)),
            ("round_deadline_seconds", json!(8)),
        ],
    );
    let r = app.post("/v1/studies", &alice, &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_owned();
    let plan = plan_of(&r.body);
    assert_eq!(plan.params.min_survivors, 4);

    let mut holders = vec![];
    for org in FOUR {
        let token = app.holder(org);
        let task = task_of(&app, &token, &id, TaskKind::Fit).await;
        holders.push(Holder {
            app: &app,
            token,
            task,
        });
    }
    let dim = plan.params.dim;
    let mut clients = vec![];
    for h in &holders {
        let v = h.view().await;
        clients.push(
            Client::new(v.config, ClientId(v.client), secagg::rng_from_os().unwrap()).unwrap(),
        );
    }
    for (h, c) in holders.iter().zip(clients.iter_mut()) {
        let r = h
            .send(&NodeMessage::AdvertiseKeys(c.advertise_keys().unwrap()))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
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
    let mut rng = secagg::rng_from_os().unwrap();
    let mut relays = vec![];
    for h in &holders {
        let Relayed::Shares(s) = h.relayed("share_keys").await else {
            panic!("shares expected")
        };
        relays.push(s);
    }
    // va stops here
    for i in 0..3 {
        let input = plan.encode(&vec![0.01; dim], &mut rng).unwrap();
        let masked = clients[i].masked_input(&relays[i], &input).unwrap();
        let r = holders[i].send(&NodeMessage::MaskedInput(masked)).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let rounds = app
        .wait_for(
            &format!("/v1/studies/{id}/rounds"),
            &alice,
            30,
            "round 1 failed",
            |v| {
                v["rounds"]
                    .as_array()
                    .is_some_and(|rs| rs.iter().any(|r| r["phase"] == "failed"))
            },
        )
        .await;
    let failed = &rounds["rounds"][0];
    assert_eq!(failed["phase"], "failed", "{rounds}");
    let reason = failed["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("3 of 4 holders in the securely aggregated sum, and the holders' noise was planned for at least 4 (dp.min_survivors)"),
        "{reason}"
    );
    let trail = app
        .audit(&format!("action=study.round.fail&resource_id={id}"))
        .await;
    assert_eq!(trail.len(), 1, "{trail:?}");
    assert_eq!(trail[0]["outcome"], "failure");
    assert_eq!(trail[0]["detail"]["reason"], reason);
    // the relay closed two stages; the survivors were never asked to unmask
    let stages: Vec<String> = app
        .audit(&format!("action=study.round.secagg&resource_id={id}"))
        .await
        .iter()
        .map(|e| e["detail"]["stage"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(stages, ["advertise_keys", "share_keys"]);
    let v = app
        .get(
            &format!("/v1/node/tasks/{}/secagg", holders[0].task.task_id),
            &holders[0].token,
        )
        .await;
    assert_ne!(
        v.status, 200,
        "the failed round's relay is gone: {}",
        v.text
    );
    let study = app.get(&format!("/v1/studies/{id}"), &alice).await;
    assert_eq!(study.body["epsilon_spent"], 0.0, "{}", study.text);
}

both_backends!(a_round_with_fewer_survivors_than_planned_is_discarded_before_unmasking);

// 6. Messages that do not belong: another session, another stage, a share addressed to a
// holder outside the sender's neighbourhood. Each is refused with the protocol's own reason as
// its code, audited, and changes nothing: the true message is accepted afterwards.
async fn misrouted_secagg_messages_are_refused_by_name(app: TestApp) {
    let permit = none_allowed_permit(&app, &THREE).await;
    let r = app
        .post(
            "/v1/studies",
            &app.researcher(),
            &with(
                secure_study(&permit, &THREE),
                &[("round_deadline_seconds", json!(60))],
            ),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_owned();
    let mut holders = vec![];
    let mut clients = vec![];
    for org in THREE {
        let token = app.holder(org);
        let task = task_of(&app, &token, &id, TaskKind::Fit).await;
        let h = Holder {
            app: &app,
            token,
            task,
        };
        let v = h.view().await;
        clients.push(
            Client::new(v.config, ClientId(v.client), secagg::rng_from_os().unwrap()).unwrap(),
        );
        holders.push(h);
    }
    let refused = |r: Reply, status: u16, code: &str| {
        assert_eq!((r.status.as_u16(), r.code()), (status, code), "{}", r.text);
    };

    // another session (a message kept from an earlier round, or forged)
    let mut keys = clients[0].advertise_keys().unwrap();
    keys.session.0[0] ^= 1;
    refused(
        holders[0].send(&NodeMessage::AdvertiseKeys(keys)).await,
        409,
        "secagg_wrong_session",
    );
    // a message of the next stage while the relay collects keys
    let me = clients[0].id();
    let session = holders[0].view().await.config.session;
    let early = secagg::messages::ShareKeys {
        session,
        from: me,
        shares: vec![],
    };
    refused(
        holders[0].send(&NodeMessage::ShareKeys(early)).await,
        409,
        "secagg_wrong_round",
    );
    // none of it counted: the relay still waits for every holder's keys
    let v = holders[0].view().await;
    assert_eq!((v.stage.as_str(), v.awaited), ("advertise_keys", true));

    // `clients[0]` advertised keys above that never reached the relay: a fresh client
    clients[0] = Client::new(v.config, me, secagg::rng_from_os().unwrap()).unwrap();
    for (h, c) in holders.iter().zip(clients.iter_mut()) {
        let r = h
            .send(&NodeMessage::AdvertiseKeys(c.advertise_keys().unwrap()))
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let Relayed::Keys(relayed) = holders[0].relayed("advertise_keys").await else {
        panic!("keys expected")
    };
    let shares = clients[0].share_keys(&relayed).unwrap();
    // a share addressed to the sender itself, then to a holder the session does not have
    for peer in [me, ClientId(9)] {
        let mut stray = shares.clone();
        stray.shares[0].peer = peer;
        refused(
            holders[0].send(&NodeMessage::ShareKeys(stray)).await,
            422,
            "secagg_not_neighbour",
        );
    }
    let r = holders[0].send(&NodeMessage::ShareKeys(shares)).await;
    assert_eq!(
        r.status, 200,
        "the true message after the refusals: {}",
        r.text
    );
    let trail = app.audit("action=node.task.secagg&outcome=denied").await;
    let codes: Vec<&str> = trail
        .iter()
        .map(|e| e["detail"]["code"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        codes,
        [
            "secagg_wrong_session",
            "secagg_wrong_round",
            "secagg_not_neighbour",
            "secagg_not_neighbour"
        ],
        "each refusal audited: {trail:?}"
    );
}

both_backends!(misrouted_secagg_messages_are_refused_by_name);
