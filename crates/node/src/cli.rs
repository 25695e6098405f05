//! The `ehds-node` command line: the agent (`run`) and the holder's offline tools (`check`,
//! `export-model`, `evaluate-model`, `fedmap-finetune`, `log verify`).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ehds-node",
    version,
    about = "EHDS node agent: a data holder's records train federated studies without leaving the site"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run a data holder's node agent: poll the gateway for tasks, train locally, return
    /// only model updates.
    Run(Box<RunArgs>),
    /// Preflight before joining a study: read the local records through a feature
    /// specification and print the cohort, label balance, coverage, missingness, units and
    /// bad input, as a table or JSON. Contacts no gateway.
    Check(crate::check_cli::CheckArgs),
    /// Export the best model this node evaluated in a study (lowest validation loss on the
    /// holder's own data; personalised where the method is) from its state directory to a
    /// safetensors file for the hospital's own use. Contacts no gateway.
    ExportModel(crate::best_model::ExportModelArgs),
    /// Score a model of a study on this holder's own validation and test parts (by default
    /// the last global model the node received: FedMAP's tier 3) and print the metrics as
    /// JSON. Contacts no gateway.
    EvaluateModel(crate::local_model::EvaluateModelArgs),
    /// FedMAP's tier 2: fine-tune the last global model the node received on this holder's
    /// training part with the prior the study learnt; write it and print its validation and
    /// test metrics as JSON. Contacts no gateway.
    FedmapFinetune(crate::local_model::FedMapFinetuneArgs),
    /// The node's own log of every task it accepted or refused (docs/node-policy.md).
    Log {
        #[command(subcommand)]
        command: LogCommand,
    },
}

#[derive(Subcommand)]
pub enum LogCommand {
    /// Check the log's hash chain; prints the number of entries and the head hash, or names
    /// the first edited, removed or reordered line and exits 1.
    Verify {
        #[arg(long, env = "EHDS_NODE_STATE_DIR")]
        state_dir: PathBuf,
    },
}

#[derive(clap::Args)]
pub struct RunArgs {
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
    /// Development mode: the audience the gateway expects in its tokens (its `auth.audience`).
    #[arg(long, env = "EHDS_AUTH__AUDIENCE", default_value = "ehds-gateway")]
    pub dev_audience: String,
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

/// Runs one command; the exit code is the process's.
pub async fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Check(args) => crate::check_cli::check(args),
        Command::ExportModel(args) => crate::best_model::export(args),
        Command::EvaluateModel(args) => crate::local_model::evaluate_model(args),
        Command::FedmapFinetune(args) => crate::local_model::fedmap_finetune(args),
        Command::Log {
            command: LogCommand::Verify { state_dir },
        } => {
            let path = state_dir.join(crate::node_log::FILE);
            match crate::node_log::verify(&path) {
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
        Command::Run(args) => {
            ehds_core::telemetry::init();
            tokio::select! {
                run = run_agent(*args) => run?,
                () = ehds_core::shutdown::signal() => {}
            }
            Ok(0)
        }
    }
}

async fn run_agent(args: RunArgs) -> anyhow::Result<()> {
    use crate::agent::{Agent, AgentConfig, Credentials, NodePolicy};
    use ehds_core::{dev_issuer::DevIssuer, domain::OrgId};
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
                &args.dev_audience,
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
    let source = crate::check_cli::data_source(args.fhir, args.csv, args.code_map)?;
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
