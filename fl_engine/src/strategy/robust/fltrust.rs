//! FLTrust (Cao, Fang, Liu, Gong 2021, "FLTrust: Byzantine-robust Federated Learning via Trust
//! Bootstrapping", NDSS 2021, arXiv:2012.13995).
//!
//! A clean root dataset gives a root update `g_0` every round; then
//!
//! ```text
//! TS_i  = ReLU(cos(g_i, g_0))                    trust score of site i
//! g_i'  = (||g_0|| / ||g_i||) g_i                every update rescaled to the root update's norm
//! out   = sum_i TS_i g_i' / sum_i TS_i           (all TS_i = 0: out = 0, the model stays put)
//! ```
//!
//! Where `g_0` comes from is the only difference between the two ways to build the rule; the
//! combination above is one function ([`fltrust_combine`]) for both:
//! * [`FlTrust::new`]: the server holds the root dataset and trains its own copy of the current
//!   global model on it, `g_0 = w_root - w` (the paper's setting);
//! * [`FlTrust::supplied`]: `g_0` is handed in before each aggregation
//!   ([`FlTrust::set_root_update`]), e.g. the update of one participant trusted to hold the
//!   clean root data (a reference data set curated by whoever runs the federation). That
//!   participant's update is `g_0` only; it is not one of the combined updates.
//!
//! The paper's global step `w <- w + alpha out` is left to the strategy (FedAvg: alpha = 1,
//! FedOpt: its server optimiser).
//!
//! Choices the paper leaves open:
//! * The server-held root update is trained with [`train_local`] from the global model, with
//!   the model spec, [`TrainConfig`] (optimiser, budget, batch size, loss) and shared
//!   [`Selector`] the study supplies; a fresh optimiser every round (the paper uses plain SGD).
//!   Its ChaCha8 stream is seeded from `SHA-256(tag || seed || canonical bytes of the global
//!   model)`, so the root update is a deterministic function of (seed, global model) and a
//!   resumed study replays it bit for bit without any aggregator state. Parameters outside the
//!   shared selector (a personalised model's local parts) are freshly initialised from that
//!   seed each round.
//! * A site update of norm 0 has no direction: its trust is 0. A root update of norm 0 makes
//!   every trust 0, hence a zero update. When every trust is 0 the output is the zero update
//!   (the paper divides by sum TS_i without treating 0; keeping the model is the only choice
//!   that cannot be steered by the sites).
//! * Sample counts are ignored (see the module documentation); record-level DP does not apply
//!   to the server's own root data and is refused in its training configuration.
//! * A root update is used once: the server must call [`Aggregator::begin_round`] with the
//!   global model (server-held root) or [`FlTrust::set_root_update`] (supplied root) before
//!   every [`Aggregator::aggregate`], and aggregating without a fresh one is an error, so a
//!   stale root update can never weight a later round.
//!
//! Sensitivity under [`DpRobust`](super::DpRobust): the root update is clipped to C as well,
//! so every `g_i'` has norm `min(||g_0||, C) <= C` and the output, a convex combination of
//! them (or 0), lies in the C-ball: replace-one sensitivity 2C. The trust scores are
//! scale-invariant, so clipping the site updates does not change them. A supplied root update
//! is taken as given: the bound holds, but `g_0` itself (through the trust scores and the
//! norm the output is rescaled to) is not covered by the noise.
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

use super::{norm, run_plain, RobustReport, RobustRule};
use crate::data::Dataset;
use crate::error::{EngineError, Result};
use crate::model::{ModelSpec, Net};
use crate::params::{ParameterSet, Selector};
use crate::strategy::{Aggregator, AggregatorKind, AggregatorReport};
use crate::train::{train_local, Optimizer, TrainConfig};

/// FLTrust, with a server-held root dataset ([`FlTrust::new`]) or a root update supplied each
/// round ([`FlTrust::supplied`]).
pub struct FlTrust {
    /// The server's root dataset and how it trains on it; `None`: the root update is supplied.
    trainer: Option<RootTrainer>,
    /// This round's root update, set by `begin_round` (server-held root) or `set_root_update`
    /// (supplied), and consumed by `aggregate`.
    pending: Option<Vec<f32>>,
    last: Option<RobustReport>,
}

/// What the server trains its root update with.
struct RootTrainer {
    root: Dataset,
    model: ModelSpec,
    train: TrainConfig,
    shared: Selector,
    seed: u64,
}

