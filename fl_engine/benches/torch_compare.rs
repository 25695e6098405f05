//! The engine's training loop against PyTorch's on the same models, rows, batch, optimiser,
//! loss, dropout and thread count.
//!
//! `cargo bench -p fl_engine --bench torch_compare -- --threads 1` (and `--threads 2`). For
//! each case the driver writes the rows to a temporary file, runs `benches/torch_side.py`
//! (the PyTorch side, with the interpreter `TORCH_PYTHON` names, default `python3`) and the
//! engine's [`train_local`] in turn, twice, so load drift on a shared machine hits both; each
//! side times whole loops (`epochs` epochs of shuffled mini-batches: forward, loss, backward,
//! optimiser step, batch loss read back) after one warm-up loop, and the ratio is PyTorch's
//! median loop time over the engine's (above 1: the engine is faster).
//!
//! Threads: the engine's matrix products and rayon pool are fixed to `--threads` (candle reads
//! `RAYON_NUM_THREADS`), PyTorch's with `torch.set_num_threads` (one inter-op thread).
//!
//! Options: `--threads N`, `--repeats N` (timed loops per side and turn, default 5),
//! `--only a,b` (cases whose name contains one of these), `--device cuda` (both sides on the
//! first GPU; the engine needs `--features cuda`, PyTorch a CUDA build), `--engine-only` (the
//! engine's loops alone, for profiling it without the PyTorch processes: the PyTorch columns
//! and the ratio stay empty).
/// The allocator of the `ehds-gateway` binary, whose node agent runs this training loop in
/// production (see its Cargo.toml for why).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::Write;
use std::process::Command;
use std::time::Instant;

use candle_core::Device;
use fl_engine::data::{heart_disease, Dataset, Standardizer};
use fl_engine::model::{
    Backbone, Cell, CnnConfig, MaskLayout, MlpConfig, ModelSpec, Net, Readout, SeqConfig,
};
use fl_engine::train::{train_local, Budget, LossKind, Optimizer, OptimizerConfig, TrainConfig};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

const BATCH: usize = 32;
/// FL-EHDS's MLP setting: Adam at lr 0.01, 3 local epochs, dropout after each hidden layer.
const MLP_LR: f64 = 0.01;
const MLP_DROPOUT: f32 = 0.2;

struct Case {
    name: String,
    spec: ModelSpec,
    /// The same model for the PyTorch side.
    torch_model: Value,
    data: Dataset,
    epochs: usize,
    lr: f64,
    repeats: usize,
}

/// All four hospitals' rows (FLamby preprocessing, 740 rows), standardised, `copies` times.
fn heart_rows(copies: usize) -> Dataset {
    let centers = heart_disease::load().unwrap();
    let parts: Vec<&Dataset> = centers.iter().flat_map(|c| [&c.train, &c.test]).collect();
    let all = Dataset::concat(&parts).unwrap();
    let all = Standardizer::fit(&all).unwrap().apply(&all).unwrap();
    Dataset::concat(&vec![&all; copies]).unwrap()
}

/// Uniform values in [-1, 1); with `mask_from`, the columns from there on are 0/1 presence
/// flags (80 % present).
fn random_rows(rows: usize, width: usize, mask_from: Option<usize>) -> Dataset {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut x = Vec::with_capacity(rows * width);
    for _ in 0..rows {
        for c in 0..width {
            x.push(match mask_from {
                Some(m) if c >= m => f32::from(rng.random_bool(0.8)),
                _ => rng.random_range(-1.0f32..1.0),
            });
        }
    }
    let y = (0..rows).map(|i| (i % 2) as u32).collect();
    Dataset::new(width, x, y).unwrap()
}

fn mlp_case(name: &str, hidden: &[usize], copies: usize, epochs: usize, repeats: usize) -> Case {
    Case {
        name: name.to_owned(),
        spec: ModelSpec::Mlp(MlpConfig {
            inputs: heart_disease::N_FEATURES,
            hidden: hidden.to_vec(),
            outputs: 1,
            dropout: MLP_DROPOUT,
        }),
        torch_model: json!({"kind": "mlp", "inputs": heart_disease::N_FEATURES,
            "hidden": hidden, "dropout": MLP_DROPOUT}),
        data: heart_rows(copies),
        epochs,
        lr: MLP_LR,
        repeats,
    }
}

