//! Backbones: feature extractors over a flat row that the `Backbone*` model specs compose
//! with an output layer (a plain network), a FedPer head, FENDA-FL's two extractors or APFL's
//! twins.
//!
//! Every backbone reads one flat `[batch, row]` tensor (the engine's [`Dataset`] rows stay
//! flat) and reshapes it internally according to its declared layout:
//!
//! * [`Backbone::Mlp`]: `[inputs]`; `fc{i}` linear, then optional `norm{i}` (LayerNorm or
//!   GroupNorm over the hidden units), ReLU and dropout.
//! * [`Backbone::Recurrent`]: `[time * features | mask]`, the series time-major
//!   (`x[t0,f0], x[t0,f1], .., x[t1,f0], ..`) followed by the presence mask (see
//!   [`MaskLayout`]); a GRU or LSTM cell (`cell.*`, PyTorch's names and gate order).
//! * [`Backbone::Fusion`]: `[series | mask | static]`, the recurrent part (`rnn.*`) and an MLP
//!   over the static columns (`static.*`), concatenated.
//! * [`Backbone::Cnn`]: `[channels * height * width]` (channel-major, as `torch.flatten` of a
//!   `[C, H, W]` image); a ResNet-style network with GroupNorm.
//! * [`Backbone::Columns`]: a backbone over some column ranges of a wider row (FENDA-FL with
//!   extractors of different input widths).
//!
//! [`Dataset`]: crate::data::Dataset
//!
//! Missing steps of a series: the mask is multiplied into the values and also fed as extra
//! input channels (zero imputation with an indicator), and on a step with no observed value
//! the recurrent state is carried over unchanged, so the last state is the state after the last
//! observed step. A mean readout averages the states of observed steps only.
use candle_core::{Module, Tensor, D};
use candle_nn::{
    conv2d_no_bias, group_norm, layer_norm, linear, BatchNorm, Conv2dConfig, GroupNorm, LayerNorm,
    ModuleT, VarBuilder,
};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::conv::{
    add_relu, conv_gn, residual_body, Conv, ConvGnLayer, GroupNormAct, ResidualBlock,
};
use super::dropout_mask;
use super::fused::Dense;
use super::recurrent::RecurrentLayer;

const NORM_EPS: f64 = 1e-5;

/// Normalisation after each hidden layer of an MLP backbone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Norm {
    #[default]
    None,
    /// LayerNorm over the hidden units (`norm{i}.weight`, `norm{i}.bias`).
    Layer,
    /// GroupNorm with `groups` groups over the hidden units (which `groups` must divide).
    Group { groups: usize },
    /// BatchNorm with FedBN semantics: scale and shift `norm{i}.weight/bias` are trained and
    /// shared like any weight; the running statistics `norm{i}.bn_stats.running_mean/var` are
    /// site-local state that no strategy sends (see
    /// [`SITE_LOCAL_STATE`](crate::params::SITE_LOCAL_STATE)). Training mode normalises with
    /// the batch statistics and updates the running ones (momentum 0.1; a batch of one row
    /// uses the running statistics and updates nothing); evaluation uses the running ones.
    /// Refused under record-level DP (it couples the examples of a batch).
    Batch,
}

/// Recurrent cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cell {
    Gru,
    Lstm,
}

/// Presence mask after the series values in each row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaskLayout {
    /// No mask: every step is observed.
    None,
    /// `time` values, 1 = step observed, 0 = missing.
    #[default]
    PerStep,
    /// `time * features` values, one per series value (same order); a step counts as
    /// observed when any of its values is.
    PerValue,
}

/// What the recurrent backbone returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Readout {
    /// Hidden state after the last (observed) step.
    #[default]
    Last,
    /// Mean of the hidden states of observed steps.
    Mean,
}

/// A recurrent network over a `[time, features]` series given as a flat row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeqConfig {
    pub cell: Cell,
    pub time: usize,
    pub features: usize,
    pub hidden: usize,
    #[serde(default)]
    pub mask: MaskLayout,
    #[serde(default)]
    pub readout: Readout,
    /// Stacked recurrent layers (PyTorch's `num_layers`, no dropout between them): layer `k`
    /// reads layer `k - 1`'s hidden state at each step; the readout is the top layer's. One
    /// layer is omitted when serialised.
    #[serde(default = "one_layer", skip_serializing_if = "is_one_layer")]
    pub layers: usize,
}

/// Most stacked layers of a recurrent backbone.
pub const MAX_RECURRENT_LAYERS: usize = 4;

fn one_layer() -> usize {
    1
}

fn is_one_layer(n: &usize) -> bool {
    *n == 1
}

impl SeqConfig {
    fn mask_width(&self) -> usize {
        match self.mask {
            MaskLayout::None => 0,
            MaskLayout::PerStep => self.time,
            MaskLayout::PerValue => self.time * self.features,
        }
    }

    /// Row width: series values then the mask.
    pub fn row_width(&self) -> usize {
        self.time * self.features + self.mask_width()
    }

    /// Channels the cell sees per step: the (masked) values plus the mask channels.
    fn cell_inputs(&self) -> usize {
        match self.mask {
            MaskLayout::None => self.features,
            MaskLayout::PerStep => self.features + 1,
            MaskLayout::PerValue => 2 * self.features,
        }
    }
}

