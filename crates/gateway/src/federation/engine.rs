//! One place that turns a study's specification and checkpoint into what the engine runs: the
//! method's server restored from a checkpoint, the fit instructions a round's holders train
//! from, the check of a holder's update against them, the aggregator a round combines with,
//! and the study's first checkpoint. The round loop (`rounds`) and the node protocol
//! (`app::node_tasks`) both take them from here, so the server whose instructions a holder
//! trained from is built exactly as the server that checks and aggregates its update.

use fl_engine::{
    dp::{DpFedAvgConfig, NoiseRng},
    load_safetensors, save_safetensors,
    strategy::{
        validate_results, Aggregator, DpFedAvgAggregator, DpRobust, RobustRule, ServerStrategy,
        UniformMean, WeightedMean,
    },
    EngineError, FitIns, FitRes, ParameterSet,
};

use ehds_core::domain::study::{
    Aggregation, Checkpoint, DpLevel, DpPlan, Study, StudyAccountant, StudySpec,
};

/// How a study's rounds combine the holders' updates: the one choice among differential
/// privacy, a robust rule and secure aggregation that a study can make. Submission refuses
/// every other combination (`ehds_core::domain::study_request`); [`Combination::of`] is the
/// typed form of what it admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combination {
    /// Secure aggregation: the unmasked sum's mean enters as one result, since the sum is all
    /// the gateway sees. Under distributed DP the holders' noise is already in it: none is
    /// added here, and no robust rule can see individual updates.
    SecureSum,
    /// Client-level DP at the gateway: each update clipped, Gaussian noise on the mean
    /// (DP-FedAvg), or on a robust rule's output scaled to its replace-one sensitivity.
    CentralClientDp { robust: bool },
    /// Record-level DP at the holders: equal weights, because the holders' sample counts are
    /// self-reported and not covered by their DP-SGD.
    RecordDp { robust: bool },
    /// No formal DP: nothing is clipped or noised anywhere; the example-weighted mean.
    NoFormalDp { robust: bool },
}

impl Combination {
    /// The combination of `spec`; an error for one that submission refuses.
    pub fn of(spec: &StudySpec) -> anyhow::Result<Self> {
        let robust = spec.aggregation != Aggregation::Mean;
        if spec.secure_aggregation.is_some() {
            anyhow::ensure!(
                (spec.dp.level == DpLevel::NoFormalDp || spec.dp.distributed.is_some()) && !robust,
                "secure aggregation runs without central noise and robust rules"
            );
            return Ok(Self::SecureSum);
        }
        // FLTrust's root update is not covered by central noise: refused at submission
        anyhow::ensure!(
            spec.aggregation.root_holder().is_none() || spec.dp.level != DpLevel::Client,
            "FLTrust runs without client-level DP and secure aggregation"
        );
        Ok(match spec.dp.level {
            DpLevel::Client => Self::CentralClientDp { robust },
            DpLevel::Record => Self::RecordDp { robust },
            DpLevel::NoFormalDp => Self::NoFormalDp { robust },
        })
    }

    /// The aggregator of one round with `participants` invited holders. `rule` is the study's
    /// robust rule for the round (`Aggregation::robust_rule`); `noise` opens the round's noise
    /// generator, asked for only where noise is added here.
    pub fn aggregator(
        self,
        rule: Option<Box<dyn RobustRule>>,
        dp: &DpPlan,
        participants: usize,
        noise: impl FnOnce() -> anyhow::Result<NoiseRng>,
    ) -> anyhow::Result<Box<dyn Aggregator>> {
        anyhow::ensure!(
            rule.is_some() == self.robust(),
            "the round's robust rule does not match the study's aggregation"
        );
        Ok(match (self, rule) {
            (Self::SecureSum, _) => Box::new(UniformMean::new()),
            (Self::CentralClientDp { .. }, None) => Box::new(DpFedAvgAggregator::new(
                DpFedAvgConfig {
                    clip_norm: dp.clip_norm,
                    noise_multiplier: dp.noise_multiplier,
                    // fixed before the round: dividing by the realised count would make the
                    // divisor itself depend on who answered
                    expected_sites: Some(participants as f64),
                    parallel: true,
                },
                noise()?,
            )),
            (Self::CentralClientDp { .. }, Some(rule)) => Box::new(DpRobust::new(
                rule,
                dp.clip_norm,
                dp.noise_multiplier,
                noise()?,
            )?),
            (Self::RecordDp { .. }, None) => Box::new(UniformMean::new()),
            (Self::NoFormalDp { .. }, None) => Box::new(WeightedMean),
            (Self::RecordDp { .. } | Self::NoFormalDp { .. }, Some(rule)) => rule,
        })
    }

    fn robust(self) -> bool {
        match self {
            Self::SecureSum => false,
            Self::CentralClientDp { robust }
            | Self::RecordDp { robust }
            | Self::NoFormalDp { robust } => robust,
        }
    }
}

