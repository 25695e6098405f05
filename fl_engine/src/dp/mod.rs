//! Differential privacy: clipping, noise, DP aggregation, DP-SGD and the RDP accountant.
//!
//! ```text
//! DP-FedAvg (client level):  Δ = (Σ_i clip_C(u_i) + N(0, (σC)² I)) / m
//! DP-SGD (record level):     g = (Σ_{i∈B} clip_C(∇ℓ_i) + N(0, (σC)² I)) / (qN),  B ~ Poisson(q)
//! Accounting:                RDP of the sampled Gaussian (Mironov, Talwar, Zhang 2019),
//!                            composed over steps, converted to (ε, δ)
//! ```
//!
//! Updates are flat `f32` slices (one model's parameters in canonical order), one per site.
//! Noise comes from ChaCha20 ([`NoiseRng`]) and is released on a power-of-two grid
//! ([`SnappedGaussian`]) so that floating-point artefacts cannot reveal the input
//! (Mironov 2012). The accountant ([`RdpAccountant`]) is meant to be asked *before* a round:
//! [`RdpAccountant::epsilon_after`] / [`RdpAccountant::try_spend`] refuse rounds that would
//! overspend a budget.

mod accountant;
mod aggregate;
mod clip;
mod conversion;
mod dpsgd;
mod error;
mod noise;
mod rdp;
mod rng;

pub use accountant::{sigma_for_target_epsilon, RdpAccountant, SampledGaussian, MAX_SIGMA};
pub use aggregate::{
    dp_fedavg, dp_fedavg_into, weighted_average, weighted_average_into, DpAggregate,
    DpAggregationReport, DpFedAvgConfig, CHUNK,
};
pub use clip::{clip_factor, clip_to_norm, l2_norm};
pub use conversion::{rdp_to_epsilon, PrivacySpent, RdpConversion};
pub use dpsgd::{poisson_subsample, privatize_gradient_tensor, privatize_gradients, DpSgdConfig};
pub use error::{DpError, Result};
pub use noise::SnappedGaussian;
pub use rdp::{default_orders, rdp_sampled_gaussian, MAX_ORDER};
pub use rng::NoiseRng;
