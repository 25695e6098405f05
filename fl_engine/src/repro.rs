//! The Fed-Heart-Disease benchmark as in the FENDA-FL / FL4Health study (Tyler et al. 2023,
//! arXiv:2309.16825): four hospitals with FLamby's split, 80/20 train/validation inside each
//! site, batch 4, 15 rounds x 100 local steps, AdamW with the published tuned learning
//! rates; logistic regression (14 parameters) for the global methods, 151-parameter
//! two-layer nets for FedPer and FENDA-FL. Shared by the reproduction binary, the benchmark
//! and the tests so all three run exactly the same experiment.
use serde::{Deserialize, Serialize};

pub mod privacy;
pub mod public;

use crate::data::{dirichlet_label_skew, heart_disease, Dataset, SiteData};
use crate::error::{EngineError, Result};
use crate::metrics::MetricSummary;
use crate::model::{MlpConfig, ModelSpec};
use crate::seeds::{split_seed, stream_seed};
use crate::sim::{pooled_site, Attack, CheckpointKind, Simulation, SimulationConfig};
use crate::strategy::robust::{Bulyan, CoordinateMedian, FlTrust, Krum, Trim, TrimmedMean};
use crate::strategy::{
    Aggregator, ApflConfig, DittoConfig, FedAdamConfig, FedAvgConfig, FedDecorrConfig,
    FedDynConfig, FedExpConfig, FedLcConfig, FedLesamConfig, FedMapConfig, FedModeConfig,
    FedNovaConfig, FedPerConfig, FedProxConfig, FedSamConfig, FedSpeedConfig, FendaFlConfig,
    HpflConfig, MoonConfig, PFedMeConfig, PerFclConfig, PerFedAvgConfig, QFedAvgConfig,
    ScaffoldConfig, SiloConfig, StrategyConfig, WeightedMean,
};
use crate::train::{evaluate, Budget, LossKind, OptimizerConfig, TrainConfig};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    FedAvg,
    FedProx,
    Scaffold,
    FedAdam,
    Ditto,
    FedPer,
    FendaFl,
    Silo,
    Central,
    FedSam,
    FedLesam,
    FedSpeed,
    FedLc,
    FedDecorr,
    PerFedAvg,
    PFedMe,
    FedNova,
    FedExp,
    FedDyn,
    QFedAvg,
    FedMode,
    FedMap,
    Apfl,
    PerFcl,
    Moon,
    Hpfl,
}

/// What a run of a method is configured with: the local learning rate and the method's main
/// hyperparameter ([`Method::knob`]), when it has one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    pub lr: f64,
    pub knob: Option<f64>,
}

impl Setting {
    pub fn label(&self, method: Method) -> String {
        match (method.knob(), self.knob) {
            (Some(name), Some(v)) => format!("lr {}, {name} {v}", self.lr),
            _ => format!("lr {}", self.lr),
        }
    }
}

/// Learning rates tried for every method when tuning on validation data (AdamW; SCAFFOLD's
/// plain SGD gets the larger end of the same grid).
pub const TUNING_LRS: [f64; 3] = [1e-3, 1e-2, 1e-1];

impl Method {
    pub const ALL: [Method; 26] = [
        Method::FedAvg,
        Method::FedProx,
        Method::Scaffold,
        Method::FedAdam,
        Method::FedNova,
        Method::FedDyn,
        Method::FedExp,
        Method::QFedAvg,
        Method::FedMode,
        Method::FedSam,
        Method::FedLesam,
        Method::FedSpeed,
        Method::FedLc,
        Method::FedDecorr,
        Method::Moon,
        Method::Ditto,
        Method::FedPer,
        Method::FendaFl,
        Method::Apfl,
        Method::PerFcl,
        Method::Hpfl,
        Method::PerFedAvg,
        Method::PFedMe,
        Method::FedMap,
        Method::Silo,
        Method::Central,
    ];

