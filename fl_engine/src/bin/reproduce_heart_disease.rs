//! Reproduce the Fed-Heart-Disease table of the FENDA-FL / FL4Health study, compare every
//! method of the engine on it, and write the tables into a markdown file.
//!
//! Three sections, each between its own marker comments so re-running replaces only them:
//!
//! * `published`: the methods with published tuned settings, run with exactly those settings,
//!   next to the published accuracies (Silo and Central have none: their learning rate is
//!   chosen from `--baseline-lrs` on validation loss).
//! * `tuned`: every method, its learning rate and main hyperparameter chosen from a grid by
//!   the validation loss of the checkpoint it is scored on, averaged over the runs. Test data
//!   never takes part in any choice.
//! * `dirichlet`: every method with its `tuned` setting, unchanged, on the pooled data dealt to
//!   `--dirichlet-sites` sites with Dirichlet(alpha) label skew for each `--alphas` value.
//! * `robust`: FedAvg (its `tuned` setting) on 8 Dirichlet(1.0) sites, two of them Byzantine,
//!   under every robust aggregation rule and attack, scored on the honest sites.
//!
//! Every cell is the mean test accuracy (averaged uniformly over sites) and its 95% CI over
//! `--runs` runs with seeds `--seed`, `--seed + 1`, ...
use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Parser;
use fl_engine::repro::{
    self, Federation, Method, Protocol, RobustRule, RunOutcome, Scenario, Setting, ATTACKERS,
};
use fl_engine::sim::{CheckpointKind, RunSummary};
use rayon::prelude::*;

#[derive(Parser, Debug)]
#[command(
    about = "Compare the engine's methods on Fed-Heart-Disease (FLamby split, FL4Health protocol)"
)]
struct Args {
    /// Comma-separated methods (default: all).
    #[arg(long, value_delimiter = ',')]
    methods: Vec<String>,
    /// Sections to generate: published, tuned, dirichlet, robust.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "published,tuned,dirichlet,robust"
    )]
    sections: Vec<String>,
    /// Independent runs per cell.
    #[arg(long, default_value_t = 5)]
    runs: u64,
    /// Seed of the first run.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Federated rounds.
    #[arg(long, default_value_t = 15)]
    rounds: u64,
    /// Local steps per round.
    #[arg(long, default_value_t = 100)]
    steps: usize,
    /// Learning rates tried for Silo and Central in the `published` section.
    #[arg(long, value_delimiter = ',', default_value = "0.001,0.01,0.1")]
    baseline_lrs: Vec<f64>,
    /// Dirichlet concentrations of the label-skew table.
    #[arg(long, value_delimiter = ',', default_value = "0.1,0.5,1.0")]
    alphas: Vec<f64>,
    /// Sites of the label-skew table.
    #[arg(long, default_value_t = 8)]
    dirichlet_sites: usize,
    /// Markdown file to write (the generated sections are replaced in place).
    #[arg(long, default_value = "docs/fl-reproduction.md")]
    output: PathBuf,
}

/// All runs of one method under one setting.
struct Cell {
    setting: Setting,
    runs: Vec<RunOutcome>,
}

impl Cell {
    fn accuracy(&self, kind: CheckpointKind) -> RunSummary {
        RunSummary::from_runs(self.runs.iter().map(|o| o.accuracy(kind)).collect())
    }

    fn val_loss(&self, kind: CheckpointKind) -> f64 {
        self.runs.iter().map(|o| o.val_loss(kind)).sum::<f64>() / self.runs.len() as f64
    }
}

fn run_cell(
    method: Method,
    args: &Args,
    protocol: &Protocol,
    federation: Federation,
    setting: Setting,
) -> fl_engine::Result<Cell> {
    let runs = (0..args.runs)
        .into_par_iter()
        .map(|r| repro::run_setting(method, protocol, federation, args.seed + r, setting))
        .collect::<fl_engine::Result<Vec<_>>>()?;
    Ok(Cell { setting, runs })
}

