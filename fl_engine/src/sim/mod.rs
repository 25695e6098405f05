//! In-process simulation of a study: N sites, one server, the FL4Health protocol.
//!
//! Each round: the server configures the round, every site trains (in parallel; each site
//! draws from its own ChaCha stream derived from (seed, round, site), so thread scheduling
//! never changes a number), the server aggregates, then every site validates the model it
//! would use after this round. Three checkpoints are kept: the latest models; the best
//! global model by example-weighted validation loss (server side); and each site's best
//! model by its own validation loss (site side). The complete state serialises, so a
//! study stopped after round k and restored finishes bit-identically.
//!
//! Under record-level DP (`train.record_dp`) each site gets a fresh ChaCha20 [`NoiseRng`] every
//! round, seeded from `SHA-256(tag || seed || site || round)`. That keeps resumed studies
//! bit-identical, but anyone who knows the simulation seed can recompute the noise: the
//! simulator is a research tool for studying utility and must not release models trained on
//! real records. A deployment seeds each site from its own secret (`NoiseRng::from_secret`).
//!
//! Robustness studies make chosen sites Byzantine with [`Simulation::with_attacks`] (see
//! [`Attack`]); studies built with a non-default aggregator resume through
//! [`Simulation::restore_with_aggregator`].
mod attack;
mod central;
mod checkpoint;
mod report;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use attack::Attack;
pub use central::pooled_site;
pub use checkpoint::{CheckpointKind, Checkpoints, GlobalCheckpoint, LocalCheckpoint};
pub use report::{mean_ci95, RunSummary};

use crate::data::SiteData;
use crate::dp::NoiseRng;
use crate::error::{EngineError, Result};
use crate::metrics::{MetricSummary, ThresholdRule};
use crate::model::{ModelSpec, Net};
use crate::params::ParameterSet;
use crate::seeds::stream_seed;
use crate::strategy::{
    Aggregator, ClientStrategy, FitRes, ServerStrategy, Site, SiteSnapshot, StrategyConfig,
    WeightedMean,
};
use crate::train::{choose_threshold_on, evaluate_with, EvalOptions, TrainConfig};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimulationConfig {
    pub study: String,
    pub model: ModelSpec,
    pub strategy: StrategyConfig,
    pub train: TrainConfig,
    pub rounds: u64,
    pub seed: u64,
    /// Fresh optimiser state every round (default: keep it across rounds, as FL4Health).
    pub reset_optimizer_each_round: bool,
}

/// What one round produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub round: u64,
    pub train_loss: Vec<f64>,
    pub val: Vec<MetricSummary>,
    /// `sum_k n_k loss_k / sum_k n_k` over validation sets.
    pub weighted_val_loss: f64,
}

/// Everything needed to resume a study exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimulationState {
    pub round: u64,
    pub global: ParameterSet,
    pub server: serde_json::Value,
    pub clients: Vec<serde_json::Value>,
    pub sites: Vec<SiteSnapshot>,
    pub checkpoints: Checkpoints,
    pub history: Vec<RoundRecord>,
}

pub struct Simulation {
    config: SimulationConfig,
    sites: Vec<Site>,
    clients: Vec<Box<dyn ClientStrategy>>,
    server: Box<dyn ServerStrategy>,
    global: ParameterSet,
    round: u64,
    checkpoints: Checkpoints,
    history: Vec<RoundRecord>,
    /// Simulated Byzantine sites: (site index, attack), see [`Simulation::with_attacks`].
    attacks: Vec<(usize, Attack)>,
}

/// Site `k`'s DP-SGD noise generator for `round`: reproducible from the simulation seed, so it
/// offers no privacy against anyone who knows that seed (see the module documentation).
fn simulated_noise(seed: u64, k: usize, round: u64) -> NoiseRng {
    let mut h = Sha256::new();
    h.update(b"fl_engine/sim/record-dp-noise");
    h.update(seed.to_le_bytes());
    h.update((k as u64).to_le_bytes());
    h.update(round.to_le_bytes());
    NoiseRng::from_seed_for_reproducible_runs(h.finalize().into())
}

impl Simulation {
    /// A study with the default (example-weighted mean) aggregator.
    pub fn new(config: SimulationConfig, data: Vec<SiteData>) -> Result<Self> {
        Self::with_aggregator(config, data, Box::new(WeightedMean))
    }

