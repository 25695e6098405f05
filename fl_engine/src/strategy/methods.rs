//! The methods the engine offers, in one list, and what each one answers about itself.
//!
//! Every method is one file under `strategy/` that defines its configuration (the paper's
//! hyperparameters, with their defaults) and implements [`MethodSpec`] for it. The
//! `methods!` list below turns those configurations into [`StrategyConfig`], the one type a
//! study names its method with: its serde form is the request form (`{"name": "fedprox",
//! "mu": 0.1}`, every setting optional, unknown settings refused) and its OpenAPI schema
//! (feature `openapi`) is generated from the same types. [`stored`] is the form studies are
//! stored and sent to data holders in. Adding a method is its file plus one arm here (see
//! docs/fl-methods.md, "Adding a method").
//!
//! Whatever needs to know a rule of a method asks [`StrategyConfig::spec`]: whether its
//! settings are valid ([`MethodSpec::validate`]), which training settings it runs with
//! ([`MethodSpec::check_train`]), and whether it supports record- or client-level DP
//! ([`MethodSpec::record_dp`], [`MethodSpec::client_dp`]).
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{
    Aggregator, ApflConfig, ClientStrategy, DittoConfig, FedAdagradConfig, FedAdamConfig,
    FedAvgClient, FedAvgServer, FedDecorrConfig, FedDynConfig, FedExpConfig, FedLcConfig,
    FedLesamConfig, FedMapConfig, FedModeConfig, FedNovaConfig, FedPerConfig, FedProxConfig,
    FedSamConfig, FedSpeedConfig, FedYogiConfig, FendaFlConfig, FitIns, FitRes, HpflConfig,
    MoonConfig, PFedMeConfig, PerFclConfig, PerFedAvgConfig, QFedAvgConfig, ScaffoldConfig,
    ServerStrategy, Site,
};
use crate::dp::SampledGaussian;
use crate::error::{EngineError, Result};
use crate::model::{ModelSpec, Net};
use crate::params::{ParameterSet, Selector};
use crate::train::{Budget, TrainConfig};

/// Whether a method supports a kind of differential privacy, and if not, why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    Yes,
    No(&'static str),
}

impl Support {
    pub fn is_yes(self) -> bool {
        self == Support::Yes
    }
}

/// The training setting a [`TrainRefusal`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrainSetting {
    /// Which optimiser the sites train with.
    Optimizer,
    Momentum,
    WeightDecay,
}

/// A training configuration a method cannot run with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct TrainRefusal {
    pub setting: TrainSetting,
    /// Stable machine-readable code, e.g. `scaffold_needs_sgd`.
    pub code: &'static str,
    pub reason: String,
}

/// One federated method: its rules, how its two halves are built and what travels between
/// them. Each strategy file implements it for its configuration.
pub trait MethodSpec {
    fn name(&self) -> &'static str;

    /// Whether the settings are in range (the one place each method checks them; its server
    /// and client are only built from valid settings).
    fn validate(&self) -> Result<()> {
        Ok(())
    }

    /// Whether the method's update rule holds for this training configuration (SCAFFOLD's
    /// control variates assume plain SGD steps, FedNova normalises by SGD's work).
    fn check_train(&self, _train: &TrainConfig) -> std::result::Result<(), TrainRefusal> {
        Ok(())
    }

    /// Whether the client trains under record-level DP-SGD (`TrainConfig::record_dp`).
    /// Clients of methods answering `No` refuse it rather than train without it.
    fn record_dp(&self) -> Support {
        Support::Yes
    }

    /// Whether client-level DP in the aggregator covers everything the server learns from a
    /// site: `No` when sites upload record-dependent side values beside the model (control
    /// variates, losses, curve points, site weights) or the server step reads the raw updates
    /// outside the aggregator.
    fn client_dp(&self) -> Support {
        Support::Yes
    }

    /// Whether the method trains a task of this kind (FedLC calibrates by class counts, so
    /// it needs class labels). Clients of methods answering `No` refuse such a site.
    fn task(&self, _task: crate::data::Task) -> Support {
        Support::Yes
    }

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
}

/// Plain FedAvg (McMahan et al. 2017): no settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FedAvgConfig {}

impl MethodSpec for FedAvgConfig {
    fn name(&self) -> &'static str {
        "FedAvg"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedAvgClient::new(Selector::All)))
    }
}

