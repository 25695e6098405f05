//! Byzantine-robust aggregation under simulated attacks: one of seven sites sends its update
//! reversed and amplified (or pure noise, or trains on flipped labels). The example-weighted
//! mean follows the attacker; Krum, Multi-Krum, the coordinate-wise median and trimmed mean,
//! Bulyan and FLTrust keep learning. Attacked studies resume bit for bit.
mod common;

use std::sync::{Arc, Mutex};

use fl_engine::data::Dataset;
use fl_engine::dp::NoiseRng;
use fl_engine::model::ModelSpec;
use fl_engine::params::ParameterSet;
use fl_engine::sim::{Attack, CheckpointKind, Simulation, SimulationConfig, SimulationState};
use fl_engine::strategy::{
    Aggregator, AggregatorKind, Bulyan, CoordinateMedian, DpRobust, FedAvgConfig, FedDynConfig,
    FedExpConfig, FedMapConfig, FedModeConfig, FedNovaConfig, FlTrust, Krum, QFedAvgConfig,
    RobustReport, ScaffoldConfig, StrategyConfig, Trim, TrimmedMean, WeightedMean,
};
use fl_engine::train::OptimizerConfig;

const SITES: usize = 7;

fn config(strategy: StrategyConfig, rounds: u64) -> SimulationConfig {
    common::study(
        strategy,
        ModelSpec::logistic(4, 1),
        OptimizerConfig::sgd(0.3),
        rounds,
        10,
    )
}

/// 60 clean rows from the same labelling rule, held by the server.
fn root_data() -> Dataset {
    let site = common::binary_sites(99, 1, 0.0).remove(0);
    site.train.subset(&(0..60).collect::<Vec<_>>())
}

fn fltrust(cfg: &SimulationConfig) -> FlTrust {
    FlTrust::new(
        root_data(),
        cfg.model.clone(),
        cfg.train.clone(),
        cfg.strategy.shared(),
        cfg.seed,
    )
    .unwrap()
}

fn robust_rules(cfg: &SimulationConfig) -> Vec<Box<dyn Aggregator>> {
    vec![
        Box::new(Krum::new(1)),
        Box::new(Krum::multi(1, None).unwrap()),
        Box::new(CoordinateMedian::new()),
        Box::new(TrimmedMean::new(Trim::Count(1)).unwrap()),
        Box::new(Bulyan::new(1)),
        Box::new(fltrust(cfg)),
    ]
}

/// Mean test accuracy over sites of the latest global model, and the first and last
/// weighted validation losses.
fn score(
    cfg: SimulationConfig,
    aggregator: Box<dyn Aggregator>,
    attacks: Vec<(usize, Attack)>,
) -> (f64, f64, f64) {
    let sites = common::binary_sites(3, SITES, 0.0);
    let mut sim = Simulation::with_aggregator(cfg, sites, aggregator)
        .unwrap()
        .with_attacks(attacks)
        .unwrap();
    sim.run().unwrap();
    let first = sim.history()[0].weighted_val_loss;
    let last = sim.history().last().unwrap().weighted_val_loss;
    let test = sim.test(CheckpointKind::Latest).unwrap();
    let acc = test.iter().map(|m| m.accuracy).sum::<f64>() / test.len() as f64;
    (acc, first, last)
}

/// Untrained global model's mean test accuracy (the floor a learning method must clear).
fn untrained(cfg: &SimulationConfig) -> f64 {
    let mut sim = Simulation::new(cfg.clone(), common::binary_sites(3, SITES, 0.0)).unwrap();
    let test = sim.test(CheckpointKind::Latest).unwrap();
    test.iter().map(|m| m.accuracy).sum::<f64>() / test.len() as f64
}

#[test]
fn sign_flip_collapses_the_weighted_mean_but_not_the_robust_rules() {
    let cfg = config(StrategyConfig::FedAvg(FedAvgConfig {}), 6);
    let attack = || vec![(2, Attack::SignFlip { scale: 10.0 })];
    let (clean, _, _) = score(cfg.clone(), Box::new(WeightedMean), vec![]);
    let (attacked, first, last) = score(cfg.clone(), Box::new(WeightedMean), attack());
    assert!(clean > 0.85, "honest FedAvg {clean}");
    // one site of seven at -10 u outweighs six at +u: the mean climbs the loss
    assert!(attacked < 0.6, "FedAvg under attack {attacked}");
    assert!(last > first, "FedAvg under attack: {first} -> {last}");
    for agg in robust_rules(&cfg) {
        let name = agg.name();
        let (acc, first, last) = score(cfg.clone(), agg, attack());
        assert!(acc > 0.85, "{name} under attack: accuracy {acc}");
        assert!(
            last < first,
            "{name} under attack: val loss {first} -> {last}"
        );
    }
}

