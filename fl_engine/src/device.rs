//! Where the engine computes. The CPU is the default and the only device of a default build;
//! with the `cuda` feature (candle's CUDA backend) a model can be built on an NVIDIA GPU with
//! [`crate::model::Net::new_on`]. The training loop, evaluation and record-level DP-SGD then
//! put their batches on the net's device; the fused CPU kernels (dense, recurrent, convolution,
//! GroupNorm) give way to candle's own operations there. The optimiser runs there too, with
//! its moments copied to the device once per local training run and back at its end (they are
//! checkpointed with the study); objective terms and DP-SGD still update on the host.
use candle_core::Device;

use crate::error::{EngineError, Result};

/// The smallest block of a CPU matrix product, in multiply-adds, that is split over rayon's
/// threads. candle hands every product to `gemm` with all of the pool's threads, and `gemm`
/// splits a block from 48·48·256 = 589,824 multiply-adds by default. On two cores that split
/// cost more than it saved up to the products of 1024-wide layers: waking the second thread
/// for a 32-row product of a 512/256 MLP (4.2M multiply-adds) made a two-thread training loop
/// 1.5-2.4x slower than a one-thread loop, and with this bound it runs as fast as one thread;
/// 2048-wide layers still gain from the split (docs/benchmarks.md, "Threads for small
/// products").
pub const SPLIT_PRODUCTS_FROM: usize = 16_000_000;

/// Sets [`SPLIT_PRODUCTS_FROM`] for the process (a setting of `gemm`, which candle's CPU
/// products run on), once, when the first model is built; a caller may set another bound
/// after that with `gemm::set_threading_threshold`.
pub(crate) fn bound_product_splitting() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| gemm::set_threading_threshold(SPLIT_PRODUCTS_FROM));
}

/// Sets the two environment variables through which candle (from 0.11) chooses its CPU threads,
/// each only where it is not already a positive number; without them candle 0.11 made the
/// engine's models train 1.4-6x slower than candle 0.9 did on a 2-core machine
/// (docs/benchmarks.md, "candle 0.11 against 0.9"):
///
/// - `RAYON_NUM_THREADS`, to the thread count rayon's global pool takes by default
///   (`std::thread::available_parallelism`). candle reads it for every matrix product, for
///   `gemm`'s threads, and where it is unset counts the physical cores instead, which on
///   Linux reads and parses `/proc/cpuinfo` on every product. Set, the products take the
///   same threads as under candle 0.9 (which counted the logical CPUs: the same number on a
///   machine without hyper-threads) and rayon's pool is as it would have been.
/// - `CANDLE_NUM_THREADS`, to 1. candle splits element-wise operations of 64Ki elements and
///   more over a pool of its own whose threads spin while they wait for work; beside the
///   engine's rayon threads (its fused kernels, sites trained side by side) they take cores
///   from them. With 1 that pool has no threads and such operations run on the calling
///   thread, as they did in candle 0.9.
///
/// Call it first thing in `main`, before the program starts threads: changing the
/// environment while another thread reads it is undefined behaviour on Linux (why `set_var`
/// is `unsafe` from Rust 2024 on). The engine's own programs and benches call it.
pub fn set_candle_threads() {
    let unset = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .is_none_or(|n| n == 0)
    };
    if unset("RAYON_NUM_THREADS") {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
    }
    if unset("CANDLE_NUM_THREADS") {
        std::env::set_var("CANDLE_NUM_THREADS", "1");
    }
}

/// Runs `op` compiled for the widest vector instructions this CPU has (AVX2 and FMA, or
/// AVX-512), chosen at run time. The engine is built for the baseline x86-64 so that one
/// binary runs on every x86-64 CPU, and the compiler vectorises its own loops with SSE2 (4
/// lanes, few shuffles). `op.with_simd` must be `#[inline(always)]`, and so must what it calls
/// in its loops: inlined into a function with those features enabled, the code is compiled
/// for them (a closure would not do: called from three such functions, it is compiled once,
/// for the baseline, and not inlined). `pulp` holds the `unsafe` that the call of such a
/// function needs (it checks the features first); the engine itself has none. Other
/// architectures run `op` as it is.
pub(crate) fn with_widest_vectors<Op: pulp::WithSimd>(op: Op) -> Op::Output {
    static ARCH: std::sync::OnceLock<pulp::Arch> = std::sync::OnceLock::new();
    ARCH.get_or_init(pulp::Arch::new).dispatch(op)
}

/// `cpu`, `cuda` (the first GPU) or `cuda:N`.
pub fn parse(name: &str) -> Result<Device> {
    let gpu = |ordinal: usize| {
        Device::new_cuda(ordinal).map_err(|e| {
            EngineError::InvalidConfig(format!(
                "device `{name}` is not available: {e} (the engine must be built with the \
                 `cuda` feature and the machine must have an NVIDIA driver)"
            ))
        })
    };
    match name {
        "cpu" => Ok(Device::Cpu),
        "cuda" => gpu(0),
        _ => match name.strip_prefix("cuda:").map(str::parse::<usize>) {
            Some(Ok(ordinal)) => gpu(ordinal),
            _ => Err(EngineError::InvalidConfig(format!(
                "unknown device `{name}`: expected cpu, cuda or cuda:N"
            ))),
        },
    }
}

