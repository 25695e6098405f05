//! Tabular data held by one site: a dense row-major feature matrix and one target code per
//! row, the site's train / validation / test splits, and standardisation fitted on the site's
//! own training rows only (so no statistic ever crosses a site boundary).
//!
//! # Targets
//!
//! Every row carries one `u32` target code; the dataset's [`Task`] says how to read it:
//!
//! * [`Task::Classification`] (the default, serde `"classification"`): the code is the class
//!   index. Binary when the model has one output (labels 0/1), multi-class softmax otherwise.
//! * [`Task::MultiLabel`] (serde `{"multi_label": {"labels": L}}`): the code is a bit mask,
//!   bit `k` set when label `k` is positive (so at most 32 labels, [`MAX_LABELS`]).
//! * [`Task::Survival`] (serde `"survival"`): right-censored `(time, event)`. The code is the
//!   bit pattern of the non-negative `f32` time with the sign bit carrying the event indicator
//!   ([`encode_survival`] / [`decode_survival`]); the encoding is lossless for every finite
//!   non-negative `f32` time.
//!
//! One code per row keeps batching, shuffling, splitting and every method's step loop (which
//! pass `&[u32]` targets to the loss) unchanged for every task; the typed views
//! ([`Dataset::survival`], [`Dataset::label_matrix`]) decode them.
pub mod heart_disease;
mod partition;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use partition::{dirichlet_label_skew, natural_partition};

use crate::error::{EngineError, Result};

/// What the per-row target codes mean (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// Class indices: binary (one output, labels 0/1) or multi-class softmax.
    #[default]
    Classification,
    /// `labels` independent binary labels, one sigmoid output each; codes are bit masks.
    MultiLabel { labels: u32 },
    /// Right-censored survival `(time, event)`; the model's single output is the risk score.
    Survival,
}

/// Most labels a multi-label task can have (one bit of the `u32` code each).
pub const MAX_LABELS: u32 = 32;

/// Target code of a right-censored observation: `time` (finite, `>= 0`) with the event flag
/// in the sign bit.
pub fn encode_survival(time: f32, event: bool) -> Result<u32> {
    if !time.is_finite() || time < 0.0 {
        return Err(EngineError::Data(format!(
            "survival time {time} is not a finite non-negative number"
        )));
    }
    Ok((time.to_bits() & 0x7fff_ffff) | ((event as u32) << 31))
}

/// Inverse of [`encode_survival`]: `(time, event)`.
pub fn decode_survival(code: u32) -> (f32, bool) {
    (f32::from_bits(code & 0x7fff_ffff), code >> 31 == 1)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    n_features: usize,
    features: Vec<f32>,
    labels: Vec<u32>,
    /// Absent in older serialised datasets (read as classification).
    #[serde(default, skip_serializing_if = "is_classification")]
    task: Task,
}

