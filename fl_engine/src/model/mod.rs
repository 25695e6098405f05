//! Models as named parameter sets on candle.
//!
//! Every model is built from a `candle_nn::VarBuilder` over a `VarMap`, with `pp` prefixes
//! that strategies rely on: `global.` is the part a personalised method federates,
//! `local.` and `head.` stay at the site. A [`Net`] bundles the `VarMap` with the module
//! so training, loading a `ParameterSet` and snapshotting all address the same variables.
//!
//! Initialisation follows PyTorch's defaults (`nn.Linear` / `nn.Conv2d`: weights and biases
//! uniform in +-1/sqrt(fan_in); `nn.GRU` / `nn.LSTM`: +-1/sqrt(hidden); norm scales 1, shifts
//! 0) but draws from a seeded ChaCha stream in sorted-name order: candle's own `Init` samples
//! from a thread RNG, which would make runs irreproducible.
//!
//! The legacy variants (`Mlp`, `HeadNet`, `Fenda`, `Apfl`) are MLPs over `[batch, inputs]`;
//! the `Backbone*` variants compose any [`Backbone`] (normalised MLP, GRU/LSTM over a masked
//! series, LSTM + static fusion, ResNet-style CNN, column selections) with the same parameter
//! groups. Every model reads flat rows; [`ModelSpec::inputs`] is their width.
mod activation;
mod apfl;
mod backbone;
mod backward;
mod compose;
mod conv;
mod fenda;
mod fused;
mod mlp;
mod recurrent;
mod spare;

