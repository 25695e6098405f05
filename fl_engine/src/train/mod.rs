//! Local training at one site: losses, optimisers, the step loop and evaluation.
mod local;
mod loss;
mod optim;

pub use local::{
    evaluate, predict_scores, steps_in, train_local, train_step, Batcher, Budget, Correction,
    LocalObjective, Proximal, TrainConfig, TrainReport,
};
pub use loss::LossKind;
pub use optim::{Optimizer, OptimizerConfig};
