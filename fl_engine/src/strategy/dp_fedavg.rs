//! Client-level DP-FedAvg (McMahan et al. 2018, arXiv:1710.06963) as an [`Aggregator`].
//!
//! Plugs [`crate::dp::dp_fedavg`] (clip each site update to L2 norm C, sum, add
//! N(0, (sigma C)^2) per coordinate, divide by the expected number of sites) into the
//! averaging step of the FedAvg family. The example weights are deliberately ignored:
//! weighting by sample counts would change each site's sensitivity, so DP-FedAvg averages
//! uniformly. Privacy accounting is the caller's job (`crate::dp::RdpAccountant`), as is
//! choosing the noise generator: use `NoiseRng::from_os_entropy` for real studies.
use super::{Aggregator, AggregatorKind, AggregatorReport};
use crate::dp::{dp_fedavg, DpAggregationReport, DpFedAvgConfig, NoiseRng};
use crate::error::Result;

pub struct DpFedAvgAggregator {
    config: DpFedAvgConfig,
    rng: NoiseRng,
    last: Option<DpAggregationReport>,
}

impl DpFedAvgAggregator {
    pub fn new(config: DpFedAvgConfig, rng: NoiseRng) -> Self {
        Self {
            config,
            rng,
            last: None,
        }
    }

    /// Clipping and noise report of the latest round. Holds raw update norms: keep it
    /// inside the aggregator's trust boundary.
    pub fn last_report(&self) -> Option<&DpAggregationReport> {
        self.last.as_ref()
    }
}

impl Aggregator for DpFedAvgAggregator {
    fn name(&self) -> &'static str {
        "dp-fedavg"
    }

    fn kind(&self) -> AggregatorKind {
        AggregatorKind::ClientDp
    }

    fn report(&self) -> Option<AggregatorReport> {
        self.last.clone().map(AggregatorReport::ClientDp)
    }

    fn aggregate(&mut self, updates: &[&[f32]], _weights: &[f64]) -> Result<Vec<f32>> {
        let out = dp_fedavg(updates, &self.config, &mut self.rng)?;
        self.last = Some(out.report);
        Ok(out.mean)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_every_update_above_the_norm_and_adds_noise() {
        let cfg = DpFedAvgConfig::new(1.0, 1.0);
        let mut agg =
            DpFedAvgAggregator::new(cfg, NoiseRng::from_seed_for_reproducible_runs([7; 32]));
        let a = [3.0f32, 4.0, 0.0, 0.0];
        let b = [0.1f32, 0.0, 0.0, 0.0];
        let out = agg.aggregate(&[&a, &b], &[100.0, 1.0]).unwrap();
        assert_eq!(out.len(), 4);
        let report = agg.last_report().unwrap();
        assert_eq!(report.clipped, 1);
        assert_eq!(report.divisor, 2.0);
        assert!((report.norms[0] - 5.0).abs() < 1e-9);
        // without noise the last two coordinates would be exactly 0
        assert!(out[2] != 0.0 || out[3] != 0.0);
    }
}
