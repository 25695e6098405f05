//! PerFCL: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerFclConfig {}

impl MethodSpec for PerFclConfig {
    fn name(&self) -> &'static str {
        "PerFCL"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "PerFCL is not available yet".into(),
        ))
    }
}
