//! The model a study trains: the `model` part of the request (the architecture and its feature
//! extractors) and its parsing into the engine's [`ModelSpec`], each extractor reading its
//! part of the study's row.

use serde::Deserialize;

use super::{in_range, Errors, RowLayout};
use crate::model::{
    Backbone, Cell, CnnConfig, ColumnRange, MaskLayout, MlpConfig, ModelSpec, Norm, Readout,
    SeqConfig, MAX_RECURRENT_LAYERS,
};

pub const MAX_HIDDEN_WIDTH: usize = 4096;
pub const MAX_CNN_STAGES: usize = 6;

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ModelRequest {
    /// `logistic`, `mlp`, `apfl` (APFL's twins), `head_net` (FedPer, MOON, HPFL) or `fenda`
    /// (FENDA-FL, PerFCL): MLP forms over the whole row. With a `backbone`: `net` (the
    /// backbone and an output layer), `head_net`, `fenda` or `apfl` over that backbone.
    pub architecture: String,
    /// Hidden widths: of the MLP, of each APFL twin, of the head net's body, or of FENDA's
    /// global extractor.
    #[serde(default)]
    pub hidden: Vec<usize>,
    /// FENDA-FL's local extractor (defaults to `hidden`).
    #[serde(default)]
    pub local_hidden: Option<Vec<usize>>,
    #[serde(default)]
    pub dropout: f32,
    /// The feature extractor (docs/fl-models.md): an MLP with normalisation, a GRU or LSTM
    /// over the time series, the LSTM + static-MLP fusion, or a CNN over the image or the
    /// series grid.
    /// FENDA-FL's global extractor.
    #[serde(default)]
    pub backbone: Option<BackboneRequest>,
    /// FENDA-FL's local extractor (defaults to `backbone`); it may read other inputs.
    #[serde(default)]
    pub local_backbone: Option<BackboneRequest>,
    /// Output width; follows from the task when left out, refused when it does not fit it.
    #[serde(default)]
    pub outputs: Option<usize>,
}

/// Which part of the row an MLP extractor reads (see [`RowLayout`]).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum InputsRequest {
    /// The whole row.
    #[default]
    All,
    /// The static columns.
    Static,
    /// The time series values and their mask.
    Series,
    /// The static columns of these features of the specification.
    Features(Vec<String>),
}

fn one() -> usize {
    1
}

/// A feature extractor. Widths that follow from the feature specification (inputs, steps,
/// channels) are filled in by the gateway.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BackboneRequest {
    /// Linear -> norm -> ReLU -> dropout per hidden layer.
    Mlp {
        hidden: Vec<usize>,
        #[serde(default)]
        dropout: f32,
        /// `{"kind": "none" | "layer" | "batch"}` or `{"kind": "group", "groups": G}`.
        #[serde(default)]
        #[cfg_attr(feature = "openapi", schema(value_type = Object))]
        norm: Norm,
        #[serde(default)]
        inputs: InputsRequest,
    },
    /// A GRU over the hourly series (masked missing bins).
    Gru(RecurrentRequest),
    /// An LSTM over the hourly series (masked missing bins).
    Lstm(RecurrentRequest),
    /// The recurrent network over the series fused with an MLP over the static columns.
    Fusion {
        /// `lstm` or `gru`.
        #[cfg_attr(feature = "openapi", schema(value_type = String))]
        cell: Cell,
        hidden: usize,
        #[serde(default = "one")]
        layers: usize,
        #[serde(default)]
        static_hidden: Vec<usize>,
        #[serde(default)]
        #[cfg_attr(feature = "openapi", schema(value_type = String))]
        readout: Readout,
    },
    /// A ResNet-style CNN with GroupNorm over the specification's image `[channels, height,
    /// width]`, or, without one, over the series as a `[2, steps, channels]` image (values and
    /// presence mask). Every stage after the first halves the image.
    Cnn { stages: Vec<usize>, groups: usize },
}

