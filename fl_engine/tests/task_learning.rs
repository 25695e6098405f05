//! FedAvg learns survival, multi-class and multi-label tasks in the simulator: the round
//! metrics carry the task's metrics, and the test metrics of the released model clearly beat
//! chance.
mod common;

use fl_engine::data::{Dataset, SiteData, Task};
use fl_engine::metrics::{concordance_index, MetricSummary};
use fl_engine::model::{MlpConfig, ModelSpec};
use fl_engine::sim::{CheckpointKind, Simulation, SimulationConfig};
use fl_engine::strategy::{FedAvgConfig, StrategyConfig};
use fl_engine::train::{Budget, LossKind, OptimizerConfig, TrainConfig};
use fl_engine::ThresholdRule;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const BETA: [f32; 4] = [1.5, -1.0, 0.5, 0.0];

/// Proportional-hazards sites: `x` uniform on [-1, 1]^4, event time exponential with rate
/// `0.1 exp(beta . x)` (site-specific baseline scale), independent exponential censoring
/// (about a third of the rows censored).
fn survival_sites(seed: u64) -> Vec<SiteData> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..4)
        .map(|k| {
            let base = 0.1 * (1.0 + 0.5 * k as f32);
            let mut rows = |n: usize| {
                let x: Vec<f32> = (0..4 * n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
                let (mut time, mut event) = (vec![], vec![]);
                for r in x.chunks_exact(4) {
                    let eta: f32 = r.iter().zip(BETA).map(|(a, b)| a * b).sum();
                    let t = -(1.0 - rng.random::<f32>()).ln() / (base * eta.exp());
                    let c = -(1.0 - rng.random::<f32>()).ln() / (0.05 * (1.0 + 0.5 * k as f32));
                    time.push(t.min(c));
                    event.push(t <= c);
                }
                Dataset::survival(4, x, &time, &event).unwrap()
            };
            SiteData {
                name: format!("site-{k}"),
                train: rows(200),
                val: rows(60),
                test: rows(150),
            }
        })
        .collect()
}

/// Three sites whose label k of a row is `x_k > 0` (k = 0, 1, 2), with 5 % noise per label.
fn multi_label_sites(seed: u64) -> Vec<SiteData> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..3)
        .map(|k| {
            let mut rows = |n: usize| {
                let x: Vec<f32> = (0..4 * n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
                let y: Vec<Vec<bool>> = x
                    .chunks_exact(4)
                    .map(|r| {
                        (0..3)
                            .map(|l| (r[l] > 0.0) != (rng.random::<f32>() < 0.05))
                            .collect()
                    })
                    .collect();
                Dataset::multi_label(4, x, 3, &y).unwrap()
            };
            SiteData {
                name: format!("site-{k}"),
                train: rows(200),
                val: rows(50),
                test: rows(100),
            }
        })
        .collect()
}

fn config(model: ModelSpec, loss: LossKind, rounds: u64, lr: f64) -> SimulationConfig {
    SimulationConfig {
        study: "synthetic/tasks".into(),
        model,
        strategy: StrategyConfig::FedAvg(FedAvgConfig {}),
        train: TrainConfig {
            optimizer: OptimizerConfig::Adam {
                lr,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: 0.0,
            },
            budget: Budget::Steps(10),
            batch_size: 32,
            loss,
            record_dp: None,
        },
        rounds,
        seed: 3,
        reset_optimizer_each_round: false,
    }
}

fn mlp(inputs: usize, hidden: Vec<usize>, outputs: usize) -> ModelSpec {
    ModelSpec::Mlp(MlpConfig {
        inputs,
        hidden,
        outputs,
        dropout: 0.0,
    })
}