    pub fn name(&self) -> &'static str {
        match self {
            Method::FedAvg => "FedAvg",
            Method::FedProx => "FedProx",
            Method::Scaffold => "SCAFFOLD",
            Method::FedAdam => "FedAdam",
            Method::Ditto => "Ditto",
            Method::FedPer => "FedPer",
            Method::FendaFl => "FENDA-FL",
            Method::Silo => "Silo",
            Method::Central => "Central",
            Method::FedSam => "FedSAM",
            Method::FedLesam => "FedLESAM",
            Method::FedSpeed => "FedSpeed",
            Method::FedLc => "FedLC",
            Method::FedDecorr => "FedDecorr",
            Method::PerFedAvg => "Per-FedAvg",
            Method::PFedMe => "pFedMe",
            Method::FedNova => "FedNova",
            Method::FedExp => "FedExP",
            Method::FedDyn => "FedDyn",
            Method::QFedAvg => "q-FedAvg",
            Method::FedMode => "FedMode",
            Method::FedMap => "FedMAP",
            Method::Apfl => "APFL",
            Method::PerFcl => "PerFCL",
            Method::Moon => "MOON",
            Method::Hpfl => "HPFL",
        }
    }

    pub fn parse(s: &str) -> Result<Method> {
        let key = s.trim().to_ascii_lowercase().replace(['-', '_'], "");
        Method::ALL
            .into_iter()
            .find(|m| m.name().to_ascii_lowercase().replace('-', "") == key)
            .ok_or_else(|| EngineError::InvalidConfig(format!("unknown method `{s}`")))
    }

    /// Published mean accuracy on Fed-Heart-Disease (FENDA-FL paper), when there is one.
    pub fn published(&self) -> Option<f64> {
        match self {
            Method::FedAvg => Some(0.724),
            Method::FedProx => Some(0.721),
            Method::Scaffold => Some(0.711),
            Method::FedAdam => Some(0.742),
            Method::Ditto => Some(0.802),
            Method::FedPer => Some(0.814),
            Method::FendaFl => Some(0.815),
            Method::Silo => Some(0.748),
            Method::Central => Some(0.732),
            Method::Apfl => Some(0.801),
            Method::PerFcl => Some(0.805),
            Method::Moon => Some(0.752),
            _ => None,
        }
    }

    /// The checkpoint a method is scored on: the published one where there is one, otherwise
    /// the local checkpoint for personalised methods and the server's for global ones.
    pub fn checkpoint(&self) -> CheckpointKind {
        use CheckpointKind::*;
        match self {
            Method::FedAvg | Method::FedProx | Method::Scaffold => BestGlobal,
            Method::FedAdam | Method::Moon => BestLocal,
            Method::Central | Method::Silo => BestLocal,
            m if config(*m, &Protocol::default(), 0, 0.1)
                .strategy
                .personalised() =>
            {
                BestLocal
            }
            _ => BestGlobal,
        }
    }

    /// Name of the method's main hyperparameter, tuned beside the learning rate.
    pub fn knob(&self) -> Option<&'static str> {
        match self {
            Method::FedProx => Some("mu"),
            Method::Ditto | Method::PFedMe => Some("lambda"),
            Method::FedSam | Method::FedLesam => Some("rho"),
            Method::FedSpeed => Some("lambda"),
            Method::FedLc => Some("tau"),
            Method::FedDecorr => Some("beta"),
            Method::PerFedAvg | Method::FedDyn => Some("alpha"),
            Method::FedExp => Some("eps"),
            Method::QFedAvg => Some("q"),
            Method::FedMode => Some("lambda"),
            Method::FedMap => Some("alpha"),
            Method::Apfl => Some("alpha_lr"),
            Method::PerFcl | Method::Moon => Some("mu"),
            _ => None,
        }
    }

    /// The published tuned setting (Silo and Central have none published; see
    /// [`Protocol::baseline_lrs`]). MOON and PerFCL: the published Fed-Heart-Disease
    /// configuration of the first seed (MOON lr 1e-3, mu 1e-3; PerFCL lr 1e-3, mu 0.1,
    /// gamma 1.0).
    pub fn published_setting(&self) -> Option<Setting> {
        let (lr, knob) = match self {
            Method::FedAvg | Method::Scaffold => (0.1, None),
            Method::Ditto => (0.1, Some(0.01)),
            Method::FedProx => (1e-3, Some(0.01)),
            Method::FedPer | Method::FendaFl => (1e-3, None),
            Method::FedAdam => (1e-5, None),
            Method::Apfl => (0.1, Some(0.1)),
            // mu; gamma keeps its published (and default) 1.0
            Method::PerFcl => (1e-3, Some(0.1)),
            Method::Moon => (1e-3, Some(1e-3)),
            Method::Silo | Method::Central => return None,
            _ => return None,
        };
        Some(Setting { lr, knob })
    }

    /// Published tuned local learning rate.
    pub fn published_lr(&self) -> Option<f64> {
        self.published_setting().map(|s| s.lr)
    }

    /// Values of [`Method::knob`] tried when tuning (the first is the default).
    pub fn knob_grid(&self) -> Vec<f64> {
        match self {
            Method::FedProx => vec![0.01, 0.1, 1.0],
            Method::Ditto => vec![0.01, 0.1, 1.0],
            Method::FedSam | Method::FedLesam => vec![0.05, 0.01, 0.1],
            // proximal weight 1/lambda of 0.1, 1 and 0.01 (FedDyn's alpha grid)
            Method::FedSpeed => vec![10.0, 1.0, 100.0],
            // binary counts in the hundreds make n^-1/4 offsets small, hence the large values
            Method::FedLc => vec![1.0, 5.0, 20.0],
            Method::FedDecorr => vec![0.1, 0.01, 0.05],
            Method::PerFedAvg => vec![0.01, 0.001, 0.05],
            Method::PFedMe => vec![15.0, 1.0, 5.0],
            Method::FedDyn => vec![0.01, 0.001, 0.1],
            Method::FedExp => vec![1e-3, 1e-2, 1e-1],
            Method::QFedAvg => vec![1.0, 0.1, 5.0],
            // W is about 4 sites x 10 points / loss, so these extrapolate by up to ~2x
            Method::FedMode => vec![0.0, 10.0, 20.0, 40.0],
            Method::FedMap => vec![0.01, 0.0, 0.1],
            Method::Apfl => vec![0.1, 0.01],
            // PerFCL's shared-extractor weight mu; gamma stays at the published 1.0
            Method::PerFcl => vec![1.0, 0.1],
            Method::Moon => vec![1.0, 0.1, 5.0],
            _ => vec![],
        }
    }

    /// The knob's published value, else the first of its grid.
    pub fn default_knob(&self) -> Option<f64> {
        self.published_setting()
            .and_then(|s| s.knob)
            .or(self.knob_grid().first().copied())
    }

    /// Every setting tried when tuning on validation data.
    pub fn grid(&self) -> Vec<Setting> {
        let knobs: Vec<Option<f64>> = match self.knob_grid() {
            k if k.is_empty() => vec![None],
            k => k.into_iter().map(Some).collect(),
        };
        let lrs: Vec<f64> = match self {
            // FedAdam's client rates are tiny by design (server step does the work)
            Method::FedAdam => vec![1e-5, 1e-4, 1e-3],
            _ => TUNING_LRS.to_vec(),
        };
        lrs.iter()
            .flat_map(|&lr| knobs.iter().map(move |&knob| Setting { lr, knob }))
            .collect()
    }

    /// Model description for tables.
    pub fn model_label(&self) -> &'static str {
        match config(*self, &Protocol::default(), 0, 0.1).model {
            ModelSpec::Mlp(c) if c.hidden.is_empty() => "logistic regression (14)",
            ModelSpec::Mlp(c) if c.hidden == [10] => "2-layer net (151)",
            ModelSpec::HeadNet { .. } | ModelSpec::Fenda { .. } => "2-layer net (151)",
            ModelSpec::Apfl { .. } => "APFL twins (2 x 76)",
            _ => "2-layer net",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Protocol {
    pub rounds: u64,
    pub local_steps: usize,
    pub batch_size: usize,
    pub val_fraction: f64,
    /// Learning rates tried for Silo / Central; chosen by validation loss, never test data.
    pub baseline_lrs: Vec<f64>,
}

impl Default for Protocol {
    fn default() -> Self {
        Self {
            rounds: 15,
            local_steps: 100,
            batch_size: 4,
            val_fraction: 0.2,
            baseline_lrs: vec![1e-3, 1e-2, 1e-1],
        }
    }
}

fn two_layer(hidden: usize) -> MlpConfig {
    MlpConfig {
        inputs: heart_disease::N_FEATURES,
        hidden: vec![hidden],
        outputs: 0,
        dropout: 0.0,
    }
}

/// Local epochs per round of the FedNova runs.
pub const FEDNOVA_EPOCHS: usize = 2;

/// The study configuration of `method` with local learning rate `lr` and its default
/// hyperparameter.
pub fn config(method: Method, protocol: &Protocol, seed: u64, lr: f64) -> SimulationConfig {
    let knob = method.default_knob();
    config_with(method, protocol, seed, Setting { lr, knob })
}

/// The study configuration of `method` under `setting`.
pub fn config_with(
    method: Method,
    protocol: &Protocol,
    seed: u64,
    setting: Setting,
) -> SimulationConfig {
    let lr = setting.lr;
    // the main hyperparameter, or the method's own default when the setting has none
    let knob = |default: f32| setting.knob.map_or(default, |k| k as f32);
    let logistic = ModelSpec::logistic(heart_disease::N_FEATURES, 1);
    let (model, strategy) = match method {
        Method::FedAvg => (logistic, StrategyConfig::FedAvg(FedAvgConfig {})),
        Method::FedProx => (
            logistic,
            StrategyConfig::FedProx(FedProxConfig {
                mu: knob(FedProxConfig::default().mu),
            }),
        ),
        Method::Scaffold => (
            logistic,
            StrategyConfig::Scaffold(ScaffoldConfig { server_lr: 0.1 }),
        ),
        Method::FedAdam => (logistic, StrategyConfig::FedAdam(FedAdamConfig::default())),
        Method::Ditto => (
            logistic,
            StrategyConfig::Ditto(DittoConfig {
                lambda: knob(DittoConfig::default().lambda),
            }),
        ),
        Method::FedPer => (
            ModelSpec::HeadNet {
                body: two_layer(10),
                outputs: 1,
            },
            StrategyConfig::FedPer(FedPerConfig {}),
        ),
        Method::FendaFl => (
            ModelSpec::Fenda {
                global: two_layer(5),
                local: two_layer(5),
                outputs: 1,
            },
            StrategyConfig::FendaFl(FendaFlConfig {}),
        ),
        Method::Silo | Method::Central => (logistic, StrategyConfig::Silo(SiloConfig {})),
        Method::FedSam => (
            logistic,
            StrategyConfig::FedSam(FedSamConfig {
                rho: knob(FedSamConfig::default().rho),
            }),
        ),
        Method::FedLesam => (
            logistic,
            StrategyConfig::FedLesam(FedLesamConfig {
                rho: knob(FedLesamConfig::default().rho),
            }),
        ),
        Method::FedSpeed => (
            logistic,
            StrategyConfig::FedSpeed(FedSpeedConfig {
                lambda: knob(FedSpeedConfig::default().lambda),
                ..FedSpeedConfig::default()
            }),
        ),
        Method::FedLc => (
            logistic,
            StrategyConfig::FedLc(FedLcConfig {
                tau: knob(FedLcConfig::default().tau),
            }),
        ),
        // the decorrelation acts on a hidden representation: a 13 -> 10 -> 1 net (151)
        Method::FedDecorr => (
            ModelSpec::Mlp(MlpConfig {
                outputs: 1,
                ..two_layer(10)
            }),
            StrategyConfig::FedDecorr(FedDecorrConfig {
                beta: knob(FedDecorrConfig::default().beta),
            }),
        ),
        Method::PerFedAvg => (
            logistic,
            StrategyConfig::PerFedAvg(PerFedAvgConfig {
                alpha: knob(PerFedAvgConfig::default().alpha),
                ..PerFedAvgConfig::default()
            }),
        ),
        Method::PFedMe => (
            logistic,
            StrategyConfig::PFedMe(PFedMeConfig {
                lambda: knob(PFedMeConfig::default().lambda),
                ..PFedMeConfig::default()
            }),
        ),
        Method::FedNova => (logistic, StrategyConfig::FedNova(FedNovaConfig::default())),
        Method::FedExp => (
            logistic,
            StrategyConfig::FedExp(FedExpConfig {
                eps: setting.knob.unwrap_or(FedExpConfig::default().eps),
                ..FedExpConfig::default()
            }),
        ),
        Method::FedDyn => (
            logistic,
            StrategyConfig::FedDyn(FedDynConfig {
                alpha: knob(FedDynConfig::default().alpha),
            }),
        ),
        Method::QFedAvg => (
            logistic,
            StrategyConfig::QFedAvg(QFedAvgConfig {
                q: setting.knob.unwrap_or(QFedAvgConfig::default().q),
                lipschitz: None,
            }),
        ),
        Method::FedMode => (
            logistic,
            StrategyConfig::FedMode(FedModeConfig {
                lambda: setting.knob.unwrap_or(FedModeConfig::default().lambda),
                ..FedModeConfig::default()
            }),
        ),
        Method::FedMap => (
            logistic,
            StrategyConfig::FedMap(FedMapConfig {
                alpha: knob(FedMapConfig::default().alpha),
                ..FedMapConfig::default()
            }),
        ),
        Method::Apfl => (
            // twins of a 13 -> 5 -> 1 net (76 parameters each)
            ModelSpec::Apfl {
                twin: MlpConfig {
                    outputs: 1,
                    ..two_layer(5)
                },
                alpha: 0.5,
            },
            StrategyConfig::Apfl(ApflConfig {
                alpha_lr: knob(ApflConfig::default().alpha_lr),
                ..ApflConfig::default()
            }),
        ),
        Method::PerFcl => (
            ModelSpec::Fenda {
                global: two_layer(5),
                local: two_layer(5),
                outputs: 1,
            },
            StrategyConfig::PerFcl(PerFclConfig {
                mu: knob(PerFclConfig::default().mu),
                ..PerFclConfig::default()
            }),
        ),
        Method::Moon => (
            ModelSpec::HeadNet {
                body: two_layer(10),
                outputs: 1,
            },
            StrategyConfig::Moon(MoonConfig {
                mu: knob(MoonConfig::default().mu),
                ..MoonConfig::default()
            }),
        ),
        Method::Hpfl => (
            ModelSpec::HeadNet {
                body: two_layer(10),
                outputs: 1,
            },
            StrategyConfig::Hpfl(HpflConfig::default()),
        ),
    };
    // FedNova exists for unequal local work: each site does FEDNOVA_EPOCHS passes over its
    // own data (Cleveland ~40 steps, Switzerland ~6), not the same step count.
    let budget = match method {
        Method::FedNova => Budget::Epochs(FEDNOVA_EPOCHS),
        _ => Budget::Steps(protocol.local_steps),
    };
    let mut train = TrainConfig {
        optimizer: OptimizerConfig::adamw(lr),
        budget,
        batch_size: protocol.batch_size,
        loss: LossKind::bce(),
        record_dp: None,
    };
    train.optimizer = match method {
        // q-FedAvg's L = 1/lr is the paper's estimate for plain SGD steps
        Method::QFedAvg => OptimizerConfig::sgd(lr),
        // FedNova normalises by the SGD-momentum work a_k, the case it was designed for
        Method::FedNova => OptimizerConfig::Sgd {
            lr,
            momentum: 0.9,
            weight_decay: 0.0,
        },
        // AdamW as in the published runs, unless the method's update needs plain SGD
        // (SCAFFOLD's control variates)
        _ if strategy.check_train(&train).is_err() => OptimizerConfig::sgd(lr),
        _ => OptimizerConfig::adamw(lr),
    };
    SimulationConfig {
        study: format!("fed-heart-disease/{}", method.name()),
        model,
        strategy,
        train,
        rounds: protocol.rounds,
        seed,
        reset_optimizer_each_round: false,
    }
}

/// Which federation a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Federation {
    /// The four hospitals with FLamby's train/test split.
    Hospitals,
    /// All 740 rows pooled and dealt to `sites` sites with Dirichlet(`alpha`) label skew
    /// (partition redrawn per run seed); each site keeps a quarter of its rows as its test set.
    Dirichlet { sites: usize, alpha: f64 },
}