/// A recurrent network over the hourly series; its cell is the backbone's `kind`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RecurrentRequest {
    pub hidden: usize,
    /// Stacked layers (1 to 4, default 1).
    #[serde(default = "one")]
    pub layers: usize,
    /// `last` (default) or `mean` over observed steps.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub readout: Readout,
}

fn hidden_widths(e: &mut Errors, field: &str, hidden: &[usize]) {
    for (i, w) in hidden.iter().enumerate() {
        in_range(e, &format!("{field}[{i}]"), *w, 1, MAX_HIDDEN_WIDTH);
    }
    if hidden.len() > 8 {
        e.push(field, "too_deep", "at most 8 hidden layers");
    }
}

fn dropout_ok(e: &mut Errors, field: &str, dropout: f32) {
    if !(0.0..1.0).contains(&dropout) {
        e.push(field, "out_of_range", "dropout must lie in [0, 1)");
    }
}

impl ModelRequest {
    /// The engine's model for this request over `layout` (none when the study has no feature
    /// specification: a one-input placeholder), with `outputs` as the task needs; every problem
    /// is recorded in `e`.
    pub fn parse(
        &self,
        e: &mut Errors,
        layout: Option<&RowLayout>,
        outputs: usize,
    ) -> Option<ModelSpec> {
        parse_model(e, self, layout, outputs)
    }
}

fn parse_model(
    e: &mut Errors,
    m: &ModelRequest,
    layout: Option<&RowLayout>,
    outputs: usize,
) -> Option<ModelSpec> {
    if let Some(o) = m.outputs {
        if o != outputs {
            e.push(
                "model.outputs",
                "head_task_mismatch",
                format!(
                    "the task needs {outputs} model output(s) (one risk score for survival, one \
                     logit for binary, one per class or label otherwise), not {o}"
                ),
            );
        }
    }
    if let Some(b) = &m.backbone {
        return parse_backbone_model(e, m, b, layout, outputs);
    }
    if m.local_backbone.is_some() {
        e.push(
            "model.local_backbone",
            "not_applicable",
            "a local backbone goes with a `backbone`",
        );
    }
    let inputs = layout.map_or(1, RowLayout::width);
    hidden_widths(e, "model.hidden", &m.hidden);
    if let Some(local) = &m.local_hidden {
        hidden_widths(e, "model.local_hidden", local);
    }
    dropout_ok(e, "model.dropout", m.dropout);
    let mlp = |hidden: &[usize], outputs| MlpConfig {
        inputs,
        hidden: hidden.to_vec(),
        outputs,
        dropout: m.dropout,
    };
    let needs_hidden = |e: &mut Errors| {
        if m.hidden.is_empty() {
            e.push(
                "model.hidden",
                "empty_list",
                "this architecture needs at least one hidden layer",
            );
        }
    };
    match m.architecture.as_str() {
        "logistic" => Some(ModelSpec::logistic(inputs, outputs)),
        "mlp" => Some(ModelSpec::Mlp(mlp(&m.hidden, outputs))),
        // APFL's global and local twins, each an MLP with these hidden layers, mixed 50/50
        // until each site learns its own weight
        "apfl" => Some(ModelSpec::Apfl {
            twin: mlp(&m.hidden, outputs),
            alpha: 0.5,
        }),
        "head_net" => {
            needs_hidden(e);
            Some(ModelSpec::HeadNet {
                body: mlp(&m.hidden, 0),
                outputs,
            })
        }
        "fenda" => {
            needs_hidden(e);
            Some(ModelSpec::Fenda {
                global: mlp(&m.hidden, 0),
                local: mlp(m.local_hidden.as_deref().unwrap_or(&m.hidden), 0),
                outputs,
            })
        }
        other => {
            e.push(
                "model.architecture",
                "unknown_architecture",
                format!("`{other}` is not one of logistic, mlp, apfl, head_net, fenda (or net with a backbone)"),
            );
            None
        }
    }
}

