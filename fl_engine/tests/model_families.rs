//! The backbone model families (recurrent, fusion, CNN, normalised MLP, FENDA with column
//! selections) train under FedAvg, FedProx and FedPer / FENDA-FL on small synthetic tasks,
//! and a stopped-and-restored study finishes bit-identically.
mod common;

use common::{run_and_score, study};
use fl_engine::data::{Dataset, SiteData};
use fl_engine::model::{
    Backbone, Cell, CnnConfig, ColumnRange, MaskLayout, ModelSpec, Norm, Readout, SeqConfig,
};
use fl_engine::params::{is_site_local_state, Selector};
use fl_engine::sim::{CheckpointKind, Simulation, SimulationState};
use fl_engine::strategy::{
    ApflConfig, FedAvgConfig, FedPerConfig, FedProxConfig, FendaFlConfig, HpflConfig, MoonConfig,
    PerFclConfig, StrategyConfig,
};
use fl_engine::train::{OptimizerConfig, RecordDp};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const T: usize = 8;
const F: usize = 2;
const STATIC: usize = 2;

/// Sites built from a row generator `row(rng) -> (features, label)`.
fn sites(
    seed: u64,
    n_sites: usize,
    mut row: impl FnMut(&mut ChaCha8Rng) -> (Vec<f32>, u32),
) -> Vec<SiteData> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n_sites)
        .map(|k| {
            let mut rows = |n: usize| {
                let (mut x, mut y) = (vec![], vec![]);
                let mut width = 0;
                for _ in 0..n {
                    let (r, l) = row(&mut rng);
                    width = r.len();
                    x.extend(r);
                    y.push(l);
                }
                Dataset::new(width, x, y).unwrap()
            };
            SiteData {
                name: format!("site-{k}"),
                train: rows(160),
                val: rows(40),
                test: rows(80),
            }
        })
        .collect()
}

/// Series task: a spike in feature 0 late in the series (label 1) or early (label 0), small
/// noise elsewhere, 20 % of the other steps missing (values 0, mask 0); rows
/// `[series | per-step mask | static noise]`.
fn series_row(rng: &mut ChaCha8Rng) -> (Vec<f32>, u32) {
    let label = rng.random_bool(0.5);
    let spike = if label {
        rng.random_range(T / 2..T)
    } else {
        rng.random_range(0..T / 2)
    };
    let mut x = vec![0.0f32; T * F];
    let mut mask = vec![1.0f32; T];
    for t in 0..T {
        if t != spike && rng.random_bool(0.2) {
            mask[t] = 0.0;
            continue;
        }
        for f in 0..F {
            x[t * F + f] = rng.random_range(-0.3f32..0.3);
        }
        if t == spike {
            x[t * F] += 2.0;
        }
    }
    let statics: Vec<f32> = (0..STATIC)
        .map(|_| rng.random_range(-1.0f32..1.0))
        .collect();
    ([x, mask, statics].concat(), u32::from(label))
}

/// Image task: 1 x 8 x 8 noise; label 1 when the top-left quadrant is the bright one.
fn image_row(rng: &mut ChaCha8Rng) -> (Vec<f32>, u32) {
    let label = rng.random_bool(0.5);
    let quadrant = if label { 0 } else { rng.random_range(1..4) };
    let mut x: Vec<f32> = (0..64).map(|_| rng.random_range(0.0f32..0.5)).collect();
    for r in 0..4 {
        for c in 0..4 {
            let (r, c) = (r + 4 * (quadrant / 2), c + 4 * (quadrant % 2));
            x[r * 8 + c] += 1.0;
        }
    }
    (x, u32::from(label))
}

fn seq(cell: Cell) -> SeqConfig {
    SeqConfig {
        cell,
        time: T,
        features: F,
        hidden: 8,
        mask: MaskLayout::PerStep,
        readout: Readout::Last,
        layers: 1,
    }
}

/// Series rows carry the static columns; a plain recurrent backbone reads only the series.
fn series_only(body: Backbone) -> Backbone {
    let width = body.row_width();
    Backbone::Columns {
        inputs: width + STATIC,
        columns: vec![ColumnRange {
            start: 0,
            end: width,
        }],
        body: Box::new(body),
    }
}

