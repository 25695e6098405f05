//! DP-FedAvg aggregation: clipping, noise statistics, determinism, input validation.

use fl_engine::dp::{
    clip_factor, clip_to_norm, dp_fedavg, dp_fedavg_into, l2_norm, weighted_average, DpError,
    DpFedAvgConfig, NoiseRng, CHUNK,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn seeded(byte: u8) -> NoiseRng {
    NoiseRng::from_seed_for_reproducible_runs([byte; 32])
}

/// Deterministic test data (not privacy-relevant, so a fast generator is fine).
fn random_updates(n: usize, dim: usize, scale: f32, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| (0..dim).map(|_| rng.random_range(-scale..scale)).collect())
        .collect()
}

fn views(updates: &[Vec<f32>]) -> Vec<&[f32]> {
    updates.iter().map(|u| u.as_slice()).collect()
}

/// Clipped mean computed the obvious way, in f64.
fn naive_clipped_mean(updates: &[Vec<f32>], clip: f64, divisor: f64) -> Vec<f64> {
    let mut sum = vec![0f64; updates[0].len()];
    for u in updates {
        let norm = u.iter().map(|&v| (v as f64).powi(2)).sum::<f64>().sqrt();
        let c = if norm > clip { clip / norm } else { 1.0 };
        for (s, &v) in sum.iter_mut().zip(u) {
            *s += c * v as f64;
        }
    }
    sum.iter().map(|s| s / divisor).collect()
}

#[test]
fn clipping_hand_checked_cases() {
    // 3-4-5 triangle scaled: norms 5 (above), 0.5 (below), exactly 1 (at C), 0 (zero vector).
    assert_eq!(clip_factor(5.0, 1.0), 0.2);
    assert_eq!(clip_factor(0.5, 1.0), 1.0);
    assert_eq!(clip_factor(1.0, 1.0), 1.0);
    assert_eq!(clip_factor(0.0, 1.0), 1.0);
    let mut above = vec![3.0f32, 4.0];
    assert_eq!(clip_to_norm(&mut above, 1.0).unwrap(), 5.0);
    assert_eq!(above, vec![0.6, 0.8]);
    let mut zero = vec![0.0f32; 3];
    assert_eq!(clip_to_norm(&mut zero, 1.0).unwrap(), 0.0);
    assert_eq!(zero, vec![0.0; 3]);

    // C = 5 (all values exact in f32): norms 10 (above), exactly 5 (at C), 1.25 (below), 0.
    let updates = vec![
        vec![6.0f32, 8.0],
        vec![3.0, 4.0],
        vec![0.75, 1.0],
        vec![0.0, 0.0],
    ];
    let cfg = DpFedAvgConfig::new(5.0, 1e-9);
    let out = dp_fedavg(&views(&updates), &cfg, &mut seeded(1)).unwrap();
    let r = &out.report;
    assert_eq!(r.norms, vec![10.0, 5.0, 1.25, 0.0]);
    assert_eq!(r.clipped, 1);
    assert_eq!(r.divisor, 4.0);
    // Clipped mean ((3 + 3 + 0.75 + 0) / 4, (4 + 4 + 1 + 0) / 4); each coordinate of each update
    // is snapped to the grid, so the mean is off by at most grid / 2 (plus negligible noise).
    let tol = r.grid / 2.0 + 6.0 * r.noise_std / 4.0;
    assert!(tol < 1e-2, "tolerance {tol}");
    assert!((out.mean[0] as f64 - 1.6875).abs() <= tol, "{:?}", out.mean);
    assert!((out.mean[1] as f64 - 2.25).abs() <= tol, "{:?}", out.mean);
}

