//! `ParameterSet` <-> candle `VarMap`. Writes are validated in full before any variable
//! changes, so a set with one bad tensor never leaves a model half-updated.
use std::collections::BTreeMap;

use candle_core::{Device, Tensor};
use candle_nn::VarMap;

use super::{check_shape, ParameterSet, TensorData};
use crate::error::{EngineError, Result};

impl ParameterSet {
    /// Snapshot the variables of a `VarMap` (all of them).
    pub fn from_varmap(varmap: &VarMap) -> Result<ParameterSet> {
        let data = varmap.data().lock().map_err(|_| poisoned())?;
        let mut entries = BTreeMap::new();
        for (name, var) in data.iter() {
            let t = var.as_tensor();
            let values = t.flatten_all()?.to_vec1::<f32>()?;
            entries.insert(
                name.clone(),
                TensorData {
                    shape: t.dims().to_vec(),
                    values,
                },
            );
        }
        Ok(ParameterSet { entries })
    }

    /// Write these values into an existing `VarMap`. All names and shapes are validated
    /// before any variable changes, so a bad set leaves the model untouched.
    pub fn write_to_varmap(&self, varmap: &VarMap) -> Result<()> {
        let data = varmap.data().lock().map_err(|_| poisoned())?;
        for (name, t) in &self.entries {
            let var = data
                .get(name)
                .ok_or_else(|| EngineError::UnexpectedParameter(name.clone()))?;
            check_shape(name, var.as_tensor().dims(), &t.shape)?;
        }
        for (name, t) in &self.entries {
            if let Some(var) = data.get(name) {
                let src = Tensor::from_slice(&t.values, t.shape.as_slice(), var.device())?;
                var.set(&src)?;
            }
        }
        Ok(())
    }

    /// A fresh `VarMap` holding these values (on `device`).
    pub fn to_varmap(&self, device: &Device) -> Result<VarMap> {
        let varmap = VarMap::new();
        {
            let mut data = varmap.data().lock().map_err(|_| poisoned())?;
            for (name, t) in &self.entries {
                let tensor = Tensor::from_slice(&t.values, t.shape.as_slice(), device)?;
                data.insert(name.clone(), candle_core::Var::from_tensor(&tensor)?);
            }
        }
        Ok(varmap)
    }
}

fn poisoned() -> EngineError {
    EngineError::InvalidConfig("parameter store lock poisoned by a panicked thread".into())
}
