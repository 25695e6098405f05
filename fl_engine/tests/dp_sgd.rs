//! DP-SGD gradient privatisation and Poisson subsampling.

use candle_core::{Device, Tensor};
use fl_engine::dp::{
    poisson_subsample, privatize_gradient_tensor, privatize_gradients, DpError, DpSgdConfig,
    NoiseRng,
};

fn seeded(byte: u8) -> NoiseRng {
    NoiseRng::from_seed_for_reproducible_runs([byte; 32])
}

#[test]
fn tensor_gradients_are_clipped_summed_and_divided() {
    // Per-example gradients with norms 10, 5 and 0 under C = 5 (values exact in f32).
    let grads = Tensor::new(
        &[[6.0f32, 8.0, 0.0], [0.0, 3.0, 4.0], [0.0, 0.0, 0.0]],
        &Device::Cpu,
    )
    .unwrap();
    let cfg = DpSgdConfig {
        expected_batch_size: Some(4.0),
        ..DpSgdConfig::new(5.0, 1e-9)
    };
    let (g, report) = privatize_gradient_tensor(&grads, &cfg, &mut seeded(1)).unwrap();
    assert_eq!(g.dims(), &[3]);
    assert_eq!(report.norms, vec![10.0, 5.0, 0.0]);
    assert_eq!((report.clipped, report.divisor), (1, 4.0));
    let g: Vec<f32> = g.to_vec1().unwrap();
    let want = [3.0 / 4.0, (4.0 + 3.0) / 4.0, 4.0 / 4.0];
    let tol = 3.0 * report.grid / 2.0 / 4.0 + 1e-6;
    for (got, want) in g.iter().zip(want) {
        assert!((*got as f64 - want).abs() <= tol, "{g:?}");
    }

    // Same result from an f64 tensor and from the slice API with the same seed.
    let (g64, _) = privatize_gradient_tensor(
        &grads.to_dtype(candle_core::DType::F64).unwrap(),
        &cfg,
        &mut seeded(1),
    )
    .unwrap();
    assert_eq!(g64.to_vec1::<f32>().unwrap(), g);
    let rows = [[6.0f32, 8.0, 0.0], [0.0, 3.0, 4.0], [0.0, 0.0, 0.0]];
    let views: Vec<&[f32]> = rows.iter().map(|r| r.as_slice()).collect();
    let s = privatize_gradients(&views, 3, &cfg, &mut seeded(1)).unwrap();
    assert_eq!(s.mean, g);
}

#[test]
fn realised_batch_size_is_the_default_divisor() {
    let rows = [[3.0f32, 4.0], [0.0, 1.0]];
    let views: Vec<&[f32]> = rows.iter().map(|r| r.as_slice()).collect();
    let out =
        privatize_gradients(&views, 2, &DpSgdConfig::new(10.0, 1e-9), &mut seeded(2)).unwrap();
    assert_eq!(out.report.divisor, 2.0);
    assert!((out.mean[0] - 1.5).abs() < 1e-3 && (out.mean[1] - 2.5).abs() < 1e-3);
}

#[test]
fn empty_poisson_batch_releases_noise_only() {
    let cfg = DpSgdConfig {
        expected_batch_size: Some(8.0),
        ..DpSgdConfig::new(1.0, 1.0)
    };
    let empty = Tensor::zeros((0, 1000), candle_core::DType::F32, &Device::Cpu).unwrap();
    let (g, report) = privatize_gradient_tensor(&empty, &cfg, &mut seeded(3)).unwrap();
    let g: Vec<f32> = g.to_vec1().unwrap();
    assert_eq!(g.len(), 1000);
    assert!(report.norms.is_empty());
    // Pure noise with std ≈ σC / 8: non-zero, and within 6 std of 0.
    let s = report.noise_std / 8.0;
    assert!(g.iter().any(|&v| v != 0.0));
    assert!(g.iter().all(|&v| (v as f64).abs() < 6.0 * s));

    // Without an expected batch size an empty batch has no divisor.
    assert!(matches!(
        privatize_gradients(&[], 1000, &DpSgdConfig::new(1.0, 1.0), &mut seeded(3)),
        Err(DpError::InvalidParameter { .. })
    ));
}

#[test]
fn bad_gradients_are_typed_errors() {
    let cfg = DpSgdConfig::new(1.0, 1.0);
    let bad = Tensor::new(&[[1.0f32, f32::NAN]], &Device::Cpu).unwrap();
    assert_eq!(
        privatize_gradient_tensor(&bad, &cfg, &mut seeded(4)).unwrap_err(),
        DpError::NonFiniteUpdate { index: 0 }
    );
    let rank1 = Tensor::new(&[1.0f32, 2.0], &Device::Cpu).unwrap();
    assert!(matches!(
        privatize_gradient_tensor(&rank1, &cfg, &mut seeded(4)),
        Err(DpError::Tensor(_))
    ));
    let row = [1.0f32, 2.0, 3.0];
    assert!(matches!(
        privatize_gradients(&[&row], 2, &cfg, &mut seeded(4)),
        Err(DpError::LengthMismatch { .. })
    ));
    let neg = DpSgdConfig {
        expected_batch_size: Some(-1.0),
        ..cfg
    };
    assert!(privatize_gradients(&[&row], 3, &neg, &mut seeded(4)).is_err());
}

#[test]
fn poisson_subsampling_has_rate_q() {
    let (n, q) = (100_000usize, 0.1);
    let batch = poisson_subsample(n, q, &mut seeded(5)).unwrap();
    assert!(batch.windows(2).all(|w| w[0] < w[1]));
    assert!(batch.iter().all(|&i| i < n));
    // Size is Binomial(n, q): 6 standard deviations cannot flake in practice.
    let sd = (n as f64 * q * (1.0 - q)).sqrt();
    assert!(
        (batch.len() as f64 - n as f64 * q).abs() < 6.0 * sd,
        "{}",
        batch.len()
    );
    // Both halves of the population are sampled at the same rate.
    let low = batch.iter().filter(|&&i| i < n / 2).count() as f64;
    let sd_half = (n as f64 / 2.0 * q * (1.0 - q)).sqrt();
    assert!((low - n as f64 / 2.0 * q).abs() < 6.0 * sd_half);

    assert_eq!(batch, poisson_subsample(n, q, &mut seeded(5)).unwrap());
    assert_ne!(batch, poisson_subsample(n, q, &mut seeded(6)).unwrap());
    let os = poisson_subsample(n, q, &mut NoiseRng::from_os_entropy().unwrap()).unwrap();
    assert!((os.len() as f64 - n as f64 * q).abs() < 6.0 * sd);

    assert_eq!(
        poisson_subsample(5, 1.0, &mut seeded(5)).unwrap(),
        vec![0, 1, 2, 3, 4]
    );
    for bad in [0.0, -0.1, 1.5, f64::NAN] {
        assert!(matches!(
            poisson_subsample(10, bad, &mut seeded(5)),
            Err(DpError::InvalidParameter { .. })
        ));
    }
}
