//! FedMAP: federated maximum a posteriori estimation with a learnt prior (Zhang, Kreuter,
//! Esteve-Yagüe, Dittmer, ..., Schönlieb, Roberts 2024/2025, "FedMAP: Personalised federated
//! learning for real large-scale healthcare systems", arXiv:2405.19000).
//!
//! Prior over a site's parameters theta given the global mu and the prior's own parameters psi:
//!
//! ```text
//! R(theta; mu, psi) = sum_t f_psi,t(theta_t, mu_t) + (alpha/2)||theta - mu||^2
//!                     + eps (||theta||^2 + ||mu||^2)
//! ```
//!
//! with one input-convex network f_psi,t per shared tensor t (see `prior`, which also states
//! the size of psi as a function of the model). A round:
//!
//! * **Site k** receives mu (`FitIns::params`) and psi (`FitIns::extras`, tensors named
//!   `fedmap.psi.<tensor>.<layer>.{weight,bias}`), and minimises with its own optimiser, for
//!   its local budget,
//!   `(1/N_k) NLL(theta; Z_k) + R(theta; mu, psi)`,
//!   the mean NLL estimated on each mini-batch by the configured task loss and the gradient of R
//!   added to the task gradient (candle autograd through the networks, analytic for the
//!   quadratic terms). It returns theta_k and, in extras under `fedmap.log_weight`,
//!   `log omega_k = mean log-likelihood(theta_k; Z_k) - R(theta_k; mu, psi) / N_k`
//!   (mean over the whole training set; "log-likelihood" is minus the configured task loss,
//!   so class weights / `pos_weight` enter it as they enter training).
//! * **Server** validates every result, normalises the weights in log space,
//!   `w_k = exp(log omega_k - logsumexp_j log omega_j)`, sets
//!   `mu <- mu + Agg({theta_k - mu}, {w_k})`, which with the default weighted mean is
//!   `sum_k omega_k theta_k / sum_k omega_k`, then takes `server_steps` (S_agg) Adam steps
//!   (PyTorch defaults, lr `lr_psi`) on `J(psi) = sum_k w_k R(theta_k; mu_new, psi)` and after
//!   each step clamps the weights that must be non-negative. psi and its Adam moments are server
//!   state; the server sees only theta_k and log omega_k.
//!
//! Three tiers ([`FedMapTier`], the config's `tier` decides what a site evaluates):
//! T1 the site's own theta_k (kept as client state, never sent anywhere but as the update);
//! T2 a model fine-tuned from mu with the learnt prior ([`FedMapClient::fine_tune_from_prior`]);
//! T3 mu alone.
//!
//! Choices the paper leaves open, and what is implemented:
//! * Scaling: `(1/N_k) NLL + R` for training and `R / N_k` in the log-weight, as the method
//!   notes state them. (The training objective therefore weights the prior N_k times more than
//!   the per-example MAP objective `(NLL + R) / N_k` would.)
//! * Defaults from the authors' public code: alpha = 0.01 in the alpha/2 form, eps = 1e-4,
//!   lr_psi = 1e-3, S_agg = 2, hidden widths [64, 32], softplus.
//! * Tensors with more than `exact_cap` values use a bucketed summary input that keeps
//!   convexity in theta (see `prior`); the paper's form is used up to the cap.
//! * psi initialisation: PyTorch `nn.Linear` bounds, absolute values for constrained weights,
//!   drawn from a ChaCha stream seeded by `seed`, with a mirror-symmetric first layer in the
//!   exact form so that the initial f is an even convex function of theta - mu, smallest (zero
//!   gradient) at theta = mu. A plain random first layer gives f a random slope at mu of the
//!   size of the task gradient, which in tests biased every site model and cost about 0.12 of
//!   accuracy against FedAvg. No output bias (a constant changes no estimate and J would drive
//!   it to minus infinity).
//! * The psi objective has no normalising constant of the prior, so its gradient with respect
//!   to the output weights is always positive: with few steps per round (lr 1e-3, S_agg = 2) the
//!   learnt part reshapes slowly and fades towards the Gaussian part over very long studies.
//! * Local training warm-starts from the site's previous theta_k (from mu in its first round):
//!   the objective is the same argmin each round, only mu and psi move, so this continues the
//!   MAP estimate instead of restarting it. No early stopping inside a round; the simulation's
//!   best-local checkpoint (by validation loss) plays that role across rounds.
//! * T2 in the simulation fine-tunes, whenever the site evaluates, from the current mu with the
//!   last psi the site received (psi moves after aggregation; the site has not seen that yet),
//!   with a fresh optimiser of the site's kind for `fine_tune_steps` (default: the local
//!   budget), from a ChaCha stream seeded by (`seed`, round, site name), so repeated
//!   evaluations and resumed studies give the same model.
//! * Every model parameter is shared (`Selector::All`).
//! * Record-level DP is refused: the prior term is a function of the parameters only, but
//!   log omega_k is computed from the records and is not privatised. Client-level DP
//!   aggregators ([`AggregatorKind::client_dp`](super::AggregatorKind::client_dp)) are
//!   refused too: mu would be privatised, but psi, broadcast to every site, is fitted to the
//!   raw site models. Other aggregators (robust ones) receive the omega weights in place of
//!   sample counts.
mod prior;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::aggregate::{average, model_deltas, step, validate_results};
use super::methods::check_train;
use super::{
    Aggregated, Aggregator, ClientStrategy, FitIns, FitRes, MethodSpec, ServerStrategy, Site,
    Support,
};
use crate::data::Dataset;
use crate::error::{EngineError, Result};
use crate::model::Net;
use crate::params::ParameterSet;
use crate::train::{
    apply_gradient, batch_gradient, steps_in, Batcher, LossKind, Optimizer, OptimizerConfig,
    TrainConfig, TrainReport,
};
use prior::{normalised_weights, Prior, LOG_WEIGHT};

