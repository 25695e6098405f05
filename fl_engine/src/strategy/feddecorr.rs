//! FedDecorr: federated learning with feature decorrelation against dimensional collapse
//! (Shi et al. 2023, "Towards Understanding and Mitigating Dimensional Collapse in
//! Heterogeneous Federated Learning", ICLR 2023, arXiv:2210.00226).
//!
//! Each site minimises, on every mini-batch of size N with representations `z` (`[N, d]`),
//!
//! ```text
//! L = L_task + beta * ||K||_F^2 / d^2
//! z_hat[:, j] = (z[:, j] - mean_j) / sqrt(var_j + eps)     (mean and variance over the batch)
//! K = z_hat^T z_hat / N                                      (the batch correlation matrix)
//! ```
//!
//! and the server is FedAvg through the configured [`Aggregator`](super::Aggregator).
//! The representation is the model's feature `"hidden"` (last hidden layer of an MLP with
//! hidden layers) or `"global"` (the federated extractor of a HeadNet or FENDA model); other
//! models are refused by `check_model`.
//!
//! Choices the paper leaves open:
//! * the variance is the biased batch variance (divide by N), so `K` is exactly the sample
//!   correlation matrix (diagonal 1 up to eps); `eps = 1e-8` as in the authors' code. A
//!   constant dimension (e.g. a dead ReLU unit) is 0 after standardisation and adds nothing;
//! * the diagonal is kept, as in the paper's formula (it is constant up to eps, so it shifts
//!   the loss but hardly the gradient; the authors' code drops it and rescales by N);
//! * a batch with fewer than 2 rows (the short last batch of a pass) has no correlation: the
//!   term is skipped and the step uses the task loss alone;
//! * default `beta = 0.1` (the paper's range is 0.01 to 0.1).
//!
//! Record-level DP is refused: the term couples every example of the batch (one record moves
//! the mean, the variance and every entry of K), so it does not decompose per example.
use candle_core::Tensor;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::fedsam::sequential_fit;
use super::methods::check_train;
use super::{ClientStrategy, FitIns, FitRes, MethodSpec, Site, Support};
use crate::error::{EngineError, Result};
use crate::model::{ModelOutput, ModelSpec};
use crate::train::{apply_gradient, batch_gradient, BatchObjective, LossKind};

/// Variance floor of the standardisation (the authors' code uses 1e-8).
const EPS: f64 = 1e-8;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FedDecorrConfig {
    /// Weight `beta` of the decorrelation term (default 0.1).
    pub beta: f32,
}

impl Default for FedDecorrConfig {
    fn default() -> Self {
        Self { beta: 0.1 }
    }
}

/// `||K||_F^2 / d^2` of the batch representations `z` (`[N, d]`, N >= 2).
pub fn decorrelation_loss(z: &Tensor) -> Result<Tensor> {
    let (n, d) = z.dims2()?;
    if n < 2 || d == 0 {
        return Err(EngineError::InvalidConfig(format!(
            "decorrelation needs at least 2 rows and 1 column, got [{n}, {d}]"
        )));
    }
    let centred = z.broadcast_sub(&z.mean_keepdim(0)?)?;
    let var = centred.sqr()?.mean_keepdim(0)?;
    let zhat = centred.broadcast_div(&(var + EPS)?.sqrt()?)?;
    let k = (zhat.t()?.matmul(&zhat)? / n as f64)?;
    Ok((k.sqr()?.sum_all()? / (d * d) as f64)?)
}

/// Name of the representation FedDecorr regularises for `spec`, if it has one.
fn representation(spec: &ModelSpec) -> Option<&'static str> {
    match spec {
        ModelSpec::Mlp(c) if !c.hidden.is_empty() && c.outputs > 0 => Some("hidden"),
        ModelSpec::HeadNet { .. }
        | ModelSpec::Fenda { .. }
        | ModelSpec::BackboneHeadNet { .. }
        | ModelSpec::BackboneFenda { .. } => Some("global"),
        ModelSpec::BackboneNet { .. } => Some("hidden"),
        _ => None,
    }
}

/// Task loss plus `beta` times the decorrelation of one named representation.
pub struct Decorrelation {
    pub beta: f32,
    pub feature: &'static str,
}

impl BatchObjective for Decorrelation {
    fn loss(&self, out: &ModelOutput, _x: &Tensor, y: &[u32], task: &LossKind) -> Result<Tensor> {
        let base = task.compute(&out.logits, y)?;
        let z = out.feature(self.feature).ok_or_else(|| {
            EngineError::InvalidConfig(format!(
                "FedDecorr: the model has no `{}` representation",
                self.feature
            ))
        })?;
        if z.dim(0)? < 2 {
            return Ok(base);
        }
        Ok((base + (decorrelation_loss(z)? * self.beta as f64)?)?)
    }
}

pub struct FedDecorrClient {
    config: FedDecorrConfig,
}

impl FedDecorrClient {
    pub fn new(config: FedDecorrConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { config })
    }
}