#[test]
fn fedavg_learns_a_cox_model() {
    let sites = survival_sites(7);
    // the C-index the true risk reaches on the pooled test rows (what the data supports)
    let (mut oracle_risk, mut all_t, mut all_e) = (vec![], vec![], vec![]);
    for s in &sites {
        let (t, e) = s.test.survival_targets().unwrap();
        for i in 0..s.test.len() {
            let eta: f32 = s.test.row(i).iter().zip(BETA).map(|(a, b)| a * b).sum();
            oracle_risk.push(eta as f64);
        }
        all_t.extend(t);
        all_e.extend(e);
    }
    let oracle = concordance_index(&oracle_risk, &all_t, &all_e).unwrap();
    assert!(oracle > 0.72, "synthetic signal too weak: {oracle}");

    let mut sim =
        Simulation::new(config(mlp(4, vec![], 1), LossKind::Cox, 15, 0.05), sites).unwrap();
    sim.run().unwrap();
    let first = &sim.history()[0];
    assert!(first
        .val
        .iter()
        .all(|m| m.task == Task::Survival && m.c_index.is_some()));
    assert!(first.val.iter().all(|m| m.integrated_brier.is_some()));
    let test = sim.test(CheckpointKind::BestGlobal).unwrap();
    let mean = MetricSummary::uniform_mean(&test).unwrap();
    let c = mean.c_index.unwrap();
    eprintln!(
        "survival: test C-index {c:.4} (true risk {oracle:.4}), IBS {:?}",
        mean.integrated_brier
    );
    assert!(c >= 0.7, "uniform mean test C-index {c} (oracle {oracle})");
    assert!(c <= oracle + 0.05);
    let ibs = mean.integrated_brier.unwrap();
    assert!(ibs > 0.0 && ibs < 0.25, "integrated Brier {ibs}");
}

#[test]
fn fedavg_learns_a_multiclass_task() {
    let ce = LossKind::CrossEntropy {
        class_weights: None,
    };
    let mut sim =
        Simulation::new(config(mlp(4, vec![16], 3), ce, 10, 0.01), common::blobs(2)).unwrap();
    sim.run().unwrap();
    let test = sim.test(CheckpointKind::BestGlobal).unwrap();
    let mean = MetricSummary::uniform_mean(&test).unwrap();
    eprintln!(
        "multi-class: accuracy {:.4}, macro F1 {:?}",
        mean.accuracy, mean.f1
    );
    // chance is 1/3
    assert!(mean.accuracy > 0.85, "accuracy {}", mean.accuracy);
    assert!(mean.f1.unwrap() > 0.8, "macro F1 {:?}", mean.f1);
    assert!(mean.brier.is_some() && mean.ece.is_some() && mean.precision.is_some());
}

#[test]
fn fedavg_learns_a_multi_label_task() {
    let sites = multi_label_sites(11);
    let loss = LossKind::MultiLabelBce { pos_weight: None };
    let mut sim = Simulation::new(config(mlp(4, vec![], 3), loss, 10, 0.05), sites).unwrap();
    sim.run().unwrap();
    let test = sim.test(CheckpointKind::BestGlobal).unwrap();
    let mean = MetricSummary::uniform_mean(&test).unwrap();
    eprintln!(
        "multi-label: macro AUROC {:?}, label accuracy {:.4}",
        mean.auroc, mean.accuracy
    );
    assert_eq!(mean.task, Task::MultiLabel { labels: 3 });
    assert!(mean.auroc.unwrap() > 0.9, "macro AUROC {:?}", mean.auroc);
    assert!(mean.accuracy > 0.8, "label accuracy {}", mean.accuracy);
}

#[test]
fn thresholds_chosen_on_validation_are_reported() {
    let sites = common::binary_sites(5, 3, 0.0);
    let cfg = config(mlp(4, vec![], 1), LossKind::bce(), 5, 0.05);
    let mut sim = Simulation::new(cfg, sites).unwrap();
    sim.run().unwrap();
    let fixed = sim.test(CheckpointKind::Latest).unwrap();
    assert!(fixed.iter().all(|m| m.threshold == Some(0.5)));
    let tuned = sim
        .test_with_threshold(CheckpointKind::Latest, Some(ThresholdRule::MaxF1))
        .unwrap();
    for m in &tuned {
        let t = m.threshold.unwrap();
        assert!((0.0..1.0).contains(&t), "threshold {t}");
        assert!(m.predicted_positive_rate.is_some());
    }
}

