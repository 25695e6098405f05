//! Submitting a study: the body of `POST /v1/studies`, its parsing into a [`StudySpec`], and
//! its assessment against the permit it claims to run under.
//!
//! Parsing reports every bad field at once; the assessment reports every reason the permit does
//! not cover the study (the same governance check every round runs, plus the privacy budget the
//! whole plan would spend), so a researcher fixes a refused study in one go.

use fl_engine::{
    dp::{default_orders, sigma_for_target_epsilon, RdpConversion},
    model::{
        Backbone, Cell, CnnConfig, ColumnRange, MaskLayout, MlpConfig, Norm, Readout, SeqConfig,
        MAX_RECURRENT_LAYERS,
    },
    strategy::{dp_steps_per_round, Support, TrainSetting, WeightedMean},
    train::{Budget, LossKind, OptimizerConfig, RecordDp, TrainConfig},
    ModelSpec, Net, ParameterSet, StrategyConfig,
};
use secagg::ddg::{
    accounting::epsilon as ddg_epsilon,
    mechanism::{DdgParams, DdgPlan},
};
use serde::{Deserialize, Serialize};

use super::{
    application::{non_blank, parse_list},
    check::{check, CheckRequest, DenyReason},
    dp_requirement::DpRequirement,
    optout::FilterPolicy,
    study::{
        Aggregation, DecisionThreshold, DpLevel, DpPlan, ModelRelease, OutputCheck, RowLayout,
        SecureAggregation, StudySpec, StudyTask,
    },
    time::Timestamp,
    BudgetUnit, DataCategory, Errors, FieldError, OrgId, Permit, PermitId, Purpose,
};
use crate::domain::feature_spec::FeatureSpec;

