//! Losses and metrics of the four tasks against hand computations and against named reference
//! implementations. The reference values were printed once by `tests/reference/task_metrics.py`
//! (scikit-learn 1.9.1, scikit-survival 0.28.0, lifelines 0.30.3, numpy 2.4.6; its output is
//! kept beside it as `task_metrics.out`) and are hard-coded here; the inputs below are the
//! script's inputs.
use candle_core::{Device, Tensor};
use fl_engine::data::{encode_survival, Dataset};
use fl_engine::metrics::{
    choose_threshold, concordance_index, cox_partial_nll, expected_calibration_error,
    integrated_brier_score, BinaryMetrics, BreslowBaseline, CensoringKm, MetricSummary,
    SurvivalData, ThresholdRule,
};
use fl_engine::train::{
    choose_threshold_on, evaluate_with, Budget, EvalOptions, LossKind, OptimizerConfig, TrainConfig,
};
use fl_engine::RecordDp;

fn close(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol, "{a} vs {b}");
}

fn t(v: &[f32], cols: usize) -> Tensor {
    Tensor::from_slice(v, (v.len() / cols, cols), &Device::Cpu).unwrap()
}

fn value(loss: &LossKind, logits: &Tensor, y: &[u32]) -> f64 {
    loss.compute(logits, y).unwrap().to_scalar::<f32>().unwrap() as f64
}

// ---- binary (task_metrics.py, "binary" block) -------------------------------------------
const Y: [u32; 12] = [0, 0, 1, 1, 0, 1, 1, 0, 1, 0, 0, 1];
const P: [f32; 12] = [
    0.1, 0.4, 0.35, 0.8, 0.65, 0.9, 0.55, 0.2, 0.45, 0.5, 0.05, 0.7,
];

#[test]
fn binary_metrics_match_scikit_learn() {
    let m = BinaryMetrics::compute(&P, &Y, 0.5).unwrap();
    close(m.precision, 0.8, 1e-12); // precision_score
    close(m.recall, 0.6666666666666666, 1e-12); // recall_score
    close(m.f1, 0.7272727272727273, 1e-12); // f1_score
    close(m.brier, 0.1627083327186606, 1e-7); // brier_score_loss (f32 inputs)
    close(m.auroc.unwrap(), 0.8333333333333333, 1e-12); // roc_auc_score
    close(m.auprc.unwrap(), 0.8634920634920633, 1e-12); // average_precision_score
    close(m.balanced_accuracy, 0.75, 1e-12); // balanced_accuracy_score
                                             // 0.5 itself is not above the threshold: predicted positives 0.8 0.65 0.9 0.55 0.7
    close(m.predicted_positive_rate, 5.0 / 12.0, 1e-12);
}

#[test]
fn expected_calibration_error_by_hand() {
    // bins: [0.0, 0.1): p 0.05 (y 0) -> |0 - 0.05|; [0.1, 0.2): 0.1 (0) -> 0.1;
    // [0.2, 0.3): 0.2 (0) -> 0.2; [0.3, 0.4): 0.35 (1) -> 0.65; [0.4, 0.5): 0.4 (0), 0.45 (1)
    // -> |1 - 0.85| = 0.15; [0.5, 0.6): 0.5 (0), 0.55 (1) -> |1 - 1.05| = 0.05;
    // [0.6, 0.7): 0.65 (0) -> 0.65; [0.7, 0.8): 0.7 (1) -> 0.3; [0.8, 0.9): 0.8 (1) -> 0.2;
    // [0.9, 1.0]: 0.9 (1) -> 0.1. Sum / 12.
    // (the f64 values of the probabilities; f32 0.7 and 0.9 would fall just below the edges)
    let probs = [
        0.1, 0.4, 0.35, 0.8, 0.65, 0.9, 0.55, 0.2, 0.45, 0.5, 0.05, 0.7,
    ];
    let hits: Vec<f64> = Y.iter().map(|&y| y as f64).collect();
    let expected = (0.05 + 0.1 + 0.2 + 0.65 + 0.15 + 0.05 + 0.65 + 0.3 + 0.2 + 0.1) / 12.0;
    close(expected_calibration_error(&probs, &hits), expected, 1e-6);
    // perfectly calibrated bins give 0; p = 1 falls in the last bin
    close(
        expected_calibration_error(&[1.0, 1.0], &[1.0, 1.0]),
        0.0,
        1e-12,
    );
}

