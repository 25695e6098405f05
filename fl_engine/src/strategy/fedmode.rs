//! FedMode: aggregation along mode-connecting curves (AISTATS 2025, "mode-connectivity
//! aggregation"; the update rules below are the ones this engine implements, with every
//! choice the paper leaves open stated).
//!
//! # Client
//! From the global `theta_g`, site k
//! 1. trains `theta_k` for its local budget exactly as FedAvg does (site optimiser);
//! 2. trains the control point `phi_k` of the quadratic Bezier curve
//!    `C_k(t) = (1-t)^2 theta_g + 2t(1-t) phi_k + t^2 theta_k`, starting from
//!    `phi_k = (theta_g + theta_k) / 2` (the straight line), for `curve_steps` mini-batch steps
//!    (default: as many steps as step 1 took). Each step draws `t` uniformly from the grid
//!    `{0, 1/9, ..., 1}`, loads `C_k(t)` into the site's network, computes the batch gradient
//!    `grad L(C_k(t))` and applies `dL/dphi = 2t(1-t) grad L(C_k(t))` to `phi_k` with a fresh
//!    optimiser of the site's configured kind (the control point is new every round, so are
//!    its moments);
//! 3. reports `L_ki`, the mean task loss on its *whole training set* (evaluation mode) at the
//!    ten grid points `C_k(t_i)`, `t_i = i/9` (the whole set rather than a few batches, so the
//!    weights do not depend on the batch draw; the datasets this engine targets are small).
//!
//! It uploads `theta_k` as its parameters and, in `extras`, `phi_k` (each tensor under
//! `fedmode/phi/<name>`) and the ten losses (`fedmode/losses`); `/` never occurs in model
//! parameter names, so they cannot clash. The upload is about twice FedAvg's.
//!
//! # Server
//! With `w_ki = 1 / (L_ki + 1e-6)`, `W = sum_ki w_ki` and the weighted curve mean
//! `Mbar = sum_ki w_ki C_k(t_i) / W`, the server minimises
//! `J(Theta) = sum_ki w_ki ||Theta - C_k(t_i)||^2 - s lambda ||Theta - theta_g||^2`, `s = +-1`.
//!
//! `grad J = 2 W (Theta - Mbar) - 2 s lambda (Theta - theta_g)`; setting it to zero gives
//! `(W - s lambda) Theta = W Mbar - s lambda theta_g`, and the Hessian is `2 (W - s lambda) I`:
//! * `s = +1` ([`FedModeSign::Extrapolate`], the sign of the paper's prose and of the closed
//!   form it states): `Theta = (W Mbar - lambda theta_g)/(W - lambda)
//!   = Mbar + lambda/(W - lambda) (Mbar - theta_g)`, which moves *past* `Mbar`, away from
//!   `theta_g` (a server-side extrapolation, like FedExP's). It is a minimum only for
//!   `lambda < W`; otherwise `J` has no minimum and the round is refused with
//!   [`EngineError::InvalidConfig`] (the global model is kept).
//! * `s = -1` ([`FedModeSign::Shrink`], the sign of the paper's appendix, i.e. `+ lambda` in
//!   `J`): `Theta = (W Mbar + lambda theta_g)/(W + lambda)`, which pulls `Mbar` back towards
//!   `theta_g` (a server-side proximal damping); always a minimum.
//!
//! Both readings are meaningful (extrapolation vs damping), so the sign is a configuration
//! choice; the default is `Extrapolate` because it matches the paper's text and closed form.
//! With `lambda = 0` (default) both give `Theta = Mbar`.
//!
//! `Mbar` is never materialised point by point: since the Bernstein weights sum to one,
//! `sum_i w_ki C_k(t_i) = a_k theta_g + b_k phi_k + c_k theta_k` with
//! `a_k = sum_i w_ki (1-t_i)^2`, `b_k = sum_i w_ki 2t_i(1-t_i)`, `c_k = sum_i w_ki t_i^2` and
//! `W_k = a_k + b_k + c_k = sum_i w_ki`. So `Mbar - theta_g` is the `W_k`-weighted mean of the
//! per-site vectors `m_k - theta_g = (b_k (phi_k - theta_g) + c_k (theta_k - theta_g)) / W_k`,
//! which is what goes through the study's [`Aggregator`] (robust or DP aggregation then
//! applies to it), and `Theta = theta_g + W / (W - s lambda) (Mbar - theta_g)`.
//! `W` itself comes from the raw losses: a DP aggregator does not privatise it.
//!
//! Record-level DP is refused: the ten losses are functions of every training record and are
//! sent in clear, and the curve phase's batch steps would need their own accounting.
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::aggregate::{average, step, validate_results};
use super::fedavg::local_fit;
use super::methods::check_train;
use super::qfedavg::dataset_loss;
use super::{
    Aggregated, Aggregator, ClientStrategy, FitIns, FitRes, MethodSpec, ServerStrategy, Site,
    Support,
};
use crate::error::{EngineError, Result};
use crate::params::{ParameterSet, Selector};
use crate::train::{apply_gradient, batch_gradient, Batcher, Optimizer};

