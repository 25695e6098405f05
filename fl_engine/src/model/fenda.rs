//! Split architectures for personalised FL.
//!
//! * FedPer (Arivazhagan et al. 2019, arXiv:1912.00818): `HeadNet` = feature extractor under
//!   `global.` (federated) + linear head under `head.` (kept at the site).
//! * FENDA-FL (Tyler et al. 2023, arXiv:2309.16825): global extractor f_w under `global.`,
//!   local extractor f_wk under `local.`, head g under `head.` on the concatenation
//!   `g([f_w(x); f_wk(x)])`. Only `global.` is ever averaged.
use candle_core::{Module, Tensor};
use candle_nn::{linear, Linear, VarBuilder};
use rand_chacha::ChaCha8Rng;

use super::{Mlp, MlpConfig, Model, ModelOutput};

fn extractor(cfg: &MlpConfig, vb: VarBuilder) -> candle_core::Result<(Mlp, usize)> {
    // The extractor never has its own output layer: its features feed the head.
    let body = MlpConfig {
        outputs: 0,
        ..cfg.clone()
    };
    Ok((Mlp::new(&body, vb)?, body.features()))
}

pub struct HeadNet {
    body: Mlp,
    head: Linear,
}

impl HeadNet {
    pub fn new(body: &MlpConfig, outputs: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        let (body, width) = extractor(body, vb.pp("global"))?;
        let head = linear(width, outputs, vb.pp("head").pp("out"))?;
        Ok(Self { body, head })
    }
}

impl Model for HeadNet {
    fn forward_features(
        &self,
        xs: &Tensor,
        rng: Option<&mut ChaCha8Rng>,
    ) -> candle_core::Result<ModelOutput> {
        let z = self.body.forward(xs, rng)?;
        Ok(ModelOutput {
            logits: self.head.forward(&z)?,
            features: vec![("global", z)],
        })
    }
}

pub struct Fenda {
    global: Mlp,
    local: Mlp,
    head: Linear,
}

impl Fenda {
    pub fn new(
        global: &MlpConfig,
        local: &MlpConfig,
        outputs: usize,
        vb: VarBuilder,
    ) -> candle_core::Result<Self> {
        if global.inputs != local.inputs {
            candle_core::bail!(
                "FENDA extractors disagree on input width: {} vs {}",
                global.inputs,
                local.inputs
            )
        }
        let (g, gw) = extractor(global, vb.pp("global"))?;
        let (l, lw) = extractor(local, vb.pp("local"))?;
        let head = linear(gw + lw, outputs, vb.pp("head").pp("out"))?;
        Ok(Self {
            global: g,
            local: l,
            head,
        })
    }
}

impl Model for Fenda {
    fn forward_features(
        &self,
        xs: &Tensor,
        mut rng: Option<&mut ChaCha8Rng>,
    ) -> candle_core::Result<ModelOutput> {
        let g = self.global.forward(xs, rng.as_deref_mut())?;
        let l = self.local.forward(xs, rng)?;
        Ok(ModelOutput {
            logits: self.head.forward(&Tensor::cat(&[&g, &l], 1)?)?,
            features: vec![("global", g), ("local", l)],
        })
    }
}