use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{VarBuilder, VarMap};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use apfl::ApflTwins;
pub use backbone::{
    Backbone, Cell, CnnConfig, ColumnRange, MaskLayout, Norm, Readout, SeqConfig,
    MAX_RECURRENT_LAYERS,
};
pub use backward::backward;
pub use compose::{BackboneApfl, BackboneFenda, BackboneHeadNet, BackboneNet};
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
    /// A [`Backbone`] (`body.`) with a linear output layer `out.`.
    BackboneNet { body: Backbone, outputs: usize },
    /// FedPer / HPFL over a backbone: extractor `global.`, linear head `head.out.`.
    BackboneHeadNet { body: Backbone, outputs: usize },
    /// FENDA-FL over backbones: `global.` and `local.` extractors (which may read different
    /// columns of the row), linear head `head.out.` on the concatenation.
    BackboneFenda {
        global: Backbone,
        local: Backbone,
        outputs: usize,
    },
    /// APFL twins `global.` and `local.`, each a backbone `body.` with output layer `out.`.
    BackboneApfl {
        twin: Backbone,
        outputs: usize,
        alpha: f32,
    },
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
            ModelSpec::HeadNet { outputs, .. }
            | ModelSpec::Fenda { outputs, .. }
            | ModelSpec::BackboneNet { outputs, .. }
            | ModelSpec::BackboneHeadNet { outputs, .. }
            | ModelSpec::BackboneFenda { outputs, .. }
            | ModelSpec::BackboneApfl { outputs, .. } => *outputs,
        }
    }

    /// Width of the flat rows the model reads (the dataset's `n_features`).
    pub fn inputs(&self) -> usize {
        match self {
            ModelSpec::Mlp(c)
            | ModelSpec::HeadNet { body: c, .. }
            | ModelSpec::Fenda { global: c, .. }
            | ModelSpec::Apfl { twin: c, .. } => c.inputs,
            ModelSpec::BackboneNet { body: b, .. }
            | ModelSpec::BackboneHeadNet { body: b, .. }
            | ModelSpec::BackboneFenda { global: b, .. }
            | ModelSpec::BackboneApfl { twin: b, .. } => b.row_width(),
        }
    }

    /// Number of trainable values, as PyTorch's `sum(p.numel() for p in model.parameters())`:
    /// every variable except site-local state (BatchNorm running statistics, which PyTorch
    /// keeps as buffers). Computed by building the model's variables.
    pub fn parameter_count(&self) -> Result<usize> {
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
        self.build(vb)?;
        let data = varmap
            .data()
            .lock()
            .map_err(|_| EngineError::InvalidConfig("poisoned".into()))?;
        Ok(data
            .iter()
            .filter(|(name, _)| !crate::params::is_site_local_state(name))
            .map(|(_, v)| v.elem_count())
            .sum())
    }

    /// Whether the model can be built (positive widths, norm groups dividing their widths,
    /// column ranges inside the row, FENDA extractors reading the same row, ...).
    pub fn validate(&self) -> Result<()> {
        self.parameter_count().map(|_| ())
    }

    /// A FedPer-style split: extractor `global.`, head `head.` (HPFL, FedPer).
    pub fn is_head_net(&self) -> bool {
        matches!(
            self,
            ModelSpec::HeadNet { .. } | ModelSpec::BackboneHeadNet { .. }
        )
    }

    /// A FENDA split: `global.` and `local.` extractors, head `head.`.
    pub fn is_fenda(&self) -> bool {
        matches!(
            self,
            ModelSpec::Fenda { .. } | ModelSpec::BackboneFenda { .. }
        )
    }

    /// Feature widths of the global and local extractors of a FENDA split.
    pub fn fenda_widths(&self) -> Option<(usize, usize)> {
        match self {
            ModelSpec::Fenda { global, local, .. } => Some((
                global.hidden.last().copied().unwrap_or(global.inputs),
                local.hidden.last().copied().unwrap_or(local.inputs),
            )),
            ModelSpec::BackboneFenda { global, local, .. } => {
                Some((global.features(), local.features()))
            }
            _ => None,
        }
    }

    /// The same APFL twins with mixing weight `alpha`; `None` for models that are not twins.
    pub fn with_alpha(&self, alpha: f32) -> Option<ModelSpec> {
        match self {
            ModelSpec::Apfl { twin, .. } => Some(ModelSpec::Apfl {
                twin: twin.clone(),
                alpha,
            }),
            ModelSpec::BackboneApfl { twin, outputs, .. } => Some(ModelSpec::BackboneApfl {
                twin: twin.clone(),
                outputs: *outputs,
                alpha,
            }),
            _ => None,
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
            ModelSpec::BackboneNet { body, outputs } => {
                Box::new(BackboneNet::new(body, *outputs, vb)?)
            }
            ModelSpec::BackboneHeadNet { body, outputs } => {
                Box::new(BackboneHeadNet::new(body, *outputs, vb)?)
            }
            ModelSpec::BackboneFenda {
                global,
                local,
                outputs,
            } => Box::new(BackboneFenda::new(global, local, *outputs, vb)?),
            ModelSpec::BackboneApfl {
                twin,
                outputs,
                alpha,
            } => Box::new(BackboneApfl::new(twin, *outputs, *alpha, vb)?),
        })
    }
}

/// A built model together with its variables.
pub struct Net {
    spec: ModelSpec,
    varmap: VarMap,
    model: Box<dyn Model>,
    vars: Vec<(String, Var)>,
    device: Device,
}

impl Net {
    /// Build on the CPU with seeded PyTorch-style initialisation.
    pub fn new(spec: &ModelSpec, seed: u64) -> Result<Net> {
        Net::new_on(spec, seed, &Device::Cpu)
    }