/// The method's server for `sites` holders, combining with `aggregator`, in the state
/// `checkpoint` saved.
pub fn server_at(
    spec: &StudySpec,
    sites: usize,
    aggregator: Box<dyn Aggregator>,
    checkpoint: &Checkpoint,
) -> Result<Box<dyn ServerStrategy>, EngineError> {
    let mut server = spec.strategy.server(sites, aggregator)?;
    server.load_state(checkpoint.server_state.clone())?;
    Ok(server)
}

/// The instructions of `round` at `checkpoint` (what every holder of the study trains from),
/// and the method's server they came from.
pub fn fit_ins(
    spec: &StudySpec,
    round: u64,
    checkpoint: &Checkpoint,
) -> Result<(FitIns, Box<dyn ServerStrategy>), EngineError> {
    let (global, _) = load_safetensors(&checkpoint.global)?;
    let server = server_at(
        spec,
        spec.data_holders.len(),
        Box::new(WeightedMean),
        checkpoint,
    )?;
    let ins = server.configure_fit(round, &global)?;
    Ok((ins, server))
}

/// Checks a holder's update of `round` against the instructions it trained from: names,
/// shapes, finite values, and the values the method's sites send back. A method whose sites
/// reply with other values than it sent (q-FedAvg's loss, FedMode's loss curve, FedMAP's site
/// weight, FedNova's step count) has its own server check them, exactly as it will at
/// aggregation.
pub fn check_update(
    ins: &FitIns,
    server: &mut dyn ServerStrategy,
    round: u64,
    update: &FitRes,
) -> Result<(), EngineError> {
    let replies_as_sent = update.extras.is_empty() || update.extras.names().eq(ins.extras.names());
    if replies_as_sent {
        let template: Option<&ParameterSet> = (!ins.extras.is_empty()).then_some(&ins.extras);
        validate_results(&ins.params, std::slice::from_ref(update), template)
    } else {
        server
            .aggregate_fit(round, &ins.params, std::slice::from_ref(update), 0)
            .map(|_| ())
    }
}

/// The study's first checkpoint (round 0): the initial global model, drawn from the study's
/// seed, and the method's initial server state.
pub fn initial_checkpoint(study: &Study) -> anyhow::Result<Checkpoint> {
    let spec = &study.spec;
    let global = fl_engine::Net::new(
        &spec.model,
        fl_engine::seeds::stream_seed(spec.seed, u64::MAX, 0),
    )?
    .parameters()?
    .select(&spec.strategy.shared());
    let server = spec
        .strategy
        .server(spec.data_holders.len(), Box::new(WeightedMean))?;
    Ok(Checkpoint {
        study_id: study.id,
        round: 0,
        global: save_safetensors(&global, &study.id.to_string(), 0, None)?.0,
        server_state: server.save_state()?,
        accountant: serde_json::to_value(StudyAccountant::new(&spec.dp))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ehds_core::domain::study_request::fixtures;
    use std::cell::Cell;

    fn median() -> Aggregation {
        Aggregation::Median
    }

    #[test]
    fn each_admitted_study_has_one_combination_and_the_rest_are_refused() {
        // FedAvg under client-level DP at the gateway
        let mut spec = fixtures::spec(3);
        assert_eq!(
            Combination::of(&spec).unwrap(),
            Combination::CentralClientDp { robust: false }
        );
        spec.aggregation = median();
        assert_eq!(
            Combination::of(&spec).unwrap(),
            Combination::CentralClientDp { robust: true }
        );
        // FLTrust's root update is not covered by central noise
        spec.aggregation = Aggregation::FlTrust {
            root_holder: "hosp-1".into(),
        };
        assert!(Combination::of(&spec).is_err());
        // client-level DP under secure aggregation: the holders' distributed noise in the sum
        let mut secure = fixtures::distributed_spec(2);
        assert_eq!(Combination::of(&secure).unwrap(), Combination::SecureSum);
        // no robust rule can see the updates inside a secure sum
        secure.aggregation = median();
        assert!(Combination::of(&secure).is_err());
    }

    #[test]
    fn noise_is_drawn_only_where_the_gateway_adds_it() {
        let spec = fixtures::spec(3);
        let asked = Cell::new(0);
        let noise = || {
            asked.set(asked.get() + 1);
            Ok(NoiseRng::from_secret(&[7; 32], b"round/1"))
        };
        Combination::CentralClientDp { robust: false }
            .aggregator(None, &spec.dp, 2, noise)
            .unwrap();
        assert_eq!(asked.get(), 1);
        for plain in [
            Combination::SecureSum,
            Combination::RecordDp { robust: false },
            Combination::NoFormalDp { robust: false },
        ] {
            plain.aggregator(None, &spec.dp, 2, noise).unwrap();
        }
        assert_eq!(asked.get(), 1, "no noise outside central client-level DP");
        // a rule where the study has none, or none where it has one, is a mistake
        let rule = median().robust_rule(None).unwrap();
        assert!(Combination::NoFormalDp { robust: false }
            .aggregator(rule, &spec.dp, 2, noise)
            .is_err());
        assert!(Combination::RecordDp { robust: true }
            .aggregator(None, &spec.dp, 2, noise)
            .is_err());
    }
}
