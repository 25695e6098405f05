//! Per-round cost of every method relative to FedAvg, in one run on one machine.
//!
//! Each method runs the Fed-Heart-Disease protocol (4 hospitals, 100 local steps of batch 4
//! per round, validation after the round) with its default setting. One warm-up round, then
//! `ROUNDS` timed rounds, repeated `REPEATS` times on fresh studies; the median round time is
//! compared with FedAvg's median from the same process. Sites train in parallel as in the
//! simulator, so the wall time is what a study on this machine waits for.
//!
//! Upload size is what one site sends back after one round (shared parameters plus the
//! strategy's extras), in 32-bit values; download is what the server sends each site.
//!
//! `cargo bench -p fl_engine --bench methods` (optional filter: method names, comma-separated).
use std::time::Instant;

use fl_engine::repro::{self, Method, Protocol};
use fl_engine::seeds::stream_seed;
use fl_engine::sim::Simulation;
use fl_engine::strategy::{Site, WeightedMean};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const ROUNDS: u64 = 3;
const REPEATS: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median wall time of one round, in milliseconds.
fn round_ms(method: Method, protocol: &Protocol) -> fl_engine::Result<f64> {
    let lr = method.published_lr().unwrap_or(1e-2);
    let mut samples = Vec::new();
    for rep in 0..REPEATS {
        let cfg = repro::config(method, protocol, rep as u64, lr);
        let mut sim = Simulation::new(cfg, repro::site_data(rep as u64, protocol.val_fraction)?)?;
        sim.run_round()?;
        let start = Instant::now();
        for _ in 0..ROUNDS {
            sim.run_round()?;
        }
        samples.push(start.elapsed().as_secs_f64() * 1e3 / ROUNDS as f64);
    }
    Ok(median(samples))
}

/// `(download, upload)` values per site for one round.
fn traffic(method: Method, protocol: &Protocol) -> fl_engine::Result<(usize, usize)> {
    let lr = method.published_lr().unwrap_or(1e-2);
    let cfg = repro::config(method, protocol, 0, lr);
    let data = repro::site_data(0, protocol.val_fraction)?;
    let n = data.len();
    let server = cfg.strategy.server(n, Box::new(WeightedMean))?;
    let global = fl_engine::Net::new(&cfg.model, 0)?
        .parameters()?
        .select(&cfg.strategy.shared());
    let ins = server.configure_fit(1, &global)?;
    let site_data = data
        .into_iter()
        .next()
        .ok_or(fl_engine::EngineError::NoUpdates)?;
    let mut site = Site::new(
        site_data,
        &cfg.model,
        cfg.train.clone(),
        stream_seed(0, 0, 0),
    )?;
    let mut client = cfg.strategy.client()?;
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let res = client.fit(&mut site, &ins, &mut rng)?;
    Ok((
        ins.params.num_values() + ins.extras.num_values(),
        res.params.num_values() + res.extras.num_values(),
    ))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    fl_engine::device::set_candle_threads();
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .flat_map(|a| a.split(',').map(str::to_string).collect::<Vec<_>>())
        .collect();
    let methods: Vec<Method> = if filter.is_empty() {
        Method::ALL
            .into_iter()
            .filter(|m| *m != Method::Central)
            .collect()
    } else {
        filter
            .iter()
            .map(|m| Method::parse(m))
            .collect::<fl_engine::Result<_>>()?
    };
    let protocol = Protocol::default();
    let baseline = round_ms(Method::FedAvg, &protocol)?;
    let (_, base_up) = traffic(Method::FedAvg, &protocol)?;
    println!(
        "Fed-Heart-Disease, 4 sites x 100 local steps per round; median of {REPEATS} studies x {ROUNDS} rounds; {} threads",
        rayon::current_num_threads()
    );
    println!("| Method | Model | round ms | x FedAvg | download values | upload values | upload x FedAvg |");
    println!("|---|---|---|---|---|---|---|");
    for m in methods {
        let ms = round_ms(m, &protocol)?;
        let (down, up) = traffic(m, &protocol)?;
        println!(
            "| {} | {} | {ms:.1} | {:.2} | {down} | {up} | {:.2} |",
            m.name(),
            m.model_label(),
            ms / baseline,
            up as f64 / base_up as f64
        );
    }
    Ok(())
}
