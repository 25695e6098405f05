//! Per-step cost of the backbone families on fixed shapes: one local training step (forward,
//! BCE, backward, Adam) of a GRU and an LSTM over `[48, 16]` masked series, the LSTM + static
//! fusion, and the ResNet-style GroupNorm CNN on 1 x 8 x 8 and 3 x 32 x 32 images, batch 32.
use criterion::{criterion_group, BatchSize, Criterion, Throughput};
use fl_engine::data::Dataset;
use fl_engine::model::{Backbone, Cell, CnnConfig, MaskLayout, ModelSpec, Net, Readout, SeqConfig};
use fl_engine::train::{train_local, Budget, LossKind, Optimizer, OptimizerConfig, TrainConfig};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const BATCH: usize = 32;
const STEPS: usize = 10;

fn data(width: usize) -> Dataset {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let n = BATCH * STEPS;
    let x = (0..n * width)
        .map(|_| rng.random_range(-1.0f32..1.0))
        .collect();
    let y = (0..n).map(|i| (i % 2) as u32).collect();
    Dataset::new(width, x, y).unwrap()
}

fn seq(cell: Cell) -> SeqConfig {
    SeqConfig {
        cell,
        time: 48,
        features: 16,
        hidden: 64,
        mask: MaskLayout::PerStep,
        readout: Readout::Last,
        layers: 1,
    }
}

fn cnn(channels: usize, side: usize, stages: Vec<usize>) -> Backbone {
    Backbone::Cnn(CnnConfig {
        channels,
        height: side,
        width: side,
        stages,
        groups: 4,
    })
}

fn steps(c: &mut Criterion) {
    let cases = [
        ("gru_t48_f16_h64", Backbone::Recurrent(seq(Cell::Gru))),
        ("lstm_t48_f16_h64", Backbone::Recurrent(seq(Cell::Lstm))),
        (
            "lstm_static_fusion",
            Backbone::Fusion {
                series: seq(Cell::Lstm),
                static_inputs: 8,
                static_hidden: vec![32],
            },
        ),
        ("cnn_1x8x8_16_32", cnn(1, 8, vec![16, 32])),
        ("cnn_3x32x32_16_32_64", cnn(3, 32, vec![16, 32, 64])),
    ];
    let mut g = c.benchmark_group("model_steps_batch32");
    g.sample_size(10);
    g.throughput(Throughput::Elements(STEPS as u64));
    for (name, body) in cases {
        let spec = ModelSpec::BackboneNet { body, outputs: 1 };
        let net = Net::new(&spec, 0).unwrap();
        let train = data(spec.inputs());
        let cfg = TrainConfig {
            optimizer: OptimizerConfig::adam(1e-3),
            budget: Budget::Steps(STEPS),
            batch_size: BATCH,
            loss: LossKind::bce(),
            record_dp: None,
        };
        eprintln!("{name}: {} parameters", spec.parameter_count().unwrap());
        g.bench_function(name, |b| {
            b.iter_batched(
                || {
                    (
                        Optimizer::new(cfg.optimizer.clone()).unwrap(),
                        ChaCha8Rng::seed_from_u64(1),
                    )
                },
                |(mut opt, mut rng)| {
                    train_local(&net, &mut opt, &train, &cfg, &[], &mut rng, None).unwrap()
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, steps);
fn main() {
    fl_engine::device::set_candle_threads();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
