//! Task losses on logits, written with plain tensor ops so they run on any candle device.
//!
//! * Binary cross-entropy with logits, PyTorch `BCEWithLogitsLoss(pos_weight)` semantics:
//!   `l = (1 - y) z + (1 + (pw - 1) y) softplus(-z)`, with the stable
//!   `softplus(-z) = log(1 + exp(-|z|)) + max(-z, 0)`; mean over the batch.
//!   (candle-nn's version takes `log(sigmoid(z))`, which overflows to -inf for |z| > ~88.)
//! * Cross-entropy, PyTorch `CrossEntropyLoss(weight)` semantics:
//!   `sum_i w_{y_i} (-log_softmax(z_i)[y_i]) / sum_i w_{y_i}`.
//!
//! DP-SGD needs the loss of one example on its own ([`LossKind::example_loss`]); that is
//! PyTorch's `reduction='none'` value, `w_{y_i} (-log_softmax(z_i)[y_i])` under class weights,
//! because normalising by the batch's weight sum would make one record change every term.
use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LossKind {
    /// One logit per example, labels in {0, 1}.
    BceWithLogits { pos_weight: Option<f32> },
    /// One logit per class, labels are class indices.
    CrossEntropy { class_weights: Option<Vec<f32>> },
}

impl LossKind {
    pub fn bce() -> Self {
        LossKind::BceWithLogits { pos_weight: None }
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
