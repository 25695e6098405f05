//! Federated strategies in the Flower spirit: a server part and a client part per method.
//!
//! * [`ServerStrategy`]: `configure_fit` (what each site gets this round) and
//!   `aggregate_fit` (site results -> next global parameters, `None` keeps the current
//!   model), plus its own serialisable state (server control variate, optimiser moments).
//! * [`ClientStrategy`]: the local objective and the per-site state that never leaves the
//!   site (control variate, personal model, ...), also serialisable.
//!
//! Both exchange only the parameters named by the strategy's shared [`Selector`]. Every
//! site update is validated before it can touch the global model (names, shapes, finite
//! values, positive sample count) and rejected with a typed [`EngineError`].
//!
//! The averaging step of the FedAvg family goes through [`Aggregator`]; swapping the
//! default [`WeightedMean`] for [`DpFedAvgAggregator`] (clip, sum, Gaussian noise) turns
//! these strategies into their client-level DP variants without touching them.
//!
//! Record-level DP (DP-SGD in local training, [`TrainConfig::record_dp`]) needs a ChaCha20
//! noise generator at each site: set [`Site::noise`] before every round (a fresh generator per
//! round, e.g. [`NoiseRng::from_secret`] with a per-round context, makes resumed rounds replay
//! bit for bit). [`dp_steps_per_round`] tells the accountant what one round costs.
mod aggregate;
mod ditto;
mod dp_fedavg;
mod fedavg;
mod fedopt;
mod fedper;
mod fedprox;
mod fenda_fl;
mod scaffold;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use aggregate::{validate_results, Aggregator, WeightedMean};
pub use ditto::{DittoClient, DittoConfig};
pub use dp_fedavg::DpFedAvgAggregator;
pub use fedavg::{FedAvgClient, FedAvgServer};
pub use fedopt::{FedOptConfig, FedOptKind, FedOptServer};
pub use fedper::FedPerConfig;
pub use fedprox::{FedProxClient, FedProxConfig};
pub use fenda_fl::FendaFlConfig;
pub use scaffold::{ScaffoldClient, ScaffoldConfig, ScaffoldServer};

use crate::data::SiteData;
use crate::dp::{NoiseRng, SampledGaussian};
use crate::error::{EngineError, Result};
use crate::model::{ModelSpec, Net};
use crate::params::{ParameterSet, Selector};
use crate::train::{Budget, Optimizer, TrainConfig, TrainReport};

/// What the server sends to a site for one round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitIns {
    pub round: u64,
    /// Current global values of the shared parameters.
    pub params: ParameterSet,
    /// Strategy payload beside the model (SCAFFOLD: server control variate); usually empty.
    pub extras: ParameterSet,
}

/// What a site sends back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitRes {
    pub site: String,
    /// Training examples behind this update (the FedAvg weight).
    pub num_examples: usize,
    /// Shared parameters after local training.
    pub params: ParameterSet,
    /// Strategy payload (SCAFFOLD: control-variate change); usually empty.
    pub extras: ParameterSet,
    pub report: TrainReport,
}

/// Server half of a strategy.
pub trait ServerStrategy: Send {
    fn name(&self) -> &'static str;

    /// Instructions for this round; by default the current global parameters.
    fn configure_fit(&self, round: u64, global: &ParameterSet) -> FitIns {
        FitIns {
            round,
            params: global.clone(),
            extras: ParameterSet::new(),
        }
    }

    /// Next global parameters from the results of this round. `failures` counts sites that
    /// did not report; `Ok(None)` keeps the current global model.
    fn aggregate_fit(
        &mut self,
        round: u64,
        global: &ParameterSet,
        results: &[FitRes],
        failures: usize,
    ) -> Result<Option<ParameterSet>>;

    fn save_state(&self) -> Result<serde_json::Value>;
    fn load_state(&mut self, state: serde_json::Value) -> Result<()>;
}

/// Client half of a strategy; one instance per site, holding that site's private state.
pub trait ClientStrategy: Send {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes>;

    /// The model this site evaluates and checkpoints once `global` is known (the global
    /// model for global methods, the personalised model otherwise).
    fn evaluation_net<'a>(
        &'a mut self,
        site: &'a mut Site,
        global: &ParameterSet,
    ) -> Result<&'a Net>;

    fn save_state(&self) -> Result<serde_json::Value>;
    fn load_state(&mut self, state: serde_json::Value) -> Result<()>;
}

/// One data holder: its data, working model and optimiser. All of it stays at the site.
pub struct Site {
    pub data: SiteData,
    pub net: Net,
    pub optimizer: Optimizer,
    pub train: TrainConfig,
    /// Start every round with fresh optimiser moments instead of keeping them.
    pub reset_optimizer: bool,
    /// Source of DP-SGD sampling and noise; required when `train.record_dp` is set (training
    /// fails with [`EngineError::InvalidConfig`] otherwise). `None` after [`Site::new`].
    pub noise: Option<NoiseRng>,
}

/// Serialisable image of a [`Site`]'s mutable state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteSnapshot {
    pub params: ParameterSet,
    pub optimizer: Optimizer,
}

impl Site {
    pub fn new(data: SiteData, spec: &ModelSpec, train: TrainConfig, seed: u64) -> Result<Self> {
        train.validate()?;
        let optimizer = Optimizer::new(train.optimizer.clone())?;
        Ok(Self {
            data,
            net: Net::new(spec, seed)?,
            optimizer,
            train,
            reset_optimizer: false,
            noise: None,
        })
    }

