//! FENDA-FL (Tyler et al. 2023, arXiv:2309.16825).
//!
//! The model is a [`ModelSpec::Fenda`]: global extractor f_w under `global.`, local
//! extractor f_wk under `local.`, head g under `head.` on `[f_w(x); f_wk(x)]`. The local
//! objective is the plain task loss; only `global.` is sent and FedAvg-averaged, so the
//! local extractor and head never leave the site.
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};
use crate::model::ModelSpec;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FendaFlConfig {}

pub(crate) fn check_model(spec: &ModelSpec) -> Result<()> {
    match spec {
        ModelSpec::Fenda { .. } => Ok(()),
        other => Err(EngineError::InvalidConfig(format!(
            "FENDA-FL needs a Fenda model (global + local extractor, shared head), got {other:?}"
        ))),
    }
}