pub const MAX_ROUNDS: u64 = 1000;
pub const MAX_LOCAL_STEPS: usize = 100_000;
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
    Gru {
        hidden: usize,
        /// Stacked layers (1 to 4, default 1).
        #[serde(default = "one")]
        layers: usize,
        /// `last` (default) or `mean` over observed steps.
        #[serde(default)]
        #[cfg_attr(feature = "openapi", schema(value_type = String))]
        readout: Readout,
    },
    /// An LSTM over the hourly series (masked missing bins).
    Lstm {
        hidden: usize,
        /// Stacked layers (1 to 4, default 1).
        #[serde(default = "one")]
        layers: usize,
        #[serde(default)]
        #[cfg_attr(feature = "openapi", schema(value_type = String))]
        readout: Readout,
    },
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

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OptimizerRequest {
    /// `sgd`, `adam` or `adamw`.
    pub name: String,
    pub lr: f64,
    pub weight_decay: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DpRequest {
    /// `client` (DP-FedAvg at the gateway), `record` (DP-SGD at each data holder), or `none`
    /// (no formal DP: no clipping, no noise, no epsilon spent; only under a permit whose
    /// `dp_requirement` is `none_allowed`, and then no other `dp` field applies).
    pub level: String,
    /// Required at `client` and `record` level.
    #[serde(default = "absent_number")]
    pub clip_norm: f64,
    /// Give either the noise multiplier or the epsilon the whole study may spend.
    pub noise_multiplier: Option<f64>,
    pub target_epsilon: Option<f64>,
    /// Record level only: the Poisson sampling rate of DP-SGD.
    pub sampling_rate: Option<f64>,
    /// Development mode only: derive the aggregation noise from this value instead of a fresh
    /// secret, so that two runs can be compared bit for bit. Anyone who knows it can remove
    /// the noise, so a production gateway refuses it.
    pub noise_seed: Option<u64>,
    /// Client level under secure aggregation only (distributed DP: the holders add the noise):
    /// the fewest holders whose noise shares a round's sum must hold. Each holder adds
    /// `1/min_survivors` of the planned variance, and a round with fewer survivors is
    /// discarded before it is unmasked. At least the secure-aggregation threshold, at most the
    /// number of data holders; default the larger of the threshold and `min_sites`.
    pub min_survivors: Option<u32>,
    /// Client level under secure aggregation only: bits of the ring `Z_{2^b}` the noisy,
    /// rounded updates are summed in (2 to 63, default 32). Fewer bits coarsen the rounding,
    /// which costs epsilon; too few cannot hold the sum at all.
    pub modulus_bits: Option<u32>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OutputCheckRequest {
    pub min_sites: usize,
    pub min_samples_per_site: u64,
}

/// The body of `POST /v1/studies`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StudyRequest {
    pub title: String,
    pub permit_id: String,
    /// The Art. 53(1) purpose this study serves.
    pub purpose: String,
    /// The Art. 51(1) categories it processes; must cover every feature's category.
    pub categories: Vec<String>,
    pub data_holders: Vec<String>,
    /// The feature specification the data holders extract model inputs with.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub feature_spec: serde_json::Value,
    /// `"binary"`, `{"multiclass": {"classes": C}}`, `{"multilabel": {"labels": L}}` or
    /// `"survival"`; follows from the feature specification's label when left out.
    pub task: Option<StudyTask>,
    /// The engine's loss, e.g. `{"BceWithLogits": {"pos_weight": 3.0}}`,
    /// `{"CrossEntropy": {"class_weights": [1, 4]}}`, `{"Focal": {"gamma": 2, "alpha": 0.25}}`
    /// or `"Cox"` (docs/fl-tasks.md); the task's default when left out.
    pub loss: Option<LossKind>,
    pub model: ModelRequest,
    /// Where each holder puts the decision threshold of its binary and multi-label metrics:
    /// `{"rule": "fixed", "value": 0.5}` (the default), or chosen on each holder's own
    /// validation part, `{"rule": "max_f1"}` or `{"rule": "youden_j"}` (maximal balanced
    /// accuracy); the holders' metrics report the threshold used. Not for multi-class or
    /// survival tasks. Parsed with the rest of the body so that every bad field is reported
    /// at once.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<DecisionThreshold>))]
    pub threshold: Option<serde_json::Value>,
    /// The federated method and its settings, e.g. `{"name": "fedprox", "mu": 0.1}`; settings
    /// left out take the method's defaults (docs/fl-methods.md). Parsed with the rest of the
    /// body so that every bad field is reported at once.
    #[cfg_attr(feature = "openapi", schema(value_type = StrategyConfig))]
    pub strategy: serde_json::Value,
    pub optimizer: OptimizerRequest,
    /// Local work per round: steps or epochs (exactly one).
    pub local_steps: Option<usize>,
    pub local_epochs: Option<usize>,
    pub batch_size: usize,
    pub rounds: u64,
    /// Results needed to aggregate a round; at most the number of data holders.
    pub min_sites: usize,
    pub round_deadline_seconds: u64,
    pub dp: DpRequest,
    pub output_check: Option<OutputCheckRequest>,
    /// Which global model a completed study releases: `"best_validation"` (default: the round
    /// with the lowest example-weighted validation loss) or `"last"`.
    pub release: Option<ModelRelease>,
    /// How each round's updates are combined: `{"rule": "mean"}` (default), or a
    /// Byzantine-robust rule: `{"rule": "krum", "f": 1}`, `{"rule": "multi_krum", "f": 1,
    /// "m": 3}`, `{"rule": "median"}`, `{"rule": "trimmed_mean", "per_side": 1}`,
    /// `{"rule": "bulyan", "f": 1}`, `{"rule": "fltrust", "root_holder": "<holder>"}` (one of
    /// the study's data holders; not under client-level DP).
    pub aggregation: Option<Aggregation>,
    pub seed: Option<u64>,
    /// Share of each holder's training rows kept for validation (default 0.2).
    pub validation_fraction: Option<f64>,
    #[serde(default)]
    pub optout_policy: FilterPolicy,
    /// Sum the holders' updates under secure aggregation, so that the gateway never sees one
    /// holder's update (docs/secure-aggregation.md): `{}` takes the defaults, or
    /// `{"threshold": t, "neighbours": k}`. Needs at least 3 data holders, a method whose
    /// server only reads the mean of the updates, the plain mean, and `dp.level` `none` or
    /// `client` (then realised as distributed DP: each holder clips its update and adds its
    /// share of discrete Gaussian noise before masking, see `dp.min_survivors`).
    pub secure_aggregation: Option<SecureAggregationRequest>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SecureAggregationRequest {
    /// Holders that must stay to the end of every protocol stage (default: two thirds of
    /// `neighbours`, rounded up); more than half of `neighbours`, at most `neighbours`.
    pub threshold: Option<u32>,
    /// Holders each one masks with (default: all the others, the complete graph); fewer must
    /// be even (the SecAgg+ graph).
    pub neighbours: Option<u32>,
}

/// Floors the HDAB sets for every study's output check.
#[derive(Debug, Clone, Copy)]
pub struct OutputFloor {
    pub min_sites: usize,
    pub min_samples_per_site: u64,
}

/// What the federation can carry: the largest update a node may upload.
#[derive(Debug, Clone, Copy)]
pub struct FederationLimits {
    pub max_update_bytes: usize,
}

fn positive(e: &mut Errors, field: &str, v: f64) -> bool {
    let ok = v.is_finite() && v > 0.0;
    if !ok {
        e.push(
            field,
            "invalid_number",
            format!("`{field}` must be a finite number > 0, got {v}"),
        );
    }
    ok
}

fn in_range<T: PartialOrd + std::fmt::Display + Copy>(
    e: &mut Errors,
    field: &str,
    v: T,
    lo: T,
    hi: T,
) {
    if v < lo || v > hi {
        e.push(
            field,
            "out_of_range",
            format!("`{field}` must lie in [{lo}, {hi}], got {v}"),
        );
    }
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
        BackboneRequest::Gru {
            hidden,
            layers,
            readout,
        }
        | BackboneRequest::Lstm {
            hidden,
            layers,
            readout,
        } => {
            let cell = if matches!(b, BackboneRequest::Gru { .. }) {
                Cell::Gru
            } else {
                Cell::Lstm
            };
            let seq = seq(e, cell, *hidden, *layers, *readout);
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

/// The task the study trains: the one it names, or the one its label determines; refused
/// where the label cannot provide it.
fn parse_task(e: &mut Errors, req: Option<StudyTask>, spec: &FeatureSpec) -> Option<StudyTask> {
    use crate::domain::feature_spec::MAX_CLASSES;
    let label = spec.task();
    let task = req.unwrap_or(label.default_study_task());
    match task {
        StudyTask::Multiclass { classes } if !(2..=MAX_CLASSES as u32).contains(&classes) => {
            e.push(
                "task.multiclass.classes",
                "out_of_range",
                format!("a multi-class task has 2 to {MAX_CLASSES} classes"),
            );
            return None;
        }
        StudyTask::Multilabel { labels }
            if !(1..=fl_engine::data::MAX_LABELS).contains(&labels) =>
        {
            e.push(
                "task.multilabel.labels",
                "out_of_range",
                format!(
                    "a multi-label task has 1 to {} labels",
                    fl_engine::data::MAX_LABELS
                ),
            );
            return None;
        }
        _ => {}
    }
    if !label.trains(task) {
        e.push(
            "task",
            "task_label_mismatch",
            format!(
                "the feature specification's label `{}` is {}; it cannot train a {} task",
                spec.label.name,
                label.describe(),
                task.describe()
            ),
        );
        return None;
    }
    Some(task)
}

/// The loss: the one named, or the task's default; refused where it does not fit the task
/// and the model's outputs, or its settings are out of range.
fn parse_loss(e: &mut Errors, req: Option<&LossKind>, task: StudyTask) -> LossKind {
    let loss = req.cloned().unwrap_or_else(|| task.default_loss());
    let outputs = task.outputs();
    let positive = |v: f32| v.is_finite() && v > 0.0;
    let bad = |e: &mut Errors, field: &str, why: String| {
        e.push(format!("loss.{field}"), "invalid_loss_setting", why)
    };
    match &loss {
        LossKind::BceWithLogits {
            pos_weight: Some(w),
        } if !positive(*w) => bad(
            e,
            "pos_weight",
            format!("must be a finite number > 0, got {w}"),
        ),
        LossKind::CrossEntropy {
            class_weights: Some(w),
        } if w.len() != outputs || !w.iter().all(|v| positive(*v)) => bad(
            e,
            "class_weights",
            format!("give {outputs} finite weights > 0, one per class"),
        ),
        LossKind::Focal { gamma, alpha } => {
            if !(gamma.is_finite() && *gamma >= 0.0) {
                bad(
                    e,
                    "gamma",
                    format!("must be a finite number >= 0, got {gamma}"),
                );
            }
            if let Some(a) = alpha.filter(|a| !(0.0..=1.0).contains(a)) {
                bad(e, "alpha", format!("must lie in [0, 1], got {a}"));
            }
        }
        LossKind::MultiLabelBce {
            pos_weight: Some(w),
        } if w.len() != outputs || !w.iter().all(|v| positive(*v)) => bad(
            e,
            "pos_weight",
            format!("give {outputs} finite weights > 0, one per label"),
        ),
        _ => {}
    }
    if let Err(err) = loss.check_task(task.engine(), outputs) {
        e.push(
            "loss",
            "loss_task_mismatch",
            format!(
                "a {} task cannot train with this loss: {err}",
                task.describe()
            ),
        );
    }
    loss
}

/// The study's decision threshold: the one asked for, or 0.5 for the tasks that have one
/// (binary, multi-label); `None` for the tasks that have none (multi-class predictions are the
/// most probable class, a survival model's output is a risk score), which refuse one.
fn parse_threshold(
    e: &mut Errors,
    raw: Option<&serde_json::Value>,
    task: Option<StudyTask>,
) -> Option<DecisionThreshold> {
    let has_threshold =
        |t: &StudyTask| matches!(t, StudyTask::Binary | StudyTask::Multilabel { .. });
    let Some(raw) = raw.filter(|r| !r.is_null()) else {
        return task
            .filter(has_threshold)
            .map(|_| DecisionThreshold::default());
    };
    let threshold = match serde_json::from_value::<DecisionThreshold>(raw.clone()) {
        Ok(t) => Some(t),
        Err(err) => {
            e.push(
                "threshold",
                "invalid_threshold",
                format!(
                    "give {{\"rule\": \"fixed\", \"value\": v}}, {{\"rule\": \"max_f1\"}} or \
                     {{\"rule\": \"youden_j\"}}: {err}"
                ),
            );
            None
        }
    };
    if let Some(DecisionThreshold::Fixed { value }) = threshold {
        if !(value.is_finite() && value > 0.0 && value < 1.0) {
            e.push(
                "threshold.value",
                "invalid_threshold",
                format!("a fixed threshold lies strictly between 0 and 1, got {value}"),
            );
        }
    }
    if let Some(t) = task.filter(|t| !has_threshold(t)) {
        e.push(
            "threshold",
            "threshold_task_mismatch",
            format!(
                "a {} task has no decision threshold ({}): leave `threshold` out",
                t.describe(),
                match t {
                    StudyTask::Survival => "the model's output is a risk score",
                    _ => "a prediction is the most probable class",
                }
            ),
        );
        return None;
    }
    threshold
}

/// What one site's update of the model weighs on the wire, at least: the parameters the
/// method sends, plus its side values (control variates, ...), as the safetensors file the
/// node uploads. Also whether the model keeps site-local state (BatchNorm statistics), and
/// how many entries the shared model has (the vector summed under secure aggregation).
fn update_size(
    model: &ModelSpec,
    strategy: &StrategyConfig,
    holders: &[OrgId],
    rounds: u64,
) -> fl_engine::Result<(usize, bool, usize)> {
    let net = Net::new(model, 0)?;
    let local_state = net
        .vars()
        .iter()
        .any(|(n, _)| fl_engine::params::is_site_local_state(n));
    let global = net.parameters()?.select(&strategy.shared());
    let server = strategy.server(holders.len().max(1), Box::new(WeightedMean))?;
    let ins = server.configure_fit(rounds.max(1), &global)?;
    let study = super::StudyId::new().to_string();
    let holder = holders.iter().map(OrgId::as_str).max_by_key(|h| h.len());
    let file = |p: &ParameterSet| -> fl_engine::Result<usize> {
        Ok(fl_engine::save_safetensors(p, &study, rounds, holder)?
            .0
            .len())
    };
    let mut bytes = file(&ins.params)?;
    if !ins.extras.is_empty() {
        // sent in the same file under an `extras/` prefix
        bytes += file(&ins.extras)? + ins.extras.len() * "extras/".len();
    }
    Ok((bytes, local_state, global.to_flat().len()))
}

/// The engine's configuration of the requested method; its range checks are the engine's.
fn strategy_from_request(e: &mut Errors, raw: &serde_json::Value) -> Option<StrategyConfig> {
    let Some(name) = raw.get("name").and_then(|n| n.as_str()) else {
        e.push(
            "strategy.name",
            "unknown_strategy",
            "give the method as `strategy.name`",
        );
        return None;
    };
    // every setting of every method has a default, so a name alone parses iff it is a method
    if StrategyConfig::named(name).is_none() {
        e.push(
            "strategy.name",
            "unknown_strategy",
            format!("`{name}` is not a strategy this gateway runs"),
        );
        return None;
    }
    for (field, v) in raw.as_object().into_iter().flatten() {
        if let Some(v) = v.as_f64().filter(|v| !v.is_finite() || *v < 0.0) {
            e.push(
                format!("strategy.{field}"),
                "invalid_number",
                format!("`strategy.{field}` must be >= 0, got {v}"),
            );
        }
    }
    let config = match serde_json::from_value::<StrategyConfig>(raw.clone()) {
        Ok(c) => c,
        Err(err) => {
            e.push("strategy", "invalid_strategy_setting", err.to_string());
            return None;
        }
    };
    if let Err(err) = config.spec().validate() {
        // the rules that ask the method (model parts, DP support) would only repeat this
        e.push("strategy", "invalid_strategy_setting", err.to_string());
        return None;
    }
    Some(config)
}

/// The method's rule on the local training (SCAFFOLD: plain SGD, FedNova: SGD).
fn check_training(
    e: &mut Errors,
    strategy: &StrategyConfig,
    optimizer: &OptimizerConfig,
    loss: LossKind,
) {
    let probe = TrainConfig {
        optimizer: optimizer.clone(),
        budget: Budget::Steps(1),
        batch_size: 1,
        loss,
        record_dp: None,
    };
    if let Err(refusal) = strategy.spec().check_train(&probe) {
        let field = match refusal.setting {
            TrainSetting::Optimizer => "optimizer.name",
            TrainSetting::Momentum => "optimizer.momentum",
            TrainSetting::WeightDecay => "optimizer.weight_decay",
        };
        e.push(field, refusal.code, refusal.reason);
    }
}

fn parse_optimizer(e: &mut Errors, o: &OptimizerRequest) -> Option<OptimizerConfig> {
    positive(e, "optimizer.lr", o.lr);
    let mut config = match o.name.as_str() {
        "sgd" => OptimizerConfig::sgd(o.lr),
        "adam" => OptimizerConfig::adam(o.lr),
        "adamw" => OptimizerConfig::adamw(o.lr),
        other => {
            e.push(
                "optimizer.name",
                "unknown_optimizer",
                format!("`{other}` is not one of sgd, adam, adamw"),
            );
            return None;
        }
    };
    if let Some(wd) = o.weight_decay {
        if !(wd.is_finite() && wd >= 0.0) {
            e.push("optimizer.weight_decay", "invalid_number", "must be >= 0");
        }
        match &mut config {
            OptimizerConfig::Sgd { weight_decay, .. }
            | OptimizerConfig::Adam { weight_decay, .. }
            | OptimizerConfig::AdamW { weight_decay, .. } => *weight_decay = wd,
        }
    }
    Some(config)
}

/// Parses the body into a study, or every reason it is malformed. `delta` is the permit's.
pub fn parse_study(
    req: &StudyRequest,
    delta: f64,
    floor: OutputFloor,
    limits: FederationLimits,
    default_seed: u64,
) -> Result<StudySpec, Vec<FieldError>> {
    let mut e = Errors::default();
    non_blank(&mut e, "title", &req.title, 200);
    let permit_id = e.take("permit_id", PermitId::parse(&req.permit_id));
    let purpose = e.take("purpose", Purpose::parse(&req.purpose));
    let categories = parse_list(&mut e, "categories", &req.categories, DataCategory::parse);
    let data_holders = parse_list(&mut e, "data_holders", &req.data_holders, OrgId::parse);

    let spec = match FeatureSpec::from_json(&req.feature_spec.to_string()) {
        Ok(s) => Some(s),
        Err(err) => {
            e.push("feature_spec", "invalid_feature_spec", err.to_string());
            None
        }
    };
    if let Some(spec) = &spec {
        for f in &spec.features {
            if !categories.contains(&f.category) {
                e.push(
                    format!("feature_spec.features[{}]", f.name),
                    "feature_category_not_declared",
                    format!(
                        "feature `{}` reads `{}` data, which `categories` does not declare",
                        f.name,
                        f.category.as_str()
                    ),
                );
            }
        }
        // the label's own category and each class's or label's
        let undeclared: std::collections::BTreeSet<_> = spec
            .label
            .categories()
            .filter(|c| !categories.contains(c))
            .collect();
        for c in undeclared {
            e.push(
                "feature_spec.label",
                "feature_category_not_declared",
                format!(
                    "the label reads `{}` data, which `categories` does not declare",
                    c.as_str()
                ),
            );
        }
    }
    let layout = spec.as_ref().map(RowLayout::of);
    let task = spec.as_ref().and_then(|s| parse_task(&mut e, req.task, s));
    let loss = task.map(|t| parse_loss(&mut e, req.loss.as_ref(), t));
    let threshold = parse_threshold(&mut e, req.threshold.as_ref(), task);
    // without a valid task the model is checked at the width of a binary one
    let outputs = task.map_or(1, StudyTask::outputs);
    let model = parse_model(&mut e, &req.model, layout.as_ref(), outputs);
    // built only from widths in range: the count builds the model's variables
    let model_fields_ok = |e: &Errors| e.0.iter().all(|f| !f.field.starts_with("model"));
    let mut parameter_count = None;
    if let Some(m) = model.as_ref().filter(|_| model_fields_ok(&e)) {
        match m.parameter_count() {
            Ok(n) => parameter_count = Some(n),
            Err(err) => e.push("model", "invalid_model", err.to_string()),
        }
    }
    let strategy = strategy_from_request(&mut e, &req.strategy);
    if let (Some(m), Some(s)) = (&model, &strategy) {
        if let Err(err) = s.check_model(m) {
            e.push("model", "model_strategy_mismatch", err.to_string());
        }
    }
    if let (Some(t), Some(s)) = (task, &strategy) {
        if let Support::No(why) = s.supports_task(t.engine()) {
            e.push(
                "strategy.name",
                "strategy_refuses_task",
                format!("{} does not train a {} task: {why}", s.name(), t.describe()),
            );
        }
    }
    let optimizer = parse_optimizer(&mut e, &req.optimizer);
    if let (Some(s), Some(o)) = (&strategy, &optimizer) {
        check_training(&mut e, s, o, loss.clone().unwrap_or_else(LossKind::bce));
    }
    let budget = match (req.local_steps, req.local_epochs) {
        (Some(s), None) => {
            in_range(&mut e, "local_steps", s, 1, MAX_LOCAL_STEPS);
            Some(Budget::Steps(s))
        }
        (None, Some(n)) => {
            in_range(&mut e, "local_epochs", n, 1, 1000);
            Some(Budget::Epochs(n))
        }
        _ => {
            e.push(
                "local_steps",
                "local_work_required",
                "give exactly one of `local_steps` and `local_epochs`",
            );
            None
        }
    };
    in_range(&mut e, "batch_size", req.batch_size, 1, 65_536);
    in_range(&mut e, "rounds", req.rounds, 1, MAX_ROUNDS);
    in_range(
        &mut e,
        "min_sites",
        req.min_sites,
        1,
        data_holders.len().max(1),
    );
    in_range(
        &mut e,
        "round_deadline_seconds",
        req.round_deadline_seconds,
        1,
        7 * 24 * 3600,
    );
    let aggregation = req.aggregation.clone().unwrap_or_default();
    check_aggregation(
        &mut e,
        &aggregation,
        &strategy,
        req.min_sites,
        &data_holders,
        &req.dp.level,
    );
    let secure_aggregation =
        parse_secure_aggregation(&mut e, req, data_holders.len(), &strategy, &aggregation);
    let validation_fraction = req.validation_fraction.unwrap_or(0.2);
    if !(validation_fraction > 0.0 && validation_fraction <= 0.5) {
        e.push(
            "validation_fraction",
            "out_of_range",
            "must lie in (0, 0.5]",
        );
    }

    let output_check = req.output_check.map_or(
        OutputCheck {
            min_sites: floor.min_sites.max(req.min_sites),
            min_samples_per_site: floor.min_samples_per_site,
        },
        |o| OutputCheck {
            min_sites: o.min_sites,
            min_samples_per_site: o.min_samples_per_site,
        },
    );
    if output_check.min_sites < floor.min_sites
        || output_check.min_samples_per_site < floor.min_samples_per_site
    {
        e.push(
            "output_check",
            "output_check_below_floor",
            format!(
                "the HDAB requires at least {} sites and {} samples per site before a model is released",
                floor.min_sites, floor.min_samples_per_site
            ),
        );
    }

    let mut dp = parse_dp(&mut e, &req.dp, &strategy, budget, req.rounds, delta);
    if secure_aggregation.is_none() || req.dp.level != "client" {
        for (field, given) in [
            ("dp.min_survivors", req.dp.min_survivors.is_some()),
            ("dp.modulus_bits", req.dp.modulus_bits.is_some()),
        ] {
            if given && req.dp.level != "none" {
                e.push(
                    field,
                    "not_applicable",
                    "only client-level DP under secure aggregation plans the holders' noise",
                );
            }
        }
    }
    let record_dp = req.dp.level == "record";
    if let Some(l) = loss.as_ref().filter(|l| record_dp && !l.decomposes()) {
        e.push(
            "dp.level",
            "loss_refuses_record_dp",
            format!(
                "record-level DP-SGD clips each example's gradient, and the {l:?} loss has no \
                 per-example term (each event's risk set is the whole batch); use client-level \
                 DP (docs/fl-tasks.md)"
            ),
        );
    }
    // entries of the update vector the holders sum under secure aggregation
    let mut update_len = None;
    if let (Some(m), Some(s), Some(count)) = (&model, &strategy, parameter_count) {
        if model_fields_ok(&e) {
            match update_size(m, s, &data_holders, req.rounds) {
                Ok((bytes, local_state, shared)) => {
                    update_len = Some(shared);
                    if bytes > limits.max_update_bytes {
                        e.push(
                            "model",
                            "model_too_large",
                            format!(
                                "the model has {count} parameters; one site's {} update is at \
                                 least {bytes} bytes, over the federation's limit of {} bytes",
                                s.name(),
                                limits.max_update_bytes
                            ),
                        );
                    }
                    if local_state && record_dp {
                        e.push(
                            "dp.level",
                            "model_refuses_record_dp",
                            "record-level DP needs per-example gradients, which BatchNorm's \
                             batch statistics couple: use GroupNorm or LayerNorm",
                        );
                    }
                }
                Err(err) => e.push("model", "invalid_model", err.to_string()),
            }
        }
    }
    let seed = req.seed.unwrap_or(default_seed);
    if let (Some(plan), Some(sa), Some(dim)) = (dp.as_mut(), secure_aggregation, update_len) {
        if plan.level == DpLevel::Client {
            let request = DistributedRequest {
                dp: &req.dp,
                secure_aggregation: sa,
                holders: u32::try_from(data_holders.len()).unwrap_or(u32::MAX),
                min_sites: req.min_sites,
                dim,
                rounds: req.rounds,
                seed,
            };
            match plan_distributed(&mut e, &request, plan) {
                Some((distributed, multiplier)) => {
                    plan.noise_multiplier = multiplier;
                    plan.distributed = Some(distributed);
                }
                None => dp = None,
            }
        }
    }
    let mut train = None;
    if let (Some(optimizer), Some(budget), Some(dp), Some(loss)) = (optimizer, budget, dp, loss) {
        train = Some(TrainConfig {
            optimizer,
            budget,
            batch_size: req.batch_size,
            loss,
            record_dp: (dp.level == DpLevel::Record).then_some(RecordDp {
                clip_norm: dp.clip_norm,
                noise_multiplier: dp.noise_multiplier,
                sampling_rate: dp.sampling_rate,
            }),
        });
    }
    if !e.0.is_empty() {
        return Err(e.0);
    }
    let (
        Some(permit_id),
        Some(purpose),
        Some(task),
        Some(model),
        Some(strategy),
        Some(train),
        Some(dp),
    ) = (permit_id, purpose, task, model, strategy, train, dp)
    else {
        return Err(vec![FieldError::new(
            "",
            "invalid_study",
            "the study is incomplete",
        )]);
    };
    Ok(StudySpec {
        title: req.title.trim().to_owned(),
        permit_id,
        purpose,
        categories,
        data_holders,
        feature_spec: req.feature_spec.clone(),
        task,
        model,
        parameter_count,
        strategy,
        train,
        rounds: req.rounds,
        min_sites: req.min_sites,
        round_deadline_seconds: req.round_deadline_seconds,
        dp,
        output_check,
        threshold,
        release: req.release.unwrap_or_default(),
        aggregation,
        seed,
        validation_fraction,
        optout_policy: req.optout_policy,
        secure_aggregation,
    })
}

/// The study's secure aggregation, checked against the method, the aggregation rule and the
/// privacy plan (docs/secure-aggregation.md, "Which studies").
fn parse_secure_aggregation(
    e: &mut Errors,
    req: &StudyRequest,
    holders: usize,
    strategy: &Option<StrategyConfig>,
    aggregation: &Aggregation,
) -> Option<SecureAggregation> {
    let r = req.secure_aggregation?;
    let field = "secure_aggregation";
    if let Some(s) = strategy {
        if let Support::No(why) = s.secure_aggregation() {
            e.push(
                "strategy.name",
                "strategy_incompatible_with_secure_aggregation",
                format!(
                    "{} reads more of each holder than the mean of the updates ({why}), and \
                     secure aggregation reveals only their sum",
                    s.name()
                ),
            );
        }
    }
    if *aggregation != Aggregation::Mean {
        e.push(
            "aggregation",
            "aggregation_incompatible_with_secure_aggregation",
            "a robust rule reads every holder's update; secure aggregation reveals only their sum",
        );
    }
    if req.dp.level == "record" {
        e.push(
            "dp.level",
            "dp_level_incompatible_with_secure_aggregation",
            "secure aggregation runs with `dp.level` `client` (each holder clips its update and \
             adds its share of the noise before masking) or `none`; record-level DP-SGD is not \
             combined with it",
        );
    }
    let n = u32::try_from(holders).unwrap_or(u32::MAX);
    if n < 3 {
        e.push(
            field,
            "secure_aggregation_needs_three_holders",
            format!("secure aggregation needs at least 3 data holders, the study names {n}"),
        );
        return None;
    }
    let k = r.neighbours.unwrap_or(n - 1);
    let mut ok = true;
    if !(2..n).contains(&k) || (k != n - 1 && k % 2 == 1) {
        e.push(
            format!("{field}.neighbours"),
            "out_of_range",
            format!(
                "must be {} (every other holder) or an even number in 2..{}",
                n - 1,
                n - 1
            ),
        );
        ok = false;
    }
    // more than half the neighbours: a relay that calls half of them dropped and the other
    // half alive cannot collect both secrets of one holder
    let t = r
        .threshold
        .unwrap_or_else(|| (2 * k).div_ceil(3).max(k / 2 + 1));
    if ok && !(2 * t > k && t <= k && t >= 2) {
        e.push(
            format!("{field}.threshold"),
            "out_of_range",
            format!("must lie in {}..={k}", (k / 2 + 1).max(2)),
        );
        ok = false;
    }
    ok.then_some(SecureAggregation {
        threshold: t,
        neighbours: k,
    })
}

/// A number the request left out (JSON cannot spell NaN).
fn absent_number() -> f64 {
    f64::NAN
}

/// A study without formal DP takes no DP parameter: each one given is refused by name.
fn parse_no_formal_dp(e: &mut Errors, d: &DpRequest, delta: f64) -> Option<DpPlan> {
    let given = [
        ("dp.clip_norm", !d.clip_norm.is_nan()),
        ("dp.noise_multiplier", d.noise_multiplier.is_some()),
        ("dp.target_epsilon", d.target_epsilon.is_some()),
        ("dp.sampling_rate", d.sampling_rate.is_some()),
        ("dp.noise_seed", d.noise_seed.is_some()),
        ("dp.min_survivors", d.min_survivors.is_some()),
        ("dp.modulus_bits", d.modulus_bits.is_some()),
    ];
    for (field, _) in given.iter().filter(|(_, g)| *g) {
        e.push(
            *field,
            "not_applicable",
            "a study without formal DP clips nothing and adds no noise",
        );
    }
    Some(DpPlan::no_formal_dp(delta))
}

/// A robust rule must cover everything the method's server learns from a holder, and run on
/// every number of updates a round may aggregate (`min_sites` to every holder). FLTrust's root
/// holder must be one of the study's holders, and its rule is refused under client-level DP
/// (`dp_level` as requested).
fn check_aggregation(
    e: &mut Errors,
    aggregation: &Aggregation,
    strategy: &Option<StrategyConfig>,
    min_sites: usize,
    data_holders: &[OrgId],
    dp_level: &str,
) {
    if *aggregation == Aggregation::Mean {
        return;
    }
    if let Some(s) = strategy {
        if let Support::No(why) = s.spec().client_dp() {
            e.push(
                "aggregation",
                "strategy_bypasses_robust_aggregation",
                format!(
                    "{} combines what its holders send outside the aggregator ({why}): a robust \
                     rule would not cover it",
                    s.name()
                ),
            );
        }
    }
    if let Some(root) = aggregation.root_holder() {
        if !data_holders.contains(root) {
            e.push(
                "aggregation.root_holder",
                "root_holder_not_a_study_holder",
                format!(
                    "the root holder `{root}` is not one of the study's data holders: FLTrust's \
                     root update comes from a holder that trains under the permit like the others"
                ),
            );
        }
        if dp_level == "client" {
            e.push(
                "dp.level",
                "fltrust_refuses_client_dp",
                "FLTrust weighs and rescales every update by its root holder's update, which \
                 client-level DP does not privatise: the model would carry what that one \
                 unprivatised update gives away. Use record-level DP (the root holder's update \
                 is then privatised like every other) or another rule",
            );
        }
    }
    let rule = match aggregation.robust_rule(None) {
        Ok(Some(rule)) => rule,
        Ok(None) => return,
        Err(err) => {
            e.push("aggregation", "invalid_aggregation", err.to_string());
            return;
        }
    };
    let holders = data_holders.len();
    let lowest = min_sites.max(1);
    for n in lowest..=holders.max(lowest) {
        if let Err(why) = rule.sensitivity(aggregation.combined(n), 1.0) {
            let detail = match aggregation.root_holder() {
                Some(_) => format!(
                    "fltrust combines the updates of the holders other than its root holder, \
                     and a round of {n} holders leaves {}; a round aggregates between \
                     min_sites = {min_sites} and {holders} holders: {why}",
                    aggregation.combined(n)
                ),
                None => format!(
                    "{} cannot combine {n} updates, and a round aggregates between min_sites = \
                     {min_sites} and {holders} of them: {why}",
                    aggregation.name()
                ),
            };
            e.push("aggregation", "aggregation_needs_more_sites", detail);
            return;
        }
    }
}

fn parse_dp(
    e: &mut Errors,
    d: &DpRequest,
    strategy: &Option<StrategyConfig>,
    budget: Option<Budget>,
    rounds: u64,
    delta: f64,
) -> Option<DpPlan> {
    let level = match d.level.as_str() {
        "client" => DpLevel::Client,
        "record" => DpLevel::Record,
        "none" => return parse_no_formal_dp(e, d, delta),
        other => {
            e.push(
                "dp.level",
                "unknown_dp_level",
                format!("`{other}` is not one of `client`, `record`, `none`"),
            );
            return None;
        }
    };
    if let Some(s) = strategy {
        let spec = s.spec();
        match (level, spec.record_dp(), spec.client_dp()) {
            (DpLevel::Record, Support::No(why), _) => e.push(
                "dp.level",
                "strategy_refuses_record_dp",
                format!(
                    "{} does not train under record-level DP-SGD: {why}; see docs/fl-methods.md",
                    s.name()
                ),
            ),
            (DpLevel::Client, _, Support::No(why)) => e.push(
                "dp.level",
                "strategy_refuses_client_dp",
                format!(
                    "{} is not covered by client-level DP: {why}; see docs/fl-methods.md",
                    s.name()
                ),
            ),
            _ => {}
        }
    }
    let clip_ok = if d.clip_norm.is_nan() {
        e.push(
            "dp.clip_norm",
            "clip_norm_required",
            "client- and record-level DP clip to `clip_norm`: give it",
        );
        false
    } else {
        positive(e, "dp.clip_norm", d.clip_norm)
    };
    let (sampling_rate, steps_per_round) = match level {
        DpLevel::NoFormalDp => return parse_no_formal_dp(e, d, delta),
        DpLevel::Client => {
            if d.sampling_rate.is_some() {
                e.push(
                    "dp.sampling_rate",
                    "not_applicable",
                    "client-level DP selects every permitted holder each round",
                );
            }
            (1.0, 1)
        }
        DpLevel::Record => {
            let q = d.sampling_rate.unwrap_or(f64::NAN);
            if !(q > 0.0 && q <= 1.0) {
                e.push(
                    "dp.sampling_rate",
                    "invalid_sampling_rate",
                    "record-level DP needs a Poisson sampling rate in (0, 1]",
                );
            }
            let steps = match budget {
                Some(Budget::Steps(s)) => s,
                _ => {
                    e.push(
                        "local_steps",
                        "record_dp_needs_steps",
                        "record-level DP is accounted per step: give `local_steps`",
                    );
                    0
                }
            };
            // the engine's own count: Ditto's personal model trains privately too
            let probe = TrainConfig {
                optimizer: OptimizerConfig::sgd(1.0),
                budget: Budget::Steps(steps),
                batch_size: 1,
                loss: LossKind::bce(),
                record_dp: Some(RecordDp {
                    clip_norm: 1.0,
                    noise_multiplier: 1.0,
                    sampling_rate: 1.0,
                }),
            };
            let steps = strategy
                .as_ref()
                .and_then(|s| dp_steps_per_round(s, &probe))
                .unwrap_or(0);
            (q, steps)
        }
    };
    let sigma = match (d.noise_multiplier, d.target_epsilon) {
        (Some(s), None) => positive(e, "dp.noise_multiplier", s).then_some(s),
        (None, Some(t)) => {
            if !positive(e, "dp.target_epsilon", t) || steps_per_round == 0 || rounds == 0 {
                None
            } else {
                match sigma_for_target_epsilon(
                    t,
                    sampling_rate,
                    steps_per_round * rounds,
                    delta,
                    &default_orders(),
                    RdpConversion::Improved,
                ) {
                    Ok(s) => Some(s),
                    Err(err) => {
                        e.push(
                            "dp.target_epsilon",
                            "target_epsilon_unreachable",
                            err.to_string(),
                        );
                        None
                    }
                }
            }
        }
        _ => {
            e.push(
                "dp.noise_multiplier",
                "noise_required",
                "give exactly one of `noise_multiplier` and `target_epsilon`",
            );
            None
        }
    };
    if !clip_ok || steps_per_round == 0 || !(sampling_rate > 0.0 && sampling_rate <= 1.0) {
        return None;
    }
    Some(DpPlan {
        level,
        clip_norm: d.clip_norm,
        noise_multiplier: sigma?,
        target_epsilon: d.target_epsilon,
        sampling_rate,
        steps_per_round,
        delta,
        distributed: None,
    })
}

/// Ring of the distributed noise's secure sum when the study does not choose one.
pub const DEFAULT_DISTRIBUTED_MODULUS_BITS: u32 = 32;
/// Bound on the probability that any entry of a round's secure sum wraps around the ring; the
/// head-room in standard deviations follows from it and the model's size.
const DISTRIBUTED_WRAP_PROBABILITY: f64 = 1e-9;

/// What the study asks of distributed DP, and what it knows when it asks.
struct DistributedRequest<'a> {
    dp: &'a DpRequest,
    secure_aggregation: SecureAggregation,
    holders: u32,
    min_sites: usize,
    /// Entries of the update the holders sum.
    dim: usize,
    rounds: u64,
    seed: u64,
}

/// Client-level DP under secure aggregation as the distributed discrete Gaussian: `central`'s
/// clip and noise, split among at least `min_survivors` holders, in the ring the study
/// chose. With a target epsilon, the noise is found again by the distributed mechanism's own
/// accounting (rounding makes it slightly dearer than the Gaussian's).
fn plan_distributed(
    e: &mut Errors,
    r: &DistributedRequest,
    central: &DpPlan,
) -> Option<(DdgPlan, f64)> {
    let d = r.dp;
    if d.noise_seed.is_some() {
        e.push(
            "dp.noise_seed",
            "not_applicable",
            "under secure aggregation the holders draw the noise; the gateway adds none",
        );
    }
    let t = r.secure_aggregation.threshold;
    let floor = u32::try_from(r.min_sites).unwrap_or(u32::MAX).max(t);
    let min_survivors = d.min_survivors.unwrap_or(floor);
    let mut ok = true;
    if min_survivors > r.holders {
        e.push(
            "dp.min_survivors",
            "min_survivors_above_holders",
            format!(
                "noise planned for {min_survivors} surviving holders: the study names only {}, so \
                 no round could carry it",
                r.holders
            ),
        );
        ok = false;
    } else if min_survivors < t {
        e.push(
            "dp.min_survivors",
            "min_survivors_below_threshold",
            format!(
                "a round never sums fewer than the secure-aggregation threshold of {t} holders; \
                 planning the noise for {min_survivors} would add noise the accounting never \
                 counts"
            ),
        );
        ok = false;
    }
    let bits = d.modulus_bits.unwrap_or(DEFAULT_DISTRIBUTED_MODULUS_BITS);
    if !(2..=63).contains(&bits) {
        e.push(
            "dp.modulus_bits",
            "out_of_range",
            format!("must lie in [2, 63], got {bits}"),
        );
        ok = false;
    }
    if !ok || r.dim == 0 {
        return None;
    }
    let padded = r.dim.next_power_of_two() as f64;
    let k_stddevs = (2.0 * (2.0 * padded / DISTRIBUTED_WRAP_PROBABILITY).ln()).sqrt();
    // the sum of the holders' rounding errors alone must fit k standard deviations into half
    // the ring (the modular clipping bound of docs/secure-aggregation.md)
    let needed = k_stddevs * f64::from(r.holders).sqrt();
    if 2f64.powi(bits as i32) <= needed {
        let least = needed.log2().floor() as u32 + 1;
        e.push(
            "dp.modulus_bits",
            "modulus_too_small",
            format!(
                "a ring of 2^{bits} cannot hold the sum of {} holders' rounded updates within \
                 {k_stddevs:.1} standard deviations: the sum could wrap around; at least {least} \
                 bits are needed",
                r.holders
            ),
        );
        return None;
    }
    let rotation_seed: [u8; 32] = {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"ehds-gateway/distributed-dp/rotation");
        h.update(r.seed.to_le_bytes());
        h.finalize().into()
    };
    let plan = |multiplier: f64| {
        DdgPlan::new(DdgParams {
            dim: r.dim,
            clip: central.clip_norm,
            central_stddev: multiplier * central.clip_norm,
            min_survivors,
            max_clients: r.holders,
            modulus_bits: bits,
            k_stddevs,
            beta: (-0.5f64).exp(),
            rotation_seed,
        })
    };
    let infeasible = |e: &mut Errors, err: secagg::Error| {
        e.push(
            "dp",
            "distributed_dp_infeasible",
            format!("the holders' noise cannot be planned: {err}"),
        );
    };
    let multiplier = match d.target_epsilon {
        None => central.noise_multiplier,
        Some(target) => {
            let rounds = u32::try_from(r.rounds).unwrap_or(u32::MAX);
            let epsilon = |z: f64| -> Result<f64, secagg::Error> {
                Ok(ddg_epsilon(&plan(z)?, rounds, central.delta)?.epsilon)
            };
            // epsilon falls as the noise grows: bracket the target, then bisect
            let mut hi = central.noise_multiplier;
            let mut found = false;
            for _ in 0..40 {
                match epsilon(hi) {
                    Ok(eps) if eps <= target => {
                        found = true;
                        break;
                    }
                    Ok(_) => hi *= 2.0,
                    Err(err) => {
                        infeasible(e, err);
                        return None;
                    }
                }
            }
            if !found {
                e.push(
                    "dp.target_epsilon",
                    "target_epsilon_unreachable",
                    format!(
                        "no noise the ring of 2^{bits} can carry brings {} rounds of distributed \
                         DP under epsilon {target}",
                        r.rounds
                    ),
                );
                return None;
            }
            let mut lo = hi / 2.0;
            while (hi - lo) / hi > 1e-9 {
                let mid = (lo + hi) / 2.0;
                match epsilon(mid) {
                    Ok(eps) if eps <= target => hi = mid,
                    _ => lo = mid,
                }
            }
            hi
        }
    };
    match plan(multiplier) {
        Ok(p) => Some((p, multiplier)),
        Err(err) => {
            infeasible(e, err);
            None
        }
    }
}

/// A reason the permit does not cover a submitted study.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum StudyRefusal {
    Permit(DenyReason),
    Study(StudyReason),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum StudyReason {
    /// The permit's budget protects whole data holders; only client-level DP does that.
    DpLevelWeakerThanPermitUnit { permit_unit: BudgetUnit },
    /// The permit's `dp_requirement` does not allow the study's DP level.
    DpLevelNotPermitted {
        level: DpLevel,
        dp_requirement: DpRequirement,
        permitted_levels: Vec<DpLevel>,
    },
    /// The permit requires secure aggregation, which the study does not use.
    SecureAggregationRequired,
    /// `remaining`: the permit's unspent budget less what its other live studies reserved.
    BudgetTooSmallForOneRound {
        epsilon_one_round: f64,
        remaining: f64,
    },
    PlannedRoundsExceedBudget {
        planned_epsilon: f64,
        remaining: f64,
        affordable_rounds: u64,
    },
}

/// The reason as a sentence, shown beside its code wherever a refusal lists its reasons.
impl std::fmt::Display for StudyRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Permit(reason) => reason.fmt(f),
            Self::Study(reason) => reason.fmt(f),
        }
    }
}