/// A ResNet-style CNN with GroupNorm over `[channels, height, width]` images.
///
/// Stem: conv 3x3 (`stages[0]` filters) -> GN -> ReLU. Stage `i` is one residual block:
/// conv 3x3 -> GN -> ReLU -> conv 3x3 -> GN, plus the skip, then ReLU; stages after the first
/// halve the resolution (stride 2) and project the skip with conv 1x1 -> GN. Then global
/// average pooling: the features are `[batch, stages.last()]`. Convolutions have no bias
/// (each is followed by GroupNorm).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CnnConfig {
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    /// Filters of each stage (at least one).
    pub stages: Vec<usize>,
    /// GroupNorm groups; must divide every stage width.
    pub groups: usize,
}

/// A half-open column range `start..end` of the row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnRange {
    pub start: usize,
    pub end: usize,
}

/// A feature extractor over a flat row (see the module doc for each layout).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Backbone {
    Mlp {
        inputs: usize,
        hidden: Vec<usize>,
        #[serde(default)]
        dropout: f32,
        #[serde(default)]
        norm: Norm,
    },
    Recurrent(SeqConfig),
    /// The thesis's fusion: recurrent network over the series, MLP (ReLU) over the static
    /// columns, features concatenated.
    Fusion {
        series: SeqConfig,
        static_inputs: usize,
        static_hidden: Vec<usize>,
    },
    Cnn(CnnConfig),
    /// `body` over the concatenation of `columns` of a row of width `inputs`.
    Columns {
        inputs: usize,
        columns: Vec<ColumnRange>,
        body: Box<Backbone>,
    },
}

impl Backbone {
    /// Width of the flat row the backbone reads.
    pub fn row_width(&self) -> usize {
        match self {
            Backbone::Mlp { inputs, .. } | Backbone::Columns { inputs, .. } => *inputs,
            Backbone::Recurrent(s) => s.row_width(),
            Backbone::Fusion {
                series,
                static_inputs,
                ..
            } => series.row_width() + static_inputs,
            Backbone::Cnn(c) => c.channels * c.height * c.width,
        }
    }

    /// Width of the features it returns.
    pub fn features(&self) -> usize {
        match self {
            Backbone::Mlp { inputs, hidden, .. } => hidden.last().copied().unwrap_or(*inputs),
            Backbone::Recurrent(s) => s.hidden,
            Backbone::Fusion {
                series,
                static_inputs,
                static_hidden,
            } => series.hidden + static_hidden.last().copied().unwrap_or(*static_inputs),
            Backbone::Cnn(c) => c.stages.last().copied().unwrap_or(0),
            Backbone::Columns { body, .. } => body.features(),
        }
    }

    /// Shapes that can be built: positive widths, GroupNorm groups dividing their widths,
    /// column ranges inside the row and as wide as the backbone they feed.
    pub fn validate(&self) -> candle_core::Result<()> {
        let positive = |what: &str, v: usize| -> candle_core::Result<()> {
            if v == 0 {
                candle_core::bail!("{what} must be positive")
            }
            Ok(())
        };
        match self {
            Backbone::Mlp {
                inputs,
                hidden,
                dropout,
                norm,
            } => {
                positive("MLP inputs", *inputs)?;
                if !(0.0..1.0).contains(dropout) {
                    candle_core::bail!("dropout must be in [0, 1), got {dropout}")
                }
                for &h in hidden {
                    positive("hidden width", h)?;
                    if let Norm::Group { groups } = norm {
                        // A group of one unit normalises to a constant.
                        if *groups == 0 || h % groups != 0 || h / groups < 2 {
                            candle_core::bail!(
                                "GroupNorm groups ({groups}) must divide hidden width {h} into \
                                 groups of at least 2 units"
                            )
                        }
                    }
                }
            }
            Backbone::Recurrent(s) => validate_seq(s)?,
            Backbone::Fusion {
                series,
                static_inputs,
                static_hidden,
            } => {
                validate_seq(series)?;
                positive("static inputs", *static_inputs)?;
                for &h in static_hidden {
                    positive("static hidden width", h)?;
                }
            }
            Backbone::Cnn(c) => {
                positive("image channels", c.channels)?;
                positive("image height", c.height)?;
                positive("image width", c.width)?;
                if c.stages.is_empty() {
                    candle_core::bail!("a CNN needs at least one stage")
                }
                for &s in &c.stages {
                    if c.groups == 0 || s == 0 || s % c.groups != 0 {
                        candle_core::bail!(
                            "GroupNorm groups ({}) must divide every stage width, got {s}",
                            c.groups
                        )
                    }
                }
            }
            Backbone::Columns {
                inputs,
                columns,
                body,
            } => {
                if columns.is_empty() {
                    candle_core::bail!("a column selection needs at least one range")
                }
                let mut width = 0;
                for r in columns {
                    if r.start >= r.end || r.end > *inputs {
                        candle_core::bail!(
                            "column range {}..{} is empty or outside a row of {inputs}",
                            r.start,
                            r.end
                        )
                    }
                    width += r.end - r.start;
                }
                if matches!(**body, Backbone::Columns { .. }) {
                    candle_core::bail!("column selections do not nest")
                }
                body.validate()?;
                if body.row_width() != width {
                    candle_core::bail!(
                        "the selected columns are {width} wide but the backbone reads {}",
                        body.row_width()
                    )
                }
            }
        }
        Ok(())
    }
}

