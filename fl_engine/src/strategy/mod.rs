//! Federated strategies in the Flower spirit: a server part and a client part per method.
//!
//! * [`ServerStrategy`]: `configure_fit` (what each site gets this round) and
//!   `aggregate_fit` (site results -> next global parameters and what the aggregation
//!   reported, as [`Aggregated`]; `None` keeps the current model), plus its own serialisable
//!   state (server control variate, optimiser moments).
//! * [`ClientStrategy`]: the local objective and the per-site state that never leaves the
//!   site (control variate, personal model, ...), also serialisable; [`GlobalClient`] for the
//!   clients that evaluate the global model.
//!
//! Each method is one file with its configuration and its [`MethodSpec`]; `methods.rs` lists
//! them as [`StrategyConfig`] and is where every rule of a method is asked.
//!
//! Both exchange only the parameters named by the strategy's shared [`Selector`](crate::params::Selector). Every
//! site update is validated before it can touch the global model (names, shapes, finite
//! values, positive sample count) and rejected with a typed [`EngineError`](crate::EngineError).
//!
//! Every server averages its site vectors through the study's [`Aggregator`] (one helper,
//! which also gives the aggregator the round's global model first); swapping the default
//! [`WeightedMean`] for [`DpFedAvgAggregator`] (clip, sum, Gaussian noise) turns the methods
//! into their client-level DP variants without touching them.
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
mod fedspeed;
mod fenda_fl;
mod hpfl;
mod methods;
mod moon;
mod per_fedavg;
mod perfcl;
mod pfedme;
mod qfedavg;
pub mod robust;
mod scaffold;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use aggregate::{
    validate_results, Aggregated, AggregationMetrics, Aggregator, AggregatorKind, AggregatorReport,
    WeightedMean,
};
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
pub use fedopt::{
    FedAdagradConfig, FedAdamConfig, FedOptConfig, FedOptKind, FedOptServer, FedYogiConfig,
};
pub use fedper::FedPerConfig;
pub use fedprox::{FedProxClient, FedProxConfig};
pub use fedsam::FedSamConfig;
pub use fedspeed::FedSpeedConfig;
pub use fenda_fl::FendaFlConfig;
pub use hpfl::{HpflClient, HpflConfig};
pub use methods::{
    dp_round_cost, dp_steps_per_round, stored, FedAvgConfig, MethodSpec, SiloConfig,
    StrategyConfig, Support, TrainRefusal, TrainSetting,
};
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
use crate::dp::NoiseRng;
use crate::error::Result;
use crate::model::{ModelSpec, Net};
use crate::params::ParameterSet;
use crate::train::{Optimizer, TrainConfig, TrainReport};

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
    fn configure_fit(&self, round: u64, global: &ParameterSet) -> Result<FitIns> {
        Ok(FitIns {
            round,
            params: global.clone(),
            extras: ParameterSet::new(),
        })
    }

    /// Next global parameters from the results of this round, with what the aggregation
    /// reported. `failures` counts sites that did not report; `Ok(None)` keeps the current
    /// global model, which is what happens when every site failed.
    fn aggregate_fit(
        &mut self,
        round: u64,
        global: &ParameterSet,
        results: &[FitRes],
        failures: usize,
    ) -> Result<Option<Aggregated>> {
        if results.is_empty() && failures > 0 {
            return Ok(None);
        }
        self.aggregate(round, global, results).map(Some)
    }

    /// The method's server step on at least one result (none at all is
    /// [`EngineError::NoUpdates`](crate::EngineError::NoUpdates), which [`validate_results`]
    /// reports).
    fn aggregate(
        &mut self,
        round: u64,
        global: &ParameterSet,
        results: &[FitRes],
    ) -> Result<Aggregated>;

    /// The server's state between rounds; stateless servers keep the default.
    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::Value::Null)
    }

    fn load_state(&mut self, _state: serde_json::Value) -> Result<()> {
        Ok(())
    }
}

