//! Classification metrics from predicted probabilities.
//!
//! Definitions follow scikit-learn so numbers are comparable with published tables:
//! * accuracy and F1 at a threshold (positive when `score > threshold`, the rule FLamby
//!   applies to Fed-Heart-Disease); F1 = 2TP / (2TP + FP + FN), 0 when undefined;
//! * balanced accuracy = mean recall over the classes present in the labels;
//! * AUROC = Mann-Whitney U / (P N) with tied scores counted one half;
//! * AUPRC = average precision, `sum_k (R_k - R_{k-1}) P_k` over distinct score thresholds.
//!
//! AUROC, AUPRC and F1 are `None` where undefined (one class only) or for multi-class tasks.
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BinaryMetrics {
    pub accuracy: f64,
    pub balanced_accuracy: f64,
    pub auroc: Option<f64>,
    pub auprc: Option<f64>,
    pub f1: f64,
}

impl BinaryMetrics {
    pub fn compute(scores: &[f32], labels: &[u32], threshold: f32) -> Result<Self> {
        if scores.len() != labels.len() || scores.is_empty() {
            return Err(EngineError::Data(format!(
                "{} scores for {} labels",
                scores.len(),
                labels.len()
            )));
        }
        if labels.iter().any(|&y| y > 1) || scores.iter().any(|s| !s.is_finite()) {
            return Err(EngineError::Data(
                "binary metrics need labels in {0,1} and finite scores".into(),
            ));
        }
        let (mut tp, mut tn, mut fp, mut fneg) = (0f64, 0f64, 0f64, 0f64);
        for (&s, &y) in scores.iter().zip(labels) {
            match (s > threshold, y == 1) {
                (true, true) => tp += 1.0,
                (false, false) => tn += 1.0,
                (true, false) => fp += 1.0,
                (false, true) => fneg += 1.0,
            }
        }
        let (pos, neg) = (tp + fneg, tn + fp);
        let recalls: Vec<f64> = [(pos, tp), (neg, tn)]
            .iter()
            .filter(|(n, _)| *n > 0.0)
            .map(|(n, c)| c / n)
            .collect();
        let f1_den = 2.0 * tp + fp + fneg;
        Ok(Self {
            accuracy: (tp + tn) / scores.len() as f64,
            balanced_accuracy: recalls.iter().sum::<f64>() / recalls.len() as f64,
            auroc: auroc(scores, labels),
            auprc: average_precision(scores, labels),
            f1: if f1_den > 0.0 { 2.0 * tp / f1_den } else { 0.0 },
        })
    }
}

/// Rank-based AUROC with average ranks for ties.
fn auroc(scores: &[f32], labels: &[u32]) -> Option<f64> {
    let pos = labels.iter().filter(|&&y| y == 1).count() as f64;
    let neg = labels.len() as f64 - pos;
    if pos == 0.0 || neg == 0.0 {
        return None;
    }
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let mut rank_sum_pos = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && scores[idx[j + 1]] == scores[idx[i]] {
            j += 1;
        }
        let avg_rank = (i + j) as f64 / 2.0 + 1.0;
        rank_sum_pos += idx[i..=j].iter().filter(|&&k| labels[k] == 1).count() as f64 * avg_rank;
        i = j + 1;
    }
    Some((rank_sum_pos - pos * (pos + 1.0) / 2.0) / (pos * neg))
}

/// scikit-learn's `average_precision_score`.
fn average_precision(scores: &[f32], labels: &[u32]) -> Option<f64> {
    let pos = labels.iter().filter(|&&y| y == 1).count() as f64;
    if pos == 0.0 {
        return None;
    }
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let (mut tp, mut fp, mut prev_recall, mut ap) = (0f64, 0f64, 0f64, 0f64);
    let mut i = 0;
    while i < idx.len() {
        // consume a whole block of tied scores: one threshold
        let s = scores[idx[i]];
        while i < idx.len() && scores[idx[i]] == s {
            if labels[idx[i]] == 1 {
                tp += 1.0
            } else {
                fp += 1.0
            }
            i += 1;
        }
        let recall = tp / pos;
        ap += (recall - prev_recall) * tp / (tp + fp);
        prev_recall = recall;
    }
    Some(ap)
}

