//! FedLC: federated learning with label-distribution skew via logit calibration (Zhang et al.
//! 2022, "Federated Learning with Label Distribution Skew via Logits Calibration", ICML 2022,
//! arXiv:2209.00189).
//!
//! Each site k trains on the calibrated cross-entropy
//!
//! ```text
//! L_cal(z, y) = -log( exp(z_y - tau n_{k,y}^{-1/4}) / sum_c exp(z_c - tau n_{k,c}^{-1/4}) )
//! ```
//!
//! i.e. the configured task loss on the logits `z_c - tau n_{k,c}^{-1/4}`, where `n_{k,c}` is
//! the site's number of training examples of class c. Rare classes get a larger margin
//! subtracted during training, so the model learns to push their logits up; prediction and
//! evaluation use the plain logits. The server is FedAvg through the configured
//! [`Aggregator`](super::Aggregator).
//!
//! Binary models with one logit (BCE): the single logit is the log-odds `z = z_1 - z_0` of a
//! two-logit softmax model, so calibrating both class logits gives
//! `z' = (z_1 - tau n_1^{-1/4}) - (z_0 - tau n_0^{-1/4}) = z - tau (n_1^{-1/4} - n_0^{-1/4})`,
//! and BCE on z' is exactly the two-class calibrated softmax loss.
//!
//! Choices:
//! * a class absent from the site's training data (`n_{k,c} = 0`, where `n^{-1/4}` is infinite)
//!   is counted as 1, the largest finite margin (`tau`); observed counts are used as they are;
//! * the counts are recomputed from the site's training data every round (they never leave the
//!   site);
//! * the softmax normalises over all classes (the form of the public implementations);
//! * class weights or `pos_weight` of the configured task loss apply to the calibrated logits;
//! * default `tau = 1.0`.
//!
//! Record-level DP is refused: the calibrated loss decomposes over examples, but the engine's
//! DP-SGD step differentiates the plain task loss only (and the counts would need privatising).
use candle_core::Tensor;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::fedsam::sequential_fit;
use super::methods::check_train;
use super::{ClientStrategy, FitIns, FitRes, MethodSpec, Site, Support};
use crate::error::{EngineError, Result};
use crate::model::ModelOutput;
use crate::train::{apply_gradient, batch_gradient, BatchObjective, LossKind};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FedLcConfig {
    /// Calibration strength `tau` (default 1.0).
    pub tau: f32,
}

impl Default for FedLcConfig {
    fn default() -> Self {
        Self { tau: 1.0 }
    }
}

/// The calibrated loss for one site: per-logit offsets subtracted before the task loss.
pub struct LogitCalibration {
    /// One offset per logit: `tau n_c^{-1/4}` (multi-class) or the single binary offset.
    offsets: Vec<f32>,
}

impl LogitCalibration {
    /// Offsets for a model with `outputs` logits (1 = binary BCE) from the class counts of the
    /// site's training labels.
    pub fn new(tau: f32, labels: &[u32], outputs: usize) -> Result<Self> {
        let classes = if outputs == 1 { 2 } else { outputs };
        if classes < 2 {
            return Err(EngineError::InvalidConfig(
                "FedLC needs a classifier with at least two classes".into(),
            ));
        }
        let mut counts = vec![0usize; classes];
        for &y in labels {
            let c = counts.get_mut(y as usize).ok_or_else(|| {
                EngineError::Data(format!("label {y} out of range for {classes} classes"))
            })?;
            *c += 1;
        }
        let margin = |n: usize| tau * (n.max(1) as f32).powf(-0.25);
        let offsets = if outputs == 1 {
            vec![margin(counts[1]) - margin(counts[0])]
        } else {
            counts.into_iter().map(margin).collect()
        };
        Ok(Self { offsets })
    }

    /// `logits - offsets` (broadcast over the batch).
    pub fn calibrate(&self, logits: &Tensor) -> Result<Tensor> {
        let width = logits.dim(1)?;
        if width != self.offsets.len() {
            return Err(EngineError::InvalidConfig(format!(
                "FedLC calibration has {} offsets for {width} logits",
                self.offsets.len()
            )));
        }
        let off = Tensor::from_slice(&self.offsets, (1, width), logits.device())?;
        Ok(logits.broadcast_sub(&off)?)
    }
}

impl BatchObjective for LogitCalibration {
    fn loss(&self, out: &ModelOutput, _x: &Tensor, y: &[u32], task: &LossKind) -> Result<Tensor> {
        task.compute(&self.calibrate(&out.logits)?, y)
    }
}

pub struct FedLcClient {
    config: FedLcConfig,
}

impl FedLcClient {
    pub fn new(config: FedLcConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { config })
    }
}