/// Which model a FedMAP site evaluates (and the simulation checkpoints and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum FedMapTier {
    /// T1: the site's own MAP estimate theta_k.
    #[default]
    Personalised,
    /// T2: fine-tuned from mu with the learnt prior.
    FineTuned,
    /// T3: the global mu.
    Global,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FedMapConfig {
    /// Weight of the Gaussian term `(alpha/2)||theta - mu||^2`.
    pub alpha: f32,
    /// Weight-decay term `eps (||theta||^2 + ||mu||^2)`.
    pub eps: f32,
    /// Adam learning rate of the server's steps on psi.
    pub lr_psi: f64,
    /// Server steps on psi per round (S_agg); 0 keeps the initial prior.
    pub server_steps: usize,
    /// Hidden widths of every tensor's input-convex network.
    pub hidden: Vec<usize>,
    /// Tensors with at most this many values get the exact `[theta; mu]` input.
    pub exact_cap: usize,
    /// Buckets of the summary input for larger tensors.
    pub buckets: usize,
    /// What a site evaluates.
    pub tier: FedMapTier,
    /// T2 fine-tuning steps; `None` = the site's local budget.
    pub fine_tune_steps: Option<usize>,
    /// Seed of psi's initialisation and of T2's batch order.
    pub seed: u64,
}

impl Default for FedMapConfig {
    fn default() -> Self {
        Self {
            alpha: 0.01,
            eps: 1e-4,
            lr_psi: 1e-3,
            server_steps: 2,
            hidden: vec![64, 32],
            exact_cap: 512,
            buckets: 16,
            tier: FedMapTier::Personalised,
            fine_tune_steps: None,
            seed: 0,
        }
    }
}

impl FedMapConfig {
    fn prior(&self) -> Prior {
        Prior {
            alpha: self.alpha,
            eps: self.eps,
            hidden: self.hidden.clone(),
            exact_cap: self.exact_cap,
            buckets: self.buckets,
        }
    }

    /// Number of values of psi for a model whose shared parameters are `shared`.
    pub fn prior_size(&self, shared: &ParameterSet) -> usize {
        self.prior().psi_size(shared)
    }
}

/// `grads += extra`, inserting the tensors `grads` lacks.
fn add_into(grads: &mut ParameterSet, extra: &ParameterSet) -> Result<()> {
    for (name, t) in extra.iter() {
        if grads.get(name).is_none() {
            grads.insert(name.clone(), t.shape.clone(), vec![0.0; t.values.len()])?;
        }
    }
    for (name, g) in grads.iter_mut() {
        if let Some(e) = extra.get(name) {
            if e.values.len() != g.values.len() {
                return Err(EngineError::LengthMismatch {
                    expected: g.values.len(),
                    found: e.values.len(),
                });
            }
            g.values
                .iter_mut()
                .zip(&e.values)
                .for_each(|(a, b)| *a += b);
        }
    }
    Ok(())
}

/// What one local optimisation needs besides the net and its optimiser.
struct MapObjective<'a> {
    prior: &'a Prior,
    psi: &'a ParameterSet,
    mu: &'a ParameterSet,
}