/// The `Backbone*` model a request with a `backbone` names.
fn parse_backbone_model(
    e: &mut Errors,
    m: &ModelRequest,
    b: &BackboneRequest,
    layout: Option<&RowLayout>,
    outputs: usize,
) -> Option<ModelSpec> {
    if !m.hidden.is_empty() || m.local_hidden.is_some() || m.dropout != 0.0 {
        e.push(
            "model.hidden",
            "not_applicable",
            "with a `backbone`, widths and dropout belong to the backbone",
        );
    }
    let global = layout.and_then(|l| parse_backbone(e, "model.backbone", b, l));
    let spec = match m.architecture.as_str() {
        "net" => ModelSpec::BackboneNet {
            body: global?,
            outputs,
        },
        "head_net" => ModelSpec::BackboneHeadNet {
            body: global?,
            outputs,
        },
        "apfl" => ModelSpec::BackboneApfl {
            twin: global?,
            outputs,
            alpha: 0.5,
        },
        "fenda" => {
            let local = match &m.local_backbone {
                Some(lb) => layout.and_then(|l| parse_backbone(e, "model.local_backbone", lb, l)),
                None => global.clone(),
            };
            ModelSpec::BackboneFenda {
                global: global?,
                local: local?,
                outputs,
            }
        }
        other => {
            e.push(
                "model.architecture",
                "unknown_architecture",
                format!("`{other}` does not compose a backbone: use net, head_net, fenda or apfl"),
            );
            return None;
        }
    };
    if m.architecture != "fenda" && m.local_backbone.is_some() {
        e.push(
            "model.local_backbone",
            "not_applicable",
            "only FENDA-FL (`fenda`) has a local extractor",
        );
    }
    Some(spec)
}

