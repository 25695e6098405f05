use clap::Parser;

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