/// Rows a Dirichlet site must hold at least (5 test, 3 validation, 12 training).
const MIN_ROWS_PER_SITE: usize = 20;
const DIRICHLET_TEST_FRACTION: f64 = 0.25;

impl Federation {
    /// Each site's raw `(name, train, test)` rows for run `seed`, before the 80/20
    /// train/validation split and standardisation.
    pub fn raw_sites(&self, seed: u64) -> Result<Vec<(String, Dataset, Dataset)>> {
        let centers = heart_disease::load()?;
        match *self {
            Federation::Hospitals => Ok(centers
                .into_iter()
                .map(|c| (c.name, c.train, c.test))
                .collect()),
            Federation::Dirichlet { sites, alpha } => {
                let parts: Vec<&Dataset> =
                    centers.iter().flat_map(|c| [&c.train, &c.test]).collect();
                let all = Dataset::concat(&parts)?;
                let seed = stream_seed(seed, sites as u64, alpha.to_bits());
                let idx =
                    dirichlet_label_skew(all.labels(), sites, alpha, MIN_ROWS_PER_SITE, seed)?;
                idx.iter()
                    .enumerate()
                    .map(|(k, rows)| {
                        let site = all.subset(rows);
                        let (train, test) =
                            site.split(DIRICHLET_TEST_FRACTION, stream_seed(seed, k as u64, 1))?;
                        Ok((format!("site-{k}"), train, test))
                    })
                    .collect()
            }
        }
    }

