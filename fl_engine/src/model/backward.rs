//! The engine's backward pass: candle's, plus the weight gradients that fused dense layers
//! hand over directly.
//!
//! candle adds every gradient it receives into a fresh zero tensor of the parameter's size
//! (`GradStore::or_insert`, then `add`): for a dense weight that is an allocation, a pass of
//! zeros and a pass of addition the size of the weight, every step. At 512/256 hidden units
//! those two passes were 11 % of a training step; a 3072 × 3072 weight (37.7 MB, above
//! glibc's largest mmap threshold) is mapped, faulted in and unmapped twice more per step.
//! So a fused dense layer whose weight is a variable leaves the weight out of its graph node
//! and defers the weight's gradient here; [`backward`] puts it in the store when candle's
//! pass ends, added to any gradient the weight received through the graph. Results are the
//! same values (`0 + g` is `g`; a negative zero comes out negative).
use std::cell::RefCell;

use candle_core::backprop::GradStore;
use candle_core::Tensor;

thread_local! {
    /// Weight gradients deferred by the backward passes running on this thread. A pass that
    /// waits inside a product may run another pass on the same thread (rayon's work
    /// stealing): each takes only what was deferred after it started, and the inner one
    /// ends before the outer one goes on.
    static DEFERRED: RefCell<Vec<(Tensor, Tensor)>> = const { RefCell::new(Vec::new()) };
}

/// Gradients of `loss` with respect to every variable it depends on, as candle's
/// `Tensor::backward` would give them. Every backward pass of the engine goes through here
/// (clippy.toml refuses candle's own), so no deferred gradient is lost.
pub fn backward(loss: &Tensor) -> candle_core::Result<GradStore> {
    let start = DEFERRED.with_borrow(Vec::len);
    #[allow(clippy::disallowed_methods)]
    let result = loss.backward();
    let deferred: Vec<(Tensor, Tensor)> =
        DEFERRED.with_borrow_mut(|d| d.drain(start.min(d.len())..).collect());
    let mut grads = result?;
    for (weight, grad) in deferred {
        let grad = match grads.remove(&weight) {
            Some(earlier) => (earlier + grad)?,
            None => grad,
        };
        grads.insert(&weight, grad);
    }
    Ok(grads)
}

/// Hands `grad` to the backward pass running on this thread as (part of) the gradient of
/// the variable `weight`.
pub(crate) fn defer_weight_gradient(weight: &Tensor, grad: Tensor) {
    DEFERRED.with_borrow_mut(|d| d.push((weight.clone(), grad)));
}
