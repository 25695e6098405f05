//! FedPer (Arivazhagan et al. 2019, arXiv:1912.00818): federated feature extractor,
//! personal classification head.
//!
//! The model is a [`ModelSpec::HeadNet`]: extractor under `global.` (sent and averaged
//! with FedAvg), head under `head.` (never leaves the site). Each round a site loads the
//! new extractor, keeps its own head and trains both.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, FedAvgClient, MethodSpec};
use crate::error::{EngineError, Result};
use crate::model::ModelSpec;
use crate::params::Selector;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FedPerConfig {}

fn check_model(spec: &ModelSpec) -> Result<()> {
    match spec {
        s if s.is_head_net() => Ok(()),
        other => Err(EngineError::InvalidConfig(format!(
            "FedPer needs a HeadNet (global extractor + local head), got {other:?}"
        ))),
    }
}

impl MethodSpec for FedPerConfig {
    fn name(&self) -> &'static str {
        "FedPer"
    }

    fn shared(&self) -> Selector {
        Selector::prefix("global.")
    }

    fn personalised(&self) -> bool {
        true
    }

    fn check_model(&self, spec: &ModelSpec) -> Result<()> {
        check_model(spec)
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedAvgClient::new(self.shared())))
    }
}