fn validate_seq(s: &SeqConfig) -> candle_core::Result<()> {
    if s.time == 0 || s.features == 0 || s.hidden == 0 {
        candle_core::bail!("a recurrent backbone needs positive time, features and hidden")
    }
    if !(1..=MAX_RECURRENT_LAYERS).contains(&s.layers) {
        candle_core::bail!(
            "a recurrent backbone has 1 to {MAX_RECURRENT_LAYERS} layers, got {}",
            s.layers
        )
    }
    Ok(())
}

/// A built backbone.
pub(crate) enum Body {
    Mlp(NormMlp),
    Seq(SeqNet),
    Fusion {
        series: SeqNet,
        statics: NormMlp,
        series_width: usize,
        static_inputs: usize,
    },
    Cnn(Cnn),
    Columns {
        columns: Vec<ColumnRange>,
        body: Box<Body>,
    },
}

impl Body {
    pub(crate) fn new(spec: &Backbone, vb: VarBuilder) -> candle_core::Result<Self> {
        spec.validate()?;
        Ok(match spec {
            Backbone::Mlp {
                inputs,
                hidden,
                dropout,
                norm,
            } => Body::Mlp(NormMlp::new(*inputs, hidden, *dropout, *norm, vb)?),
            Backbone::Recurrent(s) => Body::Seq(SeqNet::new(s, vb)?),
            Backbone::Fusion {
                series,
                static_inputs,
                static_hidden,
            } => Body::Fusion {
                series: SeqNet::new(series, vb.pp("rnn"))?,
                statics: NormMlp::new(
                    *static_inputs,
                    static_hidden,
                    0.0,
                    Norm::None,
                    vb.pp("static"),
                )?,
                series_width: series.row_width(),
                static_inputs: *static_inputs,
            },
            Backbone::Cnn(c) => Body::Cnn(Cnn::new(c, vb)?),
            Backbone::Columns { columns, body, .. } => Body::Columns {
                columns: columns.clone(),
                body: Box::new(Body::new(body, vb)?),
            },
        })
    }

    pub(crate) fn forward(
        &self,
        xs: &Tensor,
        rng: Option<&mut ChaCha8Rng>,
    ) -> candle_core::Result<Tensor> {
        match self {
            Body::Mlp(m) => m.forward(xs, rng),
            Body::Seq(s) => s.forward(xs),
            Body::Fusion {
                series,
                statics,
                series_width,
                static_inputs,
            } => {
                let s = series.forward(&xs.narrow(1, 0, *series_width)?)?;
                let st = statics.forward(&xs.narrow(1, *series_width, *static_inputs)?, rng)?;
                Tensor::cat(&[&s, &st], 1)
            }
            Body::Cnn(c) => c.forward(xs),
            Body::Columns { columns, body } => {
                let parts = columns
                    .iter()
                    .map(|r| xs.narrow(1, r.start, r.end - r.start))
                    .collect::<candle_core::Result<Vec<_>>>()?;
                let xs = if parts.len() == 1 {
                    parts[0].clone()
                } else {
                    Tensor::cat(&parts, 1)?
                };
                body.forward(&xs, rng)
            }
        }
    }
}

enum NormLayer {
    Layer(LayerNorm),
    Group(GroupNorm),
    Batch(BatchNorm),
}

fn batch_norm_fedbn(width: usize, vb: VarBuilder) -> candle_core::Result<BatchNorm> {
    let stats = vb.pp("bn_stats");
    BatchNorm::new(
        width,
        stats.get_with_hints(width, "running_mean", candle_nn::Init::Const(0.0))?,
        stats.get_with_hints(width, "running_var", candle_nn::Init::Const(1.0))?,
        vb.get_with_hints(width, "weight", candle_nn::Init::Const(1.0))?,
        vb.get_with_hints(width, "bias", candle_nn::Init::Const(0.0))?,
        NORM_EPS,
    )
}

impl NormLayer {
    fn forward(&self, xs: &Tensor, train: bool) -> candle_core::Result<Tensor> {
        match self {
            NormLayer::Batch(n) => n.forward_t(xs, train && xs.dim(0)? > 1),
            NormLayer::Layer(n) => n.forward(xs),
            // candle's GroupNorm wants `[batch, channels, ...]` of rank >= 3.
            NormLayer::Group(n) => n.forward(&xs.unsqueeze(2)?)?.squeeze(2),
        }
    }
}

/// MLP feature extractor: `fc{i}` -> optional `norm{i}` -> ReLU -> dropout.
pub(crate) struct NormMlp {
    layers: Vec<(Dense, Option<NormLayer>)>,
    dropout: f32,
}

impl NormMlp {
    fn new(
        inputs: usize,
        hidden: &[usize],
        dropout: f32,
        norm: Norm,
        vb: VarBuilder,
    ) -> candle_core::Result<Self> {
        let mut layers = Vec::with_capacity(hidden.len());
        let mut width = inputs;
        for (i, &h) in hidden.iter().enumerate() {
            let fc = Dense::new(linear(width, h, vb.pp(format!("fc{i}")))?);
            let nvb = vb.pp(format!("norm{i}"));
            let n = match norm {
                Norm::None => None,
                Norm::Layer => Some(NormLayer::Layer(layer_norm(h, NORM_EPS, nvb)?)),
                Norm::Group { groups } => {
                    Some(NormLayer::Group(group_norm(groups, h, NORM_EPS, nvb)?))
                }
                Norm::Batch => Some(NormLayer::Batch(batch_norm_fedbn(h, nvb)?)),
            };
            layers.push((fc, n));
            width = h;
        }
        Ok(Self { layers, dropout })
    }