    /// Every site split 80/20 (or `val_fraction`) and standardised on its own training rows.
    pub fn site_data(&self, seed: u64, val_fraction: f64) -> Result<Vec<SiteData>> {
        self.raw_sites(seed)?
            .iter()
            .enumerate()
            .map(|(k, (name, train, test))| {
                SiteData::prepare(name, train, test, val_fraction, split_seed(seed, k))
            })
            .collect()
    }
}

/// The four hospitals, split 80/20 and standardised per site, for run `seed`.
pub fn site_data(seed: u64, val_fraction: f64) -> Result<Vec<SiteData>> {
    Federation::Hospitals.site_data(seed, val_fraction)
}

/// Test metrics per site for each checkpoint kind, with the validation losses the checkpoints
/// were chosen on (what tuning selects on).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    pub latest: Vec<MetricSummary>,
    pub best_global: Vec<MetricSummary>,
    pub best_local: Vec<MetricSummary>,
    /// Mean over sites of each site's best validation loss (the local checkpoints').
    pub mean_best_val_loss: f64,
    /// The server's best example-weighted validation loss (the global checkpoint's).
    pub best_global_val_loss: f64,
    /// Example-weighted validation loss after the last round.
    pub last_val_loss: f64,
}

impl RunOutcome {
    pub fn get(&self, kind: CheckpointKind) -> &[MetricSummary] {
        match kind {
            CheckpointKind::Latest => &self.latest,
            CheckpointKind::BestGlobal => &self.best_global,
            CheckpointKind::BestLocal => &self.best_local,
        }
    }

