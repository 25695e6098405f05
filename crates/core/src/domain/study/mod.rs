//! Federated studies: what a researcher runs under a permit, its lifecycle, and the rounds and
//! tasks it is made of.
//!
//! A study is parsed once into a [`StudySpec`] (see [`super::study_request`]) and never changes.
//! Its [`StudyStatus`] changes only through the transition methods of [`Study`]; rounds and
//! tasks are plain records written by the round loop, each in the same transaction as the audit
//! entry that records it.

use chrono::{DateTime, Utc};
use fl_engine::{
    dp::{rdp_sampled_gaussian, RdpAccountant, SampledGaussian},
    LossKind, ModelSpec, StrategyConfig, TrainConfig,
};
use secagg::ddg::{accounting as ddg_accounting, mechanism::DdgPlan};
use serde::{Deserialize, Serialize};

use super::{
    optout::FilterPolicy, permit::TransitionError, time::Timestamp, DataCategory, OrgId, PermitId,
    Purpose, RoundId, StudyId, TaskId,
};

/// Which unit differential privacy protects in a study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DpLevel {
    /// DP-FedAvg at the gateway: each data holder's whole update is clipped and noised.
    Client,
    /// DP-SGD at each data holder: every record's gradient is clipped and noised.
    Record,
    /// No formal differential privacy (`"none"` in the API): no clipping, no noise, no epsilon
    /// spent. Only under a permit whose `dp_requirement` is `none_allowed`; the output check
    /// still applies before release.
    #[serde(rename = "none")]
    NoFormalDp,
}

/// The privacy mechanism of a study, resolved at submission: the noise multiplier is fixed
/// (derived from a target epsilon when one was asked for) so every round costs the same.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DpPlan {
    pub level: DpLevel,
    pub clip_norm: f64,
    /// The noise's standard deviation in the sum of the holders' clipped updates, in units of
    /// `clip_norm`. Under distributed DP, what the sum of `min_survivors` holders carries.
    pub noise_multiplier: f64,
    /// The epsilon the researcher asked the whole study to stay within, if any.
    pub target_epsilon: Option<f64>,
    /// Sampling rate of the accounted mechanism: 1 at client level (every selected holder,
    /// every round), the Poisson rate of DP-SGD at record level.
    pub sampling_rate: f64,
    /// Sampled-Gaussian steps one round costs: 1 at client level, the local DP-SGD steps at
    /// record level.
    pub steps_per_round: u64,
    /// The permit's delta.
    pub delta: f64,
    /// Client-level DP realised on the holders under secure aggregation: each clips its
    /// update and adds its share of discrete Gaussian noise before masking (Kairouz, Liu and
    /// Steinke's distributed discrete Gaussian; docs/secure-aggregation.md). Fixed at
    /// submission: `params` (model entries `dim`, `clip`, `central_stddev` in model units,
    /// `min_survivors` the noise is planned for, `max_clients`, `modulus_bits` of the ring,
    /// `k_stddevs` of head-room, rounding bias `beta`, the public `rotation_seed`) and what
    /// follows from them (`padded_dim`, the granularity `gamma`, each holder's
    /// `node_variance` in ring units as an exact fraction, the rounded sensitivity
    /// `l2_bound`). Absent when the gateway adds the noise (or there is none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub distributed: Option<DdgPlan>,
}

/// What one round of a study releases, as its accountant counts it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RoundMechanism {
    /// Gaussian noise on Poisson-sampled clipped contributions: DP-FedAvg at the gateway
    /// (sampling rate 1, one step) or DP-SGD on the holders.
    SampledGaussian(SampledGaussian),
    /// The distributed discrete Gaussian, accounted for the plan's minimum number of
    /// surviving holders (a round with fewer is discarded before it is unmasked).
    DistributedDiscreteGaussian(DdgPlan),
}

impl RoundMechanism {
    /// Rényi DP of one round at each of `orders`.
    fn rdp(&self, orders: &[f64]) -> fl_engine::Result<Vec<f64>> {
        Ok(match self {
            Self::SampledGaussian(m) => {
                rdp_sampled_gaussian(m.sampling_rate, m.noise_multiplier, orders)?
                    .into_iter()
                    .map(|r| r * m.steps as f64)
                    .collect()
            }
            Self::DistributedDiscreteGaussian(plan) => orders
                .iter()
                .map(|&a| ddg_accounting::rdp(plan, plan.params.min_survivors, a))
                .collect(),
        })
    }
}

/// Epsilon at `delta` of `rounds` composed under Rényi DP. Sampled-Gaussian rounds alone are
/// accounted by the engine's accountant; once a distributed round is among them, every round's
/// RDP is added at each of the `secagg` accountant's orders and converted there, so the
/// distributed rounds of one study give exactly `secagg::ddg::accounting::epsilon`.
pub fn epsilon_of_rounds(rounds: &[RoundMechanism], delta: f64) -> anyhow::Result<f64> {
    if rounds.is_empty() {
        return Ok(0.0);
    }
    let sampled: Option<Vec<SampledGaussian>> = rounds
        .iter()
        .map(|m| match m {
            RoundMechanism::SampledGaussian(s) => Some(*s),
            RoundMechanism::DistributedDiscreteGaussian(_) => None,
        })
        .collect();
    if let Some(sampled) = sampled {
        let mut acc = RdpAccountant::new();
        for m in sampled {
            acc.spend(m)?;
        }
        return Ok(acc.epsilon(delta)?.epsilon);
    }
    let orders = ddg_accounting::orders();
    let mut total = vec![0.0; orders.len()];
    // identical rounds (every round of one study) are computed once
    let mut distinct: Vec<(RoundMechanism, u64)> = Vec::new();
    for m in rounds {
        match distinct.iter_mut().find(|(d, _)| d == m) {
            Some((_, count)) => *count += 1,
            None => distinct.push((*m, 1)),
        }
    }
    for (m, count) in distinct {
        for (t, r) in total.iter_mut().zip(m.rdp(&orders)?) {
            *t += count as f64 * r;
        }
    }
    let at = |a: f64| {
        orders
            .iter()
            .position(|&o| o == a)
            .map_or(f64::INFINITY, |i| total[i])
    };
    Ok(ddg_accounting::epsilon_of_rdp(at, delta)?.epsilon)
}

