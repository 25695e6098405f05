//! Parsing and assessing study requests: each refusal by its field and code, the privacy
//! plans that follow from a request, and the budget a permit has left for them.

use fl_engine::{
    model::{Backbone, Cell, ColumnRange, MaskLayout, Readout, SeqConfig},
    ModelSpec,
};
use secagg::ddg::accounting::epsilon as ddg_epsilon;

use super::fixtures::*;
use super::*;
use crate::domain::{
    check::DenyReason,
    study::{DecisionThreshold, DpLevel, StudyTask},
    time, BudgetUnit, DpRequirement, OrgId, Permit,
};

fn permit(epsilon: f64, unit: BudgetUnit) -> Permit {
    crate::domain::permit::sample_permit_for(time::now(), &["hosp-1", "hosp-2"], epsilon, unit)
}

#[test]
fn a_valid_request_becomes_a_study_with_its_input_width_from_the_features() {
    let s = spec(10);
    assert_eq!(s.model, ModelSpec::logistic(1, 1));
    assert_eq!((s.seed, s.output_check.min_sites), (7, 2));
    assert_eq!((s.dp.sampling_rate, s.dp.steps_per_round), (1.0, 1));
    assert!(s.train.record_dp.is_none());
}

fn survival_series_request() -> StudyRequest {
    let mut r = request();
    r.feature_spec = serde_json::json!({"name": "s",
        "cohort": {"unit": "encounter", "index": "admission", "category": "ehr_data"},
        "features": [{"name": "age", "category": "ehr_data", "source": {"patient": "age"},
                      "transform": {"kind": "number"}},
                     {"name": "sex", "category": "ehr_data", "source": {"patient": "gender"},
                      "transform": {"kind": "map", "values": {"male": 1, "female": 0}}}],
        "time_series": {"hours": 2, "channels": [
            {"name": "hr", "category": "ehr_data",
             "observation": {"system": "http://loinc.org", "code": "8867-4"}},
            {"name": "rr", "category": "ehr_data",
             "observation": {"system": "http://loinc.org", "code": "9279-1"}}]},
        "label": {"name": "y", "category": "ehr_data",
                  "source": {"survival": {"event": {"death": {}}, "follow_up": "30d"}}}});
    r
}

fn codes(r: &StudyRequest) -> Vec<(String, &'static str)> {
    parse_study(r, 1e-5, FLOOR, LIMITS, 7)
        .unwrap_err()
        .into_iter()
        .map(|e| (e.field, e.code))
        .collect()
}

fn model(v: serde_json::Value) -> ModelRequest {
    serde_json::from_value(v).unwrap()
}

#[test]
fn a_recurrent_backbone_takes_its_own_settings_and_nothing_else() {
    let parse = |backbone: serde_json::Value| {
        serde_json::from_value::<ModelRequest>(
            serde_json::json!({"architecture": "net", "backbone": backbone}),
        )
    };
    for kind in ["gru", "lstm"] {
        let r = parse(serde_json::json!({"kind": kind, "hidden": 4})).unwrap();
        let Some(BackboneRequest::Gru(b) | BackboneRequest::Lstm(b)) = r.backbone else {
            panic!("{kind}: {:?}", r.backbone);
        };
        assert_eq!((b.hidden, b.layers, b.readout), (4, 1, Readout::Last));
        // a setting of the fusion backbone is not one of these
        let e = parse(serde_json::json!({"kind": kind, "hidden": 4, "cell": "gru"})).unwrap_err();
        assert!(
            e.to_string().contains("unknown field `cell`"),
            "{kind}: {e}"
        );
        let e = parse(serde_json::json!({"kind": kind})).unwrap_err();
        assert!(
            e.to_string().contains("missing field `hidden`"),
            "{kind}: {e}"
        );
    }
}