    fn forward(
        &self,
        xs: &Tensor,
        mut rng: Option<&mut ChaCha8Rng>,
    ) -> candle_core::Result<Tensor> {
        let train = rng.is_some();
        let mut h = xs.clone();
        for (fc, norm) in &self.layers {
            let rows = h.dim(0)?;
            let mask = dropout_mask(
                &[rows, fc.outputs()],
                self.dropout,
                rng.as_deref_mut(),
                h.device(),
            )?;
            h = match norm {
                // the bias, ReLU and mask in one pass (see `fused`)
                None => fc.forward(&h, true, mask.as_ref())?,
                Some(n) => {
                    let h = n.forward(&fc.forward(&h, false, None)?, train)?.relu()?;
                    match mask {
                        Some(m) => h.mul(&m)?,
                        None => h,
                    }
                }
            };
        }
        Ok(h)
    }
}

/// GRU / LSTM over the series part of the row (parameters `cell.weight_ih_l{k}`,
/// `cell.weight_hh_l{k}`, `cell.bias_ih_l{k}`, `cell.bias_hh_l{k}` of each layer `k`; each
/// layer's recurrence is one fused op, see [`recurrent`](super::recurrent)).
pub(crate) struct SeqNet {
    cfg: SeqConfig,
    layers: Vec<RecurrentLayer>,
}

impl SeqNet {
    fn new(cfg: &SeqConfig, vb: VarBuilder) -> candle_core::Result<Self> {
        validate_seq(cfg)?;
        let vb = vb.pp("cell");
        let layers = (0..cfg.layers)
            .map(|k| {
                let inputs = if k == 0 {
                    cfg.cell_inputs()
                } else {
                    cfg.hidden
                };
                RecurrentLayer::new(cfg.cell, inputs, cfg.hidden, k, vb.clone())
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Self {
            cfg: cfg.clone(),
            layers,
        })
    }

    /// `[batch, row]` -> `[batch, hidden]`.
    fn forward(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
        let c = &self.cfg;
        let b = xs.dim(0)?;
        let tf = c.time * c.features;
        let series = xs.narrow(1, 0, tf)?.reshape((b, c.time, c.features))?;
        // Inputs per step and, with a mask, the step presence `[b, time]`.
        let (inputs, present) = match c.mask {
            MaskLayout::None => (series, None),
            MaskLayout::PerStep => {
                let m = xs.narrow(1, tf, c.time)?.reshape((b, c.time, 1))?;
                let x = series.broadcast_mul(&m)?;
                (Tensor::cat(&[&x, &m], 2)?, Some(m.squeeze(2)?))
            }
            MaskLayout::PerValue => {
                let m = xs.narrow(1, tf, tf)?.reshape((b, c.time, c.features))?;
                let x = series.mul(&m)?;
                let p = m.max(2)?;
                (Tensor::cat(&[&x, &m], 2)?, Some(p))
            }
        };
        // the state after each step `[b, time, hidden]` of each layer feeds the next
        let mut states = inputs.contiguous()?;
        for layer in &self.layers {
            states = layer.forward(&states, present.as_ref())?;
        }
        match (c.readout, &present) {
            // contiguous: a GPU's matrix product in the head refuses a strided view
            (Readout::Last, _) => states.narrow(1, c.time - 1, 1)?.squeeze(1)?.contiguous(),
            (Readout::Mean, None) => states.sum(1)?.affine(1.0 / c.time as f64, 0.0),
            (Readout::Mean, Some(p)) => {
                let sum = states.broadcast_mul(&p.unsqueeze(2)?)?.sum(1)?;
                let count = p.sum_keepdim(1)?;
                sum.broadcast_div(&count.clamp(1.0, f64::MAX)?)
            }
        }
    }
}

/// Convolution then GroupNorm (and ReLU), one fused op (see [`conv`](super::conv)).
struct ConvGn {
    conv: Conv,
    gn: GroupNormAct,
}

impl ConvGn {
    fn new(
        inputs: usize,
        outputs: usize,
        kernel: usize,
        stride: usize,
        groups: usize,
        vb: VarBuilder,
    ) -> candle_core::Result<Self> {
        let cfg = Conv2dConfig {
            padding: kernel / 2,
            stride,
            ..Default::default()
        };
        Ok(Self {
            conv: Conv::new(conv2d_no_bias(inputs, outputs, kernel, cfg, vb.pp("conv"))?),
            gn: GroupNormAct::new(groups, outputs, NORM_EPS, vb.pp("gn"))?,
        })
    }

    /// With `relu`, ReLU after the norm.
    fn forward(&self, xs: &Tensor, relu: bool) -> candle_core::Result<Tensor> {
        conv_gn(&self.conv, &self.gn, xs, relu)
    }

    fn layer(&self) -> ConvGnLayer<'_> {
        ConvGnLayer {
            conv: &self.conv,
            gn: &self.gn,
        }
    }
}

struct ResBlock {
    a: ConvGn,
    b: ConvGn,
    proj: Option<ConvGn>,
}

/// ResNet-style CNN (see [`CnnConfig`]); names `stem.{conv,gn}.*`,
/// `stage{i}.{a,b,proj}.{conv,gn}.*`.
pub(crate) struct Cnn {
    cfg: CnnConfig,
    stem: ConvGn,
    stages: Vec<ResBlock>,
}