impl std::fmt::Display for StudyReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::DpLevelWeakerThanPermitUnit { permit_unit } => write!(
                f,
                "the permit's budget is per {}: only client-level DP protects a whole data holder",
                permit_unit.as_str().replace('_', " ")
            ),
            Self::DpLevelNotPermitted {
                level,
                dp_requirement,
                permitted_levels,
            } => write!(
                f,
                "the permit's privacy requirement `{}` does not allow DP level `{}`; it allows {}",
                dp_requirement.as_str(),
                level.as_str(),
                permitted_levels
                    .iter()
                    .map(|l| format!("`{}`", l.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Self::SecureAggregationRequired => {
                f.write_str("the permit requires secure aggregation, which the study does not use")
            }
            Self::BudgetTooSmallForOneRound {
                epsilon_one_round,
                remaining,
            } => write!(
                f,
                "one round spends epsilon {epsilon_one_round:.4}, more than the {remaining:.4} \
                 left on the permit after what its other live studies reserved"
            ),
            Self::PlannedRoundsExceedBudget {
                planned_epsilon,
                remaining,
                affordable_rounds,
            } => write!(
                f,
                "the planned rounds spend epsilon {planned_epsilon:.4}, more than the \
                 {remaining:.4} left on the permit after what its other live studies reserved; \
                 {affordable_rounds} round(s) would fit"
            ),
        }
    }
}

