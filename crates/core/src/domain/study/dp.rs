//! A study's differential privacy: the level and plan fixed at submission, the mechanism each
//! round applies, and the accountant that composes the rounds' epsilon.

use fl_engine::dp::{rdp_sampled_gaussian, RdpAccountant, SampledGaussian};
use secagg::ddg::{accounting as ddg_accounting, mechanism::DdgPlan};
use serde::{Deserialize, Serialize};

/// Which unit differential privacy protects in a study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DpLevel {
    /// DP-FedAvg at the gateway: each data holder's whole update is clipped and noised.
    Client,
    /// DP-SGD at each data holder: every record's gradient is clipped and noised.
    Record,
    /// No formal differential privacy (`"none"` in the API): no clipping, no noise, no epsilon
    /// spent. Only under a permit whose `dp_requirement` is `none_allowed`; the output check
    /// still applies before release.
    #[serde(rename = "none")]
    NoFormalDp,
}

/// The privacy mechanism of a study, resolved at submission: the noise multiplier is fixed
/// (derived from a target epsilon when one was asked for) so every round costs the same.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DpPlan {
    pub level: DpLevel,
    pub clip_norm: f64,
    /// The noise's standard deviation in the sum of the holders' clipped updates, in units of
    /// `clip_norm`. Under distributed DP, what the sum of `min_survivors` holders carries.
    pub noise_multiplier: f64,
    /// The epsilon the researcher asked the whole study to stay within, if any.
    pub target_epsilon: Option<f64>,
    /// Sampling rate of the accounted mechanism: 1 at client level (every selected holder,
    /// every round), the Poisson rate of DP-SGD at record level.
    pub sampling_rate: f64,
    /// Sampled-Gaussian steps one round costs: 1 at client level, the local DP-SGD steps at
    /// record level.
    pub steps_per_round: u64,
    /// The permit's delta.
    pub delta: f64,
    /// Client-level DP realised on the holders under secure aggregation: each clips its
    /// update and adds its share of discrete Gaussian noise before masking (Kairouz, Liu and
    /// Steinke's distributed discrete Gaussian; docs/secure-aggregation.md). Fixed at
    /// submission: `params` (model entries `dim`, `clip`, `central_stddev` in model units,
    /// `min_survivors` the noise is planned for, `max_clients`, `modulus_bits` of the ring,
    /// `k_stddevs` of head-room, rounding bias `beta`, the public `rotation_seed`) and what
    /// follows from them (`padded_dim`, the granularity `gamma`, each holder's
    /// `node_variance` in ring units as an exact fraction, the rounded sensitivity
    /// `l2_bound`). Absent when the gateway adds the noise (or there is none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub distributed: Option<DdgPlan>,
}

/// What one round of a study releases, as its accountant counts it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RoundMechanism {
    /// Gaussian noise on Poisson-sampled clipped contributions: DP-FedAvg at the gateway
    /// (sampling rate 1, one step) or DP-SGD on the holders.
    SampledGaussian(SampledGaussian),
    /// The distributed discrete Gaussian, accounted for the plan's minimum number of
    /// surviving holders (a round with fewer is discarded before it is unmasked).
    DistributedDiscreteGaussian(DdgPlan),
}

impl RoundMechanism {
    /// Rényi DP of one round at each of `orders`.
    fn rdp(&self, orders: &[f64]) -> fl_engine::Result<Vec<f64>> {
        Ok(match self {
            Self::SampledGaussian(m) => {
                rdp_sampled_gaussian(m.sampling_rate, m.noise_multiplier, orders)?
                    .into_iter()
                    .map(|r| r * m.steps as f64)
                    .collect()
            }
            Self::DistributedDiscreteGaussian(plan) => orders
                .iter()
                .map(|&a| ddg_accounting::rdp(plan, plan.params.min_survivors, a))
                .collect(),
        })
    }
}

/// Epsilon at `delta` of `rounds` composed under Rényi DP. Sampled-Gaussian rounds alone are
/// accounted by the engine's accountant; once a distributed round is among them, every round's
/// RDP is added at each of the `secagg` accountant's orders and converted there, so the
/// distributed rounds of one study give exactly `secagg::ddg::accounting::epsilon`.
pub fn epsilon_of_rounds(rounds: &[RoundMechanism], delta: f64) -> anyhow::Result<f64> {
    if rounds.is_empty() {
        return Ok(0.0);
    }
    let sampled: Option<Vec<SampledGaussian>> = rounds
        .iter()
        .map(|m| match m {
            RoundMechanism::SampledGaussian(s) => Some(*s),
            RoundMechanism::DistributedDiscreteGaussian(_) => None,
        })
        .collect();
    if let Some(sampled) = sampled {
        let mut acc = RdpAccountant::new();
        for m in sampled {
            acc.spend(m)?;
        }
        return Ok(acc.epsilon(delta)?.epsilon);
    }
    let orders = ddg_accounting::orders();
    let mut total = vec![0.0; orders.len()];
    // identical rounds (every round of one study) are computed once
    let mut distinct: Vec<(RoundMechanism, u64)> = Vec::new();
    for m in rounds {
        match distinct.iter_mut().find(|(d, _)| d == m) {
            Some((_, count)) => *count += 1,
            None => distinct.push((*m, 1)),
        }
    }
    for (m, count) in distinct {
        for (t, r) in total.iter_mut().zip(m.rdp(&orders)?) {
            *t += count as f64 * r;
        }
    }
    let at = |a: f64| {
        orders
            .iter()
            .position(|&o| o == a)
            .map_or(f64::INFINITY, |i| total[i])
    };
    Ok(ddg_accounting::epsilon_of_rdp(at, delta)?.epsilon)
}

