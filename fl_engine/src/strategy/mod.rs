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
mod apfl;
mod ditto;
mod dp_fedavg;
mod fedavg;
mod feddecorr;
mod feddyn;
mod fedexp;
mod fedlc;
mod fedlesam;
mod fedmap;
mod fedmode;
mod fednova;
mod fedopt;
mod fedper;
mod fedprox;
mod fedsam;
mod fenda_fl;
mod hpfl;
mod moon;
mod per_fedavg;
mod perfcl;
mod pfedme;
mod qfedavg;
pub mod robust;
mod scaffold;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use aggregate::{validate_results, Aggregator, WeightedMean};
pub use apfl::{ApflClient, ApflConfig};
pub use ditto::{DittoClient, DittoConfig};
pub use dp_fedavg::DpFedAvgAggregator;
pub use fedavg::{FedAvgClient, FedAvgServer};
pub use feddecorr::FedDecorrConfig;
pub use feddyn::FedDynConfig;
pub use fedexp::FedExpConfig;
pub use fedlc::FedLcConfig;
pub use fedlesam::FedLesamConfig;
pub use fedmap::{FedMapClient, FedMapConfig, FedMapServer, FedMapTier};
pub use fedmode::{FedModeConfig, FedModeSign};
pub use fednova::FedNovaConfig;
pub use fedopt::{FedOptConfig, FedOptKind, FedOptServer};
pub use fedper::FedPerConfig;
pub use fedprox::{FedProxClient, FedProxConfig};
pub use fedsam::FedSamConfig;
pub use fenda_fl::FendaFlConfig;
pub use hpfl::{HpflClient, HpflConfig};
pub use moon::{MoonClient, MoonConfig};
pub use per_fedavg::PerFedAvgConfig;
pub use perfcl::{PerFclClient, PerFclConfig};
pub use pfedme::PFedMeConfig;
pub use qfedavg::QFedAvgConfig;
pub use robust::{
    Bulyan, CoordinateMedian, DpRobust, DpRobustReport, FlTrust, Krum, RobustReport, RobustRule,
    Trim, TrimmedMean, UniformMean,
};
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

/// Refuse record-level DP for a method that cannot train under it (its
/// [`MethodSpec::supports_record_dp`] is `false`), saying why.
pub(crate) fn refuse_record_dp(site: &Site, method: &str, why: &str) -> Result<()> {
    if site.train.record_dp.is_some() {
        return Err(EngineError::InvalidConfig(format!(
            "{method} does not support record-level DP (train.record_dp): {why}"
        )));
    }
    Ok(())
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
    Some(strategy.spec().dp_steps_per_local_step() * steps)
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

/// One federated method: how its two halves are built and what travels between them. Each
/// strategy file implements it for its configuration; [`StrategyConfig`] only dispatches.
pub trait MethodSpec {
    fn name(&self) -> &'static str;

    /// Which parameters travel between sites and server (default: all of them).
    fn shared(&self) -> Selector {
        Selector::All
    }

    /// Personalised methods are judged on each site's own (local) checkpoint.
    fn personalised(&self) -> bool {
        false
    }

    /// Check that the model has the parts this method addresses.
    fn check_model(&self, _spec: &ModelSpec) -> Result<()> {
        Ok(())
    }

    /// Server part, averaging through `aggregator` wherever the method averages site vectors
    /// (so robust and DP aggregation apply). Default: FedAvg's server.
    fn server(
        &self,
        _n_sites: usize,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Box<dyn ServerStrategy>> {
        Ok(Box::new(FedAvgServer::new(self.name(), aggregator)))
    }

    /// Client part for one site.
    fn client(&self) -> Result<Box<dyn ClientStrategy>>;

    /// Sampled-Gaussian steps one local step costs under record-level DP (Ditto: 2).
    fn dp_steps_per_local_step(&self) -> u64 {
        1
    }

    /// Whether the client trains under record-level DP-SGD (`TrainConfig::record_dp`). Methods
    /// answering `false` refuse it in `fit` rather than train without it.
    fn supports_record_dp(&self) -> bool {
        true
    }

    /// Whether client-level DP in the aggregator covers everything the server learns from a
    /// site: `false` when sites upload record-dependent side values beside the model (control
    /// variates, losses, curve points, site weights) or the server step reads the raw updates
    /// outside the aggregator.
    fn supports_client_dp(&self) -> bool {
        true
    }
}

/// Plain FedAvg (`StrategyConfig::FedAvg`).
struct FedAvgMethod;

impl MethodSpec for FedAvgMethod {
    fn name(&self) -> &'static str {
        "FedAvg"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedAvgClient::new(Selector::All)))
    }
}

