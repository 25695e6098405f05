//! Evaluation metrics from predicted probabilities or risk scores.
//!
//! Definitions follow scikit-learn and scikit-survival so numbers are comparable with
//! published tables:
//! * binary metrics at a threshold (positive when `score > threshold`, the rule FLamby applies
//!   to Fed-Heart-Disease; 0.5 unless chosen on validation data with [`choose_threshold`]):
//!   accuracy, precision TP / (TP + FP), recall TP / (TP + FN), F1 = 2TP / (2TP + FP + FN)
//!   (each 0 when undefined, scikit-learn's `zero_division=0`), predicted-positive rate
//!   (PP / n: a collapse to one class, e.g. from an aggressive `pos_weight`, shows as 0 or 1);
//! * balanced accuracy = mean recall over the classes present in the labels;
//! * AUROC = Mann-Whitney U / (P N) with tied scores counted one half;
//! * AUPRC = average precision, `sum_k (R_k - R_{k-1}) P_k` over distinct score thresholds;
//! * Brier score = mean squared difference of the positive-class probability and the label;
//! * expected calibration error (ECE): 10 equal-width probability bins `[k/10, (k+1)/10)`
//!   (the last closed), `sum_b (n_b / n) |mean label_b - mean probability_b|`, on the
//!   positive-class probability for binary tasks and on the top-class confidence against
//!   top-class correctness for multi-class tasks (Guo et al. 2017);
//! * multi-class: precision, recall and F1 are macro averages over the classes present in the
//!   labels or the predictions (scikit-learn `average='macro'`), AUROC and AUPRC macro
//!   one-vs-rest averages (`None` unless every class has positives and negatives), the Brier
//!   score `mean_i sum_k (p_ik - 1[y_i = k])^2` (Brier's original multi-class definition);
//! * multi-label: every binary metric per label at the threshold, macro-averaged over labels
//!   (AUROC / AUPRC over the labels where they are defined);
//! * survival: Harrell's C-index and the integrated Brier score (see [`SurvivalMetrics`]).
//!
//! AUROC, AUPRC and F1 are `None` where undefined (one class only).
use serde::{Deserialize, Serialize};

use crate::data::Task;
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BinaryMetrics {
    pub accuracy: f64,
    pub balanced_accuracy: f64,
    pub auroc: Option<f64>,
    pub auprc: Option<f64>,
    pub f1: f64,
    pub precision: f64,
    pub recall: f64,
    pub brier: f64,
    pub ece: f64,
    pub predicted_positive_rate: f64,
    pub threshold: f32,
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
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let n = scores.len() as f64;
        let probs: Vec<f64> = scores.iter().map(|&s| s as f64).collect();
        let hits: Vec<f64> = labels.iter().map(|&y| y as f64).collect();
        Ok(Self {
            accuracy: (tp + tn) / n,
            balanced_accuracy: recalls.iter().sum::<f64>() / recalls.len() as f64,
            auroc: auroc(scores, labels),
            auprc: average_precision(scores, labels),
            f1: ratio(2.0 * tp, 2.0 * tp + fp + fneg),
            precision: ratio(tp, tp + fp),
            recall: ratio(tp, pos),
            brier: probs
                .iter()
                .zip(&hits)
                .map(|(p, y)| (p - y).powi(2))
                .sum::<f64>()
                / n,
            ece: expected_calibration_error(&probs, &hits),
            predicted_positive_rate: (tp + fp) / n,
            threshold,
        })
    }
}

/// ECE over 10 equal-width bins of `probs` (in [0, 1]) against the outcomes `hits` (0/1).
pub fn expected_calibration_error(probs: &[f64], hits: &[f64]) -> f64 {
    const BINS: usize = 10;
    let mut count = [0f64; BINS];
    let mut conf = [0f64; BINS];
    let mut acc = [0f64; BINS];
    for (&p, &h) in probs.iter().zip(hits) {
        let b = ((p * BINS as f64).floor().max(0.0) as usize).min(BINS - 1);
        count[b] += 1.0;
        conf[b] += p;
        acc[b] += h;
    }
    let n: f64 = count.iter().sum();
    if n == 0.0 {
        return 0.0;
    }
    (0..BINS)
        .filter(|&b| count[b] > 0.0)
        .map(|b| (acc[b] - conf[b]).abs() / n)
        .sum()
}

