//! FedLESAM: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FedLesamConfig {}

impl MethodSpec for FedLesamConfig {
    fn name(&self) -> &'static str {
        "FedLESAM"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "FedLESAM is not available yet".into(),
        ))
    }
}
