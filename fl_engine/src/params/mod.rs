//! `ParameterSet`: a model's parameters as an ordered map name -> (shape, f32 values).
//!
//! Names are the candle `VarBuilder` paths (`global.fc.weight`, `head.fc.bias`, ...), so a
//! strategy addresses "everything", "the shared backbone" or "the head" with a [`Selector`].
//! Iteration is always in sorted-name order; that order defines the flat view used by
//! aggregators (`to_flat` / `from_flat`) and the canonical bytes behind the digest, so two
//! processes that agree on names agree on every byte.
mod arith;
mod varmap;

pub(crate) use varmap::{with_values, with_values_mut};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{EngineError, Result};

/// One tensor's values, row-major.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorData {
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
}

impl TensorData {
    pub fn new(shape: Vec<usize>, values: Vec<f32>) -> Result<Self> {
        let n: usize = shape.iter().product();
        if n != values.len() {
            return Err(EngineError::LengthMismatch {
                expected: n,
                found: values.len(),
            });
        }
        Ok(Self { shape, values })
    }
}

/// Name segment of site-local state: BatchNorm running statistics under FedBN semantics
/// (Li et al. 2021), e.g. `body.norm0.bn_stats.running_mean`. No [`Selector`] matches such a name,
/// so it is never sent, aggregated (nor passed through a server optimiser) or overwritten by a
/// received model; it stays in the site's net, snapshots and checkpoints.
pub const SITE_LOCAL_STATE: &str = "bn_stats.";

/// Whether `name` is site-local state (see [`SITE_LOCAL_STATE`]).
pub fn is_site_local_state(name: &str) -> bool {
    name.contains(SITE_LOCAL_STATE)
}

/// Which parameters a strategy talks about (never site-local state, see
/// [`SITE_LOCAL_STATE`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Selector {
    /// Every parameter of the model.
    All,
    /// Parameters whose name starts with one of these prefixes (e.g. `global.`).
    Prefixes(Vec<String>),
}

impl Selector {
    pub fn prefix(p: &str) -> Self {
        Selector::Prefixes(vec![p.to_string()])
    }

    pub fn matches(&self, name: &str) -> bool {
        if is_site_local_state(name) {
            return false;
        }
        match self {
            Selector::All => true,
            Selector::Prefixes(ps) => ps.iter().any(|p| name.starts_with(p.as_str())),
        }
    }
}

/// Named parameters in canonical (sorted) order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ParameterSet {
    entries: BTreeMap<String, TensorData>,
}

