//! Training throughput: one complete Fed-Heart-Disease FedAvg run (4 sites, 15 rounds x 100
//! local steps, batch 4, AdamW, validation and checkpointing every round) and raw local
//! steps per second for the logistic regression and a 64/32 MLP.
use criterion::{criterion_group, BatchSize, Criterion, Throughput};
use fl_engine::model::{MlpConfig, ModelSpec, Net};
use fl_engine::repro::{self, Method, Protocol};
use fl_engine::train::{train_local, Budget, LossKind, Optimizer, OptimizerConfig, TrainConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn full_run(c: &mut Criterion) {
    let mut g = c.benchmark_group("fed_heart_disease");
    g.sample_size(20);
    g.bench_function("fedavg_full_run", |b| {
        b.iter(|| repro::run_once(Method::FedAvg, &Protocol::default(), 0, None).unwrap())
    });
    g.finish();
}

fn local_steps(c: &mut Criterion) {
    let site = repro::site_data(0, 0.2).unwrap().remove(0);
    let steps = 100;
    let mut g = c.benchmark_group("local_steps");
    g.throughput(Throughput::Elements(steps as u64));
    let cases = [
        ("logistic_batch4", ModelSpec::logistic(13, 1), 4),
        (
            "mlp64x32_batch4",
            ModelSpec::Mlp(MlpConfig {
                inputs: 13,
                hidden: vec![64, 32],
                outputs: 1,
                dropout: 0.0,
            }),
            4,
        ),
        (
            "mlp64x32_batch32",
            ModelSpec::Mlp(MlpConfig {
                inputs: 13,
                hidden: vec![64, 32],
                outputs: 1,
                dropout: 0.0,
            }),
            32,
        ),
    ];
    for (name, spec, batch) in cases {
        let cfg = TrainConfig {
            optimizer: OptimizerConfig::adamw(1e-3),
            budget: Budget::Steps(steps),
            batch_size: batch,
            loss: LossKind::bce(),
            record_dp: None,
        };
        let net = Net::new(&spec, 0).unwrap();
        g.bench_function(name, |b| {
            b.iter_batched(
                || {
                    (
                        Optimizer::new(cfg.optimizer.clone()).unwrap(),
                        ChaCha8Rng::seed_from_u64(1),
                    )
                },
                |(mut opt, mut rng)| {
                    train_local(&net, &mut opt, &site.train, &cfg, &[], &mut rng, None).unwrap()
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, full_run, local_steps);
fn main() {
    fl_engine::device::set_candle_threads();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
