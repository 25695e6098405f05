//! The extracted data in the shapes the sequence and survival models take: static features
//! `[n, d]`, time series `[n, steps, channels]` with a presence mask, labels, and survival
//! (time, event) pairs; split into train / validation / test as [`SiteRows::site_data`]
//! splits, and imputed and standardised with statistics of the training part only.
//!
//! These are what the engine's `Dataset` carries for binary classification today, plus what it
//! does not yet carry: the engine's sequence (GRU/LSTM) and survival (Cox) models will consume
//! them.
use fl_engine::data::Standardizer;

use super::{SiteRows, SourceError, SubjectRow};

/// One split.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TensorSet {
    pub n: usize,
    /// `[n, d]` static features, imputed and standardised.
    pub features: Vec<f32>,
    /// `[n, steps, channels]`, bins before a channel's first value filled with the training
    /// mean, standardised per channel; empty without a time series.
    pub series: Vec<f32>,
    /// `[n, steps, channels]`, 1 where the bin had an Observation.
    pub mask: Vec<u8>,
    /// Binary label or survival event indicator.
    pub labels: Vec<u32>,
    /// Survival: days to the event or censoring; empty for a binary task.
    pub time: Vec<f32>,
}

/// Train, validation and test tensors of one site.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteTensors {
    pub n_features: usize,
    pub steps: usize,
    pub channels: Vec<String>,
    pub train: TensorSet,
    pub val: TensorSet,
    pub test: TensorSet,
    /// Per channel (mean, std) of the training part's observed values.
    pub channel_stats: Vec<(f32, f32)>,
}

impl SiteRows {
    /// The site's tensors for any task, split by the engine's seeded split.
    pub fn tensors(&self, val_fraction: f64, seed: u64) -> Result<SiteTensors, SourceError> {
        let (train, val, test) = self.train_val(val_fraction, seed)?;
        if train.is_empty() {
            return Err(SourceError::Engine(fl_engine::error::EngineError::Data(
                "no training rows".into(),
            )));
        }
        let imputer = self.imputer(&train);
        let d = self.columns.len();
        let statics = |rows: &[&SubjectRow]| -> Result<fl_engine::data::Dataset, SourceError> {
            self.dataset_of(rows, &imputer)
        };
        let (tr, va, te) = (statics(&train)?, statics(&val)?, statics(&test)?);
        let std = Standardizer::fit(&tr)?;
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
        let set = |rows: &[&SubjectRow],
                   data: &fl_engine::data::Dataset|
         -> Result<TensorSet, SourceError> {
            let z = std.apply(data)?;
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
            Ok(TensorSet {
                n: rows.len(),
                features: z.features().to_vec(),
                series,
                mask,
                labels: rows.iter().map(|r| r.label).collect(),
                time: rows.iter().filter_map(|r| r.time).collect(),
            })
        };
        Ok(SiteTensors {
            n_features: d,
            steps,
            channels,
            train: set(&train, &tr)?,
            val: set(&val, &va)?,
            test: set(&test, &te)?,
            channel_stats,
        })
    }
}