impl DpPlan {
    /// The plan of a study without formal DP: nothing clipped, no noise, nothing accounted.
    pub fn no_formal_dp(delta: f64) -> Self {
        Self {
            level: DpLevel::NoFormalDp,
            clip_norm: 0.0,
            noise_multiplier: 0.0,
            target_epsilon: None,
            sampling_rate: 0.0,
            steps_per_round: 0,
            delta,
            distributed: None,
        }
    }

    /// Whether the study runs under formal differential privacy (and so spends epsilon).
    pub fn is_formal(&self) -> bool {
        self.level != DpLevel::NoFormalDp
    }

    /// The mechanism one round applies; `None` without formal DP.
    pub fn round_mechanism(&self) -> fl_engine::Result<Option<RoundMechanism>> {
        if !self.is_formal() {
            return Ok(None);
        }
        if let Some(plan) = self.distributed {
            return Ok(Some(RoundMechanism::DistributedDiscreteGaussian(plan)));
        }
        Ok(Some(RoundMechanism::SampledGaussian(SampledGaussian::new(
            self.sampling_rate,
            self.noise_multiplier,
            self.steps_per_round,
        )?)))
    }

    /// Epsilon of `rounds` rounds of this plan, composed under Rényi DP; 0 without formal DP.
    /// Under distributed DP, `secagg::ddg::accounting::epsilon` for the minimum survivors.
    pub fn epsilon_for_rounds(&self, rounds: u64) -> anyhow::Result<f64> {
        if !self.is_formal() {
            return Ok(0.0);
        }
        if let Some(plan) = &self.distributed {
            let rounds = u32::try_from(rounds)?;
            return Ok(ddg_accounting::epsilon(plan, rounds, self.delta)?.epsilon);
        }
        let step = SampledGaussian::new(
            self.sampling_rate,
            self.noise_multiplier,
            self.steps_per_round * rounds,
        )?;
        Ok(RdpAccountant::new()
            .epsilon_after(&step, self.delta)?
            .epsilon)
    }
}

/// A study's privacy accountant, kept with each checkpoint so a redone aggregation resumes
/// from the spend of the round before.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StudyAccountant {
    /// Rounds of the distributed discrete Gaussian: every round applies the study's plan, so
    /// the count is the whole history.
    Distributed { distributed_rounds: u64 },
    /// Gaussian rounds (central DP-FedAvg, DP-SGD on the holders): the engine's accountant.
    Rdp(RdpAccountant),
}

impl StudyAccountant {
    /// Nothing spent yet, for a study with `plan`.
    pub fn new(plan: &DpPlan) -> Self {
        match plan.distributed {
            Some(_) if plan.is_formal() => Self::Distributed {
                distributed_rounds: 0,
            },
            _ => Self::Rdp(RdpAccountant::new()),
        }
    }

    /// The study's epsilon once one more round of `plan` is spent.
    pub fn epsilon_after_round(&self, plan: &DpPlan) -> anyhow::Result<f64> {
        match (self, plan.round_mechanism()?) {
            (_, None) => Ok(0.0),
            (Self::Rdp(acc), Some(RoundMechanism::SampledGaussian(m))) => {
                Ok(acc.epsilon_after(&m, plan.delta)?.epsilon)
            }
            (Self::Distributed { distributed_rounds }, Some(_)) => {
                plan.epsilon_for_rounds(distributed_rounds + 1)
            }
            _ => anyhow::bail!("the stored accountant does not match the study's privacy plan"),
        }
    }

    /// Counts one round of `plan`; returns the study's epsilon after it.
    pub fn spend(&mut self, plan: &DpPlan) -> anyhow::Result<f64> {
        match (self, plan.round_mechanism()?) {
            (_, None) => Ok(0.0),
            (Self::Rdp(acc), Some(RoundMechanism::SampledGaussian(m))) => {
                acc.spend(m)?;
                Ok(acc.epsilon(plan.delta)?.epsilon)
            }
            (Self::Distributed { distributed_rounds }, Some(_)) => {
                *distributed_rounds += 1;
                plan.epsilon_for_rounds(*distributed_rounds)
            }
            _ => anyhow::bail!("the stored accountant does not match the study's privacy plan"),
        }
    }
}

/// What a study predicts. The feature specification's label determines what it can be: a
/// binary label trains a binary classifier (one sigmoid), a two-class softmax
/// (`multiclass` with 2 classes) or one independent sigmoid (`multilabel` with 1 label); a
/// survival label trains a survival model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StudyTask {
    /// One logit, labels 0 / 1.
    #[default]
    Binary,
    /// One logit per class (softmax), labels are class indices.
    Multiclass { classes: u32 },
    /// One logit per label (independent sigmoids), at most 32 labels.
    Multilabel { labels: u32 },
    /// Right-censored (time, event); one output, the Cox risk score.
    Survival,
}