impl DpPlan {
    /// The plan of a study without formal DP: nothing clipped, no noise, nothing accounted.
    pub fn no_formal_dp(delta: f64) -> Self {
        Self {
            level: DpLevel::NoFormalDp,
            clip_norm: 0.0,
            noise_multiplier: 0.0,
            target_epsilon: None,
            sampling_rate: 0.0,
            steps_per_round: 0,
            delta,
            distributed: None,
        }
    }

    /// Whether the study runs under formal differential privacy (and so spends epsilon).
    pub fn is_formal(&self) -> bool {
        self.level != DpLevel::NoFormalDp
    }

    /// The mechanism one round applies; `None` without formal DP.
    pub fn round_mechanism(&self) -> fl_engine::Result<Option<RoundMechanism>> {
        if !self.is_formal() {
            return Ok(None);
        }
        if let Some(plan) = self.distributed {
            return Ok(Some(RoundMechanism::DistributedDiscreteGaussian(plan)));
        }
        Ok(Some(RoundMechanism::SampledGaussian(SampledGaussian::new(
            self.sampling_rate,
            self.noise_multiplier,
            self.steps_per_round,
        )?)))
    }

    /// Epsilon of `rounds` rounds of this plan, composed under Rényi DP; 0 without formal DP.
    /// Under distributed DP, `secagg::ddg::accounting::epsilon` for the minimum survivors.
    pub fn epsilon_for_rounds(&self, rounds: u64) -> anyhow::Result<f64> {
        if !self.is_formal() {
            return Ok(0.0);
        }
        if let Some(plan) = &self.distributed {
            let rounds = u32::try_from(rounds)?;
            return Ok(ddg_accounting::epsilon(plan, rounds, self.delta)?.epsilon);
        }
        let step = SampledGaussian::new(
            self.sampling_rate,
            self.noise_multiplier,
            self.steps_per_round * rounds,
        )?;
        Ok(RdpAccountant::new()
            .epsilon_after(&step, self.delta)?
            .epsilon)
    }
}

/// A study's privacy accountant, kept with each checkpoint so a redone aggregation resumes
/// from the spend of the round before.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StudyAccountant {
    /// Rounds of the distributed discrete Gaussian: every round applies the study's plan, so
    /// the count is the whole history.
    Distributed { distributed_rounds: u64 },
    /// Gaussian rounds (central DP-FedAvg, DP-SGD on the holders): the engine's accountant.
    Rdp(RdpAccountant),
}

impl StudyAccountant {
    /// Nothing spent yet, for a study with `plan`.
    pub fn new(plan: &DpPlan) -> Self {
        match plan.distributed {
            Some(_) if plan.is_formal() => Self::Distributed {
                distributed_rounds: 0,
            },
            _ => Self::Rdp(RdpAccountant::new()),
        }
    }

    /// The study's epsilon once one more round of `plan` is spent.
    pub fn epsilon_after_round(&self, plan: &DpPlan) -> anyhow::Result<f64> {
        match (self, plan.round_mechanism()?) {
            (_, None) => Ok(0.0),
            (Self::Rdp(acc), Some(RoundMechanism::SampledGaussian(m))) => {
                Ok(acc.epsilon_after(&m, plan.delta)?.epsilon)
            }
            (Self::Distributed { distributed_rounds }, Some(_)) => {
                plan.epsilon_for_rounds(distributed_rounds + 1)
            }
            _ => anyhow::bail!("the stored accountant does not match the study's privacy plan"),
        }
    }

    /// Counts one round of `plan`; returns the study's epsilon after it.
    pub fn spend(&mut self, plan: &DpPlan) -> anyhow::Result<f64> {
        match (self, plan.round_mechanism()?) {
            (_, None) => Ok(0.0),
            (Self::Rdp(acc), Some(RoundMechanism::SampledGaussian(m))) => {
                acc.spend(m)?;
                Ok(acc.epsilon(plan.delta)?.epsilon)
            }
            (Self::Distributed { distributed_rounds }, Some(_)) => {
                *distributed_rounds += 1;
                plan.epsilon_for_rounds(*distributed_rounds)
            }
            _ => anyhow::bail!("the stored accountant does not match the study's privacy plan"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_level_plan_matches_the_published_composition() {
        // FL-EHDS Table V: sigma 1, delta 1e-5, q 1 -> about 40 after 30 rounds (Balle et al.).
        let plan = DpPlan {
            level: DpLevel::Client,
            clip_norm: 1.0,
            noise_multiplier: 1.0,
            target_epsilon: None,
            sampling_rate: 1.0,
            steps_per_round: 1,
            delta: 1e-5,
            distributed: None,
        };
        let eps = plan.epsilon_for_rounds(30).unwrap();
        assert!((39.5..41.6).contains(&eps), "{eps}");
        assert!(plan.epsilon_for_rounds(1).unwrap() < eps);
    }
}
