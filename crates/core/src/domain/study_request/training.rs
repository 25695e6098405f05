//! What the study trains and how: the task and its loss, the decision threshold, the
//! federated method and the local optimiser (with the method's rules on them), and the size of
//! one site's update on the wire.

use fl_engine::{
    strategy::{TrainSetting, WeightedMean},
    train::{Budget, LossKind, OptimizerConfig, TrainConfig},
    ModelSpec, Net, ParameterSet, StrategyConfig,
};

use super::{positive, OptimizerRequest};
use crate::domain::{
    feature_spec::FeatureSpec,
    study::{DecisionThreshold, StudyTask},
    Errors, OrgId, StudyId,
};

/// The task the study trains: the one it names, or the one its label determines; refused
/// where the label cannot provide it.
pub(super) fn parse_task(
    e: &mut Errors,
    req: Option<StudyTask>,
    spec: &FeatureSpec,
) -> Option<StudyTask> {
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
pub(super) fn parse_loss(e: &mut Errors, req: Option<&LossKind>, task: StudyTask) -> LossKind {
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
pub(super) fn parse_threshold(
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
pub(super) fn update_size(
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
    let study = StudyId::new().to_string();
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
pub(super) fn strategy_from_request(
    e: &mut Errors,
    raw: &serde_json::Value,
) -> Option<StrategyConfig> {
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
pub(super) fn check_training(
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

pub(super) fn parse_optimizer(e: &mut Errors, o: &OptimizerRequest) -> Option<OptimizerConfig> {
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