impl StudyTask {
    /// The task of the engine's data sets.
    pub fn engine(self) -> fl_engine::data::Task {
        use fl_engine::data::Task;
        match self {
            Self::Binary | Self::Multiclass { .. } => Task::Classification,
            Self::Multilabel { labels } => Task::MultiLabel { labels },
            Self::Survival => Task::Survival,
        }
    }

    /// The model's output width.
    pub fn outputs(self) -> usize {
        match self {
            Self::Binary | Self::Survival => 1,
            Self::Multiclass { classes } => classes as usize,
            Self::Multilabel { labels } => labels as usize,
        }
    }

    /// The loss a study of this task trains with unless it names one.
    pub fn default_loss(self) -> LossKind {
        match self {
            Self::Binary => LossKind::bce(),
            Self::Multiclass { .. } => LossKind::CrossEntropy {
                class_weights: None,
            },
            Self::Multilabel { .. } => LossKind::MultiLabelBce { pos_weight: None },
            Self::Survival => LossKind::Cox,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Self::Binary => "binary".into(),
            Self::Multiclass { classes } => format!("{classes}-class"),
            Self::Multilabel { labels } => format!("{labels}-label"),
            Self::Survival => "survival".into(),
        }
    }
}

/// The flat row a node builds for every subject, as every model of a study reads it:
/// `[image | series | mask | static]`. With an image (`channels`, `height`, `width`), `image`
/// is its values channel-major (`torch.flatten` of a `[C, H, W]` tensor), as the CNN backbone
/// reads them. With a time series, `series` is the `[steps, channels]` values time-major
/// (`x[t0,c0], x[t0,c1], .., x[t1,c0], ..`), `mask` the presence mask in the same order (1
/// where the bin had an Observation: the engine's `per_value` mask layout); then the static
/// columns of the feature specification, in order. A specification has an image or a series,
/// never both; without either the row is the static columns alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowLayout {
    /// `(channels, height, width)` of the image input, when the specification has one.
    pub image: Option<(usize, usize, usize)>,
    pub steps: usize,
    pub channels: usize,
    /// Per feature of the specification: its name and its static columns' range in the row.
    pub features: Vec<(String, std::ops::Range<usize>)>,
}

impl RowLayout {
    pub fn of(spec: &crate::domain::feature_spec::FeatureSpec) -> Self {
        let (steps, channels) = spec
            .series
            .as_ref()
            .map_or((0, 0), |s| (s.steps(), s.channels.len()));
        let image = spec.image.as_ref().map(|i| (i.channels, i.height, i.width));
        let mut at = image.map_or(0, |(c, h, w)| c * h * w) + 2 * steps * channels;
        let features = spec
            .features
            .iter()
            .map(|f| {
                let w = f.columns().len();
                at += w;
                (f.name.clone(), at - w..at)
            })
            .collect();
        Self {
            image,
            steps,
            channels,
            features,
        }
    }

    pub fn has_series(&self) -> bool {
        self.steps * self.channels > 0
    }

    /// Width of the image values (0 without an image).
    pub fn image_width(&self) -> usize {
        self.image.map_or(0, |(c, h, w)| c * h * w)
    }

    /// Width of the series values and their mask.
    pub fn series_width(&self) -> usize {
        2 * self.steps * self.channels
    }

    /// Where the series (then its mask) starts.
    pub fn series_start(&self) -> usize {
        self.image_width()
    }

    /// Where the static columns start.
    pub fn statics_start(&self) -> usize {
        self.image_width() + self.series_width()
    }

    /// Number of static columns.
    pub fn statics(&self) -> usize {
        self.width() - self.statics_start()
    }

    pub fn width(&self) -> usize {
        self.features
            .last()
            .map_or(self.statics_start(), |(_, r)| r.end)
    }
}

/// The minimum the final aggregate must rest on before it may leave (Art. 73(2) output check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OutputCheck {
    pub min_sites: usize,
    pub min_samples_per_site: u64,
}

/// How the gateway combines the holders' updates each round. `mean` is the method's own
/// averaging (DP-FedAvg under client-level DP, an equal-weight mean under record-level DP, the
/// example-weighted mean without formal DP). The Byzantine-robust rules (fl_engine's
/// `strategy::robust`) count holders, not examples, so a holder cannot buy influence by
/// reporting a large sample count; under client-level DP each runs on updates clipped to the
/// plan's norm, with Gaussian noise scaled to the rule's replace-one sensitivity. FLTrust needs
/// a clean root data set; the gateway holds no patient data, so the study names one of its own
/// holders as the root holder (e.g. a node of the HDAB that holds a reference data set it
/// curates), whose update is each round's root update. It is not offered under client-level
/// DP: the trust scores and the norm every update is rescaled to come from the root holder's
/// unprivatised update, which the client-level noise does not cover.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "rule", rename_all = "snake_case", deny_unknown_fields)]
pub enum Aggregation {
    #[default]
    Mean,
    /// Krum (Blanchard et al. 2017): the update closest to its n - f - 2 nearest neighbours;
    /// needs n >= 2f + 3.
    Krum { f: usize },
    /// Multi-Krum: the mean of the `m` best-scored updates (default n - f); n >= 2f + 3.
    MultiKrum { f: usize, m: Option<usize> },
    /// Coordinate-wise median (Yin et al. 2018).
    Median,
    /// Coordinate-wise mean without the `per_side` lowest and highest values (Yin et al.
    /// 2018); needs n > 2 per_side.
    TrimmedMean { per_side: usize },
    /// Bulyan (El Mhamdi et al. 2018): repeated Krum, then a trimmed mean around the median;
    /// needs n >= 4f + 3.
    Bulyan { f: usize },
    /// FLTrust (Cao et al. 2021): the root holder's update `g0` is the root update; every other
    /// holder's update gets trust ReLU(cos(g_i, g0)), is rescaled to ||g0|| and enters a
    /// trust-weighted mean. The root holder's update is not one of the combined updates, so a
    /// round needs it and at least one other; a round without it fails.
    #[serde(rename = "fltrust")]
    FlTrust {
        /// One of the study's data holders, trusted to hold the clean root data set.
        root_holder: OrgId,
    },
}