#[test]
fn a_survival_label_trains_a_cox_model_and_series_feed_the_sequence_models() {
    let mut r = survival_series_request();
    // the row: 2 steps x 2 channels of values, their mask, then age and sex
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    assert_eq!(s.task, StudyTask::Survival);
    assert_eq!(s.train.loss, LossKind::Cox);
    assert_eq!(s.model, ModelSpec::logistic(10, 1));
    assert_eq!(s.parameter_count, Some(11));
    r.model = model(serde_json::json!({"architecture": "net",
        "backbone": {"kind": "lstm", "hidden": 4}}));
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    let ModelSpec::BackboneNet { body, outputs: 1 } = &s.model else {
        panic!("{:?}", s.model)
    };
    assert_eq!(
        body,
        &Backbone::Columns {
            inputs: 10,
            columns: vec![ColumnRange { start: 0, end: 8 }],
            body: Box::new(Backbone::Recurrent(SeqConfig {
                cell: Cell::Lstm,
                time: 2,
                features: 2,
                hidden: 4,
                mask: MaskLayout::PerValue,
                readout: Readout::Last,
                layers: 1,
            })),
        }
    );
    // nn.LSTM(4, 4): 4 (4*4 + 4*4 + 2*4) = 160 (values and mask channels), output 5
    assert_eq!(s.parameter_count, Some(165));
    assert_eq!(s.model.inputs(), 10);
    // two stacked layers: the second reads the first's 4 hidden units
    r.model = model(serde_json::json!({"architecture": "net",
        "backbone": {"kind": "gru", "hidden": 4, "layers": 2}}));
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    assert_eq!(s.parameter_count, Some(3 * 40 + 3 * 40 + 5));
    r.model = model(serde_json::json!({"architecture": "net",
        "backbone": {"kind": "gru", "hidden": 4, "layers": 9}}));
    assert_eq!(
        codes(&r),
        [("model.backbone.layers".to_owned(), "out_of_range")]
    );
    // the fusion reads the whole row; FENDA's extractors read different widths
    r.model = model(serde_json::json!({"architecture": "net",
        "backbone": {"kind": "fusion", "cell": "lstm", "hidden": 4, "static_hidden": [3]}}));
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    assert_eq!(s.model.inputs(), 10);
    r.model = model(serde_json::json!({"architecture": "fenda",
        "backbone": {"kind": "gru", "hidden": 4},
        "local_backbone": {"kind": "mlp", "hidden": [4], "inputs": {"features": ["sex"]},
                           "norm": {"kind": "layer"}}}));
    r.strategy = serde_json::json!({"name": "fenda_fl"});
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    let ModelSpec::BackboneFenda { local, .. } = &s.model else {
        panic!("{:?}", s.model)
    };
    assert_eq!(local.row_width(), 10);
    assert!(matches!(local, Backbone::Columns { columns, .. }
        if columns == &[ColumnRange { start: 9, end: 10 }]));
    // the CNN reads the series grid as a two-channel image
    r.strategy = serde_json::json!({"name": "fedavg"});
    r.model = model(serde_json::json!({"architecture": "net",
        "backbone": {"kind": "cnn", "stages": [4], "groups": 2}}));
    assert!(parse_study(&r, 1e-5, FLOOR, LIMITS, 7).is_ok());
}