/// Number of grid points on each curve.
pub const GRID: usize = 10;
/// Extras name of the ten losses.
pub const LOSSES_KEY: &str = "fedmode/losses";
/// Extras prefix of the control point's tensors.
pub const PHI_PREFIX: &str = "fedmode/phi/";
/// Added to each loss before inverting it.
const LOSS_OFFSET: f64 = 1e-6;

/// `t_i = i / 9`.
fn grid_t(i: usize) -> f64 {
    i as f64 / (GRID - 1) as f64
}

/// Which sign the server's `lambda ||Theta - theta_g||^2` term carries (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum FedModeSign {
    /// `- lambda` in J: `Theta = Mbar + lambda/(W - lambda) (Mbar - theta_g)`, needs `lambda < W`.
    #[default]
    Extrapolate,
    /// `+ lambda` in J: `Theta = (W Mbar + lambda theta_g)/(W + lambda)`.
    Shrink,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct FedModeConfig {
    /// `lambda >= 0` of the server objective (0 = loss-weighted curve mean).
    pub lambda: f64,
    pub sign: FedModeSign,
    /// Mini-batch steps that train the control point; `None` = the round's local steps.
    pub curve_steps: Option<usize>,
}

impl Default for FedModeConfig {
    fn default() -> Self {
        Self {
            lambda: 0.0,
            sign: FedModeSign::Extrapolate,
            curve_steps: None,
        }
    }
}

impl FedModeConfig {
    /// `Theta - theta_g` as a multiple of `Mbar - theta_g`: `W / (W - s lambda)`.
    pub fn step_factor(&self, total_weight: f64) -> Result<f64> {
        match self.sign {
            FedModeSign::Extrapolate => {
                if self.lambda >= total_weight {
                    return Err(EngineError::InvalidConfig(format!(
                        "FedMode lambda = {} is not below the total curve weight W = {}: the \
                         server objective has no minimum (lower lambda or use the Shrink sign)",
                        self.lambda, total_weight
                    )));
                }
                Ok(total_weight / (total_weight - self.lambda))
            }
            FedModeSign::Shrink => Ok(total_weight / (total_weight + self.lambda)),
        }
    }
}

/// `(a_k, b_k, c_k)` for one site's ten losses.
pub fn curve_coefficients(losses: &[f64]) -> (f64, f64, f64) {
    let mut abc = (0.0, 0.0, 0.0);
    for (i, l) in losses.iter().enumerate() {
        let w = 1.0 / (l + LOSS_OFFSET);
        let t = grid_t(i);
        abc.0 += w * (1.0 - t) * (1.0 - t);
        abc.1 += w * 2.0 * t * (1.0 - t);
        abc.2 += w * t * t;
    }
    abc
}

/// `C(t) = (1-t)^2 theta_g + 2t(1-t) phi + t^2 theta_k`.
pub fn curve_point(
    theta_g: &ParameterSet,
    phi: &ParameterSet,
    theta_k: &ParameterSet,
    t: f64,
) -> Result<ParameterSet> {
    let mut c = theta_g.clone();
    c.scale(((1.0 - t) * (1.0 - t)) as f32);
    c.add_scaled(phi, (2.0 * t * (1.0 - t)) as f32)?;
    c.add_scaled(theta_k, (t * t) as f32)?;
    Ok(c)
}

fn extras_template(global: &ParameterSet) -> Result<ParameterSet> {
    let mut t = ParameterSet::new();
    for (name, v) in global.iter() {
        t.insert(
            format!("{PHI_PREFIX}{name}"),
            v.shape.clone(),
            v.values.clone(),
        )?;
    }
    t.insert(LOSSES_KEY, vec![GRID], vec![0.0; GRID])?;
    Ok(t)
}

