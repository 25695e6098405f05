//! FedPer (Arivazhagan et al. 2019, arXiv:1912.00818): federated feature extractor,
//! personal classification head.
//!
//! The model is a [`ModelSpec::HeadNet`]: extractor under `global.` (sent and averaged
//! with FedAvg), head under `head.` (never leaves the site). Each round a site loads the
//! new extractor, keeps its own head and trains both.
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};
use crate::model::ModelSpec;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FedPerConfig {}

pub(crate) fn check_model(spec: &ModelSpec) -> Result<()> {
    match spec {
        ModelSpec::HeadNet { .. } => Ok(()),
        other => Err(EngineError::InvalidConfig(format!(
            "FedPer needs a HeadNet (global extractor + local head), got {other:?}"
        ))),
    }
}