#[test]
fn each_bad_task_loss_model_or_dp_combination_has_its_code() {
    let base = survival_series_request();
    // a survival task with a softmax head, and with a classification loss
    let mut r = base.clone();
    r.model.outputs = Some(2);
    assert!(codes(&r).contains(&("model.outputs".into(), "head_task_mismatch")));
    let mut r = base.clone();
    r.loss = Some(LossKind::CrossEntropy {
        class_weights: None,
    });
    assert_eq!(codes(&r), [("loss".to_owned(), "loss_task_mismatch")]);
    // a binary task on a survival label
    let mut r = base.clone();
    r.task = Some(StudyTask::Binary);
    assert_eq!(codes(&r), [("task".to_owned(), "task_label_mismatch")]);
    // Cox under record-level DP
    let mut r = base.clone();
    r.dp = DpRequest {
        level: "record".into(),
        clip_norm: 1.0,
        noise_multiplier: Some(1.0),
        target_epsilon: None,
        sampling_rate: Some(0.1),
        noise_seed: None,
        min_survivors: None,
        modulus_bits: None,
    };
    assert_eq!(
        codes(&r),
        [("dp.level".to_owned(), "loss_refuses_record_dp")]
    );
    // BatchNorm under record-level DP
    let mut b = r.clone();
    b.task = None;
    b.feature_spec["label"]["source"] = serde_json::json!({"death": {"within": "30d"}});
    b.model = model(serde_json::json!({"architecture": "net",
        "backbone": {"kind": "mlp", "hidden": [4], "norm": {"kind": "batch"}}}));
    assert_eq!(
        codes(&b),
        [("dp.level".to_owned(), "model_refuses_record_dp")]
    );
    // FedLC calibrates by class counts
    let mut r = base.clone();
    r.strategy = serde_json::json!({"name": "fedlc"});
    assert_eq!(
        codes(&r),
        [("strategy.name".to_owned(), "strategy_refuses_task")]
    );
    // a sequence model on a static specification
    let mut r = request();
    r.model = model(serde_json::json!({"architecture": "net",
        "backbone": {"kind": "gru", "hidden": 4}}));
    assert_eq!(
        codes(&r),
        [("model.backbone".to_owned(), "sequence_model_needs_series")]
    );
    // a model whose update does not fit the federation's limit
    let mut r = request();
    r.model = model(serde_json::json!({"architecture": "mlp", "hidden": [64]}));
    let small = FederationLimits {
        max_update_bytes: 4 * 128,
    };
    let errs = parse_study(&r, 1e-5, FLOOR, small, 7).unwrap_err();
    assert_eq!(errs[0].code, "model_too_large", "{errs:?}");
    assert!(
        errs[0].message.contains("193 parameters"),
        "{}",
        errs[0].message
    );
    // SCAFFOLD's control variates double it
    let fits = FederationLimits {
        max_update_bytes: 2048,
    };
    assert!(parse_study(&r, 1e-5, FLOOR, fits, 7).is_ok());
    r.strategy = serde_json::json!({"name": "scaffold"});
    r.dp = DpRequest {
        level: "record".into(),
        clip_norm: 1.0,
        noise_multiplier: Some(1.0),
        target_epsilon: None,
        sampling_rate: Some(0.1),
        noise_seed: None,
        min_survivors: None,
        modulus_bits: None,
    };
    let errs = parse_study(&r, 1e-5, FLOOR, fits, 7).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].code, "model_too_large");
    // a multi-class task on a binary label with more than two classes; bad loss settings
    let mut r = request();
    r.task = Some(StudyTask::Multiclass { classes: 3 });
    assert_eq!(codes(&r), [("task".to_owned(), "task_label_mismatch")]);
    r.task = Some(StudyTask::Multiclass { classes: 2 });
    r.loss = Some(LossKind::CrossEntropy {
        class_weights: Some(vec![1.0, -1.0]),
    });
    assert_eq!(
        codes(&r),
        [("loss.class_weights".to_owned(), "invalid_loss_setting")]
    );
    r.loss = Some(LossKind::Focal {
        gamma: 2.0,
        alpha: None,
    });
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    assert_eq!(s.model, ModelSpec::logistic(1, 2));
    r.loss = Some(LossKind::bce());
    assert_eq!(codes(&r), [("loss".to_owned(), "loss_task_mismatch")]);
}

#[test]
fn multi_class_and_multi_label_labels_take_only_their_own_task() {
    let severity =
        include_str!("../../../../../examples/federation/heart_disease_severity.features.json");
    let mut r = request();
    r.feature_spec = serde_json::from_str(severity).unwrap();
    // without a task: the label's five classes, a five-way softmax
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    assert_eq!(s.task, StudyTask::Multiclass { classes: 5 });
    assert_eq!(s.model, ModelSpec::logistic(13, 5));
    r.task = Some(StudyTask::Multiclass { classes: 5 });
    assert!(parse_study(&r, 1e-5, FLOOR, LIMITS, 7).is_ok());
    for wrong in [
        StudyTask::Multiclass { classes: 3 },
        StudyTask::Multiclass { classes: 2 },
        StudyTask::Binary,
        StudyTask::Multilabel { labels: 5 },
        StudyTask::Survival,
    ] {
        r.task = Some(wrong);
        assert_eq!(
            codes(&r),
            [("task".to_owned(), "task_label_mismatch")],
            "{wrong:?}"
        );
    }
    // a class count out of range is reported as such, not as a mismatch
    r.task = Some(StudyTask::Multiclass { classes: 5000 });
    assert_eq!(
        codes(&r),
        [("task.multiclass.classes".to_owned(), "out_of_range")]
    );

    let mut r = survival_series_request();
    r.feature_spec["label"]["source"] = serde_json::json!({"labels": [
        {"name": "death_7d", "source": {"death": {"within": "7d"}}},
        {"name": "death_30d", "source": {"death": {"within": "30d"}}},
        {"name": "smoker", "category": "health_determinants",
         "source": {"condition": {"codes": [{"system": "http://snomed.info/sct", "code": "77176002"}]}}}]});
    // a label's own category must be declared (and so covered by the permit)
    assert_eq!(
        codes(&r),
        [(
            "feature_spec.label".to_owned(),
            "feature_category_not_declared"
        )]
    );
    r.categories.push("health_determinants".into());
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    assert_eq!(s.task, StudyTask::Multilabel { labels: 3 });
    assert!(s
        .categories
        .iter()
        .any(|c| c.as_str() == "health_determinants"));
    for wrong in [
        StudyTask::Multilabel { labels: 2 },
        StudyTask::Multiclass { classes: 3 },
        StudyTask::Binary,
    ] {
        r.task = Some(wrong);
        assert_eq!(
            codes(&r),
            [("task".to_owned(), "task_label_mismatch")],
            "{wrong:?}"
        );
    }
}

