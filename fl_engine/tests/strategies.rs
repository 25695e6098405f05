//! End-to-end behaviour of the strategies on small federations.
mod common;

use std::sync::{Arc, Mutex};

use fl_engine::model::{MlpConfig, ModelSpec, Net};
use fl_engine::repro::{self, Method, Protocol};
use fl_engine::sim::{CheckpointKind, Simulation, SimulationConfig};
use fl_engine::strategy::{
    Aggregator, AggregatorKind, FedAvgConfig, FedProxConfig, StrategyConfig,
};
use fl_engine::train::{Budget, LossKind, OptimizerConfig, TrainConfig};
use fl_engine::{load_safetensors, save_safetensors, EngineError, Selector};

fn small() -> Protocol {
    Protocol {
        rounds: 3,
        local_steps: 8,
        ..Protocol::default()
    }
}

fn eval_params(sim: &mut Simulation, k: usize) -> fl_engine::ParameterSet {
    sim.checkpoint_net(CheckpointKind::Latest, k)
        .unwrap()
        .parameters()
        .unwrap()
}

#[test]
fn fenda_and_fedper_share_only_the_global_part() {
    for method in [Method::FendaFl, Method::FedPer] {
        let p = small();
        let cfg = repro::config(method, &p, 3, 1e-3);
        let mut sim = Simulation::new(cfg, repro::site_data(3, 0.2).unwrap()).unwrap();
        sim.run().unwrap();
        assert!(
            sim.global().names().all(|n| n.starts_with("global.")),
            "{}",
            method.name()
        );
        let a = eval_params(&mut sim, 0);
        let b = eval_params(&mut sim, 1);
        let global = Selector::prefix("global.");
        assert_eq!(a.select(&global), *sim.global());
        assert_eq!(b.select(&global), *sim.global());
        let private = Selector::Prefixes(vec!["head.".into(), "local.".into()]);
        assert_ne!(
            a.select(&private),
            b.select(&private),
            "{}: private parts must differ",
            method.name()
        );
    }
}

#[test]
fn ditto_personal_models_differ_from_the_global_one() {
    let p = small();
    let mut sim = Simulation::new(
        repro::config(Method::Ditto, &p, 5, 0.1),
        repro::site_data(5, 0.2).unwrap(),
    )
    .unwrap();
    sim.run().unwrap();
    let personal = eval_params(&mut sim, 0);
    assert_eq!(
        personal.names().collect::<Vec<_>>(),
        sim.global().names().collect::<Vec<_>>()
    );
    assert_ne!(personal, *sim.global());
}

#[test]
fn fedprox_with_zero_mu_is_exactly_fedavg() {
    let p = small();
    let avg = repro::config(Method::FedAvg, &p, 9, 0.05);
    let mut prox = avg.clone();
    prox.strategy = StrategyConfig::FedProx(FedProxConfig { mu: 0.0 });
    let data = repro::site_data(9, 0.2).unwrap();
    let mut a = Simulation::new(avg, data.clone()).unwrap();
    let mut b = Simulation::new(prox, data).unwrap();
    a.run().unwrap();
    b.run().unwrap();
    assert_eq!(a.global(), b.global());
    let mut with_mu = repro::config(Method::FedProx, &p, 9, 0.05);
    with_mu.strategy = StrategyConfig::FedProx(FedProxConfig { mu: 1.0 });
    let mut c = Simulation::new(with_mu, repro::site_data(9, 0.2).unwrap()).unwrap();
    c.run().unwrap();
    assert_ne!(a.global(), c.global());
}

#[test]
fn scaffold_refuses_adaptive_local_optimisers() {
    let p = small();
    let mut cfg = repro::config(Method::Scaffold, &p, 1, 0.1);
    cfg.train.optimizer = OptimizerConfig::adamw(0.1);
    let mut sim = Simulation::new(cfg, repro::site_data(1, 0.2).unwrap()).unwrap();
    assert!(matches!(
        sim.run_round(),
        Err(EngineError::InvalidConfig(_))
    ));
}

#[test]
fn strategy_rejects_a_model_without_the_parts_it_addresses() {
    let p = small();
    let mut cfg = repro::config(Method::FendaFl, &p, 1, 1e-3);
    cfg.model = ModelSpec::logistic(13, 1);
    assert!(matches!(
        Simulation::new(cfg, repro::site_data(1, 0.2).unwrap()),
        Err(EngineError::InvalidConfig(_))
    ));
}

/// Records what it is given and returns a zero update: the hook where a DP aggregator goes.
struct Recording(Arc<Mutex<Vec<(usize, usize)>>>);

