use clap::Parser;

/// The agent trains in this process: see the `mimalloc` entry in the workspace manifest for
/// why the programs do not use the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let cli = ehds_node::cli::Cli::parse();
    match ehds_node::cli::run(cli).await {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
}
