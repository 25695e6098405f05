//! Command-line interface.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::{
    app::audit::{verify_against_checkpoint, verify_chain},
    auth::Role,
    configuration::Settings,
    startup::Application,
    store,
};
use ehds_core::dev_issuer::DevIssuer;

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
    /// Released-model tools.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
    /// The data holder's node agent is its own program now, `ehds-node`: `ehds-gateway node
    /// ARGS` runs `ehds-node ARGS` from beside this binary (for one release), or says where the
    /// command went.
    #[command(hide = true, disable_help_flag = true)]
    Node {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// The demonstration moved to the development tools: `cargo run --release -- demo` in the
    /// source tree (`ehds-tools demo`).
    #[command(hide = true, disable_help_flag = true)]
    Demo {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

#[derive(Subcommand)]
pub enum ModelCommand {
    /// Check a released model's signed provenance (permit, study, method, round, privacy
    /// spend, contributors, audit tree head) against the audit log's verifier key, and that it
    /// names exactly the file's parameters; prints the statement as JSON, exits 1 if it does
    /// not hold. Contacts no gateway.
    Verify {
        /// The safetensors file `GET /v1/studies/{id}/model` returned.
        file: PathBuf,
        /// The audit log's verifier key (`ehds-gateway audit key`, `GET /v1/audit/log/key`),
        /// or a file holding it.
        #[arg(long)]
        key: String,
    },
}

#[derive(Subcommand)]
pub enum AuditCommand {
    /// Verify the hash chain offline, straight from the database; exits 1 and names the first
    /// bad entry if an entry was edited, deleted or reordered. With `--checkpoint`, also proves
    /// that the log extends a signed checkpoint kept earlier: the Merkle tree is recomputed from
    /// the audit rows, so a removal of the last entries or a rewritten entry fails too.
    Verify {
        #[arg(long, env = "EHDS_DATABASE_URL")]
        database_url: Option<String>,
        /// A signed checkpoint (from `GET /v1/audit/log/checkpoint`) kept by the auditor.
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// The log's verifier key (`<origin>+<id>+<key>`, or a file holding it), as pinned by
        /// the auditor. Without it, the key of the gateway's own `audit.log_key_file`.
        #[arg(long, requires = "checkpoint")]
        key: Option<String>,
    },
    /// Witness the log: fetch the gateway's signed checkpoint, verify its signature and its
    /// consistency with the last checkpoint kept in `--dir`, and keep it. Refuses (exit 1) a
    /// checkpoint that does not extend the kept one.
    Witness {
        /// The gateway's base URL.
        #[arg(long)]
        url: String,
        /// The log's verifier key (`<origin>+<id>+<key>`, or a file holding it).
        #[arg(long)]
        key: String,
        /// Where checkpoints are kept (`checkpoint` is the latest, `checkpoint.<size>` each one).
        #[arg(long)]
        dir: PathBuf,
        /// Bearer token of an auditor account.
        #[arg(long, env = "EHDS_WITNESS_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Seconds between polls.
        #[arg(long, default_value_t = 60)]
        interval: u64,
        /// Poll once and exit.
        #[arg(long)]
        once: bool,
    },
    /// Print the verifier key of the log's checkpoints (for auditors to pin).
    Key,
}

/// A verifier key given on the command line, or the file holding it.
fn verifier_key(arg: &str) -> anyhow::Result<translog::NoteVerifier> {
    let text = if std::path::Path::new(arg).is_file() {
        std::fs::read_to_string(arg)?
    } else {
        arg.to_owned()
    };
    translog::NoteVerifier::from_key_string(text.trim())
        .map_err(|e| anyhow::anyhow!("the verifier key is unusable: {e}"))
}

pub async fn run(cli: Cli) -> anyhow::Result<i32> {
    let settings = Settings::load(cli.config.as_deref())?;
    match cli.command {
        Command::Serve { dev } => {
            ehds_core::telemetry::init();
            let app = Application::build(settings, dev).await?;
            app.run_until_stopped(ehds_core::shutdown::signal()).await?;
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
            command:
                AuditCommand::Verify {
                    database_url,
                    checkpoint,
                    key,
                },
        } => {
            // Read the kept checkpoint and the key before touching the database.
            let kept = match &checkpoint {
                Some(path) => Some(std::fs::read_to_string(path).map_err(|e| {
                    anyhow::anyhow!("Failed to read the checkpoint {}: {e}", path.display())
                })?),
                None => None,
            };
            let url = database_url.unwrap_or_else(|| settings.database_url());
            let store = store::connect(&url).await?;
            let mut tx = store.begin().await?;
            let report = verify_chain(&mut *tx).await?;
            let Some(note) = kept else {
                drop(tx);
                println!("{}", serde_json::to_string_pretty(&report)?);
                return Ok(if report.valid { 0 } else { 1 });
            };
            let verifier = match key {
                Some(k) => verifier_key(&k)?,
                None => own_verifier(&settings, &note)?,
            };
            let log = verify_against_checkpoint(&mut *tx, &note, &verifier).await?;
            drop(tx);
            let valid = report.valid && log.valid;
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({
                    "valid": valid, "chain": report, "log": log,
                }))?
            );
            if let Some(problem) = &log.problem {
                eprintln!("audit log check failed: {problem}");
            } else if !report.valid {
                eprintln!("audit chain check failed: see first_bad");
            }
            Ok(if valid { 0 } else { 1 })
        }
        Command::Audit {
            command:
                AuditCommand::Witness {
                    url,
                    key,
                    dir,
                    token,
                    interval,
                    once,
                },
        } => {
            let witness = crate::witness::Witness::new(&url, token, verifier_key(&key)?, dir)?;
            loop {
                match witness.poll_once().await {
                    Ok(observed) => println!("{observed:?}"),
                    Err(e) => {
                        eprintln!("refused: {e:#}");
                        return Ok(1);
                    }
                }
                if once {
                    return Ok(0);
                }
                tokio::time::sleep(std::time::Duration::from_secs(interval.max(1))).await;
            }
        }
        Command::Audit {
            command: AuditCommand::Key,
        } => {
            own_key_exists(&settings)?;
            let signer = crate::secret::load_log_signer(
                &settings.data_dir,
                settings.audit.log_key_file.as_deref(),
                &settings.log_origin(),
            )?;
            println!("{}", signer.verifier().to_key_string());
            Ok(0)
        }
        Command::Node { args } => moved_to_node_agent(args),
        Command::Demo { .. } => {
            eprintln!(
                "the demonstration is not part of the gateway: run `cargo run --release -- demo` \
                 in the source tree (the `ehds-tools demo` program)"
            );
            Ok(2)
        }
        Command::Model {
            command: ModelCommand::Verify { file, key },
        } => {
            let verifier = verifier_key(&key)?;
            let bytes = std::fs::read(&file)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
            match crate::provenance::verify(&bytes, &verifier) {
                Ok(statement) => {
                    println!("{}", serde_json::to_string_pretty(&statement)?);
                    Ok(0)
                }
                Err(e) => {
                    eprintln!("{}: {e}", file.display());
                    Ok(1)
                }
            }
        }
        Command::Openapi => {
            print!("{}", Application::openapi_json());
            Ok(0)
        }
    }
}

