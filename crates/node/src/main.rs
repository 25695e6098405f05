use clap::Parser;

/// The agent trains in this process: see the `mimalloc` entry in the workspace manifest for
/// why the programs do not use the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // before any thread exists: candle reads its thread counts from the environment
    fl_engine::device::set_candle_threads();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the async runtime starts");
    let cli = ehds_node::cli::Cli::parse();
    match runtime.block_on(ehds_node::cli::run(cli)) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
}