impl MapObjective<'_> {
    /// `steps` optimiser steps on mini-batch mean NLL + R; returns the mean task loss.
    fn train(
        &self,
        net: &Net,
        opt: &mut Optimizer,
        data: &Dataset,
        cfg: &TrainConfig,
        steps: usize,
        rng: &mut ChaCha8Rng,
    ) -> Result<TrainReport> {
        let loss = &cfg.loss;
        let mut batcher = Batcher::new(data, cfg.batch_size)?;
        let mut total = 0.0f64;
        for _ in 0..steps {
            let (x, y) = batcher.next_batch(rng)?;
            let mut g = batch_gradient(net, loss, &x, y, None, rng)?;
            let theta = net.parameters()?;
            let (_, prior_grad) = self.prior.value_and_grad(self.psi, &theta, self.mu)?;
            add_into(&mut g.grads, &prior_grad)?;
            apply_gradient(net, opt, &g.grads, &[])?;
            total += g.task_loss as f64;
        }
        Ok(TrainReport {
            steps,
            mean_loss: if steps > 0 { total / steps as f64 } else { 0.0 },
        })
    }

    /// `mean log-likelihood(theta; data) - R(theta; mu, psi) / N` at the net's parameters.
    fn log_weight(&self, net: &Net, data: &Dataset, loss: &LossKind) -> Result<f64> {
        let x = net.input(data.features(), data.len(), data.n_features())?;
        let nll = loss
            .compute(&net.forward(&x, None)?, data.labels())?
            .to_dtype(candle_core::DType::F64)?
            .to_scalar::<f64>()?;
        let r = self.prior.value(self.psi, &net.parameters()?, self.mu)?;
        let lw = -nll - r / data.len() as f64;
        if !lw.is_finite() {
            return Err(EngineError::NonFinite("FedMAP log-weight".into()));
        }
        Ok(lw)
    }
}

/// Per-site state: the site's MAP estimate and the prior it last received.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct ClientState {
    theta: Option<ParameterSet>,
    psi: Option<ParameterSet>,
    round: u64,
}

pub struct FedMapClient {
    config: FedMapConfig,
    prior: Prior,
    state: ClientState,
}

impl FedMapClient {
    pub fn new(config: FedMapConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self {
            prior: config.prior(),
            config,
            state: ClientState::default(),
        })
    }

    /// The site's personalised model theta_k (T1), once it has trained.
    pub fn personal_parameters(&self) -> Option<&ParameterSet> {
        self.state.theta.as_ref()
    }

    /// T2: load `mu` into the site's net and take `steps` steps of the site's optimiser kind
    /// (fresh moments; the site's own optimiser is left alone) on mean NLL + R(.; mu, psi).
    /// The result is left in `site.net`.
    pub fn fine_tune_from_prior(
        &self,
        site: &mut Site,
        mu: &ParameterSet,
        psi: &ParameterSet,
        steps: usize,
        rng: &mut ChaCha8Rng,
    ) -> Result<TrainReport> {
        check_train(&self.config, &site.train)?;
        self.prior.check(mu, psi)?;
        site.net.load(mu)?;
        let mut opt = Optimizer::new(site.train.optimizer.clone())?;
        let objective = MapObjective {
            prior: &self.prior,
            psi,
            mu,
        };
        objective.train(
            &site.net,
            &mut opt,
            &site.data.train,
            &site.train,
            steps,
            rng,
        )
    }

    fn fine_tune_rng(&self, site: &Site) -> ChaCha8Rng {
        // FNV-1a of the site name keeps sites on different streams
        let name = site.name().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
        });
        ChaCha8Rng::seed_from_u64(crate::seeds::stream_seed(
            self.config.seed ^ name,
            self.state.round,
            0xF1A7,
        ))
    }
}

