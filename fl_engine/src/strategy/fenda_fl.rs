//! FENDA-FL (Tyler et al. 2023, arXiv:2309.16825).
//!
//! The model is a [`ModelSpec::Fenda`]: global extractor f_w under `global.`, local
//! extractor f_wk under `local.`, head g under `head.` on `[f_w(x); f_wk(x)]`. The local
//! objective is the plain task loss; only `global.` is sent and FedAvg-averaged, so the
//! local extractor and head never leave the site.
use serde::{Deserialize, Serialize};

use super::{ClientStrategy, FedAvgClient, MethodSpec};
use crate::error::{EngineError, Result};
use crate::model::ModelSpec;
use crate::params::Selector;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FendaFlConfig {}

fn check_model(spec: &ModelSpec) -> Result<()> {
    match spec {
        s if s.is_fenda() => Ok(()),
        other => Err(EngineError::InvalidConfig(format!(
            "FENDA-FL needs a Fenda model (global + local extractor, shared head), got {other:?}"
        ))),
    }
}

impl MethodSpec for FendaFlConfig {
    fn name(&self) -> &'static str {
        "FENDA-FL"
    }

    fn shared(&self) -> Selector {
        Selector::prefix("global.")
    }

    fn personalised(&self) -> bool {
        true
    }

    fn check_model(&self, spec: &ModelSpec) -> Result<()> {
        check_model(spec)
    }

    fn client(&self) -> Result<Box<dyn ClientStrategy>> {
        Ok(Box::new(FedAvgClient::new(self.shared())))
    }
}