/// How [`choose_threshold`] picks a binary decision threshold on validation data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ThresholdRule {
    /// Maximise F1.
    #[default]
    MaxF1,
    /// Maximise Youden's J = sensitivity + specificity - 1.
    YoudenJ,
}

/// The decision threshold that maximises `rule` on validation scores and labels.
///
/// Every cut between two adjacent distinct scores is a candidate (predicting positive the
/// rows at or above the higher one), plus "everything positive"; among equally good cuts the
/// highest threshold wins. The threshold returned lies strictly between the two scores
/// (their midpoint where `f32` can represent one, else the lower score), so `score >
/// threshold` reproduces the cut. `None` when the labels have only one class.
pub fn choose_threshold(
    scores: &[f32],
    labels: &[u32],
    rule: ThresholdRule,
) -> Result<Option<f32>> {
    if scores.len() != labels.len()
        || scores.iter().any(|s| !s.is_finite())
        || labels.iter().any(|&y| y > 1)
    {
        return Err(EngineError::Data(
            "threshold choice needs one finite score per 0/1 label".into(),
        ));
    }
    let pos = labels.iter().filter(|&&y| y == 1).count() as f64;
    let neg = labels.len() as f64 - pos;
    if pos == 0.0 || neg == 0.0 {
        return Ok(None);
    }
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let (mut tp, mut fp) = (0f64, 0f64);
    let mut best: Option<(f64, f32)> = None;
    let mut i = 0;
    while i < idx.len() {
        let s = scores[idx[i]];
        while i < idx.len() && scores[idx[i]] == s {
            if labels[idx[i]] == 1 {
                tp += 1.0
            } else {
                fp += 1.0
            }
            i += 1;
        }
        let value = match rule {
            ThresholdRule::MaxF1 => 2.0 * tp / (2.0 * tp + fp + (pos - tp)),
            ThresholdRule::YoudenJ => tp / pos - fp / neg,
        };
        let threshold = match idx.get(i) {
            Some(&next) => {
                let lower = scores[next];
                let mid = ((s as f64 + lower as f64) / 2.0) as f32;
                if mid < s && mid >= lower {
                    mid
                } else {
                    lower
                }
            }
            None => s - f32::EPSILON * s.abs().max(1.0),
        };
        if best.is_none_or(|(b, _)| value > b) {
            best = Some((value, threshold));
        }
    }
    Ok(best.map(|(_, t)| t))
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
///
/// `accuracy` and `balanced_accuracy` are 0 for survival tasks (no classes; read `c_index`).
/// The fields added after the first release are absent (`None`) where they do not apply and
/// in older serialised summaries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricSummary {
    pub n: usize,
    pub loss: f64,
    pub accuracy: f64,
    pub balanced_accuracy: f64,
    pub auroc: Option<f64>,
    pub auprc: Option<f64>,
    pub f1: Option<f64>,
    #[serde(default, skip_serializing_if = "is_classification")]
    pub task: Task,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brier: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ece: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_positive_rate: Option<f64>,
    /// Decision threshold of the binary / multi-label metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c_index: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrated_brier: Option<f64>,
}

fn is_classification(t: &Task) -> bool {
    *t == Task::Classification
}

