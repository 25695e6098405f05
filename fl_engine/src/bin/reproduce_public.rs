//! Reproductions on real data that ship with public Python packages (see
//! `fl_engine::repro::public`), written into a markdown file between marker comments:
//!
//! * `survival`: federated Cox regression on GBSG2 and WHAS500 next to the pooled lifelines
//!   fit of the same training rows: an IID split (global methods should match the pooled
//!   C-index) and a skewed one (GBSG2: one site per tumour grade; WHAS500: Dirichlet over age
//!   quartiles), where personalised methods are compared.
//! * `digits`: the CNN trained centrally and federated on an IID split, and on the
//!   disjoint-label split (two sites with digits 0-4, two with 5-9), where FedAvg's single
//!   model is compared with what each personalised method recovers.
//!
//! Every cell is the mean ± sample standard deviation over `--runs` seeds.
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use fl_engine::repro::public::{self, PublicData, Score, Split, Work};
use fl_engine::repro::{self, Method};
use rayon::prelude::*;

#[derive(Parser, Debug)]
#[command(about = "Federated Cox on GBSG2 / WHAS500 and a federated CNN on digits")]
struct Args {
    /// Sections to generate: survival, digits.
    #[arg(long, value_delimiter = ',', default_value = "survival,digits")]
    sections: Vec<String>,
    /// Seeds per cell (seeds `--seed`, `--seed + 1`, ...).
    #[arg(long, default_value_t = 3)]
    runs: u64,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Survival: rounds, local steps (full-batch: every site's training rows in one batch)
    /// and Adam learning rate.
    #[arg(long, default_value_t = 20)]
    cox_rounds: u64,
    #[arg(long, default_value_t = 10)]
    cox_steps: usize,
    #[arg(long, default_value_t = 0.05)]
    cox_lr: f64,
    /// Survival: sites of the IID split.
    #[arg(long, default_value_t = 3)]
    cox_sites: usize,
    /// WHAS500's skewed split: sites and Dirichlet concentration over the age quartiles.
    #[arg(long, default_value_t = 4)]
    whas_sites: usize,
    #[arg(long, default_value_t = 0.5)]
    whas_alpha: f64,
    /// Digits: rounds, local steps, batch size and Adam learning rate.
    #[arg(long, default_value_t = 10)]
    cnn_rounds: u64,
    #[arg(long, default_value_t = 30)]
    cnn_steps: usize,
    #[arg(long, default_value_t = 32)]
    cnn_batch: usize,
    #[arg(long, default_value_t = 0.01)]
    cnn_lr: f64,
    /// Digits: filters of the CNN's first stage (the second has twice as many; a multiple of 4).
    #[arg(long, default_value_t = 12)]
    cnn_width: usize,
    /// Comma-separated methods (default: every method of the section).
    #[arg(long, value_delimiter = ',')]
    methods: Vec<String>,
    /// Markdown file to write (the generated sections are replaced in place).
    #[arg(long, default_value = "docs/fl-reproduction.md")]
    output: PathBuf,
}

const GENERATOR: &str = "reproduce_public";
/// Federated survival methods: the global ones first.
const COX_METHODS: [Method; 6] = [
    Method::Central,
    Method::FedAvg,
    Method::FedProx,
    Method::FedMap,
    Method::Ditto,
    Method::Silo,
];
const CNN_METHODS: [Method; 8] = [
    Method::Central,
    Method::FedAvg,
    Method::Silo,
    Method::FedPer,
    Method::FendaFl,
    Method::Ditto,
    Method::Apfl,
    Method::FedMap,
];
/// Sites of the digit splits (the disjoint-label split has two per half).
const CNN_SITES: usize = 4;
/// Full-batch Cox steps: larger than any site's training rows.
const COX_BATCH: usize = 1024;

/// The section's methods that `--methods` names (all when it names none).
fn selected(args: &Args, all: &[Method]) -> fl_engine::Result<Vec<Method>> {
    let wanted = args
        .methods
        .iter()
        .map(|m| Method::parse(m))
        .collect::<fl_engine::Result<Vec<_>>>()?;
    Ok(all
        .iter()
        .copied()
        .filter(|m| wanted.is_empty() || wanted.contains(m))
        .collect())
}

/// Mean and sample standard deviation.
fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var.sqrt())
}