#[test]
fn matches_naive_clipped_mean_across_chunk_boundaries() {
    let dim = 3 * CHUNK + 17;
    // Norms about 0.18, 1.8, 0.45, 2.7 and 0.09: some clipped, some not.
    let updates: Vec<Vec<f32>> = [0.002f32, 0.02, 0.005, 0.03, 0.001]
        .iter()
        .enumerate()
        .map(|(k, &scale)| random_updates(1, dim, scale, 7 + k as u64).remove(0))
        .collect();
    let clip = 1.0;
    let norms: Vec<f64> = updates.iter().map(|u| l2_norm(u)).collect();
    assert!(
        norms.iter().any(|&n| n > clip) && norms.iter().any(|&n| n < clip),
        "{norms:?}"
    );
    let cfg = DpFedAvgConfig {
        expected_sites: Some(4.0),
        ..DpFedAvgConfig::new(clip, 1e-9)
    };
    let out = dp_fedavg(&views(&updates), &cfg, &mut seeded(2)).unwrap();
    let want = naive_clipped_mean(&updates, clip, 4.0);
    let tol = 5.0 * out.report.grid / 2.0 / 4.0 + 1e-7;
    for (j, (&o, &w)) in out.mean.iter().zip(&want).enumerate() {
        assert!((o as f64 - w).abs() <= tol, "coordinate {j}: {o} vs {w}");
    }
    assert_eq!(out.report.norms, norms);
}

/// Tolerances are 6 standard errors of each statistic: a false failure has probability
/// about 2e-9 per check, so these cannot flake in practice even with OS-seeded noise.
fn check_noise_statistics(rng: &mut NoiseRng) {
    let n = 200_000;
    let (clip, sigma) = (2.0, 1.5);
    let zero = vec![0f32; n];
    let cfg = DpFedAvgConfig {
        expected_sites: Some(1.0),
        ..DpFedAvgConfig::new(clip, sigma)
    };
    let out = dp_fedavg(&[&zero], &cfg, rng).unwrap();
    let s = out.report.noise_std;
    assert!(
        s >= sigma * clip && s <= sigma * clip * 1.0011,
        "noise std {s}"
    );

    let x: Vec<f64> = out.mean.iter().map(|&v| v as f64).collect();
    let nf = n as f64;
    let mean = x.iter().sum::<f64>() / nf;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (nf - 1.0);
    assert!(mean.abs() <= 6.0 * s / nf.sqrt(), "mean {mean}");
    assert!(
        (var / (s * s) - 1.0).abs() <= 6.0 * (2.0 / nf).sqrt(),
        "var {var} vs {}",
        s * s
    );
    let p = 0.682_689_492_137_085_9; // P(|Z| < 1)
    let inside = x.iter().filter(|v| v.abs() < s).count() as f64 / nf;
    assert!(
        (inside - p).abs() <= 6.0 * (p * (1.0 - p) / nf).sqrt(),
        "P(|x|<s) = {inside}"
    );

    // Every released value lies on the grid (exactly representable here, |x| << 2^24 grid).
    let g = out.report.grid;
    assert_eq!(g.log2().fract(), 0.0);
    assert!(x.iter().all(|v| (v / g).fract() == 0.0));
}

#[test]
fn noise_has_the_right_distribution_seeded() {
    check_noise_statistics(&mut seeded(3));
}

#[test]
fn noise_has_the_right_distribution_os_seeded() {
    check_noise_statistics(&mut NoiseRng::from_os_entropy().unwrap());
}

#[test]
fn seeded_runs_repeat_and_parallel_equals_sequential() {
    let updates = random_updates(7, 2 * CHUNK + 5, 0.05, 11);
    let v = views(&updates);
    let par = DpFedAvgConfig::new(0.5, 1.0);
    let seq = DpFedAvgConfig {
        parallel: false,
        ..par
    };
    let a = dp_fedavg(&v, &par, &mut seeded(4)).unwrap();
    let b = dp_fedavg(&v, &par, &mut seeded(4)).unwrap();
    let c = dp_fedavg(&v, &seq, &mut seeded(4)).unwrap();
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let d = one_thread.install(|| dp_fedavg(&v, &par, &mut seeded(4)).unwrap());
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a, d);
    let other = dp_fedavg(&v, &par, &mut seeded(5)).unwrap();
    assert_ne!(a.mean, other.mean);
    // Each invocation draws a fresh key: the same generator never repeats its noise.
    let mut rng = seeded(4);
    let first = dp_fedavg(&v, &par, &mut rng).unwrap();
    let second = dp_fedavg(&v, &par, &mut rng).unwrap();
    assert_ne!(first.mean, second.mean);
}

