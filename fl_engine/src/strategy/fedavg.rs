//! FedAvg (McMahan et al. 2017, arXiv:1602.05629).
//!
//! Client: load the global parameters, train locally, send back the shared parameters and
//! the number of training examples. Server: `w <- w + Agg({w_k - w}, {n_k})`, which with the
//! default [`WeightedMean`](super::WeightedMean) is `sum_k n_k w_k / sum_k n_k`.
//!
//! With a prefix selector the same two halves give FedPer and FENDA-FL (only `global.` is
//! sent and averaged), and with an empty selector the Silo baseline.
use rand_chacha::ChaCha8Rng;

use super::aggregate::{aggregate_models, validate_results};
use super::{Aggregated, Aggregator, FitIns, FitRes, ServerStrategy, Site};
use crate::error::{EngineError, Result};
use crate::params::{ParameterSet, Selector};
use crate::train::{train_local, LocalObjective};

pub struct FedAvgServer {
    name: &'static str,
    aggregator: Box<dyn Aggregator>,
}

impl FedAvgServer {
    pub fn new(name: &'static str, aggregator: Box<dyn Aggregator>) -> Self {
        Self { name, aggregator }
    }

    /// Validated aggregate of this round's models.
    pub(crate) fn average(
        &mut self,
        global: &ParameterSet,
        results: &[FitRes],
    ) -> Result<Aggregated> {
        validate_results(global, results, None)?;
        aggregate_models(self.aggregator.as_mut(), global, results)
    }
}

impl ServerStrategy for FedAvgServer {
    fn name(&self) -> &'static str {
        self.name
    }

    fn aggregate(
        &mut self,
        _round: u64,
        global: &ParameterSet,
        results: &[FitRes],
    ) -> Result<Aggregated> {
        self.average(global, results)
    }
}

/// Load the global part, train with the given extra objective terms, report the shared part.
pub(crate) fn local_fit(
    site: &mut Site,
    ins: &FitIns,
    shared: &Selector,
    terms: &[&dyn LocalObjective],
    rng: &mut ChaCha8Rng,
) -> Result<FitRes> {
    if site.data.train.is_empty() {
        return Err(EngineError::ZeroSamples(site.name().to_string()));
    }
    site.begin_round()?;
    site.net.load(&ins.params)?;
    let report = train_local(
        &site.net,
        &mut site.optimizer,
        &site.data.train,
        &site.train,
        terms,
        rng,
        site.noise.as_mut(),
    )?;
    Ok(FitRes {
        site: site.name().to_string(),
        num_examples: site.data.train.len(),
        params: site.net.parameters()?.select(shared),
        extras: ParameterSet::new(),
        report,
    })
}

/// Stateless client: everything it needs lives in the [`Site`].
pub struct FedAvgClient {
    shared: Selector,
}

impl FedAvgClient {
    pub fn new(shared: Selector) -> Self {
        Self { shared }
    }
}

impl super::GlobalClient for FedAvgClient {
    fn fit(&mut self, site: &mut Site, ins: &FitIns, rng: &mut ChaCha8Rng) -> Result<FitRes> {
        local_fit(site, ins, &self.shared, &[], rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::WeightedMean;
    use crate::train::TrainReport;

    fn res(site: &str, n: usize, w: f32, b: f32) -> FitRes {
        let mut params = ParameterSet::new();
        params.insert("w", vec![1], vec![w]).unwrap();
        params.insert("b", vec![1], vec![b]).unwrap();
        FitRes {
            site: site.into(),
            num_examples: n,
            params,
            extras: ParameterSet::new(),
            report: TrainReport::default(),
        }
    }

    #[test]
    fn example_weighted_average_by_hand() {
        // sites with 1 and 3 examples: w = (1*2 + 3*6)/4 = 5, b = (1*(-1) + 3*1)/4 = 0.5
        let mut server = FedAvgServer::new("FedAvg", Box::new(WeightedMean));
        let global = res("g", 1, 0.0, 0.0).params;
        let next = server
            .aggregate_fit(
                1,
                &global,
                &[res("a", 1, 2.0, -1.0), res("b", 3, 6.0, 1.0)],
                0,
            )
            .unwrap()
            .unwrap()
            .params;
        assert_eq!(next.get("w").unwrap().values, vec![5.0]);
        assert_eq!(next.get("b").unwrap().values, vec![0.5]);
    }

    #[test]
    fn bad_update_leaves_no_partial_result_and_all_failed_keeps_model() {
        let mut server = FedAvgServer::new("FedAvg", Box::new(WeightedMean));
        let global = res("g", 1, 0.0, 0.0).params;
        let bad = res("b", 3, f32::INFINITY, 1.0);
        assert!(server
            .aggregate_fit(1, &global, &[res("a", 1, 2.0, -1.0), bad], 0)
            .is_err());
        assert_eq!(server.aggregate_fit(1, &global, &[], 2).unwrap(), None);
        assert!(matches!(
            server.aggregate_fit(1, &global, &[], 0),
            Err(EngineError::NoUpdates)
        ));
    }
}