impl std::fmt::Debug for FlTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("FlTrust");
        match &self.trainer {
            Some(t) => d
                .field("root_rows", &t.root.len())
                .field("model", &t.model)
                .field("train", &t.train)
                .field("shared", &t.shared),
            None => d.field("root", &"supplied"),
        };
        d.finish_non_exhaustive()
    }
}

impl FlTrust {
    /// `root`: the server's clean dataset; `model`, `shared`: the study's model and shared
    /// selector; `train`: how the root update is trained (usually the sites' configuration);
    /// `seed`: the root training's seed.
    pub fn new(
        root: Dataset,
        model: ModelSpec,
        train: TrainConfig,
        shared: Selector,
        seed: u64,
    ) -> Result<Self> {
        if root.is_empty() {
            return Err(EngineError::InvalidConfig(
                "FLTrust needs a non-empty root dataset".into(),
            ));
        }
        train.validate()?;
        if train.record_dp.is_some() {
            return Err(EngineError::InvalidConfig(
                "FLTrust trains its root update on the server's own data: record-level DP \
                 does not apply there (leave record_dp unset in the root training config)"
                    .into(),
            ));
        }
        // builds the model once so that a spec the engine cannot build fails here
        let shared_params = Net::new(&model, seed)?.parameters()?.select(&shared);
        if shared_params.is_empty() {
            return Err(EngineError::InvalidConfig(
                "FLTrust: the shared selector names no parameter of the model".into(),
            ));
        }
        Ok(Self {
            trainer: Some(RootTrainer {
                root,
                model,
                train,
                shared,
                seed,
            }),
            pending: None,
            last: None,
        })
    }

    /// FLTrust whose root update is supplied from outside before each aggregation
    /// ([`set_root_update`](Self::set_root_update)) instead of trained by the server.
    pub fn supplied() -> Self {
        Self {
            trainer: None,
            pending: None,
            last: None,
        }
    }

    /// Gives a [`supplied`](Self::supplied) rule the next aggregation's root update `g0` (a
    /// flat update in the same order as the site updates). Refused for a rule that trains its
    /// own root update, and for an empty or non-finite `g0`.
    pub fn set_root_update(&mut self, g0: Vec<f32>) -> Result<()> {
        if self.trainer.is_some() {
            return Err(EngineError::InvalidConfig(
                "this FLTrust trains its root update on the server's root dataset".into(),
            ));
        }
        if g0.is_empty() {
            return Err(EngineError::InvalidConfig(
                "the FLTrust root update has no coordinates".into(),
            ));
        }
        if g0.iter().any(|v| !v.is_finite()) {
            return Err(EngineError::NonFinite("FLTrust root update".into()));
        }
        self.pending = Some(g0);
        Ok(())
    }

    pub fn last_report(&self) -> Option<&RobustReport> {
        self.last.as_ref()
    }

    /// The root update `g_0` for `global` (the shared parameters), trained deterministically
    /// on the server's root dataset; an error for a rule whose root update is supplied.
    pub fn root_update(&self, global: &ParameterSet) -> Result<Vec<f32>> {
        let t = self.trainer.as_ref().ok_or_else(|| {
            EngineError::InvalidConfig(
                "this FLTrust holds no root dataset: its root update is supplied".into(),
            )
        })?;
        let mut h = Sha256::new();
        h.update(b"fl_engine/robust/fltrust-root");
        h.update(t.seed.to_le_bytes());
        h.update(global.canonical_bytes());
        let digest = h.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        let seed = u64::from_le_bytes(first);
        let net = Net::new(&t.model, seed)?;
        net.parameters()?
            .select(&t.shared)
            .check_compatible(global)?;
        net.load(global)?;
        let mut opt = Optimizer::new(t.train.optimizer.clone())?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        train_local(&net, &mut opt, &t.root, &t.train, &[], &mut rng, None)?;
        let trained = net.parameters()?.select(&t.shared);
        trained.ensure_finite()?;
        let g0: Vec<f32> = trained
            .to_flat()
            .iter()
            .zip(global.to_flat())
            .map(|(w, g)| w - g)
            .collect();
        if g0.iter().any(|v| !v.is_finite()) {
            return Err(EngineError::NonFinite("FLTrust root update".into()));
        }
        Ok(g0)
    }
}

