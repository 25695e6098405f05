//! Helpers shared by the convolution and GroupNorm tests.
use candle_core::{Device, Tensor, Var};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

pub(super) fn random(rng: &mut ChaCha8Rng, shape: &[usize]) -> Var {
    let n = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    Var::from_vec(v, shape, &Device::Cpu).unwrap()
}

/// Every entry within `2e-5 (1 + max |y|)`: a kernel gradient entry sums over every
/// image and position, and one that nearly cancels carries the rounding of terms far
/// larger than itself.
pub(super) fn close(a: &Tensor, b: &Tensor, what: &str) {
    let (a, b) = (
        a.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        b.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
    );
    assert_eq!(a.len(), b.len(), "{what}");
    let largest = b.iter().fold(0f32, |m, y| m.max(y.abs()));
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() <= 2e-5 * (1.0 + largest),
            "{what}: {x} vs {y} (largest {largest})"
        );
    }
}