impl Cnn {
    fn new(cfg: &CnnConfig, vb: VarBuilder) -> candle_core::Result<Self> {
        let g = cfg.groups;
        let stem = ConvGn::new(cfg.channels, cfg.stages[0], 3, 1, g, vb.pp("stem"))?;
        let mut width = cfg.stages[0];
        let mut stages = Vec::with_capacity(cfg.stages.len());
        for (i, &s) in cfg.stages.iter().enumerate() {
            let vb = vb.pp(format!("stage{i}"));
            let stride = if i == 0 { 1 } else { 2 };
            let proj = if stride != 1 || width != s {
                Some(ConvGn::new(width, s, 1, stride, g, vb.pp("proj"))?)
            } else {
                None
            };
            stages.push(ResBlock {
                a: ConvGn::new(width, s, 3, stride, g, vb.pp("a"))?,
                b: ConvGn::new(s, s, 3, 1, g, vb.pp("b"))?,
                proj,
            });
            width = s;
        }
        Ok(Self {
            cfg: cfg.clone(),
            stem,
            stages,
        })
    }

    fn forward(&self, xs: &Tensor) -> candle_core::Result<Tensor> {
        let c = &self.cfg;
        let b = xs.dim(0)?;
        let x = xs.reshape((b, c.channels, c.height, c.width))?;
        match residual_body(self.stem.layer(), &self.blocks(), &x)? {
            Some(features) => Ok(features),
            None => self.forward_by_layers(&x),
        }
    }

