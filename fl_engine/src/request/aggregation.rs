//! How a study combines the holders' updates each round: the method's own mean or a
//! Byzantine-robust rule.

use serde::{Deserialize, Serialize};

use crate::strategy::{Bulyan, CoordinateMedian, FlTrust, Krum, RobustRule, Trim, TrimmedMean};

/// How the gateway combines the holders' updates each round. `mean` is the method's own
/// averaging (DP-FedAvg under client-level DP, an equal-weight mean under record-level DP, the
/// example-weighted mean without formal DP). The Byzantine-robust rules (fl_engine's
/// `strategy::robust`) count holders, not examples, so a holder cannot buy influence by
/// reporting a large sample count; under client-level DP each runs on updates clipped to the
/// plan's norm, with Gaussian noise scaled to the rule's replace-one sensitivity. FLTrust needs
/// a clean root data set; the gateway holds no patient data, so the study names one of its own
/// holders as the root holder (e.g. a node of the HDAB that holds a reference data set it
/// curates), whose update is each round's root update. It is not offered under client-level
/// DP: the trust scores and the norm every update is rescaled to come from the root holder's
/// unprivatised update, which the client-level noise does not cover.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "rule", rename_all = "snake_case", deny_unknown_fields)]
pub enum Aggregation {
    #[default]
    Mean,
    /// Krum (Blanchard et al. 2017): the update closest to its n - f - 2 nearest neighbours;
    /// needs n >= 2f + 3.
    Krum { f: usize },
    /// Multi-Krum: the mean of the `m` best-scored updates (default n - f); n >= 2f + 3.
    MultiKrum { f: usize, m: Option<usize> },
    /// Coordinate-wise median (Yin et al. 2018).
    Median,
    /// Coordinate-wise mean without the `per_side` lowest and highest values (Yin et al.
    /// 2018); needs n > 2 per_side.
    TrimmedMean { per_side: usize },
    /// Bulyan (El Mhamdi et al. 2018): repeated Krum, then a trimmed mean around the median;
    /// needs n >= 4f + 3.
    Bulyan { f: usize },
    /// FLTrust (Cao et al. 2021): the root holder's update `g0` is the root update; every other
    /// holder's update gets trust ReLU(cos(g_i, g0)), is rescaled to ||g0|| and enters a
    /// trust-weighted mean. The root holder's update is not one of the combined updates, so a
    /// round needs it and at least one other; a round without it fails.
    #[serde(rename = "fltrust")]
    FlTrust {
        /// One of the study's data holders, trusted to hold the clean root data set.
        root_holder: String,
    },
}

impl Aggregation {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Mean => "mean",
            Self::Krum { .. } => "krum",
            Self::MultiKrum { .. } => "multi_krum",
            Self::Median => "median",
            Self::TrimmedMean { .. } => "trimmed_mean",
            Self::Bulyan { .. } => "bulyan",
            Self::FlTrust { .. } => "fltrust",
        }
    }

    /// FLTrust's root holder, whose update is each round's root update.
    pub fn root_holder(&self) -> Option<&str> {
        match self {
            Self::FlTrust { root_holder } => Some(root_holder),
            _ => None,
        }
    }

    /// How many updates the rule combines in a round to which `contributors` holders sent one:
    /// all of them, but FLTrust takes its root holder's as the root update instead.
    pub fn combined(&self, contributors: usize) -> usize {
        match self {
            Self::FlTrust { .. } => contributors.saturating_sub(1),
            _ => contributors,
        }
    }

    /// The engine's robust rule; `None` for the method's own mean. `root_update` is FLTrust's
    /// root update of the round (its root holder's update); without it the FLTrust rule only
    /// answers for its limits and refuses to aggregate.
    pub fn robust_rule(
        &self,
        root_update: Option<Vec<f32>>,
    ) -> crate::Result<Option<Box<dyn RobustRule>>> {
        Ok(match self {
            Self::Mean => None,
            Self::Krum { f } => Some(Box::new(Krum::new(*f))),
            Self::MultiKrum { f, m } => Some(Box::new(Krum::multi(*f, *m)?)),
            Self::Median => Some(Box::new(CoordinateMedian::new())),
            Self::TrimmedMean { per_side } => {
                Some(Box::new(TrimmedMean::new(Trim::Count(*per_side))?))
            }
            Self::Bulyan { f } => Some(Box::new(Bulyan::new(*f))),
            Self::FlTrust { .. } => {
                let mut rule = FlTrust::supplied();
                if let Some(g0) = root_update {
                    rule.set_root_update(g0)?;
                }
                Some(Box::new(rule))
            }
        })
    }
}