fn cnn() -> Backbone {
    Backbone::Cnn(CnnConfig {
        channels: 1,
        height: 8,
        width: 8,
        stages: vec![4, 8],
        groups: 2,
    })
}

fn methods(body: Backbone) -> Vec<(StrategyConfig, ModelSpec)> {
    vec![
        (
            StrategyConfig::FedAvg(FedAvgConfig {}),
            ModelSpec::BackboneNet {
                body: body.clone(),
                outputs: 1,
            },
        ),
        (
            StrategyConfig::FedProx(FedProxConfig { mu: 0.01 }),
            ModelSpec::BackboneNet {
                body: body.clone(),
                outputs: 1,
            },
        ),
        (
            StrategyConfig::FedPer(FedPerConfig {}),
            ModelSpec::BackboneHeadNet { body, outputs: 1 },
        ),
    ]
}

fn learns(family: &str, body: Backbone, data: Vec<SiteData>, rounds: u64, min_acc: f64) {
    for (strategy, model) in methods(body) {
        let name = strategy.name();
        let cfg = study(strategy, model, OptimizerConfig::adam(0.02), rounds, 15);
        let (acc, first, last) = run_and_score(cfg, data.clone(), CheckpointKind::Latest);
        assert!(
            last < first,
            "{family}/{name}: validation loss {first} -> {last}"
        );
        assert!(acc > min_acc, "{family}/{name}: test accuracy {acc}");
    }
}

#[test]
fn gru_learns_a_pattern_over_time() {
    learns(
        "gru",
        series_only(Backbone::Recurrent(seq(Cell::Gru))),
        sites(1, 3, series_row),
        6,
        0.8,
    );
}

#[test]
fn lstm_learns_a_pattern_over_time() {
    learns(
        "lstm",
        series_only(Backbone::Recurrent(seq(Cell::Lstm))),
        sites(2, 3, series_row),
        6,
        0.8,
    );
}

#[test]
fn lstm_static_fusion_learns() {
    let body = Backbone::Fusion {
        series: seq(Cell::Lstm),
        static_inputs: STATIC,
        static_hidden: vec![4],
    };
    learns("fusion", body, sites(3, 3, series_row), 6, 0.8);
}

#[test]
fn cnn_learns_the_bright_quadrant() {
    learns("cnn", cnn(), sites(4, 3, image_row), 4, 0.85);
}

/// APFL twins over a GRU and MOON over the CNN's pooled features train (validation loss falls).
#[test]
fn apfl_and_moon_train_over_backbones() {
    let cases = [
        (
            StrategyConfig::Apfl(ApflConfig::default()),
            ModelSpec::BackboneApfl {
                twin: series_only(Backbone::Recurrent(seq(Cell::Gru))),
                outputs: 1,
                alpha: 0.5,
            },
            sites(7, 3, series_row),
        ),
        (
            StrategyConfig::Moon(MoonConfig::default()),
            ModelSpec::BackboneNet {
                body: cnn(),
                outputs: 1,
            },
            sites(8, 3, image_row),
        ),
    ];
    for (strategy, model, data) in cases {
        let name = strategy.name();
        let cfg = study(strategy, model, OptimizerConfig::adam(0.02), 4, 15);
        let (acc, first, last) = run_and_score(cfg, data, CheckpointKind::Latest);
        assert!(last < first, "{name}: validation loss {first} -> {last}");
        assert!(acc > 0.7, "{name}: test accuracy {acc}");
    }
}