/// The engine's backbone for a request, reading its part of the study's row.
fn parse_backbone(
    e: &mut Errors,
    field: &str,
    b: &BackboneRequest,
    layout: &RowLayout,
) -> Option<Backbone> {
    let width = layout.width();
    let series = ColumnRange {
        start: layout.series_start(),
        end: layout.statics_start(),
    };
    // a backbone over part of the row reads it through a column selection
    let over = |columns: Vec<ColumnRange>, body: Backbone| {
        if columns
            == [ColumnRange {
                start: 0,
                end: width,
            }]
        {
            body
        } else {
            Backbone::Columns {
                inputs: width,
                columns,
                body: Box::new(body),
            }
        }
    };
    let needs_series = |e: &mut Errors, what: &str| {
        if layout.image.is_some() {
            // precise: the input exists, but it is an image, which only the CNN reads as one
            e.push(
                field,
                "image_needs_cnn",
                format!(
                    "a {what} reads a time series; this feature specification's input is an \
                     image: use a `cnn` backbone (or an `mlp` over its pixels)"
                ),
            );
            return false;
        }
        if !layout.has_series() {
            e.push(
                field,
                "sequence_model_needs_series",
                format!(
                    "a {what} reads the time series, and this feature specification has none \
                     (add `time_series`, or use an `mlp` backbone)"
                ),
            );
        }
        layout.has_series()
    };
    let seq = |e: &mut Errors, cell, hidden, layers, readout| {
        in_range(e, &format!("{field}.hidden"), hidden, 1, MAX_HIDDEN_WIDTH);
        in_range(
            e,
            &format!("{field}.layers"),
            layers,
            1,
            MAX_RECURRENT_LAYERS,
        );
        SeqConfig {
            cell,
            time: layout.steps,
            features: layout.channels,
            hidden,
            mask: MaskLayout::PerValue,
            readout,
            layers,
        }
    };
    match b {
        BackboneRequest::Mlp {
            hidden,
            dropout,
            norm,
            inputs,
        } => {
            hidden_widths(e, &format!("{field}.hidden"), hidden);
            dropout_ok(e, &format!("{field}.dropout"), *dropout);
            let statics = ColumnRange {
                start: layout.statics_start(),
                end: width,
            };
            let columns = match inputs {
                InputsRequest::All => vec![ColumnRange {
                    start: 0,
                    end: width,
                }],
                InputsRequest::Static => vec![statics],
                InputsRequest::Series => {
                    if !needs_series(e, "series MLP") {
                        return None;
                    }
                    vec![series]
                }
                InputsRequest::Features(names) => {
                    if names.is_empty() {
                        e.push(
                            format!("{field}.inputs"),
                            "empty_list",
                            "name at least one feature",
                        );
                        return None;
                    }
                    let mut columns = Vec::new();
                    for name in names {
                        match layout.features.iter().find(|(n, _)| n == name) {
                            Some((_, r)) if !r.is_empty() => columns.push(ColumnRange {
                                start: r.start,
                                end: r.end,
                            }),
                            Some(_) => {}
                            None => e.push(
                                format!("{field}.inputs"),
                                "unknown_feature",
                                format!("the feature specification has no feature `{name}`"),
                            ),
                        }
                    }
                    columns.sort_by_key(|c| c.start);
                    columns.dedup();
                    if columns.is_empty() {
                        return None;
                    }
                    columns
                }
            };
            let inputs = columns.iter().map(|c| c.end - c.start).sum();
            Some(over(
                columns,
                Backbone::Mlp {
                    inputs,
                    hidden: hidden.clone(),
                    dropout: *dropout,
                    norm: *norm,
                },
            ))
        }
        BackboneRequest::Gru(r) | BackboneRequest::Lstm(r) => {
            let cell = if matches!(b, BackboneRequest::Gru(_)) {
                Cell::Gru
            } else {
                Cell::Lstm
            };
            let seq = seq(e, cell, r.hidden, r.layers, r.readout);
            if !needs_series(e, "recurrent network") {
                return None;
            }
            Some(over(vec![series], Backbone::Recurrent(seq)))
        }
        BackboneRequest::Fusion {
            cell,
            hidden,
            layers,
            static_hidden,
            readout,
        } => {
            let seq = seq(e, *cell, *hidden, *layers, *readout);
            hidden_widths(e, &format!("{field}.static_hidden"), static_hidden);
            if !needs_series(e, "recurrent + static fusion") {
                return None;
            }
            Some(Backbone::Fusion {
                series: seq,
                static_inputs: layout.statics(),
                static_hidden: static_hidden.clone(),
            })
        }
        BackboneRequest::Cnn { stages, groups } => {
            if stages.is_empty() || stages.len() > MAX_CNN_STAGES {
                e.push(
                    format!("{field}.stages"),
                    "out_of_range",
                    format!("a CNN has 1 to {MAX_CNN_STAGES} stages"),
                );
            }
            for (i, w) in stages.iter().enumerate() {
                in_range(e, &format!("{field}.stages[{i}]"), *w, 1, 1024);
            }
            if let Some((channels, height, width)) = layout.image {
                // every stage after the first halves the picture: each must still have
                // pixels to halve, or the deeper stages only see padding
                let smallest = 1usize << stages.len().saturating_sub(1).min(16);
                if height < smallest || width < smallest {
                    e.push(
                        format!("{field}.stages"),
                        "image_too_small_for_model",
                        format!(
                            "{} stages halve the image {} times; a {height}x{width} image \
                             takes at most {} stages",
                            stages.len(),
                            stages.len().saturating_sub(1),
                            height.min(width).ilog2() + 1
                        ),
                    );
                    return None;
                }
                let image = ColumnRange {
                    start: 0,
                    end: layout.image_width(),
                };
                return Some(over(
                    vec![image],
                    Backbone::Cnn(CnnConfig {
                        channels,
                        height,
                        width,
                        stages: stages.clone(),
                        groups: *groups,
                    }),
                ));
            }
            if !layout.has_series() {
                e.push(
                    field,
                    "sequence_model_needs_series",
                    "a CNN reads an image or the time series as a [2, steps, channels] grid, and \
                     this feature specification has neither (add `image` or `time_series`)",
                );
                return None;
            }
            Some(over(
                vec![series],
                Backbone::Cnn(CnnConfig {
                    channels: 2,
                    height: layout.steps,
                    width: layout.channels,
                    stages: stages.clone(),
                    groups: *groups,
                }),
            ))
        }
    }
}