    /// Build on `device` (a GPU with the `cuda` feature; see [`crate::device`]). The same seed
    /// gives the same initial values on every device: they are drawn on the host.
    pub fn new_on(spec: &ModelSpec, seed: u64, device: &Device) -> Result<Net> {
        crate::device::bound_product_splitting();
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, device);
        let model = spec.build(vb)?;
        let net = Net::from_parts(spec.clone(), varmap, model, device.clone())?;
        net.load(&seeded_init(&net.parameters()?, seed)?)?;
        Ok(net)
    }

    /// Build and then load `params` (which must cover every variable).
    pub fn with_parameters(spec: &ModelSpec, params: &ParameterSet) -> Result<Net> {
        Net::with_parameters_on(spec, params, &Device::Cpu)
    }

    /// [`Net::with_parameters`] on `device`.
    pub fn with_parameters_on(
        spec: &ModelSpec,
        params: &ParameterSet,
        device: &Device,
    ) -> Result<Net> {
        let net = Net::new_on(spec, 0, device)?;
        net.parameters()?.check_compatible(params)?;
        net.load(params)?;
        Ok(net)
    }

    /// Where the variables live and the model computes.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// `rows × cols` row-major input values as a tensor on the net's device.
    pub fn input(&self, values: &[f32], rows: usize, cols: usize) -> Result<Tensor> {
        Ok(Tensor::from_slice(values, (rows, cols), &self.device)?)
    }

    fn from_parts(
        spec: ModelSpec,
        varmap: VarMap,
        model: Box<dyn Model>,
        device: Device,
    ) -> Result<Net> {
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
            device,
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
        Net::with_parameters_on(&self.spec, &self.parameters()?, &self.device)
    }
}

/// How one variable starts.
enum InitRule {
    /// U(-bound, bound) from the seeded stream.
    Uniform(f32),
    /// A constant (normalisation scales 1, shifts 0); draws nothing.
    Const(f32),
}

/// PyTorch's defaults, by name and shape:
/// * `*.weight` of rank >= 2 (`nn.Linear` `[out, in]`, `nn.Conv2d` `[out, in, kh, kw]`) and the
///   matching `*.bias`: U(+-1/sqrt(fan_in)), fan_in = product of the weight's dims after the
///   first;
/// * `*.weight` of rank 1 and the matching `*.bias` (LayerNorm, GroupNorm, BatchNorm): 1 and 0;
///   BatchNorm's `running_mean` 0 and `running_var` 1;
/// * recurrent `*.weight_ih_l{k}`, `*.weight_hh_l{k}`, `*.bias_ih_l{k}`, `*.bias_hh_l{k}`
///   (`nn.GRU`, `nn.LSTM`, layer k): U(+-1/sqrt(hidden)), hidden = the second dim of
///   `weight_hh_l{k}`.
fn init_rule(template: &ParameterSet, name: &str) -> Option<InitRule> {
    if name.ends_with("running_mean") {
        return Some(InitRule::Const(0.0));
    }
    if name.ends_with("running_var") {
        return Some(InitRule::Const(1.0));
    }
    // `{stem}{weight|bias}_{ih|hh}_l{k}`: layer k of a stacked recurrent network
    if let Some((head, layer)) = name.rsplit_once("_l") {
        if layer.parse::<usize>().is_ok() {
            for part in ["weight_ih", "weight_hh", "bias_ih", "bias_hh"] {
                if let Some(stem) = head.strip_suffix(part) {
                    let hidden = template
                        .get(&format!("{stem}weight_hh_l{layer}"))
                        .and_then(|w| w.shape.get(1).copied())?;
                    return Some(InitRule::Uniform(1.0 / (hidden.max(1) as f32).sqrt()));
                }
            }
        }
    }
    let (stem, is_bias) = match name.strip_suffix("bias") {
        Some(stem) => (stem, true),
        None => (name.strip_suffix("weight")?, false),
    };
    let weight = template.get(&format!("{stem}weight"))?;
    if weight.shape.len() == 1 {
        return Some(InitRule::Const(if is_bias { 0.0 } else { 1.0 }));
    }
    let fan_in: usize = weight.shape[1..].iter().product();
    Some(InitRule::Uniform(1.0 / (fan_in.max(1) as f32).sqrt()))
}

