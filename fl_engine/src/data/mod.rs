//! Tabular data held by one site: a dense row-major feature matrix and integer labels,
//! the site's train / validation / test splits, and standardisation fitted on the site's own
//! training rows only (so no statistic ever crosses a site boundary).
pub mod heart_disease;
mod partition;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use partition::{dirichlet_label_skew, natural_partition};

use crate::error::{EngineError, Result};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    n_features: usize,
    features: Vec<f32>,
    labels: Vec<u32>,
}

impl Dataset {
    pub fn new(n_features: usize, features: Vec<f32>, labels: Vec<u32>) -> Result<Self> {
        if n_features == 0 || features.len() != n_features * labels.len() {
            return Err(EngineError::Data(format!(
                "{} feature values do not form {} rows of {n_features}",
                features.len(),
                labels.len()
            )));
        }
        if features.iter().any(|v| !v.is_finite()) {
            return Err(EngineError::Data("non-finite feature value".into()));
        }
        Ok(Self {
            n_features,
            features,
            labels,
        })
    }

    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    pub fn n_features(&self) -> usize {
        self.n_features
    }

    pub fn features(&self) -> &[f32] {
        &self.features
    }

    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.features[i * self.n_features..(i + 1) * self.n_features]
    }

    /// Rows `idx` (in that order) as a new dataset.
    pub fn subset(&self, idx: &[usize]) -> Dataset {
        let mut x = Vec::with_capacity(idx.len() * self.n_features);
        let mut y = Vec::with_capacity(idx.len());
        self.gather(idx, &mut x, &mut y);
        Dataset {
            n_features: self.n_features,
            features: x,
            labels: y,
        }
    }

    /// Copy rows `idx` into reusable buffers (cleared first).
    pub fn gather(&self, idx: &[usize], x: &mut Vec<f32>, y: &mut Vec<u32>) {
        x.clear();
        y.clear();
        for &i in idx {
            x.extend_from_slice(self.row(i));
            y.push(self.labels[i]);
        }
    }

    /// Row-wise concatenation (the Central baseline pools sites this way).
    pub fn concat(parts: &[&Dataset]) -> Result<Dataset> {
        let first = parts
            .first()
            .ok_or_else(|| EngineError::Data("nothing to concatenate".into()))?;
        let mut out = Dataset {
            n_features: first.n_features,
            features: vec![],
            labels: vec![],
        };
        for p in parts {
            if p.n_features != first.n_features {
                return Err(EngineError::Data(
                    "datasets disagree on the number of features".into(),
                ));
            }
            out.features.extend_from_slice(&p.features);
            out.labels.extend_from_slice(&p.labels);
        }
        Ok(out)
    }

    /// Seeded random split: `floor((1 - val_fraction) n)` rows for training, the rest for
    /// validation (FL4Health's 80/20 split inside each site's training data).
    pub fn split(&self, val_fraction: f64, seed: u64) -> Result<(Dataset, Dataset)> {
        if !(0.0..1.0).contains(&val_fraction) {
            return Err(EngineError::InvalidConfig(format!(
                "validation fraction {val_fraction} not in [0, 1)"
            )));
        }
        let mut idx: Vec<usize> = (0..self.len()).collect();
        idx.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        let n_train = ((1.0 - val_fraction) * self.len() as f64).floor() as usize;
        Ok((self.subset(&idx[..n_train]), self.subset(&idx[n_train..])))
    }
}

/// Per-feature z-scoring with statistics from one site's training rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Standardizer {
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
}

impl Standardizer {
    /// Population mean / std (ddof = 0). A constant column gets std 1, i.e. is only centred,
    /// because dividing by ~0 would blow the site's values up.
    pub fn fit(data: &Dataset) -> Result<Self> {
        if data.is_empty() {
            return Err(EngineError::Data(
                "cannot fit a standardiser on zero rows".into(),
            ));
        }
        let d = data.n_features;
        let n = data.len() as f64;
        let mut mean = vec![0f64; d];
        let mut var = vec![0f64; d];
        for i in 0..data.len() {
            for (m, x) in mean.iter_mut().zip(data.row(i)) {
                *m += *x as f64 / n;
            }
        }
        for i in 0..data.len() {
            for ((v, m), x) in var.iter_mut().zip(&mean).zip(data.row(i)) {
                *v += (*x as f64 - m).powi(2) / n;
            }
        }
        let std = var
            .iter()
            .map(|v| {
                if v.sqrt() > 1e-8 {
                    v.sqrt() as f32
                } else {
                    1.0
                }
            })
            .collect();
        Ok(Self {
            mean: mean.iter().map(|m| *m as f32).collect(),
            std,
        })
    }

    pub fn apply(&self, data: &Dataset) -> Result<Dataset> {
        if data.n_features != self.mean.len() {
            return Err(EngineError::Data(
                "standardiser fitted on a different feature count".into(),
            ));
        }
        let mut out = data.clone();
        for row in out.features.chunks_mut(self.mean.len()) {
            for ((x, m), s) in row.iter_mut().zip(&self.mean).zip(&self.std) {
                *x = (*x - m) / s;
            }
        }
        Ok(out)
    }
}

/// One site's data, standardised with its own training statistics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteData {
    pub name: String,
    pub train: Dataset,
    pub val: Dataset,
    pub test: Dataset,
}

impl SiteData {
    /// Split the site's training data 80/20 (or `val_fraction`), fit the standardiser on the
    /// training part and apply it to all three splits.
    pub fn prepare(
        name: &str,
        train_full: &Dataset,
        test: &Dataset,
        val_fraction: f64,
        seed: u64,
    ) -> Result<Self> {
        let (train, val) = train_full.split(val_fraction, seed)?;
        if train.is_empty() {
            return Err(EngineError::Data(format!(
                "site `{name}` has no training rows"
            )));
        }
        let s = Standardizer::fit(&train)?;
        Ok(Self {
            name: name.to_string(),
            train: s.apply(&train)?,
            val: s.apply(&val)?,
            test: s.apply(test)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standardiser_by_hand_and_constant_column() {
        let d = Dataset::new(2, vec![1., 5., 3., 5.], vec![0, 1]).unwrap();
        let s = Standardizer::fit(&d).unwrap();
        assert_eq!(s.mean, vec![2., 5.]);
        assert_eq!(s.std, vec![1., 1.]);
        let z = s.apply(&d).unwrap();
        assert_eq!(z.features(), &[-1., 0., 1., 0.]);
    }

    #[test]
    fn split_is_seeded_and_disjoint() {
        let d = Dataset::new(1, (0..10).map(|v| v as f32).collect(), vec![0; 10]).unwrap();
        let (a, b) = d.split(0.2, 1).unwrap();
        let (a2, _) = d.split(0.2, 1).unwrap();
        assert_eq!((a.len(), b.len()), (8, 2));
        assert_eq!(a, a2);
        let mut all: Vec<f32> = a.features().iter().chain(b.features()).copied().collect();
        all.sort_by(f32::total_cmp);
        assert_eq!(all, (0..10).map(|v| v as f32).collect::<Vec<_>>());
    }

    #[test]
    fn malformed_data_rejected() {
        assert!(Dataset::new(2, vec![1., 2., 3.], vec![0, 1]).is_err());
        assert!(Dataset::new(1, vec![f32::NAN], vec![0]).is_err());
        assert!(Standardizer::fit(&Dataset::new(1, vec![], vec![]).unwrap()).is_err());
    }
}