impl Aggregation {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Mean => "mean",
            Self::Krum { .. } => "krum",
            Self::MultiKrum { .. } => "multi_krum",
            Self::Median => "median",
            Self::TrimmedMean { .. } => "trimmed_mean",
            Self::Bulyan { .. } => "bulyan",
            Self::FlTrust { .. } => "fltrust",
        }
    }

    /// FLTrust's root holder, whose update is each round's root update.
    pub fn root_holder(&self) -> Option<&OrgId> {
        match self {
            Self::FlTrust { root_holder } => Some(root_holder),
            _ => None,
        }
    }

    /// How many updates the rule combines in a round to which `contributors` holders sent one:
    /// all of them, but FLTrust takes its root holder's as the root update instead.
    pub fn combined(&self, contributors: usize) -> usize {
        match self {
            Self::FlTrust { .. } => contributors.saturating_sub(1),
            _ => contributors,
        }
    }

    /// The engine's robust rule; `None` for the method's own mean. `root_update` is FLTrust's
    /// root update of the round (its root holder's update); without it the FLTrust rule only
    /// answers for its limits and refuses to aggregate.
    pub fn robust_rule(
        &self,
        root_update: Option<Vec<f32>>,
    ) -> fl_engine::Result<Option<Box<dyn fl_engine::strategy::RobustRule>>> {
        use fl_engine::strategy::{Bulyan, CoordinateMedian, FlTrust, Krum, Trim, TrimmedMean};
        Ok(match *self {
            Self::Mean => None,
            Self::Krum { f } => Some(Box::new(Krum::new(f))),
            Self::MultiKrum { f, m } => Some(Box::new(Krum::multi(f, m)?)),
            Self::Median => Some(Box::new(CoordinateMedian::new())),
            Self::TrimmedMean { per_side } => {
                Some(Box::new(TrimmedMean::new(Trim::Count(per_side))?))
            }
            Self::Bulyan { f } => Some(Box::new(Bulyan::new(f))),
            Self::FlTrust { .. } => {
                let mut rule = FlTrust::supplied();
                if let Some(g0) = root_update {
                    rule.set_root_update(g0)?;
                }
                Some(Box::new(rule))
            }
        })
    }
}

/// Where each holder puts the decision threshold of its binary and multi-label metrics
/// (accuracy, balanced accuracy, precision, recall, F1, predicted-positive rate: positive when
/// the probability is above it). A rule chooses it at every holder on the holder's own
/// validation part, for every model it evaluates, and the holder reads its validation and
/// test metrics at it; the metrics report the threshold used. Multi-class (argmax) and
/// survival tasks have none.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "rule", rename_all = "snake_case", deny_unknown_fields)]
pub enum DecisionThreshold {
    /// The same threshold at every holder, in (0, 1).
    Fixed { value: f32 },
    /// The threshold that maximises F1 on the holder's validation part.
    // (braces: an internally tagged unit variant would take any other field silently)
    MaxF1 {},
    /// The threshold that maximises Youden's J = sensitivity + specificity - 1 (equivalently
    /// the balanced accuracy) on the holder's validation part.
    YoudenJ {},
}

impl Default for DecisionThreshold {
    /// 0.5 everywhere, as before the choice existed.
    fn default() -> Self {
        Self::Fixed { value: 0.5 }
    }
}

impl DecisionThreshold {
    /// The engine's rule, for a threshold chosen on validation data.
    pub fn rule(self) -> Option<fl_engine::ThresholdRule> {
        match self {
            Self::Fixed { .. } => None,
            Self::MaxF1 {} => Some(fl_engine::ThresholdRule::MaxF1),
            Self::YoudenJ {} => Some(fl_engine::ThresholdRule::YoudenJ),
        }
    }

    /// Whether each holder derives its threshold from its validation part (so what is read
    /// at it rests on the validation rows too).
    pub fn chosen_on_validation(self) -> bool {
        self.rule().is_some()
    }

    /// The threshold a holder reads `net`'s metrics at: the fixed value, or the one the rule
    /// picks on `validation` (0.5 where it cannot pick: no validation rows, or one class).
    pub fn at(
        self,
        net: &fl_engine::Net,
        validation: &fl_engine::data::Dataset,
    ) -> fl_engine::Result<f32> {
        Ok(match self {
            Self::Fixed { value } => value,
            _ => self
                .rule()
                .map(|rule| fl_engine::train::choose_threshold_on(net, validation, rule))
                .transpose()?
                .flatten()
                .unwrap_or(0.5),
        })
    }
}

