//! Task losses on logits, written with plain tensor ops so they run on any candle device.
//!
//! * Binary cross-entropy with logits, PyTorch `BCEWithLogitsLoss(pos_weight)` semantics:
//!   `l = (1 - y) z + (1 + (pw - 1) y) softplus(-z)`, with the stable
//!   `softplus(-z) = log(1 + exp(-|z|)) + max(-z, 0)`; mean over the batch.
//!   (candle-nn's version takes `log(sigmoid(z))`, which overflows to -inf for |z| > ~88.)
//! * Cross-entropy, PyTorch `CrossEntropyLoss(weight)` semantics:
//!   `sum_i w_{y_i} (-log_softmax(z_i)[y_i]) / sum_i w_{y_i}`.
//!
//! * Focal loss (Lin et al. 2017, serde `Focal`): with one logit, torchvision's
//!   `sigmoid_focal_loss`: `ce(z, y) (1 - p_t)^gamma`, times `alpha_t = alpha y + (1 - alpha)(1 - y)`
//!   when `alpha` is given, mean over the batch; `(1 - p_t)^gamma` is evaluated as
//!   `exp(-gamma softplus(-s))`, `s = z (1 - 2y)`, so it stays finite for saturated logits. With
//!   several logits, the softmax form (kornia's `focal_loss`): `-alpha (1 - p_y)^gamma log p_y`,
//!   mean over the batch (`alpha` defaults to 1).
//! * Multi-label BCE (serde `MultiLabelBce`): logits `[b, L]`, targets the bit masks of
//!   [`crate::data::Task::MultiLabel`]; one binary cross-entropy per label (optional per-label
//!   `pos_weight`), mean over all `b L` terms, PyTorch `BCEWithLogitsLoss(pos_weight=[L])`.
//! * Cox (serde `Cox`): negative log partial likelihood of the risk scores `eta` (the single
//!   logit) with Breslow's handling of tied times, divided by the number of events `D`:
//!   `-(1/D) sum_{i: event} [eta_i - log sum_{j: t_j >= t_i} exp(eta_j)]`. A batch without events
//!   has loss 0. The risk set of each event is the batch, so the loss of one record depends on
//!   every other record of the batch: it does not decompose into per-example losses and
//!   record-level DP-SGD (which clips per-example gradients) is refused for it
//!   ([`LossKind::decomposes`]).
//!
//! DP-SGD needs the loss of one example on its own ([`LossKind::example_loss`]); that is
//! PyTorch's `reduction='none'` value, `w_{y_i} (-log_softmax(z_i)[y_i])` under class weights,
//! because normalising by the batch's weight sum would make one record change every term.
use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::data::{decode_survival, Task};
use crate::error::{EngineError, Result};

