use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// The demonstration's node agents train in this process: see the `mimalloc` entry in the
/// workspace manifest.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "ehds-tools",
    version,
    about = "The EHDS flow on one machine, and the generators of the example data"
)]
struct Cli {
    /// The gateway's TOML configuration file (`demo`); `EHDS_*` environment variables override it.
    #[arg(long, global = true, env = "EHDS_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The whole EHDS flow on the bundled example federation: gateway (SQLite, development
    /// mode), four node agents over HTTP, application, permit, a DP federated study, model
    /// export and audit verification.
    Demo(ehds_tools::demo::DemoArgs),
    /// Convert the UCI Heart Disease files into the example federation's FHIR R4 bundles and
    /// sample opt-out file.
    ExampleFederation {
        #[arg(long, default_value = "fl_engine/data/heart_disease")]
        uci_dir: PathBuf,
        #[arg(long, default_value = "examples/federation")]
        out: PathBuf,
    },
    /// Write the generated multi-site ICU federation (FHIR Bulk Data NDJSON per hospital).
    GenerateCorpus(ehds_tools::corpus::CorpusArgs),
    /// The node agent's commands (`ehds-node`), as the demonstration starts its agents.
    #[command(hide = true)]
    Node {
        #[command(subcommand)]
        command: ehds_node::cli::Command,
    },
}

fn main() {
    // before any thread exists: candle reads its thread counts from the environment
    fl_engine::device::set_candle_threads();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the async runtime starts");
    let cli = Cli::parse();
    match runtime.block_on(run(cli)) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Demo(args) => {
            let settings = ehds_gateway::configuration::Settings::load(cli.config.as_deref())?;
            ehds_tools::demo::run(args, settings).await
        }
        Command::ExampleFederation { uci_dir, out } => {
            let summary = ehds_tools::example_federation::convert(&uci_dir, &out)?;
            for site in &summary.sites {
                println!(
                    "{} ({}): {} patients, {} bytes -> {}",
                    site.hospital,
                    site.member_state,
                    site.patients,
                    site.bytes,
                    site.path.display()
                );
            }
            println!(
                "{} sample opt-outs -> {}",
                summary.optouts,
                summary.optouts_path.display()
            );
            Ok(0)
        }
        Command::GenerateCorpus(args) => ehds_tools::corpus::generate_corpus(args),
        Command::Node { command } => ehds_node::cli::run(ehds_node::cli::Cli { command }).await,
    }
}