    /// Validation loss of the checkpoint `kind`.
    pub fn val_loss(&self, kind: CheckpointKind) -> f64 {
        match kind {
            CheckpointKind::Latest => self.last_val_loss,
            CheckpointKind::BestGlobal => self.best_global_val_loss,
            CheckpointKind::BestLocal => self.mean_best_val_loss,
        }
    }

    /// Test accuracy at `kind`, averaged uniformly over sites.
    pub fn accuracy(&self, kind: CheckpointKind) -> f64 {
        let sites = self.get(kind);
        sites.iter().map(|m| m.accuracy).sum::<f64>() / sites.len() as f64
    }
}

/// One complete run of `method` on the hospitals; `lr` defaults to the published one.
pub fn run_once(
    method: Method,
    protocol: &Protocol,
    seed: u64,
    lr: Option<f64>,
) -> Result<RunOutcome> {
    let lr = lr.or(method.published_lr()).ok_or_else(|| {
        EngineError::InvalidConfig(format!("{} needs an explicit learning rate", method.name()))
    })?;
    let setting = Setting {
        lr,
        knob: method.default_knob(),
    };
    run_setting(method, protocol, Federation::Hospitals, seed, setting)
}

/// One complete run of `method` under `setting` on `federation`.
pub fn run_setting(
    method: Method,
    protocol: &Protocol,
    federation: Federation,
    seed: u64,
    setting: Setting,
) -> Result<RunOutcome> {
    let mut cfg = config_with(method, protocol, seed, setting);
    if method != Method::Central {
        let data = federation.site_data(seed, protocol.val_fraction)?;
        let mut sim = Simulation::new(cfg, data)?;
        sim.run()?;
        let best = sim
            .checkpoints()
            .best_local
            .iter()
            .flatten()
            .map(|c| c.val_loss)
            .collect::<Vec<_>>();
        return Ok(RunOutcome {
            latest: sim.test(CheckpointKind::Latest)?,
            best_global: sim.test(CheckpointKind::BestGlobal)?,
            best_local: sim.test(CheckpointKind::BestLocal)?,
            mean_best_val_loss: best.iter().sum::<f64>() / best.len() as f64,
            best_global_val_loss: global_val_loss(&sim),
            last_val_loss: last_val_loss(&sim),
        });
    }
    // Central: one pooled site doing the federation's total work per round.
    let raw = federation.raw_sites(seed)?;
    let (pooled, tests) = pooled_site(&raw, protocol.val_fraction, seed)?;
    cfg.train.budget = Budget::Steps(protocol.local_steps * raw.len());
    let mut sim = Simulation::new(cfg, vec![pooled])?;
    sim.run()?;
    let score = |sim: &mut Simulation, kind| -> Result<Vec<MetricSummary>> {
        let net = sim.checkpoint_net(kind, 0)?;
        tests
            .iter()
            .map(|t| evaluate(&net, t, &LossKind::bce()))
            .collect()
    };
    let best = sim.checkpoints().best_local[0]
        .as_ref()
        .map_or(f64::NAN, |c| c.val_loss);
    Ok(RunOutcome {
        latest: score(&mut sim, CheckpointKind::Latest)?,
        best_global: score(&mut sim, CheckpointKind::BestGlobal)?,
        best_local: score(&mut sim, CheckpointKind::BestLocal)?,
        mean_best_val_loss: best,
        best_global_val_loss: global_val_loss(&sim),
        last_val_loss: last_val_loss(&sim),
    })
}

