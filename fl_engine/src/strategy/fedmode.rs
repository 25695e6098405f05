//! FedMode: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FedModeConfig {}

impl MethodSpec for FedModeConfig {
    fn name(&self) -> &'static str {
        "FedMode"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "FedMode is not available yet".into(),
        ))
    }
}