#[test]
fn threshold_rules_by_hand() {
    // scores 0.9 (1), 0.8 (1), 0.6 (0), 0.4 (1), 0.2 (0); P = 3, N = 2
    let s = [0.9, 0.8, 0.6, 0.4, 0.2];
    let y = [1, 1, 0, 1, 0];
    // cut after 0.8: F1 = 4/5, J = 2/3; after 0.4: F1 = 6/7, J = 1/2; all: F1 = 6/8
    let f1 = choose_threshold(&s, &y, ThresholdRule::MaxF1)
        .unwrap()
        .unwrap();
    close(f1 as f64, 0.3, 1e-6); // midpoint of 0.4 and 0.2
    let j = choose_threshold(&s, &y, ThresholdRule::YoudenJ)
        .unwrap()
        .unwrap();
    close(j as f64, 0.7, 1e-6); // midpoint of 0.8 and 0.6
    let at = BinaryMetrics::compute(&s, &y, j).unwrap();
    assert_eq!((at.recall, at.threshold), (2.0 / 3.0, j));
    assert_eq!(
        choose_threshold(&s, &[1; 5], ThresholdRule::MaxF1).unwrap(),
        None
    );
}

/// A logistic model `sigmoid(w x + b)` per output, one input.
fn logistic(weights: &[f32]) -> fl_engine::Net {
    let k = weights.len();
    let mut p = fl_engine::ParameterSet::new();
    p.insert("out.weight", vec![k, 1], weights.to_vec())
        .unwrap();
    p.insert("out.bias", vec![k], vec![0.0; k]).unwrap();
    fl_engine::Net::with_parameters(&fl_engine::ModelSpec::logistic(1, k), &p).unwrap()
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

#[test]
fn threshold_rules_on_a_model_s_validation_scores() {
    let x = [2.2f32, 1.4, 0.4, -0.4, -1.4];
    // binary: the rule on the model's positive-class probabilities (the rows above)
    let binary = Dataset::new(1, x.to_vec(), vec![1, 1, 0, 1, 0]).unwrap();
    let net = logistic(&[1.0]);
    let scores: Vec<f32> = x.iter().map(|&v| sigmoid(v)).collect();
    for rule in [ThresholdRule::MaxF1, ThresholdRule::YoudenJ] {
        let want = choose_threshold(&scores, binary.labels(), rule).unwrap();
        assert!(want.is_some());
        let got = choose_threshold_on(&net, &binary, rule).unwrap();
        close(got.unwrap() as f64, want.unwrap() as f64, 1e-6);
    }
    // multi-label: one threshold over every (row, label) probability pooled
    let targets: Vec<Vec<bool>> = [(1, 0), (1, 1), (0, 0), (1, 1), (0, 1)]
        .iter()
        .map(|&(a, b)| vec![a == 1, b == 1])
        .collect();
    let multi = Dataset::multi_label(1, x.to_vec(), 2, &targets).unwrap();
    let net = logistic(&[1.0, -0.5]);
    let pooled: Vec<f32> = x
        .iter()
        .flat_map(|&v| [sigmoid(v), sigmoid(-0.5 * v)])
        .collect();
    let bits: Vec<u32> = targets
        .iter()
        .flat_map(|r| r.iter().map(|&b| b as u32))
        .collect();
    let want = choose_threshold(&pooled, &bits, ThresholdRule::MaxF1)
        .unwrap()
        .unwrap();
    let got = choose_threshold_on(&net, &multi, ThresholdRule::MaxF1)
        .unwrap()
        .unwrap();
    close(got as f64, want as f64, 1e-6);
    // the metrics read at it reproduce the cut: every label at the same threshold
    let m = evaluate_with(
        &net,
        &multi,
        &LossKind::MultiLabelBce { pos_weight: None },
        &EvalOptions {
            threshold: got,
            reference: None,
        },
    )
    .unwrap();
    assert_eq!(m.threshold, Some(got));
    let positives = pooled.iter().filter(|&&p| p > got).count() as f64;
    close(m.predicted_positive_rate.unwrap(), positives / 10.0, 1e-12);
    // no threshold: multi-class, survival, one class only, nothing to choose on
    let classes = Dataset::new(1, x.to_vec(), vec![0, 1, 2, 1, 0]).unwrap();
    let rule = ThresholdRule::MaxF1;
    assert_eq!(
        choose_threshold_on(&logistic(&[1.0, 0.0, -1.0]), &classes, rule).unwrap(),
        None
    );
    let survival = Dataset::survival(1, x.to_vec(), &[1.0; 5], &[true; 5]).unwrap();
    assert_eq!(
        choose_threshold_on(&logistic(&[1.0]), &survival, rule).unwrap(),
        None
    );
    let one_class = Dataset::new(1, x.to_vec(), vec![1; 5]).unwrap();
    assert_eq!(
        choose_threshold_on(&logistic(&[1.0]), &one_class, rule).unwrap(),
        None
    );
    let empty = Dataset::new(1, vec![], vec![]).unwrap();
    assert_eq!(
        choose_threshold_on(&logistic(&[1.0]), &empty, rule).unwrap(),
        None
    );
}

#[test]
fn collapse_to_one_class_shows_in_the_positive_rate() {
    let m = BinaryMetrics::compute(&[0.9, 0.8, 0.7, 0.95], &[0, 1, 0, 0], 0.5).unwrap();
    assert_eq!(m.predicted_positive_rate, 1.0);
    assert_eq!(m.balanced_accuracy, 0.5);
}

// ---- multi-class (task_metrics.py, "multi-class" block) ----------------------------------
#[test]
fn multiclass_macro_metrics_match_scikit_learn() {
    let y = [0, 1, 2, 2, 1, 0, 2, 1, 0, 2];
    let p = [
        0.7, 0.2, 0.1, 0.2, 0.5, 0.3, 0.1, 0.3, 0.6, 0.3, 0.4, 0.3, 0.6, 0.3, 0.1, 0.5, 0.25, 0.25,
        0.2, 0.2, 0.6, 0.1, 0.8, 0.1, 0.4, 0.35, 0.25, 0.15, 0.15, 0.7,
    ];
    let m = MetricSummary::from_scores(0.0, &p, &y, 3).unwrap();
    close(m.precision.unwrap(), 0.8055555555555555, 1e-12);
    close(m.recall.unwrap(), 0.8055555555555555, 1e-12);
    close(m.f1.unwrap(), 0.7936507936507936, 1e-12);
    close(m.auroc.unwrap(), 0.9216269841269842, 1e-12); // roc_auc_score(ovr, macro)
    close(m.auprc.unwrap(), 0.8629629629629628, 1e-12); // average_precision_score(macro)
    close(m.balanced_accuracy, 0.8055555555555555, 1e-12);
}

#[test]
fn multi_label_metrics_average_the_labels() {
    // two labels; label 0 perfectly ranked, label 1 inverted
    let codes = [0b01, 0b10, 0b00, 0b11];
    let scores = [0.9, 0.2, 0.1, 0.8, 0.2, 0.6, 0.7, 0.1];
    let m = MetricSummary::multi_label(0.0, &scores, &codes, 2, 0.5).unwrap();
    // label 0: AUROC 1, accuracy 1; label 1 (y 0 1 0 1, p .2 .8 .6 .1): AUROC 0.5, accuracy 0.5
    close(m.auroc.unwrap(), 0.75, 1e-12);
    close(m.accuracy, 0.75, 1e-12);
    close(m.predicted_positive_rate.unwrap(), 0.5, 1e-12);
}

// ---- losses -------------------------------------------------------------------------------
#[test]
fn focal_loss_matches_torchvision_formula() {
    // task_metrics.py "focal" block: torchvision.ops.sigmoid_focal_loss, reduction "mean"
    let z = t(&[-2.0, -0.5, 0.0, 0.3, 1.5, 3.0], 1);
    let y = [0, 1, 1, 0, 1, 0];
    let with_alpha = LossKind::Focal {
        gamma: 2.0,
        alpha: Some(0.25),
    };
    close(value(&with_alpha, &z, &y), 0.4044760193007489, 1e-6);
    let no_alpha = LossKind::Focal {
        gamma: 1.5,
        alpha: None,
    };
    close(value(&no_alpha, &z, &y), 0.6584373365907953, 1e-6);
    // gamma 0 without alpha is plain BCE; stays finite for saturated logits
    let bce = value(&LossKind::bce(), &z, &y);
    let g0 = LossKind::Focal {
        gamma: 0.0,
        alpha: None,
    };
    close(value(&g0, &z, &y), bce, 1e-6);
    let huge = value(&with_alpha, &t(&[500.0, -500.0], 1), &[0, 1]);
    assert!(huge.is_finite() && huge > 100.0);
}

#[test]
fn multiclass_focal_by_hand() {
    // logits [0, 0] label 0: p = 1/2, loss = -(1/2)^2 ln(1/2) = ln 2 / 4; alpha 0.5 halves it
    let z = t(&[0.0, 0.0], 2);
    let f = LossKind::Focal {
        gamma: 2.0,
        alpha: Some(0.5),
    };
    close(value(&f, &z, &[0]), 2f64.ln() / 8.0, 1e-6);
    // gamma 0, no alpha: cross-entropy
    let z = t(&[1.0, -1.0, 0.5, 0.3, 0.0, 2.0], 3);
    let ce = LossKind::CrossEntropy {
        class_weights: None,
    };
    let f0 = LossKind::Focal {
        gamma: 0.0,
        alpha: None,
    };
    close(value(&f0, &z, &[2, 1]), value(&ce, &z, &[2, 1]), 1e-6);
}

#[test]
fn multi_label_bce_by_hand() {
    // one row, logits [0, 0], labels {1}: (ln 2 + ln 2) / 2; pos_weight [1, 3]: (ln 2 + 3 ln 2) / 2
    let z = t(&[0.0, 0.0], 2);
    let plain = LossKind::MultiLabelBce { pos_weight: None };
    close(value(&plain, &z, &[0b10]), 2f64.ln(), 1e-6);
    let weighted = LossKind::MultiLabelBce {
        pos_weight: Some(vec![1.0, 3.0]),
    };
    close(value(&weighted, &z, &[0b10]), 2.0 * 2f64.ln(), 1e-6);
    assert!(plain.compute(&z, &[0b100]).is_err());
}

// ---- survival (task_metrics.py, "survival" block) -----------------------------------------
const TR_TIME: [f32; 12] = [5., 8., 8., 12., 15., 15., 20., 22., 25., 30., 33., 40.];
const TR_EVENT: [bool; 12] = [
    true, true, false, true, true, true, false, true, false, true, false, false,
];
const TR_RISK: [f64; 12] = [
    1.2, 0.8, 0.3, 0.5, 0.9, -0.2, 0.1, 0.0, -0.5, -0.3, -1.0, -0.8,
];
const TE_TIME: [f32; 10] = [4., 9., 12., 12., 18., 21., 26., 30., 35., 38.];
const TE_EVENT: [bool; 10] = [
    true, true, true, false, true, false, true, true, false, false,
];
const TE_RISK: [f64; 10] = [1.0, 0.6, 0.7, 0.2, 0.4, -0.1, 0.3, -0.6, -0.4, -0.9];

#[test]
fn c_index_matches_scikit_survival_and_lifelines() {
    // sksurv concordance_index_censored; lifelines concordance_index(time, -risk, event)
    // gives the same 0.9411764705882353 on the test block
    let c = concordance_index(&TR_RISK, &TR_TIME, &TR_EVENT).unwrap();
    close(c, 0.9148936170212766, 1e-12);
    let c = concordance_index(&TE_RISK, &TE_TIME, &TE_EVENT).unwrap();
    close(c, 0.9411764705882353, 1e-12);
    // by hand: times 1 < 2 both events; higher risk first is concordant, reversed is not
    assert_eq!(
        concordance_index(&[1.0, 0.0], &[1.0, 2.0], &[true, true]),
        Some(1.0)
    );
    assert_eq!(
        concordance_index(&[0.0, 1.0], &[1.0, 2.0], &[true, true]),
        Some(0.0)
    );
    assert_eq!(
        concordance_index(&[0.0, 0.0], &[1.0, 2.0], &[true, false]),
        Some(0.5)
    );
    assert_eq!(
        concordance_index(&[0.0, 1.0], &[1.0, 2.0], &[false, true]),
        None
    );
}

#[test]
fn cox_loss_matches_scikit_survival_breslow_likelihood() {
    // CoxPHOptimizer(ties="breslow").nlog_likelihood * n / events
    let reference = 1.4689255995957642;
    close(
        cox_partial_nll(&TR_RISK, &TR_TIME, &TR_EVENT).unwrap(),
        reference,
        1e-12,
    );
    let codes: Vec<u32> = TR_TIME
        .iter()
        .zip(TR_EVENT)
        .map(|(&t, e)| encode_survival(t, e).unwrap())
        .collect();
    let risk: Vec<f32> = TR_RISK.iter().map(|&r| r as f32).collect();
    close(value(&LossKind::Cox, &t(&risk, 1), &codes), reference, 1e-6);
    // by hand: times 1, 2, 3, all events, equal risks: (ln 3 + ln 2 + ln 1) / 3
    let codes: Vec<u32> = [1.0, 2.0, 3.0]
        .iter()
        .map(|&t| encode_survival(t, true).unwrap())
        .collect();
    close(
        value(&LossKind::Cox, &t(&[0.0; 3], 1), &codes),
        6f64.ln() / 3.0,
        1e-6,
    );
    // Breslow ties: two events at time 1 share the risk set {all three}: 2 ln 3 / 2
    let codes: Vec<u32> = [(1.0, true), (1.0, true), (2.0, false)]
        .iter()
        .map(|&(t, e)| encode_survival(t, e).unwrap())
        .collect();
    close(
        value(&LossKind::Cox, &t(&[0.0; 3], 1), &codes),
        3f64.ln(),
        1e-6,
    );
    // no event: 0, and the gradient exists (zero)
    let none = [encode_survival(1.0, false).unwrap()];
    assert_eq!(value(&LossKind::Cox, &t(&[0.3], 1), &none), 0.0);
}

#[test]
fn cox_gradient_matches_finite_differences() {
    let codes: Vec<u32> = TR_TIME
        .iter()
        .zip(TR_EVENT)
        .map(|(&t, e)| encode_survival(t, e).unwrap())
        .collect();
    let var = candle_core::Var::from_slice(
        &TR_RISK.iter().map(|&r| r as f32).collect::<Vec<_>>(),
        (12, 1),
        &Device::Cpu,
    )
    .unwrap();
    let l = LossKind::Cox.compute(var.as_tensor(), &codes).unwrap();
    let g = fl_engine::model::backward(&l).unwrap();
    let g = g.get(var.as_tensor()).unwrap().flatten_all().unwrap();
    let g = g.to_vec1::<f32>().unwrap();
    for i in 0..12 {
        let h = 1e-5;
        let mut up = TR_RISK;
        up[i] += h;
        let mut down = TR_RISK;
        down[i] -= h;
        let fd = (cox_partial_nll(&up, &TR_TIME, &TR_EVENT).unwrap()
            - cox_partial_nll(&down, &TR_TIME, &TR_EVENT).unwrap())
            / (2.0 * h);
        close(g[i] as f64, fd, 1e-4);
    }
}

#[test]
fn integrated_brier_matches_scikit_survival() {
    // BreslowEstimator on the training risks, integrated_brier_score(train, test, S(grid), grid)
    // with grid = the distinct test event times below the largest test time
    let base = BreslowBaseline::fit(&TR_RISK, &TR_TIME, &TR_EVENT).unwrap();
    let cens = CensoringKm::fit(&TR_TIME, &TR_EVENT);
    let grid = fl_engine::metrics::brier_time_grid(&TE_TIME, &TE_EVENT).unwrap();
    assert_eq!(grid, vec![4., 9., 12., 18., 26., 30.]);
    let ibs = integrated_brier_score(&base, &cens, &TE_RISK, &TE_TIME, &TE_EVENT, &grid).unwrap();
    close(ibs, 0.1223644653629946, 1e-12);
    let m = MetricSummary::survival(
        0.0,
        &SurvivalData {
            risk: &TE_RISK,
            time: &TE_TIME,
            event: &TE_EVENT,
        },
        Some(&SurvivalData {
            risk: &TR_RISK,
            time: &TR_TIME,
            event: &TR_EVENT,
        }),
    )
    .unwrap();
    close(m.integrated_brier.unwrap(), 0.1223644653629946, 1e-12);
    close(m.c_index.unwrap(), 0.9411764705882353, 1e-12);
}

#[test]
fn record_level_dp_is_refused_for_cox() {
    let cfg = TrainConfig {
        optimizer: OptimizerConfig::Sgd {
            lr: 0.1,
            momentum: 0.0,
            weight_decay: 0.0,
        },
        budget: Budget::Steps(5),
        batch_size: 8,
        loss: LossKind::Cox,
        record_dp: Some(RecordDp {
            clip_norm: 1.0,
            noise_multiplier: 1.0,
            sampling_rate: 0.1,
        }),
    };
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("per-example"), "{e}");
    assert!(LossKind::Cox
        .example_loss(&t(&[0.0], 1), encode_survival(1.0, true).unwrap())
        .is_err());
}