fn rnn_case(cell: Cell, hidden: usize, steps: usize, repeats: usize) -> Case {
    let (time, features) = (48, 16);
    let spec = ModelSpec::BackboneNet {
        body: Backbone::Recurrent(SeqConfig {
            cell,
            time,
            features,
            hidden,
            mask: MaskLayout::PerStep,
            readout: Readout::Last,
            layers: 1,
        }),
        outputs: 1,
    };
    let name = match cell {
        Cell::Gru => "gru",
        Cell::Lstm => "lstm",
    };
    Case {
        name: format!("{name}_t{time}_f{features}_h{hidden}"),
        data: random_rows(BATCH * steps, spec.inputs(), Some(time * features)),
        spec,
        torch_model: json!({"kind": "recurrent", "cell": name, "time": time,
            "features": features, "hidden": hidden}),
        epochs: 1,
        lr: 1e-3,
        repeats,
    }
}

fn cnn_case(channels: usize, side: usize, stages: &[usize], steps: usize, repeats: usize) -> Case {
    let spec = ModelSpec::BackboneNet {
        body: Backbone::Cnn(CnnConfig {
            channels,
            height: side,
            width: side,
            stages: stages.to_vec(),
            groups: 4,
        }),
        outputs: 1,
    };
    let widths: Vec<String> = stages.iter().map(|s| s.to_string()).collect();
    Case {
        name: format!("cnn_{channels}x{side}x{side}_{}", widths.join("_")),
        data: random_rows(BATCH * steps, spec.inputs(), None),
        spec,
        torch_model: json!({"kind": "cnn", "channels": channels, "side": side,
            "stages": stages, "groups": 4}),
        epochs: 1,
        lr: 1e-3,
        repeats,
    }
}

