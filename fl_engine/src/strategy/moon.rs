//! MOON: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MoonConfig {}

impl MethodSpec for MoonConfig {
    fn name(&self) -> &'static str {
        "MOON"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "MOON is not available yet".into(),
        ))
    }
}