impl ParameterSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add or replace one tensor; the value count must match the shape.
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        shape: Vec<usize>,
        values: Vec<f32>,
    ) -> Result<()> {
        self.entries
            .insert(name.into(), TensorData::new(shape, values)?);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&TensorData> {
        self.entries.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &TensorData)> {
        self.entries.iter()
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut TensorData)> {
        self.entries.iter_mut()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of scalar values over all tensors.
    pub fn num_values(&self) -> usize {
        self.entries.values().map(|t| t.values.len()).sum()
    }

    /// The subset named by `selector` (copies).
    pub fn select(&self, selector: &Selector) -> ParameterSet {
        let entries = self
            .entries
            .iter()
            .filter(|(k, _)| selector.matches(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        ParameterSet { entries }
    }

    /// Replace the values of the tensors present in `other`; every name in `other` must
    /// exist here with the same shape, so a partial update can never add stray tensors.
    pub fn overlay(&mut self, other: &ParameterSet) -> Result<()> {
        for (name, t) in &other.entries {
            let own = self
                .entries
                .get(name)
                .ok_or_else(|| EngineError::UnexpectedParameter(name.clone()))?;
            check_shape(name, &own.shape, &t.shape)?;
        }
        for (name, t) in &other.entries {
            if let Some(own) = self.entries.get_mut(name) {
                own.values.clone_from(&t.values);
            }
        }
        Ok(())
    }

    /// Fail unless `other` has exactly the same names and shapes.
    pub fn check_compatible(&self, other: &ParameterSet) -> Result<()> {
        for (name, t) in &other.entries {
            let own = self
                .entries
                .get(name)
                .ok_or_else(|| EngineError::UnexpectedParameter(name.clone()))?;
            check_shape(name, &own.shape, &t.shape)?;
        }
        if let Some(name) = self
            .entries
            .keys()
            .find(|k| !other.entries.contains_key(*k))
        {
            return Err(EngineError::MissingParameter(name.clone()));
        }
        Ok(())
    }

    /// Fail on the first NaN or infinity.
    pub fn ensure_finite(&self) -> Result<()> {
        for (name, t) in &self.entries {
            if t.values.iter().any(|v| !v.is_finite()) {
                return Err(EngineError::NonFinite(name.clone()));
            }
        }
        Ok(())
    }

    /// All values concatenated in canonical name order.
    pub fn to_flat(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.num_values());
        for t in self.entries.values() {
            out.extend_from_slice(&t.values);
        }
        out
    }

    /// Rebuild a set with `template`'s names and shapes from a flat vector.
    pub fn from_flat(template: &ParameterSet, flat: &[f32]) -> Result<ParameterSet> {
        let expected = template.num_values();
        if flat.len() != expected {
            return Err(EngineError::LengthMismatch {
                expected,
                found: flat.len(),
            });
        }
        let mut offset = 0;
        let mut entries = BTreeMap::new();
        for (name, t) in &template.entries {
            let n = t.values.len();
            let values = flat[offset..offset + n].to_vec();
            offset += n;
            entries.insert(
                name.clone(),
                TensorData {
                    shape: t.shape.clone(),
                    values,
                },
            );
        }
        Ok(ParameterSet { entries })
    }

    /// Canonical bytes: per tensor in name order, name length (u64 LE), name, rank (u64 LE),
    /// dims (u64 LE each), values (f32 LE). Independent of serialisation format.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.num_values() * 4 + self.len() * 64);
        for (name, t) in &self.entries {
            out.extend_from_slice(&(name.len() as u64).to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&(t.shape.len() as u64).to_le_bytes());
            for d in &t.shape {
                out.extend_from_slice(&(*d as u64).to_le_bytes());
            }
            for v in &t.values {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    /// Hex SHA-256 of the canonical bytes.
    pub fn digest(&self) -> String {
        hex::encode(Sha256::digest(self.canonical_bytes()))
    }
}

pub(crate) fn check_shape(name: &str, expected: &[usize], found: &[usize]) -> Result<()> {
    if expected != found {
        return Err(EngineError::ShapeMismatch {
            name: name.to_string(),
            expected: expected.to_vec(),
            found: found.to_vec(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn set(pairs: &[(&str, Vec<usize>, Vec<f32>)]) -> ParameterSet {
        let mut p = ParameterSet::new();
        for (n, s, v) in pairs {
            p.insert(*n, s.clone(), v.clone()).unwrap();
        }
        p
    }

    #[test]
    fn flat_view_is_in_sorted_name_order_and_round_trips() {
        let p = set(&[("b", vec![2], vec![3., 4.]), ("a", vec![1], vec![1.])]);
        assert_eq!(p.to_flat(), vec![1., 3., 4.]);
        let q = ParameterSet::from_flat(&p, &[9., 8., 7.]).unwrap();
        assert_eq!(q.get("b").unwrap().values, vec![8., 7.]);
        assert!(matches!(
            ParameterSet::from_flat(&p, &[1.0]),
            Err(EngineError::LengthMismatch {
                expected: 3,
                found: 1
            })
        ));
    }

    #[test]
    fn no_selector_matches_site_local_state() {
        let p = set(&[
            ("global.norm0.bn_stats.running_mean", vec![1], vec![0.]),
            ("global.norm0.weight", vec![1], vec![1.]),
        ]);
        for sel in [Selector::All, Selector::prefix("global.")] {
            let names: Vec<_> = p.select(&sel).names().map(str::to_string).collect();
            assert_eq!(names, vec!["global.norm0.weight"]);
        }
    }

    #[test]
    fn selector_picks_prefixes_and_overlay_rejects_strangers() {
        let mut p = set(&[
            ("global.w", vec![1], vec![1.]),
            ("head.w", vec![1], vec![2.]),
        ]);
        let g = p.select(&Selector::prefix("global."));
        assert_eq!(g.names().collect::<Vec<_>>(), vec!["global.w"]);
        let stranger = set(&[("other", vec![1], vec![0.])]);
        assert!(matches!(
            p.overlay(&stranger),
            Err(EngineError::UnexpectedParameter(_))
        ));
        let wrong_shape = set(&[("head.w", vec![2], vec![0., 0.])]);
        assert!(matches!(
            p.overlay(&wrong_shape),
            Err(EngineError::ShapeMismatch { .. })
        ));
        p.overlay(&set(&[("head.w", vec![1], vec![5.])])).unwrap();
        assert_eq!(p.get("head.w").unwrap().values, vec![5.]);
    }

    #[test]
    fn varmap_round_trip_and_atomic_write() {
        let p = set(&[
            ("fc.weight", vec![1, 2], vec![0.5, -1.]),
            ("fc.bias", vec![1], vec![2.]),
        ]);
        let vm = p.to_varmap(&Device::Cpu).unwrap();
        assert_eq!(ParameterSet::from_varmap(&vm).unwrap(), p);
        let bad = set(&[
            ("fc.bias", vec![1], vec![7.]),
            ("fc.weight", vec![2], vec![0., 0.]),
        ]);
        assert!(bad.write_to_varmap(&vm).is_err());
        // the valid tensor in the bad set must not have been written either
        assert_eq!(ParameterSet::from_varmap(&vm).unwrap(), p);
    }

    #[test]
    fn digest_changes_with_any_value_and_detects_nan() {
        let p = set(&[("a", vec![1], vec![1.])]);
        let q = set(&[("a", vec![1], vec![1.0000001])]);
        assert_ne!(p.digest(), q.digest());
        assert_eq!(p.digest().len(), 64);
        let n = set(&[("a", vec![1], vec![f32::NAN])]);
        assert!(matches!(n.ensure_finite(), Err(EngineError::NonFinite(_))));
    }
}
