//! Command-line interface.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::{
    app::audit::{verify_against_checkpoint, verify_chain},
    auth::{dev::DevIssuer, Role},
    configuration::Settings,
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
    /// Released-model tools.
    Model {
        #[command(subcommand)]
        command: ModelCommand,
    },
    /// Data-holder node tools.
    Node {
        #[command(subcommand)]
        command: NodeCommand,
    },
    /// The whole EHDS flow on the bundled example federation: gateway (SQLite, development
    /// mode), four node agents over HTTP, application, permit, a DP federated study, model
    /// export and audit verification.
    Demo(crate::demo::DemoArgs),
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
pub enum NodeCommand {
    /// Run a data holder's node agent: poll the gateway for tasks, train locally, return
    /// only model updates.
    Run(Box<NodeRunArgs>),
    /// Preflight before joining a study: read the local records through a feature
    /// specification and print the cohort, label balance, coverage, missingness, units and
    /// bad input, as a table or JSON. Contacts no gateway.
    Check(crate::node::check_cli::CheckArgs),
    /// Export the best model this node evaluated in a study (lowest validation loss on the
    /// holder's own data; personalised where the method is) from its state directory to a
    /// safetensors file for the hospital's own use. Contacts no gateway.
    ExportModel(crate::node::best_model::ExportModelArgs),
    /// Score a model of a study on this holder's own validation and test parts (by default
    /// the last global model the node received: FedMAP's tier 3) and print the metrics as
    /// JSON. Contacts no gateway.
    EvaluateModel(crate::node::local_model::EvaluateModelArgs),
    /// FedMAP's tier 2: fine-tune the last global model the node received on this holder's
    /// training part with the prior the study learnt; write it and print its validation and
    /// test metrics as JSON. Contacts no gateway.
    FedmapFinetune(crate::node::local_model::FedMapFinetuneArgs),
    /// The node's own log of every task it accepted or refused (docs/node-policy.md).
    Log {
        #[command(subcommand)]
        command: NodeLogCommand,
    },
    /// Write the generated multi-site ICU federation (FHIR Bulk Data NDJSON per hospital).
    GenerateCorpus(crate::node::check_cli::CorpusArgs),
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
pub enum NodeLogCommand {
    /// Check the log's hash chain; prints the number of entries and the head hash, or names
    /// the first edited, removed or reordered line and exits 1.
    Verify {
        #[arg(long, env = "EHDS_NODE_STATE_DIR")]
        state_dir: PathBuf,
    },
}

#[derive(clap::Args)]
pub struct NodeRunArgs {
    /// The gateway's base URL.
    #[arg(long, env = "EHDS_NODE_GATEWAY")]
    pub gateway: String,
    /// The data holder this node speaks for (its organisation claim).
    #[arg(long, env = "EHDS_NODE_ORG")]
    pub org: String,
    /// The holder's records as FHIR R4: a Bulk Data export directory (NDJSON, optionally
    /// gzipped), an NDJSON file or a Bundle.
    #[arg(long, conflicts_with = "csv", required_unless_present = "csv")]
    pub fhir: Option<PathBuf>,
    /// The holder's records as a CSV extract.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// The holder's code map: local codes of the study's codes, unit spellings, site-private
    /// features.
    #[arg(long, requires = "fhir")]
    pub code_map: Option<PathBuf>,
    /// Where personalised state and the node's noise key are kept.
    #[arg(long, env = "EHDS_NODE_STATE_DIR")]
    pub state_dir: PathBuf,
    /// OpenID Connect issuer for the client-credentials grant.
    #[arg(long, env = "EHDS_NODE_ISSUER", requires = "client_id")]
    pub issuer: Option<String>,
    #[arg(long, env = "EHDS_NODE_CLIENT_ID")]
    pub client_id: Option<String>,
    /// How the node authenticates at the token endpoint.
    #[arg(long, env = "EHDS_NODE_CLIENT_AUTH", value_enum, default_value_t = ClientAuthMethod::ClientSecretBasic)]
    pub client_auth: ClientAuthMethod,
    /// The client secret (`client_secret_basic`, `client_secret_post`).
    #[arg(long, env = "EHDS_NODE_CLIENT_SECRET", hide_env_values = true)]
    pub client_secret: Option<String>,
    /// The client's private key, PEM (`private_key_jwt`): RSA signs RS256, P-256 ES256,
    /// Ed25519 EdDSA.
    #[arg(long, env = "EHDS_NODE_CLIENT_KEY")]
    pub client_key: Option<PathBuf>,
    /// The `kid` the provider knows the client's key by, when it needs one.
    #[arg(long, env = "EHDS_NODE_CLIENT_KEY_ID")]
    pub client_key_id: Option<String>,
    /// Scopes to ask for (space-separated); none leaves it to the client's registration.
    #[arg(long, env = "EHDS_NODE_SCOPE")]
    pub scope: Option<String>,
    /// The gateway's resource indicator (RFC 8707) sent as `resource`.
    #[arg(long, env = "EHDS_NODE_RESOURCE")]
    pub resource: Option<String>,
    /// The gateway's audience, for providers that take an `audience` parameter instead.
    #[arg(long, env = "EHDS_NODE_AUDIENCE")]
    pub audience: Option<String>,
    /// Development mode: mint tokens with the development key in this gateway data directory.
    #[arg(long)]
    pub dev_key_dir: Option<PathBuf>,
    /// A bearer token obtained elsewhere.
    #[arg(long, env = "EHDS_NODE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Seconds each long poll may wait.
    #[arg(long, default_value_t = 15)]
    pub poll_wait: u64,
    /// Exit after this many tasks.
    #[arg(long)]
    pub max_tasks: Option<usize>,
    /// What the node accepts (docs/node-policy.md); required outside development mode.
    #[arg(long, env = "EHDS_NODE_POLICY")]
    pub policy: Option<PathBuf>,
}

/// Token endpoint client authentication (OpenID Connect Core 1.0 §9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ClientAuthMethod {
    ClientSecretBasic,
    ClientSecretPost,
    PrivateKeyJwt,
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
        Command::Node {
            command: NodeCommand::Check(args),
        } => crate::node::check_cli::check(args),
        Command::Node {
            command: NodeCommand::GenerateCorpus(args),
        } => crate::node::check_cli::generate_corpus(args),
        Command::Node {
            command: NodeCommand::ExportModel(args),
        } => crate::node::best_model::export(args),
        Command::Node {
            command: NodeCommand::EvaluateModel(args),
        } => crate::node::local_model::evaluate_model(args),
        Command::Node {
            command: NodeCommand::FedmapFinetune(args),
        } => crate::node::local_model::fedmap_finetune(args),
        Command::Node {
            command:
                NodeCommand::Log {
                    command: NodeLogCommand::Verify { state_dir },
                },
        } => {
            let path = state_dir.join(crate::node::node_log::FILE);
            match crate::node::node_log::verify(&path) {
                Ok((entries, head)) => {
                    println!(
                        "{}: {entries} entries, chain intact, head {head}",
                        path.display()
                    );
                    Ok(0)
                }
                Err(e) => {
                    eprintln!("{e:#}");
                    Ok(1)
                }
            }
        }
        Command::Node {
            command: NodeCommand::Run(args),
        } => {
            crate::telemetry::init();
            node_run(*args, &settings).await?;
            Ok(0)
        }
        Command::Demo(args) => crate::demo::run(args, settings).await,
        Command::Model {
            command: ModelCommand::Verify { file, key },
        } => {
            let verifier = verifier_key(&key)?;
            let bytes = std::fs::read(&file)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
            match crate::domain::provenance::verify(&bytes, &verifier) {
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

async fn node_run(args: NodeRunArgs, settings: &Settings) -> anyhow::Result<()> {
    use crate::{
        domain::OrgId,
        node::agent::{Agent, AgentConfig, Credentials, NodePolicy},
    };
    let organisation = OrgId::parse(&args.org).map_err(|e| anyhow::anyhow!(e.1))?;
    let credentials = match (args.issuer, args.dev_key_dir, args.token) {
        (Some(issuer), None, None) => {
            use crate::client::{ClientAuth, ClientKey, ClientLogin};
            let auth = match (args.client_auth, args.client_secret, &args.client_key) {
                (ClientAuthMethod::ClientSecretBasic, Some(secret), None) => {
                    ClientAuth::SecretBasic(secret)
                }
                (ClientAuthMethod::ClientSecretPost, Some(secret), None) => {
                    ClientAuth::SecretPost(secret)
                }
                (ClientAuthMethod::PrivateKeyJwt, None, Some(path)) => {
                    ClientAuth::PrivateKeyJwt(ClientKey::load(path, args.client_key_id.clone())?)
                }
                (ClientAuthMethod::PrivateKeyJwt, _, _) => {
                    anyhow::bail!("--client-auth private_key_jwt takes --client-key and no --client-secret")
                }
                _ => anyhow::bail!(
                    "--client-auth client_secret_basic and client_secret_post take --client-secret and no --client-key"
                ),
            };
            Credentials::ClientCredentials(ClientLogin {
                issuer,
                client_id: args.client_id.unwrap_or_default(),
                auth,
                scopes: args
                    .scope
                    .as_deref()
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect(),
                resource: args.resource,
                audience: args.audience,
            })
        }
        (None, Some(dir), None) if !DevIssuer::key_path(&dir).exists() => anyhow::bail!(
            "{} holds no development key: point --dev-key-dir at the data directory of a gateway run with --dev",
            dir.display()
        ),
        (None, Some(dir), None) => Credentials::Dev {
            issuer: std::sync::Arc::new(DevIssuer::load_or_create(
                &dir,
                args.gateway.trim_end_matches('/'),
                &settings.auth.audience,
            )?),
            sub: format!("node-{organisation}"),
            organisation: organisation.clone(),
        },
        (None, None, Some(token)) => Credentials::Static(token),
        _ => anyhow::bail!("give exactly one of --issuer (client credentials), --dev-key-dir or --token"),
    };
    let policy = match (&args.policy, &credentials) {
        (Some(path), _) => NodePolicy::load(path)?,
        (None, Credentials::Dev { .. }) => {
            tracing::warn!("development mode without --policy: the node accepts every task");
            NodePolicy::accept_everything()
        }
        (None, _) => anyhow::bail!(
            "a node outside development mode needs --policy (docs/node-policy.md): it accepts only what its policy lists"
        ),
    };
    let source = crate::node::check_cli::data_source(args.fhir, args.csv, args.code_map)?;
    let mut agent = Agent::new(AgentConfig {
        gateway: args.gateway,
        organisation,
        credentials,
        source,
        state_dir: args.state_dir,
        poll_wait_seconds: args.poll_wait,
        max_tasks: args.max_tasks,
        policy,
    })?;
    agent.run().await
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