fn global_val_loss(sim: &Simulation) -> f64 {
    sim.checkpoints()
        .best_global
        .as_ref()
        .map_or(f64::NAN, |c| c.val_loss)
}

fn last_val_loss(sim: &Simulation) -> f64 {
    sim.history()
        .last()
        .map_or(f64::NAN, |r| r.weighted_val_loss)
}

/// Aggregation rules compared in the robust-aggregation table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RobustRule {
    Mean,
    Krum,
    MultiKrum,
    Median,
    TrimmedMean,
    Bulyan,
    FlTrust,
}

/// Sites that attack in every Byzantine scenario (2 of 8: a quarter of the federation).
pub const ATTACKERS: [usize; 2] = [0, 1];

/// Rows of each honest site's training split the FLTrust server holds as its root set.
const ROOT_ROWS_PER_SITE: usize = 4;

impl RobustRule {
    pub const ALL: [RobustRule; 7] = [
        RobustRule::Mean,
        RobustRule::Krum,
        RobustRule::MultiKrum,
        RobustRule::Median,
        RobustRule::TrimmedMean,
        RobustRule::Bulyan,
        RobustRule::FlTrust,
    ];

    /// Name with the assumption it runs under at 8 sites.
    pub fn label(&self) -> &'static str {
        match self {
            RobustRule::Mean => "weighted mean (FedAvg)",
            RobustRule::Krum => "Krum (f = 2)",
            RobustRule::MultiKrum => "Multi-Krum (f = 2, m = 6)",
            RobustRule::Median => "coordinate-wise median",
            RobustRule::TrimmedMean => "trimmed mean (2 each side)",
            // n >= 4f + 3 allows only f = 1 at 8 sites: two attackers exceed its assumption
            RobustRule::Bulyan => "Bulyan (f = 1)",
            RobustRule::FlTrust => "FLTrust (24 root rows)",
        }
    }

    fn aggregator(
        &self,
        cfg: &SimulationConfig,
        sites: &[SiteData],
        seed: u64,
    ) -> Result<Box<dyn Aggregator>> {
        Ok(match self {
            RobustRule::Mean => Box::new(WeightedMean),
            RobustRule::Krum => Box::new(Krum::new(2)),
            RobustRule::MultiKrum => Box::new(Krum::multi(2, None)?),
            RobustRule::Median => Box::new(CoordinateMedian::new()),
            RobustRule::TrimmedMean => Box::new(TrimmedMean::new(Trim::Count(2))?),
            RobustRule::Bulyan => Box::new(Bulyan::new(1)),
            RobustRule::FlTrust => {
                // the server's small clean sample of the task: a few rows of every honest site
                let parts: Vec<Dataset> = sites
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| !ATTACKERS.contains(k))
                    .map(|(_, s)| {
                        let n = s.train.len().min(ROOT_ROWS_PER_SITE);
                        s.train.subset(&(0..n).collect::<Vec<_>>())
                    })
                    .collect();
                let root = Dataset::concat(&parts.iter().collect::<Vec<_>>())?;
                Box::new(FlTrust::new(
                    root,
                    cfg.model.clone(),
                    cfg.train.clone(),
                    cfg.strategy.shared(),
                    stream_seed(seed, u64::MAX, 7),
                )?)
            }
        })
    }
}

