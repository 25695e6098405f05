//! APFL twins (Deng et al. 2020, arXiv:2003.13461): a global model under `global.`
//! (federated) and a local model under `local.`; the personalised prediction mixes the
//! outputs, `alpha * local(x) + (1 - alpha) * global(x)`, with `alpha` learnt per site.
//!
//! `alpha` is not a gradient-trained variable (it has its own projected update rule), so it
//! lives outside the `VarMap` and is set through [`Model::set_mixing`].
use std::sync::atomic::{AtomicU32, Ordering};

use candle_core::Tensor;
use candle_nn::VarBuilder;
use rand_chacha::ChaCha8Rng;

use super::{Mlp, MlpConfig, Model, ModelOutput};

pub struct ApflTwins {
    global: Mlp,
    local: Mlp,
    alpha_bits: AtomicU32,
}

impl ApflTwins {
    pub fn new(twin: &MlpConfig, alpha: f32, vb: VarBuilder) -> candle_core::Result<Self> {
        if !(0.0..=1.0).contains(&alpha) {
            candle_core::bail!("APFL alpha must be in [0, 1], got {alpha}")
        }
        Ok(Self {
            global: Mlp::new(twin, vb.pp("global"))?,
            local: Mlp::new(twin, vb.pp("local"))?,
            alpha_bits: AtomicU32::new(alpha.to_bits()),
        })
    }

    pub fn alpha(&self) -> f32 {
        f32::from_bits(self.alpha_bits.load(Ordering::Relaxed))
    }
}

impl Model for ApflTwins {
    /// Features: the twins' own logits, `"global"` and `"local"` (APFL trains the global twin
    /// on its own output and the local twin through the mixture).
    fn forward_features(
        &self,
        xs: &Tensor,
        mut rng: Option<&mut ChaCha8Rng>,
    ) -> candle_core::Result<ModelOutput> {
        let a = self.alpha() as f64;
        let g = self.global.forward(xs, rng.as_deref_mut())?;
        let l = self.local.forward(xs, rng)?;
        Ok(ModelOutput {
            logits: (l.affine(a, 0.0)? + g.affine(1.0 - a, 0.0)?)?,
            features: vec![("global", g), ("local", l)],
        })
    }

    fn set_mixing(&self, alpha: f32) {
        self.alpha_bits
            .store(alpha.clamp(0.0, 1.0).to_bits(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{MlpConfig, ModelSpec, Net};
    use candle_core::{Device, Tensor};

    #[test]
    fn mixing_interpolates_between_twins() {
        let twin = MlpConfig {
            inputs: 2,
            hidden: vec![],
            outputs: 1,
            dropout: 0.0,
        };
        let net = Net::new(&ModelSpec::Apfl { twin, alpha: 0.5 }, 0).unwrap();
        let mut p = net.parameters().unwrap();
        p.insert("global.out.weight", vec![1, 2], vec![1.0, 0.0])
            .unwrap();
        p.insert("global.out.bias", vec![1], vec![0.0]).unwrap();
        p.insert("local.out.weight", vec![1, 2], vec![0.0, 1.0])
            .unwrap();
        p.insert("local.out.bias", vec![1], vec![0.0]).unwrap();
        net.load(&p).unwrap();
        let x = Tensor::from_slice(&[2.0f32, 4.0], (1, 2), &Device::Cpu).unwrap();
        let out = |n: &Net| {
            n.forward(&x, None)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap()[0]
        };
        assert_eq!(out(&net), 3.0);
        net.set_mixing(1.0);
        assert_eq!(out(&net), 4.0);
        net.set_mixing(0.0);
        assert_eq!(out(&net), 2.0);
    }
}