impl ClientStrategy for FedMapClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        if site.data.train.is_empty() {
            return Err(EngineError::ZeroSamples(site.name().to_string()));
        }
        let psi = &ins.extras;
        self.prior.check(&ins.params, psi)?;
        site.begin_round()?;
        site.net.load(&ins.params)?;
        if let Some(theta) = &self.state.theta {
            site.net.load(theta)?;
        }
        let objective = MapObjective {
            prior: &self.prior,
            psi,
            mu: &ins.params,
        };
        let cfg = &site.train;
        cfg.validate()?;
        let steps = steps_in(cfg.budget, site.data.train.len(), cfg.batch_size);
        let report = objective.train(
            &site.net,
            &mut site.optimizer,
            &site.data.train,
            cfg,
            steps,
            rng,
        )?;
        let log_weight = objective.log_weight(&site.net, &site.data.train, &cfg.loss)?;
        let theta = site.net.parameters()?;
        let mut extras = ParameterSet::new();
        extras.insert(LOG_WEIGHT, vec![1], vec![log_weight as f32])?;
        self.state = ClientState {
            theta: Some(theta.clone()),
            psi: Some(psi.clone()),
            round: ins.round,
        };
        Ok(FitRes {
            site: site.name().to_string(),
            num_examples: site.data.train.len(),
            params: theta,
            extras,
            report,
        })
    }

    fn evaluation_net<'a>(
        &'a mut self,
        site: &'a mut Site,
        global: &ParameterSet,
    ) -> Result<&'a Net> {
        match (self.config.tier, &self.state.theta, &self.state.psi) {
            (FedMapTier::Personalised, Some(theta), _) => site.net.load(theta)?,
            (FedMapTier::FineTuned, _, Some(psi)) => {
                let steps = match self.config.fine_tune_steps {
                    Some(s) => s,
                    None => steps_in(
                        site.train.budget,
                        site.data.train.len(),
                        site.train.batch_size,
                    ),
                };
                let mut rng = self.fine_tune_rng(site);
                self.fine_tune_from_prior(site, global, psi, steps, &mut rng)?;
            }
            // T3, and every tier before the site's first round
            _ => site.net.load(global)?,
        }
        Ok(&site.net)
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(&self.state)?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        let state: ClientState = serde_json::from_value(state)?;
        if let Some(t) = &state.theta {
            t.ensure_finite()?;
        }
        if let Some(p) = &state.psi {
            p.ensure_finite()?;
        }
        self.state = state;
        Ok(())
    }
}

#[derive(Serialize, Deserialize)]
struct ServerState {
    psi: Option<ParameterSet>,
    optimizer: Optimizer,
}

pub struct FedMapServer {
    config: FedMapConfig,
    prior: Prior,
    aggregator: Box<dyn Aggregator>,
    /// psi; the seeded initial value until the first round has been aggregated.
    psi: Option<ParameterSet>,
    /// Adam over psi.
    optimizer: Optimizer,
}

impl FedMapServer {
    pub fn new(config: FedMapConfig, aggregator: Box<dyn Aggregator>) -> Result<Self> {
        config.validate()?;
        if let (true, Support::No(why)) = (aggregator.kind().client_dp(), config.client_dp()) {
            return Err(EngineError::InvalidConfig(format!(
                "FedMAP cannot run with the `{}` aggregator: {why}",
                aggregator.name()
            )));
        }
        Ok(Self {
            prior: config.prior(),
            optimizer: Optimizer::new(OptimizerConfig::adam(config.lr_psi))?,
            config,
            aggregator,
            psi: None,
        })
    }

    /// Current psi for a global model shaped like `global`.
    pub fn prior_parameters(&self, global: &ParameterSet) -> Result<ParameterSet> {
        match &self.psi {
            Some(p) => Ok(p.clone()),
            None => self.prior.init(global, self.config.seed),
        }
    }
}

impl ServerStrategy for FedMapServer {
    fn name(&self) -> &'static str {
        "FedMAP"
    }

    fn configure_fit(&self, round: u64, global: &ParameterSet) -> Result<FitIns> {
        Ok(FitIns {
            round,
            params: global.clone(),
            extras: self.prior_parameters(global)?,
        })
    }

    fn aggregate(
        &mut self,
        _round: u64,
        global: &ParameterSet,
        results: &[FitRes],
    ) -> Result<Aggregated> {
        let mut template = ParameterSet::new();
        template.insert(LOG_WEIGHT, vec![1], vec![0.0])?;
        validate_results(global, results, Some(&template))?;
        let log_weights = results
            .iter()
            .map(|r| {
                r.extras
                    .get(LOG_WEIGHT)
                    .and_then(|t| t.values.first())
                    .map(|v| *v as f64)
                    .ok_or_else(|| EngineError::MissingParameter(LOG_WEIGHT.into()))
            })
            .collect::<Result<Vec<_>>>()?;
        let weights = normalised_weights(&log_weights)?;

        // mu = mu_old + Agg({theta_k - mu_old}, {w_k})
        let averaged = average(
            self.aggregator.as_mut(),
            global,
            &model_deltas(global, results),
            &weights,
        )?;
        let mu = step(global, &averaged.update, |m, u| m + u)?;

        // S_agg projected Adam steps on J(psi) = sum_k w_k R(theta_k; mu, psi)
        let mut psi = self.prior_parameters(global)?;
        self.prior.check(global, &psi)?;
        let mut optimizer = self.optimizer.clone();
        let thetas: Vec<&ParameterSet> = results.iter().map(|r| &r.params).collect();
        for _ in 0..self.config.server_steps {
            let (_, grads) = self.prior.server_objective(&psi, &thetas, &weights, &mu)?;
            optimizer.begin_step();
            for (name, t) in psi.iter_mut() {
                let mut g = grads
                    .get(name)
                    .map(|g| g.values.clone())
                    .ok_or_else(|| EngineError::MissingParameter(name.clone()))?;
                optimizer.update(name, &mut t.values, &mut g)?;
            }
            self.prior.clamp(global, &mut psi);
            psi.ensure_finite()?;
        }
        self.psi = Some(psi);
        self.optimizer = optimizer;
        Ok(Aggregated::new(mu, &averaged))
    }

    fn save_state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::to_value(ServerState {
            psi: self.psi.clone(),
            optimizer: self.optimizer.clone(),
        })?)
    }

    fn load_state(&mut self, state: serde_json::Value) -> Result<()> {
        let state: ServerState = serde_json::from_value(state)?;
        if let Some(p) = &state.psi {
            p.ensure_finite()?;
        }
        self.psi = state.psi;
        self.optimizer = state.optimizer;
        Ok(())
    }
}