impl Aggregator for Recording {
    fn name(&self) -> &'static str {
        "recording"
    }

    fn kind(&self) -> AggregatorKind {
        AggregatorKind::Mean
    }

    fn aggregate(&mut self, updates: &[&[f32]], weights: &[f64]) -> fl_engine::Result<Vec<f32>> {
        self.0.lock().unwrap().push((updates.len(), weights.len()));
        Ok(vec![0.0; updates[0].len()])
    }
}

#[test]
fn the_aggregation_step_is_swappable() {
    let p = small();
    let calls = Arc::new(Mutex::new(vec![]));
    let cfg = repro::config(Method::FedAvg, &p, 2, 0.1);
    let mut sim = Simulation::with_aggregator(
        cfg,
        repro::site_data(2, 0.2).unwrap(),
        Box::new(Recording(calls.clone())),
    )
    .unwrap();
    let before = sim.global().clone();
    sim.run().unwrap();
    assert_eq!(*calls.lock().unwrap(), vec![(4, 4); 3]);
    assert_eq!(
        *sim.global(),
        before,
        "a zero update must leave the global model unchanged"
    );
}

#[test]
fn a_diverging_site_is_an_error_not_a_corrupted_model() {
    let p = small();
    let mut cfg = repro::config(Method::FedAvg, &p, 4, 0.1);
    cfg.train.optimizer = OptimizerConfig::sgd(1e38);
    let mut sim = Simulation::new(cfg, repro::site_data(4, 0.2).unwrap()).unwrap();
    let before = sim.global().clone();
    let err = sim.run_round().unwrap_err();
    assert!(matches!(err, EngineError::NonFinite(_)), "{err:?}");
    assert_eq!(*sim.global(), before);
    assert_eq!(sim.round(), 0);
}

#[test]
fn fedavg_learns_a_multiclass_mlp_under_label_skew() {
    let model = ModelSpec::Mlp(MlpConfig {
        inputs: 4,
        hidden: vec![8],
        outputs: 3,
        dropout: 0.1,
    });
    let cfg = SimulationConfig {
        study: "blobs".into(),
        model,
        strategy: StrategyConfig::FedAvg(FedAvgConfig {}),
        train: TrainConfig {
            optimizer: OptimizerConfig::adam(0.05),
            budget: Budget::Epochs(1),
            batch_size: 16,
            loss: LossKind::CrossEntropy {
                class_weights: Some(vec![1.0, 1.0, 2.0]),
            },
            record_dp: None,
        },
        rounds: 5,
        seed: 0,
        reset_optimizer_each_round: true,
    };
    let mut sim = Simulation::new(cfg, common::blobs(7)).unwrap();
    sim.run().unwrap();
    let first = sim.history()[0].weighted_val_loss;
    let last = sim.history().last().unwrap().weighted_val_loss;
    assert!(
        last < first,
        "validation loss should fall: {first} -> {last}"
    );
    let test = sim.test(CheckpointKind::BestGlobal).unwrap();
    let mean_bal = test.iter().map(|m| m.balanced_accuracy).sum::<f64>() / test.len() as f64;
    assert!(mean_bal > 0.95, "balanced accuracy {mean_bal}");
}

#[test]
fn a_trained_model_round_trips_through_safetensors() {
    let p = small();
    let mut sim = Simulation::new(
        repro::config(Method::FendaFl, &p, 1, 1e-3),
        repro::site_data(1, 0.2).unwrap(),
    )
    .unwrap();
    sim.run_round().unwrap();
    let params = eval_params(&mut sim, 2);
    let (bytes, digest) = save_safetensors(&params, "study", 1, Some("switzerland")).unwrap();
    let (back, meta) = load_safetensors(&bytes).unwrap();
    assert_eq!(meta.digest, digest);
    let net = Net::with_parameters(&sim.config().model, &back).unwrap();
    assert_eq!(net.parameters().unwrap(), params);
}

#[test]
fn dp_fedavg_plugs_into_the_fedavg_server() {
    use fl_engine::dp::{DpFedAvgConfig, NoiseRng};
    use fl_engine::strategy::DpFedAvgAggregator;
    let p = small();
    let cfg = repro::config(Method::FedAvg, &p, 2, 0.1);
    let rng = NoiseRng::from_seed_for_reproducible_runs([1; 32]);
    let dp = DpFedAvgAggregator::new(DpFedAvgConfig::new(0.5, 0.1), rng);
    let mut sim =
        Simulation::with_aggregator(cfg, repro::site_data(2, 0.2).unwrap(), Box::new(dp)).unwrap();
    let before = sim.global().clone();
    sim.run_round().unwrap();
    let step = sim.global().sub(&before).unwrap().l2_norm();
    // the noiseless clipped mean moves at most C = 0.5; sigma C = 0.05 of noise on 14
    // coordinates cannot plausibly add more than another 0.5
    assert!(step > 0.0 && step < 1.0, "global moved by {step}");
}