/// Which global model a completed study releases (FL4Health's checkpointing protocol).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ModelRelease {
    /// The aggregated round whose model has the lowest example-weighted validation loss over
    /// the holders that evaluated it (ties keep the earlier round); the last aggregated round
    /// when no round's model was evaluated.
    #[default]
    BestValidation,
    /// The last aggregated round's model.
    Last,
}

impl ModelRelease {
    /// Studies stored before the choice existed were promised the last round's model.
    fn stored_default() -> Self {
        Self::Last
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::BestValidation => "best_validation",
            Self::Last => "last",
        }
    }
}

/// The round whose model a study releases, and why that one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ReleaseChoice {
    pub round: u64,
    pub selection: ModelRelease,
    /// Example-weighted validation loss of the chosen model over the holders that evaluated it.
    pub validation_loss: Option<f64>,
}

/// Chooses the released round among the `aggregated` rounds (ascending) from the holders'
/// evaluations `(round of the evaluated model, evaluation)`. `BestValidation` keeps the round
/// with the strictly lowest example-weighted validation loss, so ties keep the earlier round;
/// rounds nobody evaluated are skipped; with no evaluated round it falls back to the last.
pub fn choose_release(
    policy: ModelRelease,
    aggregated: &[u64],
    evaluations: &[(u64, SiteEvaluation)],
) -> Option<ReleaseChoice> {
    let weighted_loss = |round: u64| {
        let (sum, n) = evaluations
            .iter()
            .filter(|(r, e)| *r == round && e.validation.n > 0 && e.validation.loss.is_finite())
            .fold((0.0, 0usize), |(s, n), (_, e)| {
                (
                    s + e.validation.loss * e.validation.n as f64,
                    n + e.validation.n,
                )
            });
        (n > 0).then(|| sum / n as f64)
    };
    let last = *aggregated.last()?;
    if policy == ModelRelease::BestValidation {
        let mut best: Option<(u64, f64)> = None;
        for &round in aggregated {
            if let Some(loss) = weighted_loss(round) {
                if best.is_none_or(|(_, b)| loss < b) {
                    best = Some((round, loss));
                }
            }
        }
        if let Some((round, loss)) = best {
            return Some(ReleaseChoice {
                round,
                selection: ModelRelease::BestValidation,
                validation_loss: Some(loss),
            });
        }
    }
    Some(ReleaseChoice {
        round: last,
        selection: ModelRelease::Last,
        validation_loss: weighted_loss(last),
    })
}

/// A parsed, validated study. Stored as submitted and sent (in part) to the data holders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StudySpec {
    pub title: String,
    pub permit_id: PermitId,
    pub purpose: Purpose,
    pub categories: Vec<DataCategory>,
    pub data_holders: Vec<OrgId>,
    /// The node's feature specification (see `node::features`), as submitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub feature_spec: serde_json::Value,
    /// What the study predicts (stored studies from before tasks were offered are binary).
    #[serde(default)]
    pub task: StudyTask,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub model: ModelSpec,
    /// Trainable values of the model (`ModelSpec::parameter_count`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_count: Option<usize>,
    /// The method as `{"<name>": {<settings>}}` (see `fl_engine::strategy::stored`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    #[serde(with = "fl_engine::strategy::stored")]
    pub strategy: StrategyConfig,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub train: TrainConfig,
    pub rounds: u64,
    pub min_sites: usize,
    pub round_deadline_seconds: u64,
    pub dp: DpPlan,
    pub output_check: OutputCheck,
    /// Where the holders put the decision threshold of their metrics (binary and multi-label
    /// tasks; absent for the others, and in studies stored before the choice: 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<DecisionThreshold>,
    /// Which round's global model is released.
    #[serde(default = "ModelRelease::stored_default")]
    pub release: ModelRelease,
    /// How each round's updates are combined (stored studies before the choice: `mean`).
    #[serde(default)]
    pub aggregation: Aggregation,
    pub seed: u64,
    pub validation_fraction: f64,
    pub optout_policy: FilterPolicy,
    /// The holders' updates are summed under secure aggregation: the gateway relays the
    /// protocol and only ever sees the sum (docs/secure-aggregation.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure_aggregation: Option<SecureAggregation>,
}

/// The public parameters of a study's secure aggregation (SecAgg / SecAgg+), fixed when the
/// study is submitted for every round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecureAggregation {
    /// Holders that must stay to the end of every protocol stage: fewer survivors and the
    /// round fails, nothing revealed. Also the Shamir threshold of every holder's secrets.
    pub threshold: u32,
    /// Each holder masks with and shares its secrets among this many others: all other
    /// holders (Bonawitz et al.) or, when fewer, an even number on the SecAgg+ graph.
    pub neighbours: u32,
}

/// The lifecycle of a study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StudyStatus {
    Running,
    /// The permit is suspended; the study resumes at the same round when it is reinstated.
    Suspended,
    Completed,
    Cancelled,
    /// Stopped by governance: the permit was revoked or expired, or the budget ran out.
    Stopped,
    /// A round could not reach its quorum, or the engine refused the results.
    Failed,
}