    pub fn name(&self) -> &str {
        &self.data.name
    }

    pub fn snapshot(&self) -> Result<SiteSnapshot> {
        Ok(SiteSnapshot {
            params: self.net.parameters()?,
            optimizer: self.optimizer.clone(),
        })
    }

    pub fn restore(&mut self, snap: SiteSnapshot) -> Result<()> {
        self.net.parameters()?.check_compatible(&snap.params)?;
        self.net.load(&snap.params)?;
        self.optimizer = snap.optimizer;
        Ok(())
    }

    pub(crate) fn begin_round(&mut self) -> Result<()> {
        if self.reset_optimizer {
            self.optimizer = Optimizer::new(self.train.optimizer.clone())?;
        }
        Ok(())
    }
}

/// Sampled-Gaussian steps (rate q, multiplier σ of `train.record_dp`) that one round of
/// `strategy` costs each site under record-level DP; `None` without record DP (or with an
/// `Epochs` budget, which [`TrainConfig::validate`] refuses under record DP).
///
/// One per local step, except Ditto: it trains the global and the personal model on two
/// independently drawn Poisson batches, so a round costs twice its local steps (the personal
/// model is counted although it never leaves the site, since its predictions or an export
/// could). Every site's own accountant composes these rounds.
pub fn dp_steps_per_round(strategy: &StrategyConfig, train: &TrainConfig) -> Option<u64> {
    train.record_dp.as_ref()?;
    let steps = match train.budget {
        Budget::Steps(s) => s as u64,
        // refused by TrainConfig::validate: the cost would depend on the site's size
        Budget::Epochs(_) => return None,
    };
    Some(match strategy {
        StrategyConfig::Ditto(_) => 2 * steps,
        _ => steps,
    })
}

/// [`dp_steps_per_round`] as the accountant's [`SampledGaussian`]; `Ok(None)` without record
/// DP or when a round takes no step. Errors when `train` is invalid.
pub fn dp_round_cost(
    strategy: &StrategyConfig,
    train: &TrainConfig,
) -> Result<Option<SampledGaussian>> {
    train.validate()?;
    match (&train.record_dp, dp_steps_per_round(strategy, train)) {
        (Some(dp), Some(steps)) if steps > 0 => Ok(Some(dp.mechanism(steps)?)),
        _ => Ok(None),
    }
}

/// The strategies the engine offers, with their paper hyperparameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StrategyConfig {
    FedAvg,
    FedProx(FedProxConfig),
    Scaffold(ScaffoldConfig),
    FedOpt(FedOptConfig),
    Ditto(DittoConfig),
    FedPer(FedPerConfig),
    FendaFl(FendaFlConfig),
    /// Baseline: every site trains alone, nothing is shared.
    Silo,
}

impl StrategyConfig {
    pub fn name(&self) -> &'static str {
        match self {
            StrategyConfig::FedAvg => "FedAvg",
            StrategyConfig::FedProx(_) => "FedProx",
            StrategyConfig::Scaffold(_) => "SCAFFOLD",
            StrategyConfig::FedOpt(c) => c.kind.name(),
            StrategyConfig::Ditto(_) => "Ditto",
            StrategyConfig::FedPer(_) => "FedPer",
            StrategyConfig::FendaFl(_) => "FENDA-FL",
            StrategyConfig::Silo => "Silo",
        }
    }

    /// Which parameters travel between sites and server.
    pub fn shared(&self) -> Selector {
        match self {
            StrategyConfig::FedPer(_) | StrategyConfig::FendaFl(_) => Selector::prefix("global."),
            StrategyConfig::Silo => Selector::Prefixes(vec![]),
            _ => Selector::All,
        }
    }

    /// Personalised methods are judged on each site's own (local) checkpoint.
    pub fn personalised(&self) -> bool {
        matches!(
            self,
            StrategyConfig::Ditto(_)
                | StrategyConfig::FedPer(_)
                | StrategyConfig::FendaFl(_)
                | StrategyConfig::Silo
        )
    }

    /// Check that the model has the parts this strategy addresses.
    pub fn check_model(&self, spec: &ModelSpec) -> Result<()> {
        match self {
            StrategyConfig::FedPer(_) => fedper::check_model(spec),
            StrategyConfig::FendaFl(_) => fenda_fl::check_model(spec),
            _ => Ok(()),
        }
    }

    /// Server part, aggregating with `aggregator` where the strategy averages.
    pub fn server(
        &self,
        n_sites: usize,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Box<dyn ServerStrategy>> {
        if n_sites == 0 {
            return Err(EngineError::InvalidConfig(
                "a study needs at least one site".into(),
            ));
        }
        Ok(match self {
            StrategyConfig::Scaffold(c) => Box::new(ScaffoldServer::new(c.clone(), n_sites)?),
            StrategyConfig::FedOpt(c) => Box::new(FedOptServer::new(c.clone(), aggregator)?),
            _ => Box::new(FedAvgServer::new(self.name(), aggregator)),
        })
    }

    /// Client part for one site.
    pub fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(match self {
            StrategyConfig::FedProx(c) => Box::new(FedProxClient::new(c.clone())?),
            StrategyConfig::Scaffold(c) => Box::new(ScaffoldClient::new(c.clone())),
            StrategyConfig::Ditto(c) => Box::new(DittoClient::new(c.clone())?),
            other => Box::new(FedAvgClient::new(other.shared())),
        })
    }
}
