//! Arithmetic on `ParameterSet`s. Every binary operation first checks that both sides have
//! the same names and shapes; accumulation happens in f64 so that averaging many sites does
//! not lose precision to summation order.
use super::ParameterSet;
use crate::error::{EngineError, Result};

impl ParameterSet {
    /// Same names and shapes, all zeros.
    pub fn zeros_like(&self) -> ParameterSet {
        let mut out = self.clone();
        for (_, t) in out.iter_mut() {
            t.values.iter_mut().for_each(|v| *v = 0.0);
        }
        out
    }

    /// `self - other`.
    pub fn sub(&self, other: &ParameterSet) -> Result<ParameterSet> {
        self.check_compatible(other)?;
        let mut out = self.clone();
        for ((_, a), (_, b)) in out.iter_mut().zip(other.iter()) {
            a.values
                .iter_mut()
                .zip(&b.values)
                .for_each(|(x, y)| *x -= *y);
        }
        Ok(out)
    }

    /// `self += alpha * other`.
    pub fn add_scaled(&mut self, other: &ParameterSet, alpha: f32) -> Result<()> {
        self.check_compatible(other)?;
        for ((_, a), (_, b)) in self.iter_mut().zip(other.iter()) {
            a.values
                .iter_mut()
                .zip(&b.values)
                .for_each(|(x, y)| *x += alpha * *y);
        }
        Ok(())
    }

    /// `self *= alpha`.
    pub fn scale(&mut self, alpha: f32) {
        for (_, t) in self.iter_mut() {
            t.values.iter_mut().for_each(|v| *v *= alpha);
        }
    }

    /// Euclidean norm over all values.
    pub fn l2_norm(&self) -> f64 {
        self.iter()
            .flat_map(|(_, t)| t.values.iter())
            .map(|v| (*v as f64) * (*v as f64))
            .sum::<f64>()
            .sqrt()
    }

    /// `sum_k weights[k] * sets[k] / sum_k weights[k]`. Weights must be finite and
    /// non-negative with a positive sum; all sets must match the first one.
    pub fn weighted_average(sets: &[&ParameterSet], weights: &[f64]) -> Result<ParameterSet> {
        let first = sets.first().ok_or(EngineError::NoUpdates)?;
        if sets.len() != weights.len() {
            return Err(EngineError::InvalidConfig(format!(
                "{} parameter sets but {} weights",
                sets.len(),
                weights.len()
            )));
        }
        if weights.iter().any(|w| !w.is_finite() || *w < 0.0) {
            return Err(EngineError::InvalidConfig(
                "aggregation weights must be finite and >= 0".into(),
            ));
        }
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return Err(EngineError::InvalidConfig(
                "aggregation weights sum to zero".into(),
            ));
        }
        for s in sets {
            first.check_compatible(s)?;
        }
        let mut acc = vec![0.0f64; first.num_values()];
        for (s, w) in sets.iter().zip(weights) {
            for (a, v) in acc.iter_mut().zip(s.to_flat()) {
                *a += w * v as f64;
            }
        }
        let flat: Vec<f32> = acc.iter().map(|a| (a / total) as f32).collect();
        ParameterSet::from_flat(first, &flat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str, v: Vec<f32>) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert(name, vec![v.len()], v).unwrap();
        p
    }

    #[test]
    fn weighted_average_by_hand() {
        // (1*[1,2] + 3*[5,6]) / 4 = [4, 5]
        let a = one("w", vec![1., 2.]);
        let b = one("w", vec![5., 6.]);
        let avg = ParameterSet::weighted_average(&[&a, &b], &[1.0, 3.0]).unwrap();
        assert_eq!(avg.to_flat(), vec![4., 5.]);
    }

    #[test]
    fn weighted_average_rejects_mismatch_and_bad_weights() {
        let a = one("w", vec![1., 2.]);
        let b = one("v", vec![5., 6.]);
        assert!(ParameterSet::weighted_average(&[&a, &b], &[1.0, 1.0]).is_err());
        assert!(matches!(
            ParameterSet::weighted_average(&[], &[]),
            Err(EngineError::NoUpdates)
        ));
        assert!(ParameterSet::weighted_average(&[&a], &[0.0]).is_err());
        assert!(ParameterSet::weighted_average(&[&a], &[f64::NAN]).is_err());
    }

    #[test]
    fn sub_and_add_scaled() {
        let a = one("w", vec![3., 1.]);
        let b = one("w", vec![1., 1.]);
        let mut d = a.sub(&b).unwrap();
        assert_eq!(d.to_flat(), vec![2., 0.]);
        d.add_scaled(&b, 0.5).unwrap();
        assert_eq!(d.to_flat(), vec![2.5, 0.5]);
        assert!((d.l2_norm() - (6.5f64).sqrt()).abs() < 1e-9);
        assert!(d.add_scaled(&one("x", vec![0., 0.]), 1.0).is_err());
    }
}