/// The control point under its own names, from a site's extras.
fn phi_of(global: &ParameterSet, extras: &ParameterSet) -> Result<ParameterSet> {
    let mut phi = ParameterSet::new();
    for (name, v) in global.iter() {
        let key = format!("{PHI_PREFIX}{name}");
        let t = extras
            .get(&key)
            .ok_or_else(|| EngineError::MissingParameter(key.clone()))?;
        phi.insert(name.clone(), v.shape.clone(), t.values.clone())?;
    }
    Ok(phi)
}

pub struct FedModeServer {
    config: FedModeConfig,
    aggregator: Box<dyn Aggregator>,
}

impl FedModeServer {
    pub fn new(config: FedModeConfig, aggregator: Box<dyn Aggregator>) -> Result<Self> {
        config.validate()?;
        Ok(Self { config, aggregator })
    }
}

impl ServerStrategy for FedModeServer {
    fn name(&self) -> &'static str {
        "FedMode"
    }

    fn aggregate(
        &mut self,
        _round: u64,
        global: &ParameterSet,
        results: &[FitRes],
    ) -> Result<Aggregated> {
        validate_results(global, results, Some(&extras_template(global)?))?;
        let base = global.to_flat();
        let mut updates = Vec::with_capacity(results.len());
        let mut weights = Vec::with_capacity(results.len());
        for r in results {
            let losses: Vec<f64> = r
                .extras
                .get(LOSSES_KEY)
                .map(|t| t.values.iter().map(|v| *v as f64).collect())
                .unwrap_or_default();
            if losses.len() != GRID || losses.iter().any(|l| *l < 0.0) {
                return Err(EngineError::InvalidConfig(
                    "FedMode needs ten losses >= 0 per site".into(),
                )
                .for_site(&r.site));
            }
            let (_, b, c) = curve_coefficients(&losses);
            let w_k: f64 = losses.iter().map(|l| 1.0 / (l + LOSS_OFFSET)).sum();
            let phi = phi_of(global, &r.extras).map_err(|e| e.for_site(&r.site))?;
            let u: Vec<f32> = phi
                .to_flat()
                .iter()
                .zip(r.params.to_flat())
                .zip(&base)
                .map(|((p, th), g)| {
                    let (p, th, g) = (*p as f64, th as f64, *g as f64);
                    ((b * (p - g) + c * (th - g)) / w_k) as f32
                })
                .collect();
            updates.push(u);
            weights.push(w_k);
        }
        let total: f64 = weights.iter().sum();
        let factor = self.config.step_factor(total)?;
        let averaged = average(self.aggregator.as_mut(), global, &updates, &weights)?;
        let next = step(global, &averaged.update, |g, d| {
            (g as f64 + factor * d as f64) as f32
        })?;
        Ok(Aggregated::new(next, &averaged))
    }
}

/// Stateless client: `phi_k` is new every round.
pub struct FedModeClient {
    config: FedModeConfig,
}

impl FedModeClient {
    pub fn new(config: FedModeConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { config })
    }
}

impl super::GlobalClient for FedModeClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        check_train(&self.config, &site.train)?;
        let theta_g = &ins.params;
        let mut res = local_fit(site, ins, &Selector::All, &[], rng)?;
        let theta_k = res.params.clone();
        // phi starts on the straight line between the two ends
        let mut phi = theta_g.clone();
        phi.add_scaled(&theta_k, 1.0)?;
        phi.scale(0.5);
        let phi_net = site.net.duplicate()?;
        phi_net.load(&phi)?;
        let mut phi_opt = Optimizer::new(site.train.optimizer.clone())?;
        let steps = self.config.curve_steps.unwrap_or(res.report.steps);
        let mut batcher = Batcher::new(&site.data.train, site.train.batch_size)?;
        for _ in 0..steps {
            let (x, y) = batcher.next_batch(rng)?;
            let t = grid_t(rng.random_range(0..GRID));
            let phi_now = phi_net.parameters()?;
            site.net
                .load(&curve_point(theta_g, &phi_now, &theta_k, t)?)?;
            let mut g = batch_gradient(&site.net, &site.train.loss, &x, y, None, rng)?;
            g.grads.scale((2.0 * t * (1.0 - t)) as f32);
            apply_gradient(&phi_net, &mut phi_opt, &g.grads, &[])?;
        }
        let phi = phi_net.parameters()?;
        let mut losses = Vec::with_capacity(GRID);
        for i in 0..GRID {
            site.net
                .load(&curve_point(theta_g, &phi, &theta_k, grid_t(i))?)?;
            losses.push(dataset_loss(&site.net, &site.data.train, &site.train.loss)? as f32);
        }
        site.net.load(&theta_k)?;
        let mut extras = ParameterSet::new();
        for (name, v) in phi.iter() {
            extras.insert(
                format!("{PHI_PREFIX}{name}"),
                v.shape.clone(),
                v.values.clone(),
            )?;
        }
        extras.insert(LOSSES_KEY, vec![GRID], losses)?;
        res.extras = extras;
        Ok(res)
    }
}