fn mean_of(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

impl MetricSummary {
    fn empty(n: usize, loss: f64, task: Task) -> Self {
        Self {
            n,
            loss,
            accuracy: 0.0,
            balanced_accuracy: 0.0,
            auroc: None,
            auprc: None,
            f1: None,
            task,
            precision: None,
            recall: None,
            brier: None,
            ece: None,
            predicted_positive_rate: None,
            threshold: None,
            c_index: None,
            integrated_brier: None,
        }
    }

    fn from_binary(n: usize, loss: f64, b: BinaryMetrics) -> Self {
        Self {
            accuracy: b.accuracy,
            balanced_accuracy: b.balanced_accuracy,
            auroc: b.auroc,
            auprc: b.auprc,
            f1: Some(b.f1),
            precision: Some(b.precision),
            recall: Some(b.recall),
            brier: Some(b.brier),
            ece: Some(b.ece),
            predicted_positive_rate: Some(b.predicted_positive_rate),
            threshold: Some(b.threshold),
            ..Self::empty(n, loss, Task::Classification)
        }
    }

    /// `scores` are positive-class probabilities (`outputs == 1`) or row-major class
    /// probabilities `[n, outputs]`; binary metrics at threshold 0.5.
    pub fn from_scores(loss: f64, scores: &[f32], labels: &[u32], outputs: usize) -> Result<Self> {
        Self::classification(loss, scores, labels, outputs, 0.5)
    }

    /// Classification metrics, binary ones at `threshold`.
    pub fn classification(
        loss: f64,
        scores: &[f32],
        labels: &[u32],
        outputs: usize,
        threshold: f32,
    ) -> Result<Self> {
        let n = labels.len();
        if outputs == 1 {
            let b = BinaryMetrics::compute(scores, labels, threshold)?;
            return Ok(Self::from_binary(n, loss, b));
        }
        if scores.len() != n * outputs || n == 0 {
            return Err(EngineError::Data(format!(
                "{} scores for {n} rows of {outputs} classes",
                scores.len()
            )));
        }
        let mut tp = vec![0f64; outputs];
        let mut counts = vec![0f64; outputs];
        let mut predicted = vec![0f64; outputs];
        let (mut brier, mut conf, mut correct) = (0f64, vec![], vec![]);
        for (row, &y) in scores.chunks(outputs).zip(labels) {
            let (pred, top) = row
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map_or((0, 0.0), |(i, p)| (i, *p));
            let y = y as usize;
            if y >= outputs {
                return Err(EngineError::Data(format!("label {y} out of range")));
            }
            counts[y] += 1.0;
            predicted[pred] += 1.0;
            if pred == y {
                tp[y] += 1.0;
            }
            brier += row
                .iter()
                .enumerate()
                .map(|(k, &p)| (p as f64 - (k == y) as u8 as f64).powi(2))
                .sum::<f64>();
            conf.push(top as f64);
            correct.push((pred == y) as u8 as f64);
        }
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let in_true: Vec<usize> = (0..outputs).filter(|&k| counts[k] > 0.0).collect();
        let in_either: Vec<usize> = (0..outputs)
            .filter(|&k| counts[k] > 0.0 || predicted[k] > 0.0)
            .collect();
        let macro_of = |f: &dyn Fn(usize) -> f64| mean_of(in_either.iter().map(|&k| f(k)));
        // one-vs-rest AUROC / AUPRC, defined only when every class has positives and negatives
        let ovr: Option<(f64, f64)> = (0..outputs)
            .map(|k| {
                let s: Vec<f32> = scores.chunks(outputs).map(|r| r[k]).collect();
                let y: Vec<u32> = labels.iter().map(|&y| (y as usize == k) as u32).collect();
                Some((auroc(&s, &y)?, average_precision(&s, &y)?))
            })
            .collect::<Option<Vec<_>>>()
            .map(|v| {
                let m = v.len() as f64;
                (
                    v.iter().map(|a| a.0).sum::<f64>() / m,
                    v.iter().map(|a| a.1).sum::<f64>() / m,
                )
            });
        Ok(Self {
            accuracy: tp.iter().sum::<f64>() / n as f64,
            balanced_accuracy: in_true.iter().map(|&k| tp[k] / counts[k]).sum::<f64>()
                / in_true.len() as f64,
            auroc: ovr.map(|o| o.0),
            auprc: ovr.map(|o| o.1),
            f1: macro_of(&|k| ratio(2.0 * tp[k], predicted[k] + counts[k])),
            precision: macro_of(&|k| ratio(tp[k], predicted[k])),
            recall: macro_of(&|k| ratio(tp[k], counts[k])),
            brier: Some(brier / n as f64),
            ece: Some(expected_calibration_error(&conf, &correct)),
            ..Self::empty(n, loss, Task::Classification)
        })
    }

    /// Multi-label metrics: `scores` row-major `[n, labels]` probabilities, `codes` the bit
    /// masks of [`Task::MultiLabel`]; binary metrics per label at `threshold`, macro-averaged.
    pub fn multi_label(
        loss: f64,
        scores: &[f32],
        codes: &[u32],
        labels: u32,
        threshold: f32,
    ) -> Result<Self> {
        let l = labels as usize;
        let n = codes.len();
        if l == 0 || scores.len() != n * l || n == 0 {
            return Err(EngineError::Data(format!(
                "{} scores for {n} rows of {l} labels",
                scores.len()
            )));
        }
        let per: Vec<BinaryMetrics> = (0..l)
            .map(|k| {
                let s: Vec<f32> = scores.chunks(l).map(|r| r[k]).collect();
                let y: Vec<u32> = codes.iter().map(|&c| (c >> k) & 1).collect();
                BinaryMetrics::compute(&s, &y, threshold)
            })
            .collect::<Result<_>>()?;
        let avg = |f: &dyn Fn(&BinaryMetrics) -> f64| per.iter().map(f).sum::<f64>() / l as f64;
        Ok(Self {
            accuracy: avg(&|b| b.accuracy),
            balanced_accuracy: avg(&|b| b.balanced_accuracy),
            auroc: mean_of(per.iter().filter_map(|b| b.auroc)),
            auprc: mean_of(per.iter().filter_map(|b| b.auprc)),
            f1: Some(avg(&|b| b.f1)),
            precision: Some(avg(&|b| b.precision)),
            recall: Some(avg(&|b| b.recall)),
            brier: Some(avg(&|b| b.brier)),
            ece: Some(avg(&|b| b.ece)),
            predicted_positive_rate: Some(avg(&|b| b.predicted_positive_rate)),
            threshold: Some(threshold),
            ..Self::empty(n, loss, Task::MultiLabel { labels })
        })
    }

    /// Survival metrics of risk scores (see [`SurvivalMetrics::compute`]).
    pub fn survival(
        loss: f64,
        eval: &SurvivalData,
        reference: Option<&SurvivalData>,
    ) -> Result<Self> {
        let m = SurvivalMetrics::compute(eval, reference)?;
        Ok(Self {
            c_index: m.c_index,
            integrated_brier: m.integrated_brier,
            ..Self::empty(eval.risk.len(), loss, Task::Survival)
        })
    }

    /// Uniform (unweighted) mean over sites of every metric; a metric missing at some site is
    /// averaged over the sites that have it. `n` is the total and `loss` the example-weighted
    /// mean.
    pub fn uniform_mean(sites: &[MetricSummary]) -> Option<MetricSummary> {
        let first = sites.first()?;
        let n: usize = sites.iter().map(|s| s.n).sum();
        let avg = |f: &dyn Fn(&MetricSummary) -> f64| {
            sites.iter().map(f).sum::<f64>() / sites.len() as f64
        };
        let opt = |f: &dyn Fn(&MetricSummary) -> Option<f64>| mean_of(sites.iter().filter_map(f));
        Some(MetricSummary {
            n,
            loss: sites.iter().map(|s| s.loss * s.n as f64).sum::<f64>() / n.max(1) as f64,
            accuracy: avg(&|s| s.accuracy),
            balanced_accuracy: avg(&|s| s.balanced_accuracy),
            auroc: opt(&|s| s.auroc),
            auprc: opt(&|s| s.auprc),
            f1: opt(&|s| s.f1),
            task: first.task,
            precision: opt(&|s| s.precision),
            recall: opt(&|s| s.recall),
            brier: opt(&|s| s.brier),
            ece: opt(&|s| s.ece),
            predicted_positive_rate: opt(&|s| s.predicted_positive_rate),
            threshold: None,
            c_index: opt(&|s| s.c_index),
            integrated_brier: opt(&|s| s.integrated_brier),
        })
    }
}

// ---------------------------------------------------------------------------------------
// Survival
// ---------------------------------------------------------------------------------------

/// Harrell's concordance index with scikit-survival's `concordance_index_censored` rules:
/// a pair is comparable when the earlier time is an event (`t_i < t_j`, or `t_i == t_j` with
/// `i` an event and `j` censored); it is concordant when `risk_i > risk_j`, and a risk tie
/// (`|risk_i - risk_j| <= 1e-8`) counts one half. `None` without comparable pairs.
pub fn concordance_index(risk: &[f64], time: &[f32], event: &[bool]) -> Option<f64> {
    let n = risk.len();
    let (mut num, mut den) = (0f64, 0f64);
    for i in (0..n).filter(|&i| event[i]) {
        for j in 0..n {
            let comparable = time[i] < time[j] || (time[i] == time[j] && !event[j]);
            if !comparable || i == j {
                continue;
            }
            den += 1.0;
            if (risk[i] - risk[j]).abs() <= 1e-8 {
                num += 0.5;
            } else if risk[i] > risk[j] {
                num += 1.0;
            }
        }
    }
    (den > 0.0).then(|| num / den)
}

/// Negative log Cox partial likelihood with Breslow ties, divided by the number of events
/// (the value [`crate::train::LossKind::Cox`] trains on), in `f64`. `None` without events.
pub fn cox_partial_nll(risk: &[f64], time: &[f32], event: &[bool]) -> Option<f64> {
    let n = risk.len();
    let d = event.iter().filter(|&&e| e).count();
    if d == 0 {
        return None;
    }
    let m = risk.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| time[b].total_cmp(&time[a]));
    // walk times from the largest down; the risk set of time t is everything with t_j >= t
    let (mut acc, mut nll, mut k) = (0f64, 0f64, 0);
    while k < n {
        let t = time[order[k]];
        let mut end = k;
        while end < n && time[order[end]] == t {
            acc += (risk[order[end]] - m).exp();
            end += 1;
        }
        let log_risk_set = acc.ln() + m;
        for &i in &order[k..end] {
            if event[i] {
                nll += log_risk_set - risk[i];
            }
        }
        k = end;
    }
    Some(nll / d as f64)
}