/// Client half of a strategy; one instance per site, holding that site's private state.
///
/// Clients that evaluate the global model implement [`GlobalClient`] instead and get this
/// trait from it; a client with a model of its own implements it directly and so has to say
/// which model the site evaluates and how that model is saved.
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

/// A client whose site evaluates its own net with the received global (shared) parameters
/// loaded: the global methods, and FedPer, FENDA-FL and Silo, whose private parts stay in the
/// site's net. Stateless unless it overrides `save_state` / `load_state`.
pub trait GlobalClient: Send {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes>;

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::Value::Null)
    }

    fn load_state(&mut self, _state: serde_json::Value) -> Result<()> {
        Ok(())
    }
}

impl<C: GlobalClient> ClientStrategy for C {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        GlobalClient::fit(self, site, ins, rng)
    }

    fn evaluation_net<'a>(
        &'a mut self,
        site: &'a mut Site,
        global: &ParameterSet,
    ) -> Result<&'a Net> {
        site.net.load(global)?;
        Ok(&site.net)
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        GlobalClient::save_state(self)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        GlobalClient::load_state(self, state)
    }
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
    /// fails with [`EngineError::InvalidConfig`](crate::EngineError::InvalidConfig) otherwise).
    /// `None` after [`Site::new`].
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
        let net = Net::new(spec, seed)?;
        if train.record_dp.is_some()
            && net
                .vars()
                .iter()
                .any(|(n, _)| crate::params::is_site_local_state(n))
        {
            return Err(crate::EngineError::InvalidConfig(
                "record-level DP needs per-example gradients, which BatchNorm's batch statistics \
                 couple: use GroupNorm or LayerNorm"
                    .into(),
            ));
        }
        for (part, d) in [
            ("train", &data.train),
            ("val", &data.val),
            ("test", &data.test),
        ] {
            if !d.is_empty() && d.n_features() != spec.inputs() {
                return Err(crate::EngineError::InvalidConfig(format!(
                    "site {}: {part} rows have {} values but the model reads rows of {}",
                    data.name,
                    d.n_features(),
                    spec.inputs()
                )));
            }
        }
        let optimizer = Optimizer::new(train.optimizer.clone())?;
        Ok(Self {
            data,
            net,
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

/// Fixtures for the methods' unit tests.
#[cfg(test)]
pub(crate) mod test_site {
    use super::{FitIns, Site};
    use crate::data::{Dataset, SiteData};
    use crate::model::ModelSpec;
    use crate::params::ParameterSet;
    use crate::train::{Budget, LossKind, OptimizerConfig, TrainConfig};

    /// A logistic regression on one feature: `n` points evenly over [-1, 1), label 1 above
    /// `threshold`, every part the same data; SGD at 0.5 for `steps` steps of `batch`; and the
    /// first round's instructions from the site's own initial model.
    pub(crate) fn one_feature(
        n: usize,
        threshold: f32,
        steps: usize,
        batch: usize,
        seed: u64,
    ) -> (Site, FitIns) {
        let half = (n / 2) as f32;
        let x: Vec<f32> = (0..n).map(|i| i as f32 / half - 1.0).collect();
        let y: Vec<u32> = x.iter().map(|v| u32::from(*v > threshold)).collect();
        let data = Dataset::new(1, x, y).unwrap();
        let site_data = SiteData {
            name: "s".into(),
            train: data.clone(),
            val: data.clone(),
            test: data,
        };
        let train = TrainConfig {
            optimizer: OptimizerConfig::sgd(0.5),
            budget: Budget::Steps(steps),
            batch_size: batch,
            loss: LossKind::bce(),
            record_dp: None,
        };
        let site = Site::new(site_data, &ModelSpec::logistic(1, 1), train, seed).unwrap();
        let ins = FitIns {
            round: 1,
            params: site.net.parameters().unwrap(),
            extras: ParameterSet::new(),
        };
        (site, ins)
    }
}