#[test]
fn every_bad_field_is_reported_at_once() {
    let mut r = request();
    r.purpose = "advertising_marketing".into();
    r.model.architecture = "transformer".into();
    r.optimizer.lr = -1.0;
    r.min_sites = 3;
    r.local_epochs = Some(1);
    r.dp.target_epsilon = Some(1.0);
    let codes: Vec<&str> = parse_study(&r, 1e-5, FLOOR, LIMITS, 7)
        .unwrap_err()
        .iter()
        .map(|e| e.code)
        .collect();
    for want in [
        "prohibited_use",
        "unknown_architecture",
        "invalid_number",
        "out_of_range",
        "local_work_required",
        "noise_required",
    ] {
        assert!(codes.contains(&want), "{want} missing from {codes:?}");
    }
}

#[test]
fn record_level_dp_is_accounted_per_local_step_and_ditto_counts_twice() {
    let mut r = request();
    r.dp = DpRequest {
        level: "record".into(),
        clip_norm: 1.0,
        noise_multiplier: Some(1.0),
        target_epsilon: None,
        sampling_rate: Some(0.05),
        noise_seed: None,
        min_survivors: None,
        modulus_bits: None,
    };
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    assert_eq!((s.dp.sampling_rate, s.dp.steps_per_round), (0.05, 10));
    assert!(s.train.record_dp.is_some());
    r.strategy = serde_json::json!({"name": "ditto"});
    assert_eq!(
        parse_study(&r, 1e-5, FLOOR, LIMITS, 7)
            .unwrap()
            .dp
            .steps_per_round,
        20
    );
    r.local_steps = None;
    r.local_epochs = Some(1);
    let err = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap_err();
    assert!(err.iter().any(|e| e.code == "record_dp_needs_steps"));
}

#[test]
fn a_target_epsilon_is_met_exactly_by_the_derived_noise() {
    let mut r = request();
    r.dp.noise_multiplier = None;
    r.dp.target_epsilon = Some(5.0);
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    let eps = s.dp.epsilon_for_rounds(10).unwrap();
    assert!(eps <= 5.0 && eps > 5.0 - 1e-6, "{eps}");
}