/// What one evaluation of one model on one dataset reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricSummary {
    pub n: usize,
    pub loss: f64,
    pub accuracy: f64,
    pub balanced_accuracy: f64,
    pub auroc: Option<f64>,
    pub auprc: Option<f64>,
    pub f1: Option<f64>,
}

impl MetricSummary {
    /// `scores` are positive-class probabilities (`outputs == 1`) or row-major class
    /// probabilities `[n, outputs]`.
    pub fn from_scores(loss: f64, scores: &[f32], labels: &[u32], outputs: usize) -> Result<Self> {
        let n = labels.len();
        if outputs == 1 {
            let b = BinaryMetrics::compute(scores, labels, 0.5)?;
            return Ok(Self {
                n,
                loss,
                accuracy: b.accuracy,
                balanced_accuracy: b.balanced_accuracy,
                auroc: b.auroc,
                auprc: b.auprc,
                f1: Some(b.f1),
            });
        }
        if scores.len() != n * outputs || n == 0 {
            return Err(EngineError::Data(format!(
                "{} scores for {n} rows of {outputs} classes",
                scores.len()
            )));
        }
        let mut hits = vec![0f64; outputs];
        let mut counts = vec![0f64; outputs];
        for (row, &y) in scores.chunks(outputs).zip(labels) {
            let pred = row
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map_or(0, |(i, _)| i);
            let y = y as usize;
            if y >= outputs {
                return Err(EngineError::Data(format!("label {y} out of range")));
            }
            counts[y] += 1.0;
            if pred == y {
                hits[y] += 1.0;
            }
        }
        let present: Vec<f64> = hits
            .iter()
            .zip(&counts)
            .filter(|(_, c)| **c > 0.0)
            .map(|(h, c)| h / c)
            .collect();
        Ok(Self {
            n,
            loss,
            accuracy: hits.iter().sum::<f64>() / n as f64,
            balanced_accuracy: present.iter().sum::<f64>() / present.len() as f64,
            auroc: None,
            auprc: None,
            f1: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // scikit-learn documentation example:
    //   roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75
    //   average_precision_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.8333...
    #[test]
    fn sklearn_reference_example() {
        let m = BinaryMetrics::compute(&[0.1, 0.4, 0.35, 0.8], &[0, 0, 1, 1], 0.5).unwrap();
        assert!((m.auroc.unwrap() - 0.75).abs() < 1e-12);
        assert!((m.auprc.unwrap() - 5.0 / 6.0).abs() < 1e-12);
        // predictions [0, 0, 0, 1]: TP 1, TN 2, FN 1, FP 0
        assert!((m.accuracy - 0.75).abs() < 1e-12);
        assert!((m.balanced_accuracy - 0.75).abs() < 1e-12);
        assert!((m.f1 - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn ties_and_single_class() {
        let m = BinaryMetrics::compute(&[0.5, 0.5], &[0, 1], 0.5).unwrap();
        assert_eq!(m.auroc, Some(0.5));
        assert_eq!(m.auprc, Some(0.5));
        let one = BinaryMetrics::compute(&[0.9, 0.2], &[1, 1], 0.5).unwrap();
        assert_eq!(one.auroc, None);
        assert_eq!(one.balanced_accuracy, 0.5);
        assert!(BinaryMetrics::compute(&[0.1], &[0, 1], 0.5).is_err());
    }

    #[test]
    fn multiclass_balanced_accuracy() {
        // rows predict classes [0, 1, 1]; labels [0, 1, 2]: recalls 1, 1, 0
        let scores = [0.8, 0.1, 0.1, 0.2, 0.7, 0.1, 0.1, 0.6, 0.3];
        let m = MetricSummary::from_scores(0.0, &scores, &[0, 1, 2], 3).unwrap();
        assert!((m.accuracy - 2.0 / 3.0).abs() < 1e-12);
        assert!((m.balanced_accuracy - 2.0 / 3.0).abs() < 1e-12);
    }
}