/// Breslow's estimate of the cumulative baseline hazard from training risk scores, as
/// scikit-survival's `BreslowEstimator`: a step function over the distinct training times
/// (event or censoring), `H0(t) = sum_{u <= t} d_u / sum_{j: t_j >= u} exp(risk_j)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BreslowBaseline {
    pub times: Vec<f64>,
    pub cum_hazard: Vec<f64>,
}

impl BreslowBaseline {
    pub fn fit(risk: &[f64], time: &[f32], event: &[bool]) -> Result<Self> {
        if risk.is_empty() || risk.len() != time.len() || time.len() != event.len() {
            return Err(EngineError::Data(
                "Breslow estimate needs as many risks, times and events, at least one".into(),
            ));
        }
        let n = risk.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| time[a].total_cmp(&time[b]));
        let mut at_risk: f64 = risk.iter().map(|r| r.exp()).sum();
        let (mut times, mut cum_hazard, mut h) = (vec![], vec![], 0f64);
        let mut k = 0;
        while k < n {
            let t = time[order[k]];
            let (mut d, mut leaving) = (0f64, 0f64);
            while k < n && time[order[k]] == t {
                d += event[order[k]] as u8 as f64;
                leaving += risk[order[k]].exp();
                k += 1;
            }
            h += d / at_risk;
            at_risk -= leaving;
            times.push(t as f64);
            cum_hazard.push(h);
        }
        Ok(Self { times, cum_hazard })
    }

    /// `H0(t)`: the value at the largest training time `<= t`; before the first training time
    /// the first value (scikit-survival's `StepFunction` clips to its first point), after the
    /// last the last value.
    pub fn cum_hazard_at(&self, t: f64) -> f64 {
        let i = self.times.partition_point(|&u| u <= t);
        self.cum_hazard[i.saturating_sub(1)]
    }

    /// `S(t | risk) = exp(-H0(t) exp(risk))`.
    pub fn survival(&self, t: f64, risk: f64) -> f64 {
        (-self.cum_hazard_at(t) * risk.exp()).exp()
    }
}

