//! FedDecorr: placeholder registration, replaced by the method's implementation.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, MethodSpec};
use crate::error::{EngineError, Result};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FedDecorrConfig {}

impl MethodSpec for FedDecorrConfig {
    fn name(&self) -> &'static str {
        "FedDecorr"
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Err(EngineError::InvalidConfig(
            "FedDecorr is not available yet".into(),
        ))
    }
}
