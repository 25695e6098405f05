//! Federated studies over HTTP: submission against the permit, the node protocol's refusals,
//! deadlines, governance changes in the middle of a round, the privacy budget, cancellation and
//! the output check. The test plays the data holders' nodes itself: it fetches tasks, downloads
//! the global model and uploads it back slightly changed.

use std::time::{Duration, Instant};

use base64::Engine as _;
use ehds_core::{
    domain::{
        study::{DecisionThreshold, TaskKind},
        OrgId, StudyId,
    },
    wire::{decode_fit_ins, encode_update, NodeTask},
};
use fl_engine::{FitIns, ParameterSet};
use serde_json::{json, Value};

use crate::both_backends;
use crate::helpers::*;

const TWO: [&str; 2] = ["cleveland", "hungarian"];
const THREE: [&str; 3] = ["cleveland", "hungarian", "switzerland"];

/// A data holder's node, played by the test.
struct Node<'a> {
    app: &'a TestApp,
    org: &'static str,
    token: String,
}

impl<'a> Node<'a> {
    fn new(app: &'a TestApp, org: &'static str) -> Self {
        Self {
            app,
            org,
            token: app.holder(org),
        }
    }

    fn holder(&self) -> OrgId {
        OrgId::parse(self.org).expect("valid organisation id")
    }

    /// The node's open tasks right now.
    async fn tasks(&self) -> Vec<NodeTask> {
        let r = self.app.get("/v1/node/tasks", &self.token).await;
        assert_eq!(r.status, 200, "{}", r.text);
        serde_json::from_value(r.body).expect("tasks parse")
    }