impl MethodSpec for FedMapConfig {
    fn name(&self) -> &'static str {
        "FedMAP"
    }

    fn validate(&self) -> Result<()> {
        let bad = |msg: String| Err(EngineError::InvalidConfig(format!("FedMAP: {msg}")));
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return bad(format!("alpha must be finite and >= 0, got {}", self.alpha));
        }
        if !(self.eps.is_finite() && self.eps >= 0.0) {
            return bad(format!("eps must be finite and >= 0, got {}", self.eps));
        }
        if !(self.lr_psi.is_finite() && self.lr_psi > 0.0) {
            return bad(format!(
                "lr_psi must be finite and > 0, got {}",
                self.lr_psi
            ));
        }
        if self.hidden.is_empty() || self.hidden.contains(&0) {
            return bad(format!(
                "the prior network needs at least one hidden layer and positive widths, got {:?}",
                self.hidden
            ));
        }
        if self.buckets == 0 {
            return bad("buckets must be >= 1".into());
        }
        if self.fine_tune_steps == Some(0) {
            return bad("fine_tune_steps must be >= 1 (or None for the local budget)".into());
        }
        Ok(())
    }

    fn personalised(&self) -> bool {
        self.tier != FedMapTier::Global
    }

    fn server(
        &self,
        _n_sites: usize,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Box<dyn ServerStrategy>> {
        Ok(Box::new(FedMapServer::new(self.clone(), aggregator)?))
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedMapClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No(
            "the site weight log omega_k is computed from the records (mean log-likelihood) \
             and is not privatised",
        )
    }

    fn client_dp(&self) -> Support {
        Support::No(
            "the site weights come from the records, and the prior psi sent to every site is \
             fitted to the raw site models",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::SiteData;
    use crate::dp::DpFedAvgConfig;
    use crate::dp::NoiseRng;
    use crate::model::ModelSpec;
    use crate::strategy::{DpFedAvgAggregator, StrategyConfig, WeightedMean};
    use crate::train::{Budget, RecordDp, TrainConfig};

    fn one(v: Vec<f32>) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![v.len()], v).unwrap();
        p
    }

    fn res(site: &str, theta: Vec<f32>, log_weight: f32) -> FitRes {
        let mut extras = ParameterSet::new();
        extras
            .insert(LOG_WEIGHT, vec![1], vec![log_weight])
            .unwrap();
        FitRes {
            site: site.into(),
            num_examples: 10,
            params: one(theta),
            extras,
            report: TrainReport::default(),
        }
    }

    fn small() -> FedMapConfig {
        FedMapConfig {
            hidden: vec![4, 3],
            ..FedMapConfig::default()
        }
    }

    #[test]
    fn global_model_is_the_omega_weighted_mean_by_hand() {
        // log omega = (-50, -50 + ln 3): weights (1/4, 3/4) whatever the shared offset
        // mu = 1/4 [1, 2] + 3/4 [5, -2] = [0.25 + 3.75, 0.5 - 1.5] = [4, -1]
        // (the sample counts are equal, so FedAvg would give [3, 0])
        let mut s = FedMapServer::new(small(), Box::new(WeightedMean)).unwrap();
        let global = one(vec![0.0, 0.0]);
        let mu = s
            .aggregate_fit(
                1,
                &global,
                &[
                    res("a", vec![1.0, 2.0], -50.0),
                    res("b", vec![5.0, -2.0], -50.0 + 3f32.ln()),
                ],
                0,
            )
            .unwrap()
            .unwrap()
            .params;
        let mu = mu.to_flat();
        assert!(
            (mu[0] - 4.0).abs() < 1e-4 && (mu[1] + 1.0).abs() < 1e-4,
            "{mu:?}"
        );
        // tiny log-likelihoods stay usable
        let mu = s
            .aggregate_fit(
                2,
                &global,
                &[
                    res("a", vec![1.0, 2.0], -1e4),
                    res("b", vec![3.0, 2.0], -1e4),
                ],
                0,
            )
            .unwrap()
            .unwrap()
            .params;
        assert!((mu.to_flat()[0] - 2.0).abs() < 1e-5);
    }

    #[test]
    fn bad_results_are_rejected_before_touching_state() {
        let mut s = FedMapServer::new(small(), Box::new(WeightedMean)).unwrap();
        let global = one(vec![0.0, 0.0]);
        let before = s.save_state().unwrap();
        let mut missing = res("a", vec![1.0, 2.0], -1.0);
        missing.extras = ParameterSet::new();
        assert!(s.aggregate_fit(1, &global, &[missing], 0).is_err());
        let nan = res("a", vec![1.0, 2.0], f32::NAN);
        assert!(s.aggregate_fit(1, &global, &[nan], 0).is_err());
        let inf = res("a", vec![1.0, f32::INFINITY], -1.0);
        assert!(s.aggregate_fit(1, &global, &[inf], 0).is_err());
        assert_eq!(s.save_state().unwrap(), before);
        assert_eq!(s.aggregate_fit(1, &global, &[], 2).unwrap(), None);
    }

    #[test]
    fn psi_steps_descend_and_keep_constrained_weights_non_negative() {
        let global = one(vec![0.0, 0.0]);
        let results = [
            res("a", vec![1.0, 2.0], -1.0),
            res("b", vec![-2.0, 0.5], -2.0),
        ];
        let thetas: Vec<&ParameterSet> = results.iter().map(|r| &r.params).collect();
        let weights = normalised_weights(&[-1.0, -2.0]).unwrap();
        // small steps: J(psi) falls
        let mut s = FedMapServer::new(small(), Box::new(WeightedMean)).unwrap();
        let psi0 = s.prior_parameters(&global).unwrap();
        let mu = s
            .aggregate_fit(1, &global, &results, 0)
            .unwrap()
            .unwrap()
            .params;
        let psi1 = s.prior_parameters(&global).unwrap();
        assert_ne!(psi0, psi1);
        let j = |psi: &ParameterSet| {
            s.prior
                .server_objective(psi, &thetas, &weights, &mu)
                .unwrap()
                .0
        };
        assert!(j(&psi1) < j(&psi0), "{} !< {}", j(&psi1), j(&psi0));
        // large steps drive weights below zero, where the projection must catch them
        let cfg = FedMapConfig {
            lr_psi: 0.5,
            server_steps: 5,
            ..small()
        };
        let mut s = FedMapServer::new(cfg, Box::new(WeightedMean)).unwrap();
        s.aggregate_fit(1, &global, &results, 0).unwrap();
        let psi = s.prior_parameters(&global).unwrap();
        s.prior.check(&global, &psi).unwrap();
        let clamped = psi
            .iter()
            .filter(|(n, _)| !n.ends_with(".0.weight") && !n.ends_with(".bias"))
            .flat_map(|(_, t)| t.values.iter())
            .filter(|v| **v == 0.0)
            .count();
        assert!(clamped > 0, "no constrained weight reached the bound");
        // the first layer of the exact form stays free
        assert!(psi
            .get("fedmap.psi.w.0.weight")
            .unwrap()
            .values
            .iter()
            .any(|v| *v < 0.0));
    }

    #[test]
    fn config_validation_and_defaults() {
        assert!(FedMapConfig::default().validate().is_ok());
        let parsed: FedMapConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(parsed, FedMapConfig::default());
        let bad = [
            FedMapConfig {
                alpha: -1.0,
                ..FedMapConfig::default()
            },
            FedMapConfig {
                eps: f32::NAN,
                ..FedMapConfig::default()
            },
            FedMapConfig {
                lr_psi: 0.0,
                ..FedMapConfig::default()
            },
            FedMapConfig {
                hidden: vec![],
                ..FedMapConfig::default()
            },
            FedMapConfig {
                hidden: vec![8, 0],
                ..FedMapConfig::default()
            },
            FedMapConfig {
                buckets: 0,
                ..FedMapConfig::default()
            },
            FedMapConfig {
                fine_tune_steps: Some(0),
                ..FedMapConfig::default()
            },
        ];
        for cfg in bad {
            assert!(matches!(
                FedMapClient::new(cfg.clone()),
                Err(EngineError::InvalidConfig(_))
            ));
            assert!(FedMapServer::new(cfg, Box::new(WeightedMean)).is_err());
        }
        let dp = DpFedAvgAggregator::new(
            DpFedAvgConfig::new(1.0, 1.0),
            NoiseRng::from_seed_for_reproducible_runs([1; 32]),
        );
        assert!(matches!(
            StrategyConfig::FedMap(FedMapConfig::default()).server(3, Box::new(dp)),
            Err(EngineError::InvalidConfig(_))
        ));
        let spec = StrategyConfig::FedMap(FedMapConfig::default());
        assert!(spec.personalised());
        let global_tier = StrategyConfig::FedMap(FedMapConfig {
            tier: FedMapTier::Global,
            ..FedMapConfig::default()
        });
        assert!(!global_tier.personalised());
        // psi size of the 13-feature logistic model: tensors of 13 and 1 values,
        // (64 * 26 + 2176) + (64 * 2 + 2176) = 3840 + 2304 = 6144
        let lr = Net::new(&ModelSpec::logistic(13, 1), 0)
            .unwrap()
            .parameters()
            .unwrap();
        assert_eq!(FedMapConfig::default().prior_size(&lr), 6144);
    }

    fn site(record_dp: Option<RecordDp>) -> Site {
        // 1 feature, 4 rows: x = [1, -1, 2, 0.5], y = [1, 0, 1, 0]
        let train = Dataset::new(1, vec![1.0, -1.0, 2.0, 0.5], vec![1, 0, 1, 0]).unwrap();
        let data = SiteData {
            name: "s".into(),
            train: train.clone(),
            val: train.clone(),
            test: train,
        };
        let cfg = TrainConfig {
            optimizer: OptimizerConfig::sgd(0.1),
            budget: Budget::Steps(1),
            batch_size: 4,
            loss: LossKind::bce(),
            record_dp,
        };
        Site::new(data, &ModelSpec::logistic(1, 1), cfg, 3).unwrap()
    }

    #[test]
    fn one_local_step_and_log_weight_follow_the_objective() {
        let mut site = site(None);
        let cfg = FedMapConfig {
            hidden: vec![3],
            ..FedMapConfig::default()
        };
        let mu = site.net.parameters().unwrap();
        let psi = cfg.prior().init(&mu, 9).unwrap();
        let mut client = FedMapClient::new(cfg.clone()).unwrap();
        let ins = FitIns {
            round: 1,
            params: mu.clone(),
            extras: psi.clone(),
        };
        let out = client
            .fit(&mut site, &ins, &mut ChaCha8Rng::seed_from_u64(0))
            .unwrap();
        // by hand: one full-batch SGD step theta1 = theta0 - 0.1 (grad mean BCE + grad R),
        // logistic BCE gradient mean_i (sigmoid(w x_i + b) - y_i) (x_i, 1)
        let w = mu.get("out.weight").unwrap().values[0];
        let b = mu.get("out.bias").unwrap().values[0];
        let (xs, ys) = ([1.0f32, -1.0, 2.0, 0.5], [1.0f32, 0.0, 1.0, 0.0]);
        let (mut gw, mut gb) = (0.0, 0.0);
        for (x, y) in xs.iter().zip(ys) {
            let e = 1.0 / (1.0 + (-(w * x + b)).exp()) - y;
            gw += e * x / 4.0;
            gb += e / 4.0;
        }
        let (_, gr) = cfg.prior().value_and_grad(&psi, &mu, &mu).unwrap();
        let w1 = w - 0.1 * (gw + gr.get("out.weight").unwrap().values[0]);
        let b1 = b - 0.1 * (gb + gr.get("out.bias").unwrap().values[0]);
        let theta = &out.params;
        assert!((theta.get("out.weight").unwrap().values[0] - w1).abs() < 1e-6);
        assert!((theta.get("out.bias").unwrap().values[0] - b1).abs() < 1e-6);
        // log omega = -mean BCE(theta1) - R(theta1; mu, psi) / 4
        let mut nll = 0.0f64;
        for (x, y) in xs.iter().zip(ys) {
            let p = 1.0 / (1.0 + (-(w1 * x + b1) as f64).exp());
            nll -= (y as f64 * p.ln() + (1.0 - y as f64) * (1.0 - p).ln()) / 4.0;
        }
        let r = cfg.prior().value(&psi, theta, &mu).unwrap();
        let lw = out.extras.get(LOG_WEIGHT).unwrap().values[0] as f64;
        assert!(
            (lw - (-nll - r / 4.0)).abs() < 1e-5,
            "{lw} vs {}",
            -nll - r / 4.0
        );
        // T1 evaluates the site's own theta, T3 the global model
        let net = client.evaluation_net(&mut site, &mu).unwrap();
        assert_eq!(net.parameters().unwrap(), *theta);
        // a prior that does not fit the model is refused
        let bad = FitIns {
            extras: ParameterSet::new(),
            ..ins
        };
        assert!(client
            .fit(&mut site, &bad, &mut ChaCha8Rng::seed_from_u64(0))
            .is_err());
    }

    #[test]
    fn tiers_and_state_round_trip() {
        let mut s = site(None);
        let mu = s.net.parameters().unwrap();
        let cfg = FedMapConfig {
            hidden: vec![3],
            tier: FedMapTier::FineTuned,
            fine_tune_steps: Some(3),
            ..FedMapConfig::default()
        };
        let psi = cfg.prior().init(&mu, 2).unwrap();
        let mut client = FedMapClient::new(cfg.clone()).unwrap();
        // before any round every tier evaluates mu
        assert_eq!(
            client
                .evaluation_net(&mut s, &mu)
                .unwrap()
                .parameters()
                .unwrap(),
            mu
        );
        let ins = FitIns {
            round: 1,
            params: mu.clone(),
            extras: psi,
        };
        let out = client
            .fit(&mut s, &ins, &mut ChaCha8Rng::seed_from_u64(4))
            .unwrap();
        let mut global = mu.clone();
        global.add_scaled(&mu, 0.5).unwrap();
        // T2 fine-tunes from the given mu: neither mu nor theta_k, and the same every time
        let t2 = client
            .evaluation_net(&mut s, &global)
            .unwrap()
            .parameters()
            .unwrap();
        assert_ne!(t2, global);
        assert_ne!(t2, out.params);
        let again = client
            .evaluation_net(&mut s, &global)
            .unwrap()
            .parameters()
            .unwrap();
        assert_eq!(t2, again);
        // state round-trips through JSON and gives the same T2 model
        let json = serde_json::to_string(&client.save_state().unwrap()).unwrap();
        let mut restored = FedMapClient::new(cfg).unwrap();
        restored
            .load_state(serde_json::from_str(&json).unwrap())
            .unwrap();
        assert_eq!(restored.save_state().unwrap(), client.save_state().unwrap());
        assert_eq!(restored.personal_parameters(), Some(&out.params));
        let t2r = restored
            .evaluation_net(&mut s, &global)
            .unwrap()
            .parameters()
            .unwrap();
        assert_eq!(t2, t2r);

        // server state round-trips: the next aggregation is identical
        let global = one(vec![0.0, 0.0]);
        let results = [
            res("a", vec![1.0, 2.0], -1.0),
            res("b", vec![-2.0, 0.5], -2.0),
        ];
        let mut a = FedMapServer::new(small(), Box::new(WeightedMean)).unwrap();
        a.aggregate_fit(1, &global, &results, 0).unwrap();
        let mut b = FedMapServer::new(small(), Box::new(WeightedMean)).unwrap();
        b.load_state(
            serde_json::from_str(&serde_json::to_string(&a.save_state().unwrap()).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            a.aggregate_fit(2, &global, &results, 0).unwrap(),
            b.aggregate_fit(2, &global, &results, 0).unwrap()
        );
        assert_eq!(a.save_state().unwrap(), b.save_state().unwrap());
        assert_eq!(
            a.configure_fit(3, &global).unwrap(),
            b.configure_fit(3, &global).unwrap()
        );
    }

    #[test]
    fn record_level_dp_is_refused() {
        let dp = RecordDp {
            clip_norm: 1.0,
            noise_multiplier: 1.0,
            sampling_rate: 0.5,
        };
        let mut s = site(Some(dp));
        let mu = s.net.parameters().unwrap();
        let cfg = FedMapConfig {
            hidden: vec![3],
            ..FedMapConfig::default()
        };
        let ins = FitIns {
            round: 1,
            params: mu.clone(),
            extras: cfg.prior().init(&mu, 0).unwrap(),
        };
        let mut client = FedMapClient::new(cfg).unwrap();
        let err = client
            .fit(&mut s, &ins, &mut ChaCha8Rng::seed_from_u64(0))
            .unwrap_err();
        assert!(matches!(err, EngineError::InvalidConfig(ref m) if m.contains("record-level DP")));
        assert_eq!(s.net.parameters().unwrap(), mu);
    }
}