fn cases(repeats: usize) -> Vec<Case> {
    let r = repeats;
    vec![
        mlp_case("mlp_64_32_heart", &[64, 32], 1, 3, r),
        mlp_case("mlp_512_256_heart", &[512, 256], 1, 3, r),
        mlp_case("mlp_512_256_heart_x10", &[512, 256], 10, 1, r),
        mlp_case("mlp_1024_1024_heart", &[1024, 1024], 1, 1, r),
        mlp_case("mlp_2048_2048_heart", &[2048, 2048], 1, 1, r.min(3)),
        mlp_case("mlp_3072_3072_heart", &[3072, 3072], 1, 1, r.min(3)),
        rnn_case(Cell::Gru, 64, 10, r),
        rnn_case(Cell::Lstm, 64, 10, r),
        rnn_case(Cell::Gru, 256, 5, r.min(3)),
        rnn_case(Cell::Lstm, 256, 5, r.min(3)),
        // about 1.1M parameters: past the size the speed goal covers
        rnn_case(Cell::Lstm, 512, 3, r.min(3)),
        cnn_case(1, 8, &[16, 32], 10, r),
        cnn_case(3, 32, &[16, 32, 64], 5, r.min(3)),
        cnn_case(3, 32, &[32, 64, 128], 3, r.min(3)),
        // about 1.2M parameters
        cnn_case(3, 32, &[64, 128, 256], 2, r.min(3)),
    ]
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// PyTorch's parameter count and loop times (seconds).
fn torch_side(
    case: &Case,
    threads: usize,
    device: &str,
    rows_file: &std::path::Path,
) -> (usize, Vec<f64>) {
    let spec = json!({
        "device": device,
        "model": case.torch_model,
        "inputs": case.data.n_features(),
        "rows": case.data.len(),
        "batch": BATCH,
        "epochs": case.epochs,
        "lr": case.lr,
        "threads": threads,
        "warmup": 1,
        "repeats": case.repeats,
    });
    let python = std::env::var("TORCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/torch_side.py");
    let out = Command::new(&python)
        .arg(script)
        .arg(spec.to_string())
        .arg(rows_file)
        .env("OMP_NUM_THREADS", threads.to_string())
        .env("MKL_NUM_THREADS", threads.to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    if !out.status.success() {
        panic!(
            "PyTorch side failed on {}: {}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: Value = serde_json::from_slice(&out.stdout).expect("PyTorch side's JSON line");
    let params = v["params"].as_u64().expect("params") as usize;
    let times = v["times"]
        .as_array()
        .expect("times")
        .iter()
        .map(|t| t.as_f64().expect("time"))
        .collect();
    (params, times)
}

/// The engine's loop times (seconds): `train_local` over the case's epochs.
fn engine_side(case: &Case, device: &Device) -> Vec<f64> {
    let net = Net::new_on(&case.spec, 0, device).unwrap();
    let cfg = TrainConfig {
        optimizer: OptimizerConfig::adam(case.lr),
        budget: Budget::Epochs(case.epochs),
        batch_size: BATCH,
        loss: LossKind::bce(),
        record_dp: None,
    };
    let mut opt = Optimizer::new(cfg.optimizer.clone()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut one_loop = || {
        train_local(&net, &mut opt, &case.data, &cfg, &[], &mut rng, None).unwrap();
    };
    one_loop();
    (0..case.repeats)
        .map(|_| {
            let start = Instant::now();
            one_loop();
            start.elapsed().as_secs_f64()
        })
        .collect()
}

fn write_rows(data: &Dataset, path: &std::path::Path) {
    let mut bytes = Vec::with_capacity(data.len() * (data.n_features() + 1) * 4);
    for i in 0..data.len() {
        for v in data.row(i) {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(&(data.labels()[i] as f32).to_le_bytes());
    }
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(&bytes))
        .unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let threads: usize = value("--threads").map_or(1, |v| v.parse().expect("--threads N"));
    let repeats: usize = value("--repeats").map_or(5, |v| v.parse().expect("--repeats N"));
    let device_name = value("--device").unwrap_or_else(|| "cpu".into());
    let device = fl_engine::device::parse(&device_name).expect("--device");
    let engine_only = args.iter().any(|a| a == "--engine-only");
    let only: Vec<String> = value("--only")
        .map(|v| v.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    // candle sizes its matrix products from RAYON_NUM_THREADS, and its pool for large
    // element-wise operations from CANDLE_NUM_THREADS (`set_candle_threads` makes that 1: on
    // the calling thread); the rest of its CPU kernels run on rayon's global pool.
    std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
    fl_engine::device::set_candle_threads();
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .expect("rayon pool");

    println!(
        "device {device_name}, threads {threads}, batch {BATCH}, Adam, BCE with logits; \
         times are median loops"
    );
    println!();
    println!("| case | parameters | rows | steps/loop | PyTorch ms/loop | engine ms/loop | PyTorch steps/s | engine steps/s | ratio |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for case in cases(repeats) {
        if !only.is_empty() && !only.iter().any(|o| case.name.contains(o.as_str())) {
            continue;
        }
        let rows_file = std::env::temp_dir().join(format!(
            "fl_engine_torch_compare_{}_{}.f32",
            std::process::id(),
            case.name
        ));
        if !engine_only {
            write_rows(&case.data, &rows_file);
        }
        let ours = case.spec.parameter_count().unwrap();
        let (mut torch_times, mut engine_times) = (vec![], vec![]);
        for _turn in 0..2 {
            if !engine_only {
                let (params, t) = torch_side(&case, threads, &device_name, &rows_file);
                assert_eq!(
                    params, ours,
                    "{}: the two sides build different models",
                    case.name
                );
                torch_times.extend(t);
            }
            engine_times.extend(engine_side(&case, &device));
        }
        let steps = case.epochs * case.data.len().div_ceil(BATCH);
        let e = median(&engine_times);
        // PyTorch's ms/loop and steps/s, and the ratio; empty with --engine-only
        let (torch_ms, torch_rate, ratio) = if engine_only {
            Default::default()
        } else {
            let _ = std::fs::remove_file(&rows_file);
            let t = median(&torch_times);
            (
                format!("{:.1}", t * 1e3),
                format!("{:.0}", steps as f64 / t),
                format!("{:.2}", t / e),
            )
        };
        println!(
            "| {} | {} | {} | {} | {torch_ms} | {:.1} | {torch_rate} | {:.0} | {ratio} |",
            case.name,
            ours,
            case.data.len(),
            steps,
            e * 1e3,
            steps as f64 / e,
        );
    }
}