#[test]
fn pure_noise_site_is_harmless_to_the_median_and_krum() {
    let cfg = config(StrategyConfig::FedAvg(FedAvgConfig {}), 6);
    let attack = || {
        vec![(
            5,
            Attack::GaussianNoise {
                std: 20.0,
                replace: true,
            },
        )]
    };
    let (mean_acc, _, _) = score(cfg.clone(), Box::new(WeightedMean), attack());
    assert!(mean_acc < 0.8, "FedAvg with a noise site {mean_acc}");
    for agg in [
        Box::new(CoordinateMedian::new()) as Box<dyn Aggregator>,
        Box::new(Krum::new(1)),
        Box::new(fltrust(&cfg)),
    ] {
        let name = agg.name();
        let (acc, _, _) = score(cfg.clone(), agg, attack());
        assert!(acc > 0.85, "{name} with a noise site: {acc}");
    }
}

/// Delegates to Krum and keeps every round's report.
struct Spy(Krum, Arc<Mutex<Vec<RobustReport>>>);

impl Aggregator for Spy {
    fn name(&self) -> &'static str {
        "spy"
    }

    fn kind(&self) -> AggregatorKind {
        AggregatorKind::Robust
    }

    fn aggregate(&mut self, updates: &[&[f32]], weights: &[f64]) -> fl_engine::Result<Vec<f32>> {
        let out = self.0.aggregate(updates, weights)?;
        self.1
            .lock()
            .unwrap()
            .push(self.0.last_report().unwrap().clone());
        Ok(out)
    }
}

#[test]
fn label_flipping_sites_are_left_out_by_krum_and_trimmed_by_the_median() {
    let cfg = config(StrategyConfig::FedAvg(FedAvgConfig {}), 6);
    let attack = || {
        vec![
            (0, Attack::LabelFlip { classes: 2 }),
            (4, Attack::LabelFlip { classes: 2 }),
        ]
    };
    let reports = Arc::new(Mutex::new(vec![]));
    let spy = Spy(Krum::multi(2, None).unwrap(), reports.clone());
    let (acc, _, _) = score(cfg.clone(), Box::new(spy), attack());
    assert!(acc > 0.85, "Multi-Krum with two label flippers: {acc}");
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 6);
    for r in reports.iter() {
        // m = n - f = 5 of 7: exactly the honest sites
        assert_eq!(r.selected, vec![1, 2, 3, 5, 6], "{r:?}");
    }
    let (acc, _, _) = score(cfg.clone(), Box::new(CoordinateMedian::new()), attack());
    assert!(acc > 0.85, "median with two label flippers: {acc}");
}

#[test]
fn scaffold_model_step_goes_through_the_robust_rule() {
    let cfg = config(StrategyConfig::Scaffold(ScaffoldConfig::default()), 6);
    let attack = || vec![(1, Attack::SignFlip { scale: 10.0 })];
    let (mean_acc, _, _) = score(cfg.clone(), Box::new(WeightedMean), attack());
    let (median_acc, _, _) = score(cfg.clone(), Box::new(CoordinateMedian::new()), attack());
    assert!(
        mean_acc < 0.6,
        "SCAFFOLD with the mean under attack {mean_acc}"
    );
    assert!(
        median_acc > 0.85,
        "SCAFFOLD with the median under attack {median_acc}"
    );
}

#[test]
fn dp_trimmed_mean_learns_under_attack() {
    let cfg = config(StrategyConfig::FedAvg(FedAvgConfig {}), 6);
    let floor = untrained(&cfg);
    // C = 1, sigma = 0.5, b = 1 of 7: S = 2/5, noise std 0.2 per coordinate per round
    let dp = DpRobust::new(
        Box::new(TrimmedMean::new(Trim::Count(1)).unwrap()),
        1.0,
        0.5,
        NoiseRng::from_seed_for_reproducible_runs([4; 32]),
    )
    .unwrap();
    assert!((dp.sensitivity(SITES).unwrap() - 0.4).abs() < 1e-12);
    let (acc, first, last) = score(
        cfg,
        Box::new(dp),
        vec![(6, Attack::SignFlip { scale: 10.0 })],
    );
    assert!(
        acc > 0.75 && acc > floor + 0.2,
        "DP trimmed mean {acc} (untrained {floor})"
    );
    assert!(last < first);
}

