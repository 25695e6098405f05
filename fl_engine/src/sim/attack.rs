//! Byzantine attack simulators for robustness studies, applied by the [`Simulation`] to
//! chosen sites ([`Simulation::with_attacks`]).
//!
//! Model poisoning acts on the site's update of the shared parameters, `u = w_k - w` (w the
//! global model the round started from), after honest local training; the site then reports
//! `w + u'`:
//!
//! ```text
//! SignFlip { scale: s }               u' = -s u
//! Scale { factor: s }                 u' = s u
//! GaussianNoise { std, replace }      u' = u + N(0, std^2 I)   or, with replace, N(0, std^2 I)
//! ```
//!
//! Data poisoning ([`Attack::LabelFlip`]) relabels the site's *training* rows once, before any
//! training, `y -> classes - 1 - y` (binary: `1 - y`); its validation and test rows stay
//! honest, so the study's metrics still measure the truth. Extras beside the model (SCAFFOLD's
//! control-variate change) and the site's private parameters are left alone.
//!
//! Gaussian noise is drawn from ChaCha8 seeded with `SHA-256(tag || sim seed || site || round)`,
//! so an attacked study is as reproducible, and as resumable bit for bit, as an honest one.
//! The attacked update is still validated by the server like any other: an attack that
//! produces non-finite values makes the round fail instead of corrupting the model.
//!
//! [`Simulation`]: super::Simulation
//! [`Simulation::with_attacks`]: super::Simulation::with_attacks
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::data::Dataset;
use crate::error::{EngineError, Result};
use crate::params::ParameterSet;
use crate::strategy::FitRes;

/// One simulated Byzantine behaviour.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Attack {
    /// Report `w - scale (w_k - w)`: the honest update reversed and amplified.
    SignFlip { scale: f32 },
    /// Report `w + factor (w_k - w)`.
    Scale { factor: f32 },
    /// Add N(0, std^2) to every coordinate of the update, or send pure noise (`replace`).
    GaussianNoise { std: f32, replace: bool },
    /// Train on labels `classes - 1 - y` (binary models: `classes = 2`).
    LabelFlip { classes: u32 },
}

impl Attack {
    /// Rejects non-finite or meaningless parameters.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(EngineError::InvalidConfig(format!("attack: {what}")));
        match *self {
            Attack::SignFlip { scale } if !(scale.is_finite() && scale >= 0.0) => {
                bad("sign-flip scale must be finite and >= 0")
            }
            Attack::Scale { factor } if !factor.is_finite() => bad("scale factor must be finite"),
            Attack::GaussianNoise { std, .. } if !(std.is_finite() && std >= 0.0) => {
                bad("noise std must be finite and >= 0")
            }
            Attack::LabelFlip { classes } if classes < 2 => bad("label flip needs >= 2 classes"),
            _ => Ok(()),
        }
    }

    /// True for attacks on the training data rather than on the update.
    pub fn poisons_data(&self) -> bool {
        matches!(self, Attack::LabelFlip { .. })
    }

    /// The site's training data under this attack (unchanged for model-poisoning attacks).
    pub fn poison(&self, data: &Dataset) -> Result<Dataset> {
        match *self {
            Attack::LabelFlip { classes } => {
                let labels = data
                    .labels()
                    .iter()
                    .map(|&y| {
                        if y < classes {
                            Ok(classes - 1 - y)
                        } else {
                            Err(EngineError::InvalidConfig(format!(
                                "label flip over {classes} classes met label {y}"
                            )))
                        }
                    })
                    .collect::<Result<Vec<u32>>>()?;
                Dataset::new(data.n_features(), data.features().to_vec(), labels)
            }
            _ => Ok(data.clone()),
        }
    }

    /// The attacked update `u'` for the honest update `u` (`site`, `round` and the study's
    /// `seed` fix the noise stream).
    pub fn corrupt_update(&self, u: &[f32], seed: u64, site: usize, round: u64) -> Vec<f32> {
        match *self {
            Attack::SignFlip { scale } => u.iter().map(|v| -scale * v).collect(),
            Attack::Scale { factor } => u.iter().map(|v| factor * v).collect(),
            Attack::GaussianNoise { std, replace } => {
                let mut rng = attack_rng(seed, site, round);
                u.iter()
                    .map(|v| {
                        let z: f64 = StandardNormal.sample(&mut rng);
                        let noise = (std as f64 * z) as f32;
                        if replace {
                            noise
                        } else {
                            v + noise
                        }
                    })
                    .collect()
            }
            Attack::LabelFlip { .. } => u.to_vec(),
        }
    }

    /// Rewrites `res.params` as `global + u'` with `u = res.params - global`.
    pub(crate) fn corrupt(
        &self,
        res: &mut FitRes,
        global: &ParameterSet,
        seed: u64,
        site: usize,
        round: u64,
    ) -> Result<()> {
        if self.poisons_data() {
            return Ok(());
        }
        global.check_compatible(&res.params)?;
        let base = global.to_flat();
        let u: Vec<f32> = res
            .params
            .to_flat()
            .iter()
            .zip(&base)
            .map(|(w, g)| w - g)
            .collect();
        let bad = self.corrupt_update(&u, seed, site, round);
        let next: Vec<f32> = base.iter().zip(&bad).map(|(g, v)| g + v).collect();
        res.params = ParameterSet::from_flat(global, &next)?;
        Ok(())
    }
}