#[test]
fn record_level_dp_trains_the_decomposable_losses() {
    use fl_engine::dp::NoiseRng;
    use fl_engine::model::{ModelSpec, Net};
    use fl_engine::train::{train_local, Optimizer};
    use rand::SeedableRng;
    let x = vec![0.5, -1.0, 1.0, 0.2, -0.3, 0.8, -1.0, -0.5];
    let ml = Dataset::multi_label(
        2,
        x.clone(),
        2,
        &[
            vec![true, false],
            vec![true, true],
            vec![false, true],
            vec![false, false],
        ],
    )
    .unwrap();
    let binary = Dataset::new(2, x, vec![1, 1, 0, 0]).unwrap();
    let focal = LossKind::Focal {
        gamma: 2.0,
        alpha: Some(0.25),
    };
    let ml_loss = LossKind::MultiLabelBce {
        pos_weight: Some(vec![2.0, 1.0]),
    };
    for (data, loss, outputs) in [(&ml, ml_loss, 2), (&binary, focal, 1)] {
        let cfg = TrainConfig {
            optimizer: OptimizerConfig::sgd(0.1),
            budget: Budget::Steps(3),
            batch_size: 2,
            loss,
            record_dp: Some(RecordDp {
                clip_norm: 1.0,
                noise_multiplier: 1.0,
                sampling_rate: 0.5,
            }),
        };
        let net = Net::new(&ModelSpec::logistic(2, outputs), 0).unwrap();
        let mut opt = Optimizer::new(cfg.optimizer.clone()).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let mut noise = NoiseRng::from_seed_for_reproducible_runs([7; 32]);
        let r = train_local(&net, &mut opt, data, &cfg, &[], &mut rng, Some(&mut noise)).unwrap();
        assert_eq!(r.steps, 3);
    }
}