/// Kaplan-Meier estimate of the censoring distribution `G(t) = P(C > t)`, scikit-survival's
/// `CensoringDistributionEstimator`: at each distinct time, `1 - c_u / (r_u - d_u)` with
/// `c_u` censored, `d_u` events, `r_u` at risk (events happen before censoring on ties).
#[derive(Clone, Debug, PartialEq)]
pub struct CensoringKm {
    times: Vec<f64>,
    prob: Vec<f64>,
}

impl CensoringKm {
    pub fn fit(time: &[f32], event: &[bool]) -> Self {
        let n = time.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| time[a].total_cmp(&time[b]));
        let (mut times, mut prob, mut g) = (vec![], vec![], 1f64);
        let mut at_risk = n as f64;
        let mut k = 0;
        while k < n {
            let t = time[order[k]];
            let (mut d, mut c) = (0f64, 0f64);
            while k < n && time[order[k]] == t {
                if event[order[k]] {
                    d += 1.0
                } else {
                    c += 1.0
                }
                k += 1;
            }
            if c > 0.0 {
                g *= 1.0 - c / (at_risk - d);
            }
            at_risk -= d + c;
            times.push(t as f64);
            prob.push(g);
        }
        Self { times, prob }
    }

    /// `G(t)`: 1 before the first time; after the last time the last value (scikit-survival
    /// refuses such a time unless the last value is 0).
    pub fn at(&self, t: f64) -> f64 {
        let i = self.times.partition_point(|&u| u <= t);
        if i == 0 {
            1.0
        } else {
            self.prob[i - 1]
        }
    }
}