impl super::GlobalClient for FedLcClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        if let Support::No(why) = self.config.task(site.data.train.task()) {
            return Err(EngineError::InvalidConfig(format!("FedLC: {why}")));
        }
        let outputs = site.net.spec().outputs();
        let cal = LogitCalibration::new(self.config.tau, site.data.train.labels(), outputs)?;
        sequential_fit(site, ins, rng, &mut |net, opt, loss, batcher, rng| {
            let (x, y) = batcher.next_batch(rng)?;
            let g = batch_gradient(net, loss, &x, y, Some(&cal), rng)?;
            apply_gradient(net, opt, &g.grads, &[])?;
            Ok(g.task_loss)
        })
    }
}

impl MethodSpec for FedLcConfig {
    fn name(&self) -> &'static str {
        "FedLC"
    }

    fn validate(&self) -> Result<()> {
        if !(self.tau >= 0.0 && self.tau.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "FedLC tau must be finite and >= 0, got {}",
                self.tau
            )));
        }
        Ok(())
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedLcClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No("the DP-SGD step differentiates the plain task loss, not the calibrated one")
    }

    fn task(&self, task: crate::data::Task) -> Support {
        match task {
            crate::data::Task::Classification => Support::Yes,
            _ => Support::No(
                "it calibrates class logits by the site's class counts, so it needs a \
                 classification task",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn scalar(t: &Tensor) -> f32 {
        t.to_scalar::<f32>().unwrap()
    }

    #[test]
    fn calibration_by_hand_for_counts_1_and_16() {
        // n_0 = 1, n_1 = 16, tau = 1: margins 1^{-1/4} = 1 and 16^{-1/4} = 0.5
        let labels: Vec<u32> = std::iter::once(0)
            .chain(std::iter::repeat_n(1, 16))
            .collect();
        let multi = LogitCalibration::new(1.0, &labels, 2).unwrap();
        assert_eq!(&multi.offsets[..], &[1.0, 0.5]);
        let z = Tensor::from_slice(&[0.0f32, 0.0, 2.0, -1.0], (2, 2), &Device::Cpu).unwrap();
        let cal = multi.calibrate(&z).unwrap().to_vec2::<f32>().unwrap();
        assert_eq!(cal, vec![vec![-1.0, -0.5], vec![1.0, -1.5]]);
        // single logit: z' = z - (0.5 - 1) = z + 0.5
        let binary = LogitCalibration::new(1.0, &labels, 1).unwrap();
        assert_eq!(&binary.offsets[..], &[-0.5]);
        let z1 = Tensor::from_slice(&[0.0f32, 2.0], (2, 1), &Device::Cpu).unwrap();
        let cal1 = binary.calibrate(&z1).unwrap().to_vec2::<f32>().unwrap();
        assert_eq!(cal1, vec![vec![0.5], vec![2.5]]);
        // the binary loss equals the two-logit calibrated softmax loss on z = (0, z_1)
        let labels01 = [1u32, 0];
        let bce = LossKind::bce()
            .compute(&binary.calibrate(&z1).unwrap(), &labels01)
            .unwrap();
        let z2 = Tensor::from_slice(&[0.0f32, 0.0, 0.0, 2.0], (2, 2), &Device::Cpu).unwrap();
        let ce = LossKind::CrossEntropy {
            class_weights: None,
        }
        .compute(&multi.calibrate(&z2).unwrap(), &labels01)
        .unwrap();
        assert!((scalar(&bce) - scalar(&ce)).abs() < 1e-6);
    }

    #[test]
    fn absent_class_counts_as_one_and_bad_labels_fail() {
        // counts (0, 16, 1), tau 2: margins 2*1, 2*0.5, 2*1
        let labels: Vec<u32> = std::iter::repeat_n(1, 16).chain([2]).collect();
        let cal = LogitCalibration::new(2.0, &labels, 3).unwrap();
        assert_eq!(&cal.offsets[..], &[2.0, 1.0, 2.0]);
        assert!(LogitCalibration::new(1.0, &[3], 3).is_err());
        assert!(LogitCalibration::new(1.0, &[2], 1).is_err());
        let z = Tensor::zeros((1, 2), candle_core::DType::F32, &Device::Cpu).unwrap();
        assert!(cal.calibrate(&z).is_err());
    }

    #[test]
    fn invalid_tau_rejected() {
        assert!(FedLcClient::new(FedLcConfig { tau: -1.0 }).is_err());
        assert!(FedLcClient::new(FedLcConfig { tau: f32::INFINITY }).is_err());
        assert!(FedLcClient::new(FedLcConfig::default()).is_ok());
    }
}