/// The candidate with the lowest mean validation loss at the method's checkpoint, and how
/// many candidates were tried.
fn select(
    method: Method,
    args: &Args,
    protocol: &Protocol,
    candidates: Vec<Setting>,
) -> fl_engine::Result<(Cell, usize)> {
    let kind = method.checkpoint();
    let tried = candidates.len();
    let mut best: Option<Cell> = None;
    for setting in candidates {
        let cell = run_cell(method, args, protocol, Federation::Hospitals, setting)?;
        let val = cell.val_loss(kind);
        eprintln!(
            "{:<11} {:<26} validation loss {val:.4}",
            method.name(),
            setting.label(method)
        );
        // a diverged candidate has a NaN loss and never wins
        if val.is_finite() && best.as_ref().is_none_or(|b| val < b.val_loss(kind)) {
            best = Some(cell);
        }
    }
    best.map(|b| (b, tried)).ok_or_else(|| {
        fl_engine::EngineError::InvalidConfig(format!(
            "{}: no candidate setting trained to a finite validation loss",
            method.name()
        ))
    })
}

fn fmt(s: &RunSummary) -> String {
    format!(
        "{:.3} ({:.3}-{:.3})",
        s.mean,
        s.mean - s.ci95,
        s.mean + s.ci95
    )
}

fn published_cell(m: Method) -> String {
    m.published()
        .map_or_else(|| "-".to_string(), |p| format!("{p:.3}"))
}

