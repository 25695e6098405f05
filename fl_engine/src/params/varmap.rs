//! `ParameterSet` <-> candle `VarMap`. Writes are validated in full before any variable
//! changes, so a set with one bad tensor never leaves a model half-updated.
//!
//! These copies happen at round boundaries. Within the step loop the optimiser works on the
//! variables' own buffers ([`with_values_mut`]) and reads gradients where backprop left them
//! ([`with_values`]), so a step copies no parameter out or back.
use std::cell::RefCell;
use std::collections::BTreeMap;

use candle_core::{CpuStorage, DType, Device, InplaceOp1, Layout, Storage, Tensor, Var};
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

/// Run `f` on the values of `t` (row-major), read in place when they are contiguous `f32` on
/// the CPU (no copy), copied out otherwise.
pub(crate) fn with_values<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> Result<R> {
    let t = t.contiguous()?; // a cheap handle when already contiguous
    {
        let (storage, layout) = t.storage_and_layout();
        if let (Storage::Cpu(CpuStorage::F32(v)), Some((a, b))) =
            (&*storage, layout.contiguous_offsets())
        {
            return Ok(f(&v[a..b]));
        }
    }
    Ok(f(&t.flatten_all()?.to_vec1::<f32>()?))
}

/// Run `f` on the values of `var` in its own buffer (contiguous `f32` on the CPU), so what
/// `f` writes is the variable's new value; on any other storage the values are copied out and
/// written back.
pub(crate) fn with_values_mut<R>(var: &Var, f: impl FnOnce(&mut [f32]) -> Result<R>) -> Result<R> {
    let t = var.as_tensor();
    if !(t.device().is_cpu() && t.dtype() == DType::F32 && t.is_contiguous()) {
        let mut values = t.flatten_all()?.to_vec1::<f32>()?;
        let out = f(&mut values)?;
        var.set(&Tensor::from_vec(values, t.shape(), t.device())?)?;
        return Ok(out);
    }
    let op = InPlace {
        f: RefCell::new(Some(f)),
        out: RefCell::new(None),
    };
    t.inplace_op1(&op)?;
    op.out.into_inner().unwrap_or_else(|| {
        Err(EngineError::InvalidConfig(
            "in-place update did not run".into(),
        ))
    })
}

/// candle's hook for writing into a tensor's storage.
struct InPlace<F, R> {
    f: RefCell<Option<F>>,
    out: RefCell<Option<Result<R>>>,
}

impl<F: FnOnce(&mut [f32]) -> Result<R>, R> InplaceOp1 for InPlace<F, R> {
    fn name(&self) -> &'static str {
        "in-place parameter update"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> candle_core::Result<()> {
        let (CpuStorage::F32(v), Some((a, b))) = (storage, layout.contiguous_offsets()) else {
            candle_core::bail!("in-place update needs contiguous f32 values")
        };
        if let Some(f) = self.f.borrow_mut().take() {
            *self.out.borrow_mut() = Some(f(&mut v[a..b]));
        }
        Ok(())
    }
}

fn poisoned() -> EngineError {
    EngineError::InvalidConfig("parameter store lock poisoned by a panicked thread".into())
}