    /// A study whose averaging step is `aggregator` (e.g. a DP aggregator).
    pub fn with_aggregator(
        config: SimulationConfig,
        data: Vec<SiteData>,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Self> {
        if data.is_empty() {
            return Err(EngineError::InvalidConfig(
                "a study needs at least one site".into(),
            ));
        }
        if let Some(s) = data.iter().find(|s| s.train.is_empty() || s.val.is_empty()) {
            return Err(EngineError::ZeroSamples(s.name.clone()));
        }
        config.strategy.check_model(&config.model)?;
        for d in &data {
            for split in [&d.train, &d.val, &d.test] {
                config
                    .train
                    .loss
                    .check_task(split.task(), config.model.outputs())?;
            }
        }
        let shared = config.strategy.shared();
        let global = Net::new(&config.model, stream_seed(config.seed, u64::MAX, 0))?
            .parameters()?
            .select(&shared);
        let mut sites = Vec::with_capacity(data.len());
        let mut clients = Vec::with_capacity(data.len());
        for (k, d) in data.into_iter().enumerate() {
            let mut site = Site::new(
                d,
                &config.model,
                config.train.clone(),
                stream_seed(config.seed, k as u64, 0),
            )?;
            site.reset_optimizer = config.reset_optimizer_each_round;
            sites.push(site);
            clients.push(config.strategy.client()?);
        }
        let server = config.strategy.server(sites.len(), aggregator)?;
        let checkpoints = Checkpoints::new(sites.len());
        Ok(Self {
            config,
            sites,
            clients,
            server,
            global,
            round: 0,
            checkpoints,
            history: vec![],
            attacks: vec![],
        })
    }

    /// Makes the given sites Byzantine (see [`Attack`]): model-poisoning attacks rewrite the
    /// site's reported update after every fit, a label flip relabels its training rows now.
    /// Attacks are not part of [`SimulationState`]: a restored study gets the same call again.
    /// Set once per study; each site at most once.
    pub fn with_attacks(mut self, attacks: Vec<(usize, Attack)>) -> Result<Self> {
        if !self.attacks.is_empty() {
            return Err(EngineError::InvalidConfig(
                "attacks are already set for this study".into(),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (k, attack) in &attacks {
            attack.validate()?;
            if *k >= self.sites.len() || !seen.insert(*k) {
                return Err(EngineError::InvalidConfig(format!(
                    "attack on site {k}: no such site, or attacked twice"
                )));
            }
        }
        for (k, attack) in &attacks {
            if attack.poisons_data() {
                let site = &mut self.sites[*k];
                site.data.train = attack.poison(&site.data.train)?;
            }
        }
        self.attacks = attacks;
        Ok(self)
    }

    /// The simulated attacks, by site index.
    pub fn attacks(&self) -> &[(usize, Attack)] {
        &self.attacks
    }

    pub fn config(&self) -> &SimulationConfig {
        &self.config
    }

    pub fn round(&self) -> u64 {
        self.round
    }

    pub fn global(&self) -> &ParameterSet {
        &self.global
    }

    pub fn history(&self) -> &[RoundRecord] {
        &self.history
    }

    pub fn checkpoints(&self) -> &Checkpoints {
        &self.checkpoints
    }

    pub fn site_names(&self) -> Vec<String> {
        self.sites.iter().map(|s| s.name().to_string()).collect()
    }

    /// Run rounds until the configured number is reached.
    pub fn run(&mut self) -> Result<()> {
        while self.round < self.config.rounds {
            self.run_round()?;
        }
        Ok(())
    }

    /// One round: fit, aggregate, validate, checkpoint.
    pub fn run_round(&mut self) -> Result<&RoundRecord> {
        let round = self.round + 1;
        let ins = self.server.configure_fit(round, &self.global)?;
        let seed = self.config.seed;
        let mut results: Vec<FitRes> = self
            .sites
            .par_iter_mut()
            .zip(self.clients.par_iter_mut())
            .enumerate()
            .map(|(k, (site, client))| {
                let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(seed, k as u64, round));
                site.noise = site
                    .train
                    .record_dp
                    .map(|_| simulated_noise(seed, k, round));
                client.fit(site, &ins, &mut rng)
            })
            .collect::<Result<_>>()?;
        for (k, attack) in &self.attacks {
            if let Some(res) = results.get_mut(*k) {
                attack.corrupt(res, &self.global, seed, *k, round)?;
            }
        }
        if let Some(next) = self
            .server
            .aggregate_fit(round, &self.global, &results, 0)?
        {
            self.global = next.params;
        }
        let global = &self.global;
        let model = &self.config.model;
        let val: Vec<(MetricSummary, ParameterSet, Option<ModelSpec>)> = self
            .sites
            .par_iter_mut()
            .zip(self.clients.par_iter_mut())
            .map(|(site, client)| {
                let loss = site.train.loss.clone();
                let val_data = site.data.val.clone();
                let train_data = site.data.train.clone();
                let net = client.evaluation_net(site, global)?;
                // keep the architecture only where it differs (APFL's per-site alpha)
                let spec = (net.spec() != model).then(|| net.spec().clone());
                let opts = EvalOptions {
                    reference: Some(&train_data),
                    ..EvalOptions::default()
                };
                let m = evaluate_with(net, &val_data, &loss, &opts)?;
                Ok((m, net.parameters()?, spec))
            })
            .collect::<Result<_>>()?;
        let n: Vec<f64> = self.sites.iter().map(|s| s.data.val.len() as f64).collect();
        let weighted_val_loss = val
            .iter()
            .zip(&n)
            .map(|((m, _, _), n)| m.loss * n)
            .sum::<f64>()
            / n.iter().sum::<f64>();
        self.checkpoints
            .offer_global(round, weighted_val_loss, &self.global);
        for (k, (m, params, spec)) in val.iter().enumerate() {
            self.checkpoints
                .offer_local(k, round, m.loss, params, spec.as_ref());
        }
        self.round = round;
        self.history.push(RoundRecord {
            round,
            train_loss: results.iter().map(|r| r.report.mean_loss).collect(),
            val: val.into_iter().map(|(m, _, _)| m).collect(),
            weighted_val_loss,
        });
        self.history.last().ok_or(EngineError::NoUpdates)
    }

    /// A standalone copy of site `k`'s model under checkpoint `kind`.
    pub fn checkpoint_net(&mut self, kind: CheckpointKind, k: usize) -> Result<Net> {
        let site = self
            .sites
            .get_mut(k)
            .ok_or_else(|| EngineError::InvalidConfig(format!("no site {k}")))?;
        let client = &mut self.clients[k];
        match kind {
            CheckpointKind::Latest => client.evaluation_net(site, &self.global)?.duplicate(),
            CheckpointKind::BestGlobal => {
                let ckpt = self
                    .checkpoints
                    .best_global
                    .as_ref()
                    .ok_or(EngineError::NoUpdates)?;
                let net = client.evaluation_net(site, &self.global)?.duplicate()?;
                net.load(&ckpt.params)?;
                Ok(net)
            }
            CheckpointKind::BestLocal => {
                let ckpt = self.checkpoints.best_local[k]
                    .as_ref()
                    .ok_or(EngineError::NoUpdates)?;
                Net::with_parameters(
                    ckpt.spec.as_ref().unwrap_or(&self.config.model),
                    &ckpt.params,
                )
            }
        }
    }

    /// Test metrics of every site under checkpoint `kind`, each on its own test set (binary
    /// threshold 0.5; survival metrics with the site's training data as reference).
    pub fn test(&mut self, kind: CheckpointKind) -> Result<Vec<MetricSummary>> {
        self.test_with_threshold(kind, None)
    }

    /// [`Simulation::test`] with, for binary and multi-label tasks, each site's decision
    /// threshold chosen on its own validation data by `rule` ([`choose_threshold_on`]; 0.5
    /// where the validation labels have one class only); the summaries report the threshold
    /// used. Multi-class and survival tasks have no threshold and ignore `rule`.
    /// [`MetricSummary::uniform_mean`] of the result is the uniform mean over sites.
    pub fn test_with_threshold(
        &mut self,
        kind: CheckpointKind,
        rule: Option<ThresholdRule>,
    ) -> Result<Vec<MetricSummary>> {
        (0..self.sites.len())
            .map(|k| {
                let net = self.checkpoint_net(kind, k)?;
                let site = &self.sites[k];
                let threshold = match rule {
                    Some(rule) => choose_threshold_on(&net, &site.data.val, rule)?.unwrap_or(0.5),
                    None => 0.5,
                };
                let opts = EvalOptions {
                    threshold,
                    reference: Some(&site.data.train),
                };
                evaluate_with(&net, &site.data.test, &site.train.loss, &opts)
            })
            .collect()
    }

    /// Serialisable image of the whole study.
    pub fn snapshot(&self) -> Result<SimulationState> {
        Ok(SimulationState {
            round: self.round,
            global: self.global.clone(),
            server: self.server.save_state()?,
            clients: self
                .clients
                .iter()
                .map(|c| c.save_state())
                .collect::<Result<_>>()?,
            sites: self
                .sites
                .iter()
                .map(Site::snapshot)
                .collect::<Result<_>>()?,
            checkpoints: self.checkpoints.clone(),
            history: self.history.clone(),
        })
    }

    /// Rebuild a study from its configuration, its sites' data and a snapshot.
    pub fn restore(
        config: SimulationConfig,
        data: Vec<SiteData>,
        state: SimulationState,
    ) -> Result<Self> {
        Self::restore_with_aggregator(config, data, Box::new(WeightedMean), state)
    }

    /// [`Simulation::restore`] for a study built with [`Simulation::with_aggregator`]: pass an
    /// aggregator configured as the original one.
    pub fn restore_with_aggregator(
        config: SimulationConfig,
        data: Vec<SiteData>,
        aggregator: Box<dyn Aggregator>,
        state: SimulationState,
    ) -> Result<Self> {
        let mut sim = Simulation::with_aggregator(config, data, aggregator)?;
        if state.sites.len() != sim.sites.len() || state.clients.len() != sim.clients.len() {
            return Err(EngineError::InvalidConfig(
                "snapshot was taken with a different number of sites".into(),
            ));
        }
        sim.global.check_compatible(&state.global)?;
        state.global.ensure_finite()?;
        sim.global = state.global;
        sim.round = state.round;
        sim.server.load_state(state.server)?;
        for ((site, client), (snap, cstate)) in sim
            .sites
            .iter_mut()
            .zip(sim.clients.iter_mut())
            .zip(state.sites.into_iter().zip(state.clients))
        {
            site.restore(snap)?;
            client.load_state(cstate)?;
        }
        sim.checkpoints = state.checkpoints;
        sim.history = state.history;
        Ok(sim)
    }
}