/// The FLTrust combination of `updates` given the root update `g0` (clipped to `clip` first
/// when given).
pub(super) fn fltrust_combine(
    updates: &[&[f32]],
    g0: &[f32],
    clip: Option<f64>,
) -> Result<(Vec<f64>, RobustReport)> {
    let dim = g0.len();
    if let Some(u) = updates.iter().find(|u| u.len() != dim) {
        return Err(EngineError::LengthMismatch {
            expected: dim,
            found: u.len(),
        });
    }
    let g0_norm = norm(g0);
    let target = match clip {
        Some(c) => g0_norm.min(c),
        None => g0_norm,
    };
    let mut trust = Vec::with_capacity(updates.len());
    let mut acc = vec![0f64; dim];
    for u in updates {
        let n = norm(u);
        let ts = if n > 0.0 && g0_norm > 0.0 {
            let dot: f64 = u.iter().zip(g0).map(|(a, b)| *a as f64 * *b as f64).sum();
            (dot / (n * g0_norm)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        if ts > 0.0 {
            let w = ts * target / n;
            for (a, v) in acc.iter_mut().zip(u.iter()) {
                *a += w * *v as f64;
            }
        }
        trust.push(ts);
    }
    let total: f64 = trust.iter().sum();
    if total > 0.0 {
        acc.iter_mut().for_each(|a| *a /= total);
    }
    let mut report = RobustReport::new("fltrust", updates.len());
    report.selected = (0..updates.len()).filter(|&i| trust[i] > 0.0).collect();
    report.trust = trust;
    report.root_norm = Some(target);
    Ok((acc, report))
}

impl Aggregator for FlTrust {
    fn name(&self) -> &'static str {
        "fltrust"
    }

    fn kind(&self) -> AggregatorKind {
        AggregatorKind::Robust
    }

    fn report(&self) -> Option<AggregatorReport> {
        self.last.clone().map(AggregatorReport::Robust)
    }

    fn begin_round(&mut self, global: &ParameterSet) -> Result<()> {
        if self.trainer.is_none() {
            // supplied: the root update must be one of this global model's updates
            let expected = global.to_flat().len();
            return match &self.pending {
                Some(g0) if g0.len() != expected => Err(EngineError::LengthMismatch {
                    expected,
                    found: g0.len(),
                }),
                _ => Ok(()),
            };
        }
        self.pending = None;
        self.pending = Some(self.root_update(global)?);
        Ok(())
    }

    fn aggregate(&mut self, updates: &[&[f32]], weights: &[f64]) -> Result<Vec<f32>> {
        let (out, report) = run_plain(self, updates, weights)?;
        self.last = Some(report);
        Ok(out)
    }
}

impl RobustRule for FlTrust {
    fn combine(
        &mut self,
        updates: &[&[f32]],
        clip: Option<f64>,
    ) -> Result<(Vec<f64>, RobustReport)> {
        let g0 = self.pending.take().ok_or_else(|| {
            EngineError::InvalidConfig(if self.trainer.is_some() {
                "FLTrust needs this round's global model: the server must call \
                 Aggregator::begin_round before aggregate"
                    .into()
            } else {
                "FLTrust needs this round's root update: FlTrust::set_root_update must be \
                 called before aggregate"
                    .into()
            })
        })?;
        fltrust_combine(updates, &g0, clip)
    }

    fn sensitivity(&self, n: usize, clip: f64) -> Result<f64> {
        if n == 0 {
            return Err(EngineError::NoUpdates);
        }
        Ok(2.0 * clip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::{Budget, LossKind, OptimizerConfig};

    const G0: [f32; 2] = [3.0, 4.0];

    #[test]
    fn trust_scores_and_rescaling_by_hand() {
        // g0 = (3,4), ||g0|| = 5.
        // u0 = (6,8): cos 1, rescaled (3,4); u1 = (0,2): cos 8/10 = 0.8, rescaled (0,5);
        // u2 = (-3,-4): cos -1 -> trust 0; u3 = (4,-3): cos 0 -> trust 0; u4 = 0: trust 0.
        // out = (1 (3,4) + 0.8 (0,5)) / 1.8 = (3/1.8, 8/1.8) = (1.6667, 4.4444)
        let u: [&[f32]; 5] = [
            &[6.0, 8.0],
            &[0.0, 2.0],
            &[-3.0, -4.0],
            &[4.0, -3.0],
            &[0.0, 0.0],
        ];
        let (out, r) = fltrust_combine(&u, &G0, None).unwrap();
        assert!((out[0] - 3.0 / 1.8).abs() < 1e-12);
        assert!((out[1] - 8.0 / 1.8).abs() < 1e-12);
        assert_eq!(r.selected, vec![0, 1]);
        assert!((r.trust[1] - 0.8).abs() < 1e-12);
        assert_eq!(r.trust[0], 1.0);
        assert_eq!(&r.trust[2..], &[0.0, 0.0, 0.0]);
        assert_eq!(r.root_norm, Some(5.0));
        // clipped to 1: g0 -> norm 1, rescaled (0.6,0.8) and (0,1): ((0.6, 1.6)) / 1.8
        let (out, r) = fltrust_combine(&u, &G0, Some(1.0)).unwrap();
        assert!((out[0] - 0.6 / 1.8).abs() < 1e-12);
        assert!((out[1] - 1.6 / 1.8).abs() < 1e-12);
        assert_eq!(r.root_norm, Some(1.0));
    }

    #[test]
    fn zero_trust_gives_a_zero_update() {
        let u: [&[f32]; 2] = [&[-3.0, -4.0], &[4.0, -3.0]];
        let (out, r) = fltrust_combine(&u, &G0, None).unwrap();
        assert_eq!(out, vec![0.0, 0.0]);
        assert!(r.selected.is_empty());
        let (out, _) = fltrust_combine(&[&[1.0, 1.0]], &[0.0, 0.0], None).unwrap();
        assert_eq!(out, vec![0.0, 0.0]);
    }

    #[test]
    fn huge_byzantine_updates_get_zero_weight_or_the_root_norm() {
        let honest: [&[f32]; 3] = [&[2.0, 5.0], &[3.0, 3.0], &[1.0, 4.0]];
        // opposite to g0 at norm 1e6: weight 0, output equals the honest-only output
        let mut with_byz = honest.to_vec();
        with_byz.push(&[-6e5, -8e5]);
        let (a, _) = fltrust_combine(&honest, &G0, None).unwrap();
        let (b, r) = fltrust_combine(&with_byz, &G0, None).unwrap();
        assert_eq!(r.trust[3], 0.0);
        assert_eq!(a, b);
        // aligned with g0 at norm 1e6: rescaled to ||g0||, so the output norm stays <= 5
        let aligned: [f32; 2] = [6e5, 8e5];
        with_byz[3] = &aligned;
        let (c, _) = fltrust_combine(&with_byz, &G0, None).unwrap();
        assert!(c.iter().map(|v| v * v).sum::<f64>().sqrt() <= 5.0 + 1e-9);
    }

    fn root() -> (Dataset, ModelSpec, TrainConfig) {
        // y = 1 iff x0 > 0; logistic regression on 2 features
        let x = vec![1.0f32, 0.5, -1.0, 0.2, 0.8, -0.3, -0.6, -0.9];
        let data = Dataset::new(2, x, vec![1, 0, 1, 0]).unwrap();
        let train = TrainConfig {
            optimizer: OptimizerConfig::sgd(0.5),
            budget: Budget::Steps(3),
            batch_size: 2,
            loss: LossKind::bce(),
            record_dp: None,
        };
        (data, ModelSpec::logistic(2, 1), train)
    }

    #[test]
    fn root_update_is_deterministic_and_required() {
        let (data, spec, train) = root();
        let mut agg = FlTrust::new(data, spec.clone(), train, Selector::All, 5).unwrap();
        let global = Net::new(&spec, 1).unwrap().parameters().unwrap();
        let g0 = agg.root_update(&global).unwrap();
        assert_eq!(g0, agg.root_update(&global).unwrap());
        assert!(g0.iter().any(|v| *v != 0.0));
        // the root update itself gets trust 1 and is returned unchanged (up to f32)
        agg.begin_round(&global).unwrap();
        let out = agg.aggregate(&[&g0], &[1.0]).unwrap();
        for (o, g) in out.iter().zip(&g0) {
            assert!((o - g).abs() <= 1e-6 * g.abs().max(1e-3));
        }
        // consumed: a second aggregate without begin_round is refused
        assert!(agg.aggregate(&[&g0], &[1.0]).is_err());
    }

    #[test]
    fn a_supplied_root_update_gives_what_the_server_trained_one_gives() {
        let (data, spec, train) = root();
        let global = Net::new(&spec, 1).unwrap().parameters().unwrap();
        let mut trained = FlTrust::new(data, spec, train, Selector::All, 5).unwrap();
        let g0 = trained.root_update(&global).unwrap();
        // one update along g0, one at an angle, one against it (trust 0)
        let along: Vec<f32> = g0.iter().map(|v| 3.0 * v).collect();
        let skew: Vec<f32> = g0
            .iter()
            .enumerate()
            .map(|(i, v)| v + if i % 2 == 0 { 0.05 } else { -0.02 })
            .collect();
        let against: Vec<f32> = g0.iter().map(|v| -v).collect();
        let updates: [&[f32]; 3] = [&along, &skew, &against];
        let weights = [1.0, 5.0, 9.0];
        trained.begin_round(&global).unwrap();
        let a = trained.aggregate(&updates, &weights).unwrap();
        let mut supplied = FlTrust::supplied();
        supplied.set_root_update(g0.clone()).unwrap();
        supplied.begin_round(&global).unwrap();
        let b = supplied.aggregate(&updates, &weights).unwrap();
        assert_eq!(a, b);
        assert_eq!(trained.last_report(), supplied.last_report());
        let r = supplied.last_report().unwrap();
        assert_eq!(r.selected, vec![0, 1]);
        assert_eq!(r.trust[2], 0.0);
        // used once: a second aggregation needs a fresh root update
        supplied.begin_round(&global).unwrap();
        assert!(supplied.aggregate(&updates, &weights).is_err());
        // the root update must match the global model, and be finite
        supplied.set_root_update(vec![1.0]).unwrap();
        assert!(supplied.begin_round(&global).is_err());
        assert!(supplied.set_root_update(vec![f32::NAN; g0.len()]).is_err());
        assert!(supplied.set_root_update(vec![]).is_err());
        // a rule that trains its own root update takes none from outside, and vice versa
        assert!(trained.set_root_update(g0).is_err());
        assert!(FlTrust::supplied().root_update(&global).is_err());
    }

    #[test]
    fn under_dp_the_root_update_is_clipped_too() {
        use crate::dp::NoiseRng;
        use crate::strategy::DpRobust;
        let (data, spec, train) = root();
        let global = Net::new(&spec, 1).unwrap().parameters().unwrap();
        let agg = FlTrust::new(data, spec, train, Selector::All, 5).unwrap();
        let g0 = agg.root_update(&global).unwrap();
        let c = norm(&g0) / 2.0;
        let rng = NoiseRng::from_seed_for_reproducible_runs([1; 32]);
        let mut dp = DpRobust::new(Box::new(agg), c, 0.0, rng).unwrap();
        dp.begin_round(&global).unwrap();
        // 10 g0 (trust 1) and -g0 (trust 0): the output is g0's direction at norm
        // min(||g0||, C) = C, i.e. g0 / 2
        let big: Vec<f32> = g0.iter().map(|v| 10.0 * v).collect();
        let opp: Vec<f32> = g0.iter().map(|v| -v).collect();
        let out = dp.aggregate(&[&big, &opp], &[1.0, 1.0]).unwrap();
        for (o, g) in out.iter().zip(&g0) {
            assert!(
                (o - g / 2.0).abs() <= 1e-5 * g.abs().max(1e-3),
                "{o} vs {g}"
            );
        }
        let r = dp.last_report().unwrap();
        assert!((r.robust.trust[0] - 1.0).abs() < 1e-12 && r.robust.trust[1] == 0.0);
        assert_eq!(r.robust.root_norm, Some(c));
        assert_eq!(r.sensitivity, 2.0 * c);
    }

    #[test]
    fn config_checks() {
        let (data, spec, mut train) = root();
        let empty = Dataset::new(2, vec![], vec![]).unwrap();
        assert!(FlTrust::new(empty, spec.clone(), train.clone(), Selector::All, 0).is_err());
        assert!(FlTrust::new(
            data.clone(),
            spec.clone(),
            train.clone(),
            Selector::prefix("nothing."),
            0
        )
        .is_err());
        train.batch_size = 0;
        assert!(FlTrust::new(data, spec, train, Selector::All, 0).is_err());
    }
}
