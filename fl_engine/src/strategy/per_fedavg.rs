//! Per-FedAvg: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerFedAvgConfig {}

impl MethodSpec for PerFedAvgConfig {
    fn name(&self) -> &'static str {
        "Per-FedAvg"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "Per-FedAvg is not available yet".into(),
        ))
    }
}
