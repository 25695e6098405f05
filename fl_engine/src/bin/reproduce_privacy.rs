//! FL-EHDS Table VIII on Fed-Heart-Disease (see `fl_engine::repro::privacy`), written into a
//! markdown file between marker comments:
//!
//! * `privacy`: test accuracy (uniform mean over the four hospitals) of each method without
//!   DP and under client- and record-level DP at epsilon 10 and 1, as mean ± sample standard
//!   deviation over `--runs` seeds, and a two-sided Wilcoxon signed-rank test of each method
//!   against FedAvg in the same setting over the paired (seed, site) accuracies.
//! * `cross-client`: the first seed's cross-client generalisation matrices of FedAvg and
//!   Ditto without DP.
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use fl_engine::repro::privacy::{EhdsProtocol, Privacy, METHODS};
use fl_engine::repro::{self, Method};
use fl_engine::stats::{mean_std, wilcoxon_signed_rank};
use fl_engine::EngineError;
use rayon::prelude::*;

#[derive(Parser, Debug)]
#[command(about = "FL-EHDS Table VIII: privacy-utility on Fed-Heart-Disease")]
struct Args {
    /// Sections to generate: privacy, cross-client.
    #[arg(long, value_delimiter = ',', default_value = "privacy,cross-client")]
    sections: Vec<String>,
    /// Seeds per cell (seeds `--seed`, `--seed + 1`, ...).
    #[arg(long, default_value_t = 3)]
    runs: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Markdown file to write (the generated sections are replaced in place).
    #[arg(long, default_value = "docs/fl-reproduction.md")]
    output: PathBuf,
}

const GENERATOR: &str = "reproduce_privacy";

/// Per (method, privacy): each seed's per-site accuracies, or why there are none.
type Cell = Result<Vec<Vec<f64>>, String>;

/// An invalid configuration is the engine refusing the method / DP combination up front;
/// anything else (e.g. a NaN loss) is a run that failed on the way.
fn why_not(e: &EngineError) -> String {
    match e {
        EngineError::InvalidConfig(why) => format!("refused: {why}"),
        other => format!("failed: {other}"),
    }
}