/// HPFL's plug-in heads over the CNN, PerFCL over two GRU extractors and FedAvg under
/// record-level DP (DP-SGD) over an LSTM train (validation loss falls).
#[test]
fn hpfl_perfcl_and_dp_sgd_train_over_backbones() {
    let gru = series_only(Backbone::Recurrent(seq(Cell::Gru)));
    let mut dp = study(
        StrategyConfig::FedAvg(FedAvgConfig {}),
        ModelSpec::BackboneNet {
            body: series_only(Backbone::Recurrent(seq(Cell::Lstm))),
            outputs: 1,
        },
        OptimizerConfig::adam(0.02),
        4,
        15,
    );
    dp.train.record_dp = Some(RecordDp {
        clip_norm: 1.0,
        noise_multiplier: 0.5,
        sampling_rate: 0.1,
    });
    let cases = [
        (
            study(
                StrategyConfig::Hpfl(HpflConfig::default()),
                ModelSpec::BackboneHeadNet {
                    body: cnn(),
                    outputs: 1,
                },
                OptimizerConfig::adam(0.02),
                4,
                15,
            ),
            sites(11, 3, image_row),
        ),
        (
            study(
                StrategyConfig::PerFcl(PerFclConfig::default()),
                ModelSpec::BackboneFenda {
                    global: gru.clone(),
                    local: gru,
                    outputs: 1,
                },
                OptimizerConfig::adam(0.02),
                4,
                15,
            ),
            sites(12, 3, series_row),
        ),
        (dp, sites(13, 3, series_row)),
    ];
    for (cfg, data) in cases {
        let name = cfg.strategy.name();
        let (acc, first, last) = run_and_score(cfg, data, CheckpointKind::Latest);
        assert!(last < first, "{name}: validation loss {first} -> {last}");
        assert!(acc > 0.7, "{name}: test accuracy {acc}");
    }
}

#[test]
fn normalised_mlps_learn() {
    // label: x0 - x1 > 0 on 4 uniform features
    let row = |rng: &mut ChaCha8Rng| {
        let x: Vec<f32> = (0..4).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let y = u32::from(x[0] - x[1] > 0.0);
        (x, y)
    };
    for norm in [Norm::Layer, Norm::Group { groups: 2 }] {
        let body = Backbone::Mlp {
            inputs: 4,
            hidden: vec![8],
            dropout: 0.0,
            norm,
        };
        learns("mlp+norm", body, sites(5, 3, row), 4, 0.8);
    }
}

/// FENDA-FL with a global extractor on the 4 shared columns and a local one on the 2
/// site-private columns, whose meaning differs by site.
#[test]
fn fenda_with_site_private_columns_learns_and_shares_only_the_global_extractor() {
    let mut site_sign = 1.0f32;
    let mut data = vec![];
    for k in 0..3u64 {
        site_sign = -site_sign;
        let s = site_sign;
        let row = move |rng: &mut ChaCha8Rng| {
            let x: Vec<f32> = (0..6).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            let y = u32::from(x[0] - x[1] + 1.5 * s * x[4] > 0.0);
            (x, y)
        };
        let mut site = sites(10 + k, 1, row).pop().unwrap();
        site.name = format!("site-{k}");
        data.push(site);
    }
    let cols = |start, end, hidden| Backbone::Columns {
        inputs: 6,
        columns: vec![ColumnRange { start, end }],
        body: Box::new(Backbone::Mlp {
            inputs: end - start,
            hidden: vec![hidden],
            dropout: 0.0,
            norm: Norm::None,
        }),
    };
    let model = ModelSpec::BackboneFenda {
        global: cols(0, 4, 8),
        local: cols(4, 6, 4),
        outputs: 1,
    };
    let strategy = StrategyConfig::FendaFl(FendaFlConfig {});
    let shared = strategy.shared();
    let cfg = study(strategy, model, OptimizerConfig::adam(0.02), 5, 20);
    let mut sim = Simulation::new(cfg, data).unwrap();
    sim.run().unwrap();
    let global = sim.snapshot().unwrap().global;
    assert!(global.names().all(|n| n.starts_with("global.")));
    assert_eq!(shared, Selector::prefix("global."));
    let test = sim.test(CheckpointKind::Latest).unwrap();
    let acc = test.iter().map(|m| m.accuracy).sum::<f64>() / test.len() as f64;
    assert!(acc > 0.85, "FENDA-FL with private columns: {acc}");
}