/// Baseline: every site trains alone, nothing is shared.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SiloConfig {}

impl MethodSpec for SiloConfig {
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

/// Defines [`StrategyConfig`] from one arm per method and dispatches [`StrategyConfig::spec`]
/// to the arm's configuration; every other attribute of an arm (its request name, the name it
/// was stored under before) passes through.
macro_rules! methods {
    ($( $(#[$attr:meta])* $variant:ident($config:ty), )*) => {
        /// The method a study runs, with its settings. Serialised as the request names it:
        /// `{"name": "<method>", <setting>: <value>, ...}`; settings left out take the
        /// method's defaults.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(tag = "name")]
        pub enum StrategyConfig {
            $( $(#[$attr])* $variant($config), )*
        }

        impl StrategyConfig {
            /// The method behind this configuration.
            pub fn spec(&self) -> &dyn MethodSpec {
                match self {
                    $( StrategyConfig::$variant(c) => c, )*
                }
            }
        }
    };
}

methods! {
    #[serde(rename = "fedavg", alias = "FedAvg")]
    FedAvg(FedAvgConfig),
    #[serde(rename = "fedprox", alias = "FedProx")]
    FedProx(FedProxConfig),
    #[serde(rename = "scaffold", alias = "Scaffold")]
    Scaffold(ScaffoldConfig),
    #[serde(rename = "fedadam")]
    FedAdam(FedAdamConfig),
    #[serde(rename = "fedyogi")]
    FedYogi(FedYogiConfig),
    #[serde(rename = "fedadagrad")]
    FedAdagrad(FedAdagradConfig),
    #[serde(rename = "fednova", alias = "FedNova")]
    FedNova(FedNovaConfig),
    #[serde(rename = "feddyn", alias = "FedDyn")]
    FedDyn(FedDynConfig),
    #[serde(rename = "fedexp", alias = "FedExp")]
    FedExp(FedExpConfig),
    #[serde(rename = "qfedavg", alias = "QFedAvg")]
    QFedAvg(QFedAvgConfig),
    #[serde(rename = "fedmode", alias = "FedMode")]
    FedMode(FedModeConfig),
    #[serde(rename = "fedsam", alias = "FedSam")]
    FedSam(FedSamConfig),
    #[serde(rename = "fedlesam", alias = "FedLesam")]
    FedLesam(FedLesamConfig),
    #[serde(rename = "fedspeed", alias = "FedSpeed")]
    FedSpeed(FedSpeedConfig),
    #[serde(rename = "fedlc", alias = "FedLc")]
    FedLc(FedLcConfig),
    #[serde(rename = "feddecorr", alias = "FedDecorr")]
    FedDecorr(FedDecorrConfig),
    #[serde(rename = "moon", alias = "Moon")]
    Moon(MoonConfig),
    #[serde(rename = "ditto", alias = "Ditto")]
    Ditto(DittoConfig),
    #[serde(rename = "fedper", alias = "FedPer")]
    FedPer(FedPerConfig),
    #[serde(rename = "fenda_fl", alias = "FendaFl")]
    FendaFl(FendaFlConfig),
    #[serde(rename = "apfl", alias = "Apfl")]
    Apfl(ApflConfig),
    #[serde(rename = "perfcl", alias = "PerFcl")]
    PerFcl(PerFclConfig),
    #[serde(rename = "hpfl", alias = "Hpfl")]
    Hpfl(HpflConfig),
    #[serde(rename = "per_fedavg", alias = "PerFedAvg")]
    PerFedAvg(PerFedAvgConfig),
    #[serde(rename = "pfedme", alias = "PFedMe")]
    PFedMe(PFedMeConfig),
    #[serde(rename = "fedmap", alias = "FedMap")]
    FedMap(FedMapConfig),
    /// Baseline: every site trains alone, nothing is shared.
    #[serde(rename = "silo", alias = "Silo")]
    Silo(SiloConfig),
}

impl StrategyConfig {
    /// The method named `name` (its request name) with every setting at its default; `None`
    /// when no method has that name.
    pub fn named(name: &str) -> Option<Self> {
        serde_json::from_value(serde_json::json!({ "name": name })).ok()
    }

    pub fn name(&self) -> &'static str {
        self.spec().name()
    }

    /// The name a request gives the method (`fedprox`), as [`StrategyConfig::named`] reads it.
    pub fn request_name(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.get("name")?.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// Which parameters travel between sites and server.
    pub fn shared(&self) -> Selector {
        self.spec().shared()
    }

    /// Personalised methods are judged on each site's own (local) checkpoint.
    pub fn personalised(&self) -> bool {
        self.spec().personalised()
    }

    /// Whether the method trains a task of this kind ([`MethodSpec::task`]).
    pub fn supports_task(&self, task: crate::data::Task) -> Support {
        self.spec().task(task)
    }

    /// Whether the method runs under secure aggregation, which reveals to the server only the
    /// sum of the sites' update vectors. That suffices exactly when everything the server
    /// learns from a site passes through the aggregator, the condition of client-level DP
    /// ([`MethodSpec::client_dp`]): one rule for both.
    pub fn secure_aggregation(&self) -> Support {
        self.spec().client_dp()
    }

    /// Check that the model has the parts this strategy addresses.
    pub fn check_model(&self, spec: &ModelSpec) -> Result<()> {
        self.spec().check_model(spec)
    }

    /// Whether the method runs with `train`: its own rule ([`MethodSpec::check_train`]) and,
    /// when `train` asks for record-level DP, its [`MethodSpec::record_dp`] support.
    pub fn check_train(&self, train: &TrainConfig) -> Result<()> {
        check_train(self.spec(), train)
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
        self.spec().validate()?;
        self.spec().server(n_sites, aggregator)
    }

    /// Client part for one site. Its `fit` refuses a site whose training configuration the
    /// method does not run with ([`StrategyConfig::check_train`]).
    pub fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        self.spec().validate()?;
        Ok(Box::new(Checked {
            method: self.clone(),
            inner: self.spec().client()?,
        }))
    }
}

/// Whether `method` runs with `train`: its own rule ([`MethodSpec::check_train`]) and, when
/// `train` asks for record-level DP, its [`MethodSpec::record_dp`] support.
pub(crate) fn check_train(method: &dyn MethodSpec, train: &TrainConfig) -> Result<()> {
    method
        .check_train(train)
        .map_err(|r| EngineError::InvalidConfig(r.reason))?;
    if let (Some(_), Support::No(why)) = (&train.record_dp, method.record_dp()) {
        return Err(EngineError::InvalidConfig(format!(
            "{} does not support record-level DP (train.record_dp): {why}",
            method.name()
        )));
    }
    Ok(())
}

/// A method's client behind the check of the site's training configuration.
struct Checked {
    method: StrategyConfig,
    inner: Box<dyn ClientStrategy>,
}

impl ClientStrategy for Checked {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        self.method.check_train(&site.train)?;
        self.inner.fit(site, ins, rng)
    }

    fn evaluation_net<'a>(
        &'a mut self,
        site: &'a mut Site,
        global: &ParameterSet,
    ) -> Result<&'a Net> {
        self.inner.evaluation_net(site, global)
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        self.inner.save_state()
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        self.inner.load_state(state)
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

/// [`StrategyConfig`] as a study stores it and a data holder receives it: one key, the
/// method's name, holding its settings (`{"fedprox": {"mu": 0.1}}`). Reads what earlier
/// versions stored too: the variant names (`{"FedProx": {...}}`, `"FedAvg"`) and the FedOpt
/// family as `{"FedOpt": {"kind": "Adam", ...}}`. Use with `#[serde(with = ...)]`.
pub mod stored {
    use serde::{de::Error as _, ser::Error as _, Deserialize, Deserializer, Serializer};
    use serde_json::{Map, Value};

    use super::StrategyConfig;

    pub fn serialize<S: Serializer>(config: &StrategyConfig, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(mut settings) = serde_json::to_value(config).map_err(S::Error::custom)?
        else {
            return Err(S::Error::custom("a strategy serialises to an object"));
        };
        let name = match settings.remove("name") {
            Some(Value::String(n)) => n,
            _ => return Err(S::Error::custom("a strategy serialises with its name")),
        };
        let mut out = Map::new();
        out.insert(name, Value::Object(settings));
        s.collect_map(out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<StrategyConfig, D::Error> {
        let tagged = match Value::deserialize(d)? {
            // a method without settings, as earlier versions stored it
            Value::String(name) => named(name, Map::new()),
            Value::Object(map) if map.len() == 1 && !map.contains_key("name") => {
                let Some((name, Value::Object(settings))) = map.into_iter().next() else {
                    return Err(D::Error::custom(
                        "a stored strategy maps its name to settings",
                    ));
                };
                legacy_fedopt(name, settings)
            }
            other => other,
        };
        serde_json::from_value(tagged).map_err(D::Error::custom)
    }

    fn named(name: String, mut settings: Map<String, Value>) -> Value {
        settings.insert("name".into(), Value::String(name));
        Value::Object(settings)
    }

    /// Earlier versions kept FedAdam, FedYogi and FedAdagrad as one method with a `kind`.
    fn legacy_fedopt(name: String, mut settings: Map<String, Value>) -> Value {
        if name == "FedOpt" {
            if let Some(Value::String(kind)) = settings.remove("kind") {
                return named(format!("fed{}", kind.to_ascii_lowercase()), settings);
            }
        }
        named(name, settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Serialize, Deserialize)]
    struct Stored(#[serde(with = "stored")] StrategyConfig);

    #[test]
    fn a_request_names_the_method_and_leaves_out_what_takes_its_default() {
        let c: StrategyConfig = serde_json::from_value(json!({"name": "fedprox"})).unwrap();
        assert_eq!(c, StrategyConfig::FedProx(FedProxConfig::default()));
        let c: StrategyConfig =
            serde_json::from_value(json!({"name": "perfcl", "mu": 0.1, "gamma": 1.0})).unwrap();
        let StrategyConfig::PerFcl(p) = c else {
            panic!("{c:?}")
        };
        assert_eq!((p.mu, p.gamma), (0.1, 1.0));
        for bad in [
            json!({"name": "fedprox", "rho": 0.1}),
            json!({"name": "fedavg", "mu": 0.1}),
            json!({"name": "fedmagic"}),
            json!({"mu": 0.1}),
        ] {
            assert!(
                serde_json::from_value::<StrategyConfig>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        assert_eq!(StrategyConfig::named("fedmagic"), None);
        assert_eq!(
            StrategyConfig::named("fenda_fl"),
            Some(StrategyConfig::FendaFl(FendaFlConfig {}))
        );
    }

    #[test]
    fn stored_strategies_of_earlier_versions_still_load() {
        let load = |v: serde_json::Value| serde_json::from_value::<Stored>(v).unwrap().0;
        assert_eq!(
            load(json!("FedAvg")),
            StrategyConfig::FedAvg(FedAvgConfig {})
        );
        assert_eq!(
            load(json!({"FedSam": {"rho": 0.1}})),
            StrategyConfig::FedSam(FedSamConfig { rho: 0.1 })
        );
        assert_eq!(
            load(json!({"FedPer": {}})),
            StrategyConfig::FedPer(FedPerConfig {})
        );
        let yogi = load(
            json!({"FedOpt": {"kind": "Yogi", "server_lr": 0.5, "beta1": 0.9,
                                          "beta2": 0.99, "tau": 1e-9}}),
        );
        let StrategyConfig::FedYogi(FedYogiConfig(c)) = yogi else {
            panic!("{yogi:?}")
        };
        assert_eq!(c.server_lr, 0.5);
    }

    #[test]
    fn every_method_round_trips_through_its_stored_form() {
        let all = [
            "fedavg",
            "fedprox",
            "scaffold",
            "fedadam",
            "fedyogi",
            "fedadagrad",
            "fednova",
            "feddyn",
            "fedexp",
            "qfedavg",
            "fedmode",
            "fedsam",
            "fedlesam",
            "fedspeed",
            "fedlc",
            "feddecorr",
            "moon",
            "ditto",
            "fedper",
            "fenda_fl",
            "apfl",
            "perfcl",
            "hpfl",
            "per_fedavg",
            "pfedme",
            "fedmap",
            "silo",
        ];
        for name in all {
            let c = StrategyConfig::named(name).unwrap_or_else(|| panic!("{name}"));
            let stored = serde_json::to_value(Stored(c.clone())).unwrap();
            assert_eq!(stored.as_object().unwrap().keys().next().unwrap(), name);
            assert_eq!(serde_json::from_value::<Stored>(stored).unwrap().0, c);
            c.spec().validate().unwrap();
        }
    }
}
