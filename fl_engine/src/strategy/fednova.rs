//! FedNova: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FedNovaConfig {}

impl MethodSpec for FedNovaConfig {
    fn name(&self) -> &'static str {
        "FedNova"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "FedNova is not available yet".into(),
        ))
    }
}