/// What the Byzantine sites do in the robust-aggregation table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    Honest,
    /// Report the honest update reversed and scaled by 10.
    SignFlip,
    /// Report pure Gaussian noise (std 1 per coordinate).
    Noise,
    /// Train on flipped labels.
    LabelFlip,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [
        Scenario::Honest,
        Scenario::SignFlip,
        Scenario::Noise,
        Scenario::LabelFlip,
    ];

    pub fn label(&self) -> &'static str {
        match self {
            Scenario::Honest => "no attack",
            Scenario::SignFlip => "sign flip x10",
            Scenario::Noise => "Gaussian noise",
            Scenario::LabelFlip => "label flip",
        }
    }

    fn attacks(&self) -> Vec<(usize, Attack)> {
        let attack = match self {
            Scenario::Honest => return vec![],
            Scenario::SignFlip => Attack::SignFlip { scale: 10.0 },
            Scenario::Noise => Attack::GaussianNoise {
                std: 1.0,
                replace: true,
            },
            Scenario::LabelFlip => Attack::LabelFlip { classes: 2 },
        };
        ATTACKERS.iter().map(|&k| (k, attack.clone())).collect()
    }
}

/// Test accuracy of the final global model, averaged over the honest sites, for one run of
/// `method` under `setting` with `rule` aggregating and the `scenario`'s attackers.
pub fn run_robust(
    method: Method,
    rule: RobustRule,
    scenario: Scenario,
    protocol: &Protocol,
    federation: Federation,
    seed: u64,
    setting: Setting,
) -> Result<f64> {
    let cfg = config_with(method, protocol, seed, setting);
    let data = federation.site_data(seed, protocol.val_fraction)?;
    if data.len() <= ATTACKERS.len() {
        return Err(EngineError::InvalidConfig(
            "the robust table needs honest sites beside the attackers".into(),
        ));
    }
    let aggregator = rule.aggregator(&cfg, &data, seed)?;
    let mut sim =
        Simulation::with_aggregator(cfg, data, aggregator)?.with_attacks(scenario.attacks())?;
    sim.run()?;
    let test = sim.test(CheckpointKind::Latest)?;
    let honest: Vec<f64> = test
        .iter()
        .enumerate()
        .filter(|(k, _)| !ATTACKERS.contains(k))
        .map(|(_, m)| m.accuracy)
        .collect();
    Ok(honest.iter().sum::<f64>() / honest.len() as f64)
}

/// `existing` markdown with the section `name` of reproduction binary `generator` replaced by
/// `body` (between its marker comments, with the command that generated it), or appended
/// when the markers are absent, so a re-run replaces only its own tables.
pub fn replace_section(
    existing: &str,
    generator: &str,
    name: &str,
    body: &str,
    command: &str,
) -> String {
    let begin = format!("<!-- BEGIN generated by {generator}: {name} -->");
    let end = format!("<!-- END generated by {generator}: {name} -->");
    let section = format!(
        "{begin}\nGenerated with:\n\n```\n{command}\n```\n\n{}\n{end}",
        body.trim_end()
    );
    match (existing.find(&begin), existing.find(&end)) {
        (Some(a), Some(b)) if a < b => {
            format!("{}{section}{}", &existing[..a], &existing[b + end.len()..])
        }
        _ => format!("{}\n\n{section}\n", existing.trim_end()),
    }
}