/// ChaCha8 stream of the attack on `site` in `round`.
fn attack_rng(seed: u64, site: usize, round: u64) -> ChaCha8Rng {
    let mut h = Sha256::new();
    h.update(b"fl_engine/sim/attack");
    h.update(seed.to_le_bytes());
    h.update((site as u64).to_le_bytes());
    h.update(round.to_le_bytes());
    ChaCha8Rng::from_seed(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_attacks_by_hand() {
        let u = [1.0f32, -2.0];
        assert_eq!(
            Attack::SignFlip { scale: 10.0 }.corrupt_update(&u, 0, 0, 1),
            vec![-10.0, 20.0]
        );
        assert_eq!(
            Attack::Scale { factor: 3.0 }.corrupt_update(&u, 0, 0, 1),
            vec![3.0, -6.0]
        );
        let noisy = Attack::GaussianNoise {
            std: 1.0,
            replace: false,
        };
        let a = noisy.corrupt_update(&u, 7, 2, 3);
        assert_eq!(a, noisy.corrupt_update(&u, 7, 2, 3));
        assert_ne!(a, noisy.corrupt_update(&u, 7, 2, 4));
        assert_ne!(a, noisy.corrupt_update(&u, 7, 3, 3));
        let pure = Attack::GaussianNoise {
            std: 1.0,
            replace: true,
        };
        // same stream, so replace = noisy - u
        let b = pure.corrupt_update(&u, 7, 2, 3);
        for ((x, y), v) in a.iter().zip(&b).zip(&u) {
            assert!((x - v - y).abs() < 1e-6);
        }
    }

    #[test]
    fn noise_has_the_requested_spread() {
        let u = vec![0.0f32; 20_000];
        let out = Attack::GaussianNoise {
            std: 2.0,
            replace: false,
        }
        .corrupt_update(&u, 1, 0, 1);
        let var = out.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / u.len() as f64;
        assert!((var.sqrt() - 2.0).abs() < 0.05, "std {}", var.sqrt());
    }

    #[test]
    fn corrupt_rewrites_the_reported_model_around_the_global() {
        let mut global = ParameterSet::new();
        global.insert("w", vec![2], vec![1.0, 1.0]).unwrap();
        let mut params = ParameterSet::new();
        params.insert("w", vec![2], vec![1.5, 0.0]).unwrap();
        let mut res = FitRes {
            site: "s".into(),
            num_examples: 3,
            params,
            extras: ParameterSet::new(),
            report: Default::default(),
        };
        // u = (0.5, -1); sign flip with s = 2: u' = (-1, 2) -> w = (0, 3)
        Attack::SignFlip { scale: 2.0 }
            .corrupt(&mut res, &global, 0, 0, 1)
            .unwrap();
        assert_eq!(res.params.to_flat(), vec![0.0, 3.0]);
    }

    #[test]
    fn label_flip_and_validation() {
        let data = Dataset::new(1, vec![0.0, 1.0, 2.0], vec![0, 1, 2]).unwrap();
        let flipped = Attack::LabelFlip { classes: 3 }.poison(&data).unwrap();
        assert_eq!(flipped.labels(), &[2, 1, 0]);
        assert_eq!(flipped.features(), data.features());
        assert!(Attack::LabelFlip { classes: 2 }.poison(&data).is_err());
        assert!(Attack::LabelFlip { classes: 1 }.validate().is_err());
        assert!(Attack::SignFlip { scale: f32::NAN }.validate().is_err());
        assert!(Attack::Scale {
            factor: f32::INFINITY
        }
        .validate()
        .is_err());
        assert!(Attack::GaussianNoise {
            std: -1.0,
            replace: true
        }
        .validate()
        .is_err());
        assert!(Attack::Scale { factor: -3.0 }.validate().is_ok());
    }
}
