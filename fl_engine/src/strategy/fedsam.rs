//! FedSAM: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FedSamConfig {}

impl MethodSpec for FedSamConfig {
    fn name(&self) -> &'static str {
        "FedSAM"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "FedSAM is not available yet".into(),
        ))
    }
}