    /// Waits (up to 30 s) for the node's task of `kind` in `round` of `study`.
    async fn task(&self, study: &str, round: u64, kind: TaskKind) -> NodeTask {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(t) = self
                .tasks()
                .await
                .into_iter()
                .find(|t| t.study_id.to_string() == study && t.round == round && t.kind == kind)
            {
                return t;
            }
            assert!(
                Instant::now() < until,
                "{} never got its {kind:?} task of round {round}",
                self.org
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn global(&self, task: &NodeTask) -> FitIns {
        let r = self
            .app
            .client
            .get(format!(
                "{}/v1/node/tasks/{}/parameters",
                self.app.base, task.task_id
            ))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let bytes = r.bytes().await.unwrap();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        decode_fit_ins(&bytes, task.study_id, task.round).expect("global model")
    }

    /// The global model, every value moved by `delta`, as this node's update for `task`.
    async fn echo(&self, task: &NodeTask, delta: f32) -> String {
        let ins = self.global(task).await;
        encode_update(
            &shifted(&ins.params, delta),
            &ins.extras,
            task.study_id,
            task.round,
            &self.holder(),
        )
        .unwrap()
    }

    async fn upload(&self, task: &NodeTask, body: &Value) -> Reply {
        self.app
            .post(
                &format!("/v1/node/tasks/{}/result", task.task_id),
                &self.token,
                body,
            )
            .await
    }

    /// Answers `task` correctly, reporting `samples` training examples.
    async fn answer(&self, task: &NodeTask, samples: u64) {
        let parameters = match task.kind {
            TaskKind::Fit => Some(self.echo(task, 0.01).await),
            TaskKind::Evaluate => None,
        };
        let r = self
            .upload(task, &result_body(task, samples, parameters))
            .await;
        assert_eq!(
            r.status, 200,
            "{} answering {:?}: {}",
            self.org, task.kind, r.text
        );
    }
}

fn shifted(params: &ParameterSet, delta: f32) -> ParameterSet {
    let mut out = ParameterSet::new();
    for (name, t) in params.iter() {
        out.insert(
            name.clone(),
            t.shape.clone(),
            t.values.iter().map(|v| v + delta).collect(),
        )
        .unwrap();
    }
    out
}

fn result_body(task: &NodeTask, samples: u64, parameters: Option<String>) -> Value {
    json!({
        "num_examples": samples,
        "excluded_subjects": 1,
        "registry_version": task.registry_version,
        "parameters": parameters,
        "train_loss": 0.5,
        "local_steps": 20,
    })
}

/// A well-formed, untampered parameter file whose values are all NaN: the header's digest is
/// that of the NaN values, so only the finiteness check can refuse it. (`encode_update` refuses
/// to write non-finite values, so the file is made from a finite one.)
fn nan_update(params: &ParameterSet, task: &NodeTask, holder: &OrgId) -> String {
    let (bytes, digest) = fl_engine::save_safetensors(
        params,
        &task.study_id.to_string(),
        task.round,
        Some(holder.as_str()),
    )
    .unwrap();
    let mut nan = ParameterSet::new();
    for (name, t) in params.iter() {
        nan.insert(
            name.clone(),
            t.shape.clone(),
            vec![f32::NAN; t.values.len()],
        )
        .unwrap();
    }
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + header_len]).unwrap();
    let replaced = header.replace(&digest, &nan.digest());
    assert_eq!(replaced.len(), header.len());
    let mut out = bytes[..8].to_vec();
    out.extend_from_slice(replaced.as_bytes());
    // the data section (everything after the header) is nothing but little-endian f32 values
    let data = bytes.len() - 8 - header_len;
    assert_eq!(data, params.num_values() * 4);
    for _ in 0..params.num_values() {
        out.extend_from_slice(&f32::NAN.to_le_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(out)
}

async fn study(app: &TestApp, id: &str) -> Value {
    let r = app
        .get(&format!("/v1/studies/{id}"), &app.researcher())
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

async fn rounds(app: &TestApp, id: &str) -> Value {
    let r = app
        .get(&format!("/v1/studies/{id}/rounds"), &app.researcher())
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

async fn wait_status(app: &TestApp, id: &str, status: &str) -> Value {
    app.wait_for(
        &format!("/v1/studies/{id}"),
        &app.researcher(),
        30,
        &format!("study {id} to be {status}"),
        |s| s["status"] == status,
    )
    .await
}

/// Waits until attempt `attempt` of round `round` is in `phase`; returns the rounds view.
async fn wait_round(app: &TestApp, id: &str, round: u64, attempt: u64, phase: &str) -> Value {
    app.wait_for(
        &format!("/v1/studies/{id}/rounds"),
        &app.researcher(),
        30,
        &format!("round {round} attempt {attempt} to be {phase}"),
        |v| {
            v["rounds"].as_array().is_some_and(|rs| {
                rs.iter()
                    .any(|r| r["round"] == round && r["attempt"] == attempt && r["phase"] == phase)
            })
        },
    )
    .await
}

fn the_round(view: &Value, round: u64, attempt: u64) -> Value {
    view["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["round"] == round && r["attempt"] == attempt)
        .cloned()
        .unwrap_or_else(|| panic!("no round {round} attempt {attempt} in {view}"))
}

/// Plays every node until the study is no longer running (at most 60 s); every node answers
/// every task it gets with `samples` examples. Returns the study.
async fn run_to_end(app: &TestApp, id: &str, nodes: &[Node<'_>], samples: u64) -> Value {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        for n in nodes {
            for t in n.tasks().await {
                if t.study_id.to_string() == id {
                    n.answer(&t, samples).await;
                }
            }
        }
        let s = study(app, id).await;
        if s["status"] != "running" {
            return s;
        }
        assert!(Instant::now() < until, "study {id} still running: {s}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn studies_listed(app: &TestApp) -> usize {
    let r = app.get("/v1/studies", &app.researcher()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body.as_array().unwrap().len()
}

/// The denied `study.create` entries, oldest first.
async fn refused_submissions(app: &TestApp) -> Vec<Value> {
    app.audit("action=study.create&outcome=denied").await
}

fn reason_codes(reply: &Reply) -> Vec<String> {
    reply.body["reasons"]
        .as_array()
        .unwrap_or_else(|| panic!("no reasons in {}", reply.text))
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_owned())
        .collect()
}

fn field_codes(reply: &Reply) -> Vec<(String, String)> {
    reply.body["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors in {}", reply.text))
        .iter()
        .map(|e| {
            (
                e["field"].as_str().unwrap().to_owned(),
                e["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Submits `body` expecting a refusal with `status` and `code`; checks that nothing was stored
/// and that the refusal is on the audit trail with its code.
async fn refused(app: &TestApp, token: &str, body: &Value, status: u16, code: &str) -> Reply {
    let before = refused_submissions(app).await.len();
    let r = app.post("/v1/studies", token, body).await;
    assert_eq!((r.status.as_u16(), r.code()), (status, code), "{}", r.text);
    assert_eq!(studies_listed(app).await, 0, "a refused study was stored");
    let trail = refused_submissions(app).await;
    assert_eq!(trail.len(), before + 1, "the refusal is audited once");
    let last = trail.last().unwrap();
    assert_eq!(last["detail"]["code"], code);
    assert_eq!(last["http_status"], status);
    r
}

/// `refused` with 422 and `code`, reported on `field` alone.
async fn refused_on(app: &TestApp, token: &str, body: &Value, field: &str, code: &str) -> Reply {
    let r = refused(app, token, body, 422, code).await;
    assert_eq!(
        field_codes(&r),
        [(field.to_owned(), code.to_owned())],
        "{}",
        r.text
    );
    r
}

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

/// The example features with the first one reading `genetic_genomic` data.
fn genomic_features() -> Value {
    let mut f = example_features();
    f["features"][0]["category"] = json!("genetic_genomic");
    f
}

// 1. Submission is checked against the permit, with every reason, and nothing is stored.
async fn submission_is_checked_against_the_permit(app: TestApp) {
    let alice = app.researcher();
    let permit = app
        .permit_id(&federation_application(&TWO, 50.0, "record"))
        .await;
    let base = study_body(&permit, &TWO);

    // A feature reads a category the permit does not grant.
    let r = refused(
        &app,
        &alice,
        &with(
            base.clone(),
            &[
                ("categories", json!(["ehr_data", "genetic_genomic"])),
                ("feature_spec", genomic_features()),
            ],
        ),
        422,
        "study_not_permitted",
    )
    .await;
    assert_eq!(reason_codes(&r), ["category_not_permitted"], "{}", r.text);
    assert_eq!(r.body["reasons"][0]["category"], "genetic_genomic");

    // A feature reads a category the study does not declare.
    let r = refused(
        &app,
        &alice,
        &with(base.clone(), &[("feature_spec", genomic_features())]),
        422,
        "feature_category_not_declared",
    )
    .await;
    let fields = field_codes(&r);
    assert_eq!(fields.len(), 1, "{}", r.text);
    assert!(
        fields[0].0.starts_with("feature_spec.features"),
        "{fields:?}"
    );

    // Several malformed fields: every one is named.
    let r = refused(
        &app,
        &alice,
        &with(
            base.clone(),
            &[
                ("rounds", json!(0)),
                ("batch_size", json!(0)),
                ("min_sites", json!(3)),
                ("optimizer.name", json!("rmsprop")),
                ("strategy.name", json!("fedmagic")),
                ("dp.clip_norm", json!(-1.0)),
            ],
        ),
        422,
        "validation_failed",
    )
    .await;
    let fields = field_codes(&r);
    for (field, code) in [
        ("rounds", "out_of_range"),
        ("batch_size", "out_of_range"),
        ("min_sites", "out_of_range"),
        ("optimizer.name", "unknown_optimizer"),
        ("strategy.name", "unknown_strategy"),
        ("dp.clip_norm", "invalid_number"),
    ] {
        assert!(
            fields.contains(&(field.to_owned(), code.to_owned())),
            "{field}: {code} missing from {fields:?}"
        );
    }

    // Record-level DP does not protect the unit a `data_holder` budget protects.
    let per_holder = app
        .permit_id(&federation_application(&TWO, 50.0, "data_holder"))
        .await;
    let r = refused(
        &app,
        &alice,
        &with(
            study_body(&per_holder, &TWO),
            &[(
                "dp",
                json!({"level": "record", "clip_norm": 1.0, "noise_multiplier": 1.0,
                       "sampling_rate": 0.1}),
            )],
        ),
        422,
        "study_not_permitted",
    )
    .await;
    assert_eq!(
        reason_codes(&r),
        ["dp_level_weaker_than_permit_unit"],
        "{}",
        r.text
    );
    assert_eq!(r.body["reasons"][0]["permit_unit"], "data_holder");

    // A budget that cannot pay for one round, and a plan longer than the budget.
    let small = app
        .permit_id(&federation_application(&TWO, 0.5, "record"))
        .await;
    let r = refused(
        &app,
        &alice,
        &with(
            study_body(&small, &TWO),
            &[("dp.noise_multiplier", json!(0.5))],
        ),
        422,
        "study_not_permitted",
    )
    .await;
    assert_eq!(
        reason_codes(&r),
        ["budget_too_small_for_one_round"],
        "{}",
        r.text
    );
    let one = r.body["reasons"][0]["epsilon_one_round"].as_f64().unwrap();
    assert!(one > 0.5, "{}", r.text);
    assert_eq!(r.body["reasons"][0]["remaining"], 0.5);

    let long = with(
        study_body(&small, &TWO),
        &[
            ("dp.noise_multiplier", json!(30.0)),
            ("rounds", json!(1000)),
        ],
    );
    let r = refused(&app, &alice, &long, 422, "study_not_permitted").await;
    assert_eq!(
        reason_codes(&r),
        ["planned_rounds_exceed_budget"],
        "{}",
        r.text
    );
    let reason = &r.body["reasons"][0];
    assert!(
        reason["planned_epsilon"].as_f64().unwrap() > 0.5,
        "{reason}"
    );
    let affordable = reason["affordable_rounds"].as_u64().unwrap();
    assert!((1..1000).contains(&affordable), "{reason}");

    // Another organisation's researcher cannot run a study under alice's permit.
    let bob = app.token("bob", &["researcher"], Some("uni-b"));
    refused(&app, &bob, &base, 404, "not_found").await; // the permit is not bob's to see

    // `affordable_rounds` is exact: one round more is refused, that many are accepted.
    let more = with(long.clone(), &[("rounds", json!(affordable + 1))]);
    let r = refused(&app, &alice, &more, 422, "study_not_permitted").await;
    assert_eq!(reason_codes(&r), ["planned_rounds_exceed_budget"]);
    let fits = app
        .submit_study(&with(long, &[("rounds", json!(affordable))]))
        .await;
    assert!(
        study(&app, &fits).await["epsilon_planned"]
            .as_f64()
            .unwrap()
            <= 0.5
    );
    assert_eq!(studies_listed(&app).await, 1);
}
both_backends!(submission_is_checked_against_the_permit);

// 1b. Every engine method is offered; what a method cannot do under DP is refused up front.
async fn engine_methods_are_offered_with_their_dp_limits(app: TestApp) {
    let alice = app.researcher();
    let permit = app
        .permit_id(&federation_application(&TWO, 1000.0, "record"))
        .await;
    let base = study_body(&permit, &TWO);
    let record_dp = json!({"level": "record", "clip_norm": 1.0, "noise_multiplier": 1.0,
                           "sampling_rate": 0.1});

    // SCAFFOLD's control variates travel beside the noised model update.
    refused_on(
        &app,
        &alice,
        &with(base.clone(), &[("strategy.name", json!("scaffold"))]),
        "dp.level",
        "strategy_refuses_client_dp",
    )
    .await;
    // MOON's contrastive term is a batch-level loss DP-SGD does not privatise.
    refused_on(
        &app,
        &alice,
        &with(
            base.clone(),
            &[
                ("strategy.name", json!("moon")),
                ("model", json!({"architecture": "head_net", "hidden": [4]})),
                ("dp", record_dp.clone()),
            ],
        ),
        "dp.level",
        "strategy_refuses_record_dp",
    )
    .await;
    // Bad method settings are named; FedNova needs SGD; APFL needs its twins.
    let r = refused(
        &app,
        &alice,
        &with(
            base.clone(),
            &[("strategy", json!({"name": "fedsam", "rho": -1.0}))],
        ),
        422,
        "validation_failed",
    )
    .await;
    let fields = field_codes(&r);
    assert!(
        fields.contains(&("strategy.rho".to_owned(), "invalid_number".to_owned()))
            && fields.contains(&("strategy".to_owned(), "invalid_strategy_setting".to_owned())),
        "{fields:?}"
    );
    // a bound only the method's own rule knows: FedSpeed's alpha is a weight in [0, 1]
    let r = refused(
        &app,
        &alice,
        &with(
            base.clone(),
            &[("strategy", json!({"name": "fedspeed", "alpha": 1.5}))],
        ),
        422,
        "invalid_strategy_setting",
    )
    .await;
    // reported once: the rules that ask the method do not repeat it as another field's error
    assert_eq!(
        field_codes(&r),
        [("strategy".to_owned(), "invalid_strategy_setting".to_owned())],
        "{}",
        r.text
    );
    assert!(r.text.contains("alpha must be in [0, 1]"), "{}", r.text);
    refused_on(
        &app,
        &alice,
        &with(
            base.clone(),
            &[
                ("strategy.name", json!("fednova")),
                ("optimizer", json!({"name": "adamw", "lr": 0.01})),
            ],
        ),
        "optimizer.name",
        "fednova_needs_sgd",
    )
    .await;
    refused_on(
        &app,
        &alice,
        &with(base.clone(), &[("strategy.name", json!("apfl"))]),
        "model",
        "model_strategy_mismatch",
    )
    .await;

    // Accepted, each with the model it needs and the DP level it supports.
    for (strategy, model, dp) in [
        (
            json!({"name": "fedsam", "rho": 0.1}),
            json!({"architecture": "logistic"}),
            None,
        ),
        (
            json!({"name": "fedspeed", "rho": 0.1, "alpha": 0.5, "lambda": 1.0}),
            json!({"architecture": "logistic"}),
            None,
        ),
        (
            json!({"name": "feddyn", "alpha": 0.1}),
            json!({"architecture": "logistic"}),
            Some(record_dp.clone()),
        ),
        (
            json!({"name": "fednova"}),
            json!({"architecture": "logistic"}),
            Some(record_dp.clone()),
        ),
        (
            json!({"name": "feddecorr", "beta": 0.05}),
            json!({"architecture": "mlp", "hidden": [4]}),
            None,
        ),
        (
            json!({"name": "apfl"}),
            json!({"architecture": "apfl", "hidden": [3]}),
            None,
        ),
        (
            json!({"name": "perfcl", "mu": 0.5}),
            json!({"architecture": "fenda", "hidden": [3]}),
            None,
        ),
        (
            json!({"name": "hpfl"}),
            json!({"architecture": "head_net", "hidden": [4]}),
            None,
        ),
        (
            json!({"name": "pfedme", "lambda": 5.0}),
            json!({"architecture": "logistic"}),
            None,
        ),
    ] {
        let mut edits = vec![("strategy", strategy.clone()), ("model", model)];
        if let Some(dp) = dp {
            edits.push(("dp", dp));
        }
        let id = app.submit_study(&with(base.clone(), &edits)).await;
        let study = app.get(&format!("/v1/studies/{id}"), &alice).await;
        assert_eq!(study.status, 200, "{}", study.text);
        // stored as the engine's configuration: `{"FedSam": {"rho": 0.1}}`
        let stored = study.body["spec"]["strategy"]
            .as_object()
            .and_then(|o| o.keys().next().cloned())
            .unwrap_or_default();
        assert_eq!(
            stored.to_lowercase(),
            strategy["name"].as_str().unwrap(),
            "{}",
            study.text
        );
    }
}
both_backends!(engine_methods_are_offered_with_their_dp_limits);

// 1c. A method's rule on local training is checked at submission, before any node trains:
// SCAFFOLD's control variates need plain SGD, without weight decay.
async fn a_method_s_training_rule_is_checked_at_submission(app: TestApp) {
    let alice = app.researcher();
    let permit = app
        .permit_id(&federation_application(&TWO, 1000.0, "record"))
        .await;
    let scaffold = |optimizer: Value| {
        with(
            study_body(&permit, &TWO),
            &[
                ("strategy", json!({"name": "scaffold"})),
                ("optimizer", optimizer),
                (
                    "dp",
                    json!({"level": "record", "clip_norm": 1.0, "noise_multiplier": 1.0,
                           "sampling_rate": 0.1}),
                ),
            ],
        )
    };
    refused_on(
        &app,
        &alice,
        &scaffold(json!({"name": "sgd", "lr": 0.1, "weight_decay": 0.01})),
        "optimizer.weight_decay",
        "scaffold_needs_plain_sgd",
    )
    .await;
    refused_on(
        &app,
        &alice,
        &scaffold(json!({"name": "adamw", "lr": 0.01})),
        "optimizer.name",
        "scaffold_needs_sgd",
    )
    .await;
    // plain SGD is what the engine trains SCAFFOLD with
    app.submit_study(&scaffold(json!({"name": "sgd", "lr": 0.1})))
        .await;
    assert_eq!(studies_listed(&app).await, 1);
}
both_backends!(a_method_s_training_rule_is_checked_at_submission);

fn icu_features(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/icu-federation")
        .join(format!("{name}.features.json"));
    serde_json::from_slice(&std::fs::read(path).expect("ICU feature spec")).unwrap()
}

/// The only refusal of `r`, as (field, code).
fn only_field(r: &Reply) -> (String, String) {
    let f = field_codes(r);
    assert_eq!(f.len(), 1, "{}", r.text);
    f[0].clone()
}

// 1b. Tasks, losses and model families: each combination the engine cannot honour has its
// own code, nothing is stored, the refusal is audited; the accepted study reports its task,
// loss and parameter count.
async fn tasks_losses_and_models_are_checked_at_submission(app: TestApp) {
    let alice = app.researcher();
    let permit = app
        .permit_id(&federation_application(&TWO, 1000.0, "record"))
        .await;
    let survival = with(
        study_body(&permit, &TWO),
        &[("feature_spec", icu_features("survival"))],
    );
    let series = with(
        study_body(&permit, &TWO),
        &[("feature_spec", icu_features("timeseries"))],
    );
    let severity = with(
        study_body(&permit, &TWO),
        &[(
            "feature_spec",
            serde_json::from_slice(
                &std::fs::read(
                    example_federation_dir().join("heart_disease_severity.features.json"),
                )
                .unwrap(),
            )
            .unwrap(),
        )],
    );
    let record_dp = json!({"level": "record", "clip_norm": 1.0, "noise_multiplier": 1.0,
                           "sampling_rate": 0.1});
    let cases: Vec<(Value, &str, &str)> = vec![
        // a survival task with a softmax head
        (
            with(
                survival.clone(),
                &[("model", json!({"architecture": "logistic", "outputs": 2}))],
            ),
            "model.outputs",
            "head_task_mismatch",
        ),
        (
            with(
                survival.clone(),
                &[("loss", json!({"CrossEntropy": {"class_weights": null}}))],
            ),
            "loss",
            "loss_task_mismatch",
        ),
        (
            with(
                survival.clone(),
                &[("task", json!({"multiclass": {"classes": 2}}))],
            ),
            "task",
            "task_label_mismatch",
        ),
        (
            with(
                study_body(&permit, &TWO),
                &[("task", json!({"multiclass": {"classes": 3}}))],
            ),
            "task",
            "task_label_mismatch",
        ),
        // the five-class disease status trains five classes, not three, and not one label
        (
            with(
                severity.clone(),
                &[("task", json!({"multiclass": {"classes": 3}}))],
            ),
            "task",
            "task_label_mismatch",
        ),
        (
            with(
                severity.clone(),
                &[("task", json!({"multilabel": {"labels": 5}}))],
            ),
            "task",
            "task_label_mismatch",
        ),
        // Cox's partial likelihood has no per-record term for DP-SGD to clip
        (
            with(survival.clone(), &[("dp", record_dp.clone())]),
            "dp.level",
            "loss_refuses_record_dp",
        ),
        (
            with(
                study_body(&permit, &TWO),
                &[
                    ("dp", record_dp.clone()),
                    (
                        "model",
                        json!({"architecture": "net", "backbone":
                        {"kind": "mlp", "hidden": [8], "norm": {"kind": "batch"}}}),
                    ),
                ],
            ),
            "dp.level",
            "model_refuses_record_dp",
        ),
        (
            with(survival.clone(), &[("strategy", json!({"name": "fedlc"}))]),
            "strategy.name",
            "strategy_refuses_task",
        ),
        // a sequence model on a static feature specification
        (
            with(
                study_body(&permit, &TWO),
                &[(
                    "model",
                    json!({"architecture": "net", "backbone": {"kind": "lstm", "hidden": 8}}),
                )],
            ),
            "model.backbone",
            "sequence_model_needs_series",
        ),
        (
            with(
                series.clone(),
                &[
                    (
                        "model",
                        json!({"architecture": "fenda",
                    "backbone": {"kind": "gru", "hidden": 8},
                    "local_backbone": {"kind": "mlp", "hidden": [4], "inputs": {"features": ["bmi"]}}}),
                    ),
                    ("strategy", json!({"name": "fenda_fl"})),
                ],
            ),
            "model.local_backbone.inputs",
            "unknown_feature",
        ),
        // one site's update would not fit through the federation (64 KiB here)
        (
            with(
                series.clone(),
                &[(
                    "model",
                    json!({"architecture": "net",
                    "backbone": {"kind": "fusion", "cell": "lstm", "hidden": 128, "static_hidden": [8]}}),
                )],
            ),
            "model",
            "model_too_large",
        ),
        (
            with(
                study_body(&permit, &TWO),
                &[("loss", json!({"BceWithLogits": {"pos_weight": -2.0}}))],
            ),
            "loss.pos_weight",
            "invalid_loss_setting",
        ),
    ];
    for (body, field, code) in cases {
        let r = refused(&app, &alice, &body, 422, code).await;
        assert_eq!(only_field(&r), (field.to_owned(), code.to_owned()));
    }

    // accepted: a Cox model over the ICU survival features, an LSTM over the hourly series
    let created = app
        .post(
            "/v1/studies",
            &alice,
            &with(
                survival,
                &[("model", json!({"architecture": "mlp", "hidden": [8]}))],
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["spec"]["task"], "survival");
    assert_eq!(created.body["spec"]["train"]["loss"], "Cox");
    // 14 static columns (4 of them missing-value indicators): 14*8 + 8 + 8 + 1
    assert_eq!(created.body["parameter_count"], 129, "{}", created.text);
    let created = app
        .post(
            "/v1/studies",
            &alice,
            &with(
                series,
                &[
                    (
                        "model",
                        json!({"architecture": "net", "backbone": {"kind": "lstm", "hidden": 8}}),
                    ),
                    ("loss", json!({"Focal": {"gamma": 2.0, "alpha": 0.25}})),
                ],
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["spec"]["task"], "binary");
    // nn.LSTM(12, 8): 4 (8*12 + 8*8 + 2*8) = 704, output 9
    assert_eq!(created.body["parameter_count"], 713, "{}", created.text);
    assert_eq!(
        created.body["spec"]["model"]["BackboneNet"]["body"]["columns"],
        json!([{"start": 0, "end": 288}])
    );
    // the five-class label decides the task: a five-way softmax over the 13 inputs
    let created = app.post("/v1/studies", &alice, &severity).await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(
        created.body["spec"]["task"],
        json!({"multiclass": {"classes": 5}})
    );
    assert_eq!(
        created.body["spec"]["train"]["loss"]["CrossEntropy"]["class_weights"],
        Value::Null
    );
    assert_eq!(
        created.body["parameter_count"],
        13 * 5 + 5,
        "{}",
        created.text
    );
    assert_eq!(studies_listed(&app).await, 3);
}

fn digits_features() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/digits-federation/digits.features.json");
    serde_json::from_slice(&std::fs::read(path).expect("digit feature spec")).unwrap()
}

// 1c. Image inputs: only a CNN reads an image as one (a recurrent model on an image
// specification has its own code), the CNN's depth must fit the declared geometry, and a CNN
// on a specification without image or series is refused as before; the accepted CNN reads the
// image's 1 x 8 x 8 values as the whole row, or its first columns beside static features.
async fn image_specifications_take_a_cnn(app: TestApp) {
    let alice = app.researcher();
    let permit = app
        .permit_id(&federation_application(&TWO, 1000.0, "record"))
        .await;
    let digits = with(
        study_body(&permit, &TWO),
        &[("feature_spec", digits_features())],
    );
    let cnn = |stages: Value| {
        json!({"architecture": "net",
               "backbone": {"kind": "cnn", "stages": stages, "groups": 4}})
    };
    for (body, field, code) in [
        (
            with(
                digits.clone(),
                &[(
                    "model",
                    json!({"architecture": "net", "backbone": {"kind": "gru", "hidden": 8}}),
                )],
            ),
            "model.backbone",
            "image_needs_cnn",
        ),
        (
            with(
                digits.clone(),
                &[(
                    "model",
                    json!({"architecture": "net", "backbone":
                        {"kind": "fusion", "cell": "lstm", "hidden": 8}}),
                )],
            ),
            "model.backbone",
            "image_needs_cnn",
        ),
        // five stages halve an 8 x 8 image four times
        (
            with(digits.clone(), &[("model", cnn(json!([4, 4, 4, 4, 4])))]),
            "model.backbone.stages",
            "image_too_small_for_model",
        ),
        (
            with(study_body(&permit, &TWO), &[("model", cnn(json!([8])))]),
            "model.backbone",
            "sequence_model_needs_series",
        ),
    ] {
        refused_on(&app, &alice, &body, field, code).await;
    }

    let created = app
        .post(
            "/v1/studies",
            &alice,
            &with(digits, &[("model", cnn(json!([8, 16])))]),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(
        created.body["spec"]["task"],
        json!({"multiclass": {"classes": 10}})
    );
    let body = &created.body["spec"]["model"]["BackboneNet"]["body"];
    assert_eq!(
        *body,
        json!({"kind": "cnn", "channels": 1, "height": 8, "width": 8, "stages": [8, 16],
               "groups": 4}),
        "{}",
        created.text
    );
    // stem 1->8 (72 + 16), stage 0 8->8 (2 x (576 + 16)), stage 1 8->16 with a 1x1 stride-2
    // projection (128 + 32, 1152 + 32, 2304 + 32), output 16->10 (170)
    assert_eq!(created.body["parameter_count"], 5122, "{}", created.text);

    // with a static feature beside the image, the row is [image | static]: the CNN reads the
    // first 64 columns, an MLP on the static columns the 65th
    let mut features = digits_features();
    features["features"] = json!([{"name": "sex", "category": "ehr_data",
        "source": {"patient": "gender"},
        "transform": {"kind": "map", "values": {"male": 1, "female": 0}}}]);
    let created = app
        .post(
            "/v1/studies",
            &alice,
            &with(
                study_body(&permit, &TWO),
                &[
                    ("feature_spec", features),
                    (
                        "model",
                        json!({"architecture": "fenda",
                               "backbone": {"kind": "cnn", "stages": [8], "groups": 4},
                               "local_backbone": {"kind": "mlp", "hidden": [4],
                                                  "inputs": "static"}}),
                    ),
                    ("strategy", json!({"name": "fenda_fl"})),
                ],
            ),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let model = &created.body["spec"]["model"]["BackboneFenda"];
    assert_eq!(
        model["global"]["columns"],
        json!([{"start": 0, "end": 64}]),
        "{}",
        created.text
    );
    assert_eq!(model["global"]["inputs"], 65, "{}", created.text);
    assert_eq!(model["global"]["body"]["kind"], "cnn", "{}", created.text);
    assert_eq!(
        model["local"]["columns"],
        json!([{"start": 64, "end": 65}]),
        "{}",
        created.text
    );
}
both_backends!(image_specifications_take_a_cnn);

/// The two holders' evaluation of study `id`'s initial model as the researcher sees it:
/// cleveland's, hungarian's and the uniform mean on test data.
async fn initial_evaluation(app: &TestApp, id: &str) -> (Value, Value, Value) {
    let view = app
        .wait_for(
            &format!("/v1/studies/{id}/rounds"),
            &app.researcher(),
            30,
            "the initial evaluation",
            |v| {
                v["initial_evaluation"]["sites"]
                    .as_array()
                    .is_some_and(|s| s.len() == 2)
            },
        )
        .await;
    let ev = &view["initial_evaluation"];
    let site = |org: &str| {
        ev["sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["data_holder"] == org)
            .unwrap()
            .clone()
    };
    (
        site("cleveland"),
        site("hungarian"),
        ev["mean_test"].clone(),
    )
}

// 1d. The decision threshold: checked with the task at submission (a precise code, nothing
// stored, the refusal audited); the accepted study keeps it and sends it with every task.
// Chosen on each holder's validation part, it makes the holder's test metrics rest on the
// validation rows too: a validation part under the small-cell threshold withholds them.
async fn decision_thresholds_are_checked_and_sent_to_the_holders(app: TestApp) {
    let alice = app.researcher();
    let permit = app
        .permit_id(&federation_application(&TWO, 1000.0, "record"))
        .await;
    let binary = with(study_body(&permit, &TWO), &[("rounds", json!(1))]);
    let survival = with(
        binary.clone(),
        &[("feature_spec", icu_features("survival"))],
    );
    for (body, field, code) in [
        (
            with(
                binary.clone(),
                &[("threshold", json!({"rule": "max_balanced_accuracy"}))],
            ),
            "threshold",
            "invalid_threshold",
        ),
        (
            with(
                binary.clone(),
                &[("threshold", json!({"rule": "fixed", "value": 1.5}))],
            ),
            "threshold.value",
            "invalid_threshold",
        ),
        // a softmax's prediction is the most probable class, a Cox model's output a risk
        (
            with(
                binary.clone(),
                &[
                    ("task", json!({"multiclass": {"classes": 2}})),
                    ("threshold", json!({"rule": "max_f1"})),
                ],
            ),
            "threshold",
            "threshold_task_mismatch",
        ),
        (
            with(survival, &[("threshold", json!({"rule": "youden_j"}))]),
            "threshold",
            "threshold_task_mismatch",
        ),
    ] {
        let r = refused(&app, &alice, &body, 422, code).await;
        assert_eq!(only_field(&r), (field.to_owned(), code.to_owned()));
    }

    let fixed = app.submit_study(&binary).await;
    assert_eq!(
        study(&app, &fixed).await["spec"]["threshold"],
        json!({"rule": "fixed", "value": 0.5})
    );
    let chosen = app
        .submit_study(&with(
            binary.clone(),
            &[("threshold", json!({"rule": "max_f1"}))],
        ))
        .await;
    assert_eq!(
        study(&app, &chosen).await["spec"]["threshold"],
        json!({"rule": "max_f1"})
    );
    // cleveland validates on 5 rows, hungarian on 40; both test on 40
    for id in [&fixed, &chosen] {
        for (org, validation_rows, threshold) in [("cleveland", 5, 0.31), ("hungarian", 40, 0.62)] {
            let node = Node::new(&app, org);
            let t = node.task(id, 1, TaskKind::Fit).await;
            let want = if *id == chosen {
                DecisionThreshold::MaxF1 {}
            } else {
                DecisionThreshold::Fixed { value: 0.5 }
            };
            assert_eq!(t.study.threshold, Some(want));
            let mut body = result_body(&t, 40, Some(node.echo(&t, 0.01).await));
            body["evaluation"] = evaluation(&[("threshold", json!(threshold))]);
            body["evaluation"]["validation"]["n"] = json!(validation_rows);
            let r = node.upload(&t, &body).await;
            assert_eq!(r.status, 200, "{}", r.text);
        }
    }
    // a fixed threshold: the small validation part alone is withheld
    let (cleveland, hungarian, mean) = initial_evaluation(&app, &fixed).await;
    assert_eq!(cleveland["validation"], Value::Null, "{cleveland}");
    assert_eq!(cleveland["test"]["n"], 40, "{cleveland}");
    assert_eq!(hungarian["test"]["threshold"], 0.62, "{hungarian}");
    assert_eq!(mean["n"], 80, "{mean}");
    // chosen on it: the test metrics read at its threshold go with it
    let (cleveland, hungarian, mean) = initial_evaluation(&app, &chosen).await;
    assert_eq!(cleveland["validation"], Value::Null, "{cleveland}");
    assert_eq!(cleveland["test"], Value::Null, "{cleveland}");
    assert_eq!(hungarian["test"]["threshold"], 0.62, "{hungarian}");
    assert_eq!(hungarian["validation"]["threshold"], 0.62, "{hungarian}");
    assert_eq!(mean["n"], 40, "{mean}");
    // the uniform mean reports no threshold: each holder has its own
    assert!(mean.get("threshold").is_none(), "{mean}");
}
both_backends!(decision_thresholds_are_checked_and_sent_to_the_holders);

async fn small_updates(backend: Backend) -> TestApp {
    TestApp::spawn_with(backend, |s| s.federation.max_update_bytes = 64 * 1024).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_losses_and_models_are_checked_at_submission_sqlite() {
    tasks_losses_and_models_are_checked_at_submission(small_updates(Backend::Sqlite).await).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_losses_and_models_are_checked_at_submission_postgres() {
    tasks_losses_and_models_are_checked_at_submission(small_updates(Backend::Postgres).await).await
}

// 2. Every kind of bad upload is refused, stored nowhere and audited; good ones then count.
async fn bad_updates_are_refused_and_nothing_is_stored(app: TestApp) {
    let permit = app
        .permit_id(&federation_application(&TWO, 50.0, "record"))
        .await;
    let id = app.submit_study(&study_body(&permit, &TWO)).await;
    let a = Node::new(&app, "cleveland");
    let b = Node::new(&app, "hungarian");
    let ta = a.task(&id, 1, TaskKind::Fit).await;
    let tb = b.task(&id, 1, TaskKind::Fit).await;
    let ins = b.global(&tb).await;
    let study_id: StudyId = tb.study_id;
    let good = |params: &ParameterSet, round: u64, holder: &OrgId| {
        encode_update(params, &ins.extras, study_id, round, holder).unwrap()
    };

    let mut wrong_shape = shifted(&ins.params, 0.01);
    let (name, t) = wrong_shape
        .iter()
        .next()
        .map(|(n, t)| (n.clone(), t.clone()))
        .unwrap();
    let mut longer = t.values.clone();
    longer.push(0.0);
    wrong_shape
        .insert(name, vec![longer.len()], longer)
        .unwrap();
    let mut stray = shifted(&ins.params, 0.01);
    stray.insert("stray.weight", vec![1], vec![0.5]).unwrap();

    // (what, body, status, code, a phrase the detail must contain)
    let refusals: Vec<(&str, Value, u16, &str, &str)> = vec![
        (
            "garbage base64",
            result_body(&tb, 100, Some("%%% not base64 %%%".into())),
            422,
            "invalid_encoding",
            "base64",
        ),
        (
            "base64 of something that is not safetensors",
            result_body(
                &tb,
                100,
                Some(base64::engine::general_purpose::STANDARD.encode(b"hello, gateway")),
            ),
            422,
            "invalid_update",
            "not a valid parameter file",
        ),
        (
            "wrong shapes",
            result_body(&tb, 100, Some(good(&wrong_shape, 1, &b.holder()))),
            422,
            "invalid_update",
            "shape mismatch",
        ),
        (
            "a tensor the model does not have",
            result_body(&tb, 100, Some(good(&stray, 1, &b.holder()))),
            422,
            "invalid_update",
            "stray.weight",
        ),
        (
            "NaN values",
            result_body(&tb, 100, Some(nan_update(&ins.params, &tb, &b.holder()))),
            422,
            "invalid_update",
            "non-finite",
        ),
        (
            "an update for another round",
            result_body(&tb, 100, Some(good(&ins.params, 2, &b.holder()))),
            422,
            "update_misdirected",
            "round 2",
        ),
        (
            "an update naming another sender",
            result_body(&tb, 100, Some(good(&ins.params, 1, &a.holder()))),
            422,
            "update_misdirected",
            "cleveland",
        ),
        (
            "no update at all",
            result_body(&tb, 100, None),
            422,
            "parameters_required",
            "",
        ),
        (
            "zero examples",
            result_body(&tb, 0, Some(good(&ins.params, 1, &b.holder()))),
            422,
            "zero_samples",
            "",
        ),
        (
            "another registry version",
            with(
                result_body(&tb, 100, Some(good(&ins.params, 1, &b.holder()))),
                &[("registry_version", json!(tb.registry_version + 7))],
            ),
            422,
            "registry_version_mismatch",
            "",
        ),
    ];
    for (what, body, status, code, phrase) in &refusals {
        let r = b.upload(&tb, body).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (*status, *code),
            "{what}: {}",
            r.text
        );
        let detail = r.body["errors"][0]["message"]
            .as_str()
            .or(r.body["detail"].as_str())
            .unwrap_or("");
        assert!(detail.contains(phrase), "{what}: {}", r.text);
    }

    // A node answering another node's task is refused whatever it sends.
    let foreign = a
        .upload(
            &tb,
            &result_body(&tb, 100, Some(good(&ins.params, 1, &b.holder()))),
        )
        .await;
    // (404 as for a task that does not exist: another holder's tasks are not visible.)
    assert_eq!(
        (foreign.status.as_u16(), foreign.code()),
        (404, "not_found"),
        "{}",
        foreign.text
    );
    let foreign_params = app
        .get(
            &format!("/v1/node/tasks/{}/parameters", tb.task_id),
            &a.token,
        )
        .await;
    assert_eq!(foreign_params.status, 404);

    // None of that was stored: the round still collects, hungarian's task is still open.
    let view = rounds(&app, &id).await;
    assert_eq!(the_round(&view, 1, 1)["phase"], "collecting", "{view}");
    assert!(b.tasks().await.iter().any(|t| t.task_id == tb.task_id));
    let results = app.audit("action=node.task.result").await;
    assert!(
        results.iter().filter(|e| e["outcome"] == "success").count() == 0,
        "{results:?}"
    );
    let denied: Vec<&Value> = results
        .iter()
        .filter(|e| e["outcome"] == "denied" && e["resource_id"] == tb.task_id.to_string())
        .collect();
    assert_eq!(denied.len(), refusals.len() + 1, "{denied:?}");
    for (_, _, status, code, _) in &refusals {
        assert!(
            denied
                .iter()
                .any(|e| e["detail"]["code"] == *code && e["http_status"] == *status),
            "{code} not audited"
        );
    }
    let by_a = denied
        .iter()
        .find(|e| e["http_status"] == 404 && e["actor"]["organisation"] == "cleveland")
        .expect("the foreign upload is audited");
    assert_eq!(by_a["actor"]["organisation"], "cleveland", "{by_a}");

    // Valid results are accepted once; a second upload is a conflict.
    let second = a.echo(&ta, 0.02).await;
    a.answer(&ta, 120).await;
    let twice = a
        .upload(&ta, &result_body(&ta, 120, Some(second.clone())))
        .await;
    assert_eq!(
        (twice.status.as_u16(), twice.code()),
        (409, "task_already_completed"),
        "{}",
        twice.text
    );
    assert_eq!(
        the_round(&rounds(&app, &id).await, 1, 1)["phase"],
        "collecting",
        "one of two results is not a quorum of two"
    );
    b.answer(&tb, 80).await;
    let view = wait_round(&app, &id, 1, 1, "aggregated").await;
    let round = the_round(&view, 1, 1);
    assert_eq!(round["samples"], 200, "{round}");
    let sites = round["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 2);
    assert!(sites.iter().all(|s| s["contributed"] == true), "{round}");
    let aggregate = app
        .audit(&format!("action=study.round.aggregate&resource_id={id}"))
        .await;
    assert_eq!(aggregate.len(), 1);
    assert_eq!(aggregate[0]["detail"]["contributors"], 2);
    let accepted = app.audit("action=node.task.result&outcome=success").await;
    assert_eq!(accepted.len(), 2, "{accepted:?}");
    let late = a.upload(&ta, &result_body(&ta, 120, Some(second))).await;
    assert_eq!(late.status, 409, "{}", late.text);
    let params = app
        .get(
            &format!("/v1/node/tasks/{}/parameters", ta.task_id),
            &a.token,
        )
        .await;
    assert_eq!(params.status, 409, "{}", params.text);
}
both_backends!(bad_updates_are_refused_and_nothing_is_stored);

/// Runs one round of a three-holder study where switzerland reports 5 training samples and
/// every holder 1 opted-out subject; returns the round as the researcher sees it.
async fn round_with_a_small_holder(app: &TestApp) -> (Value, Value) {
    let permit = app
        .permit_id(&federation_application(&THREE, 50.0, "record"))
        .await;
    let id = app
        .submit_study(&with(study_body(&permit, &THREE), &[("rounds", json!(1))]))
        .await;
    for (org, samples) in [("cleveland", 50), ("hungarian", 40), ("switzerland", 5)] {
        let node = Node::new(app, org);
        let t = node.task(&id, 1, TaskKind::Fit).await;
        node.answer(&t, samples).await;
    }
    let view = wait_round(app, &id, 1, 1, "aggregated").await;
    (the_round(&view, 1, 1), view)
}

// 3a. Per-holder counts below the small-cell threshold never reach the researcher.
async fn small_counts_are_withheld_from_the_researcher(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (round, view) = round_with_a_small_holder(&app).await;
    assert_eq!(view["small_cell_threshold"], 10, "{view}");
    let site = |org: &str| {
        round["sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["data_holder"] == org)
            .unwrap()
            .clone()
    };
    assert_eq!(site("cleveland")["samples"], 50, "{round}");
    assert_eq!(site("hungarian")["samples"], 40, "{round}");
    assert_eq!(site("switzerland")["samples"], Value::Null, "{round}");
    // 95 - 50 - 40 would give switzerland's 5 back
    assert_eq!(round["samples"], Value::Null, "{round}");
    // one opted-out subject each, three in all: every figure withheld
    for org in THREE {
        assert_eq!(site(org)["excluded_subjects"], Value::Null, "{round}");
        assert_eq!(site(org)["contributed"], true, "{round}");
        // record-level DP: the batch losses are not privatised
        assert_eq!(site(org)["train_loss"], Value::Null, "{round}");
    }
    assert_eq!(round["excluded_subjects"], Value::Null, "{round}");
    assert!(!view.to_string().contains("\"samples\":5,"), "{view}");
    // the auditor's trail keeps the counts
    let results = app.audit("action=node.task.result").await;
    let mut counts: Vec<u64> = results
        .iter()
        .map(|e| e["detail"]["num_examples"].as_u64().unwrap())
        .collect();
    counts.sort();
    assert_eq!(counts, [5, 40, 50]);

    // an HDAB that sets the threshold to 1 shows every count
    let open = TestApp::spawn_with(backend, |s| s.federation.small_cell_threshold = 1).await;
    let (round, view) = round_with_a_small_holder(&open).await;
    assert_eq!(view["small_cell_threshold"], 1, "{view}");
    assert_eq!(round["samples"], 95, "{round}");
    assert_eq!(round["excluded_subjects"], 3, "{round}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_counts_are_withheld_from_the_researcher_sqlite() {
    small_counts_are_withheld_from_the_researcher(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_counts_are_withheld_from_the_researcher_postgres() {
    small_counts_are_withheld_from_the_researcher(Backend::Postgres).await
}

/// Runs round 1 of a study on the three holders without formal DP, aggregated by
/// `aggregation`, where cleveland and hungarian move every value by 0.01 and 0.02 and
/// switzerland (the outlier) by 100; returns how far round 2's global model moved from the
/// initial one, per value (min, max).
async fn shift_after_an_outlier(app: &TestApp, permit: &str, aggregation: Value) -> (f32, f32) {
    let (lo, hi, _) = shift_after(app, permit, aggregation, 100.0).await;
    (lo, hi)
}

/// `shift_after_an_outlier` with switzerland moving every value by `outlier`; also returns
/// the study's id.
async fn shift_after(
    app: &TestApp,
    permit: &str,
    aggregation: Value,
    outlier: f32,
) -> (f32, f32, String) {
    let body = with(
        study_body(permit, &THREE),
        &[
            ("rounds", json!(2)),
            ("dp", json!({"level": "none"})),
            ("aggregation", aggregation),
        ],
    );
    let id = app.submit_study(&body).await;
    let mut initial = None;
    for (org, delta) in [
        ("cleveland", 0.01),
        ("hungarian", 0.02),
        ("switzerland", outlier),
    ] {
        let node = Node::new(app, org);
        let t = node.task(&id, 1, TaskKind::Fit).await;
        initial = Some(node.global(&t).await.params);
        let update = node.echo(&t, delta).await;
        let r = node.upload(&t, &result_body(&t, 50, Some(update))).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let node = Node::new(app, "cleveland");
    let next = node
        .global(&node.task(&id, 2, TaskKind::Fit).await)
        .await
        .params;
    let initial = initial.unwrap();
    let moved: Vec<f32> = next
        .iter()
        .zip(initial.iter())
        .flat_map(|((_, a), (_, b))| a.values.iter().zip(&b.values).map(|(x, y)| x - y))
        .collect();
    let lo = moved.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = moved.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    (lo, hi, id)
}

// 2c. Byzantine-robust aggregation is a study option; a rule must cover the method and run on
// every number of updates a round may combine.
async fn robust_aggregation_resists_an_outlier_holder(app: TestApp) {
    let (_, permit) = app
        .permit_with(
            &federation_application(&THREE, 50.0, "record"),
            &json!({"decision": "approve", "dp_requirement": "none_allowed"}),
        )
        .await;
    let permit = permit["id"].as_str().unwrap().to_owned();
    let alice = app.researcher();
    let base = with(
        study_body(&permit, &THREE),
        &[("dp", json!({"level": "none"}))],
    );
    // Krum needs n >= 2f + 3 = 5 updates; three holders cannot give them
    refused_on(
        &app,
        &alice,
        &with(
            base.clone(),
            &[("aggregation", json!({"rule": "krum", "f": 1}))],
        ),
        "aggregation",
        "aggregation_needs_more_sites",
    )
    .await;
    // a quorum below every holder: the rule must also run on min_sites updates
    let r = refused(
        &app,
        &alice,
        &with(
            base.clone(),
            &[
                (
                    "aggregation",
                    json!({"rule": "trimmed_mean", "per_side": 1}),
                ),
                ("min_sites", json!(2)),
            ],
        ),
        422,
        "aggregation_needs_more_sites",
    )
    .await;
    assert!(r.text.contains("min_sites = 2"), "{}", r.text);
    // q-FedAvg's server reads the holders' losses outside the aggregator
    refused(
        &app,
        &alice,
        &with(
            base.clone(),
            &[
                ("aggregation", json!({"rule": "median"})),
                ("strategy", json!({"name": "qfedavg", "q": 1.0})),
            ],
        ),
        422,
        "strategy_bypasses_robust_aggregation",
    )
    .await;
    // FLTrust names the holder of its root data set
    let r = app
        .post(
            "/v1/studies",
            &alice,
            &with(base, &[("aggregation", json!({"rule": "fltrust"}))]),
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (422, "invalid_body"),
        "{}",
        r.text
    );
    assert!(r.text.contains("root_holder"), "{}", r.text);
    assert_eq!(studies_listed(&app).await, 0, "nothing was stored");

    // the coordinate-wise median of 0.01, 0.02 and 100 is 0.02
    let (lo, hi) = shift_after_an_outlier(&app, &permit, json!({"rule": "median"})).await;
    assert!(
        (lo - 0.02).abs() < 1e-4 && (hi - 0.02).abs() < 1e-4,
        "{lo} {hi}"
    );
    // the mean is dragged to about 100.03 / 3
    let (lo, hi) = shift_after_an_outlier(&app, &permit, json!({"rule": "mean"})).await;
    assert!(lo > 33.0 && hi < 34.0, "{lo} {hi}");
    // trimming one value per side leaves 0.02 as well
    let (lo, hi) = shift_after_an_outlier(
        &app,
        &permit,
        json!({"rule": "trimmed_mean", "per_side": 1}),
    )
    .await;
    assert!(
        (lo - 0.02).abs() < 1e-4 && (hi - 0.02).abs() < 1e-4,
        "{lo} {hi}"
    );
}
both_backends!(robust_aggregation_resists_an_outlier_holder);

// 2d. FLTrust with a root holder: one of the study's holders whose update is each round's root
// update; refused where it cannot be sound (another holder, too few others, client-level DP,
// secure aggregation); a round without the root holder's update fails.
async fn fltrust_weighs_updates_by_the_root_holder_s(app: TestApp) {
    let (_, permit) = app
        .permit_with(
            &federation_application(&THREE, 50.0, "record"),
            &json!({"decision": "approve", "dp_requirement": "none_allowed"}),
        )
        .await;
    let permit = permit["id"].as_str().unwrap().to_owned();
    let alice = app.researcher();
    let fltrust = |root: &str| json!({"rule": "fltrust", "root_holder": root});
    let base = with(
        study_body(&permit, &THREE),
        &[
            ("dp", json!({"level": "none"})),
            ("aggregation", fltrust("cleveland")),
        ],
    );
    // the root holder must be one of the study's holders
    refused_on(
        &app,
        &alice,
        &with(base.clone(), &[("aggregation", fltrust("va"))]),
        "aggregation.root_holder",
        "root_holder_not_a_study_holder",
    )
    .await;
    // a round of min_sites = 1 could hold the root holder's update alone: nothing to combine
    let r = refused_on(
        &app,
        &alice,
        &with(base.clone(), &[("min_sites", json!(1))]),
        "aggregation",
        "aggregation_needs_more_sites",
    )
    .await;
    assert!(r.text.contains("other than its root holder"), "{}", r.text);
    // the trust scores and the rescaling read the root holder's unprivatised update
    let r = refused_on(
        &app,
        &alice,
        &with(
            base.clone(),
            &[(
                "dp",
                json!({"level": "client", "clip_norm": 1.0, "noise_multiplier": 2.0}),
            )],
        ),
        "dp.level",
        "fltrust_refuses_client_dp",
    )
    .await;
    assert!(r.text.contains("unprivatised"), "{}", r.text);
    // like every robust rule it reads each update, which secure aggregation never shows
    refused_on(
        &app,
        &alice,
        &with(base.clone(), &[("secure_aggregation", json!({}))]),
        "aggregation",
        "aggregation_incompatible_with_secure_aggregation",
    )
    .await;

    // accepted under record-level DP (the root update is privatised like every other)
    let record = with(
        base.clone(),
        &[(
            "dp",
            json!({"level": "record", "clip_norm": 1.0, "noise_multiplier": 1.0,
                   "sampling_rate": 0.1}),
        )],
    );
    let id = app.submit_study(&record).await;
    let r = app.get(&format!("/v1/studies/{id}"), &alice).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["spec"]["aggregation"],
        fltrust("cleveland"),
        "{}",
        r.text
    );

    // cleveland (the root) moves every value by 0.01, hungarian by 0.02 (trust 1, rescaled to
    // the root's norm: 0.01), switzerland by -100 (opposite: trust 0): the model moves by 0.01
    let (lo, hi, id) = shift_after(&app, &permit, fltrust("cleveland"), -100.0).await;
    assert!(
        (lo - 0.01).abs() < 1e-4 && (hi - 0.01).abs() < 1e-4,
        "{lo} {hi}"
    );
    let view = wait_round(&app, &id, 1, 1, "aggregated").await;
    let round = the_round(&view, 1, 1);
    assert_eq!(round["untrusted_updates"], 1, "{round}");
    // which holder it was is not shown
    assert!(
        !round.to_string().contains("trust\":["),
        "no per-holder trust: {round}"
    );
    // the root update itself is not one of the combined: with switzerland as the root,
    // cleveland (0.01) and hungarian (0.02) both point away from it and get no trust, and the
    // model stays where it was
    let (lo, hi, _) = shift_after(&app, &permit, fltrust("switzerland"), -100.0).await;
    assert_eq!((lo, hi), (0.0, 0.0));

    // a round without the root holder's update fails, audited with the reason, and opens again
    let quorum = with(
        base,
        &[
            ("aggregation", fltrust("switzerland")),
            ("min_sites", json!(2)),
            ("round_deadline_seconds", json!(3)),
        ],
    );
    let id = app.submit_study(&quorum).await;
    for org in ["cleveland", "hungarian"] {
        let node = Node::new(&app, org);
        let t = node.task(&id, 1, TaskKind::Fit).await;
        node.answer(&t, 50).await;
    }
    let view = wait_round(&app, &id, 1, 1, "failed").await;
    let first = the_round(&view, 1, 1);
    let reason = first["reason"].as_str().unwrap();
    assert!(reason.contains("root holder switzerland"), "{first}");
    let failed = app
        .audit(&format!("action=study.round.fail&resource_id={id}"))
        .await;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["outcome"], "failure");
    assert_eq!(failed[0]["detail"]["reason"], reason);
}
both_backends!(fltrust_weighs_updates_by_the_root_holder_s);

// An amendment that takes FLTrust's root holder out of the permit stops the study at the next
// round's start, with the reason audited, instead of failing attempt after attempt.
async fn fltrust_stops_when_an_amendment_removes_the_root_holder(app: TestApp) {
    let (_, permit) = app
        .permit_with(
            &federation_application(&THREE, 50.0, "record"),
            &json!({"decision": "approve", "dp_requirement": "none_allowed"}),
        )
        .await;
    let pid = permit["id"].as_str().unwrap().to_owned();
    let body = with(
        study_body(&pid, &THREE),
        &[
            ("dp", json!({"level": "none"})),
            (
                "aggregation",
                json!({"rule": "fltrust", "root_holder": "switzerland"}),
            ),
            ("min_sites", json!(2)),
            ("round_deadline_seconds", json!(3)),
        ],
    );
    let id = app.submit_study(&body).await;
    // round 1 is under way with all three holders when the amendment takes switzerland out
    let nodes = [Node::new(&app, "cleveland"), Node::new(&app, "hungarian")];
    let mut tasks = vec![];
    for node in &nodes {
        tasks.push(node.task(&id, 1, TaskKind::Fit).await);
    }
    let amended = app
        .post_if_match(
            &format!("/v1/permits/{pid}/amend"),
            &app.officer(),
            &app.permit_etag(&pid).await,
            &json!({"data_holders": ["cleveland", "hungarian"], "reason": "switzerland withdrew"}),
        )
        .await;
    assert_eq!(amended.status, 200, "{}", amended.text);
    for (node, t) in nodes.iter().zip(&tasks) {
        node.answer(t, 50).await;
    }
    // the open attempt fails without its root update; the next one is never opened
    let view = wait_status(&app, &id, "stopped").await;
    assert_eq!(
        view["status_reason"], "the permit no longer covers the study",
        "{view}"
    );
    let rounds = app
        .get(&format!("/v1/studies/{id}/rounds"), &app.researcher())
        .await;
    let attempts = rounds.body["rounds"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{}", rounds.text);
    assert_eq!(attempts[0]["phase"], "failed", "{}", rounds.text);
    let refused = app
        .audit(&format!("action=study.round.refuse&resource_id={id}"))
        .await;
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0]["outcome"], "denied");
    assert_eq!(refused[0]["detail"]["round"], 1);
    assert!(
        refused[0]["detail"]["reasons"]
            .as_array()
            .unwrap()
            .contains(&json!({"code": "root_holder_removed", "holder": "switzerland"})),
        "{}",
        refused[0]
    );
}
both_backends!(fltrust_stops_when_an_amendment_removes_the_root_holder);

// 3. A silent node: the deadline aggregates with the quorum, or fails the attempt without it.
async fn deadline_aggregates_with_quorum_or_fails_the_attempt(app: TestApp) {
    let permit = app
        .permit_id(&federation_application(&THREE, 50.0, "record"))
        .await;
    let nodes = [Node::new(&app, "cleveland"), Node::new(&app, "hungarian")];
    let silent = Node::new(&app, "switzerland");
    let metrics_before = crate::metrics::scrape(&app).await;

    // Quorum 2 of 3: the round closes at the deadline with the two results.
    let quorum = with(
        study_body(&permit, &THREE),
        &[
            ("min_sites", json!(2)),
            ("round_deadline_seconds", json!(3)),
        ],
    );
    let id = app.submit_study(&quorum).await;
    // the silent node fetched its task and the model, but is too slow
    let missed = silent.task(&id, 1, TaskKind::Fit).await;
    let too_late = silent.echo(&missed, 0.01).await;
    for n in &nodes {
        let t = n.task(&id, 1, TaskKind::Fit).await;
        n.answer(&t, 50).await;
    }
    let view = wait_round(&app, &id, 1, 1, "aggregated").await;
    let round = the_round(&view, 1, 1);
    let sites = round["sites"].as_array().unwrap();
    assert_eq!(sites.len(), 3, "{round}");
    for s in sites {
        let expected = s["data_holder"] != "switzerland";
        assert_eq!(s["contributed"], expected, "{round}");
    }
    assert_eq!(round["samples"], 100);
    let aggregate = app
        .audit(&format!("action=study.round.aggregate&resource_id={id}"))
        .await;
    assert_eq!(aggregate[0]["detail"]["contributors"], 2);
    assert_eq!(aggregate[0]["detail"]["missing"], 1);
    let late = silent
        .upload(&missed, &result_body(&missed, 50, Some(too_late)))
        .await;
    assert_eq!(late.status, 409, "{}", late.text);
    assert!(
        ["task_closed", "task_deadline_passed"].contains(&late.code()),
        "{}",
        late.text
    );
    let late_audit = app
        .audit(&format!(
            "action=node.task.result&resource_id={}",
            missed.task_id
        ))
        .await;
    assert_eq!(late_audit.len(), 1);
    assert_eq!(late_audit[0]["outcome"], "denied");

    // Quorum 3 of 3: the attempt fails and a second attempt at the same round opens.
    let all = with(
        study_body(&permit, &THREE),
        &[
            ("min_sites", json!(3)),
            ("round_deadline_seconds", json!(3)),
        ],
    );
    let id = app.submit_study(&all).await;
    let mut first_attempt = Vec::new();
    for n in &nodes {
        let t = n.task(&id, 1, TaskKind::Fit).await;
        n.answer(&t, 50).await;
        first_attempt.push(t.task_id);
    }
    first_attempt.push(silent.task(&id, 1, TaskKind::Fit).await.task_id);
    let view = wait_round(&app, &id, 1, 2, "collecting").await;
    let first = the_round(&view, 1, 1);
    assert_eq!(first["phase"], "failed", "{first}");
    assert!(
        first["reason"].as_str().unwrap().contains("2 of 3"),
        "{first}"
    );
    assert_eq!(
        view["epsilon_spent"], 0.0,
        "a failed attempt spends nothing"
    );
    assert_eq!(view["status"], "running");
    let failed = app
        .audit(&format!("action=study.round.fail&resource_id={id}"))
        .await;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["outcome"], "failure");
    // the second attempt hands every holder a new task, the ones that answered included
    for n in nodes.iter().chain(std::iter::once(&silent)) {
        let t = n.task(&id, 1, TaskKind::Fit).await;
        assert!(
            !first_attempt.contains(&t.task_id),
            "{} got an old task",
            n.org
        );
    }

    // /metrics counted both closings and switzerland's two missed tasks (at least: other
    // gateways in this test process count into the same recorder)
    let metrics = crate::metrics::scrape(&app).await;
    let grew = |name: &str, labels: &[(&str, &str)]| {
        metrics.count(name, labels) - metrics_before.count(name, labels)
    };
    assert!(grew("ehds_rounds_closed_total", &[("phase", "aggregated")]) >= 1.0);
    assert!(grew("ehds_rounds_closed_total", &[("phase", "failed")]) >= 1.0);
    assert!(grew("ehds_rounds_started_total", &[]) >= 3.0);
    assert!(
        grew(
            "ehds_node_tasks_expired_total",
            &[("data_holder", "switzerland")]
        ) >= 2.0
    );
}
both_backends!(deadline_aggregates_with_quorum_or_fails_the_attempt);

/// The seq of the only audit entry with `action` on `resource`.
async fn seq_of(app: &TestApp, action: &str, resource: &str) -> i64 {
    let found = app
        .audit(&format!("action={action}&resource_id={resource}"))
        .await;
    assert_eq!(found.len(), 1, "{action} on {resource}: {found:?}");
    found[0]["seq"].as_i64().unwrap()
}

// 4a. Revocation in the middle of a round stops the study for good.
async fn revocation_discards_the_round_and_stops_the_study(app: TestApp) {
    let permit = app
        .permit_id(&federation_application(&TWO, 50.0, "record"))
        .await;
    let id = app
        .submit_study(&with(study_body(&permit, &TWO), &[("rounds", json!(3))]))
        .await;
    let a = Node::new(&app, "cleveland");
    let b = Node::new(&app, "hungarian");
    // round 1 completes, round 2 is collecting with one result in
    for n in [&a, &b] {
        let t = n.task(&id, 1, TaskKind::Fit).await;
        n.answer(&t, 50).await;
    }
    let ta = a.task(&id, 2, TaskKind::Fit).await;
    let tb = b.task(&id, 2, TaskKind::Fit).await;
    a.answer(&ta, 50).await;
    let update = b.echo(&tb, 0.01).await;

    let revoked = app
        .post(
            &format!("/v1/permits/{permit}/revoke"),
            &app.officer(),
            &json!({"reason": "Art. 63 breach"}),
        )
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    let s = wait_status(&app, &id, "stopped").await;
    assert!(
        s["status_reason"].as_str().unwrap().contains("revoked"),
        "{s}"
    );
    assert_eq!(s["rounds_done"], 1);

    let view = rounds(&app, &id).await;
    assert_eq!(the_round(&view, 2, 1)["phase"], "discarded", "{view}");
    assert_eq!(view["rounds"].as_array().unwrap().len(), 2, "{view}");
    let late = b.upload(&tb, &result_body(&tb, 50, Some(update))).await;
    assert_eq!(late.status, 409, "{}", late.text);
    assert!(a.tasks().await.is_empty());
    assert!(b.tasks().await.is_empty());
    let params = app
        .get(
            &format!("/v1/node/tasks/{}/parameters", tb.task_id),
            &b.token,
        )
        .await;
    assert_eq!(params.status, 409, "{}", params.text);
    let model = app
        .get(&format!("/v1/studies/{id}/model"), &app.researcher())
        .await;
    assert_eq!(model.status, 409, "{}", model.text);
    assert_eq!(model.code(), "study_not_completed");

    // Nothing started after the revocation; the stop is on the record after it.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let revoke_seq = seq_of(&app, "permit.revoke", &permit).await;
    let starts = app
        .audit(&format!("action=study.round.start&resource_id={id}"))
        .await;
    assert_eq!(starts.len(), 2);
    assert!(
        starts
            .iter()
            .all(|e| e["seq"].as_i64().unwrap() < revoke_seq),
        "{starts:?}"
    );
    assert!(seq_of(&app, "study.stop", &id).await > revoke_seq);
    let stop = app
        .audit(&format!("action=study.stop&resource_id={id}"))
        .await;
    assert_eq!(stop[0]["detail"]["discarded_round"], 2);
    let permit_view = app
        .get(&format!("/v1/permits/{permit}"), &app.officer())
        .await;
    let spent = permit_view.body["privacy_budget"]["epsilon_spent"]
        .as_f64()
        .unwrap();
    assert!(
        (spent - s["epsilon_spent"].as_f64().unwrap()).abs() < 1e-9,
        "the discarded round spent nothing: {}",
        permit_view.text
    );
}
both_backends!(revocation_discards_the_round_and_stops_the_study);

// 4b. Suspension pauses the study; reinstatement resumes it at the same round.
async fn suspension_pauses_and_reinstatement_resumes(app: TestApp) {
    let permit = app
        .permit_id(&federation_application(&TWO, 50.0, "record"))
        .await;
    let id = app.submit_study(&study_body(&permit, &TWO)).await;
    let nodes = [Node::new(&app, "cleveland"), Node::new(&app, "hungarian")];
    let first = nodes[0].task(&id, 1, TaskKind::Fit).await;
    nodes[0].answer(&first, 50).await;

    let suspended = app
        .post(
            &format!("/v1/permits/{permit}/suspend"),
            &app.officer(),
            &json!({"reason": "Art. 63 inquiry"}),
        )
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.text);
    wait_status(&app, &id, "suspended").await;
    let view = rounds(&app, &id).await;
    assert_eq!(the_round(&view, 1, 1)["phase"], "discarded", "{view}");
    assert!(nodes[1].tasks().await.is_empty());
    let suspend_seq = seq_of(&app, "study.suspend", &id).await;

    let reinstated = app
        .post(
            &format!("/v1/permits/{permit}/reinstate"),
            &app.officer(),
            &json!({}),
        )
        .await;
    assert_eq!(reinstated.status, 200, "{}", reinstated.text);
    let view = wait_round(&app, &id, 1, 2, "collecting").await;
    assert_eq!(view["status"], "running");
    let resume_seq = seq_of(&app, "study.resume", &id).await;
    assert!(resume_seq > suspend_seq);
    let starts = app
        .audit(&format!("action=study.round.start&resource_id={id}"))
        .await;
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert_eq!(starts[1]["detail"]["round"], 1);
    assert_eq!(starts[1]["detail"]["attempt"], 2);
    assert!(starts[1]["seq"].as_i64().unwrap() > resume_seq);

    // The earlier result does not carry over: both holders answer the new attempt.
    let s = run_to_end(&app, &id, &nodes, 50).await;
    assert_eq!(s["status"], "completed", "{s}");
    let round = the_round(&rounds(&app, &id).await, 1, 2);
    assert_eq!(round["phase"], "aggregated");
    assert_eq!(round["samples"], 100);
}
both_backends!(suspension_pauses_and_reinstatement_resumes);

async fn permit_spent(app: &TestApp, permit: &str) -> (f64, f64) {
    let r = app
        .get(&format!("/v1/permits/{permit}"), &app.officer())
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let b = &r.body["privacy_budget"];
    (
        b["epsilon_spent"].as_f64().unwrap(),
        b["epsilon_total"].as_f64().unwrap(),
    )
}

// 5a. The budget the permit records is what the study spent, and never more than granted.
async fn the_permit_pays_exactly_what_the_study_spends(app: TestApp) {
    let permit = app
        .permit_id(&federation_application(&TWO, 6.0, "record"))
        .await;
    let body = with(
        study_body(&permit, &TWO),
        &[
            ("rounds", json!(3)),
            ("dp.noise_multiplier", Value::Null),
            ("dp.target_epsilon", json!(4.0)),
        ],
    );
    let id = app.submit_study(&body).await;
    let nodes = [Node::new(&app, "cleveland"), Node::new(&app, "hungarian")];
    let planned = study(&app, &id).await["epsilon_planned"].as_f64().unwrap();
    assert!(planned <= 4.0 + 1e-9, "{planned}");

    for round in 1..=3 {
        for n in &nodes {
            let t = n.task(&id, round, TaskKind::Fit).await;
            n.answer(&t, 40).await;
        }
        let view = wait_round(&app, &id, round, 1, "aggregated").await;
        let (spent, total) = permit_spent(&app, &permit).await;
        assert!(spent <= total, "{spent} > {total}");
        let r = the_round(&view, round, 1);
        assert!(
            (spent - r["epsilon_total"].as_f64().unwrap()).abs() < 1e-9,
            "round {round}: permit {spent}, study {r}"
        );
    }
    let s = run_to_end(&app, &id, &nodes, 40).await;
    assert_eq!(s["status"], "completed", "{s}");
    let (spent, total) = permit_spent(&app, &permit).await;
    let study_spent = s["epsilon_spent"].as_f64().unwrap();
    assert!(
        (spent - study_spent).abs() < 1e-9,
        "{spent} vs {study_spent}"
    );
    assert!(
        (study_spent - planned).abs() < 1e-6,
        "{study_spent} vs {planned}"
    );
    assert!(spent <= total);
    let view = rounds(&app, &id).await;
    assert_eq!(view["epsilon_spent"], s["epsilon_spent"]);
    let last = the_round(&view, 3, 1);
    assert!(
        last["epsilon_total"].as_f64().unwrap() <= 4.0 + 1e-9,
        "{last}"
    );

    // What is left cannot pay for the same plan again.
    let again = app.post("/v1/studies", &app.researcher(), &body).await;
    assert_eq!(
        (again.status.as_u16(), again.code()),
        (422, "study_not_permitted"),
        "{}",
        again.text
    );
    assert!(
        reason_codes(&again)
            .iter()
            .any(|c| c == "planned_rounds_exceed_budget" || c == "budget_too_small_for_one_round"),
        "{}",
        again.text
    );
    let remaining = again.body["reasons"][0]["remaining"].as_f64().unwrap();
    assert!((remaining - (total - spent)).abs() < 1e-9, "{}", again.text);
    assert_eq!(studies_listed(&app).await, 1);
}
both_backends!(the_permit_pays_exactly_what_the_study_spends);

// 5b. Two studies whose plans together exceed the permit's budget: the second is refused at
// submission, even though the first has not spent anything yet.
async fn concurrent_plans_cannot_overcommit_the_budget(app: TestApp) {
    let permit = app
        .permit_id(&federation_application(&TWO, 6.0, "record"))
        .await;
    let body = with(
        study_body(&permit, &TWO),
        &[
            ("rounds", json!(3)),
            ("dp.noise_multiplier", Value::Null),
            ("dp.target_epsilon", json!(4.0)),
        ],
    );
    let first = app.submit_study(&body).await;
    assert_eq!(study(&app, &first).await["epsilon_spent"], 0.0);
    // 4 + 4 > 6: both plans cannot be paid for
    let second = app.post("/v1/studies", &app.researcher(), &body).await;
    assert_eq!(
        (second.status.as_u16(), second.code()),
        (422, "study_not_permitted"),
        "a second plan of epsilon {} was accepted on a permit of 6 that already carries a plan \
         of {} (study {} is {})",
        second.body["epsilon_planned"],
        second.body["epsilon_planned"],
        second.body["id"],
        second.body["status"],
    );
    assert!(
        reason_codes(&second)
            .iter()
            .any(|c| c == "planned_rounds_exceed_budget" || c == "budget_too_small_for_one_round"),
        "{}",
        second.text
    );
    assert_eq!(studies_listed(&app).await, 1);
}
both_backends!(concurrent_plans_cannot_overcommit_the_budget);

// 6a. Cancellation discards the round in flight; no model leaves an unfinished study.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_discards_the_round_in_flight() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let permit = app
        .permit_id(&federation_application(&TWO, 50.0, "record"))
        .await;
    let id = app
        .submit_study(&with(study_body(&permit, &TWO), &[("rounds", json!(2))]))
        .await;
    let a = Node::new(&app, "cleveland");
    let b = Node::new(&app, "hungarian");
    let ta = a.task(&id, 1, TaskKind::Fit).await;
    let tb = b.task(&id, 1, TaskKind::Fit).await;
    a.answer(&ta, 50).await;

    let model = app
        .get(&format!("/v1/studies/{id}/model"), &app.researcher())
        .await;
    assert_eq!(
        (model.status.as_u16(), model.code()),
        (409, "study_not_completed"),
        "{}",
        model.text
    );
    assert_eq!(model.body["current_state"], "running");

    // Only alice's organisation (or the HDAB) may cancel, and only with a reason.
    let bob = app.token("bob", &["researcher"], Some("uni-b"));
    let foreign = app
        .post(
            &format!("/v1/studies/{id}/cancel"),
            &bob,
            &json!({"reason": "not mine"}),
        )
        .await;
    // (404 as for a study that does not exist: bob may not see alice's study.)
    assert_eq!(
        (foreign.status.as_u16(), foreign.code()),
        (404, "not_found"),
        "{}",
        foreign.text
    );
    let blank = app
        .post(
            &format!("/v1/studies/{id}/cancel"),
            &app.researcher(),
            &json!({"reason": "  "}),
        )
        .await;
    assert_eq!(blank.status, 422, "{}", blank.text);

    let update = b.echo(&tb, 0.01).await;
    let cancelled = app
        .post(
            &format!("/v1/studies/{id}/cancel"),
            &app.researcher(),
            &json!({"reason": "wrong cohort"}),
        )
        .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    assert_eq!(cancelled.body["status"], "cancelled");
    let view = rounds(&app, &id).await;
    assert_eq!(view["status"], "cancelled");
    let round = the_round(&view, 1, 1);
    assert_eq!(round["phase"], "discarded", "{round}");
    assert_eq!(view["epsilon_spent"], 0.0);
    let late = b.upload(&tb, &result_body(&tb, 50, Some(update))).await;
    assert_eq!(
        (late.status.as_u16(), late.code()),
        (409, "task_closed"),
        "{}",
        late.text
    );
    assert!(b.tasks().await.is_empty());
    let again = app
        .post(
            &format!("/v1/studies/{id}/cancel"),
            &app.researcher(),
            &json!({"reason": "twice"}),
        )
        .await;
    assert_eq!(again.status, 409, "{}", again.text);
    let model = app
        .get(&format!("/v1/studies/{id}/model"), &app.researcher())
        .await;
    assert_eq!(model.code(), "study_not_completed");
    let cancel = app
        .audit(&format!(
            "action=study.cancel&resource_id={id}&outcome=success"
        ))
        .await;
    assert_eq!(cancel.len(), 1);
    assert_eq!(cancel[0]["detail"]["discarded_round"], 1);

    // The round loop starts nothing more for it.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let starts = app
        .audit(&format!("action=study.round.start&resource_id={id}"))
        .await;
    assert_eq!(starts.len(), 1);
    let (spent, _) = permit_spent(&app, &permit).await;
    assert_eq!(spent, 0.0);
}

// 6b. The output check: a completed study resting on too few samples per site keeps its model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_check_holds_back_a_model_on_too_few_samples() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let permit = app
        .permit_id(&federation_application(&TWO, 50.0, "record"))
        .await;
    let nodes = [Node::new(&app, "cleveland"), Node::new(&app, "hungarian")];
    let checked = |samples: u64| {
        with(
            study_body(&permit, &TWO),
            &[(
                "output_check",
                json!({"min_sites": 2, "min_samples_per_site": samples}),
            )],
        )
    };

    // Below the HDAB's floor (10 per site by default) is refused at submission.
    let below = app
        .post("/v1/studies", &app.researcher(), &checked(5))
        .await;
    assert_eq!(below.status, 422, "{}", below.text);
    assert_eq!(
        field_codes(&below),
        [(
            "output_check".to_owned(),
            "output_check_below_floor".to_owned()
        )]
    );

    let small = app.submit_study(&checked(50)).await;
    let s = run_to_end(&app, &small, &nodes, 30).await;
    assert_eq!(s["status"], "completed", "{s}");
    let model = app
        .get(&format!("/v1/studies/{small}/model"), &app.researcher())
        .await;
    assert_eq!(
        (model.status.as_u16(), model.code()),
        (409, "output_check_failed"),
        "{}",
        model.text
    );
    let reasons = model.body["reasons"].as_array().unwrap();
    assert_eq!(reasons.len(), 1, "{}", model.text);
    assert_eq!(reasons[0]["code"], "site_below_min_samples");
    assert_eq!(reasons[0]["sites"], 2);
    assert!(
        !model.text.contains("cleveland") && !model.text.contains("hungarian"),
        "the refusal names no site: {}",
        model.text
    );
    let denied = app
        .audit(&format!(
            "action=study.model&resource_id={small}&outcome=denied"
        ))
        .await;
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0]["detail"]["code"], "output_check_failed");

    // The same study on enough samples releases its model, and the release is audited.
    let enough = app.submit_study(&checked(50)).await;
    let s = run_to_end(&app, &enough, &nodes, 60).await;
    assert_eq!(s["status"], "completed", "{s}");
    let r = app
        .client
        .get(format!("{}/v1/studies/{enough}/model", app.base))
        .bearer_auth(app.researcher())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let digest = r.headers()["x-model-digest"].to_str().unwrap().to_owned();
    let (params, meta) = fl_engine::load_safetensors(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(meta.digest, digest);
    assert_eq!(params.digest(), digest);
    assert_eq!(meta.study, enough);
    let released = app
        .audit(&format!(
            "action=study.model&resource_id={enough}&outcome=success"
        ))
        .await;
    assert_eq!(released.len(), 1);
    assert_eq!(released[0]["detail"]["digest"], digest);
    // the HDAB oversees studies but takes no model out
    let officer = app
        .get(&format!("/v1/studies/{enough}/model"), &app.officer())
        .await;
    assert_eq!(officer.status, 403, "{}", officer.text);
}

/// A holder's evaluation with `edit` applied to its test metrics.
fn evaluation(edit: &[(&str, Value)]) -> Value {
    let mut test = json!({"n": 40, "loss": 0.6, "accuracy": 0.7, "balanced_accuracy": 0.65,
        "auroc": 0.75, "auprc": 0.5, "f1": 0.55, "precision": 0.6, "recall": 0.5,
        "brier": 0.2, "ece": 0.05, "predicted_positive_rate": 0.3, "threshold": 0.5});
    for (k, v) in edit {
        test[*k] = v.clone();
    }
    json!({"validation": test.clone(), "test": test})
}

// 2b. The metrics a holder reports: every engine metric in range is accepted (C-index and
// integrated Brier score for survival, the multi-class Brier score up to 2); anything out of
// range is refused and nothing is stored; the round shows each holder's metrics and their
// uniform mean, predicted-positive rate included.
async fn reported_metrics_are_range_checked_and_averaged(app: TestApp) {
    let permit = app
        .permit_id(&federation_application(&TWO, 1000.0, "record"))
        .await;
    let id = app.submit_study(&study_body(&permit, &TWO)).await;
    let (a, b) = (Node::new(&app, TWO[0]), Node::new(&app, TWO[1]));
    let ta = a.task(&id, 1, TaskKind::Fit).await;
    for (field, bad) in [
        ("c_index", json!(1.5)),
        ("integrated_brier", json!(-0.1)),
        ("ece", json!(1.01)),
        ("predicted_positive_rate", json!(-0.5)),
        ("precision", json!(2.0)),
        ("brier", json!(2.5)),
        ("threshold", json!(1.5)),
    ] {
        let mut body = result_body(&ta, 40, Some(a.echo(&ta, 0.01).await));
        body["evaluation"] = evaluation(&[(field, bad)]);
        let r = a.upload(&ta, &body).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (422, "invalid_metrics"),
            "{field}: {}",
            r.text
        );
    }
    // in range: a survival holder's C-index, a multi-class Brier score above 1
    let mut body = result_body(&ta, 40, Some(a.echo(&ta, 0.01).await));
    body["evaluation"] = evaluation(&[("c_index", json!(0.7)), ("integrated_brier", json!(0.15))]);
    let r = a.upload(&ta, &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let tb = b.task(&id, 1, TaskKind::Fit).await;
    let mut body = result_body(&tb, 40, Some(b.echo(&tb, 0.01).await));
    body["evaluation"] = evaluation(&[
        ("brier", json!(1.2)),
        ("predicted_positive_rate", json!(0.1)),
    ]);
    let r = b.upload(&tb, &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // both evaluated the initial model: round 0's evaluation carries every field and the mean
    let view = app
        .wait_for(
            &format!("/v1/studies/{id}/rounds"),
            &app.researcher(),
            30,
            "the initial evaluation",
            |v| {
                v["initial_evaluation"]["sites"]
                    .as_array()
                    .is_some_and(|s| s.len() == 2)
            },
        )
        .await;
    let ev = &view["initial_evaluation"];
    let mean = &ev["mean_test"];
    assert!(
        (mean["predicted_positive_rate"].as_f64().unwrap() - 0.2).abs() < 1e-12,
        "{ev}"
    );
    assert!(
        (mean["brier"].as_f64().unwrap() - 0.7).abs() < 1e-12,
        "{ev}"
    );
    // a metric only one holder has is averaged over that holder
    assert!(
        (mean["c_index"].as_f64().unwrap() - 0.7).abs() < 1e-12,
        "{ev}"
    );
    assert_eq!(mean["n"], 80);
    let sites = ev["sites"].as_array().unwrap();
    assert!(
        sites.iter().any(|s| s["test"]["integrated_brier"] == 0.15),
        "{ev}"
    );
}
both_backends!(reported_metrics_are_range_checked_and_averaged);

// A method whose sites reply with other values than they were sent (q-FedAvg: loss and
// Lipschitz estimate) has its replies checked by its own server at upload.
async fn replies_with_method_extras_are_checked_by_the_method(app: TestApp) {
    let (_, permit) = app
        .permit_with(
            &federation_application(&TWO, 50.0, "record"),
            &json!({"decision": "approve", "dp_requirement": "none_allowed"}),
        )
        .await;
    let mut body = study_body(permit["id"].as_str().unwrap(), &TWO);
    body["dp"] = json!({"level": "none"});
    body["strategy"] = json!({"name": "qfedavg", "q": 1.0});
    let id = app.submit_study(&body).await;
    let b = Node::new(&app, "hungarian");
    let tb = b.task(&id, 1, TaskKind::Fit).await;
    let ins = b.global(&tb).await;
    assert!(ins.extras.is_empty());
    let holder = b.holder();
    let update = |extras: &ParameterSet| {
        result_body(
            &tb,
            100,
            Some(
                encode_update(&shifted(&ins.params, 0.01), extras, tb.study_id, 1, &holder)
                    .unwrap(),
            ),
        )
    };
    let mut loss_only = ParameterSet::new();
    loss_only
        .insert("qfedavg/loss", vec![1], vec![0.7])
        .unwrap();
    let mut stray = ParameterSet::new();
    stray.insert("stray/value", vec![1], vec![0.7]).unwrap();
    for (what, extras) in [
        ("no Lipschitz estimate", loss_only.clone()),
        ("a stray value", stray),
    ] {
        let r = b.upload(&tb, &update(&extras)).await;
        assert_eq!(
            (r.status.as_u16(), r.code()),
            (422, "invalid_update"),
            "{what}: {}",
            r.text
        );
    }
    let mut full = loss_only;
    full.insert("qfedavg/lipschitz", vec![1], vec![10.0])
        .unwrap();
    let r = b.upload(&tb, &update(&full)).await;
    assert_eq!(r.status, 200, "{}", r.text);
}
both_backends!(replies_with_method_extras_are_checked_by_the_method);

// 2d. Silo, the baseline of each holder alone: nothing is shared, so nothing is aggregated
// but the holders' own figures, and no epsilon is spent.
async fn silo_runs_under_a_permit(app: TestApp) {
    let (_, permit) = app
        .permit_with(
            &federation_application(&TWO, 50.0, "record"),
            &json!({"decision": "approve", "dp_requirement": "none_allowed"}),
        )
        .await;
    let permit = permit["id"].as_str().unwrap().to_owned();
    let body = with(
        study_body(&permit, &TWO),
        &[
            ("strategy", json!({"name": "silo"})),
            ("dp", json!({"level": "none"})),
        ],
    );
    let id = app.submit_study(&body).await;
    for org in TWO {
        let node = Node::new(&app, org);
        let t = node.task(&id, 1, TaskKind::Fit).await;
        assert!(
            node.global(&t).await.params.is_empty(),
            "a silo shares no parameter"
        );
        let update = node.echo(&t, 0.0).await;
        let r = node.upload(&t, &result_body(&t, 50, Some(update))).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let view = wait_round(&app, &id, 1, 1, "aggregated").await;
    assert_eq!(view["epsilon_spent"], 0.0, "{view}");
    let round = the_round(&view, 1, 1);
    assert_eq!(round["samples"], 100, "{round}");
    // without formal DP each holder's own training loss is the silo's result
    for s in round["sites"].as_array().unwrap() {
        assert_eq!(s["train_loss"], 0.5, "{round}");
    }
}
both_backends!(silo_runs_under_a_permit);

/// `GET /v1/studies/{id}/events` streams the study's progress until it ends: each round attempt
/// when it opens and closes, exactly as the rounds view shows it, the study's status and
/// epsilon as they change, and a closing `end`; the subscription is audited once and follows
/// the same visibility rule as the study.
async fn study_progress_streams_as_server_sent_events(app: TestApp) {
    let permit = app
        .permit_id(&federation_application(&TWO, 50.0, "record"))
        .await;
    let planned = 2;
    let id = app
        .submit_study(&with(
            study_body(&permit, &TWO),
            &[("rounds", json!(planned))],
        ))
        .await;
    let url = format!("{}/v1/studies/{id}/events", app.base);

    // another organisation's researcher cannot tell the study exists
    let stranger = app.token("bob", &["researcher"], Some("uni-b"));
    let r = app.send(app.client.get(&url).bearer_auth(&stranger)).await;
    assert_eq!(
        (r.status.as_u16(), r.code()),
        (404, "not_found"),
        "{}",
        r.text
    );

    let resp = app
        .client
        .get(&url)
        .bearer_auth(app.researcher())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let reader = tokio::spawn(read_events(resp));
    // The nodes report their evaluation of the model each task brings: a round's evaluation
    // arrives after the round closed (with the next round's fit, or the final evaluation).
    let nodes = TWO.map(|org| Node::new(&app, org));
    let until = Instant::now() + Duration::from_secs(60);
    let done = loop {
        for n in &nodes {
            for t in n.tasks().await {
                if t.study_id.to_string() != id {
                    continue;
                }
                let parameters = match t.kind {
                    TaskKind::Fit => Some(n.echo(&t, 0.01).await),
                    TaskKind::Evaluate => None,
                };
                let mut body = result_body(&t, 50, parameters);
                body["evaluation"] = evaluation(&[]);
                let r = n.upload(&t, &body).await;
                assert_eq!(r.status, 200, "{}", r.text);
            }
        }
        let s = study(&app, &id).await;
        if s["status"] != "running" {
            break s;
        }
        assert!(Instant::now() < until, "study {id} still running: {s}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    let events = tokio::time::timeout(Duration::from_secs(30), reader)
        .await
        .expect("the stream ends with the study")
        .unwrap();

    let last = events.last().expect("events");
    assert_eq!(
        (last.event.as_str(), last.data.as_str()),
        ("end", "completed")
    );
    // every closed round as the rounds view has it, its evaluation included (which arrived
    // after the round closed), and a round sent again only when its view changed
    let view = rounds(&app, &id).await;
    for round in view["rounds"].as_array().unwrap() {
        assert!(round["evaluation"].is_object(), "{round}");
        let key = format!("{}.{}", round["round"], round["attempt"]);
        let sent: Vec<&StreamedEvent> = events
            .iter()
            .filter(|e| e.event == "round" && e.id.as_deref().is_some_and(|i| i.starts_with(&key)))
            .collect();
        let closing = sent.last().expect("the round was streamed");
        assert_eq!(
            closing.id.as_deref(),
            Some(format!("{key}.{}", round["phase"].as_str().unwrap()).as_str())
        );
        let streamed: Value = serde_json::from_str(&closing.data).unwrap();
        assert_eq!(
            &streamed, round,
            "the stream shows the round as the view does"
        );
        assert!(
            sent.windows(2).all(|w| w[0].data != w[1].data),
            "a round is sent again only when it changed: {sent:?}"
        );
    }
    // progress: rounds done and epsilon only grow, and end where the study ended
    let progress: Vec<Value> = events
        .iter()
        .filter(|e| e.event == "study")
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    assert!(progress.windows(2).all(|w| {
        w[0]["rounds_done"].as_u64() <= w[1]["rounds_done"].as_u64()
            && w[0]["epsilon_spent"].as_f64() <= w[1]["epsilon_spent"].as_f64()
    }));
    let final_progress = progress.last().unwrap();
    assert_eq!(final_progress["status"], "completed");
    assert_eq!(final_progress["rounds_done"], planned);
    assert_eq!(final_progress["epsilon_spent"], done["epsilon_spent"]);

    // the subscription is one audited read
    let reads = app
        .audit(&format!("action=study.read&resource_id={id}"))
        .await;
    let subscriptions: Vec<_> = reads
        .iter()
        .filter(|e| e["detail"]["view"] == "events")
        .collect();
    assert_eq!(subscriptions.len(), 1, "{reads:?}");
    assert_eq!(subscriptions[0]["outcome"], "success");
}
both_backends!(study_progress_streams_as_server_sent_events);

// A permit change wakes the round loop at once, not at its next tick: with a tick of ten
// minutes (the waits below give up after 30 s), a suspension pauses the running study and a
// reinstatement resumes it, and the holders' results aggregate the round.
async fn a_permit_change_wakes_the_round_loop(backend: Backend) {
    let app = TestApp::spawn_with(backend, |s| s.federation.tick_millis = 600_000).await;
    let permit = app
        .permit_id(&federation_application(&TWO, 50.0, "record"))
        .await;
    let id = app
        .submit_study(&with(study_body(&permit, &TWO), &[("rounds", json!(2))]))
        .await;
    // the submission woke the loop: round 1 is open
    wait_round(&app, &id, 1, 1, "collecting").await;

    let suspended = app
        .post(
            &format!("/v1/permits/{permit}/suspend"),
            &app.officer(),
            &json!({"reason": "non-compliance procedure"}),
        )
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.text);
    wait_status(&app, &id, "suspended").await;

    let reinstated = app
        .post(
            &format!("/v1/permits/{permit}/reinstate"),
            &app.officer(),
            &json!({}),
        )
        .await;
    assert_eq!(reinstated.status, 200, "{}", reinstated.text);
    wait_status(&app, &id, "running").await;
    // the round in flight was discarded at the suspension; a new attempt of it opens
    wait_round(&app, &id, 1, 2, "collecting").await;

    // and the holders' results aggregate the round without waiting for the tick
    for org in TWO {
        let node = Node::new(&app, org);
        let task = node.task(&id, 1, TaskKind::Fit).await;
        node.answer(&task, 50).await;
    }
    wait_round(&app, &id, 1, 2, "aggregated").await;
}

mod a_permit_change_wakes_the_round_loop {
    use super::*;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        a_permit_change_wakes_the_round_loop(Backend::Sqlite).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        a_permit_change_wakes_the_round_loop(Backend::Postgres).await
    }
}

// The holders' data-quality summaries reach the researcher in the study view, per holder, the
// latest one each, with counts below the small-cell threshold withheld; a result without one
// (an older node) is still accepted.
async fn data_quality_is_shown_per_holder(app: TestApp) {
    let permit = app
        .permit_id(&federation_application(&THREE, 50.0, "record"))
        .await;
    let id = app
        .submit_study(&with(study_body(&permit, &THREE), &[("rounds", json!(1))]))
        .await;
    let quality = |missing: u64| {
        json!({
            "split": "node",
            "flags": ["small_class"],
            "features": [{"name": "age", "missing": missing, "matched": 40, "ignored": null,
                          "flags": ["unit_display_text", "constant_feature"]}],
        })
    };
    for (org, missing) in [
        ("cleveland", Some(3)),
        ("hungarian", Some(25)),
        ("switzerland", None),
    ] {
        let node = Node::new(&app, org);
        let t = node.task(&id, 1, TaskKind::Fit).await;
        let mut body = result_body(&t, 50, Some(node.echo(&t, 0.01).await));
        if org == "cleveland" {
            // an unknown flag is a malformed result
            body["data_quality"] = json!({"split": "node", "flags": ["nope"], "features": []});
            assert_eq!(node.upload(&t, &body).await.status, 422);
        }
        if let Some(m) = missing {
            body["data_quality"] = quality(m);
        }
        let r = node.upload(&t, &body).await;
        assert_eq!(r.status, 200, "{org}: {}", r.text);
    }
    let view = study(&app, &id).await;
    let shown = view["data_quality"]
        .as_array()
        .expect("data_quality")
        .clone();
    let holders: Vec<&str> = shown
        .iter()
        .map(|h| h["data_holder"].as_str().unwrap())
        .collect();
    assert_eq!(holders, ["cleveland", "hungarian"], "{view}");
    let feature = |i: usize| shown[i]["quality"]["features"][0].clone();
    // 3 missing values at cleveland are below the threshold of 10: withheld
    assert_eq!(feature(0)["missing"], Value::Null, "{view}");
    assert_eq!(feature(1)["missing"], 25, "{view}");
    assert_eq!(feature(1)["matched"], 40, "{view}");
    assert_eq!(
        feature(1)["flags"],
        json!(["unit_display_text", "constant_feature"])
    );
    assert_eq!(shown[0]["quality"]["split"], "node");
    assert_eq!(shown[0]["quality"]["flags"], json!(["small_class"]));
    assert_eq!(shown[0]["round"], 1);
    // the list of studies stays short
    let list = app.get("/v1/studies", &app.researcher()).await;
    assert!(!list.text.contains("data_quality"), "{}", list.text);
}
both_backends!(data_quality_is_shown_per_holder);