/// `f` on a rayon pool of its own with `threads` threads: tests that compare a split over
/// threads with one thread.
#[cfg(test)]
pub(crate) fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool")
        .install(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_and_malformed_names() {
        assert!(parse("cpu").unwrap().is_cpu());
        for bad in ["gpu", "cuda:", "cuda:x", "CPU", ""] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains("unknown device"), "{bad}: {err}");
        }
    }

    #[test]
    fn building_a_model_bounds_product_splitting() {
        let spec = crate::model::ModelSpec::Mlp(crate::model::MlpConfig {
            inputs: 2,
            hidden: vec![3],
            outputs: 1,
            dropout: 0.0,
        });
        crate::model::Net::new(&spec, 0).unwrap();
        assert_eq!(gemm::get_threading_threshold(), SPLIT_PRODUCTS_FROM);
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn a_gpu_needs_the_cuda_feature() {
        let err = parse("cuda:0").unwrap_err().to_string();
        assert!(err.contains("`cuda` feature"), "{err}");
    }

    /// One forward and backward pass of each model family on the GPU against the CPU, on the
    /// same batch and initial values: the gradients agree up to float rounding (candle's CUDA
    /// kernels against the engine's fused CPU kernels). Every variable's largest relative
    /// difference is printed before the check, so a failure shows which layers disagree.
    #[cfg(feature = "cuda")]
    #[test]
    fn gradients_on_the_gpu_match_the_cpu() {
        use crate::model::{
            Backbone, Cell, CnnConfig, MaskLayout, ModelSpec, Net, Readout, SeqConfig,
        };
        use crate::train::LossKind;
        use rand::{Rng, RngExt, SeedableRng};
        use rand_chacha::ChaCha8Rng;

        let Ok(gpu) = parse("cuda") else {
            eprintln!("no GPU: skipped");
            return;
        };
        let cnn = |stages: Vec<usize>| ModelSpec::BackboneNet {
            body: Backbone::Cnn(CnnConfig {
                channels: 1,
                height: 8,
                width: 8,
                stages,
                groups: 4,
            }),
            outputs: 1,
        };
        let rnn = |cell| ModelSpec::BackboneNet {
            body: Backbone::Recurrent(SeqConfig {
                cell,
                time: 6,
                features: 3,
                hidden: 8,
                mask: MaskLayout::PerStep,
                readout: Readout::Last,
                layers: 1,
            }),
            outputs: 1,
        };
        let mut worst = 0.0f32;
        for (label, spec) in [
            ("cnn stride 1", cnn(vec![8])),
            ("cnn stride 1 and 2", cnn(vec![8, 16])),
            ("gru", rnn(Cell::Gru)),
            ("lstm", rnn(Cell::Lstm)),
        ] {
            let rows = 16;
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let mut x: Vec<f32> = (0..rows * spec.inputs())
                .map(|_| rng.random_range(-1.0..1.0))
                .collect();
            if let ModelSpec::BackboneNet {
                body: Backbone::Recurrent(c),
                ..
            } = &spec
            {
                // the per-step mask: present or missing, never in between
                let tf = c.time * c.features;
                for r in 0..rows {
                    for v in &mut x[r * spec.inputs() + tf..(r + 1) * spec.inputs()] {
                        *v = if *v > -0.5 { 1.0 } else { 0.0 };
                    }
                }
            }
            let labels: Vec<u32> = (0..rows as u32).map(|i| i % 2).collect();
            let grads = |device: &Device| {
                let net = Net::new_on(&spec, 7, device).unwrap();
                let logits = net
                    .forward(&net.input(&x, rows, spec.inputs()).unwrap(), None)
                    .unwrap();
                let store =
                    crate::model::backward(&LossKind::bce().compute(&logits, &labels).unwrap())
                        .unwrap();
                net.vars()
                    .iter()
                    .map(|(name, var)| {
                        let g = store.get(var.as_tensor()).expect("a gradient");
                        (
                            name.clone(),
                            g.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            let (on_cpu, on_gpu) = (grads(&Device::Cpu), grads(&gpu));
            for ((name, a), (_, b)) in on_cpu.iter().zip(&on_gpu) {
                let scale = a.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1e-12);
                let diff = a
                    .iter()
                    .zip(b)
                    .fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
                eprintln!(
                    "{label}: {name}: max |cpu - gpu| / max |cpu| = {:.2e}",
                    diff / scale
                );
                worst = worst.max(diff / scale);
            }
        }
        assert!(
            worst < 1e-4,
            "the GPU's gradients differ from the CPU's by {worst:.2e}"
        );
    }
}