fn fmt(v: &[f64]) -> String {
    let (m, s) = mean_std(v);
    format!("{m:.4} ± {s:.4}")
}

fn runs(
    args: &Args,
    method: Method,
    data: PublicData,
    rows: &public::Rows,
    split: Split,
    work: Work,
    sites: usize,
) -> fl_engine::Result<Vec<Score>> {
    let t = Instant::now();
    let out = (0..args.runs)
        .into_par_iter()
        .map(|r| public::run(method, data, rows, split, work, sites, args.seed + r))
        .collect::<fl_engine::Result<Vec<_>>>()?;
    eprintln!(
        "{:<8} {:<10} {:<28} pooled {} site mean {} ({:.0} s)",
        data.name(),
        method.name(),
        split.label(),
        fmt(&out.iter().map(|s| s.pooled).collect::<Vec<_>>()),
        fmt(&out.iter().map(|s| s.site_mean).collect::<Vec<_>>()),
        t.elapsed().as_secs_f64()
    );
    Ok(out)
}

fn survival_section(args: &Args) -> Result<String, Box<dyn std::error::Error>> {
    let work = Work {
        rounds: args.cox_rounds,
        steps: args.cox_steps,
        batch_size: COX_BATCH,
        lr: args.cox_lr,
        cnn_width: args.cnn_width,
    };
    let mut md = String::new();
    let _ = writeln!(md, "Linear Cox model (one risk score), partial likelihood with Breslow ties; {} rounds x {} full-batch local Adam steps (lr {}), every site z-scored with its own training rows. Checkpoint as in the tables above (global methods: the server model of the round with the lowest validation loss; personalised methods, Silo and Central: each site's best local model). C-index: Harrell's, over the whole fixed test set, each row scored by its own site's model; mean ± std over {} seeds. Reference: the pooled unpenalised Cox fit of lifelines (Efron ties) on exactly the same training rows, from `cox_reference.json`; the scikit-survival Breslow fit is given beside it.\n", work.rounds, work.steps, work.lr, args.runs);
    for data in [PublicData::Gbsg2, PublicData::Whas500] {
        let rows = data.load()?;
        let reference = data.cox_reference()?;
        let pooled = reference.lifelines_efron.test_c_index;
        let skew = match data {
            PublicData::Gbsg2 => Split::Groups,
            _ => Split::Dirichlet {
                sites: args.whas_sites,
                alpha: args.whas_alpha,
            },
        };
        let iid = Split::Iid {
            sites: args.cox_sites,
        };
        let _ = writeln!(
            md,
            "**{}** ({} rows, {} features; train/val/test {}/{}/{}). Pooled lifelines fit (lifelines {}): test C-index **{pooled:.4}** (scikit-survival {}, Breslow ties: {:.4}). IID: {}; skewed: {}.\n",
            data.name(),
            rows.data.len(),
            rows.data.n_features(),
            rows.part.iter().filter(|p| **p == public::Part::Train).count(),
            rows.part.iter().filter(|p| **p == public::Part::Val).count(),
            rows.part.iter().filter(|p| **p == public::Part::Test).count(),
            reference.versions.get("lifelines").map_or("?", String::as_str),
            reference.versions.get("scikit-survival").map_or("?", String::as_str),
            reference.sksurv_breslow.test_c_index,
            iid.label(),
            match skew {
                Split::Groups => "one site per tumour grade (I, II, III)".to_string(),
                s => format!("{} over age quartiles", s.label()),
            },
        );
        let _ = writeln!(md, "| Method | Checkpoint | IID: C-index | IID: minus pooled fit | Skewed: C-index | Skewed: mean per-site C-index |");
        let _ = writeln!(md, "|---|---|---|---|---|---|");
        for m in selected(args, &COX_METHODS)? {
            let a = runs(args, m, data, &rows, iid, work, args.cox_sites)?;
            let skew_sites = rows.sites(skew, args.seed, true)?.len();
            let b = runs(args, m, data, &rows, skew, work, skew_sites)?;
            let pa: Vec<f64> = a.iter().map(|s| s.pooled).collect();
            let (ma, _) = mean_std(&pa);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:+.4} | {} | {} |",
                m.name(),
                m.checkpoint().label(),
                fmt(&pa),
                ma - pooled,
                fmt(&b.iter().map(|s| s.pooled).collect::<Vec<_>>()),
                fmt(&b.iter().map(|s| s.site_mean).collect::<Vec<_>>()),
            );
        }
        let _ = writeln!(md);
    }
    Ok(md)
}

