//! Submitting a study: the body of `POST /v1/studies`, its parsing into a [`StudySpec`], and
//! its assessment against the permit it claims to run under.
//!
//! Parsing reports every bad field at once; the assessment reports every reason the permit does
//! not cover the study (the same governance check every round runs, plus the privacy budget the
//! whole plan would spend), so a researcher fixes a refused study in one go.

use fl_engine::{
    dp::{default_orders, sigma_for_target_epsilon, RdpConversion},
    model::MlpConfig,
    strategy::{dp_steps_per_round, Support, TrainSetting},
    train::{Budget, LossKind, OptimizerConfig, RecordDp, TrainConfig},
    ModelSpec, StrategyConfig,
};
use serde::{Deserialize, Serialize};

use super::{
    application::{non_blank, parse_list},
    check::{check, CheckRequest, DenyReason},
    optout::FilterPolicy,
    study::{DpLevel, DpPlan, OutputCheck, StudySpec},
    time::Timestamp,
    BudgetUnit, DataCategory, Errors, FieldError, OrgId, Permit, PermitId, Purpose,
};
use crate::domain::feature_spec::FeatureSpec;

pub const MAX_ROUNDS: u64 = 1000;
pub const MAX_LOCAL_STEPS: usize = 100_000;
pub const MAX_HIDDEN_WIDTH: usize = 4096;

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelRequest {
    /// `logistic`, `mlp`, `apfl` (APFL's twins), `head_net` (FedPer, MOON, HPFL) or `fenda`
    /// (FENDA-FL, PerFCL).
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
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OptimizerRequest {
    /// `sgd`, `adam` or `adamw`.
    pub name: String,
    pub lr: f64,
    pub weight_decay: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DpRequest {
    /// `client` (DP-FedAvg at the gateway) or `record` (DP-SGD at each data holder).
    pub level: String,
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
}

#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputCheckRequest {
    pub min_sites: usize,
    pub min_samples_per_site: u64,
}

/// The body of `POST /v1/studies`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
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
    #[schema(value_type = Object)]
    pub feature_spec: serde_json::Value,
    pub model: ModelRequest,
    /// The federated method and its settings, e.g. `{"name": "fedprox", "mu": 0.1}`; settings
    /// left out take the method's defaults (docs/fl-methods.md). Parsed with the rest of the
    /// body so that every bad field is reported at once.
    #[schema(value_type = StrategyConfig)]
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
    pub seed: Option<u64>,
    /// Share of each holder's training rows kept for validation (default 0.2).
    pub validation_fraction: Option<f64>,
    #[serde(default)]
    pub optout_policy: FilterPolicy,
}

/// Floors the HDAB sets for every study's output check.
#[derive(Debug, Clone, Copy)]
pub struct OutputFloor {
    pub min_sites: usize,
    pub min_samples_per_site: u64,
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

fn parse_model(e: &mut Errors, m: &ModelRequest, inputs: usize) -> Option<ModelSpec> {
    for (i, w) in m
        .hidden
        .iter()
        .chain(m.local_hidden.iter().flatten())
        .enumerate()
    {
        in_range(e, &format!("model.hidden[{i}]"), *w, 1, MAX_HIDDEN_WIDTH);
    }
    if m.hidden.len() > 8 {
        e.push("model.hidden", "too_deep", "at most 8 hidden layers");
    }
    if !(0.0..1.0).contains(&m.dropout) {
        e.push(
            "model.dropout",
            "out_of_range",
            "dropout must lie in [0, 1)",
        );
    }
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
        "logistic" => Some(ModelSpec::logistic(inputs, 1)),
        "mlp" => Some(ModelSpec::Mlp(mlp(&m.hidden, 1))),
        // APFL's global and local twins, each an MLP with these hidden layers, mixed 50/50
        // until each site learns its own weight
        "apfl" => Some(ModelSpec::Apfl {
            twin: mlp(&m.hidden, 1),
            alpha: 0.5,
        }),
        "head_net" => {
            needs_hidden(e);
            Some(ModelSpec::HeadNet {
                body: mlp(&m.hidden, 0),
                outputs: 1,
            })
        }
        "fenda" => {
            needs_hidden(e);
            Some(ModelSpec::Fenda {
                global: mlp(&m.hidden, 0),
                local: mlp(m.local_hidden.as_deref().unwrap_or(&m.hidden), 0),
                outputs: 1,
            })
        }
        other => {
            e.push(
                "model.architecture",
                "unknown_architecture",
                format!("`{other}` is not one of logistic, mlp, apfl, head_net, fenda"),
            );
            None
        }
    }
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
        e.push("strategy", "invalid_strategy_setting", err.to_string());
    }
    Some(config)
}