#[test]
fn weighted_average_is_correct_and_deterministic() {
    let dim = 2 * CHUNK + 3;
    let updates = random_updates(5, dim, 10.0, 13);
    let weights = [1.0, 2.0, 0.0, 3.5, 0.25];
    let v = views(&updates);
    let par = weighted_average(&v, &weights, true).unwrap();
    let seq = weighted_average(&v, &weights, false).unwrap();
    assert_eq!(par, seq);
    let total: f64 = weights.iter().sum();
    for j in 0..dim {
        let want: f64 = updates
            .iter()
            .zip(&weights)
            .map(|(u, w)| u[j] as f64 * w)
            .sum::<f64>()
            / total;
        assert!(
            (par[j] as f64 - want).abs() <= 1e-6 * want.abs().max(1.0),
            "{j}"
        );
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let good = vec![1.0f32, 2.0, 3.0];
    let cfg = DpFedAvgConfig::new(1.0, 1.0);
    let mut rng = seeded(6);

    let nan = vec![1.0f32, f32::NAN, 3.0];
    let inf = vec![f32::INFINITY, 0.0, 0.0];
    let short = vec![1.0f32, 2.0];
    let empty: Vec<f32> = vec![];
    assert_eq!(
        dp_fedavg(&[&good, &nan], &cfg, &mut rng).unwrap_err(),
        DpError::NonFiniteUpdate { index: 1 }
    );
    assert_eq!(
        dp_fedavg(&[&inf, &good], &cfg, &mut rng).unwrap_err(),
        DpError::NonFiniteUpdate { index: 0 }
    );
    assert_eq!(
        dp_fedavg(&[&good, &good, &short], &cfg, &mut rng).unwrap_err(),
        DpError::LengthMismatch {
            index: 2,
            expected: 3,
            found: 2
        }
    );
    assert_eq!(
        dp_fedavg(&[], &cfg, &mut rng).unwrap_err(),
        DpError::NoUpdates
    );
    assert_eq!(
        dp_fedavg(&[&empty], &cfg, &mut rng).unwrap_err(),
        DpError::EmptyUpdate
    );
    for clip in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let bad = DpFedAvgConfig::new(clip, 1.0);
        assert!(matches!(
            dp_fedavg(&[&good], &bad, &mut rng),
            Err(DpError::InvalidParameter {
                name: "clip_norm",
                ..
            })
        ));
    }
    for sigma in [-1.0, 0.0, f64::NAN] {
        let bad = DpFedAvgConfig::new(1.0, sigma);
        assert!(matches!(
            dp_fedavg(&[&good], &bad, &mut rng),
            Err(DpError::InvalidParameter {
                name: "noise_multiplier",
                ..
            })
        ));
    }
    let bad = DpFedAvgConfig {
        expected_sites: Some(0.0),
        ..cfg
    };
    assert!(dp_fedavg(&[&good], &bad, &mut rng).is_err());
    let mut wrong_out = vec![0f32; 4];
    assert!(matches!(
        dp_fedavg_into(&[&good], &cfg, &mut rng, &mut wrong_out),
        Err(DpError::LengthMismatch { .. })
    ));

    // Plain weighted average.
    assert_eq!(
        weighted_average(&[&good, &good], &[1.0], true).unwrap_err(),
        DpError::WeightCountMismatch {
            weights: 1,
            updates: 2
        }
    );
    for w in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            weighted_average(&[&good], &[w], true),
            Err(DpError::InvalidParameter { name: "weight", .. })
        ));
    }
    assert!(weighted_average(&[&good], &[0.0], true).is_err());
    assert_eq!(
        weighted_average(&[&good, &nan], &[1.0, 0.0], true).unwrap_err(),
        DpError::NonFiniteUpdate { index: 1 }
    );
    assert_eq!(
        weighted_average(&[&good, &short], &[1.0, 1.0], true).unwrap_err(),
        DpError::LengthMismatch {
            index: 1,
            expected: 3,
            found: 2
        }
    );
    assert_eq!(
        weighted_average(&[], &[], true).unwrap_err(),
        DpError::NoUpdates
    );
}
