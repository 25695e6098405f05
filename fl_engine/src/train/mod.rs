//! Local training at one site: losses, optimisers, the step loop and evaluation, and the
//! record-level DP-SGD step (`dp_step`) that replaces the plain step when configured.
mod dp_step;
mod local;
mod loss;
mod optim;

pub(crate) use dp_step::missing_noise;
pub use dp_step::{dp_train_step, DpStepReport, PoissonBatch, RecordDp};
pub use local::{
    apply_gradient, batch_gradient, choose_threshold_on, evaluate, evaluate_with, predict_scores,
    steps_in, train_local, train_step, train_step_with, BatchGradient, BatchObjective, Batcher,
    Budget, Correction, EvalOptions, LocalObjective, Proximal, TrainConfig, TrainReport,
};
pub use loss::LossKind;
pub use optim::{Optimizer, OptimizerConfig};