/// Stable `softplus(-z) = log(1 + exp(-z))`.
fn softplus_neg(z: &Tensor) -> Result<Tensor> {
    Ok((z.abs()?.neg()?.exp()? + 1.0)?
        .log()?
        .add(&z.neg()?.relu()?)?)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum LossKind {
    /// One logit per example, labels in {0, 1}.
    BceWithLogits { pos_weight: Option<f32> },
    /// One logit per class, labels are class indices.
    CrossEntropy { class_weights: Option<Vec<f32>> },
    /// Focal loss; binary (one logit) or multi-class (one logit per class).
    Focal {
        gamma: f32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        alpha: Option<f32>,
    },
    /// One logit per label of a multi-label task.
    MultiLabelBce {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pos_weight: Option<Vec<f32>>,
    },
    /// Cox partial likelihood (Breslow ties) of a survival task; one logit, the risk score.
    Cox,
}

impl LossKind {
    pub fn bce() -> Self {
        LossKind::BceWithLogits { pos_weight: None }
    }

    /// Whether the loss of a batch is the mean of per-example losses (needed by DP-SGD).
    pub fn decomposes(&self) -> bool {
        !matches!(self, LossKind::Cox)
    }

    /// Refuse a loss that does not fit the task or the model's output width.
    pub fn check_task(&self, task: Task, outputs: usize) -> Result<()> {
        let ok = match (self, task) {
            (LossKind::BceWithLogits { .. }, Task::Classification) => outputs == 1,
            (LossKind::CrossEntropy { .. }, Task::Classification) => outputs >= 2,
            (LossKind::Focal { .. }, Task::Classification) => outputs >= 1,
            (LossKind::MultiLabelBce { .. }, Task::MultiLabel { labels }) => {
                outputs == labels as usize
            }
            (LossKind::Cox, Task::Survival) => outputs == 1,
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(EngineError::InvalidConfig(format!(
                "loss {self:?} does not fit a {task:?} task with {outputs} model outputs"
            )))
        }
    }

    /// Mean loss of `logits` `[b, outputs]` against `labels`.
    pub fn compute(&self, logits: &Tensor, labels: &[u32]) -> Result<Tensor> {
        let b = labels.len();
        let dev = logits.device();
        match self {
            LossKind::BceWithLogits { pos_weight } => {
                if logits.dims() != [b, 1] {
                    return Err(EngineError::InvalidConfig(format!(
                        "binary loss needs logits [{b}, 1], got {:?}",
                        logits.dims()
                    )));
                }
                let mut one_minus_y = Vec::with_capacity(b);
                for &y in labels {
                    if y > 1 {
                        return Err(EngineError::Data(format!("binary label {y} is not 0 or 1")));
                    }
                    one_minus_y.push(1.0 - y as f32);
                }
                let one_minus_y = Tensor::from_vec(one_minus_y, (b, 1), dev)?;
                let neg = logits.neg()?;
                let softplus_neg = (logits.abs()?.neg()?.exp()? + 1.0)?
                    .log()?
                    .add(&neg.relu()?)?;
                let pos_term = match pos_weight {
                    None => softplus_neg,
                    Some(pw) => {
                        let w: Vec<f32> = labels
                            .iter()
                            .map(|&y| 1.0 + (pw - 1.0) * y as f32)
                            .collect();
                        softplus_neg.mul(&Tensor::from_vec(w, (b, 1), dev)?)?
                    }
                };
                Ok(logits.mul(&one_minus_y)?.add(&pos_term)?.mean_all()?)
            }
            LossKind::CrossEntropy { class_weights } => {
                let classes = logits.dim(1)?;
                if let Some(&bad) = labels.iter().find(|&&y| y as usize >= classes) {
                    return Err(EngineError::Data(format!(
                        "label {bad} out of range for {classes} classes"
                    )));
                }
                let idx = Tensor::from_slice(labels, (b, 1), dev)?;
                let nll = candle_nn::ops::log_softmax(logits, 1)?
                    .gather(&idx, 1)?
                    .neg()?;
                match class_weights {
                    None => Ok(nll.mean_all()?),
                    Some(cw) => {
                        if cw.len() != classes {
                            return Err(EngineError::InvalidConfig(format!(
                                "{} class weights for {classes} classes",
                                cw.len()
                            )));
                        }
                        let w: Vec<f32> = labels.iter().map(|&y| cw[y as usize]).collect();
                        let total: f32 = w.iter().sum();
                        if total <= 0.0 {
                            return Err(EngineError::InvalidConfig(
                                "class weights of the batch sum to 0".into(),
                            ));
                        }
                        Ok((nll.mul(&Tensor::from_vec(w, (b, 1), dev)?)?.sum_all()?
                            / total as f64)?)
                    }
                }
            }
            LossKind::Focal { gamma, alpha } => {
                let gamma = *gamma as f64;
                if !(gamma >= 0.0 && gamma.is_finite()) {
                    return Err(EngineError::InvalidConfig(format!(
                        "focal gamma {gamma} must be finite and >= 0"
                    )));
                }
                if logits.dims() == [b, 1] {
                    if labels.iter().any(|&y| y > 1) {
                        return Err(EngineError::Data("binary label is not 0 or 1".into()));
                    }
                    let y: Vec<f32> = labels.iter().map(|&y| y as f32).collect();
                    let y = Tensor::from_vec(y, (b, 1), dev)?;
                    let one_minus_y = y.affine(-1.0, 1.0)?;
                    let ce = logits.mul(&one_minus_y)?.add(&softplus_neg(logits)?)?;
                    // 1 - p_t = sigmoid(s), s = z (1 - 2y); sigmoid(s)^g = exp(-g softplus(-s))
                    let s = logits.mul(&y.affine(-2.0, 1.0)?)?;
                    let modulator = softplus_neg(&s)?.affine(-gamma, 0.0)?.exp()?;
                    let mut l = ce.mul(&modulator)?;
                    if let Some(a) = alpha {
                        let a = *a as f64;
                        l = l.mul(&y.affine(2.0 * a - 1.0, 1.0 - a)?)?;
                    }
                    Ok(l.mean_all()?)
                } else {
                    let classes = logits.dim(1)?;
                    if let Some(&bad) = labels.iter().find(|&&y| y as usize >= classes) {
                        return Err(EngineError::Data(format!(
                            "label {bad} out of range for {classes} classes"
                        )));
                    }
                    let idx = Tensor::from_slice(labels, (b, 1), dev)?;
                    let logp = candle_nn::ops::log_softmax(logits, 1)?.gather(&idx, 1)?;
                    let one_minus_p = logp.exp()?.affine(-1.0, 1.0)?.clamp(1e-30f32, 1f32)?;
                    let modulator = one_minus_p.log()?.affine(gamma, 0.0)?.exp()?;
                    let a = alpha.unwrap_or(1.0) as f64;
                    Ok(logp.mul(&modulator)?.mean_all()?.affine(-a, 0.0)?)
                }
            }
            LossKind::MultiLabelBce { pos_weight } => {
                let l = logits.dim(1)?;
                if logits.dims() != [b, l] || l == 0 || l > 32 {
                    return Err(EngineError::InvalidConfig(format!(
                        "multi-label loss needs logits [{b}, labels <= 32], got {:?}",
                        logits.dims()
                    )));
                }
                if let Some(pw) = pos_weight {
                    if pw.len() != l {
                        return Err(EngineError::InvalidConfig(format!(
                            "{} positive weights for {l} labels",
                            pw.len()
                        )));
                    }
                }
                if labels.iter().any(|&c| l < 32 && c >> l != 0) {
                    return Err(EngineError::Data(format!(
                        "multi-label target sets a label beyond the {l} outputs"
                    )));
                }
                let mut y = Vec::with_capacity(b * l);
                let mut w = Vec::with_capacity(b * l);
                for &c in labels {
                    for k in 0..l {
                        let yk = ((c >> k) & 1) as f32;
                        y.push(yk);
                        let pw = pos_weight.as_ref().map_or(1.0, |p| p[k]);
                        w.push(1.0 + (pw - 1.0) * yk);
                    }
                }
                let one_minus_y = Tensor::from_vec(y, (b, l), dev)?.affine(-1.0, 1.0)?;
                let pos = softplus_neg(logits)?.mul(&Tensor::from_vec(w, (b, l), dev)?)?;
                Ok(logits.mul(&one_minus_y)?.add(&pos)?.mean_all()?)
            }
            LossKind::Cox => {
                if logits.dims() != [b, 1] {
                    return Err(EngineError::InvalidConfig(format!(
                        "Cox loss needs risk scores [{b}, 1], got {:?}",
                        logits.dims()
                    )));
                }
                let (time, event): (Vec<f32>, Vec<bool>) =
                    labels.iter().map(|&c| decode_survival(c)).unzip();
                let events: Vec<usize> = (0..b).filter(|&i| event[i]).collect();
                if events.is_empty() {
                    return Ok(logits.sum_all()?.affine(0.0, 0.0)?);
                }
                // risk-set mask [events, b]: j is at risk at event i's time when t_j >= t_i
                let mut mask = Vec::with_capacity(events.len() * b);
                for &i in &events {
                    mask.extend(time.iter().map(|&tj| (tj >= time[i]) as u8 as f32));
                }
                let mask = Tensor::from_vec(mask, (events.len(), b), dev)?;
                let eta = logits.to_dtype(candle_core::DType::F32)?;
                let m = eta.max_all()?.to_scalar::<f32>()? as f64;
                let risk_sum = mask.matmul(&eta.affine(1.0, -m)?.exp()?)?;
                let log_risk = risk_sum.log()?.affine(1.0, m)?;
                let idx: Vec<u32> = events.iter().map(|&i| i as u32).collect();
                let eta_e = eta.index_select(&Tensor::from_vec(idx, events.len(), dev)?, 0)?;
                let d = events.len() as f64;
                Ok(log_risk.sub(&eta_e)?.sum_all()?.affine(1.0 / d, 0.0)?)
            }
        }
    }
}

impl LossKind {
    /// Loss of a single example (`logits` of shape `[1, outputs]`), PyTorch
    /// `reduction='none'` semantics: the class weight multiplies the example's negative
    /// log-likelihood instead of normalising it away.
    pub fn example_loss(&self, logits: &Tensor, label: u32) -> Result<Tensor> {
        match self {
            LossKind::CrossEntropy {
                class_weights: Some(cw),
            } => {
                let classes = logits.dim(1)?;
                if cw.len() != classes {
                    return Err(EngineError::InvalidConfig(format!(
                        "{} class weights for {classes} classes",
                        cw.len()
                    )));
                }
                let unweighted = LossKind::CrossEntropy {
                    class_weights: None,
                }
                .compute(logits, &[label])?;
                let w = cw.get(label as usize).copied().unwrap_or(1.0);
                Ok(unweighted.affine(w as f64, 0.0)?)
            }
            LossKind::Cox => Err(EngineError::InvalidConfig(
                "the Cox partial likelihood has no per-example loss: each event's risk set is \
                 the whole batch"
                    .into(),
            )),
            other => other.compute(logits, &[label]),
        }
    }
}

/// Scalar value of a 0-d loss tensor.
pub(crate) fn scalar(t: &Tensor) -> Result<f32> {
    Ok(t.to_dtype(candle_core::DType::F32)?.to_scalar::<f32>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn logits(v: &[f32], cols: usize) -> Tensor {
        Tensor::from_slice(v, (v.len() / cols, cols), &Device::Cpu).unwrap()
    }

    #[test]
    fn bce_matches_hand_computation() {
        // z = [0, 2], y = [1, 0]: [ln 2, ln(1 + e^2)] -> mean = (0.693147 + 2.126928) / 2
        let l = LossKind::bce()
            .compute(&logits(&[0.0, 2.0], 1), &[1, 0])
            .unwrap();
        assert!((scalar(&l).unwrap() - 1.4100375).abs() < 1e-6);
    }

    #[test]
    fn bce_is_stable_for_huge_logits() {
        let l = LossKind::bce()
            .compute(&logits(&[500.0, -500.0], 1), &[0, 1])
            .unwrap();
        assert!((scalar(&l).unwrap() - 500.0).abs() < 1e-3);
    }

    #[test]
    fn bce_pos_weight_scales_positive_term() {
        // z = 0, y = 1, pw = 3: 3 ln 2
        let kind = LossKind::BceWithLogits {
            pos_weight: Some(3.0),
        };
        let l = kind.compute(&logits(&[0.0], 1), &[1]).unwrap();
        assert!((scalar(&l).unwrap() - 3.0 * std::f32::consts::LN_2).abs() < 1e-6);
    }

    #[test]
    fn weighted_cross_entropy_matches_pytorch_definition() {
        // two examples, logits [0, 0] and [ln 3, 0]; labels 0 and 1; weights [1, 3]
        // nll = [ln 2, ln 4]; weighted mean = (ln 2 + 3 ln 4) / 4
        let kind = LossKind::CrossEntropy {
            class_weights: Some(vec![1.0, 3.0]),
        };
        let l = kind
            .compute(&logits(&[0.0, 0.0, 3f32.ln(), 0.0], 2), &[0, 1])
            .unwrap();
        let expected = (2f32.ln() + 3.0 * 4f32.ln()) / 4.0;
        assert!((scalar(&l).unwrap() - expected).abs() < 1e-6);
    }

    #[test]
    fn example_loss_keeps_the_class_weight() {
        // one example, logits [ln 3, 0], label 1, weights [1, 3]: 3 ln 4 (batch mean gives ln 4)
        let kind = LossKind::CrossEntropy {
            class_weights: Some(vec![1.0, 3.0]),
        };
        let z = logits(&[3f32.ln(), 0.0], 2);
        let l = scalar(&kind.example_loss(&z, 1).unwrap()).unwrap();
        assert!((l - 3.0 * 4f32.ln()).abs() < 1e-5);
        assert!(kind.example_loss(&z, 2).is_err());
        let bce = scalar(&LossKind::bce().example_loss(&logits(&[0.0], 1), 1).unwrap()).unwrap();
        assert!((bce - std::f32::consts::LN_2).abs() < 1e-6);
    }

    #[test]
    fn bad_labels_are_errors() {
        assert!(LossKind::bce().compute(&logits(&[0.0], 1), &[2]).is_err());
        let ce = LossKind::CrossEntropy {
            class_weights: None,
        };
        assert!(ce.compute(&logits(&[0.0, 0.0], 2), &[2]).is_err());
    }
}
