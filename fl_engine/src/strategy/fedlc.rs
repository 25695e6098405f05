//! FedLC: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FedLcConfig {}

impl MethodSpec for FedLcConfig {
    fn name(&self) -> &'static str {
        "FedLC"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "FedLC is not available yet".into(),
        ))
    }
}