impl MethodSpec for FedModeConfig {
    fn name(&self) -> &'static str {
        "FedMode"
    }

    fn validate(&self) -> Result<()> {
        if !(self.lambda >= 0.0 && self.lambda.is_finite()) {
            return Err(EngineError::InvalidConfig(format!(
                "FedMode lambda must be >= 0, got {}",
                self.lambda
            )));
        }
        if self.curve_steps == Some(0) {
            return Err(EngineError::InvalidConfig(
                "FedMode curve_steps must be positive (None = the local steps)".into(),
            ));
        }
        Ok(())
    }

    fn server(
        &self,
        _n_sites: usize,
        aggregator: Box<dyn Aggregator>,
    ) -> Result<Box<dyn ServerStrategy>> {
        Ok(Box::new(FedModeServer::new(self.clone(), aggregator)?))
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedModeClient::new(self.clone())?))
    }

    fn record_dp(&self) -> Support {
        Support::No(
            "each site sends its training losses along the curve in clear, which \
             record-level DP does not cover",
        )
    }

    fn client_dp(&self) -> Support {
        Support::No("sites send their control points and curve losses beside the model")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::strategy::WeightedMean;
    use crate::train::TrainReport;
    use rand::SeedableRng;

    fn vec_set(v: Vec<f32>) -> ParameterSet {
        let mut p = ParameterSet::new();
        p.insert("w", vec![v.len()], v).unwrap();
        p
    }

    fn res(site: &str, theta: Vec<f32>, phi: Vec<f32>, losses: Vec<f32>) -> FitRes {
        let mut extras = ParameterSet::new();
        extras
            .insert(format!("{PHI_PREFIX}w"), vec![phi.len()], phi)
            .unwrap();
        extras.insert(LOSSES_KEY, vec![GRID], losses).unwrap();
        FitRes {
            site: site.into(),
            num_examples: 3,
            params: vec_set(theta),
            extras,
            report: TrainReport::default(),
        }
    }

    fn server(lambda: f64, sign: FedModeSign) -> FedModeServer {
        let cfg = FedModeConfig {
            lambda,
            sign,
            curve_steps: None,
        };
        FedModeServer::new(cfg, Box::new(WeightedMean)).unwrap()
    }

    /// theta_g = 0, one site with theta_k = 2, phi = 1: the curve is the line C(t) = 2t.
    /// Every loss is 1, so w_ki = 1 / 1.000001 ~ 1, W ~ 10, Mbar = 2 mean(t_i) = 1.
    fn line_case(lambda: f64, sign: FedModeSign) -> Result<f32> {
        server(lambda, sign)
            .aggregate_fit(
                1,
                &vec_set(vec![0.0]),
                &[res("a", vec![2.0], vec![1.0], vec![1.0; GRID])],
                0,
            )
            .map(|w| w.unwrap().params.to_flat()[0])
    }

    #[test]
    fn extrapolating_sign_by_hand() {
        // lambda = 5: Theta = 1 + 5 / (10 - 5) (1 - 0) = 2 (moves away from theta_g = 0)
        let w = line_case(5.0, FedModeSign::Extrapolate).unwrap();
        assert!((w - 2.0).abs() < 1e-4, "{w}");
        // lambda = 0: the loss-weighted curve mean
        let w = line_case(0.0, FedModeSign::Extrapolate).unwrap();
        assert!((w - 1.0).abs() < 1e-6, "{w}");
        // lambda = 10 >= W = 9.99999: no minimum, refused with a typed error
        assert!(matches!(
            line_case(10.0, FedModeSign::Extrapolate),
            Err(EngineError::InvalidConfig(_))
        ));
    }

    #[test]
    fn shrinking_sign_by_hand() {
        // lambda = 5: Theta = (10 * 1 + 5 * 0) / (10 + 5) = 2/3 (pulled towards theta_g)
        let w = line_case(5.0, FedModeSign::Shrink).unwrap();
        assert!((w - 2.0 / 3.0).abs() < 1e-5, "{w}");
        // lambda = 10 is fine here: 10 / 20 = 0.5
        let w = line_case(10.0, FedModeSign::Shrink).unwrap();
        assert!((w - 0.5).abs() < 1e-5, "{w}");
    }

    #[test]
    fn coefficients_match_materialised_curve_points() {
        // two sites, two coordinates, unequal losses: the server's Mbar (lambda = 0) equals
        // sum_ki w_ki C_k(t_i) / W computed point by point
        let g = vec![0.5f32, -1.0];
        let sites = [
            (
                vec![1.5f32, 0.0],
                vec![2.0f32, -2.0],
                (0..GRID).map(|i| 0.2 + 0.1 * i as f32).collect::<Vec<_>>(),
            ),
            (
                vec![-0.5f32, 1.0],
                vec![0.0f32, 0.5],
                (0..GRID).map(|i| 1.5 - 0.12 * i as f32).collect(),
            ),
        ];
        let mut acc = [0f64; 2];
        let mut total = 0f64;
        for (theta, phi, losses) in &sites {
            let c = curve_coefficients(&losses.iter().map(|v| *v as f64).collect::<Vec<_>>());
            assert!(c.0 > 0.0 && c.1 > 0.0 && c.2 > 0.0);
            for (i, l) in losses.iter().enumerate() {
                let w = 1.0 / (*l as f64 + 1e-6);
                let t = i as f64 / 9.0;
                for j in 0..2 {
                    let point = (1.0 - t).powi(2) * g[j] as f64
                        + 2.0 * t * (1.0 - t) * phi[j] as f64
                        + t * t * theta[j] as f64;
                    acc[j] += w * point;
                }
                total += w;
            }
        }
        let results: Vec<FitRes> = sites
            .iter()
            .enumerate()
            .map(|(k, (th, ph, l))| res(&format!("s{k}"), th.clone(), ph.clone(), l.clone()))
            .collect();
        let w = server(0.0, FedModeSign::Extrapolate)
            .aggregate_fit(1, &vec_set(g.clone()), &results, 0)
            .unwrap()
            .unwrap()
            .params
            .to_flat();
        for j in 0..2 {
            assert!((w[j] as f64 - acc[j] / total).abs() < 1e-5);
        }
    }

    #[test]
    fn rejects_bad_reports_and_config() {
        let mut s = server(0.0, FedModeSign::Extrapolate);
        let g = vec_set(vec![0.0]);
        let neg = res("a", vec![1.0], vec![0.5], vec![-1.0; GRID]);
        assert!(s.aggregate_fit(1, &g, &[neg], 0).is_err());
        let mut no_phi = res("a", vec![1.0], vec![0.5], vec![1.0; GRID]);
        no_phi.extras = ParameterSet::new();
        assert!(s.aggregate_fit(1, &g, &[no_phi], 0).is_err());
        let nan = res("a", vec![1.0], vec![f32::NAN], vec![1.0; GRID]);
        assert!(s.aggregate_fit(1, &g, &[nan], 0).is_err());
        assert!(FedModeClient::new(FedModeConfig {
            lambda: -1.0,
            ..FedModeConfig::default()
        })
        .is_err());
        assert!(FedModeClient::new(FedModeConfig {
            curve_steps: Some(0),
            ..FedModeConfig::default()
        })
        .is_err());
        let state = s.save_state().unwrap();
        s.load_state(state).unwrap();
    }

    #[test]
    fn client_reports_the_curve_and_its_end_losses() {
        let (mut site, ins) = super::super::test_site::one_feature(24, 0.2, 6, 4, 2);
        let mut c = FedModeClient::new(FedModeConfig::default()).unwrap();
        let out = c
            .fit(&mut site, &ins, &mut ChaCha8Rng::seed_from_u64(4))
            .unwrap();
        extras_template(&ins.params)
            .unwrap()
            .check_compatible(&out.extras)
            .unwrap();
        let losses = &out.extras.get(LOSSES_KEY).unwrap().values;
        // the curve's ends are theta_g and theta_k: their losses are the reported ends
        let at = |p: &ParameterSet| {
            site.net.load(p).unwrap();
            dataset_loss(&site.net, &site.data.train, &site.train.loss).unwrap() as f32
        };
        assert!((losses[0] - at(&ins.params)).abs() < 1e-6);
        assert!((losses[GRID - 1] - at(&out.params)).abs() < 1e-6);
        // local training helped, and the control point moved off the straight line
        assert!(losses[GRID - 1] < losses[0]);
        let phi = phi_of(&ins.params, &out.extras).unwrap();
        let mut mid = ins.params.clone();
        mid.add_scaled(&out.params, 1.0).unwrap();
        mid.scale(0.5);
        assert!(phi.sub(&mid).unwrap().l2_norm() > 1e-6);
    }
}
