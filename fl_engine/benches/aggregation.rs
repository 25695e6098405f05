//! Aggregation throughput: DP-FedAvg vs plain weighted average vs a naive DP baseline, single vs
//! multi-threaded, against the machine's read bandwidth measured in the same run.
//!
//! Throughput is bytes of input read once (sites × params × 4 B) per second; DP-FedAvg has to
//! read its input twice (norms first, then clip-and-sum), so its ceiling is half the read
//! bandwidth. Run: `cargo bench -p fl_engine --bench aggregation`. `AGG_BENCH_SIZES=1000000`
//! restricts the sizes (default 1M and 10M parameters, 100 sites; 10M needs 4 GB of RAM).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fl_engine::dp::{dp_fedavg_into, weighted_average_into, DpFedAvgConfig, NoiseRng};
use rand::{RngExt, SeedableRng};
use rand_chacha::{ChaCha20Rng, ChaCha8Rng};
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

const SITES: usize = 100;

fn make_updates(dim: usize) -> Vec<Vec<f32>> {
    (0..SITES)
        .into_par_iter()
        .map(|k| {
            let mut rng = ChaCha8Rng::seed_from_u64(k as u64);
            // Scales vary so that some updates get clipped and some do not.
            let scale = 1e-3 * (1 + k % 4) as f32;
            (0..dim).map(|_| rng.random_range(-scale..scale)).collect()
        })
        .collect()
}

/// The straightforward implementation: per update, a norm pass, a clipped copy, an add pass;
/// then a vector of float Gaussian noise. Three passes and one allocation per update.
fn naive_dp_fedavg(updates: &[&[f32]], clip: f64, sigma: f64, rng: &mut ChaCha20Rng) -> Vec<f32> {
    let dim = updates[0].len();
    let mut sum = vec![0f32; dim];
    for u in updates {
        let norm = u.iter().map(|v| v * v).sum::<f32>().sqrt() as f64;
        let c = if norm > clip {
            (clip / norm) as f32
        } else {
            1.0
        };
        let clipped: Vec<f32> = u.iter().map(|v| v * c).collect();
        for (s, v) in sum.iter_mut().zip(&clipped) {
            *s += v;
        }
    }
    let normal = Normal::new(0.0, sigma * clip).unwrap();
    let noise: Vec<f32> = (0..dim).map(|_| normal.sample(rng) as f32).collect();
    sum.iter()
        .zip(&noise)
        .map(|(s, n)| (s + n) / updates.len() as f32)
        .collect()
}

fn read_sum(updates: &[&[f32]], parallel: bool) -> f32 {
    let sum_one = |u: &&[f32]| {
        // Eight lanes so the compiler vectorises the reduction (bandwidth, not latency, bound).
        let mut acc = [0f32; 8];
        for c in u.chunks_exact(8) {
            for k in 0..8 {
                acc[k] += c[k];
            }
        }
        acc.iter().sum::<f32>()
    };
    if parallel {
        updates
            .par_iter()
            .flat_map(|u| u.par_chunks(1 << 16))
            .map(|c| sum_one(&c))
            .sum()
    } else {
        updates.iter().map(sum_one).sum()
    }
}

fn bench_size(c: &mut Criterion, dim: usize) {
    let data = make_updates(dim);
    let updates: Vec<&[f32]> = data.iter().map(|u| u.as_slice()).collect();
    let weights: Vec<f64> = (0..SITES).map(|k| 1.0 + k as f64).collect();
    let mut out = vec![0f32; dim];
    let mut rng = NoiseRng::from_os_entropy().unwrap();
    let label = if dim.is_multiple_of(1_000_000) {
        format!("{}M", dim / 1_000_000)
    } else {
        dim.to_string()
    };

    let mut group = c.benchmark_group(format!("aggregate_{SITES}x{label}"));
    group.throughput(Throughput::Bytes((SITES * dim * 4) as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(if dim > 2_000_000 { 15 } else { 3 }));

    for (name, parallel) in [("multi", true), ("single", false)] {
        group.bench_function(BenchmarkId::new("read_bandwidth", name), |b| {
            b.iter(|| black_box(read_sum(&updates, parallel)))
        });
        group.bench_function(BenchmarkId::new("weighted_average", name), |b| {
            b.iter(|| weighted_average_into(&updates, &weights, parallel, &mut out).unwrap())
        });
        let cfg = DpFedAvgConfig {
            parallel,
            ..DpFedAvgConfig::new(1.0, 1.0)
        };
        group.bench_function(BenchmarkId::new("dp_fedavg", name), |b| {
            b.iter(|| dp_fedavg_into(&updates, &cfg, &mut rng, &mut out).unwrap())
        });
    }
    let mut naive_rng = ChaCha20Rng::from_seed(rand::random());
    group.bench_function(BenchmarkId::new("naive_dp_fedavg", "single"), |b| {
        b.iter(|| black_box(naive_dp_fedavg(&updates, 1.0, 1.0, &mut naive_rng)))
    });
    group.finish();

    // Write bandwidth reference: one memcpy of a single site's update.
    let mut copy_group = c.benchmark_group(format!("memcpy_{label}"));
    copy_group.throughput(Throughput::Bytes((dim * 4) as u64));
    copy_group.sample_size(10);
    copy_group.warm_up_time(Duration::from_millis(300));
    copy_group.measurement_time(Duration::from_secs(2));
    copy_group.bench_function("copy_from_slice", |b| {
        b.iter(|| out.copy_from_slice(black_box(updates[0])))
    });
    copy_group.finish();
}

fn aggregation(c: &mut Criterion) {
    let sizes: Vec<usize> = std::env::var("AGG_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000_000, 10_000_000]);
    for dim in sizes {
        bench_size(c, dim);
    }
}

criterion_group!(benches, aggregation);
criterion_main!(benches);