/// Every reason `permit` does not cover `spec` now: the round-time governance check, the DP
/// level the permit's budget unit demands, and the budget the whole plan spends. `reserved` is
/// what the permit's other live studies have planned but not yet spent: their plans were
/// accepted first, so a new study may not count on that budget.
pub fn assess(
    spec: &StudySpec,
    permit: &Permit,
    reserved: f64,
    now: Timestamp,
) -> anyhow::Result<Vec<StudyRefusal>> {
    let outcome = check(
        permit,
        &CheckRequest {
            purpose: spec.purpose,
            categories: spec.categories.clone(),
            data_holders: spec.data_holders.clone(),
            epsilon: None,
        },
        now,
    );
    let mut reasons: Vec<StudyRefusal> = outcome
        .reasons
        .into_iter()
        .map(StudyRefusal::Permit)
        .collect();
    let requirement = permit.terms().dp_requirement;
    if !requirement.permits(spec.dp.level) {
        reasons.push(StudyRefusal::Study(StudyReason::DpLevelNotPermitted {
            level: spec.dp.level,
            dp_requirement: requirement,
            permitted_levels: requirement.permitted_levels(),
        }));
    }
    if permit.terms().require_secure_aggregation && spec.secure_aggregation.is_none() {
        reasons.push(StudyRefusal::Study(StudyReason::SecureAggregationRequired));
    }
    // a data-holder budget is spent only by formal DP, and only client-level DP protects a
    // whole holder; a study without formal DP spends none of it
    let unit = permit.terms().privacy_budget.unit;
    if unit == BudgetUnit::DataHolder && spec.dp.level == DpLevel::Record {
        reasons.push(StudyRefusal::Study(
            StudyReason::DpLevelWeakerThanPermitUnit { permit_unit: unit },
        ));
    }
    let remaining = (permit.epsilon_remaining() - reserved).max(0.0);
    let one = spec.dp.epsilon_for_rounds(1)?;
    let planned = spec.dp.epsilon_for_rounds(spec.rounds)?;
    if one > remaining {
        reasons.push(StudyRefusal::Study(
            StudyReason::BudgetTooSmallForOneRound {
                epsilon_one_round: one,
                remaining,
            },
        ));
    } else if planned > remaining {
        // epsilon grows with the rounds, so the affordable count is found by bisection
        let (mut lo, mut hi) = (1, spec.rounds);
        while lo + 1 < hi {
            let mid = (lo + hi) / 2;
            if spec.dp.epsilon_for_rounds(mid)? <= remaining {
                lo = mid
            } else {
                hi = mid
            }
        }
        reasons.push(StudyRefusal::Study(
            StudyReason::PlannedRoundsExceedBudget {
                planned_epsilon: planned,
                remaining,
                affordable_rounds: lo,
            },
        ));
    }
    Ok(reasons)
}

