//! Large scratch buffers kept per thread from one training step to the next.
//!
//! A fused recurrent layer saves five (GRU) to seven (LSTM) times its output in activations
//! for the backward pass (6 MB for the gates alone of an LSTM with 256 units over 48 steps of
//! 32 rows) and drops them when the step's graph goes. Allocators hand blocks of that size
//! back to the kernel on free, so every step faulted them in and had the kernel zero them
//! again (6 % of an LSTM step in a profile). Buffers given back here are reused by the next
//! step on the same thread instead.
use std::cell::RefCell;

/// Buffers kept per thread: the four an LSTM layer saves, for two layers.
const KEPT: usize = 8;

thread_local! {
    static SPARE: RefCell<Vec<Vec<f32>>> = const { RefCell::new(Vec::new()) };
}

/// `len` zeros, in a kept buffer that can hold them where there is one.
pub(crate) fn zeroed(len: usize) -> Vec<f32> {
    // (an empty buffer, a GRU's unused `tanh(c)`, must not take a kept one out of the store)
    if len == 0 {
        return Vec::new();
    }
    let kept = SPARE.with(|spare| {
        let mut spare = spare.borrow_mut();
        // the smallest that fits, so that a small request leaves the large buffers
        let best = spare
            .iter()
            .enumerate()
            .filter(|(_, v)| v.capacity() >= len)
            .min_by_key(|(_, v)| v.capacity())
            .map(|(i, _)| i);
        best.map(|i| spare.swap_remove(i))
    });
    match kept {
        Some(mut v) => {
            v.clear();
            v.resize(len, 0.0);
            v
        }
        None => vec![0.0; len],
    }
}

/// Keeps `v` for a later [`zeroed`] on this thread (the largest [`KEPT`] buffers).
pub(crate) fn give_back(v: Vec<f32>) {
    if v.capacity() == 0 {
        return;
    }
    SPARE.with(|spare| {
        let mut spare = spare.borrow_mut();
        spare.push(v);
        if spare.len() > KEPT {
            let smallest = spare
                .iter()
                .enumerate()
                .min_by_key(|(_, v)| v.capacity())
                .map(|(i, _)| i);
            if let Some(i) = smallest {
                spare.swap_remove(i);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_comes_back_zeroed() {
        let mut v = zeroed(1000);
        v.iter_mut().for_each(|x| *x = 7.0);
        let at = v.as_ptr();
        give_back(v);
        let w = zeroed(600);
        assert_eq!(w.as_ptr(), at, "the kept buffer is reused");
        assert_eq!(w.len(), 600);
        assert!(w.iter().all(|&x| x == 0.0));
        // a request larger than every kept buffer gets a new one, an empty one none
        give_back(w);
        assert!(zeroed(0).capacity() == 0);
        assert_eq!(zeroed(5000).len(), 5000);
        let again = zeroed(600);
        assert_eq!(again.as_ptr(), at, "the empty request left it kept");
    }

    #[test]
    fn at_most_kept_buffers_stay() {
        for n in 1..=KEPT + 4 {
            give_back(vec![0.0; n * 10]);
        }
        let sizes: Vec<usize> = SPARE.with(|s| s.borrow().iter().map(|v| v.capacity()).collect());
        assert_eq!(sizes.len(), KEPT);
        assert!(
            sizes.iter().all(|&c| c > 40),
            "the smallest went: {sizes:?}"
        );
    }
}