/// Every site trains alone, nothing is shared (`StrategyConfig::Silo`).
struct SiloMethod;

impl MethodSpec for SiloMethod {
    fn name(&self) -> &'static str {
        "Silo"
    }

    fn shared(&self) -> Selector {
        Selector::Prefixes(vec![])
    }

    fn personalised(&self) -> bool {
        true
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedAvgClient::new(self.shared())))
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
    FedMap(FedMapConfig),
    FedMode(FedModeConfig),
    Apfl(ApflConfig),
    PerFcl(PerFclConfig),
    Moon(MoonConfig),
    FedNova(FedNovaConfig),
    FedDyn(FedDynConfig),
    FedExp(FedExpConfig),
    PerFedAvg(PerFedAvgConfig),
    PFedMe(PFedMeConfig),
    Hpfl(HpflConfig),
    FedLc(FedLcConfig),
    FedSam(FedSamConfig),
    FedLesam(FedLesamConfig),
    FedDecorr(FedDecorrConfig),
    QFedAvg(QFedAvgConfig),
}

impl StrategyConfig {
    /// The method behind this configuration.
    pub fn spec(&self) -> &dyn MethodSpec {
        match self {
            StrategyConfig::FedAvg => &FedAvgMethod,
            StrategyConfig::Silo => &SiloMethod,
            StrategyConfig::FedProx(c) => c,
            StrategyConfig::Scaffold(c) => c,
            StrategyConfig::FedOpt(c) => c,
            StrategyConfig::Ditto(c) => c,
            StrategyConfig::FedPer(c) => c,
            StrategyConfig::FendaFl(c) => c,
            StrategyConfig::FedMap(c) => c,
            StrategyConfig::FedMode(c) => c,
            StrategyConfig::Apfl(c) => c,
            StrategyConfig::PerFcl(c) => c,
            StrategyConfig::Moon(c) => c,
            StrategyConfig::FedNova(c) => c,
            StrategyConfig::FedDyn(c) => c,
            StrategyConfig::FedExp(c) => c,
            StrategyConfig::PerFedAvg(c) => c,
            StrategyConfig::PFedMe(c) => c,
            StrategyConfig::Hpfl(c) => c,
            StrategyConfig::FedLc(c) => c,
            StrategyConfig::FedSam(c) => c,
            StrategyConfig::FedLesam(c) => c,
            StrategyConfig::FedDecorr(c) => c,
            StrategyConfig::QFedAvg(c) => c,
        }
    }

    pub fn name(&self) -> &'static str {
        self.spec().name()
    }

    /// Which parameters travel between sites and server.
    pub fn shared(&self) -> Selector {
        self.spec().shared()
    }

    /// Personalised methods are judged on each site's own (local) checkpoint.
    pub fn personalised(&self) -> bool {
        self.spec().personalised()
    }

    /// Check that the model has the parts this strategy addresses.
    pub fn check_model(&self, spec: &ModelSpec) -> Result<()> {
        self.spec().check_model(spec)
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
        self.spec().server(n_sites, aggregator)
    }

    /// Client part for one site.
    pub fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        self.spec().client()
    }
}