#[test]
fn lstm_headnet_resumes_bit_identically() {
    let cfg = study(
        StrategyConfig::FedPer(FedPerConfig {}),
        ModelSpec::BackboneHeadNet {
            body: series_only(Backbone::Recurrent(seq(Cell::Lstm))),
            outputs: 1,
        },
        OptimizerConfig::adam(0.02),
        3,
        5,
    );
    let data = sites(6, 2, series_row);
    let mut straight = Simulation::new(cfg.clone(), data.clone()).unwrap();
    straight.run().unwrap();
    let mut first = Simulation::new(cfg.clone(), data.clone()).unwrap();
    first.run_round().unwrap();
    let json = serde_json::to_string(&first.snapshot().unwrap()).unwrap();
    drop(first);
    let state: SimulationState = serde_json::from_str(&json).unwrap();
    let mut resumed = Simulation::restore(cfg, data, state).unwrap();
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
    assert_eq!(
        straight.test(CheckpointKind::Latest).unwrap(),
        resumed.test(CheckpointKind::Latest).unwrap()
    );
}

/// A sequence model on rows of the wrong width (e.g. static features) is refused up front.
#[test]
fn rows_of_the_wrong_width_are_refused() {
    let row = |rng: &mut ChaCha8Rng| {
        let x: Vec<f32> = (0..4).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        (x, u32::from(rng.random_bool(0.5)))
    };
    let cfg = study(
        StrategyConfig::FedAvg(FedAvgConfig {}),
        ModelSpec::BackboneNet {
            body: Backbone::Recurrent(seq(Cell::Gru)),
            outputs: 1,
        },
        OptimizerConfig::adam(0.02),
        1,
        1,
    );
    let err = Simulation::new(cfg, sites(9, 2, row)).err().unwrap();
    assert!(err.to_string().contains("rows of 24"), "{err}");
}

/// BatchNorm under FedBN semantics: it learns under FedAvg, FedProx and FedPer; the running
/// statistics never enter the global (aggregated) model, each site keeps its own, and DP-SGD
/// refuses the model.
#[test]
fn batch_norm_statistics_stay_at_the_site() {
    // Each site sees the same rule on a different feature shift and scale (feature skew,
    // FedBN's setting).
    let mut data = vec![];
    for k in 0..3u64 {
        let (shift, scale) = (k as f32 * 2.0, 1.0 + k as f32);
        let row = move |rng: &mut ChaCha8Rng| {
            let x: Vec<f32> = (0..4).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            let y = u32::from(x[0] - x[1] > 0.0);
            (x.iter().map(|v| v * scale + shift).collect(), y)
        };
        let mut site = sites(20 + k, 1, row).pop().unwrap();
        site.name = format!("site-{k}");
        data.push(site);
    }
    let body = Backbone::Mlp {
        inputs: 4,
        hidden: vec![8],
        dropout: 0.0,
        norm: Norm::Batch,
    };
    learns("mlp+batchnorm", body.clone(), data.clone(), 4, 0.8);

    let model = ModelSpec::BackboneNet { body, outputs: 1 };
    let cfg = study(
        StrategyConfig::FedAvg(FedAvgConfig {}),
        model.clone(),
        OptimizerConfig::adam(0.02),
        2,
        10,
    );
    let mut sim = Simulation::new(cfg.clone(), data.clone()).unwrap();
    sim.run().unwrap();
    let state = sim.snapshot().unwrap();
    assert!(state.global.names().any(|n| n == "body.norm0.weight"));
    assert!(!state.global.names().any(is_site_local_state));
    assert!(!Selector::All.matches("body.norm0.bn_stats.running_mean"));
    let stats = |k: usize| {
        state.sites[k]
            .params
            .get("body.norm0.bn_stats.running_mean")
            .unwrap()
            .values
            .clone()
    };
    assert_ne!(stats(0), stats(1));
    assert!(stats(0).iter().any(|v| *v != 0.0));
    // the shared weights are the same everywhere after loading the global model
    assert_eq!(
        state.sites[0].params.get("body.norm0.weight"),
        state.sites[1].params.get("body.norm0.weight")
    );

    let mut dp = cfg;
    dp.train.record_dp = Some(RecordDp {
        clip_norm: 1.0,
        noise_multiplier: 1.0,
        sampling_rate: 0.1,
    });
    let err = Simulation::new(dp, data).err().unwrap();
    assert!(err.to_string().contains("BatchNorm"), "{err}");
}
