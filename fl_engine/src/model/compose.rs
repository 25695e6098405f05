//! Models composed over [`Backbone`]s, with the parameter groups the personalised methods use:
//!
//! * [`BackboneNet`]: `body.*` + linear `out.*` (every method that trains one whole model);
//! * [`BackboneHeadNet`]: `global.*` + `head.out.*` (FedPer, HPFL);
//! * [`BackboneFenda`]: `global.*` + `local.*` + `head.out.*` on the concatenation (FENDA-FL,
//!   PerFCL); the two extractors may read different columns of the row;
//! * [`BackboneApfl`]: twins `global.{body,out}.*` and `local.{body,out}.*` mixed by `alpha`.
use std::sync::atomic::{AtomicU32, Ordering};

use candle_core::{Module, Tensor};
use candle_nn::{linear, Linear, VarBuilder};
use rand_chacha::ChaCha8Rng;

use super::backbone::{Backbone, Body};
use super::{Model, ModelOutput};

pub struct BackboneNet {
    body: Body,
    out: Linear,
}

impl BackboneNet {
    pub fn new(body: &Backbone, outputs: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        Ok(Self {
            body: Body::new(body, vb.pp("body"))?,
            out: linear(body.features(), outputs, vb.pp("out"))?,
        })
    }
}

impl Model for BackboneNet {
    fn forward_features(
        &self,
        xs: &Tensor,
        rng: Option<&mut ChaCha8Rng>,
    ) -> candle_core::Result<ModelOutput> {
        let z = self.body.forward(xs, rng)?;
        Ok(ModelOutput {
            logits: self.out.forward(&z)?,
            features: vec![("hidden", z)],
        })
    }
}

pub struct BackboneHeadNet {
    body: Body,
    head: Linear,
}

impl BackboneHeadNet {
    pub fn new(body: &Backbone, outputs: usize, vb: VarBuilder) -> candle_core::Result<Self> {
        Ok(Self {
            body: Body::new(body, vb.pp("global"))?,
            head: linear(body.features(), outputs, vb.pp("head").pp("out"))?,
        })
    }
}

impl Model for BackboneHeadNet {
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

pub struct BackboneFenda {
    global: Body,
    local: Body,
    head: Linear,
}

impl BackboneFenda {
    pub fn new(
        global: &Backbone,
        local: &Backbone,
        outputs: usize,
        vb: VarBuilder,
    ) -> candle_core::Result<Self> {
        if global.row_width() != local.row_width() {
            candle_core::bail!(
                "FENDA extractors read rows of different widths: {} vs {} (select columns \
                 of one row with a `columns` backbone)",
                global.row_width(),
                local.row_width()
            )
        }
        Ok(Self {
            global: Body::new(global, vb.pp("global"))?,
            local: Body::new(local, vb.pp("local"))?,
            head: linear(
                global.features() + local.features(),
                outputs,
                vb.pp("head").pp("out"),
            )?,
        })
    }
}

impl Model for BackboneFenda {
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

pub struct BackboneApfl {
    global: BackboneNet,
    local: BackboneNet,
    alpha_bits: AtomicU32,
}

impl BackboneApfl {
    pub fn new(
        twin: &Backbone,
        outputs: usize,
        alpha: f32,
        vb: VarBuilder,
    ) -> candle_core::Result<Self> {
        if !(0.0..=1.0).contains(&alpha) {
            candle_core::bail!("APFL alpha must be in [0, 1], got {alpha}")
        }
        Ok(Self {
            global: BackboneNet::new(twin, outputs, vb.pp("global"))?,
            local: BackboneNet::new(twin, outputs, vb.pp("local"))?,
            alpha_bits: AtomicU32::new(alpha.to_bits()),
        })
    }
}

impl Model for BackboneApfl {
    fn forward_features(
        &self,
        xs: &Tensor,
        mut rng: Option<&mut ChaCha8Rng>,
    ) -> candle_core::Result<ModelOutput> {
        let a = f32::from_bits(self.alpha_bits.load(Ordering::Relaxed)) as f64;
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
