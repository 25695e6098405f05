//! The Fed-Heart-Disease benchmark as in the FENDA-FL / FL4Health study (Tyler et al. 2023,
//! arXiv:2309.16825): four hospitals with FLamby's split, 80/20 train/validation inside each
//! site, batch 4, 15 rounds x 100 local steps, AdamW with the published tuned learning
//! rates; logistic regression (14 parameters) for the global methods, 151-parameter
//! two-layer nets for FedPer and FENDA-FL. Shared by the reproduction binary, the benchmark
//! and the tests so all three run exactly the same experiment.
use serde::{Deserialize, Serialize};

use crate::data::{heart_disease, SiteData};
use crate::error::{EngineError, Result};
use crate::metrics::MetricSummary;
use crate::model::{MlpConfig, ModelSpec};
use crate::sim::{pooled_site, split_seed, CheckpointKind, Simulation, SimulationConfig};
use crate::strategy::{
    DittoConfig, FedOptConfig, FedOptKind, FedPerConfig, FedProxConfig, FendaFlConfig,
    ScaffoldConfig, StrategyConfig,
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
}

impl Method {
    pub const ALL: [Method; 9] = [
        Method::FedAvg,
        Method::FedProx,
        Method::Scaffold,
        Method::FedAdam,
        Method::Ditto,
        Method::FedPer,
        Method::FendaFl,
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
        }
    }

    pub fn parse(s: &str) -> Result<Method> {
        let key = s.trim().to_ascii_lowercase().replace(['-', '_'], "");
        Method::ALL
            .into_iter()
            .find(|m| m.name().to_ascii_lowercase().replace('-', "") == key)
            .ok_or_else(|| EngineError::InvalidConfig(format!("unknown method `{s}`")))
    }

    /// Published mean accuracy and the checkpoint it was reported for.
    pub fn published(&self) -> (f64, CheckpointKind) {
        use CheckpointKind::*;
        match self {
            Method::FedAvg => (0.724, BestGlobal),
            Method::FedProx => (0.721, BestGlobal),
            Method::Scaffold => (0.711, BestGlobal),
            Method::FedAdam => (0.742, BestLocal),
            Method::Ditto => (0.802, BestLocal),
            Method::FedPer => (0.814, BestLocal),
            Method::FendaFl => (0.815, BestLocal),
            Method::Silo => (0.748, BestLocal),
            Method::Central => (0.732, BestLocal),
        }
    }

    /// Published tuned local learning rate (Silo and Central have none published; see
    /// [`Protocol::baseline_lrs`]).
    pub fn published_lr(&self) -> Option<f64> {
        match self {
            Method::FedAvg | Method::Scaffold | Method::Ditto => Some(0.1),
            Method::FedProx | Method::FedPer | Method::FendaFl => Some(1e-3),
            Method::FedAdam => Some(1e-5),
            Method::Silo | Method::Central => None,
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

/// The study configuration of `method` with local learning rate `lr`.
pub fn config(method: Method, protocol: &Protocol, seed: u64, lr: f64) -> SimulationConfig {
    let logistic = ModelSpec::logistic(heart_disease::N_FEATURES, 1);
    let (model, strategy) = match method {
        Method::FedAvg => (logistic, StrategyConfig::FedAvg),
        Method::FedProx => (
            logistic,
            StrategyConfig::FedProx(FedProxConfig { mu: 0.01 }),
        ),
        Method::Scaffold => (
            logistic,
            StrategyConfig::Scaffold(ScaffoldConfig { server_lr: 0.1 }),
        ),
        Method::FedAdam => (
            logistic,
            StrategyConfig::FedOpt(FedOptConfig::new(FedOptKind::Adam)),
        ),
        Method::Ditto => (
            logistic,
            StrategyConfig::Ditto(DittoConfig { lambda: 0.01 }),
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
        Method::Silo | Method::Central => (logistic, StrategyConfig::Silo),
    };
    // SCAFFOLD's control-variate algebra assumes plain SGD local steps.
    let optimizer = if method == Method::Scaffold {
        OptimizerConfig::sgd(lr)
    } else {
        OptimizerConfig::adamw(lr)
    };
    SimulationConfig {
        study: format!("fed-heart-disease/{}", method.name()),
        model,
        strategy,
        train: TrainConfig {
            optimizer,
            budget: Budget::Steps(protocol.local_steps),
            batch_size: protocol.batch_size,
            loss: LossKind::bce(),
            record_dp: None,
        },
        rounds: protocol.rounds,
        seed,
        reset_optimizer_each_round: false,
    }
}

/// The four hospitals, split 80/20 and standardised per site, for run `seed`.
pub fn site_data(seed: u64, val_fraction: f64) -> Result<Vec<SiteData>> {
    heart_disease::load()?
        .iter()
        .enumerate()
        .map(|(k, c)| {
            SiteData::prepare(
                &c.name,
                &c.train,
                &c.test,
                val_fraction,
                split_seed(seed, k),
            )
        })
        .collect()
}

/// Test metrics per site for each checkpoint kind, plus the mean best validation loss
/// over sites (what the baseline learning rate is selected on).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    pub latest: Vec<MetricSummary>,
    pub best_global: Vec<MetricSummary>,
    pub best_local: Vec<MetricSummary>,
    pub mean_best_val_loss: f64,
}

impl RunOutcome {
    pub fn get(&self, kind: CheckpointKind) -> &[MetricSummary] {
        match kind {
            CheckpointKind::Latest => &self.latest,
            CheckpointKind::BestGlobal => &self.best_global,
            CheckpointKind::BestLocal => &self.best_local,
        }
    }
}

/// One complete run of `method`; `lr` defaults to the published one.
pub fn run_once(
    method: Method,
    protocol: &Protocol,
    seed: u64,
    lr: Option<f64>,
) -> Result<RunOutcome> {
    let lr = lr.or(method.published_lr()).ok_or_else(|| {
        EngineError::InvalidConfig(format!("{} needs an explicit learning rate", method.name()))
    })?;
    let mut cfg = config(method, protocol, seed, lr);
    if method != Method::Central {
        let mut sim = Simulation::new(cfg, site_data(seed, protocol.val_fraction)?)?;
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
        });
    }
    // Central: one pooled site doing the federation's total work per round.
    let raw: Vec<_> = heart_disease::load()?
        .into_iter()
        .map(|c| (c.name, c.train, c.test))
        .collect();
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
    })
}
