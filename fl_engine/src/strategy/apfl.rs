//! APFL: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApflConfig {}

impl MethodSpec for ApflConfig {
    fn name(&self) -> &'static str {
        "APFL"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "APFL is not available yet".into(),
        ))
    }
}
