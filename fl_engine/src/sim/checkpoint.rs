//! FL4Health checkpointing: the server keeps the global model with the lowest
//! example-weighted validation loss; each site keeps its own model with the lowest
//! validation loss. Ties keep the earlier round (strict improvement only).
use serde::{Deserialize, Serialize};

use crate::model::ModelSpec;
use crate::params::ParameterSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CheckpointKind {
    /// The models after the last round.
    Latest,
    /// The server's best global model (by weighted validation loss), used at every site.
    BestGlobal,
    /// Each site's own best model (by its validation loss).
    BestLocal,
}

impl CheckpointKind {
    pub fn label(&self) -> &'static str {
        match self {
            CheckpointKind::Latest => "latest",
            CheckpointKind::BestGlobal => "global",
            CheckpointKind::BestLocal => "local",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GlobalCheckpoint {
    pub round: u64,
    pub val_loss: f64,
    pub params: ParameterSet,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalCheckpoint {
    pub round: u64,
    pub val_loss: f64,
    /// The full model the site evaluates (shared and private parts).
    pub params: ParameterSet,
    /// Architecture of that model when it differs from the study's (APFL: the site's learnt
    /// mixing weight is part of the spec, not of the parameters); `None` = the study's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ModelSpec>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoints {
    pub best_global: Option<GlobalCheckpoint>,
    pub best_local: Vec<Option<LocalCheckpoint>>,
}

impl Checkpoints {
    pub fn new(n_sites: usize) -> Self {
        Self {
            best_global: None,
            best_local: vec![None; n_sites],
        }
    }

    pub(crate) fn offer_global(&mut self, round: u64, val_loss: f64, params: &ParameterSet) {
        if val_loss.is_finite()
            && self
                .best_global
                .as_ref()
                .is_none_or(|c| val_loss < c.val_loss)
        {
            self.best_global = Some(GlobalCheckpoint {
                round,
                val_loss,
                params: params.clone(),
            });
        }
    }

    pub(crate) fn offer_local(
        &mut self,
        site: usize,
        round: u64,
        val_loss: f64,
        params: &ParameterSet,
        spec: Option<&ModelSpec>,
    ) {
        if let Some(slot) = self.best_local.get_mut(site) {
            if val_loss.is_finite() && slot.as_ref().is_none_or(|c| val_loss < c.val_loss) {
                *slot = Some(LocalCheckpoint {
                    round,
                    val_loss,
                    params: params.clone(),
                    spec: spec.cloned(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_strictly_better_only() {
        let mut c = Checkpoints::new(1);
        let p = ParameterSet::new();
        c.offer_global(1, 0.5, &p);
        c.offer_global(2, 0.5, &p);
        c.offer_global(3, f64::NAN, &p);
        assert_eq!(c.best_global.as_ref().unwrap().round, 1);
        c.offer_local(0, 1, 0.9, &p, None);
        c.offer_local(0, 2, 0.4, &p, None);
        assert_eq!(c.best_local[0].as_ref().unwrap().round, 2);
    }
}