/// Integrated Brier score of a Cox-type model, as scikit-survival's `integrated_brier_score`:
/// survival curves `S(t | x) = exp(-H0(t) exp(risk))` with `H0` Breslow's estimate on the
/// training risks, inverse-probability-of-censoring weights from the Kaplan-Meier estimate of
/// the training data's censoring distribution (a weight is 0 where `G` is 0),
/// `BS(t) = mean_i [S(t|x_i)^2 1(t_i <= t, event_i) / G(t_i) + (1 - S(t|x_i))^2 1(t_i > t) / G(t)]`,
/// integrated over `times` (sorted, distinct, at least two) with the trapezoidal rule and
/// divided by `times[last] - times[0]`.
pub fn integrated_brier_score(
    baseline: &BreslowBaseline,
    censoring: &CensoringKm,
    risk: &[f64],
    time: &[f32],
    event: &[bool],
    times: &[f64],
) -> Result<f64> {
    if times.len() < 2 || times.windows(2).any(|w| w[0] >= w[1]) {
        return Err(EngineError::Data(
            "the integrated Brier score needs at least two increasing time points".into(),
        ));
    }
    if risk.is_empty() || risk.len() != time.len() || time.len() != event.len() {
        return Err(EngineError::Data(
            "integrated Brier score needs as many risks, times and events".into(),
        ));
    }
    let inv = |g: f64| if g > 0.0 { 1.0 / g } else { 0.0 };
    let w_obs: Vec<f64> = time.iter().map(|&t| inv(censoring.at(t as f64))).collect();
    let bs: Vec<f64> = times
        .iter()
        .map(|&t| {
            let w_t = inv(censoring.at(t));
            risk.iter()
                .zip(time)
                .zip(event)
                .zip(&w_obs)
                .map(|(((&r, &ti), &e), &wo)| {
                    let s = baseline.survival(t, r);
                    let ti = ti as f64;
                    if ti <= t && e {
                        s * s * wo
                    } else if ti > t {
                        (1.0 - s) * (1.0 - s) * w_t
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
                / risk.len() as f64
        })
        .collect();
    let area: f64 = times
        .windows(2)
        .zip(bs.windows(2))
        .map(|(t, b)| (t[1] - t[0]) * (b[0] + b[1]) / 2.0)
        .sum();
    Ok(area / (times[times.len() - 1] - times[0]))
}

/// Default time grid of the integrated Brier score: the distinct event times of the
/// evaluation data strictly inside its follow-up (`>=` the smallest observed time, `<` the
/// largest, scikit-survival's requirement). `None` with fewer than two such times.
pub fn brier_time_grid(time: &[f32], event: &[bool]) -> Option<Vec<f64>> {
    let max = time.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut t: Vec<f64> = time
        .iter()
        .zip(event)
        .filter(|(&t, &e)| e && t < max)
        .map(|(&t, _)| t as f64)
        .collect();
    t.sort_by(f64::total_cmp);
    t.dedup();
    (t.len() >= 2).then_some(t)
}

/// C-index and integrated Brier score of risk scores on evaluation data, the Breslow
/// baseline and censoring distribution fitted on `reference` (the site's training data and
/// the model's risks there). The integrated Brier score is `None` without a reference or
/// without a time grid ([`brier_time_grid`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SurvivalMetrics {
    pub c_index: Option<f64>,
    pub integrated_brier: Option<f64>,
}

/// Risk scores, times and events of one dataset.
pub struct SurvivalData<'a> {
    pub risk: &'a [f64],
    pub time: &'a [f32],
    pub event: &'a [bool],
}

impl SurvivalMetrics {
    pub fn compute(eval: &SurvivalData, reference: Option<&SurvivalData>) -> Result<Self> {
        let c_index = concordance_index(eval.risk, eval.time, eval.event);
        let integrated_brier = match (reference, brier_time_grid(eval.time, eval.event)) {
            (Some(r), Some(grid)) => {
                let base = BreslowBaseline::fit(r.risk, r.time, r.event)?;
                let cens = CensoringKm::fit(r.time, r.event);
                Some(integrated_brier_score(
                    &base, &cens, eval.risk, eval.time, eval.event, &grid,
                )?)
            }
            _ => None,
        };
        Ok(Self {
            c_index,
            integrated_brier,
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