fn digits_section(args: &Args) -> Result<String, Box<dyn std::error::Error>> {
    let data = PublicData::Digits;
    let rows = data.load()?;
    let work = Work {
        rounds: args.cnn_rounds,
        steps: args.cnn_steps,
        batch_size: args.cnn_batch,
        lr: args.cnn_lr,
        cnn_width: args.cnn_width,
    };
    let iid = Split::Iid { sites: CNN_SITES };
    let disjoint = Split::DisjointLabels {
        sites_per_half: CNN_SITES / 2,
    };
    let mut md = String::new();
    let _ = writeln!(md, "ResNet-style CNN with GroupNorm (stem and two residual stages of {} and {} filters) on the 8x8 images scaled to [0, 1]; {} rounds x {} local Adam steps (lr {}, batch {}); Central trains one model on all training rows doing the federation's total work per round ({} x {} steps). Accuracy over the whole fixed test set (355 images), each image scored by its own site's model at the method's checkpoint; mean ± std over {} seeds. Disjoint labels: two sites hold only digits 0-4, two only 5-9 (their test rows likewise).\n", work.cnn_width, 2 * work.cnn_width, work.rounds, work.steps, work.lr, work.batch_size, CNN_SITES, work.steps, args.runs);
    let _ = writeln!(
        md,
        "| Method | Model | Checkpoint | IID ({CNN_SITES} sites) | Disjoint labels | Disjoint minus IID |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for m in selected(args, &CNN_METHODS)? {
        let a: Vec<f64> = runs(args, m, data, &rows, iid, work, CNN_SITES)?
            .iter()
            .map(|s| s.pooled)
            .collect();
        let b: Vec<f64> = if m == Method::Central {
            a.clone()
        } else {
            runs(args, m, data, &rows, disjoint, work, CNN_SITES)?
                .iter()
                .map(|s| s.pooled)
                .collect()
        };
        let model = match public::model_for(m, data, 64, work.cnn_width) {
            fl_engine::ModelSpec::BackboneHeadNet { .. } => "CNN body + local head",
            fl_engine::ModelSpec::BackboneFenda { .. } => "global + local CNN",
            fl_engine::ModelSpec::BackboneApfl { .. } => "APFL twin CNNs",
            _ => "CNN",
        };
        let _ = writeln!(
            md,
            "| {} | {model} | {} | {} | {} | {} |",
            m.name(),
            m.checkpoint().label(),
            fmt(&a),
            if m == Method::Central {
                "(same pooled data)".to_string()
            } else {
                fmt(&b)
            },
            if m == Method::Central {
                "-".to_string()
            } else {
                format!("{:+.4}", mean_std(&b).0 - mean_std(&a).0)
            },
        );
    }
    Ok(md)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    fl_engine::device::set_candle_threads();
    let args = Args::parse();
    if args.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    let known = ["survival", "digits"];
    if let Some(s) = args.sections.iter().find(|s| !known.contains(&s.as_str())) {
        return Err(format!("unknown section `{s}` (expected one of {known:?})").into());
    }
    let passed: Vec<String> = std::env::args().skip(1).collect();
    let mut command = format!("cargo run --release -p fl_engine --bin {GENERATOR}");
    if !passed.is_empty() {
        command = format!("{command} -- {}", passed.join(" "));
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut text =
        std::fs::read_to_string(&args.output).unwrap_or_else(|_| "# Reproductions\n".to_string());
    for section in &args.sections {
        let t = Instant::now();
        let body = match section.as_str() {
            "survival" => survival_section(&args)?,
            _ => digits_section(&args)?,
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
