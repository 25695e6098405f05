//! `exp`, `sigmoid` and `tanh` for the fused layers' element loops, written so that the
//! compiler turns a loop over them into vector code.
//!
//! libm's `expf` is a call per value, which keeps a loop over a row of gates scalar; in
//! profiles of the recurrent layers it and the loop around it were a fifth of a training step.
//! These functions are branch-free (the edge cases are selects), so a loop that calls them
//! vectorises at whatever width the build targets.
//!
//! `exp` is Cephes' `expf` (S. L. Moshier, Cephes Math Library, `expf.c`): the range reduction
//! `x = n ln 2 + r`, `|r| <= ln 2 / 2`, with `ln 2` in two parts, a degree-6 polynomial for
//! `e^r`, and `2^n` put together from its exponent bits. Relative error below `2.5e-7` on
//! `[-87.3, 88.3]` (the tests check it against libm); beyond that range the input is clamped,
//! which keeps `sigmoid` and `tanh` exact at their saturation (`0`, `1`, `-1`).

/// `1.5 * 2^23`: adding it rounds a float below `2^22` in magnitude to an integer and leaves
/// that integer in the low bits of the sum's representation.
const ROUND: f32 = 12_582_912.0;

/// `e^x`, as described in the module header.
// Cephes' constants as published; each literal rounds to the nearest `f32`.
#[allow(clippy::excessive_precision)]
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    // 2^-126 and 2^127 bound `2^n`: both ends stay normal floats
    let x = if x < -87.3 { -87.3 } else { x };
    let x = if x > 88.3 { 88.3 } else { x };
    let t = x * std::f32::consts::LOG2_E + ROUND;
    let n = t - ROUND;
    let r = x - n * 0.693_359_375 - n * -2.121_944_4e-4;
    let mut p = 1.987_569_15e-4f32;
    p = p * r + 1.398_199_950_7e-3;
    p = p * r + 8.333_451_907_3e-3;
    p = p * r + 4.166_579_589_4e-2;
    p = p * r + 1.666_666_545_9e-1;
    p = p * r + 5.000_000_120_1e-1;
    let e_r = p * r * r + r + 1.0;
    let n = t.to_bits().wrapping_sub(ROUND.to_bits()) as i32;
    e_r * f32::from_bits(((n + 127) as u32) << 23)
}

/// `1 / (1 + e^-x)`.
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// `tanh` as `1 - 2 / (e^2x + 1)`; near 0, where that loses relative precision, the Taylor
/// series to `x^7` (error below `3e-13` for `|x| < 1/16`).
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    let x2 = x * x;
    let series = x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 - x2 * (17.0 / 315.0))));
    let far = 1.0 - 2.0 / (exp(2.0 * x) + 1.0);
    if x.abs() < 0.0625 {
        series
    } else {
        far
    }
}

/// `sigmoid` of every value in place.
pub(crate) fn sigmoid_in_place(v: &mut [f32]) {
    v.iter_mut().for_each(|v| *v = sigmoid(*v));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every float from -87.3 to 88.3 in steps of about 1e-3, and each power of two's
    /// neighbourhood where the range reduction switches `n`.
    fn grid() -> impl Iterator<Item = f32> {
        (-87_300..=88_300)
            .map(|i| i as f32 * 1e-3)
            .chain((-126..=127).flat_map(|n| {
                let x = n as f32 * std::f32::consts::LN_2;
                [x.next_down(), x, x.next_up()]
            }))
            .filter(|x| (-87.3..=88.3).contains(x))
    }

    #[test]
    fn exp_matches_libm() {
        let mut worst = 0f64;
        for x in grid() {
            let want = (x as f64).exp();
            let rel = ((exp(x) as f64 - want) / want).abs();
            worst = worst.max(rel);
        }
        assert!(worst < 2.5e-7, "largest relative error {worst}");
        // clamped outside the range: finite, and saturating the functions built on it
        assert!(exp(1e4).is_finite() && exp(-1e4) > 0.0);
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(f32::NAN).is_nan());
    }

    #[test]
    fn sigmoid_and_tanh_match_libm() {
        for i in -4000..=4000 {
            let x = i as f32 * 0.005;
            let (a, b) = (tanh(x), x.tanh());
            assert!((a - b).abs() <= 2e-7, "tanh {x}: {a} vs {b}");
            let (a, b) = (sigmoid(x), 1.0 / (1.0 + (-x).exp()));
            assert!((a - b).abs() <= 2e-7, "sigmoid {x}: {a} vs {b}");
        }
        for (x, want) in [
            (100.0f32, 1.0f32),
            (-100.0, -1.0),
            (1e-30, 1e-30),
            (0.0, 0.0),
        ] {
            assert_eq!(tanh(x), want);
        }
        assert_eq!(sigmoid(200.0), 1.0);
        assert!(sigmoid(-200.0) < 1e-37);
        assert!(tanh(f32::NAN).is_nan() && sigmoid(f32::NAN).is_nan());
    }
}