impl StudyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Suspended => "suspended",
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
            Self::Stopped => "stopped",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Running,
            Self::Suspended,
            Self::Completed,
            Self::Cancelled,
            Self::Stopped,
            Self::Failed,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }

    /// Whether the round loop still has work for the study.
    pub fn is_live(self) -> bool {
        matches!(self, Self::Running | Self::Suspended)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Study {
    pub id: StudyId,
    pub organisation: OrgId,
    pub researcher_sub: String,
    pub spec: StudySpec,
    status: StudyStatus,
    pub status_reason: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Rounds aggregated so far.
    pub rounds_done: u64,
    /// Epsilon the study has spent (its accountant's value after `rounds_done` rounds).
    pub epsilon_spent: f64,
    pub row_version: i64,
}

impl Study {
    pub fn new(organisation: OrgId, researcher_sub: &str, spec: StudySpec, now: Timestamp) -> Self {
        Self {
            id: StudyId::new(),
            organisation,
            researcher_sub: researcher_sub.to_owned(),
            spec,
            status: StudyStatus::Running,
            status_reason: None,
            created_at: now,
            updated_at: now,
            rounds_done: 0,
            epsilon_spent: 0.0,
            row_version: 1,
        }
    }

    /// Rebuilds a stored study; only the store calls this.
    #[allow(clippy::too_many_arguments)]
    pub fn restore(
        id: StudyId,
        organisation: OrgId,
        researcher_sub: String,
        spec: StudySpec,
        status: StudyStatus,
        status_reason: Option<String>,
        created_at: Timestamp,
        updated_at: Timestamp,
        rounds_done: u64,
        epsilon_spent: f64,
        row_version: i64,
    ) -> Self {
        Self {
            id,
            organisation,
            researcher_sub,
            spec,
            status,
            status_reason,
            created_at,
            updated_at,
            rounds_done,
            epsilon_spent,
            row_version,
        }
    }

    pub fn status(&self) -> StudyStatus {
        self.status
    }

    fn refuse(&self, action: &str) -> TransitionError {
        TransitionError {
            code: "invalid_transition",
            current_state: self.status.as_str(),
            message: format!("cannot {action} a study that is {}", self.status.as_str()),
        }
    }

    fn set(&mut self, status: StudyStatus, reason: Option<String>, now: Timestamp) {
        self.status = status;
        self.status_reason = reason;
        self.updated_at = now;
        self.row_version += 1;
    }

    fn end(
        &mut self,
        action: &str,
        status: StudyStatus,
        reason: String,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        if !self.status.is_live() {
            return Err(self.refuse(action));
        }
        self.set(status, Some(reason), now);
        Ok(())
    }

    pub fn cancel(&mut self, reason: String, now: Timestamp) -> Result<(), TransitionError> {
        self.end("cancel", StudyStatus::Cancelled, reason, now)
    }

    pub fn stop(&mut self, reason: String, now: Timestamp) -> Result<(), TransitionError> {
        self.end("stop", StudyStatus::Stopped, reason, now)
    }

    pub fn fail(&mut self, reason: String, now: Timestamp) -> Result<(), TransitionError> {
        self.end("fail", StudyStatus::Failed, reason, now)
    }

    pub fn suspend(&mut self, reason: String, now: Timestamp) -> Result<(), TransitionError> {
        if self.status != StudyStatus::Running {
            return Err(self.refuse("suspend"));
        }
        self.set(StudyStatus::Suspended, Some(reason), now);
        Ok(())
    }

    pub fn resume(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        if self.status != StudyStatus::Suspended {
            return Err(self.refuse("resume"));
        }
        self.set(StudyStatus::Running, None, now);
        Ok(())
    }

    /// Marks activity without a change of status, so concurrent drivers of the same study
    /// conflict on the row version rather than both acting.
    pub fn touch(&mut self, now: Timestamp) {
        self.updated_at = now;
        self.row_version += 1;
    }

    /// Records an aggregated round and the study's epsilon after it.
    pub fn record_round(
        &mut self,
        round: u64,
        epsilon_total: f64,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        if self.status != StudyStatus::Running || round != self.rounds_done + 1 {
            return Err(self.refuse("record a round of"));
        }
        self.rounds_done = round;
        self.epsilon_spent = epsilon_total;
        self.updated_at = now;
        self.row_version += 1;
        Ok(())
    }

    pub fn complete(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        if self.status != StudyStatus::Running || self.rounds_done < self.spec.rounds {
            return Err(self.refuse("complete"));
        }
        self.set(StudyStatus::Completed, None, now);
        Ok(())
    }
}

/// Where one attempt at a round stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RoundPhase {
    /// Tasks are out; results are being collected.
    Collecting,
    /// Results were aggregated, the budget spent and the model checkpointed.
    Aggregated,
    /// Thrown away before aggregation: the permit stopped covering it, or the study ended.
    Discarded,
    /// The quorum was not reached by the deadline.
    Failed,
}

impl RoundPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Collecting => "collecting",
            Self::Aggregated => "aggregated",
            Self::Discarded => "discarded",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Collecting,
            Self::Aggregated,
            Self::Discarded,
            Self::Failed,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

/// What one data holder contributed to an aggregated round. Counts only: no update leaves the
/// gateway's aggregation step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SiteContribution {
    pub data_holder: OrgId,
    pub samples: u64,
    /// Subjects removed by the opt-out filter before training.
    pub excluded_subjects: u64,
    pub train_loss: Option<f64>,
    /// Whether the update went into the aggregate (false: missed the deadline).
    pub contributed: bool,
}