/// The verifier of the gateway's own log key, named as `audit.log_origin` says or, when it is
/// not set, as the checkpoint names its origin.
fn own_verifier(settings: &Settings, note: &str) -> anyhow::Result<translog::NoteVerifier> {
    own_key_exists(settings)?;
    let origin = match &settings.audit.log_origin {
        Some(origin) => origin.clone(),
        None => note.lines().next().unwrap_or_default().to_owned(),
    };
    Ok(crate::secret::load_log_signer(
        &settings.data_dir,
        settings.audit.log_key_file.as_deref(),
        &origin,
    )?
    .verifier())
}

/// The gateway's log key must exist already: these commands never create one.
fn own_key_exists(settings: &Settings) -> anyhow::Result<()> {
    let path = settings
        .audit
        .log_key_file
        .clone()
        .unwrap_or_else(|| settings.data_dir.join("audit-log.key"));
    anyhow::ensure!(
        path.exists(),
        "{} does not exist: give the log's verifier key with --key, or point audit.log_key_file at the gateway's key",
        path.display()
    );
    Ok(())
}

/// `ehds-gateway node ARGS`: the node agent is the `ehds-node` program. Runs it from beside this
/// binary with the same arguments (one release of grace for scripts and unit files), or says
/// where the command went.
fn moved_to_node_agent(args: Vec<std::ffi::OsString>) -> anyhow::Result<i32> {
    let beside = std::env::current_exe()?.with_file_name("ehds-node");
    if !beside.is_file() {
        eprintln!(
            "the node agent is its own program now: run `ehds-node {}` (install the ehds-node \
             binary or image; it takes the same commands and flags)",
            args.iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        );
        return Ok(2);
    }
    eprintln!(
        "`ehds-gateway node` is deprecated and will be removed: run {} directly",
        beside.display()
    );
    // Replace this process, so the agent receives the service manager's signals itself.
    let err =
        std::os::unix::process::CommandExt::exec(std::process::Command::new(&beside).args(&args));
    Err(anyhow::anyhow!("running {}: {err}", beside.display()))
}
