//! FedDyn: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FedDynConfig {}

impl MethodSpec for FedDynConfig {
    fn name(&self) -> &'static str {
        "FedDyn"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "FedDyn is not available yet".into(),
        ))
    }
}