#[test]
fn the_budget_assessment_names_the_affordable_rounds() {
    let s = spec(10);
    let one = s.dp.epsilon_for_rounds(1).unwrap();
    let four = s.dp.epsilon_for_rounds(4).unwrap();
    let five = s.dp.epsilon_for_rounds(5).unwrap();
    // a moment after issue, when the permits below are valid
    let now = time::now() + chrono::Duration::seconds(1);
    // a budget between the cost of 4 and of 5 rounds affords exactly 4
    let reasons = assess(
        &s,
        &permit((four + five) / 2.0, BudgetUnit::Record),
        0.0,
        now,
    )
    .unwrap();
    assert!(
        matches!(
            reasons.as_slice(),
            [StudyRefusal::Study(
                StudyReason::PlannedRoundsExceedBudget {
                    affordable_rounds: 4,
                    ..
                }
            )]
        ),
        "{reasons:?}"
    );
    let reasons = assess(&s, &permit(one / 2.0, BudgetUnit::Record), 0.0, now).unwrap();
    assert!(matches!(
        reasons.as_slice(),
        [StudyRefusal::Study(
            StudyReason::BudgetTooSmallForOneRound { .. }
        )]
    ));
    let enough = s.dp.epsilon_for_rounds(10).unwrap() + 0.01;
    assert!(
        assess(&s, &permit(enough, BudgetUnit::DataHolder), 0.0, now)
            .unwrap()
            .is_empty()
    );
    // the same budget with another study's unspent plan reserved on it does not suffice
    let reasons = assess(&s, &permit(enough, BudgetUnit::DataHolder), 1.0, now).unwrap();
    assert!(
        matches!(
            reasons.as_slice(),
            [StudyRefusal::Study(
                StudyReason::PlannedRoundsExceedBudget { .. }
            )]
        ),
        "{reasons:?}"
    );
}

#[test]
fn a_holder_level_budget_needs_client_level_dp_and_the_permit_must_grant_everything() {
    let mut r = request();
    r.dp = DpRequest {
        level: "record".into(),
        clip_norm: 1.0,
        noise_multiplier: Some(5.0),
        target_epsilon: None,
        sampling_rate: Some(0.01),
        noise_seed: None,
        min_survivors: None,
        modulus_bits: None,
    };
    r.data_holders.push("hosp-9".into());
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    let later = time::now() + chrono::Duration::seconds(1);
    let reasons = assess(&s, &permit(100.0, BudgetUnit::DataHolder), 0.0, later).unwrap();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons.contains(&StudyRefusal::Study(
        StudyReason::DpLevelWeakerThanPermitUnit {
            permit_unit: BudgetUnit::DataHolder
        }
    )));
    assert!(
        reasons.contains(&StudyRefusal::Permit(DenyReason::DataHolderNotPermitted {
            data_holder: OrgId::parse("hosp-9").unwrap()
        }))
    );
}

#[test]
fn a_study_without_formal_dp_spends_nothing_and_runs_only_where_the_permit_allows() {
    let mut r = request();
    r.dp = serde_json::from_value(serde_json::json!({"level": "none"})).unwrap();
    r.strategy = serde_json::json!({"name": "qfedavg", "q": 1.0});
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    assert_eq!(s.dp.level, DpLevel::NoFormalDp);
    assert!(s.train.record_dp.is_none(), "no DP-SGD at the holders");
    assert_eq!(s.dp.epsilon_for_rounds(10).unwrap(), 0.0);
    assert!(s.dp.round_mechanism().unwrap().is_none());
    let later = time::now() + chrono::Duration::seconds(1);
    // the default requirement: formal DP at either level
    let mut p = permit(1.0, BudgetUnit::DataHolder);
    let reasons = assess(&s, &p, 0.0, later).unwrap();
    assert_eq!(
        reasons,
        [StudyRefusal::Study(StudyReason::DpLevelNotPermitted {
            level: DpLevel::NoFormalDp,
            dp_requirement: DpRequirement::ClientOrRecord,
            permitted_levels: vec![DpLevel::Client, DpLevel::Record],
        })]
    );
    p.amend(
        crate::domain::permit::Amendment {
            dp_requirement: Some(DpRequirement::NoneAllowed),
            ..Default::default()
        },
        later,
    )
    .unwrap();
    // a holder-level budget is no obstacle: nothing of it is spent, even fully reserved
    assert!(assess(&s, &p, 1.0, later).unwrap().is_empty());
    // the method's lack of DP support still refuses it under formal DP
    r.dp = serde_json::from_value(
        serde_json::json!({"level": "client", "clip_norm": 1.0, "noise_multiplier": 1.0}),
    )
    .unwrap();
    let errors = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap_err();
    assert_eq!(errors[0].code, "strategy_refuses_client_dp");
}

