//! pFedMe: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PFedMeConfig {}

impl MethodSpec for PFedMeConfig {
    fn name(&self) -> &'static str {
        "pFedMe"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "pFedMe is not available yet".into(),
        ))
    }
}
