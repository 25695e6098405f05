//! FedExP: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FedExpConfig {}

impl MethodSpec for FedExpConfig {
    fn name(&self) -> &'static str {
        "FedExP"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "FedExP is not available yet".into(),
        ))
    }
}