/// Client-level DP under secure aggregation is planned as the distributed discrete
/// Gaussian: the central plan's clip and noise, split among the minimum survivors, and
/// accounted by the distributed mechanism.
#[test]
fn client_level_dp_under_secure_aggregation_is_the_distributed_discrete_gaussian() {
    let r = distributed_request(
        serde_json::json!({"level": "client", "clip_norm": 0.5, "noise_multiplier": 2.0}),
    );
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    let plan = s.dp.distributed.expect("a distributed plan");
    let sa = s.secure_aggregation.unwrap();
    assert_eq!((sa.threshold, sa.neighbours), (2, 3));
    // defaults: the larger of the threshold (2) and min_sites (2), a 32-bit ring
    assert_eq!(plan.params.min_survivors, 2);
    assert_eq!(plan.params.max_clients, 4);
    assert_eq!(plan.params.modulus_bits, DEFAULT_DISTRIBUTED_MODULUS_BITS);
    // the logistic model of one feature: a weight and a bias
    assert_eq!((plan.params.dim, plan.padded_dim), (2, 2));
    assert_eq!(plan.params.clip, 0.5);
    assert!((plan.params.central_stddev - 1.0).abs() < 1e-12);
    // each of two holders adds half the variance, rounded up in ring units
    assert!(plan.central_variance(2) >= 1.0 - 1e-12);
    assert!(plan.central_variance(1) < 0.5 + 1e-9);
    assert_eq!(
        s.dp.round_mechanism().unwrap(),
        Some(crate::domain::study::RoundMechanism::DistributedDiscreteGaussian(plan))
    );
    let direct = ddg_epsilon(&plan, 10, 1e-5).unwrap().epsilon;
    assert_eq!(s.dp.epsilon_for_rounds(10).unwrap(), direct);
    // the seed fixes the public rotation
    let again = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    assert_eq!(again.dp.distributed, Some(plan));
    let other = parse_study(&r, 1e-5, FLOOR, LIMITS, 8).unwrap();
    assert_ne!(
        other.dp.distributed.unwrap().params.rotation_seed,
        plan.params.rotation_seed
    );

    // a target epsilon is met by the distributed mechanism's own accounting
    let r = distributed_request(serde_json::json!({"level": "client", "clip_norm": 1.0,
        "target_epsilon": 4.0, "min_survivors": 3, "modulus_bits": 20}));
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    let plan = s.dp.distributed.unwrap();
    assert_eq!(
        (plan.params.min_survivors, plan.params.modulus_bits),
        (3, 20)
    );
    let eps = ddg_epsilon(&plan, 10, 1e-5).unwrap().epsilon;
    assert!(eps <= 4.0 && eps > 3.99, "{eps}");
    assert_eq!(s.dp.epsilon_for_rounds(10).unwrap(), eps);
    assert!((plan.params.central_stddev - s.dp.noise_multiplier).abs() < 1e-12);
}

#[test]
fn impossible_distributed_plans_are_refused_by_field() {
    let dp = |extra: serde_json::Value| {
        let mut v = serde_json::json!({"level": "client", "clip_norm": 1.0,
                                       "noise_multiplier": 1.0});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        distributed_request(v)
    };
    let one = |r: &StudyRequest| -> (String, &'static str) {
        let c = codes(r);
        assert_eq!(c.len(), 1, "{c:?}");
        c[0].clone()
    };
    let field = |f: &str, c: &'static str| (f.to_owned(), c);
    assert_eq!(
        one(&dp(serde_json::json!({"min_survivors": 5}))),
        field("dp.min_survivors", "min_survivors_above_holders")
    );
    // the default threshold for four holders is 2
    assert_eq!(
        one(&dp(serde_json::json!({"min_survivors": 1}))),
        field("dp.min_survivors", "min_survivors_below_threshold")
    );
    assert_eq!(
        one(&dp(serde_json::json!({"modulus_bits": 64}))),
        field("dp.modulus_bits", "out_of_range")
    );
    // four holders at about 6.6 standard deviations need more than 2^3
    let c = codes(&dp(serde_json::json!({"modulus_bits": 3})));
    assert_eq!(c, [field("dp.modulus_bits", "modulus_too_small")]);
    assert!(parse_study(
        &dp(serde_json::json!({"modulus_bits": 4})),
        1e-5,
        FLOOR,
        LIMITS,
        7
    )
    .is_ok());
    assert_eq!(
        one(&dp(serde_json::json!({"noise_seed": 3}))),
        field("dp.noise_seed", "not_applicable")
    );
    // the parameters of distributed DP mean nothing elsewhere
    let mut central = dp(serde_json::json!({"min_survivors": 2}));
    central.secure_aggregation = None;
    assert_eq!(one(&central), field("dp.min_survivors", "not_applicable"));
    let mut none = request();
    none.dp =
        serde_json::from_value(serde_json::json!({"level": "none", "modulus_bits": 20})).unwrap();
    assert_eq!(one(&none), field("dp.modulus_bits", "not_applicable"));
    // record-level DP-SGD is not combined with secure aggregation
    let record = distributed_request(serde_json::json!({"level": "record", "clip_norm": 1.0,
        "noise_multiplier": 1.0, "sampling_rate": 0.1}));
    assert!(codes(&record).contains(&field(
        "dp.level",
        "dp_level_incompatible_with_secure_aggregation"
    )));
}

