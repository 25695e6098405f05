//! Multi-layer perceptron: `fc0 .. fc{n-1}` hidden layers with ReLU and (inverted) dropout,
//! then an optional linear output layer `out`.
//!
//! `outputs == 0` makes it a feature extractor (the output is the last hidden activation),
//! which is how FedPer and FENDA-FL use it. With no hidden layers it is logistic regression:
//! `logits = x W^T + b`.
use candle_core::Tensor;
use candle_nn::{linear, VarBuilder};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::fused::Dense;
use super::{dropout_mask, Model, ModelOutput};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MlpConfig {
    pub inputs: usize,
    pub hidden: Vec<usize>,
    /// 0 = no output layer (feature extractor).
    pub outputs: usize,
    /// Dropout probability after each hidden activation.
    pub dropout: f32,
}

impl MlpConfig {
    /// Width of what `forward` returns.
    pub fn features(&self) -> usize {
        if self.outputs > 0 {
            self.outputs
        } else {
            self.hidden.last().copied().unwrap_or(self.inputs)
        }
    }
}

pub struct Mlp {
    hidden: Vec<Dense>,
    out: Option<Dense>,
    dropout: f32,
}

impl Mlp {
    pub fn new(cfg: &MlpConfig, vb: VarBuilder) -> candle_core::Result<Self> {
        if !(0.0..1.0).contains(&cfg.dropout) {
            candle_core::bail!("dropout must be in [0, 1), got {}", cfg.dropout)
        }
        let mut hidden = Vec::with_capacity(cfg.hidden.len());
        let mut width = cfg.inputs;
        for (i, &h) in cfg.hidden.iter().enumerate() {
            hidden.push(Dense::new(linear(width, h, vb.pp(format!("fc{i}")))?));
            width = h;
        }
        let out = if cfg.outputs > 0 {
            Some(Dense::new(linear(width, cfg.outputs, vb.pp("out"))?))
        } else {
            None
        };
        Ok(Self {
            hidden,
            out,
            dropout: cfg.dropout,
        })
    }
}

impl Mlp {
    /// Output of the last hidden layer (the input itself without hidden layers).
    fn hidden_forward(
        &self,
        xs: &Tensor,
        mut rng: Option<&mut ChaCha8Rng>,
    ) -> candle_core::Result<Tensor> {
        let mut h = xs.clone();
        for layer in &self.hidden {
            let (rows, width) = (h.dim(0)?, layer.outputs());
            let mask = dropout_mask(&[rows, width], self.dropout, rng.as_deref_mut(), h.device())?;
            h = layer.forward(&h, true, mask.as_ref())?;
        }
        Ok(h)
    }
}

impl Model for Mlp {
    fn forward(&self, xs: &Tensor, rng: Option<&mut ChaCha8Rng>) -> candle_core::Result<Tensor> {
        let h = self.hidden_forward(xs, rng)?;
        match &self.out {
            Some(out) => out.forward(&h, false, None),
            None => Ok(h),
        }
    }

    fn forward_features(
        &self,
        xs: &Tensor,
        rng: Option<&mut ChaCha8Rng>,
    ) -> candle_core::Result<ModelOutput> {
        let h = self.hidden_forward(xs, rng)?;
        let (logits, features) = match &self.out {
            Some(out) if !self.hidden.is_empty() => {
                (out.forward(&h, false, None)?, vec![("hidden", h)])
            }
            Some(out) => (out.forward(&h, false, None)?, vec![]),
            None => (h, vec![]),
        };
        Ok(ModelOutput { logits, features })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelSpec, Net};
    use candle_core::Device;
    use rand::SeedableRng;

    #[test]
    fn names_and_shapes_follow_the_config() {
        let cfg = MlpConfig {
            inputs: 3,
            hidden: vec![4, 2],
            outputs: 2,
            dropout: 0.5,
        };
        let p = Net::new(&ModelSpec::Mlp(cfg), 0)
            .unwrap()
            .parameters()
            .unwrap();
        let names: Vec<_> = p.names().collect();
        assert_eq!(
            names,
            vec![
                "fc0.bias",
                "fc0.weight",
                "fc1.bias",
                "fc1.weight",
                "out.bias",
                "out.weight"
            ]
        );
        assert_eq!(p.get("fc1.weight").unwrap().shape, vec![2, 4]);
    }

    #[test]
    fn dropout_only_in_training_mode_and_seeded() {
        let cfg = MlpConfig {
            inputs: 3,
            hidden: vec![64],
            outputs: 1,
            dropout: 0.5,
        };
        let net = Net::new(&ModelSpec::Mlp(cfg), 0).unwrap();
        let x = Tensor::ones((2, 3), candle_core::DType::F32, &Device::Cpu).unwrap();
        let eval1 = net
            .forward(&x, None)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let eval2 = net
            .forward(&x, None)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        assert_eq!(eval1, eval2);
        let mut r1 = ChaCha8Rng::seed_from_u64(3);
        let mut r2 = ChaCha8Rng::seed_from_u64(3);
        let t1 = net
            .forward(&x, Some(&mut r1))
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let t2 = net
            .forward(&x, Some(&mut r2))
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        assert_eq!(t1, t2);
        assert_ne!(t1, eval1);
    }

    #[test]
    fn invalid_dropout_is_an_error() {
        let cfg = MlpConfig {
            inputs: 3,
            hidden: vec![4],
            outputs: 1,
            dropout: 1.0,
        };
        assert!(Net::new(&ModelSpec::Mlp(cfg), 0).is_err());
    }
}
