//! Command-line interface.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::{
    auth::{dev::DevIssuer, Role},
    configuration::Settings,
    http::{audit::verify_chain, openapi},
    startup::{shutdown_signal, Application},
    store,
};

#[derive(Parser)]
#[command(
    name = "ehds-gateway",
    version,
    about = "EHDS governance gateway for federated learning"
)]
pub struct Cli {
    /// TOML configuration file; `EHDS_*` environment variables override it.
    #[arg(long, global = true, env = "EHDS_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the gateway.
    Serve {
        /// Development mode: the gateway is its own OpenID Connect issuer (see `token`).
        #[arg(long)]
        dev: bool,
    },
    /// Mint a development-mode token (the key lives in the data directory).
    Token {
        #[arg(long)]
        sub: String,
        /// Repeat for several roles: hdab_officer, researcher, auditor, data_holder, optout_registrar, admin.
        #[arg(long = "role", required = true)]
        roles: Vec<String>,
        /// The caller's organisation (the data-holder id for nodes).
        #[arg(long)]
        org: Option<String>,
        #[arg(long, default_value_t = 60)]
        ttl_minutes: i64,
    },
    /// Audit-trail tools.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Print the OpenAPI document.
    Openapi,
    /// Data-holder node tools.
    Node {
        #[command(subcommand)]
        command: NodeCommand,
    },
}

#[derive(Subcommand)]
pub enum NodeCommand {
    /// Convert the UCI Heart Disease files into the example federation's FHIR R4 bundles and
    /// sample opt-out file.
    ExampleFederation {
        #[arg(long, default_value = "fl_engine/data/heart_disease")]
        uci_dir: PathBuf,
        #[arg(long, default_value = "examples/federation")]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
pub enum AuditCommand {
    /// Verify the hash chain offline, straight from the database; exits 1 and names the first
    /// bad entry if any entry was edited, deleted or reordered.
    Verify {
        #[arg(long, env = "EHDS_DATABASE_URL")]
        database_url: Option<String>,
    },
}

pub async fn run(cli: Cli) -> anyhow::Result<i32> {
    let settings = Settings::load(cli.config.as_deref())?;
    match cli.command {
        Command::Serve { dev } => {
            crate::telemetry::init();
            let app = Application::build(settings, dev).await?;
            app.run_until_stopped(shutdown_signal()).await?;
            Ok(0)
        }
        Command::Token {
            sub,
            roles,
            org,
            ttl_minutes,
        } => {
            for r in &roles {
                anyhow::ensure!(Role::parse(r).is_some(), "unknown role `{r}`");
            }
            anyhow::ensure!(ttl_minutes > 0, "--ttl-minutes must be positive");
            let issuer = DevIssuer::load_or_create(
                &settings.data_dir,
                &settings.public_url(),
                &settings.auth.audience,
            )?;
            println!(
                "{}",
                issuer.mint(&sub, &roles, org.as_deref(), ttl_minutes * 60)?
            );
            Ok(0)
        }
        Command::Audit {
            command: AuditCommand::Verify { database_url },
        } => {
            let url = database_url.unwrap_or_else(|| settings.database_url());
            let store = store::connect(&url).await?;
            let mut tx = store.begin().await?;
            let report = verify_chain(&mut *tx).await?;
            drop(tx);
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(if report.valid { 0 } else { 1 })
        }
        Command::Node {
            command: NodeCommand::ExampleFederation { uci_dir, out },
        } => {
            let summary = crate::node::example_federation::convert(&uci_dir, &out)?;
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
        Command::Openapi => {
            print!("{}", openapi::spec_json());
            Ok(0)
        }
    }
}