/// The method's rule on the local training (SCAFFOLD: plain SGD, FedNova: SGD).
fn check_training(e: &mut Errors, strategy: &StrategyConfig, optimizer: &OptimizerConfig) {
    let probe = TrainConfig {
        optimizer: optimizer.clone(),
        budget: Budget::Steps(1),
        batch_size: 1,
        loss: LossKind::bce(),
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
        if !categories.contains(&spec.label.category) {
            e.push(
                "feature_spec.label",
                "feature_category_not_declared",
                format!(
                    "the label reads `{}` data, which `categories` does not declare",
                    spec.label.category.as_str()
                ),
            );
        }
    }
    if let Some(spec) = &spec {
        // The engine trains binary classifiers on static inputs; a survival label or a time
        // series needs the sequence and survival models, so such a study is refused here
        // rather than trained on the event flag alone.
        if spec.task() != crate::domain::feature_spec::Task::Binary {
            e.push(
                "feature_spec.label",
                "unsupported_task",
                "a survival label needs the survival models, which studies cannot use yet",
            );
        }
        if spec.series.is_some() {
            e.push(
                "feature_spec.time_series",
                "unsupported_task",
                "a time series needs the sequence models, which studies cannot use yet",
            );
        }
    }
    let inputs = spec.as_ref().map_or(1, FeatureSpec::n_columns);
    let model = parse_model(&mut e, &req.model, inputs);
    let strategy = strategy_from_request(&mut e, &req.strategy);
    if let (Some(m), Some(s)) = (&model, &strategy) {
        if let Err(err) = s.check_model(m) {
            e.push("model", "model_strategy_mismatch", err.to_string());
        }
    }
    let optimizer = parse_optimizer(&mut e, &req.optimizer);
    if let (Some(s), Some(o)) = (&strategy, &optimizer) {
        check_training(&mut e, s, o);
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

    let dp = parse_dp(&mut e, &req.dp, &strategy, budget, req.rounds, delta);
    let mut train = None;
    if let (Some(optimizer), Some(budget), Some(dp)) = (optimizer, budget, dp) {
        train = Some(TrainConfig {
            optimizer,
            budget,
            batch_size: req.batch_size,
            loss: LossKind::bce(),
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
    let (Some(permit_id), Some(purpose), Some(model), Some(strategy), Some(train), Some(dp)) =
        (permit_id, purpose, model, strategy, train, dp)
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
        model,
        strategy,
        train,
        rounds: req.rounds,
        min_sites: req.min_sites,
        round_deadline_seconds: req.round_deadline_seconds,
        dp,
        output_check,
        seed: req.seed.unwrap_or(default_seed),
        validation_fraction,
        optout_policy: req.optout_policy,
    })
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
        other => {
            e.push(
                "dp.level",
                "unknown_dp_level",
                format!("`{other}` is neither `client` nor `record`"),
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
    let clip_ok = positive(e, "dp.clip_norm", d.clip_norm);
    let (sampling_rate, steps_per_round) = match level {
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
    })
}

/// A reason the permit does not cover a submitted study.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum StudyRefusal {
    Permit(DenyReason),
    Study(StudyReason),
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum StudyReason {
    /// The permit's budget protects whole data holders; only client-level DP does that.
    DpLevelWeakerThanPermitUnit { permit_unit: BudgetUnit },
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

/// Every reason `permit` does not cover `spec` now: the round-time governance check, the DP
/// level the permit's budget unit demands, and the budget the whole plan spends. `reserved` is
/// what the permit's other live studies have planned but not yet spent: their plans were
/// accepted first, so a new study may not count on that budget.
pub fn assess(
    spec: &StudySpec,
    permit: &Permit,
    reserved: f64,
    now: Timestamp,
) -> fl_engine::Result<Vec<StudyRefusal>> {
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
    let unit = permit.terms().privacy_budget.unit;
    if unit == BudgetUnit::DataHolder && spec.dp.level != DpLevel::Client {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::domain::{
        application::NewApplication, time, ApplicationId, Delta, Epsilon, MemberState,
        PrivacyBudget,
    };

    const FEATURES: &str = r#"{"name": "t", "features": [
        {"name": "age", "category": "ehr_data",
         "source": {"observation": {"system": "http://loinc.org", "code": "30525-0"}},
         "transform": {"kind": "number"}}],
      "label": {"name": "chd", "category": "ehr_data",
        "source": {"condition": {"system": "http://snomed.info/sct", "code": "53741008"}}}}"#;

    fn request() -> StudyRequest {
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

    const FLOOR: OutputFloor = OutputFloor {
        min_sites: 2,
        min_samples_per_site: 10,
    };

    pub(crate) fn spec(rounds: u64) -> StudySpec {
        let mut r = request();
        r.rounds = rounds;
        parse_study(&r, 1e-5, FLOOR, 7).unwrap()
    }

    fn permit(epsilon: f64, unit: BudgetUnit) -> Permit {
        let now = time::now();
        let req = NewApplication {
            title: "t".into(),
            organisation: OrgId::parse("uni-a").unwrap(),
            public_body: false,
            purposes: vec![Purpose::ScientificResearch],
            research_flags: vec![],
            categories: vec![DataCategory::EhrData],
            data_holders: vec![
                OrgId::parse("hosp-1").unwrap(),
                OrgId::parse("hosp-2").unwrap(),
            ],
            member_states: vec![MemberState::parse("DE").unwrap()],
            period_start: now,
            period_end: now + chrono::Duration::days(365),
            privacy_budget: PrivacyBudget {
                epsilon: Epsilon::parse(epsilon).unwrap(),
                delta: Delta::parse(1e-5).unwrap(),
                unit,
            },
            justification: "j".into(),
            optout_exception: None,
        };
        Permit::issue(ApplicationId::new(), "alice", &req, false, None, now)
    }

    #[test]
    fn a_valid_request_becomes_a_study_with_its_input_width_from_the_features() {
        let s = spec(10);
        assert_eq!(s.model, ModelSpec::logistic(1, 1));
        assert_eq!((s.seed, s.output_check.min_sites), (7, 2));
        assert_eq!((s.dp.sampling_rate, s.dp.steps_per_round), (1.0, 1));
        assert!(s.train.record_dp.is_none());
    }

    #[test]
    fn survival_and_time_series_specifications_are_refused_until_the_engine_trains_them() {
        let mut r = request();
        r.feature_spec = serde_json::json!({"name": "s",
            "cohort": {"unit": "encounter", "index": "admission", "category": "ehr_data"},
            "features": [{"name": "age", "category": "ehr_data", "source": {"patient": "age"},
                          "transform": {"kind": "number"}}],
            "time_series": {"hours": 2, "channels": [{"name": "hr", "category": "ehr_data",
                "observation": {"system": "http://loinc.org", "code": "8867-4"}}]},
            "label": {"name": "y", "category": "ehr_data",
                      "source": {"survival": {"event": {"death": {}}, "follow_up": "30d"}}}});
        let errors = parse_study(&r, 1e-5, FLOOR, 7).unwrap_err();
        let fields: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code)).collect();
        assert!(
            fields.contains(&("feature_spec.label", "unsupported_task")),
            "{fields:?}"
        );
        assert!(
            fields.contains(&("feature_spec.time_series", "unsupported_task")),
            "{fields:?}"
        );
        // the same cohort with a binary label is a valid study
        r.feature_spec["label"]["source"] = serde_json::json!({"death": {"within": "30d"}});
        r.feature_spec
            .as_object_mut()
            .unwrap()
            .remove("time_series");
        assert!(parse_study(&r, 1e-5, FLOOR, 7).is_ok());
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
        let codes: Vec<&str> = parse_study(&r, 1e-5, FLOOR, 7)
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
        };
        let s = parse_study(&r, 1e-5, FLOOR, 7).unwrap();
        assert_eq!((s.dp.sampling_rate, s.dp.steps_per_round), (0.05, 10));
        assert!(s.train.record_dp.is_some());
        r.strategy = serde_json::json!({"name": "ditto"});
        assert_eq!(
            parse_study(&r, 1e-5, FLOOR, 7).unwrap().dp.steps_per_round,
            20
        );
        r.local_steps = None;
        r.local_epochs = Some(1);
        let err = parse_study(&r, 1e-5, FLOOR, 7).unwrap_err();
        assert!(err.iter().any(|e| e.code == "record_dp_needs_steps"));
    }

    #[test]
    fn a_target_epsilon_is_met_exactly_by_the_derived_noise() {
        let mut r = request();
        r.dp.noise_multiplier = None;
        r.dp.target_epsilon = Some(5.0);
        let s = parse_study(&r, 1e-5, FLOOR, 7).unwrap();
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
        };
        r.data_holders.push("hosp-9".into());
        let s = parse_study(&r, 1e-5, FLOOR, 7).unwrap();
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
}