/// The aggregation step's public figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RoundSummary {
    pub sites: Vec<SiteContribution>,
    /// Client-level DP: the noise std on the mean. (How many updates were clipped is not
    /// published: it derives from the holders' unprivatised update norms. Rounds stored by
    /// earlier versions may still hold a `clipped_updates` key, which is ignored.)
    pub noise_std_on_mean: Option<f64>,
    /// FLTrust: how many of the combined updates got trust 0 (no positive cosine with the root
    /// update) and so did not move the model. A count of holders, never which ones nor their
    /// scores. FLTrust runs without formal DP (no guarantee is claimed) or under record-level
    /// DP, where the count is post-processing of updates privatised at the holders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted_updates: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub id: RoundId,
    pub study_id: StudyId,
    pub round: u64,
    pub attempt: u32,
    pub phase: RoundPhase,
    /// Opt-out registry version pinned for the whole round.
    pub registry_version: i64,
    pub participants: Vec<OrgId>,
    pub opened_at: Timestamp,
    pub deadline: Timestamp,
    pub closed_at: Option<Timestamp>,
    pub reason: Option<String>,
    pub epsilon_round: Option<f64>,
    pub epsilon_total: Option<f64>,
    pub summary: RoundSummary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// Evaluate the received model, then train on it and return the update.
    Fit,
    /// Evaluate the final model only.
    Evaluate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    Completed,
    /// Its round was discarded or the study ended before it completed.
    Discarded,
    /// Its deadline passed without a valid result.
    Expired,
}

macro_rules! str_enum {
    ($t:ty { $($v:ident => $s:literal),* $(,)? }) => {
        impl $t {
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $s),* }
            }
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($s => Some(Self::$v),)* _ => None }
            }
        }
    };
}
str_enum!(TaskKind { Fit => "fit", Evaluate => "evaluate" });
str_enum!(DpLevel { Client => "client", Record => "record", NoFormalDp => "none" });
str_enum!(TaskStatus { Pending => "pending", Completed => "completed", Discarded => "discarded", Expired => "expired" });

/// What a data holder reported besides its update.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskReport {
    pub num_examples: u64,
    pub excluded_subjects: u64,
    pub registry_version: i64,
    pub train_loss: Option<f64>,
    pub local_steps: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: TaskId,
    pub study_id: StudyId,
    pub round_id: RoundId,
    pub round: u64,
    pub kind: TaskKind,
    pub data_holder: OrgId,
    pub status: TaskStatus,
    pub created_at: Timestamp,
    pub deadline: DateTime<Utc>,
    pub completed_at: Option<Timestamp>,
    pub report: Option<TaskReport>,
}

impl Task {
    pub fn new(
        round: &Round,
        kind: TaskKind,
        data_holder: OrgId,
        deadline: Timestamp,
        now: Timestamp,
    ) -> Self {
        Self {
            id: TaskId::new(),
            study_id: round.study_id,
            round_id: round.id,
            round: round.round,
            kind,
            data_holder,
            status: TaskStatus::Pending,
            created_at: now,
            deadline,
            completed_at: None,
            report: None,
        }
    }
}

/// One data holder's evaluation of the model of a round (on its own validation and test data).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SiteEvaluation {
    pub data_holder: OrgId,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub validation: fl_engine::MetricSummary,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub test: fl_engine::MetricSummary,
}

/// The global model and server state after a round (round 0: the initial model).
#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub study_id: StudyId,
    pub round: u64,
    /// The shared parameters as safetensors.
    pub global: Vec<u8>,
    pub server_state: serde_json::Value,
    pub accountant: serde_json::Value,
}

// ---------------------------------------------------------------------------------------------
// Rounds the gateway refuses to open.

