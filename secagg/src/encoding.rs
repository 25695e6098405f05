//! Fixed-point encoding of `f32` vectors into the ring `Z_{2^b}`.
//!
//! `x` becomes `round(x * 2^f) mod 2^b` (two's complement). The sum of `n` encoded vectors
//! decodes exactly, with no wrap-around, as long as
//!
//! ```text
//! n * (c * 2^f + 1/2) < 2^(b-1)        (c: bound on every |x_i|)
//! ```
//!
//! which [`FixedPoint::new`] checks for the largest `n` the session admits; [`FixedPoint::encode`]
//! refuses any entry above `c`. Each encoded entry is off by at most `2^-(f+1)`, so the decoded
//! sum of `n` vectors is within `n * 2^-(f+1)` of the real sum, entry by entry.

use serde::{Deserialize, Serialize};

use crate::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FixedPoint {
    modulus_bits: u32,
    fraction_bits: u32,
    bound: f32,
    max_summands: u32,
}

impl FixedPoint {
    pub fn new(
        modulus_bits: u32,
        fraction_bits: u32,
        bound: f32,
        max_summands: u32,
    ) -> Result<Self, Error> {
        if !(2..=64).contains(&modulus_bits) {
            return Err(Error::Encoding(format!(
                "modulus of {modulus_bits} bits: 2..=64 supported"
            )));
        }
        if !(bound.is_finite() && bound > 0.0) || max_summands == 0 {
            return Err(Error::Encoding(
                "bound must be finite and positive, summands at least 1".into(),
            ));
        }
        let worst = max_summands as f64 * (bound as f64 * 2f64.powi(fraction_bits as i32) + 0.5);
        let half = 2f64.powi(modulus_bits as i32 - 1);
        if worst >= half {
            return Err(Error::Encoding(format!(
                "{max_summands} inputs bounded by {bound} with {fraction_bits} fraction bits can reach \
                 {worst:.3e}, beyond 2^{} = {half:.3e}: use more modulus bits or fewer fraction bits",
                modulus_bits - 1
            )));
        }
        Ok(Self {
            modulus_bits,
            fraction_bits,
            bound,
            max_summands,
        })
    }

    pub fn modulus_bits(&self) -> u32 {
        self.modulus_bits
    }

    fn mask(&self) -> u64 {
        if self.modulus_bits == 64 {
            u64::MAX
        } else {
            (1u64 << self.modulus_bits) - 1
        }
    }

    fn scale(&self) -> f64 {
        2f64.powi(self.fraction_bits as i32)
    }

    pub fn encode(&self, x: &[f32]) -> Result<Vec<u64>, Error> {
        let (scale, mask) = (self.scale(), self.mask());
        x.iter()
            .enumerate()
            .map(|(i, &v)| {
                if !v.is_finite() || v.abs() > self.bound {
                    return Err(Error::Encoding(format!(
                        "entry {i} = {v} exceeds the bound {}",
                        self.bound
                    )));
                }
                Ok(((v as f64 * scale).round() as i64 as u64) & mask)
            })
            .collect()
    }

    /// Decodes a sum of at most `max_summands` encoded vectors.
    pub fn decode(&self, sum: &[u64]) -> Vec<f64> {
        let (scale, mask) = (self.scale(), self.mask());
        let half = 1u64 << (self.modulus_bits - 1);
        sum.iter()
            .map(|&v| {
                let v = v & mask;
                let signed = if v >= half {
                    v as i128 - (mask as i128 + 1)
                } else {
                    v as i128
                };
                signed as f64 / scale
            })
            .collect()
    }

    /// Largest decoding error of a sum of `n` vectors, entry by entry.
    pub fn max_error(&self, n: u32) -> f64 {
        n as f64 / (2.0 * self.scale())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_in_twos_complement_and_decodes_sums() {
        let fp = FixedPoint::new(16, 8, 1.0, 100).unwrap();
        // -1.0 * 256 = -256 = 65536 - 256 = 65280; 0.5 -> 128; 0.25 -> 64.
        assert_eq!(fp.encode(&[-1.0, 0.5, 0.25]).unwrap(), vec![65280, 128, 64]);
        let a = fp.encode(&[-1.0, 0.5, 0.999]).unwrap();
        let b = fp.encode(&[-1.0, -0.75, 0.999]).unwrap();
        let sum: Vec<u64> = a.iter().zip(&b).map(|(x, y)| (x + y) & 0xffff).collect();
        let d = fp.decode(&sum);
        assert_eq!(d[0], -2.0);
        assert_eq!(d[1], -0.25);
        assert!((d[2] - 1.998).abs() <= fp.max_error(2));
    }

    #[test]
    fn the_overflow_bound_is_enforced_at_construction() {
        // 100 * (1 * 256 + 0.5) = 25,650 < 32,768 fits; 128 * 256.5 = 32,832 does not.
        assert!(FixedPoint::new(16, 8, 1.0, 127).is_ok());
        assert!(FixedPoint::new(16, 8, 1.0, 128).is_err());
    }

    #[test]
    fn entries_beyond_the_bound_are_refused() {
        let fp = FixedPoint::new(32, 16, 2.0, 10).unwrap();
        assert!(fp.encode(&[2.5]).is_err());
        assert!(fp.encode(&[f32::NAN]).is_err());
        assert!(fp.encode(&[-2.0]).is_ok());
    }
}
