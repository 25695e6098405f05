//! Submitting a study: the body of `POST /v1/studies`, its parsing into a [`StudySpec`], and
//! its assessment against the permit it claims to run under.
//!
//! Parsing reports every bad field at once; the assessment reports every reason the permit does
//! not cover the study (the same governance check every round runs, plus the privacy budget the
//! whole plan would spend), so a researcher fixes a refused study in one go.

mod assess;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
mod privacy;
#[cfg(test)]
mod tests;
mod training;

use fl_engine::strategy::Support;
use fl_engine::train::{Budget, LossKind, RecordDp, TrainConfig};
use serde::Deserialize;

use super::{
    application::{non_blank, parse_list},
    optout::FilterPolicy,
    study::{Aggregation, DpLevel, ModelRelease, OutputCheck, StudySpec, StudyTask},
    DataCategory, Errors, FieldError, OrgId, PermitId, Purpose,
};
use crate::domain::feature_spec::FeatureSpec;
use fl_engine::request::in_range;
// named only in the OpenAPI schema attributes
#[cfg(feature = "openapi")]
use {super::study::DecisionThreshold, fl_engine::StrategyConfig};

pub use assess::{assess, StudyReason, StudyRefusal};
pub use fl_engine::request::{
    BackboneRequest, InputsRequest, ModelRequest, RecurrentRequest, MAX_CNN_STAGES,
    MAX_HIDDEN_WIDTH,
};
pub use privacy::DEFAULT_DISTRIBUTED_MODULUS_BITS;

use privacy::{
    check_aggregation, parse_dp, parse_secure_aggregation, plan_distributed, DistributedRequest,
};
use training::{
    check_training, parse_loss, parse_optimizer, parse_task, parse_threshold,
    strategy_from_request, update_size,
};

pub const MAX_ROUNDS: u64 = 1000;
pub const MAX_LOCAL_STEPS: usize = 100_000;

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
    /// Share of each holder's patients held out for testing where its records carry no
    /// train/test split tags (default 0.2): the node splits them itself, patient by patient,
    /// stratified by the label, seeded by the study (docs/federated-studies.md).
    pub test_fraction: Option<f64>,
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

/// A number the request left out (JSON cannot spell NaN).
fn absent_number() -> f64 {
    f64::NAN
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
    let layout = spec.as_ref().map(FeatureSpec::row_layout);
    let task = spec.as_ref().and_then(|s| parse_task(&mut e, req.task, s));
    let loss = task.map(|t| parse_loss(&mut e, req.loss.as_ref(), t));
    let threshold = parse_threshold(&mut e, req.threshold.as_ref(), task);
    // without a valid task the model is checked at the width of a binary one
    let outputs = task.map_or(1, StudyTask::outputs);
    let model = req.model.parse(&mut e, layout.as_ref(), outputs);
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
    let validation_fraction = req
        .validation_fraction
        .unwrap_or(crate::domain::study::DEFAULT_VALIDATION_FRACTION);
    if !(validation_fraction > 0.0 && validation_fraction <= 0.5) {
        e.push(
            "validation_fraction",
            "out_of_range",
            "must lie in (0, 0.5]",
        );
    }
    let test_fraction = req
        .test_fraction
        .unwrap_or(crate::domain::study::DEFAULT_TEST_FRACTION);
    if !(test_fraction > 0.0 && test_fraction <= 0.5) {
        e.push("test_fraction", "out_of_range", "must lie in (0, 0.5]");
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
        test_fraction,
        optout_policy: req.optout_policy,
        secure_aggregation,
    })
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