fn privacy_section(p: &EhdsProtocol, seeds: &[u64]) -> Result<String, Box<dyn std::error::Error>> {
    let jobs: Vec<(Method, Privacy, u64)> = METHODS
        .iter()
        .flat_map(|&m| {
            Privacy::TABLE
                .iter()
                .flat_map(move |&pr| seeds.iter().map(move |&s| (m, pr, s)))
        })
        .collect();
    let results: Vec<_> = jobs
        .par_iter()
        .map(|&(m, pr, s)| ((m, pr, s), p.site_accuracies(m, s, pr)))
        .collect();
    let cell = |m: Method, pr: Privacy| -> Cell {
        results
            .iter()
            .filter(|((rm, rp, _), _)| *rm == m && *rp == pr)
            .map(|(_, r)| match r {
                Ok(accuracies) => Ok(accuracies.clone()),
                Err(e) => Err(why_not(e)),
            })
            .collect()
    };
    let mut md = String::new();
    writeln!(
        md,
        "Test accuracy averaged uniformly over the four hospitals, final models (each site's own \
         model for Ditto), mean ± sample std over {} seeds ({}).\n",
        seeds.len(),
        seeds
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    let header = Privacy::TABLE
        .iter()
        .map(|pr| pr.label())
        .collect::<Vec<_>>();
    writeln!(md, "| method | {} |", header.join(" | "))?;
    writeln!(md, "|---|{}", "---:|".repeat(header.len()))?;
    for &m in &METHODS {
        let cells = Privacy::TABLE
            .iter()
            .map(|&pr| match cell(m, pr) {
                Ok(runs) => {
                    let means: Vec<f64> = runs
                        .iter()
                        .map(|r| r.iter().sum::<f64>() / r.len() as f64)
                        .collect();
                    let (mean, std) = mean_std(&means);
                    format!("{mean:.3} ± {std:.3}")
                }
                Err(why) => why,
            })
            .collect::<Vec<_>>();
        writeln!(md, "| {} | {} |", m.name(), cells.join(" | "))?;
    }
    writeln!(
        md,
        "\nWilcoxon signed-rank test of each method against FedAvg in the same setting, over \
         the {} paired (seed, site) accuracies: W = min(W+, W-), n = non-zero differences \
         (zero differences dropped, Wilcoxon's method), two-sided p (exact for n ≤ 25). \
         Δ = mean difference to FedAvg.\n",
        seeds.len() * 4
    )?;
    writeln!(md, "| method | {} |", header.join(" | "))?;
    writeln!(md, "|---|{}", "---:|".repeat(header.len()))?;
    for &m in METHODS.iter().filter(|m| **m != Method::FedAvg) {
        let cells = Privacy::TABLE
            .iter()
            .map(|&pr| match (cell(m, pr), cell(Method::FedAvg, pr)) {
                (Ok(x), Ok(y)) => {
                    let x: Vec<f64> = x.concat();
                    let y: Vec<f64> = y.concat();
                    let t = wilcoxon_signed_rank(&x, &y);
                    let delta = x.iter().zip(&y).map(|(a, b)| a - b).sum::<f64>() / x.len() as f64;
                    format!(
                        "Δ {delta:+.3}, W={}, n={}, p={:.3}",
                        t.statistic, t.n, t.p_value
                    )
                }
                (Err(_), _) => "no accuracies".into(),
                (_, Err(_)) => "no FedAvg accuracies".into(),
            })
            .collect::<Vec<_>>();
        writeln!(md, "| {} | {} |", m.name(), cells.join(" | "))?;
    }
    writeln!(md)?;
    for pr in Privacy::TABLE {
        if let Some(sigma) = p.sigma(pr)? {
            writeln!(md, "- {}: noise multiplier σ = {sigma:.3}", pr.label())?;
        }
    }
    Ok(md)
}

fn cross_client_section(p: &EhdsProtocol, seed: u64) -> Result<String, Box<dyn std::error::Error>> {
    let mut md = String::new();
    for m in [Method::FedAvg, Method::Ditto] {
        let (names, matrix) = p.cross_client(m, seed)?;
        writeln!(
            md,
            "{} (seed {seed}, no DP): row = {}, column = the site whose test set it is scored \
             on; accuracy.\n",
            m.name(),
            if m == Method::Ditto {
                "the personalised model of the site named"
            } else {
                "the one global model (identical rows)"
            }
        )?;
        writeln!(md, "| model \\ test | {} |", names.join(" | "))?;
        writeln!(md, "|---|{}", "---:|".repeat(names.len()))?;
        for (name, row) in names.iter().zip(&matrix) {
            let cells: Vec<String> = row.iter().map(|a| format!("{a:.3}")).collect();
            writeln!(md, "| {name} | {} |", cells.join(" | "))?;
        }
        writeln!(md)?;
    }
    Ok(md)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    fl_engine::device::set_candle_threads();
    let args = Args::parse();
    if args.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    let known = ["privacy", "cross-client"];
    if let Some(s) = args.sections.iter().find(|s| !known.contains(&s.as_str())) {
        return Err(format!("unknown section `{s}` (expected one of {known:?})").into());
    }
    let passed: Vec<String> = std::env::args().skip(1).collect();
    let mut command = format!("cargo run --release -p fl_engine --bin {GENERATOR}");
    if !passed.is_empty() {
        command = format!("{command} -- {}", passed.join(" "));
    }
    let protocol = EhdsProtocol::default();
    let seeds: Vec<u64> = (args.seed..args.seed + args.runs).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut text =
        std::fs::read_to_string(&args.output).unwrap_or_else(|_| "# Reproductions\n".to_string());
    for section in &args.sections {
        let t = Instant::now();
        let body = match section.as_str() {
            "privacy" => privacy_section(&protocol, &seeds)?,
            _ => cross_client_section(&protocol, args.seed)?,
        };
        let body = format!(
            "{body}\nRun time: {:.0} s with {threads} CPU threads available.\n",
            t.elapsed().as_secs_f64()
        );
        println!("{body}");
        text = repro::replace_section(&text, GENERATOR, section, &body, &command);
        std::fs::write(&args.output, &text)?;
    }
    Ok(())
}
