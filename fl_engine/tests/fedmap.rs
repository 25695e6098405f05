//! FedMAP on the shared synthetic federations: it learns, its personalised models (T1) beat
//! FedAvg's global model when sites disagree, and a stopped study resumes bit for bit.
mod common;

use common::{binary_sites, run_and_score, study};
use fl_engine::model::ModelSpec;
use fl_engine::sim::{CheckpointKind, Simulation, SimulationState};
use fl_engine::strategy::{FedAvgConfig, FedMapConfig, FedMapTier, StrategyConfig};
use fl_engine::train::OptimizerConfig;

fn fedmap(tier: FedMapTier) -> StrategyConfig {
    StrategyConfig::FedMap(FedMapConfig {
        tier,
        ..FedMapConfig::default()
    })
}

/// Mean test accuracy over sites of the latest models of `strategy` after 6 rounds x 20 steps.
fn accuracy(strategy: StrategyConfig, seed: u64) -> (f64, f64, f64) {
    let cfg = study(
        strategy,
        ModelSpec::logistic(4, 1),
        OptimizerConfig::adam(0.05),
        6,
        20,
    );
    run_and_score(cfg, binary_sites(seed, 4, 1.0), CheckpointKind::Latest)
}

#[test]
fn personalised_models_learn_and_beat_the_fedavg_global_model_under_skew() {
    // Sites disagree (skew 1.0). Over seeds 1-8 of this setting T1 beat FedAvg's global model
    // on 7 and trailed by 0.002 on one; the bars below hold on the mean over four seeds
    // (observed: T1 0.848, T2 0.848, FedAvg 0.812) and guard each seed against a loss.
    let seeds = [1, 2, 3, 4];
    let (mut t1, mut t2, mut t3, mut fedavg) = (0.0, 0.0, 0.0, 0.0);
    for seed in seeds {
        let (p, first, last) = accuracy(fedmap(FedMapTier::Personalised), seed);
        assert!(
            last < first,
            "seed {seed}: validation loss {first} -> {last}"
        );
        let (f, _, _) = accuracy(StrategyConfig::FedAvg(FedAvgConfig {}), seed);
        assert!(p >= f - 0.01, "seed {seed}: T1 {p} vs FedAvg {f}");
        let (tuned, _, _) = accuracy(fedmap(FedMapTier::FineTuned), seed);
        let (global, _, _) = accuracy(fedmap(FedMapTier::Global), seed);
        eprintln!("seed {seed}: T1 {p:.3} T2 {tuned:.3} T3 {global:.3} FedAvg {f:.3}");
        t1 += p / seeds.len() as f64;
        t2 += tuned / seeds.len() as f64;
        t3 += global / seeds.len() as f64;
        fedavg += f / seeds.len() as f64;
    }
    // labels are roughly balanced: chance is about 0.5
    assert!(t3 > 0.75, "FedMAP global model (T3) accuracy {t3}");
    assert!(t1 > 0.82, "T1 accuracy {t1}");
    assert!(t1 >= fedavg + 0.02, "T1 {t1} vs FedAvg {fedavg}");
    assert!(t2 >= fedavg + 0.02, "T2 {t2} vs FedAvg {fedavg}");
}

#[test]
fn fedmap_resumes_bit_identically() {
    // T2 exercises every piece of state; a cap of 2 puts the 4-value weight tensor on the
    // bucketed summary input and keeps the bias on the exact one
    let strategy = StrategyConfig::FedMap(FedMapConfig {
        tier: FedMapTier::FineTuned,
        exact_cap: 2,
        buckets: 2,
        ..FedMapConfig::default()
    });
    let cfg = study(
        strategy,
        ModelSpec::logistic(4, 1),
        OptimizerConfig::adam(0.05),
        4,
        5,
    );
    let data = binary_sites(2, 3, 1.0);

    let mut straight = Simulation::new(cfg.clone(), data.clone()).unwrap();
    straight.run().unwrap();

    let mut first = Simulation::new(cfg.clone(), data.clone()).unwrap();
    for _ in 0..2 {
        first.run_round().unwrap();
    }
    let json = serde_json::to_string(&first.snapshot().unwrap()).unwrap();
    drop(first);
    let state: SimulationState = serde_json::from_str(&json).unwrap();
    let mut resumed = Simulation::restore(cfg, data, state).unwrap();
    assert_eq!(resumed.round(), 2);
    resumed.run().unwrap();

    let (a, b) = (straight.snapshot().unwrap(), resumed.snapshot().unwrap());
    let bits = |s: &SimulationState| {
        s.global
            .to_flat()
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&a), bits(&b));
    assert_eq!(a, b);
    for kind in [
        CheckpointKind::Latest,
        CheckpointKind::BestGlobal,
        CheckpointKind::BestLocal,
    ] {
        assert_eq!(straight.test(kind).unwrap(), resumed.test(kind).unwrap());
    }
}