/// Seeded PyTorch-default initialisation (see [`init_rule`]), drawing in sorted-name order.
fn seeded_init(template: &ParameterSet, seed: u64) -> Result<ParameterSet> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = template.clone();
    let rules: Vec<Option<InitRule>> = template.names().map(|n| init_rule(template, n)).collect();
    for ((name, t), rule) in out.iter_mut().zip(rules) {
        match rule {
            Some(InitRule::Uniform(bound)) => t
                .values
                .iter_mut()
                .for_each(|v| *v = rng.random_range(-bound..bound)),
            Some(InitRule::Const(c)) => t.values.iter_mut().for_each(|v| *v = c),
            None => {
                return Err(EngineError::InvalidConfig(format!(
                    "cannot infer the initialisation of `{name}`"
                )))
            }
        }
    }
    Ok(out)
}

/// The inverted-dropout mask for a tensor of `dims` (`1 / keep` where kept, 0 where dropped);
/// `None` in evaluation mode or without dropout.
///
/// One bulk fill of 32-bit words from the stream, each turned into a uniform in [0, 1) the way
/// `rand`'s `Standard` does (`(u >> 8) * 2^-24`): the same draws and the same masks as one
/// `rng.random::<f32>()` per element, without a call per element.
pub(crate) fn dropout_mask(
    dims: &[usize],
    p: f32,
    rng: Option<&mut ChaCha8Rng>,
    device: &Device,
) -> candle_core::Result<Option<Tensor>> {
    let Some(rng) = rng else { return Ok(None) };
    if p <= 0.0 {
        return Ok(None);
    }
    let keep = 1.0 - p;
    let n: usize = dims.iter().product();
    let mut bits = vec![0u32; n];
    rng.fill(&mut bits[..]);
    const SCALE: f32 = 1.0 / (1u32 << 24) as f32;
    let mask: Vec<f32> = bits
        .iter()
        .map(|&u| {
            if SCALE * ((u >> 8) as f32) < keep {
                1.0 / keep
            } else {
                0.0
            }
        })
        .collect();
    Tensor::from_vec(mask, dims, device).map(Some)
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

    /// The bulk-filled mask draws exactly what one `gen::<f32>()` per element drew.
    #[test]
    fn dropout_mask_matches_per_element_draws() {
        for p in [0.1f32, 0.5, 0.9] {
            let mut a = ChaCha8Rng::seed_from_u64(11);
            let mut b = ChaCha8Rng::seed_from_u64(11);
            // an odd length, so the second call starts mid-block
            for n in [37usize, 300] {
                let mask = dropout_mask(&[n], p, Some(&mut a), &Device::Cpu)
                    .unwrap()
                    .unwrap();
                let keep = 1.0 - p;
                let expected: Vec<f32> = (0..n)
                    .map(|_| {
                        if b.random::<f32>() < keep {
                            1.0 / keep
                        } else {
                            0.0
                        }
                    })
                    .collect();
                assert_eq!(mask.to_vec1::<f32>().unwrap(), expected);
            }
        }
        assert!(dropout_mask(
            &[4],
            0.0,
            Some(&mut ChaCha8Rng::seed_from_u64(0)),
            &Device::Cpu
        )
        .unwrap()
        .is_none());
        assert!(dropout_mask(&[4], 0.5, None, &Device::Cpu)
            .unwrap()
            .is_none());
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

    /// The stored forms of the MLP variants (specs kept in studies and sent to nodes) read
    /// and write unchanged.
    #[test]
    fn legacy_json_forms_are_stable() {
        let mlp = |hidden: Vec<usize>, outputs| MlpConfig {
            inputs: 13,
            hidden,
            outputs,
            dropout: 0.0,
        };
        let cases = [
            (
                r#"{"Mlp":{"inputs":13,"hidden":[10],"outputs":1,"dropout":0.0}}"#,
                ModelSpec::Mlp(mlp(vec![10], 1)),
            ),
            (
                r#"{"HeadNet":{"body":{"inputs":13,"hidden":[10],"outputs":0,"dropout":0.0},"outputs":1}}"#,
                ModelSpec::HeadNet {
                    body: mlp(vec![10], 0),
                    outputs: 1,
                },
            ),
            (
                r#"{"Fenda":{"global":{"inputs":13,"hidden":[5],"outputs":0,"dropout":0.0},"local":{"inputs":13,"hidden":[5],"outputs":0,"dropout":0.0},"outputs":1}}"#,
                ModelSpec::Fenda {
                    global: mlp(vec![5], 0),
                    local: mlp(vec![5], 0),
                    outputs: 1,
                },
            ),
            (
                r#"{"Apfl":{"twin":{"inputs":13,"hidden":[],"outputs":1,"dropout":0.0},"alpha":0.5}}"#,
                ModelSpec::Apfl {
                    twin: mlp(vec![], 1),
                    alpha: 0.5,
                },
            ),
        ];
        for (json, spec) in cases {
            assert_eq!(serde_json::from_str::<ModelSpec>(json).unwrap(), spec);
            assert_eq!(serde_json::to_string(&spec).unwrap(), json);
        }
        let counts = [151, 151, 151, 28];
        let specs = [
            ModelSpec::Mlp(mlp(vec![10], 1)),
            ModelSpec::HeadNet {
                body: mlp(vec![10], 0),
                outputs: 1,
            },
            ModelSpec::Fenda {
                global: mlp(vec![5], 0),
                local: mlp(vec![5], 0),
                outputs: 1,
            },
            ModelSpec::Apfl {
                twin: mlp(vec![], 1),
                alpha: 0.5,
            },
        ];
        for (spec, n) in specs.iter().zip(counts) {
            assert_eq!(spec.parameter_count().unwrap(), n, "{spec:?}");
            assert_eq!(spec.inputs(), 13);
        }
    }

    /// The declarative forms of the backbone models, with defaults for the optional fields.
    #[test]
    fn backbone_json_forms() {
        let lstm = r#"{"BackboneHeadNet":{"body":{"kind":"recurrent","cell":"lstm","time":24,"features":5,"hidden":32},"outputs":1}}"#;
        let spec: ModelSpec = serde_json::from_str(lstm).unwrap();
        assert_eq!(
            spec,
            ModelSpec::BackboneHeadNet {
                body: Backbone::Recurrent(SeqConfig {
                    cell: Cell::Lstm,
                    time: 24,
                    features: 5,
                    hidden: 32,
                    mask: MaskLayout::PerStep,
                    readout: Readout::Last,
                    layers: 1,
                }),
                outputs: 1,
            }
        );
        assert_eq!(spec.inputs(), 24 * 5 + 24);
        let examples = [
            r#"{"BackboneNet":{"body":{"kind":"mlp","inputs":13,"hidden":[64,32],"dropout":0.1,"norm":{"kind":"group","groups":4}},"outputs":1}}"#,
            r#"{"BackboneNet":{"body":{"kind":"fusion","series":{"cell":"gru","time":8,"features":3,"hidden":16,"mask":"per_value","readout":"mean"},"static_inputs":4,"static_hidden":[8]},"outputs":1}}"#,
            r#"{"BackboneApfl":{"twin":{"kind":"cnn","channels":1,"height":8,"width":8,"stages":[8,16],"groups":4},"outputs":10,"alpha":0.5}}"#,
            r#"{"BackboneFenda":{"global":{"kind":"columns","inputs":6,"columns":[{"start":0,"end":4}],"body":{"kind":"mlp","inputs":4,"hidden":[8],"dropout":0.0,"norm":{"kind":"layer"}}},"local":{"kind":"columns","inputs":6,"columns":[{"start":4,"end":6}],"body":{"kind":"mlp","inputs":2,"hidden":[4],"dropout":0.0,"norm":{"kind":"none"}}},"outputs":1}}"#,
        ];
        for json in examples {
            let spec: ModelSpec = serde_json::from_str(json).unwrap();
            assert_eq!(serde_json::to_string(&spec).unwrap(), json);
            Net::new(&spec, 0).unwrap();
        }
    }
}