/// Sample study requests and their parsed specifications, for the tests of this crate and of the
/// crates that take a study (the node's policy: `ehds-core`'s `fixtures` feature).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures {
    use super::*;

    pub const FEATURES: &str = r#"{"name": "t", "features": [
        {"name": "age", "category": "ehr_data",
         "source": {"observation": {"system": "http://loinc.org", "code": "30525-0"}},
         "transform": {"kind": "number"}}],
      "label": {"name": "chd", "category": "ehr_data",
        "source": {"condition": {"system": "http://snomed.info/sct", "code": "53741008"}}}}"#;

    pub fn request() -> StudyRequest {
        serde_json::from_value(serde_json::json!({
            "title": "t", "permit_id": PermitId::new().to_string(), "purpose": "scientific_research",
            "categories": ["ehr_data"], "data_holders": ["hosp-1", "hosp-2"],
            "feature_spec": serde_json::from_str::<serde_json::Value>(FEATURES).unwrap(),
            "model": {"architecture": "logistic"}, "strategy": {"name": "fedavg"},
            "optimizer": {"name": "sgd", "lr": 0.1}, "local_steps": 10, "batch_size": 4,
            "rounds": 10, "min_sites": 2, "round_deadline_seconds": 60,
            "dp": {"level": "client", "clip_norm": 1.0, "noise_multiplier": 1.0}
        }))
        .unwrap()
    }

    pub const FLOOR: OutputFloor = OutputFloor {
        min_sites: 2,
        min_samples_per_site: 10,
    };

    pub const LIMITS: FederationLimits = FederationLimits {
        max_update_bytes: 64 * 1024 * 1024,
    };

    /// A FedAvg study of two holders over `rounds` rounds with client-level DP (clip 1, noise
    /// multiplier 1).
    pub fn spec(rounds: u64) -> StudySpec {
        let mut r = request();
        r.rounds = rounds;
        parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap()
    }

    pub fn distributed_request(dp: serde_json::Value) -> StudyRequest {
        let mut r = request();
        r.data_holders = ["hosp-1", "hosp-2", "hosp-3", "hosp-4"]
            .map(String::from)
            .to_vec();
        r.secure_aggregation = Some(SecureAggregationRequest::default());
        r.dp = serde_json::from_value(dp).unwrap();
        r
    }

    /// A FedAvg study of four holders under secure aggregation with client-level DP (clip 1,
    /// noise multiplier 1): distributed DP for at least `min_survivors` holders.
    pub fn distributed_spec(min_survivors: u32) -> StudySpec {
        let r = distributed_request(serde_json::json!({"level": "client", "clip_norm": 1.0,
            "noise_multiplier": 1.0, "min_survivors": min_survivors}));
        parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use crate::domain::time;

    fn permit(epsilon: f64, unit: BudgetUnit) -> Permit {
        crate::domain::permit::sample_permit_for(time::now(), &["hosp-1", "hosp-2"], epsilon, unit)
    }

    #[test]
    fn a_valid_request_becomes_a_study_with_its_input_width_from_the_features() {
        let s = spec(10);
        assert_eq!(s.model, ModelSpec::logistic(1, 1));
        assert_eq!((s.seed, s.output_check.min_sites), (7, 2));
        assert_eq!((s.dp.sampling_rate, s.dp.steps_per_round), (1.0, 1));
        assert!(s.train.record_dp.is_none());
    }

    fn survival_series_request() -> StudyRequest {
        let mut r = request();
        r.feature_spec = serde_json::json!({"name": "s",
            "cohort": {"unit": "encounter", "index": "admission", "category": "ehr_data"},
            "features": [{"name": "age", "category": "ehr_data", "source": {"patient": "age"},
                          "transform": {"kind": "number"}},
                         {"name": "sex", "category": "ehr_data", "source": {"patient": "gender"},
                          "transform": {"kind": "map", "values": {"male": 1, "female": 0}}}],
            "time_series": {"hours": 2, "channels": [
                {"name": "hr", "category": "ehr_data",
                 "observation": {"system": "http://loinc.org", "code": "8867-4"}},
                {"name": "rr", "category": "ehr_data",
                 "observation": {"system": "http://loinc.org", "code": "9279-1"}}]},
            "label": {"name": "y", "category": "ehr_data",
                      "source": {"survival": {"event": {"death": {}}, "follow_up": "30d"}}}});
        r
    }

    fn codes(r: &StudyRequest) -> Vec<(String, &'static str)> {
        parse_study(r, 1e-5, FLOOR, LIMITS, 7)
            .unwrap_err()
            .into_iter()
            .map(|e| (e.field, e.code))
            .collect()
    }

    fn model(v: serde_json::Value) -> ModelRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_survival_label_trains_a_cox_model_and_series_feed_the_sequence_models() {
        let mut r = survival_series_request();
        // the row: 2 steps x 2 channels of values, their mask, then age and sex
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        assert_eq!(s.task, StudyTask::Survival);
        assert_eq!(s.train.loss, LossKind::Cox);
        assert_eq!(s.model, ModelSpec::logistic(10, 1));
        assert_eq!(s.parameter_count, Some(11));
        r.model = model(serde_json::json!({"architecture": "net",
            "backbone": {"kind": "lstm", "hidden": 4}}));
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        let ModelSpec::BackboneNet { body, outputs: 1 } = &s.model else {
            panic!("{:?}", s.model)
        };
        assert_eq!(
            body,
            &Backbone::Columns {
                inputs: 10,
                columns: vec![ColumnRange { start: 0, end: 8 }],
                body: Box::new(Backbone::Recurrent(SeqConfig {
                    cell: Cell::Lstm,
                    time: 2,
                    features: 2,
                    hidden: 4,
                    mask: MaskLayout::PerValue,
                    readout: Readout::Last,
                    layers: 1,
                })),
            }
        );
        // nn.LSTM(4, 4): 4 (4*4 + 4*4 + 2*4) = 160 (values and mask channels), output 5
        assert_eq!(s.parameter_count, Some(165));
        assert_eq!(s.model.inputs(), 10);
        // two stacked layers: the second reads the first's 4 hidden units
        r.model = model(serde_json::json!({"architecture": "net",
            "backbone": {"kind": "gru", "hidden": 4, "layers": 2}}));
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        assert_eq!(s.parameter_count, Some(3 * 40 + 3 * 40 + 5));
        r.model = model(serde_json::json!({"architecture": "net",
            "backbone": {"kind": "gru", "hidden": 4, "layers": 9}}));
        assert_eq!(
            codes(&r),
            [("model.backbone.layers".to_owned(), "out_of_range")]
        );
        // the fusion reads the whole row; FENDA's extractors read different widths
        r.model = model(serde_json::json!({"architecture": "net",
            "backbone": {"kind": "fusion", "cell": "lstm", "hidden": 4, "static_hidden": [3]}}));
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        assert_eq!(s.model.inputs(), 10);
        r.model = model(serde_json::json!({"architecture": "fenda",
            "backbone": {"kind": "gru", "hidden": 4},
            "local_backbone": {"kind": "mlp", "hidden": [4], "inputs": {"features": ["sex"]},
                               "norm": {"kind": "layer"}}}));
        r.strategy = serde_json::json!({"name": "fenda_fl"});
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        let ModelSpec::BackboneFenda { local, .. } = &s.model else {
            panic!("{:?}", s.model)
        };
        assert_eq!(local.row_width(), 10);
        assert!(matches!(local, Backbone::Columns { columns, .. }
            if columns == &[ColumnRange { start: 9, end: 10 }]));
        // the CNN reads the series grid as a two-channel image
        r.strategy = serde_json::json!({"name": "fedavg"});
        r.model = model(serde_json::json!({"architecture": "net",
            "backbone": {"kind": "cnn", "stages": [4], "groups": 2}}));
        assert!(parse_study(&r, 1e-5, FLOOR, LIMITS, 7).is_ok());
    }

    #[test]
    fn each_bad_task_loss_model_or_dp_combination_has_its_code() {
        let base = survival_series_request();
        // a survival task with a softmax head, and with a classification loss
        let mut r = base.clone();
        r.model.outputs = Some(2);
        assert!(codes(&r).contains(&("model.outputs".into(), "head_task_mismatch")));
        let mut r = base.clone();
        r.loss = Some(LossKind::CrossEntropy {
            class_weights: None,
        });
        assert_eq!(codes(&r), [("loss".to_owned(), "loss_task_mismatch")]);
        // a binary task on a survival label
        let mut r = base.clone();
        r.task = Some(StudyTask::Binary);
        assert_eq!(codes(&r), [("task".to_owned(), "task_label_mismatch")]);
        // Cox under record-level DP
        let mut r = base.clone();
        r.dp = DpRequest {
            level: "record".into(),
            clip_norm: 1.0,
            noise_multiplier: Some(1.0),
            target_epsilon: None,
            sampling_rate: Some(0.1),
            noise_seed: None,
            min_survivors: None,
            modulus_bits: None,
        };
        assert_eq!(
            codes(&r),
            [("dp.level".to_owned(), "loss_refuses_record_dp")]
        );
        // BatchNorm under record-level DP
        let mut b = r.clone();
        b.task = None;
        b.feature_spec["label"]["source"] = serde_json::json!({"death": {"within": "30d"}});
        b.model = model(serde_json::json!({"architecture": "net",
            "backbone": {"kind": "mlp", "hidden": [4], "norm": {"kind": "batch"}}}));
        assert_eq!(
            codes(&b),
            [("dp.level".to_owned(), "model_refuses_record_dp")]
        );
        // FedLC calibrates by class counts
        let mut r = base.clone();
        r.strategy = serde_json::json!({"name": "fedlc"});
        assert_eq!(
            codes(&r),
            [("strategy.name".to_owned(), "strategy_refuses_task")]
        );
        // a sequence model on a static specification
        let mut r = request();
        r.model = model(serde_json::json!({"architecture": "net",
            "backbone": {"kind": "gru", "hidden": 4}}));
        assert_eq!(
            codes(&r),
            [("model.backbone".to_owned(), "sequence_model_needs_series")]
        );
        // a model whose update does not fit the federation's limit
        let mut r = request();
        r.model = model(serde_json::json!({"architecture": "mlp", "hidden": [64]}));
        let small = FederationLimits {
            max_update_bytes: 4 * 128,
        };
        let errs = parse_study(&r, 1e-5, FLOOR, small, 7).unwrap_err();
        assert_eq!(errs[0].code, "model_too_large", "{errs:?}");
        assert!(
            errs[0].message.contains("193 parameters"),
            "{}",
            errs[0].message
        );
        // SCAFFOLD's control variates double it
        let fits = FederationLimits {
            max_update_bytes: 2048,
        };
        assert!(parse_study(&r, 1e-5, FLOOR, fits, 7).is_ok());
        r.strategy = serde_json::json!({"name": "scaffold"});
        r.dp = DpRequest {
            level: "record".into(),
            clip_norm: 1.0,
            noise_multiplier: Some(1.0),
            target_epsilon: None,
            sampling_rate: Some(0.1),
            noise_seed: None,
            min_survivors: None,
            modulus_bits: None,
        };
        let errs = parse_study(&r, 1e-5, FLOOR, fits, 7).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].code, "model_too_large");
        // a multi-class task on a binary label with more than two classes; bad loss settings
        let mut r = request();
        r.task = Some(StudyTask::Multiclass { classes: 3 });
        assert_eq!(codes(&r), [("task".to_owned(), "task_label_mismatch")]);
        r.task = Some(StudyTask::Multiclass { classes: 2 });
        r.loss = Some(LossKind::CrossEntropy {
            class_weights: Some(vec![1.0, -1.0]),
        });
        assert_eq!(
            codes(&r),
            [("loss.class_weights".to_owned(), "invalid_loss_setting")]
        );
        r.loss = Some(LossKind::Focal {
            gamma: 2.0,
            alpha: None,
        });
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        assert_eq!(s.model, ModelSpec::logistic(1, 2));
        r.loss = Some(LossKind::bce());
        assert_eq!(codes(&r), [("loss".to_owned(), "loss_task_mismatch")]);
    }

    #[test]
    fn multi_class_and_multi_label_labels_take_only_their_own_task() {
        let severity =
            include_str!("../../../../examples/federation/heart_disease_severity.features.json");
        let mut r = request();
        r.feature_spec = serde_json::from_str(severity).unwrap();
        // without a task: the label's five classes, a five-way softmax
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        assert_eq!(s.task, StudyTask::Multiclass { classes: 5 });
        assert_eq!(s.model, ModelSpec::logistic(13, 5));
        r.task = Some(StudyTask::Multiclass { classes: 5 });
        assert!(parse_study(&r, 1e-5, FLOOR, LIMITS, 7).is_ok());
        for wrong in [
            StudyTask::Multiclass { classes: 3 },
            StudyTask::Multiclass { classes: 2 },
            StudyTask::Binary,
            StudyTask::Multilabel { labels: 5 },
            StudyTask::Survival,
        ] {
            r.task = Some(wrong);
            assert_eq!(
                codes(&r),
                [("task".to_owned(), "task_label_mismatch")],
                "{wrong:?}"
            );
        }
        // a class count out of range is reported as such, not as a mismatch
        r.task = Some(StudyTask::Multiclass { classes: 5000 });
        assert_eq!(
            codes(&r),
            [("task.multiclass.classes".to_owned(), "out_of_range")]
        );

        let mut r = survival_series_request();
        r.feature_spec["label"]["source"] = serde_json::json!({"labels": [
            {"name": "death_7d", "source": {"death": {"within": "7d"}}},
            {"name": "death_30d", "source": {"death": {"within": "30d"}}},
            {"name": "smoker", "category": "health_determinants",
             "source": {"condition": {"codes": [{"system": "http://snomed.info/sct", "code": "77176002"}]}}}]});
        // a label's own category must be declared (and so covered by the permit)
        assert_eq!(
            codes(&r),
            [(
                "feature_spec.label".to_owned(),
                "feature_category_not_declared"
            )]
        );
        r.categories.push("health_determinants".into());
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        assert_eq!(s.task, StudyTask::Multilabel { labels: 3 });
        assert!(s
            .categories
            .iter()
            .any(|c| c.as_str() == "health_determinants"));
        for wrong in [
            StudyTask::Multilabel { labels: 2 },
            StudyTask::Multiclass { classes: 3 },
            StudyTask::Binary,
        ] {
            r.task = Some(wrong);
            assert_eq!(
                codes(&r),
                [("task".to_owned(), "task_label_mismatch")],
                "{wrong:?}"
            );
        }
    }

    #[test]
    fn every_bad_field_is_reported_at_once() {
        let mut r = request();
        r.purpose = "advertising_marketing".into();
        r.model.architecture = "transformer".into();
        r.optimizer.lr = -1.0;
        r.min_sites = 3;
        r.local_epochs = Some(1);
        r.dp.target_epsilon = Some(1.0);
        let codes: Vec<&str> = parse_study(&r, 1e-5, FLOOR, LIMITS, 7)
            .unwrap_err()
            .iter()
            .map(|e| e.code)
            .collect();
        for want in [
            "prohibited_use",
            "unknown_architecture",
            "invalid_number",
            "out_of_range",
            "local_work_required",
            "noise_required",
        ] {
            assert!(codes.contains(&want), "{want} missing from {codes:?}");
        }
    }

    #[test]
    fn record_level_dp_is_accounted_per_local_step_and_ditto_counts_twice() {
        let mut r = request();
        r.dp = DpRequest {
            level: "record".into(),
            clip_norm: 1.0,
            noise_multiplier: Some(1.0),
            target_epsilon: None,
            sampling_rate: Some(0.05),
            noise_seed: None,
            min_survivors: None,
            modulus_bits: None,
        };
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        assert_eq!((s.dp.sampling_rate, s.dp.steps_per_round), (0.05, 10));
        assert!(s.train.record_dp.is_some());
        r.strategy = serde_json::json!({"name": "ditto"});
        assert_eq!(
            parse_study(&r, 1e-5, FLOOR, LIMITS, 7)
                .unwrap()
                .dp
                .steps_per_round,
            20
        );
        r.local_steps = None;
        r.local_epochs = Some(1);
        let err = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap_err();
        assert!(err.iter().any(|e| e.code == "record_dp_needs_steps"));
    }

    #[test]
    fn a_target_epsilon_is_met_exactly_by_the_derived_noise() {
        let mut r = request();
        r.dp.noise_multiplier = None;
        r.dp.target_epsilon = Some(5.0);
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        let eps = s.dp.epsilon_for_rounds(10).unwrap();
        assert!(eps <= 5.0 && eps > 5.0 - 1e-6, "{eps}");
    }

    #[test]
    fn the_budget_assessment_names_the_affordable_rounds() {
        let s = spec(10);
        let one = s.dp.epsilon_for_rounds(1).unwrap();
        let four = s.dp.epsilon_for_rounds(4).unwrap();
        let five = s.dp.epsilon_for_rounds(5).unwrap();
        // a moment after issue, when the permits below are valid
        let now = time::now() + chrono::Duration::seconds(1);
        // a budget between the cost of 4 and of 5 rounds affords exactly 4
        let reasons = assess(
            &s,
            &permit((four + five) / 2.0, BudgetUnit::Record),
            0.0,
            now,
        )
        .unwrap();
        assert!(
            matches!(
                reasons.as_slice(),
                [StudyRefusal::Study(
                    StudyReason::PlannedRoundsExceedBudget {
                        affordable_rounds: 4,
                        ..
                    }
                )]
            ),
            "{reasons:?}"
        );
        let reasons = assess(&s, &permit(one / 2.0, BudgetUnit::Record), 0.0, now).unwrap();
        assert!(matches!(
            reasons.as_slice(),
            [StudyRefusal::Study(
                StudyReason::BudgetTooSmallForOneRound { .. }
            )]
        ));
        let enough = s.dp.epsilon_for_rounds(10).unwrap() + 0.01;
        assert!(
            assess(&s, &permit(enough, BudgetUnit::DataHolder), 0.0, now)
                .unwrap()
                .is_empty()
        );
        // the same budget with another study's unspent plan reserved on it does not suffice
        let reasons = assess(&s, &permit(enough, BudgetUnit::DataHolder), 1.0, now).unwrap();
        assert!(
            matches!(
                reasons.as_slice(),
                [StudyRefusal::Study(
                    StudyReason::PlannedRoundsExceedBudget { .. }
                )]
            ),
            "{reasons:?}"
        );
    }

    #[test]
    fn a_holder_level_budget_needs_client_level_dp_and_the_permit_must_grant_everything() {
        let mut r = request();
        r.dp = DpRequest {
            level: "record".into(),
            clip_norm: 1.0,
            noise_multiplier: Some(5.0),
            target_epsilon: None,
            sampling_rate: Some(0.01),
            noise_seed: None,
            min_survivors: None,
            modulus_bits: None,
        };
        r.data_holders.push("hosp-9".into());
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        let later = time::now() + chrono::Duration::seconds(1);
        let reasons = assess(&s, &permit(100.0, BudgetUnit::DataHolder), 0.0, later).unwrap();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(reasons.contains(&StudyRefusal::Study(
            StudyReason::DpLevelWeakerThanPermitUnit {
                permit_unit: BudgetUnit::DataHolder
            }
        )));
        assert!(
            reasons.contains(&StudyRefusal::Permit(DenyReason::DataHolderNotPermitted {
                data_holder: OrgId::parse("hosp-9").unwrap()
            }))
        );
    }

    #[test]
    fn a_study_without_formal_dp_spends_nothing_and_runs_only_where_the_permit_allows() {
        let mut r = request();
        r.dp = serde_json::from_value(serde_json::json!({"level": "none"})).unwrap();
        r.strategy = serde_json::json!({"name": "qfedavg", "q": 1.0});
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        assert_eq!(s.dp.level, DpLevel::NoFormalDp);
        assert!(s.train.record_dp.is_none(), "no DP-SGD at the holders");
        assert_eq!(s.dp.epsilon_for_rounds(10).unwrap(), 0.0);
        assert!(s.dp.round_mechanism().unwrap().is_none());
        let later = time::now() + chrono::Duration::seconds(1);
        // the default requirement: formal DP at either level
        let mut p = permit(1.0, BudgetUnit::DataHolder);
        let reasons = assess(&s, &p, 0.0, later).unwrap();
        assert_eq!(
            reasons,
            [StudyRefusal::Study(StudyReason::DpLevelNotPermitted {
                level: DpLevel::NoFormalDp,
                dp_requirement: DpRequirement::ClientOrRecord,
                permitted_levels: vec![DpLevel::Client, DpLevel::Record],
            })]
        );
        p.amend(
            crate::domain::permit::Amendment {
                dp_requirement: Some(DpRequirement::NoneAllowed),
                ..Default::default()
            },
            later,
        )
        .unwrap();
        // a holder-level budget is no obstacle: nothing of it is spent, even fully reserved
        assert!(assess(&s, &p, 1.0, later).unwrap().is_empty());
        // the method's lack of DP support still refuses it under formal DP
        r.dp = serde_json::from_value(
            serde_json::json!({"level": "client", "clip_norm": 1.0, "noise_multiplier": 1.0}),
        )
        .unwrap();
        let errors = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap_err();
        assert_eq!(errors[0].code, "strategy_refuses_client_dp");
    }

    /// Client-level DP under secure aggregation is planned as the distributed discrete
    /// Gaussian: the central plan's clip and noise, split among the minimum survivors, and
    /// accounted by the distributed mechanism.
    #[test]
    fn client_level_dp_under_secure_aggregation_is_the_distributed_discrete_gaussian() {
        let r = distributed_request(
            serde_json::json!({"level": "client", "clip_norm": 0.5, "noise_multiplier": 2.0}),
        );
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        let plan = s.dp.distributed.expect("a distributed plan");
        let sa = s.secure_aggregation.unwrap();
        assert_eq!((sa.threshold, sa.neighbours), (2, 3));
        // defaults: the larger of the threshold (2) and min_sites (2), a 32-bit ring
        assert_eq!(plan.params.min_survivors, 2);
        assert_eq!(plan.params.max_clients, 4);
        assert_eq!(plan.params.modulus_bits, DEFAULT_DISTRIBUTED_MODULUS_BITS);
        // the logistic model of one feature: a weight and a bias
        assert_eq!((plan.params.dim, plan.padded_dim), (2, 2));
        assert_eq!(plan.params.clip, 0.5);
        assert!((plan.params.central_stddev - 1.0).abs() < 1e-12);
        // each of two holders adds half the variance, rounded up in ring units
        assert!(plan.central_variance(2) >= 1.0 - 1e-12);
        assert!(plan.central_variance(1) < 0.5 + 1e-9);
        assert_eq!(
            s.dp.round_mechanism().unwrap(),
            Some(crate::domain::study::RoundMechanism::DistributedDiscreteGaussian(plan))
        );
        let direct = ddg_epsilon(&plan, 10, 1e-5).unwrap().epsilon;
        assert_eq!(s.dp.epsilon_for_rounds(10).unwrap(), direct);
        // the seed fixes the public rotation
        let again = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        assert_eq!(again.dp.distributed, Some(plan));
        let other = parse_study(&r, 1e-5, FLOOR, LIMITS, 8).unwrap();
        assert_ne!(
            other.dp.distributed.unwrap().params.rotation_seed,
            plan.params.rotation_seed
        );

        // a target epsilon is met by the distributed mechanism's own accounting
        let r = distributed_request(serde_json::json!({"level": "client", "clip_norm": 1.0,
            "target_epsilon": 4.0, "min_survivors": 3, "modulus_bits": 20}));
        let s = parse_study(&r, 1e-5, FLOOR, LIMITS, 7).unwrap();
        let plan = s.dp.distributed.unwrap();
        assert_eq!(
            (plan.params.min_survivors, plan.params.modulus_bits),
            (3, 20)
        );
        let eps = ddg_epsilon(&plan, 10, 1e-5).unwrap().epsilon;
        assert!(eps <= 4.0 && eps > 3.99, "{eps}");
        assert_eq!(s.dp.epsilon_for_rounds(10).unwrap(), eps);
        assert!((plan.params.central_stddev - s.dp.noise_multiplier).abs() < 1e-12);
    }

    #[test]
    fn impossible_distributed_plans_are_refused_by_field() {
        let dp = |extra: serde_json::Value| {
            let mut v = serde_json::json!({"level": "client", "clip_norm": 1.0,
                                           "noise_multiplier": 1.0});
            for (k, x) in extra.as_object().unwrap() {
                v[k] = x.clone();
            }
            distributed_request(v)
        };
        let one = |r: &StudyRequest| -> (String, &'static str) {
            let c = codes(r);
            assert_eq!(c.len(), 1, "{c:?}");
            c[0].clone()
        };
        let field = |f: &str, c: &'static str| (f.to_owned(), c);
        assert_eq!(
            one(&dp(serde_json::json!({"min_survivors": 5}))),
            field("dp.min_survivors", "min_survivors_above_holders")
        );
        // the default threshold for four holders is 2
        assert_eq!(
            one(&dp(serde_json::json!({"min_survivors": 1}))),
            field("dp.min_survivors", "min_survivors_below_threshold")
        );
        assert_eq!(
            one(&dp(serde_json::json!({"modulus_bits": 64}))),
            field("dp.modulus_bits", "out_of_range")
        );
        // four holders at about 6.6 standard deviations need more than 2^3
        let c = codes(&dp(serde_json::json!({"modulus_bits": 3})));
        assert_eq!(c, [field("dp.modulus_bits", "modulus_too_small")]);
        assert!(parse_study(
            &dp(serde_json::json!({"modulus_bits": 4})),
            1e-5,
            FLOOR,
            LIMITS,
            7
        )
        .is_ok());
        assert_eq!(
            one(&dp(serde_json::json!({"noise_seed": 3}))),
            field("dp.noise_seed", "not_applicable")
        );
        // the parameters of distributed DP mean nothing elsewhere
        let mut central = dp(serde_json::json!({"min_survivors": 2}));
        central.secure_aggregation = None;
        assert_eq!(one(&central), field("dp.min_survivors", "not_applicable"));
        let mut none = request();
        none.dp = serde_json::from_value(serde_json::json!({"level": "none", "modulus_bits": 20}))
            .unwrap();
        assert_eq!(one(&none), field("dp.modulus_bits", "not_applicable"));
        // record-level DP-SGD is not combined with secure aggregation
        let record = distributed_request(serde_json::json!({"level": "record", "clip_norm": 1.0,
            "noise_multiplier": 1.0, "sampling_rate": 0.1}));
        assert!(codes(&record).contains(&field(
            "dp.level",
            "dp_level_incompatible_with_secure_aggregation"
        )));
    }

    #[test]
    fn the_decision_threshold_goes_with_the_tasks_that_have_one() {
        let parse = |r: &StudyRequest| parse_study(r, 1e-5, FLOOR, LIMITS, 7);
        let mut r = request();
        // binary: 0.5 unless asked otherwise
        assert_eq!(
            parse(&r).unwrap().threshold,
            Some(DecisionThreshold::Fixed { value: 0.5 })
        );
        for (given, want) in [
            (
                serde_json::json!({"rule": "fixed", "value": 0.3}),
                DecisionThreshold::Fixed { value: 0.3 },
            ),
            (
                serde_json::json!({"rule": "max_f1"}),
                DecisionThreshold::MaxF1 {},
            ),
            (
                serde_json::json!({"rule": "youden_j"}),
                DecisionThreshold::YoudenJ {},
            ),
        ] {
            r.threshold = Some(given);
            assert_eq!(parse(&r).unwrap().threshold, Some(want));
        }
        for (given, field) in [
            (serde_json::json!({"rule": "max_accuracy"}), "threshold"),
            (serde_json::json!({"rule": "fixed"}), "threshold"),
            (
                serde_json::json!({"rule": "max_f1", "value": 0.2}),
                "threshold",
            ),
            (serde_json::json!("max_f1"), "threshold"),
            (
                serde_json::json!({"rule": "fixed", "value": 1.0}),
                "threshold.value",
            ),
            (
                serde_json::json!({"rule": "fixed", "value": 0.0}),
                "threshold.value",
            ),
        ] {
            r.threshold = Some(given.clone());
            assert_eq!(
                codes(&r),
                [(field.to_owned(), "invalid_threshold")],
                "{given}"
            );
        }
        // survival (and multi-class) predictions have no threshold: none stored, none taken
        let mut r = survival_series_request();
        assert_eq!(parse(&r).unwrap().threshold, None);
        r.threshold = Some(serde_json::json!({"rule": "max_f1"}));
        assert_eq!(
            codes(&r),
            [("threshold".to_owned(), "threshold_task_mismatch")]
        );
    }
}