fn is_classification(t: &Task) -> bool {
    *t == Task::Classification
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
            task: Task::Classification,
        })
    }

    /// A multi-label dataset: `targets[i][k]` says whether label `k` is positive for row `i`.
    pub fn multi_label(
        n_features: usize,
        features: Vec<f32>,
        n_labels: u32,
        targets: &[Vec<bool>],
    ) -> Result<Self> {
        if n_labels == 0 || n_labels > MAX_LABELS {
            return Err(EngineError::Data(format!(
                "a multi-label task needs 1 to {MAX_LABELS} labels, got {n_labels}"
            )));
        }
        let mut codes = Vec::with_capacity(targets.len());
        for (i, row) in targets.iter().enumerate() {
            if row.len() != n_labels as usize {
                return Err(EngineError::Data(format!(
                    "row {i} has {} labels, the task {n_labels}",
                    row.len()
                )));
            }
            codes.push(
                row.iter()
                    .enumerate()
                    .fold(0u32, |m, (k, &y)| m | ((y as u32) << k)),
            );
        }
        let mut d = Self::new(n_features, features, codes)?;
        d.task = Task::MultiLabel { labels: n_labels };
        Ok(d)
    }

    /// A right-censored survival dataset: observed `time` (finite, `>= 0`) and whether the
    /// event was observed (`false`: censored at `time`).
    pub fn survival(
        n_features: usize,
        features: Vec<f32>,
        time: &[f32],
        event: &[bool],
    ) -> Result<Self> {
        if time.len() != event.len() {
            return Err(EngineError::Data(format!(
                "{} survival times for {} event indicators",
                time.len(),
                event.len()
            )));
        }
        let codes = time
            .iter()
            .zip(event)
            .map(|(&t, &e)| encode_survival(t, e))
            .collect::<Result<Vec<_>>>()?;
        let mut d = Self::new(n_features, features, codes)?;
        d.task = Task::Survival;
        Ok(d)
    }

    pub fn task(&self) -> Task {
        self.task
    }

    /// Survival times and event indicators (`None` unless the task is survival).
    pub fn survival_targets(&self) -> Option<(Vec<f32>, Vec<bool>)> {
        (self.task == Task::Survival)
            .then(|| self.labels.iter().map(|&c| decode_survival(c)).unzip())
    }

    /// Row-major `[n, labels]` 0/1 matrix of a multi-label task (`None` otherwise).
    pub fn label_matrix(&self) -> Option<Vec<u32>> {
        match self.task {
            Task::MultiLabel { labels } => Some(
                self.labels
                    .iter()
                    .flat_map(|&c| (0..labels).map(move |k| (c >> k) & 1))
                    .collect(),
            ),
            _ => None,
        }
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

    /// Per-row target codes: the class indices of a classification task (see the module
    /// documentation for the other tasks).
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
            task: self.task,
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
            task: first.task,
        };
        for p in parts {
            if p.n_features != first.n_features {
                return Err(EngineError::Data(
                    "datasets disagree on the number of features".into(),
                ));
            }
            if p.task != first.task {
                return Err(EngineError::Data("datasets disagree on the task".into()));
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
    fn survival_and_multi_label_targets_round_trip() {
        let d = Dataset::survival(
            1,
            vec![0., 1., 2.],
            &[0.0, 3.25, 1e30],
            &[true, false, true],
        )
        .unwrap();
        assert_eq!(d.task(), Task::Survival);
        let (t, e) = d.survival_targets().unwrap();
        assert_eq!(t, vec![0.0, 3.25, 1e30]);
        assert_eq!(e, vec![true, false, true]);
        let (tr, va) = d.split(0.34, 3).unwrap();
        assert_eq!((tr.task(), va.task()), (Task::Survival, Task::Survival));
        assert!(Dataset::survival(1, vec![0.], &[-1.0], &[true]).is_err());
        assert!(Dataset::survival(1, vec![0.], &[f32::NAN], &[true]).is_err());

        let m = Dataset::multi_label(
            1,
            vec![0., 1.],
            3,
            &[vec![true, false, true], vec![false; 3]],
        )
        .unwrap();
        assert_eq!(m.labels(), &[0b101, 0]);
        assert_eq!(m.label_matrix().unwrap(), vec![1, 0, 1, 0, 0, 0]);
        assert!(Dataset::multi_label(1, vec![0.], 2, &[vec![true]]).is_err());
        assert!(Dataset::concat(&[&d, &m]).is_err());
        let json = serde_json::to_string(&m).unwrap();
        assert!(json.contains("\"multi_label\":{\"labels\":3}"), "{json}");
        let plain = serde_json::to_string(&Dataset::new(1, vec![0.], vec![1]).unwrap()).unwrap();
        assert!(!plain.contains("task"));
    }

    #[test]
    fn malformed_data_rejected() {
        assert!(Dataset::new(2, vec![1., 2., 3.], vec![0, 1]).is_err());
        assert!(Dataset::new(1, vec![f32::NAN], vec![0]).is_err());
        assert!(Standardizer::fit(&Dataset::new(1, vec![], vec![]).unwrap()).is_err());
    }
}