#[test]
fn losses_are_checked_against_the_task() {
    use fl_engine::data::Task;
    assert!(LossKind::Cox.check_task(Task::Survival, 1).is_ok());
    assert!(LossKind::Cox.check_task(Task::Classification, 1).is_err());
    assert!(LossKind::bce().check_task(Task::Survival, 1).is_err());
    let ml = LossKind::MultiLabelBce { pos_weight: None };
    assert!(ml.check_task(Task::MultiLabel { labels: 3 }, 3).is_ok());
    assert!(ml.check_task(Task::MultiLabel { labels: 3 }, 2).is_err());
    let d = Dataset::survival(1, vec![0.0], &[1.0], &[true]).unwrap();
    assert_eq!(d.task(), Task::Survival);
}

#[test]
fn serde_names_are_stable() {
    let j = |l: &LossKind| serde_json::to_string(l).unwrap();
    assert_eq!(j(&LossKind::Cox), r#""Cox""#);
    assert_eq!(
        j(&LossKind::Focal {
            gamma: 2.0,
            alpha: Some(0.25)
        }),
        r#"{"Focal":{"gamma":2.0,"alpha":0.25}}"#
    );
    assert_eq!(
        j(&LossKind::MultiLabelBce { pos_weight: None }),
        r#"{"MultiLabelBce":{}}"#
    );
    assert_eq!(
        serde_json::to_string(&fl_engine::data::Task::MultiLabel { labels: 4 }).unwrap(),
        r#"{"multi_label":{"labels":4}}"#
    );
    assert_eq!(
        serde_json::to_string(&ThresholdRule::YoudenJ).unwrap(),
        r#""youden_j""#
    );
}

#[test]
fn uniform_mean_over_sites_by_hand() {
    // site A: 4 rows, AUROC 1; site B: 2 rows, one class only (AUROC undefined)
    let a = MetricSummary::from_scores(1.0, &[0.9, 0.8, 0.2, 0.1], &[1, 1, 0, 0], 1).unwrap();
    let b = MetricSummary::from_scores(4.0, &[0.9, 0.2], &[1, 1], 1).unwrap();
    let m = MetricSummary::uniform_mean(&[a, b]).unwrap();
    assert_eq!(m.n, 6);
    close(m.loss, (4.0 + 8.0) / 6.0, 1e-12); // example-weighted
    close(m.accuracy, (1.0 + 0.5) / 2.0, 1e-12); // unweighted over sites
    close(m.auroc.unwrap(), 1.0, 1e-12); // over the sites where it is defined
    close(m.predicted_positive_rate.unwrap(), (0.5 + 0.5) / 2.0, 1e-12);
    assert!(MetricSummary::uniform_mean(&[]).is_none());
}
