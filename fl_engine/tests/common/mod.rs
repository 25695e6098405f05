//! Small synthetic federations shared by the integration tests (`mod common;`).
#![allow(dead_code)]

use fl_engine::data::{dirichlet_label_skew, Dataset, SiteData};
use fl_engine::model::ModelSpec;
use fl_engine::sim::{CheckpointKind, Simulation, SimulationConfig};
use fl_engine::strategy::StrategyConfig;
use fl_engine::train::{Budget, LossKind, OptimizerConfig, TrainConfig};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Three well-separated Gaussian blobs in 4-d, dealt to 5 sites with Dirichlet(0.5) skew
/// (labels 0..3, one-hot-like centres at 3.0).
pub fn blobs(seed: u64) -> Vec<SiteData> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (n, d) = (900, 4);
    let mut x = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = (i % 3) as u32;
        for j in 0..d {
            let centre = if j == c as usize { 3.0 } else { 0.0 };
            x.push(centre + rng.random_range(-1.0f32..1.0));
        }
        y.push(c);
    }
    let all = Dataset::new(d, x, y).unwrap();
    let parts = dirichlet_label_skew(all.labels(), 5, 0.5, 20, seed).unwrap();
    parts
        .iter()
        .enumerate()
        .map(|(k, idx)| {
            // The blobs already share one scale; per-site z-scoring under label skew would
            // give each site its own feature scale, which is not what these tests are about.
            let site = all.subset(idx);
            let (rest, test) = site.split(0.25, k as u64).unwrap();
            let (train, val) = rest.split(0.2, k as u64).unwrap();
            SiteData {
                name: format!("site-{k}"),
                train,
                val,
                test,
            }
        })
        .collect()
}

/// Binary sites in `d` = 4 dimensions. Every site labels `w_k . x + b_k > 0` with a shared
/// direction plus a site-specific tilt of size `skew` (0 = one global rule, larger = sites
/// disagree and personalisation pays), with 5% label noise; 160 train, 40 validation and
/// 100 test rows per site.
pub fn binary_sites(seed: u64, n_sites: usize, skew: f32) -> Vec<SiteData> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let d = 4;
    (0..n_sites)
        .map(|k| {
            let mut w = [1.0f32, -1.0, 0.5, 0.0];
            for v in w.iter_mut() {
                *v += skew * rng.random_range(-1.0f32..1.0);
            }
            let b = skew * rng.random_range(-0.5f32..0.5);
            let mut rows = |n: usize| {
                let x: Vec<f32> = (0..d * n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
                let y = x
                    .chunks_exact(d)
                    .map(|r| {
                        let s: f32 = r.iter().zip(&w).map(|(a, b)| a * b).sum::<f32>() + b;
                        u32::from((s > 0.0) != (rng.random::<f32>() < 0.05))
                    })
                    .collect();
                Dataset::new(d, x, y).unwrap()
            };
            SiteData {
                name: format!("site-{k}"),
                train: rows(160),
                val: rows(40),
                test: rows(100),
            }
        })
        .collect()
}

/// A study on `binary_sites`-shaped data: `rounds` x `steps` local steps of batch 16.
pub fn study(
    strategy: StrategyConfig,
    model: ModelSpec,
    optimizer: OptimizerConfig,
    rounds: u64,
    steps: usize,
) -> SimulationConfig {
    SimulationConfig {
        study: format!("synthetic/{}", strategy.name()),
        model,
        strategy,
        train: TrainConfig {
            optimizer,
            budget: Budget::Steps(steps),
            batch_size: 16,
            loss: LossKind::bce(),
            record_dp: None,
        },
        rounds,
        seed: 1,
        reset_optimizer_each_round: false,
    }
}

/// Mean test accuracy over sites at `kind` after running `cfg` on `sites`, and the
/// first and last example-weighted validation losses.
pub fn run_and_score(
    cfg: SimulationConfig,
    sites: Vec<SiteData>,
    kind: CheckpointKind,
) -> (f64, f64, f64) {
    let mut sim = Simulation::new(cfg, sites).unwrap();
    sim.run().unwrap();
    let first = sim.history()[0].weighted_val_loss;
    let last = sim.history().last().unwrap().weighted_val_loss;
    let test = sim.test(kind).unwrap();
    let acc = test.iter().map(|m| m.accuracy).sum::<f64>() / test.len() as f64;
    (acc, first, last)
}