/// Why the gateway refuses to open a round: stored, as JSON, in the `reasons` of the
/// `study.round.refuse` entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum RoundRefusal {
    /// The permit no longer covers the round (its `code` is the check's).
    Permit(super::check::DenyReason),
    Round(RoundReason),
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum RoundReason {
    /// The policies no longer let the submitter run the study; `action` is `study.run`.
    PolicyDenied { action: &'static str },
    /// An amendment left fewer permitted holders than the study needs.
    QuorumImpossible {
        permitted_holders: usize,
        min_sites: usize,
    },
    /// An amendment removed FLTrust's root holder from the permit: no round can weigh the
    /// other updates against its root update any more.
    RootHolderRemoved { holder: OrgId },
}

impl RoundRefusal {
    /// Whether only the privacy budget stands in the way (the permit covers the study otherwise).
    pub fn is_budget(&self) -> bool {
        matches!(
            self,
            Self::Permit(super::check::DenyReason::BudgetExceeded { .. })
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evaluated(round: u64, holder: &str, n: usize, loss: f64) -> (u64, SiteEvaluation) {
        let mut summary: fl_engine::MetricSummary = serde_json::from_value(serde_json::json!({
            "n": n, "loss": 0.0, "accuracy": 0.0, "balanced_accuracy": 0.0,
            "auroc": null, "auprc": null, "f1": null
        }))
        .unwrap();
        summary.loss = loss;
        let holder = OrgId::parse(holder).unwrap();
        (
            round,
            SiteEvaluation {
                data_holder: holder,
                validation: summary.clone(),
                test: summary,
            },
        )
    }

    #[test]
    fn best_validation_weighs_each_holders_loss_by_its_examples() {
        // round 1: (10·0.9 + 30·0.5) / 40 = 0.6; round 2: (10·0.2 + 30·0.7) / 40 = 0.575;
        // round 3: (10·0.8 + 30·0.6) / 40 = 0.65. Round 0 (the initial model, loss 0.1) is
        // not an aggregated round and is never released.
        let evals = vec![
            evaluated(0, "a", 10, 0.1),
            evaluated(1, "a", 10, 0.9),
            evaluated(1, "b", 30, 0.5),
            evaluated(2, "a", 10, 0.2),
            evaluated(2, "b", 30, 0.7),
            evaluated(3, "a", 10, 0.8),
            evaluated(3, "b", 30, 0.6),
        ];
        let c = choose_release(ModelRelease::BestValidation, &[1, 2, 3], &evals).unwrap();
        assert_eq!((c.round, c.selection), (2, ModelRelease::BestValidation));
        assert!((c.validation_loss.unwrap() - 0.575).abs() < 1e-12);

        // weighting decides: round 1 unweighted (0.0 + 1.0) / 2 = 0.5, weighted
        // (1·0.0 + 99·1.0) / 100 = 0.99; round 2 unweighted 0.6, weighted 0.6
        let evals = vec![
            evaluated(1, "a", 1, 0.0),
            evaluated(1, "b", 99, 1.0),
            evaluated(2, "a", 1, 0.6),
            evaluated(2, "b", 99, 0.6),
        ];
        let c = choose_release(ModelRelease::BestValidation, &[1, 2], &evals).unwrap();
        assert_eq!(c.round, 2);
    }

    #[test]
    fn release_ties_keep_the_earlier_round_and_unevaluated_rounds_are_skipped() {
        let evals = vec![
            evaluated(1, "a", 5, 0.3),
            evaluated(2, "a", 5, 0.3),
            evaluated(3, "a", 0, 0.0),
            evaluated(3, "b", 5, f64::NAN),
        ];
        let c = choose_release(ModelRelease::BestValidation, &[1, 2, 3, 4], &evals).unwrap();
        assert_eq!(c.round, 1);
    }

    #[test]
    fn release_falls_back_to_the_last_round() {
        let c = choose_release(ModelRelease::BestValidation, &[1, 2], &[]).unwrap();
        assert_eq!(
            (c.round, c.selection, c.validation_loss),
            (2, ModelRelease::Last, None)
        );
        let evals = vec![evaluated(1, "a", 5, 0.1), evaluated(2, "a", 5, 0.4)];
        let c = choose_release(ModelRelease::Last, &[1, 2], &evals).unwrap();
        assert_eq!((c.round, c.selection), (2, ModelRelease::Last));
        assert_eq!(c.validation_loss, Some(0.4));
        assert!(choose_release(ModelRelease::BestValidation, &[], &evals).is_none());
    }

    #[test]
    fn studies_stored_before_the_release_choice_release_the_last_round() {
        let field: ModelRelease =
            serde_json::from_value(serde_json::json!("best_validation")).unwrap();
        assert_eq!(field, ModelRelease::BestValidation);
        assert_eq!(ModelRelease::stored_default(), ModelRelease::Last);
    }

    #[test]
    fn client_level_plan_matches_the_published_composition() {
        // FL-EHDS Table V: sigma 1, delta 1e-5, q 1 -> about 40 after 30 rounds (Balle et al.).
        let plan = DpPlan {
            level: DpLevel::Client,
            clip_norm: 1.0,
            noise_multiplier: 1.0,
            target_epsilon: None,
            sampling_rate: 1.0,
            steps_per_round: 1,
            delta: 1e-5,
            distributed: None,
        };
        let eps = plan.epsilon_for_rounds(30).unwrap();
        assert!((39.5..41.6).contains(&eps), "{eps}");
        assert!(plan.epsilon_for_rounds(1).unwrap() < eps);
    }

    fn study(rounds: u64) -> Study {
        let spec = crate::domain::study_request::fixtures::spec(rounds);
        Study::new(
            OrgId::parse("uni-a").unwrap(),
            "alice",
            spec,
            super::super::time::now(),
        )
    }

    #[test]
    fn the_lifecycle_admits_only_its_transitions() {
        let now = super::super::time::now();
        let mut s = study(2);
        assert_eq!(s.status(), StudyStatus::Running);
        assert!(s.complete(now).is_err(), "no round has run");
        assert!(
            s.record_round(2, 1.0, now).is_err(),
            "rounds are recorded in order"
        );
        s.record_round(1, 1.0, now).unwrap();
        s.suspend("permit suspended".into(), now).unwrap();
        assert!(
            s.record_round(2, 2.0, now).is_err(),
            "no round while suspended"
        );
        assert!(s.suspend("again".into(), now).is_err());
        s.resume(now).unwrap();
        s.record_round(2, 2.0, now).unwrap();
        let v = s.row_version;
        s.complete(now).unwrap();
        assert_eq!(
            (s.status(), s.rounds_done, s.epsilon_spent),
            (StudyStatus::Completed, 2, 2.0)
        );
        assert!(s.row_version > v);
        for (name, r) in [
            ("cancel", s.clone().cancel("x".into(), now)),
            ("stop", s.clone().stop("x".into(), now)),
            ("fail", s.clone().fail("x".into(), now)),
            ("resume", s.clone().resume(now)),
        ] {
            let e = r.expect_err(name);
            assert_eq!(e.current_state, "completed", "{name}");
        }
        let mut c = study(3);
        c.cancel("no longer needed".into(), now).unwrap();
        assert_eq!(c.status(), StudyStatus::Cancelled);
        assert!(!c.status().is_live());
    }
}
