//! Models as named parameter sets on candle.
//!
//! Every model is built from a `candle_nn::VarBuilder` over a `VarMap`, with `pp` prefixes
//! that strategies rely on: `global.` is the part a personalised method federates,
//! `local.` and `head.` stay at the site. A [`Net`] bundles the `VarMap` with the module
//! so training, loading a `ParameterSet` and snapshotting all address the same variables.
//!
//! Initialisation follows PyTorch's `nn.Linear` default (weights and biases uniform in
//! +-1/sqrt(fan_in)) but draws from a seeded ChaCha stream in sorted-name order: candle's
//! own `Init` samples from a thread RNG, which would make runs irreproducible.
mod apfl;
mod fenda;
mod mlp;

use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{VarBuilder, VarMap};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use apfl::ApflTwins;
pub use fenda::{Fenda, HeadNet};
pub use mlp::{Mlp, MlpConfig};

use crate::error::{EngineError, Result};
use crate::params::ParameterSet;

/// Logits together with the named intermediate representations a method may put a loss on
/// (MOON's and PerFCL's contrastive terms, FedDecorr's decorrelation).
pub struct ModelOutput {
    /// `[batch, outputs]`.
    pub logits: Tensor,
    /// `(name, [batch, width])`: `"global"` / `"local"` extractor outputs of split models,
    /// `"hidden"` for the last hidden layer of an MLP. Empty for models without any.
    pub features: Vec<(&'static str, Tensor)>,
}

impl ModelOutput {
    pub fn feature(&self, name: &str) -> Option<&Tensor> {
        self.features
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t)
    }
}

/// A network mapping `[batch, inputs]` to logits `[batch, outputs]`.
pub trait Model: Send + Sync {
    /// `rng` is `Some` in training mode (dropout active, masks drawn from it).
    fn forward(&self, xs: &Tensor, rng: Option<&mut ChaCha8Rng>) -> candle_core::Result<Tensor> {
        Ok(self.forward_features(xs, rng)?.logits)
    }

    /// Logits and named representations in one pass.
    fn forward_features(
        &self,
        xs: &Tensor,
        rng: Option<&mut ChaCha8Rng>,
    ) -> candle_core::Result<ModelOutput>;

    /// Mixing weight for twin models (APFL); ignored by single models.
    fn set_mixing(&self, _alpha: f32) {}
}

/// Architecture description: enough to rebuild the same variable names and shapes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ModelSpec {
    /// A plain MLP; with no hidden layers this is logistic/softmax regression.
    Mlp(MlpConfig),
    /// Feature extractor under `global.`, linear head under `head.` (FedPer).
    HeadNet { body: MlpConfig, outputs: usize },
    /// Global extractor `global.`, local extractor `local.`, head `head.` on the concatenation.
    Fenda {
        global: MlpConfig,
        local: MlpConfig,
        outputs: usize,
    },
    /// Global twin `global.` and local twin `local.`, output mixed by `alpha`.
    Apfl { twin: MlpConfig, alpha: f32 },
}

impl ModelSpec {
    /// Logistic regression (`outputs == 1`) or softmax regression.
    pub fn logistic(inputs: usize, outputs: usize) -> Self {
        ModelSpec::Mlp(MlpConfig {
            inputs,
            hidden: vec![],
            outputs,
            dropout: 0.0,
        })
    }

    /// Number of logits per example.
    pub fn outputs(&self) -> usize {
        match self {
            ModelSpec::Mlp(c) | ModelSpec::Apfl { twin: c, .. } => c.outputs,
            ModelSpec::HeadNet { outputs, .. } | ModelSpec::Fenda { outputs, .. } => *outputs,
        }
    }

    fn build(&self, vb: VarBuilder) -> candle_core::Result<Box<dyn Model>> {
        Ok(match self {
            ModelSpec::Mlp(c) => Box::new(Mlp::new(c, vb)?),
            ModelSpec::HeadNet { body, outputs } => Box::new(HeadNet::new(body, *outputs, vb)?),
            ModelSpec::Fenda {
                global,
                local,
                outputs,
            } => Box::new(Fenda::new(global, local, *outputs, vb)?),
            ModelSpec::Apfl { twin, alpha } => Box::new(ApflTwins::new(twin, *alpha, vb)?),
        })
    }
}

/// A built model together with its variables.
pub struct Net {
    spec: ModelSpec,
    varmap: VarMap,
    model: Box<dyn Model>,
    vars: Vec<(String, Var)>,
}

impl Net {
    /// Build on the CPU with seeded PyTorch-style initialisation.
    pub fn new(spec: &ModelSpec, seed: u64) -> Result<Net> {
        let device = Device::Cpu;
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
        let model = spec.build(vb)?;
        let net = Net::from_parts(spec.clone(), varmap, model)?;
        net.load(&seeded_init(&net.parameters()?, seed)?)?;
        Ok(net)
    }

    /// Build and then load `params` (which must cover every variable).
    pub fn with_parameters(spec: &ModelSpec, params: &ParameterSet) -> Result<Net> {
        let net = Net::new(spec, 0)?;
        net.parameters()?.check_compatible(params)?;
        net.load(params)?;
        Ok(net)
    }

    fn from_parts(spec: ModelSpec, varmap: VarMap, model: Box<dyn Model>) -> Result<Net> {
        let mut vars: Vec<(String, Var)> = {
            let data = varmap
                .data()
                .lock()
                .map_err(|_| EngineError::InvalidConfig("poisoned".into()))?;
            data.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Net {
            spec,
            varmap,
            model,
            vars,
        })
    }

    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    pub fn varmap(&self) -> &VarMap {
        &self.varmap
    }