impl super::GlobalClient for FedDecorrClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        let feature = representation(site.net.spec()).ok_or_else(|| {
            EngineError::InvalidConfig(
                "FedDecorr needs a model with a hidden representation (an MLP with hidden \
                 layers, a HeadNet or a FENDA model)"
                    .into(),
            )
        })?;
        let objective = Decorrelation {
            beta: self.config.beta,
            feature,
        };
        sequential_fit(site, ins, rng, &mut |net, opt, loss, batcher, rng| {
            let (x, y) = batcher.next_batch(rng)?;
            let g = batch_gradient(net, loss, &x, y, Some(&objective), rng)?;
            apply_gradient(net, opt, &g.grads, &[])?;
            Ok(g.task_loss)
        })
    }
}

impl MethodSpec for FedDecorrConfig {
    fn name(&self) -> &'static str {
        "FedDecorr"
    }

    fn validate(&self) -> Result<()> {
        if !(self.beta >= 0.0 && self.beta.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "FedDecorr beta must be finite and >= 0, got {}",
                self.beta
            )));
        }
        Ok(())
    }

    fn check_model(&self, spec: &ModelSpec) -> Result<()> {
        match representation(spec) {
            Some(_) => Ok(()),
            None => Err(EngineError::InvalidConfig(
                "FedDecorr regularises a hidden representation: use an MLP with hidden layers \
                 and an output layer, a HeadNet or a FENDA model"
                    .into(),
            )),
        }
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedDecorrClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No("the decorrelation term couples all examples of a batch and does not decompose")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MlpConfig;
    use candle_core::Device;

    fn value(rows: &[[f32; 2]]) -> f32 {
        let flat: Vec<f32> = rows.iter().flatten().copied().collect();
        let z = Tensor::from_vec(flat, (rows.len(), 2), &Device::Cpu).unwrap();
        decorrelation_loss(&z).unwrap().to_scalar::<f32>().unwrap()
    }

    #[test]
    fn decorrelation_by_hand() {
        // second column = 2 * first + 1: correlation 1, K = [[1, 1], [1, 1]], ||K||^2 / 4 = 1
        assert!((value(&[[0.0, 1.0], [1.0, 3.0], [2.0, 5.0]]) - 1.0).abs() < 1e-5);
        // perfectly anti-correlated: K = [[1, -1], [-1, 1]], again 1
        assert!((value(&[[0.0, 1.0], [1.0, -1.0]]) - 1.0).abs() < 1e-5);
        // centred columns (-1, 1, -1, 1) and (-1, -1, 1, 1) are uncorrelated: K = I,
        // ||K||^2 / 4 = 2 / 4 = 0.5
        let unc = value(&[[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]]);
        assert!((unc - 0.5).abs() < 1e-5, "{unc}");
        // a constant column standardises to 0: K = diag(1, 0), 1 / 4
        assert!((value(&[[0.0, 7.0], [2.0, 7.0]]) - 0.25).abs() < 1e-5);
        let one_row = Tensor::zeros((1, 2), candle_core::DType::F32, &Device::Cpu).unwrap();
        assert!(decorrelation_loss(&one_row).is_err());
    }

    #[test]
    fn objective_adds_beta_times_the_term_and_skips_single_rows() {
        let dev = Device::Cpu;
        let logits = Tensor::zeros((3, 1), candle_core::DType::F32, &dev).unwrap();
        let z = Tensor::from_vec(vec![0.0f32, 1.0, 1.0, 3.0, 2.0, 5.0], (3, 2), &dev).unwrap();
        let out = ModelOutput {
            logits: logits.clone(),
            features: vec![("hidden", z)],
        };
        let obj = Decorrelation {
            beta: 0.5,
            feature: "hidden",
        };
        // BCE at logit 0 is ln 2 for either label; plus 0.5 * 1
        let l = obj
            .loss(&out, &logits, &[0, 1, 1], &LossKind::bce())
            .unwrap();
        let l = l.to_scalar::<f32>().unwrap();
        assert!((l - (std::f32::consts::LN_2 + 0.5)).abs() < 1e-5, "{l}");
        let single = ModelOutput {
            logits: Tensor::zeros((1, 1), candle_core::DType::F32, &dev).unwrap(),
            features: vec![(
                "hidden",
                Tensor::ones((1, 2), candle_core::DType::F32, &dev).unwrap(),
            )],
        };
        let l1 = obj.loss(&single, &logits, &[1], &LossKind::bce()).unwrap();
        assert!((l1.to_scalar::<f32>().unwrap() - std::f32::consts::LN_2).abs() < 1e-6);
    }

    #[test]
    fn models_without_a_representation_and_bad_beta_are_refused() {
        let cfg = FedDecorrConfig::default();
        assert!(cfg.check_model(&ModelSpec::logistic(4, 1)).is_err());
        let mlp = ModelSpec::Mlp(MlpConfig {
            inputs: 4,
            hidden: vec![3],
            outputs: 1,
            dropout: 0.0,
        });
        assert!(cfg.check_model(&mlp).is_ok());
        let body = MlpConfig {
            inputs: 4,
            hidden: vec![3],
            outputs: 0,
            dropout: 0.0,
        };
        let head = ModelSpec::HeadNet { body, outputs: 1 };
        assert!(cfg.check_model(&head).is_ok());
        assert!(FedDecorrClient::new(FedDecorrConfig { beta: -0.1 }).is_err());
    }
}
