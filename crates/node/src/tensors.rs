//! The extracted data in the shapes the sequence, image and survival models take: static
//! features `[n, d]`, images `[n, channels, height, width]` (scaled as the specification
//! declares, not standardised again), time series `[n, steps, channels]` with a presence
//! mask, labels, and survival (time, event) pairs; split into train / validation / test as
//! [`SiteRows::site_data`] splits, and imputed and standardised with statistics of the
//! training part only.
//!
//! [`SiteTensors::site_data`] lays them out as the engine's data sets for a study's task: one
//! flat row per subject in the study's [`RowLayout`] (`[image | series | mask | static]`, the
//! image channel-major as the CNN reads it, the series time-major, which the engine's
//! recurrent, fusion and CNN backbones read with a `per_value` mask), with class labels, label
//! bit masks or survival (time, event) targets.
use fl_engine::data::{Dataset, SiteData, Standardizer};

use super::{SiteRows, SourceError, SubjectRow, Task as LabelKind};
use ehds_core::domain::study::StudyTask;

fn data_error(msg: String) -> SourceError {
    SourceError::Engine(fl_engine::error::EngineError::Data(msg))
}

/// One split.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TensorSet {
    pub n: usize,
    /// `[n, d]` static features, imputed and standardised.
    pub features: Vec<f32>,
    /// `[n, channels * height * width]`; empty without an image.
    pub image: Vec<f32>,
    /// `[n, steps, channels]`, bins before a channel's first value filled with the training
    /// mean, standardised per channel; empty without a time series.
    pub series: Vec<f32>,
    /// `[n, steps, channels]`, 1 where the bin had an Observation.
    pub mask: Vec<u8>,
    /// Binary label, class index, label bit mask or survival event indicator.
    pub labels: Vec<u32>,
    /// Survival: days to the event or censoring; empty for a binary task.
    pub time: Vec<f32>,
}

impl TensorSet {
    /// The flat rows `[image | series | mask | static]` (only the static part without an
    /// image or a series).
    pub fn rows(
        &self,
        image_len: usize,
        series_len: usize,
        n_features: usize,
    ) -> Result<Vec<f32>, SourceError> {
        if self.series.len() != self.n * series_len
            || self.mask.len() != self.series.len()
            || self.features.len() != self.n * n_features
            || self.image.len() != self.n * image_len
        {
            return Err(data_error(format!(
                "{} rows do not hold {image_len} image values, {series_len} series values and \
                 {n_features} features each",
                self.n
            )));
        }
        let mut x = Vec::with_capacity(self.n * (image_len + 2 * series_len + n_features));
        for i in 0..self.n {
            x.extend_from_slice(&self.image[i * image_len..(i + 1) * image_len]);
            let at = i * series_len..(i + 1) * series_len;
            x.extend_from_slice(&self.series[at.clone()]);
            x.extend(self.mask[at].iter().map(|&m| f32::from(m)));
            x.extend_from_slice(&self.features[i * n_features..(i + 1) * n_features]);
        }
        Ok(x)
    }

    /// The engine's data set of this split for `task`.
    fn dataset(
        &self,
        image_len: usize,
        series_len: usize,
        n_features: usize,
        task: StudyTask,
    ) -> Result<Dataset, SourceError> {
        let x = self.rows(image_len, series_len, n_features)?;
        let width = image_len + 2 * series_len + n_features;
        Ok(match task {
            StudyTask::Binary | StudyTask::Multiclass { .. } => {
                Dataset::new(width, x, self.labels.clone())?
            }
            StudyTask::Multilabel { labels } => {
                let targets: Vec<Vec<bool>> = self
                    .labels
                    .iter()
                    .map(|&code| (0..labels).map(|k| code >> k & 1 == 1).collect())
                    .collect();
                Dataset::multi_label(width, x, labels, &targets)?
            }
            StudyTask::Survival => {
                if self.time.len() != self.n {
                    return Err(data_error(format!(
                        "{} survival times for {} rows",
                        self.time.len(),
                        self.n
                    )));
                }
                let event: Vec<bool> = self.labels.iter().map(|&l| l == 1).collect();
                Dataset::survival(width, x, &self.time, &event)?
            }
        })
    }
}

/// Train, validation and test tensors of one site.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteTensors {
    pub n_features: usize,
    /// Values per image; 0 without one.
    pub image_len: usize,
    pub steps: usize,
    pub channels: Vec<String>,
    pub train: TensorSet,
    pub val: TensorSet,
    pub test: TensorSet,
    /// Per channel (mean, std) of the training part's observed values.
    pub channel_stats: Vec<(f32, f32)>,
}