    /// Variables in canonical (sorted) name order.
    pub fn vars(&self) -> &[(String, Var)] {
        &self.vars
    }

    pub fn forward(&self, xs: &Tensor, rng: Option<&mut ChaCha8Rng>) -> Result<Tensor> {
        Ok(self.model.forward(xs, rng)?)
    }

    /// Logits and the model's named representations (see [`ModelOutput`]).
    pub fn forward_features(
        &self,
        xs: &Tensor,
        rng: Option<&mut ChaCha8Rng>,
    ) -> Result<ModelOutput> {
        Ok(self.model.forward_features(xs, rng)?)
    }

    pub fn set_mixing(&self, alpha: f32) {
        self.model.set_mixing(alpha)
    }

    /// Snapshot of every parameter.
    pub fn parameters(&self) -> Result<ParameterSet> {
        ParameterSet::from_varmap(&self.varmap)
    }

    /// Overwrite the parameters named in `params` (a subset is fine; unknown names or
    /// wrong shapes are rejected before anything changes).
    pub fn load(&self, params: &ParameterSet) -> Result<()> {
        params.ensure_finite()?;
        params.write_to_varmap(&self.varmap)
    }

    /// An independent copy with the same parameters.
    pub fn duplicate(&self) -> Result<Net> {
        Net::with_parameters(&self.spec, &self.parameters()?)
    }
}

/// PyTorch `nn.Linear` default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for `*.weight` of shape
/// `[out, in]` and for the matching `*.bias`.
fn seeded_init(template: &ParameterSet, seed: u64) -> Result<ParameterSet> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = template.clone();
    let fan_in = |name: &str| -> Option<usize> {
        let stem = name
            .strip_suffix("bias")
            .or_else(|| name.strip_suffix("weight"))?;
        template
            .get(&format!("{stem}weight"))
            .and_then(|w| w.shape.get(1).copied())
    };
    let fans: Vec<Option<usize>> = template.names().map(fan_in).collect();
    for ((name, t), fan) in out.iter_mut().zip(fans) {
        let fan = fan.ok_or_else(|| {
            EngineError::InvalidConfig(format!("cannot infer fan-in of `{name}`"))
        })?;
        let bound = 1.0 / (fan.max(1) as f32).sqrt();
        t.values
            .iter_mut()
            .for_each(|v| *v = rng.gen_range(-bound..bound));
    }
    Ok(out)
}

/// Inverted dropout with a mask from the caller's seeded stream.
pub(crate) fn dropout(
    xs: &Tensor,
    p: f32,
    rng: Option<&mut ChaCha8Rng>,
) -> candle_core::Result<Tensor> {
    match rng {
        Some(rng) if p > 0.0 => {
            let keep = 1.0 - p;
            let mask: Vec<f32> = (0..xs.elem_count())
                .map(|_| {
                    if rng.gen::<f32>() < keep {
                        1.0 / keep
                    } else {
                        0.0
                    }
                })
                .collect();
            xs.mul(&Tensor::from_vec(mask, xs.shape(), xs.device())?)
        }
        _ => Ok(xs.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_counts_match_the_published_heart_disease_models() {
        let lr = Net::new(&ModelSpec::logistic(13, 1), 0).unwrap();
        assert_eq!(lr.parameters().unwrap().num_values(), 14);
        let body = |h: usize| MlpConfig {
            inputs: 13,
            hidden: vec![h],
            outputs: 0,
            dropout: 0.0,
        };
        let fedper = Net::new(
            &ModelSpec::HeadNet {
                body: body(10),
                outputs: 1,
            },
            0,
        )
        .unwrap();
        assert_eq!(fedper.parameters().unwrap().num_values(), 151);
        let fenda = ModelSpec::Fenda {
            global: body(5),
            local: body(5),
            outputs: 1,
        };
        let p = Net::new(&fenda, 0).unwrap().parameters().unwrap();
        assert_eq!(p.num_values(), 151);
        assert!(p.names().all(|n| n.starts_with("global.")
            || n.starts_with("local.")
            || n.starts_with("head.")));
    }

    #[test]
    fn init_is_seeded_and_within_pytorch_bounds() {
        let spec = ModelSpec::logistic(4, 1);
        let a = Net::new(&spec, 7).unwrap().parameters().unwrap();
        let b = Net::new(&spec, 7).unwrap().parameters().unwrap();
        let c = Net::new(&spec, 8).unwrap().parameters().unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.to_flat().iter().all(|v| v.abs() <= 0.5));
    }

    #[test]
    fn load_changes_forward_and_rejects_non_finite() {
        let net = Net::new(&ModelSpec::logistic(2, 1), 1).unwrap();
        let mut p = net.parameters().unwrap();
        p.insert("out.weight", vec![1, 2], vec![1.0, 2.0]).unwrap();
        p.insert("out.bias", vec![1], vec![0.5]).unwrap();
        net.load(&p).unwrap();
        let x = Tensor::from_slice(&[1.0f32, 1.0], (1, 2), &Device::Cpu).unwrap();
        let y = net
            .forward(&x, None)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        assert_eq!(y, vec![3.5]);
        p.insert("out.bias", vec![1], vec![f32::INFINITY]).unwrap();
        assert!(net.load(&p).is_err());
    }
}
