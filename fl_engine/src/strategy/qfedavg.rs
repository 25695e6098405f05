//! q-FedAvg: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QFedAvgConfig {}

impl MethodSpec for QFedAvgConfig {
    fn name(&self) -> &'static str {
        "q-FedAvg"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "q-FedAvg is not available yet".into(),
        ))
    }
}
