//! HPFL: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HpflConfig {}

impl MethodSpec for HpflConfig {
    fn name(&self) -> &'static str {
        "HPFL"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "HPFL is not available yet".into(),
        ))
    }
}
