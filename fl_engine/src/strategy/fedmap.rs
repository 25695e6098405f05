//! FedMAP: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FedMapConfig {}

impl MethodSpec for FedMapConfig {
    fn name(&self) -> &'static str {
        "FedMAP"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "FedMAP is not available yet".into(),
        ))
    }
}