impl SiteTensors {
    /// The site's data as the engine trains a study of `task` on it: every split's rows laid
    /// out as the study's `RowLayout` (`[image | series | mask | static]`), targets as the task
    /// reads them. `label` is what the feature specification's label is; a task it cannot provide
    /// is refused.
    pub fn site_data(
        &self,
        name: &str,
        label: LabelKind,
        task: StudyTask,
    ) -> Result<SiteData, SourceError> {
        if !label.trains(task) {
            return Err(SourceError::Engine(
                fl_engine::error::EngineError::InvalidConfig(format!(
                    "site `{name}`: the specification's label is {}; it cannot train a {} task",
                    label.describe(),
                    task.describe()
                )),
            ));
        }
        let series_len = self.steps * self.channels.len();
        let split = |t: &TensorSet| t.dataset(self.image_len, series_len, self.n_features, task);
        Ok(SiteData {
            name: name.to_owned(),
            train: split(&self.train)?,
            val: split(&self.val)?,
            test: split(&self.test)?,
        })
    }
}

impl SiteRows {
    /// The site's tensors for any task, split as `plan` says ([`super::split`]).
    pub fn tensors(&self, plan: &super::SplitPlan) -> Result<SiteTensors, SourceError> {
        let (train, val, test) = self.train_val(plan)?;
        if train.is_empty() {
            return Err(SourceError::Engine(fl_engine::error::EngineError::Data(
                "no training rows".into(),
            )));
        }
        let imputer = self.imputer(&train);
        let d = self.columns.len();
        // an image alone is a row without static columns
        let statics = |rows: &[&SubjectRow]| -> Result<Option<Dataset>, SourceError> {
            (d > 0).then(|| self.dataset_of(rows, &imputer)).transpose()
        };
        let (tr, va, te) = (statics(&train)?, statics(&val)?, statics(&test)?);
        let std = tr.as_ref().map(Standardizer::fit).transpose()?;
        let (steps, channels) = self
            .series
            .as_ref()
            .map(|s| (s.steps, s.channels.clone()))
            .unwrap_or_default();
        let k = channels.len();
        // per channel statistics of the observed training bins
        let mut channel_stats = vec![(0.0f32, 1.0f32); k];
        for (c, stat) in channel_stats.iter_mut().enumerate() {
            let vals: Vec<f64> = train
                .iter()
                .filter_map(|r| r.series.as_ref())
                .flat_map(|s| {
                    s.values
                        .iter()
                        .zip(&s.mask)
                        .skip(c)
                        .step_by(k)
                        .filter(|(_, m)| **m == 1)
                        .map(|(v, _)| f64::from(*v))
                })
                .collect();
            if !vals.is_empty() {
                let mean = vals.iter().sum::<f64>() / vals.len() as f64;
                let var = vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / vals.len() as f64;
                let sd = if var.sqrt() > 1e-8 { var.sqrt() } else { 1.0 };
                *stat = (mean as f32, sd as f32);
            }
        }
        let set =
            |rows: &[&SubjectRow], data: &Option<Dataset>| -> Result<TensorSet, SourceError> {
                let features = match (data, &std) {
                    (Some(data), Some(std)) => std.apply(data)?.features().to_vec(),
                    _ => Vec::new(),
                };
                let mut series = Vec::with_capacity(rows.len() * steps * k);
                let mut mask = Vec::with_capacity(rows.len() * steps * k);
                for r in rows {
                    if let Some(s) = &r.series {
                        for (i, (v, m)) in s.values.iter().zip(&s.mask).enumerate() {
                            let (mean, sd) = channel_stats[i % k];
                            let v = if v.is_nan() { mean } else { *v };
                            series.push((v - mean) / sd);
                            mask.push(*m);
                        }
                    }
                }
                let mut image = Vec::with_capacity(rows.len() * self.image_len);
                for r in rows {
                    match &r.image {
                        Some(v) if v.len() == self.image_len => image.extend_from_slice(v),
                        Some(_) => {
                            return Err(data_error(format!(
                                "subject `{}`: an image of another size than the specification's",
                                r.pseudonym
                            )))
                        }
                        None if self.image_len == 0 => {}
                        None => {
                            return Err(data_error(format!(
                                "subject `{}` has no image",
                                r.pseudonym
                            )))
                        }
                    }
                }
                Ok(TensorSet {
                    n: rows.len(),
                    features,
                    image,
                    series,
                    mask,
                    labels: rows.iter().map(|r| r.label).collect(),
                    time: rows.iter().filter_map(|r| r.time).collect(),
                })
            };
        Ok(SiteTensors {
            n_features: d,
            image_len: self.image_len,
            steps,
            channels,
            train: set(&train, &tr)?,
            val: set(&val, &va)?,
            test: set(&test, &te)?,
            channel_stats,
        })
    }
}