#[test]
fn the_decision_threshold_goes_with_the_tasks_that_have_one() {
    let parse = |r: &StudyRequest| parse_study(r, 1e-5, FLOOR, LIMITS, 7);
    let mut r = request();
    // binary: 0.5 unless asked otherwise
    assert_eq!(
        parse(&r).unwrap().threshold,
        Some(DecisionThreshold::Fixed { value: 0.5 })
    );
    for (given, want) in [
        (
            serde_json::json!({"rule": "fixed", "value": 0.3}),
            DecisionThreshold::Fixed { value: 0.3 },
        ),
        (
            serde_json::json!({"rule": "max_f1"}),
            DecisionThreshold::MaxF1 {},
        ),
        (
            serde_json::json!({"rule": "youden_j"}),
            DecisionThreshold::YoudenJ {},
        ),
    ] {
        r.threshold = Some(given);
        assert_eq!(parse(&r).unwrap().threshold, Some(want));
    }
    for (given, field) in [
        (serde_json::json!({"rule": "max_accuracy"}), "threshold"),
        (serde_json::json!({"rule": "fixed"}), "threshold"),
        (
            serde_json::json!({"rule": "max_f1", "value": 0.2}),
            "threshold",
        ),
        (serde_json::json!("max_f1"), "threshold"),
        (
            serde_json::json!({"rule": "fixed", "value": 1.0}),
            "threshold.value",
        ),
        (
            serde_json::json!({"rule": "fixed", "value": 0.0}),
            "threshold.value",
        ),
    ] {
        r.threshold = Some(given.clone());
        assert_eq!(
            codes(&r),
            [(field.to_owned(), "invalid_threshold")],
            "{given}"
        );
    }
    // survival (and multi-class) predictions have no threshold: none stored, none taken
    let mut r = survival_series_request();
    assert_eq!(parse(&r).unwrap().threshold, None);
    r.threshold = Some(serde_json::json!({"rule": "max_f1"}));
    assert_eq!(
        codes(&r),
        [("threshold".to_owned(), "threshold_task_mismatch")]
    );
}

#[test]
fn the_test_fraction_has_a_default_is_checked_and_reaches_the_nodes() {
    let s = spec(1);
    assert_eq!(s.test_fraction, crate::domain::study::DEFAULT_TEST_FRACTION);
    let mut r = request();
    r.test_fraction = Some(0.3);
    let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
    assert_eq!(crate::wire::NodeStudy::from(&s).test_fraction, 0.3);
    for bad in [0.0, 0.6, f64::NAN] {
        r.test_fraction = Some(bad);
        assert_eq!(
            codes(&r),
            [("test_fraction".to_owned(), "out_of_range")],
            "{bad}"
        );
    }
    // a study stored, or a task sent, before the field existed reads the default
    let mut stored = serde_json::to_value(&s).unwrap();
    stored.as_object_mut().unwrap().remove("test_fraction");
    let old: StudySpec = serde_json::from_value(stored).unwrap();
    assert_eq!(
        old.test_fraction,
        crate::domain::study::DEFAULT_TEST_FRACTION
    );
    let mut task = serde_json::to_value(crate::wire::NodeStudy::from(&s)).unwrap();
    task.as_object_mut().unwrap().remove("test_fraction");
    let old: crate::wire::NodeStudy = serde_json::from_value(task).unwrap();
    assert_eq!(
        old.test_fraction,
        crate::domain::study::DEFAULT_TEST_FRACTION
    );
}
