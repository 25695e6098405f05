//! Federated-learning engine: models as named parameter sets on candle, local training,
//! federated strategies (client part + server part), differential privacy and accounting.
//!
//! The crate is organised like candle-nn: one concept per module, flat re-exports below.
//! A study is driven either by the in-process [`sim`] runner or, site by site, by calling the
//! [`strategy`] client and server parts directly; both speak [`ParameterSet`].
#![forbid(unsafe_code)]

pub mod data;
pub mod device;
pub mod dp;
pub mod error;
pub mod io;
pub mod metrics;
pub mod model;
pub mod params;
pub mod repro;
pub mod request;
pub mod seeds;
pub mod sim;
pub mod stats;
pub mod strategy;
pub mod train;

pub use error::{EngineError, Result};
pub use io::{load_safetensors, save_safetensors, save_safetensors_with, ParameterMetadata};
pub use metrics::{choose_threshold, BinaryMetrics, MetricSummary, SurvivalMetrics, ThresholdRule};
pub use model::{ModelSpec, Net};
pub use params::{ParameterSet, Selector, TensorData};
pub use strategy::{ClientStrategy, FitIns, FitRes, ServerStrategy, StrategyConfig};
pub use train::{LossKind, OptimizerConfig, RecordDp, TrainConfig};