#[test]
fn a_loss_that_does_not_fit_the_task_is_refused() {
    let sites = survival_sites(1);
    let mut sim = Simulation::new(config(mlp(4, vec![], 1), LossKind::bce(), 1, 0.05), sites);
    let err = match sim.as_mut() {
        Ok(s) => s.run().unwrap_err().to_string(),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("does not fit"), "{err}");
}

const METHODS: [&str; 27] = [
    "fedavg",
    "fedprox",
    "scaffold",
    "fedadam",
    "fedyogi",
    "fedadagrad",
    "fednova",
    "feddyn",
    "fedexp",
    "qfedavg",
    "fedmode",
    "fedsam",
    "fedlesam",
    "fedspeed",
    "fedlc",
    "feddecorr",
    "moon",
    "ditto",
    "fedper",
    "fenda_fl",
    "apfl",
    "perfcl",
    "hpfl",
    "per_fedavg",
    "pfedme",
    "fedmap",
    "silo",
];

/// Run every method for two rounds on `sites` with `loss` and a model of `outputs` outputs
/// (the first model family the method accepts); the uniform mean test metrics per method, or
/// the error.
fn every_method(
    sites: impl Fn() -> Vec<SiteData>,
    loss: LossKind,
    outputs: usize,
) -> Vec<(&'static str, fl_engine::Result<MetricSummary>)> {
    let body = |outputs| MlpConfig {
        inputs: 4,
        hidden: vec![8],
        outputs,
        dropout: 0.0,
    };
    let models = [
        mlp(4, vec![8], outputs),
        ModelSpec::HeadNet {
            body: body(0),
            outputs,
        },
        ModelSpec::Fenda {
            global: body(0),
            local: body(0),
            outputs,
        },
        ModelSpec::Apfl {
            twin: body(outputs),
            alpha: 0.5,
        },
    ];
    METHODS
        .iter()
        .map(|&name| {
            let strategy = StrategyConfig::named(name).unwrap();
            let model = models
                .iter()
                .find(|m| strategy.check_model(m).is_ok())
                .unwrap_or_else(|| panic!("{name}: no model fits"))
                .clone();
            let mut cfg = config(model, loss.clone(), 2, 0.01);
            // SCAFFOLD and FedNova train with plain SGD
            cfg.train.optimizer = OptimizerConfig::sgd(0.05);
            cfg.strategy = strategy;
            let result = Simulation::new(cfg, sites()).and_then(|mut s| {
                s.run()?;
                s.test(CheckpointKind::Latest)
            });
            (
                name,
                result.map(|t| MetricSummary::uniform_mean(&t).unwrap()),
            )
        })
        .collect()
}

/// Every method runs survival (Cox loss) and multi-label studies end to end, except FedLC,
/// which calibrates class logits by class counts and refuses non-class tasks.
#[test]
fn every_method_runs_survival_and_multi_label_studies() {
    for (name, result) in every_method(|| survival_sites(3), LossKind::Cox, 1) {
        match (name, result) {
            ("fedlc", Err(e)) => assert!(e.to_string().contains("classification"), "{e}"),
            (_, Ok(m)) => assert!(m.c_index.unwrap().is_finite(), "{name}"),
            (_, Err(e)) => panic!("survival, {name}: {e}"),
        }
    }
    let loss = LossKind::MultiLabelBce { pos_weight: None };
    for (name, result) in every_method(|| multi_label_sites(5), loss.clone(), 3) {
        match (name, result) {
            ("fedlc", Err(e)) => assert!(e.to_string().contains("classification"), "{e}"),
            (_, Ok(m)) => assert!(m.auroc.unwrap().is_finite(), "{name}"),
            (_, Err(e)) => panic!("multi-label, {name}: {e}"),
        }
    }
}