fn published_section(
    methods: &[Method],
    args: &Args,
    protocol: &Protocol,
) -> fl_engine::Result<String> {
    let mut md = String::new();
    let _ = writeln!(md, "Mean test accuracy over {} runs (seeds {}..{}), each run averaged uniformly over the four hospitals; 95% CI from Student's t in brackets. Published settings; Silo and Central have none published, so their learning rate is the one of {:?} with the lowest mean validation loss.\n", args.runs, args.seed, args.seed + args.runs - 1, args.baseline_lrs);
    let _ = writeln!(
        md,
        "| Method | Model | Setting | Checkpoint | Accuracy (95% CI) | Published | Difference |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    let mut all_kinds = String::new();
    let mut per_site = String::new();
    for &m in methods {
        let Some(published) = m.published() else {
            continue;
        };
        let cell = match m.published_setting() {
            Some(s) => run_cell(m, args, protocol, Federation::Hospitals, s)?,
            None => {
                let candidates = args
                    .baseline_lrs
                    .iter()
                    .map(|&lr| Setting { lr, knob: None })
                    .collect();
                select(m, args, protocol, candidates)?.0
            }
        };
        let kind = m.checkpoint();
        let s = cell.accuracy(kind);
        eprintln!("{:<11} published setting: {}", m.name(), fmt(&s));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {published:.3} | {:+.3} |",
            m.name(),
            m.model_label(),
            cell.setting.label(m),
            kind.label(),
            fmt(&s),
            s.mean - published
        );
        let cells: Vec<String> = [
            CheckpointKind::Latest,
            CheckpointKind::BestGlobal,
            CheckpointKind::BestLocal,
        ]
        .iter()
        .map(|k| fmt(&cell.accuracy(*k)))
        .collect();
        let _ = writeln!(all_kinds, "| {} | {} |", m.name(), cells.join(" | "));
        let sites: Vec<String> = (0..4)
            .map(|k| {
                let v: f64 = cell
                    .runs
                    .iter()
                    .map(|o| o.get(kind)[k].accuracy)
                    .sum::<f64>()
                    / cell.runs.len() as f64;
                format!("{v:.3}")
            })
            .collect();
        let _ = writeln!(per_site, "| {} | {} |", m.name(), sites.join(" | "));
    }
    let _ = writeln!(md, "\nAll checkpoints (mean accuracy and 95% CI):\n");
    let _ = writeln!(md, "| Method | latest | best global | best local |");
    let _ = writeln!(md, "|---|---|---|---|");
    md.push_str(&all_kinds);
    let _ = writeln!(
        md,
        "\nPer-hospital mean accuracy at the reported checkpoint:\n"
    );
    let _ = writeln!(
        md,
        "| Method | {} |",
        fl_engine::data::heart_disease::CENTERS.join(" | ")
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    md.push_str(&per_site);
    Ok(md)
}

fn tuned_section(
    methods: &[Method],
    args: &Args,
    protocol: &Protocol,
) -> fl_engine::Result<(String, Vec<(Method, Setting)>)> {
    let mut md = String::new();
    let _ = writeln!(md, "Every method tuned on validation data only: each setting of its grid (learning rates {:?}, times the values of its main hyperparameter) ran {} times, and the setting with the lowest mean validation loss at the method's checkpoint is reported with its test accuracy (mean and 95% CI over the same runs).\n", repro::TUNING_LRS, args.runs);
    let _ = writeln!(
        md,
        "| Method | Model | Selected setting | Settings tried | Checkpoint | Validation loss | Accuracy (95% CI) | Published |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    let mut chosen = Vec::new();
    for &m in methods {
        let (cell, tried) = select(m, args, protocol, m.grid())?;
        let kind = m.checkpoint();
        let s = cell.accuracy(kind);
        eprintln!(
            "{:<11} tuned {}: {}",
            m.name(),
            cell.setting.label(m),
            fmt(&s)
        );
        let _ = writeln!(
            md,
            "| {} | {} | {} | {tried} | {} | {:.4} | {} | {} |",
            m.name(),
            m.model_label(),
            cell.setting.label(m),
            kind.label(),
            cell.val_loss(kind),
            fmt(&s),
            published_cell(m)
        );
        chosen.push((m, cell.setting));
    }
    Ok((md, chosen))
}

fn dirichlet_section(
    chosen: &[(Method, Setting)],
    args: &Args,
    protocol: &Protocol,
) -> fl_engine::Result<String> {
    let mut md = String::new();
    let _ = writeln!(md, "All {} rows pooled and dealt to {} sites with Dirichlet(alpha) label skew (a new partition per run seed, at least 20 rows per site, a quarter of each site's rows as its test set, the rest split 80/20 into train and validation). Every method keeps its setting from the tuned table. Mean test accuracy over {} runs, averaged uniformly over sites, with its 95% CI.\n", 740, args.dirichlet_sites, args.runs);
    let header: Vec<String> = args.alphas.iter().map(|a| format!("alpha = {a}")).collect();
    let _ = writeln!(md, "| Method | Checkpoint | {} |", header.join(" | "));
    let _ = writeln!(md, "|---|---|{}", "---|".repeat(args.alphas.len()));
    for &(m, setting) in chosen {
        let kind = m.checkpoint();
        let mut cells = Vec::new();
        for &alpha in &args.alphas {
            let federation = Federation::Dirichlet {
                sites: args.dirichlet_sites,
                alpha,
            };
            let cell = run_cell(m, args, protocol, federation, setting)?;
            let s = cell.accuracy(kind);
            eprintln!("{:<11} Dirichlet({alpha}): {}", m.name(), fmt(&s));
            cells.push(fmt(&s));
        }
        let _ = writeln!(
            md,
            "| {} | {} | {} |",
            m.name(),
            kind.label(),
            cells.join(" | ")
        );
    }
    Ok(md)
}

fn robust_section(fedavg: Setting, args: &Args, protocol: &Protocol) -> fl_engine::Result<String> {
    let federation = Federation::Dirichlet {
        sites: 8,
        alpha: 1.0,
    };
    let mut md = String::new();
    let _ = writeln!(md, "FedAvg ({}) on 8 Dirichlet(1.0) sites; sites {:?} are Byzantine in every attacked column (a quarter of the federation). Cells: test accuracy of the final global model averaged over the 6 honest sites, mean and 95% CI over {} runs. Krum and Multi-Krum assume f = 2; Bulyan needs n >= 4f + 3, so at 8 sites it can only assume f = 1 and two attackers exceed its guarantee. FLTrust's server holds 4 training rows of each honest site (24 rows) as its root set.\n", fedavg.label(Method::FedAvg), ATTACKERS, args.runs);
    let header: Vec<&str> = Scenario::ALL.iter().map(Scenario::label).collect();
    let _ = writeln!(md, "| Aggregation | {} |", header.join(" | "));
    let _ = writeln!(md, "|---|{}", "---|".repeat(Scenario::ALL.len()));
    for rule in RobustRule::ALL {
        let mut cells = Vec::new();
        for scenario in Scenario::ALL {
            let runs = (0..args.runs)
                .into_par_iter()
                .map(|r| {
                    repro::run_robust(
                        Method::FedAvg,
                        rule,
                        scenario,
                        protocol,
                        federation,
                        args.seed + r,
                        fedavg,
                    )
                })
                .collect::<fl_engine::Result<Vec<_>>>()?;
            let s = RunSummary::from_runs(runs);
            eprintln!("{:<28} {:<15} {}", rule.label(), scenario.label(), fmt(&s));
            cells.push(fmt(&s));
        }
        let _ = writeln!(md, "| {} | {} |", rule.label(), cells.join(" | "));
    }
    Ok(md)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    fl_engine::device::set_candle_threads();
    let args = Args::parse();
    let methods = if args.methods.is_empty() {
        Method::ALL.to_vec()
    } else {
        args.methods
            .iter()
            .map(|m| Method::parse(m))
            .collect::<fl_engine::Result<Vec<_>>>()?
    };
    if args.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    let known = ["published", "tuned", "dirichlet", "robust"];
    if let Some(s) = args.sections.iter().find(|s| !known.contains(&s.as_str())) {
        return Err(format!("unknown section `{s}` (expected one of {known:?})").into());
    }
    let protocol = Protocol {
        rounds: args.rounds,
        local_steps: args.steps,
        baseline_lrs: args.baseline_lrs.clone(),
        ..Protocol::default()
    };
    let passed: Vec<String> = std::env::args().skip(1).collect();
    let mut command = "cargo run --release -p fl_engine --bin reproduce_heart_disease".to_string();
    if !passed.is_empty() {
        command = format!("{command} -- {}", passed.join(" "));
    }
    let wants = |s: &str| args.sections.iter().any(|x| x == s);
    let mut text = std::fs::read_to_string(&args.output)
        .unwrap_or_else(|_| "# Fed-Heart-Disease reproduction\n".to_string());
    if wants("published") {
        let body = published_section(&methods, &args, &protocol)?;
        println!("{body}");
        text = repro::replace_section(
            &text,
            "reproduce_heart_disease",
            "published",
            &body,
            &command,
        );
        std::fs::write(&args.output, &text)?;
    }
    if wants("tuned") || wants("dirichlet") || wants("robust") {
        let (body, chosen) = tuned_section(&methods, &args, &protocol)?;
        if wants("tuned") {
            println!("{body}");
            text =
                repro::replace_section(&text, "reproduce_heart_disease", "tuned", &body, &command);
            std::fs::write(&args.output, &text)?;
        }
        if wants("dirichlet") {
            let body = dirichlet_section(&chosen, &args, &protocol)?;
            println!("{body}");
            text = repro::replace_section(
                &text,
                "reproduce_heart_disease",
                "dirichlet",
                &body,
                &command,
            );
            std::fs::write(&args.output, &text)?;
        }
        if wants("robust") {
            let fedavg = chosen
                .iter()
                .find(|(m, _)| *m == Method::FedAvg)
                .map(|(_, s)| *s)
                .ok_or("the robust table needs FedAvg among --methods")?;
            let body = robust_section(fedavg, &args, &protocol)?;
            println!("{body}");
            text =
                repro::replace_section(&text, "reproduce_heart_disease", "robust", &body, &command);
            std::fs::write(&args.output, &text)?;
        }
    }
    Ok(())
}