#[test]
fn attacked_robust_study_resumes_bit_identically() {
    let cfg = config(StrategyConfig::FedAvg(FedAvgConfig {}), 4);
    let attacks = || {
        vec![
            (
                1,
                Attack::GaussianNoise {
                    std: 0.5,
                    replace: false,
                },
            ),
            (3, Attack::LabelFlip { classes: 2 }),
            (5, Attack::SignFlip { scale: 3.0 }),
        ]
    };
    let data = common::binary_sites(8, SITES, 0.3);
    let build = |agg: FlTrust| {
        Simulation::with_aggregator(cfg.clone(), data.clone(), Box::new(agg))
            .unwrap()
            .with_attacks(attacks())
            .unwrap()
    };
    let mut straight = build(fltrust(&cfg));
    straight.run().unwrap();

    let mut first = build(fltrust(&cfg));
    first.run_round().unwrap();
    first.run_round().unwrap();
    let json = serde_json::to_string(&first.snapshot().unwrap()).unwrap();
    drop(first);
    let state: SimulationState = serde_json::from_str(&json).unwrap();
    let mut resumed = Simulation::restore_with_aggregator(
        cfg.clone(),
        data.clone(),
        Box::new(fltrust(&cfg)),
        state,
    )
    .unwrap()
    .with_attacks(attacks())
    .unwrap();
    assert_eq!(resumed.round(), 2);
    resumed.run().unwrap();

    let (a, b) = (straight.snapshot().unwrap(), resumed.snapshot().unwrap());
    let bits = |p: &ParameterSet| p.to_flat().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&a.global), bits(&b.global));
    assert_eq!(a, b);
    assert_eq!(
        straight.test(CheckpointKind::Latest).unwrap(),
        resumed.test(CheckpointKind::Latest).unwrap()
    );
}

#[test]
fn attack_configuration_is_checked() {
    let cfg = config(StrategyConfig::FedAvg(FedAvgConfig {}), 1);
    let sim = || Simulation::new(cfg.clone(), common::binary_sites(3, SITES, 0.0)).unwrap();
    assert!(sim()
        .with_attacks(vec![(SITES, Attack::Scale { factor: 2.0 })])
        .is_err());
    assert!(sim()
        .with_attacks(vec![
            (1, Attack::Scale { factor: 2.0 }),
            (1, Attack::SignFlip { scale: 1.0 })
        ])
        .is_err());
    assert!(sim()
        .with_attacks(vec![(1, Attack::LabelFlip { classes: 1 })])
        .is_err());
    let once = sim()
        .with_attacks(vec![(1, Attack::Scale { factor: 2.0 })])
        .unwrap();
    assert_eq!(once.attacks().len(), 1);
    assert!(once
        .with_attacks(vec![(2, Attack::Scale { factor: 2.0 })])
        .is_err());
    // Krum with f = 3 needs 9 updates; a 7-site study is refused at aggregation
    let mut krum = Simulation::with_aggregator(
        cfg.clone(),
        common::binary_sites(3, SITES, 0.0),
        Box::new(Krum::new(3)),
    )
    .unwrap();
    assert!(matches!(
        krum.run_round(),
        Err(fl_engine::EngineError::TooFewUpdates {
            needed: 9,
            found: 7,
            ..
        })
    ));
}

/// Every server averages through the aggregator after giving it the round's global model, so
/// FLTrust, which trains its root update from that model, runs under each method whose server
/// step is its own (a server that skipped `begin_round` fails FLTrust's first aggregation).
#[test]
fn fltrust_gets_the_round_s_global_model_from_every_server() {
    for strategy in [
        StrategyConfig::FedDyn(FedDynConfig::default()),
        StrategyConfig::FedNova(FedNovaConfig::default()),
        StrategyConfig::FedMode(FedModeConfig::default()),
        StrategyConfig::QFedAvg(QFedAvgConfig::default()),
        StrategyConfig::FedExp(FedExpConfig::default()),
        StrategyConfig::FedMap(FedMapConfig::default()),
    ] {
        let name = strategy.name();
        let cfg = config(strategy, 2);
        let mut sim = Simulation::with_aggregator(
            cfg.clone(),
            common::binary_sites(3, SITES, 0.0),
            Box::new(fltrust(&cfg)),
        )
        .unwrap();
        let before = sim.global().clone();
        if let Err(e) = sim.run() {
            panic!("{name} under FLTrust: {e}");
        }
        assert_eq!(sim.round(), 2, "{name}");
        assert_ne!(
            *sim.global(),
            before,
            "{name}: FLTrust never moved the model"
        );
    }
}
