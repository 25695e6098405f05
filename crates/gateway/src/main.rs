use clap::Parser;

/// See the `mimalloc` entry in the workspace manifest for why the binary does not use the system
/// allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let cli = ehds_gateway::cli::Cli::parse();
    match ehds_gateway::cli::run(cli).await {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
}