    fn blocks(&self) -> Vec<ResidualBlock<'_>> {
        self.stages
            .iter()
            .map(|s| ResidualBlock {
                a: s.a.layer(),
                b: s.b.layer(),
                proj: s.proj.as_ref().map(ConvGn::layer),
            })
            .collect()
    }

    /// The body layer by layer, each layer a graph node: where [`residual_body`] does not
    /// take it, and the reference its tests compare with.
    fn forward_by_layers(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let mut h = self.stem.forward(x, true)?;
        for block in &self.stages {
            let y = block.b.forward(&block.a.forward(&h, true)?, false)?;
            let skip = match &block.proj {
                Some(p) => p.forward(&h, false)?,
                None => h,
            };
            h = add_relu(&y, &skip)?;
        }
        h.mean(D::Minus1)?.mean(D::Minus1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelSpec, Net};
    use candle_core::Device;

    fn seq(cell: Cell, features: usize, hidden: usize, mask: MaskLayout) -> SeqConfig {
        SeqConfig {
            cell,
            time: 4,
            features,
            hidden,
            mask,
            readout: Readout::Last,
            layers: 1,
        }
    }

    fn out(net: &Net, row: &[f32]) -> Vec<f32> {
        let x = Tensor::from_slice(row, (1, row.len()), &Device::Cpu).unwrap();
        net.forward(&x, None)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap()
    }

    #[test]
    fn masked_steps_change_nothing_and_carry_the_state() {
        for cell in [Cell::Gru, Cell::Lstm] {
            let spec = ModelSpec::BackboneNet {
                body: Backbone::Recurrent(seq(cell, 2, 5, MaskLayout::PerStep)),
                outputs: 1,
            };
            let net = Net::new(&spec, 3).unwrap();
            // steps 1 and 3 missing
            let mask = [1.0, 0.0, 1.0, 0.0];
            let a = [0.5, -1.0, 9.0, 9.0, 0.2, 0.3, 7.0, -7.0];
            let mut b = a;
            b[2] = -4.0;
            b[3] = 0.0;
            b[6] = 1.0;
            let row = |x: &[f32]| [x, &mask[..]].concat();
            assert_eq!(out(&net, &row(&a)), out(&net, &row(&b)), "{cell:?}");
            // an observed step does change the output
            b[0] = 2.0;
            assert_ne!(out(&net, &row(&a)), out(&net, &row(&b)), "{cell:?}");
        }
    }

    #[test]
    fn stacked_layers_count_carry_masked_steps_and_keep_one_layer_json() {
        for cell in [Cell::Gru, Cell::Lstm] {
            let mut s = seq(cell, 2, 5, MaskLayout::PerStep);
            s.layers = 2;
            let spec = ModelSpec::BackboneNet {
                body: Backbone::Recurrent(s.clone()),
                outputs: 1,
            };
            // nn.LSTM(3, 5, num_layers=2): 4 (5*3 + 25 + 10) + 4 (5*5 + 25 + 10) = 200 + 240;
            // nn.GRU the same with 3 gates; plus Linear(5, 1)
            let gates = if cell == Cell::Lstm { 4 } else { 3 };
            assert_eq!(
                spec.parameter_count().unwrap(),
                gates * (15 + 25 + 10) + gates * (25 + 25 + 10) + 6,
                "{cell:?}"
            );
            let net = Net::new(&spec, 3).unwrap();
            let names: Vec<String> = net.vars().iter().map(|(n, _)| n.clone()).collect();
            assert!(
                names.contains(&"body.cell.weight_hh_l1".to_owned()),
                "{names:?}"
            );
            // the second layer is initialised like the first: U(+-1/sqrt(hidden)), not zero
            let p = net.parameters().unwrap();
            let w = &p.get("body.cell.weight_ih_l1").unwrap().values;
            let bound = 1.0 / 5f32.sqrt();
            assert!(w.iter().all(|v| v.abs() <= bound) && w.iter().any(|v| *v != 0.0));
            // a missing step changes no layer's state
            let mask = [1.0, 0.0, 1.0, 0.0];
            let a = [0.5, -1.0, 9.0, 9.0, 0.2, 0.3, 7.0, -7.0];
            let mut b = a;
            b[2] = -4.0;
            b[6] = 1.0;
            let row = |x: &[f32]| [x, &mask[..]].concat();
            assert_eq!(out(&net, &row(&a)), out(&net, &row(&b)), "{cell:?}");
            b[0] = 2.0;
            assert_ne!(out(&net, &row(&a)), out(&net, &row(&b)), "{cell:?}");
            // the second layer is used: a one-layer net with the same first layer differs
            s.layers = 1;
            let one = Net::new(
                &ModelSpec::BackboneNet {
                    body: Backbone::Recurrent(s.clone()),
                    outputs: 1,
                },
                3,
            )
            .unwrap();
            assert_ne!(out(&net, &row(&a)), out(&one, &row(&a)), "{cell:?}");
        }
        let mut s = seq(Cell::Gru, 2, 5, MaskLayout::PerStep);
        let json = serde_json::to_value(&s).unwrap();
        assert!(json.get("layers").is_none(), "{json}");
        assert_eq!(serde_json::from_value::<SeqConfig>(json).unwrap(), s);
        s.layers = 0;
        assert!(Backbone::Recurrent(s.clone()).validate().is_err());
        s.layers = MAX_RECURRENT_LAYERS + 1;
        assert!(Backbone::Recurrent(s).validate().is_err());
    }

    #[test]
    fn mean_readout_and_per_value_masks_run() {
        let mut s = seq(Cell::Lstm, 3, 4, MaskLayout::PerValue);
        s.readout = Readout::Mean;
        let spec = ModelSpec::BackboneNet {
            body: Backbone::Recurrent(s.clone()),
            outputs: 2,
        };
        assert_eq!(spec.inputs(), 4 * 3 * 2);
        let net = Net::new(&spec, 0).unwrap();
        let x = Tensor::ones((5, spec.inputs()), candle_core::DType::F32, &Device::Cpu).unwrap();
        assert_eq!(net.forward(&x, None).unwrap().dims(), &[5, 2]);
        // all-missing rows give finite outputs
        let x = Tensor::zeros((2, spec.inputs()), candle_core::DType::F32, &Device::Cpu).unwrap();
        let y = net.forward(&x, None).unwrap().flatten_all().unwrap();
        assert!(y.to_vec1::<f32>().unwrap().iter().all(|v| v.is_finite()));
    }

    #[test]
    fn parameter_counts_match_pytorch() {
        let count = |body: Backbone, outputs: usize| {
            ModelSpec::BackboneNet { body, outputs }
                .parameter_count()
                .unwrap()
        };
        // nn.LSTM(3, 4): 4 * (4*3 + 4*4 + 4 + 4) = 144 (candle keeps PyTorch's two biases);
        // nn.GRU(3, 4): 3 * (4*3 + 4*4 + 4 + 4) = 108; plus Linear(4, 1) = 5.
        assert_eq!(
            count(
                Backbone::Recurrent(seq(Cell::Lstm, 3, 4, MaskLayout::None)),
                1
            ),
            149
        );
        assert_eq!(
            count(
                Backbone::Recurrent(seq(Cell::Gru, 3, 4, MaskLayout::None)),
                1
            ),
            113
        );
        // a per-step mask adds one input channel: 4 * (4*4 + 16 + 8) = 160
        assert_eq!(
            count(
                Backbone::Recurrent(seq(Cell::Lstm, 3, 4, MaskLayout::PerStep)),
                1
            ),
            165
        );
        // fusion: LSTM(2 + 1 mask channel, 4) = 144, static Linear(2, 3) = 9, head Linear(7, 1)
        assert_eq!(
            count(
                Backbone::Fusion {
                    series: seq(Cell::Lstm, 2, 4, MaskLayout::PerStep),
                    static_inputs: 2,
                    static_hidden: vec![3],
                },
                1
            ),
            144 + 9 + 8
        );
        // MLP 3 -> 4 (LayerNorm) -> 1: 16 + 8 + 5; GroupNorm and BatchNorm have the same affine
        // parameters (BatchNorm's running statistics are buffers, not counted)
        for norm in [Norm::Layer, Norm::Group { groups: 2 }, Norm::Batch] {
            let mlp = Backbone::Mlp {
                inputs: 3,
                hidden: vec![4],
                dropout: 0.0,
                norm,
            };
            assert_eq!(count(mlp, 1), 29);
        }
        // CNN 1 channel, stages [4, 8], no conv biases:
        // stem 4*1*9 + 8; stage0 2 * (4*4*9 + 8); stage1 8*4*9 + 16 + 8*8*9 + 16 + proj 8*4 + 16
        let cnn = Backbone::Cnn(CnnConfig {
            channels: 1,
            height: 8,
            width: 8,
            stages: vec![4, 8],
            groups: 2,
        });
        assert_eq!(count(cnn, 1), 44 + 304 + 944 + 9);
    }

    #[test]
    fn cnn_names_shapes_and_init() {
        let spec = ModelSpec::BackboneNet {
            body: Backbone::Cnn(CnnConfig {
                channels: 3,
                height: 12,
                width: 10,
                stages: vec![4, 8],
                groups: 4,
            }),
            outputs: 3,
        };
        let net = Net::new(&spec, 1).unwrap();
        let p = net.parameters().unwrap();
        assert_eq!(
            p.get("body.stem.conv.weight").unwrap().shape,
            vec![4, 3, 3, 3]
        );
        assert_eq!(
            p.get("body.stage1.proj.conv.weight").unwrap().shape,
            vec![8, 4, 1, 1]
        );
        assert!(p.get("body.stage0.proj.conv.weight").is_none());
        assert!(p
            .get("body.stage1.b.gn.weight")
            .unwrap()
            .values
            .iter()
            .all(|&v| v == 1.0));
        assert!(p
            .get("body.stage1.b.gn.bias")
            .unwrap()
            .values
            .iter()
            .all(|&v| v == 0.0));
        // nn.Conv2d default: U(+-1/sqrt(in * kh * kw))
        let w = &p.get("body.stage1.b.conv.weight").unwrap().values;
        let bound = 1.0 / (8.0f32 * 9.0).sqrt();
        assert!(w.iter().all(|v| v.abs() <= bound));
        assert!(w.iter().any(|v| v.abs() > bound / 2.0));
        let x = Tensor::ones((2, 3 * 12 * 10), candle_core::DType::F32, &Device::Cpu).unwrap();
        assert_eq!(net.forward(&x, None).unwrap().dims(), &[2, 3]);
        assert_eq!(Net::new(&spec, 1).unwrap().parameters().unwrap(), p);
        // the largest images the family is sized for
        let big = ModelSpec::BackboneNet {
            body: Backbone::Cnn(CnnConfig {
                channels: 3,
                height: 64,
                width: 64,
                stages: vec![8, 16, 32],
                groups: 4,
            }),
            outputs: 2,
        };
        let x = Tensor::ones((2, big.inputs()), candle_core::DType::F32, &Device::Cpu).unwrap();
        assert_eq!(
            Net::new(&big, 0).unwrap().forward(&x, None).unwrap().dims(),
            &[2, 2]
        );
    }

    #[test]
    fn recurrent_init_follows_pytorch() {
        let spec = ModelSpec::BackboneHeadNet {
            body: Backbone::Recurrent(seq(Cell::Gru, 2, 16, MaskLayout::PerStep)),
            outputs: 1,
        };
        let p = Net::new(&spec, 0).unwrap().parameters().unwrap();
        let names: Vec<_> = p.names().collect();
        assert_eq!(
            names,
            vec![
                "global.cell.bias_hh_l0",
                "global.cell.bias_ih_l0",
                "global.cell.weight_hh_l0",
                "global.cell.weight_ih_l0",
                "head.out.bias",
                "head.out.weight"
            ]
        );
        assert_eq!(
            p.get("global.cell.weight_ih_l0").unwrap().shape,
            vec![48, 3]
        );
        for n in &names[..4] {
            assert!(p.get(n).unwrap().values.iter().all(|v| v.abs() <= 0.25));
        }
    }

    #[test]
    fn columns_select_what_each_extractor_reads() {
        let spec = ModelSpec::BackboneFenda {
            global: Backbone::Columns {
                inputs: 6,
                columns: vec![ColumnRange { start: 0, end: 4 }],
                body: Box::new(Backbone::Mlp {
                    inputs: 4,
                    hidden: vec![5],
                    dropout: 0.0,
                    norm: Norm::None,
                }),
            },
            local: Backbone::Columns {
                inputs: 6,
                columns: vec![ColumnRange { start: 4, end: 6 }],
                body: Box::new(Backbone::Mlp {
                    inputs: 2,
                    hidden: vec![4],
                    dropout: 0.0,
                    norm: Norm::Group { groups: 2 },
                }),
            },
            outputs: 1,
        };
        assert_eq!(spec.inputs(), 6);
        assert_eq!(spec.fenda_widths(), Some((5, 4)));
        let net = Net::new(&spec, 0).unwrap();
        let p = net.parameters().unwrap();
        assert_eq!(p.get("global.fc0.weight").unwrap().shape, vec![5, 4]);
        assert_eq!(p.get("local.fc0.weight").unwrap().shape, vec![4, 2]);
        assert_eq!(p.get("head.out.weight").unwrap().shape, vec![1, 9]);
        let row = [0.1f32, 0.2, -0.3, 0.4, 1.0, -1.0];
        let x = Tensor::from_slice(&row, (1, 6), &Device::Cpu).unwrap();
        let f = net.forward_features(&x, None).unwrap();
        let mut moved = row;
        moved[5] = 3.0; // a private column: only the local features change
        let x2 = Tensor::from_slice(&moved, (1, 6), &Device::Cpu).unwrap();
        let f2 = net.forward_features(&x2, None).unwrap();
        let v = |o: &crate::model::ModelOutput, n: &str| {
            o.feature(n)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap()
        };
        assert_eq!(v(&f, "global"), v(&f2, "global"));
        assert_ne!(v(&f, "local"), v(&f2, "local"));
        assert!(spec.is_fenda());
    }

    #[test]
    fn bad_shapes_are_refused() {
        let bad = [
            Backbone::Mlp {
                inputs: 3,
                hidden: vec![5],
                dropout: 0.0,
                norm: Norm::Group { groups: 2 },
            },
            Backbone::Mlp {
                inputs: 3,
                hidden: vec![4],
                dropout: 0.0,
                norm: Norm::Group { groups: 4 },
            },
            Backbone::Cnn(CnnConfig {
                channels: 1,
                height: 8,
                width: 8,
                stages: vec![],
                groups: 1,
            }),
            Backbone::Columns {
                inputs: 4,
                columns: vec![ColumnRange { start: 2, end: 5 }],
                body: Box::new(Backbone::Mlp {
                    inputs: 3,
                    hidden: vec![],
                    dropout: 0.0,
                    norm: Norm::None,
                }),
            },
            Backbone::Columns {
                inputs: 4,
                columns: vec![ColumnRange { start: 0, end: 2 }],
                body: Box::new(Backbone::Mlp {
                    inputs: 3,
                    hidden: vec![],
                    dropout: 0.0,
                    norm: Norm::None,
                }),
            },
            Backbone::Recurrent(seq(Cell::Gru, 0, 4, MaskLayout::None)),
        ];
        for body in bad {
            let spec = ModelSpec::BackboneNet { body, outputs: 1 };
            assert!(Net::new(&spec, 0).is_err(), "{spec:?}");
        }
        // FENDA extractors must read the same row
        let mlp = |inputs| Backbone::Mlp {
            inputs,
            hidden: vec![2],
            dropout: 0.0,
            norm: Norm::None,
        };
        let spec = ModelSpec::BackboneFenda {
            global: mlp(3),
            local: mlp(4),
            outputs: 1,
        };
        assert!(Net::new(&spec, 0).is_err());
    }

    /// The body as one node ([`residual_body`]) against the same layers as graph nodes:
    /// features and every variable's gradient, for an identity skip and a projection, an odd
    /// map, a stride-2 stage, and layers that take Winograd's tiles (32 channels at 32x32).
    #[test]
    fn the_body_as_one_node_matches_the_layers() {
        use candle_nn::{VarBuilder, VarMap};
        use rand::{RngExt, SeedableRng};
        let cases = [
            (3, 12, 10, vec![4, 8], 2, 3),
            (1, 9, 7, vec![4, 4, 8], 4, 2),
            (3, 32, 32, vec![32, 64], 4, 2),
        ];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for (channels, height, width, stages, groups, batch) in cases {
            let cfg = CnnConfig {
                channels,
                height,
                width,
                stages: stages.clone(),
                groups,
            };
            let vars = VarMap::new();
            let cnn = Cnn::new(
                &cfg,
                VarBuilder::from_varmap(&vars, candle_core::DType::F32, &Device::Cpu),
            )
            .unwrap();
            // scales and shifts away from 1 and 0, so that their gradients are exercised
            for (name, v) in vars.data().lock().unwrap().iter() {
                if name.contains(".gn.") {
                    let n = v.elem_count();
                    let values: Vec<f32> = (0..n).map(|_| rng.random_range(-1.5..1.5)).collect();
                    v.set(&Tensor::from_vec(values, n, &Device::Cpu).unwrap())
                        .unwrap();
                }
            }
            let len = batch * channels * height * width;
            let x: Vec<f32> = (0..len).map(|_| rng.random_range(-1.0..1.0)).collect();
            let x = Tensor::from_vec(x, (batch, channels * height * width), &Device::Cpu).unwrap();
            let four = x.reshape((batch, channels, height, width)).unwrap();
            let last = *stages.last().unwrap();
            let c: Vec<f32> = (0..batch * last)
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            let c = Tensor::from_vec(c, (batch, last), &Device::Cpu).unwrap();
            let run = |features: Tensor| {
                let loss = (&features * &c).unwrap().sum_all().unwrap();
                let grads = crate::model::backward(&loss).unwrap();
                let mut by_name: Vec<(String, Vec<f32>)> = vars
                    .data()
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|(name, v)| {
                        let g = grads
                            .get(v.as_tensor())
                            .expect("every variable has a gradient");
                        (name.clone(), g.flatten_all().unwrap().to_vec1().unwrap())
                    })
                    .collect();
                by_name.sort_by(|a, b| a.0.cmp(&b.0));
                (
                    features.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                    by_name,
                )
            };
            let blocks = cnn.blocks();
            let fused = residual_body(cnn.stem.layer(), &blocks, &four)
                .unwrap()
                .expect("the body runs as one node");
            let (features, grads) = run(fused);
            let (want_features, want_grads) = run(cnn.forward_by_layers(&four).unwrap());
            let close = |a: &[f32], b: &[f32], what: &str| {
                let top = b.iter().fold(0f32, |m, v| m.max(v.abs()));
                for (x, y) in a.iter().zip(b) {
                    assert!(
                        (x - y).abs() <= 2e-5 * (1.0 + top),
                        "{what}: {x} vs {y} {stages:?}"
                    );
                }
                assert_eq!(a.len(), b.len(), "{what}");
            };
            close(&features, &want_features, "features");
            assert_eq!(grads.len(), want_grads.len());
            for ((name, g), (want_name, want)) in grads.iter().zip(&want_grads) {
                assert_eq!(name, want_name);
                close(g, want, name);
            }
            // the forward through `Cnn` takes the one node
            let direct = cnn.forward(&x).unwrap();
            close(
                &direct.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                &want_features,
                "Cnn::forward",
            );
            // an input that needs its own gradient goes layer by layer
            let tracked = candle_core::Var::from_tensor(&four).unwrap();
            assert!(
                residual_body(cnn.stem.layer(), &blocks, tracked.as_tensor())
                    .unwrap()
                    .is_none()
            );
        }
    }
}
