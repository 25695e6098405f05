//! Layered configuration: built-in defaults, then an optional TOML file, then `EHDS_*`
//! environment variables (`__` separates nesting, e.g. `EHDS_AUTH__AUDIENCE`).

use std::{net::SocketAddr, path::PathBuf};

use figment::{
    providers::{Env, Format, Serialized, Toml},
    Figment,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub listen: SocketAddr,
    /// The externally visible base URL; defaults to `http://<listen>`.
    pub public_url: Option<String>,
    pub data_dir: PathBuf,
    /// `postgres://...` or `sqlite:...`; without it, a SQLite file in `data_dir`.
    pub database_url: Option<String>,
    pub auth: AuthSettings,
    pub http: HttpSettings,
    pub hdab: HdabSettings,
    /// Seconds between sweeps that record permit expiries in the audit trail.
    pub expiry_sweep_seconds: u64,
    pub federation: FederationSettings,
    pub audit: AuditSettings,
    pub metrics: MetricsSettings,
    pub webhooks: WebhookSettings,
    pub console: ConsoleSettings,
    #[serde(default)]
    pub procedure: ProcedureSettings,
    /// The HDAB's fee schedule (Art. 62); none: no fees are charged and estimates are optional.
    #[serde(default)]
    pub fees: Option<ehds_core::domain::application::fees::FeeSchedule>,
    /// How Art. 69 statistics are checked and released.
    #[serde(default)]
    pub statistics: StatisticsConfig,
}

/// How the HDAB answers statistics (docs/data-requests.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StatisticsConfig {
    /// Output-checking thresholds; defaults: ACRO's (minimum cell 10, dominance n = 2 /
    /// k = 0.9, p-ratio 0.1, zeros reviewed, residual degrees of freedom 10, survival at-risk 10).
    pub rules: ehds_stats::Rules,
    /// `flagged` (an officer sees what the checker flags) or `always` (every answer).
    pub review: ehds_core::domain::statistics::ReviewPolicy,
    /// Seconds the holders' nodes have for their part of a run.
    pub node_deadline_seconds: u64,
}

impl Default for StatisticsConfig {
    fn default() -> Self {
        Self {
            rules: ehds_stats::Rules::default(),
            review: Default::default(),
            node_deadline_seconds: 3600,
        }
    }
}

/// How the HDAB runs the Art. 67-68 procedure.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProcedureSettings {
    /// A grant takes effect only when a second officer confirms it.
    pub four_eyes: bool,
    /// Decisions go to the public register when made; when false, an officer publishes each
    /// one (its reasons reviewed for personal data) within 30 working days.
    pub publish_on_decision: bool,
    /// A TOML holiday calendar for the working-day deadlines, replacing the built-in one of
    /// `hdab.member_state` (docs/hdab-procedure.md shows the format).
    pub holiday_calendar_file: Option<PathBuf>,
}

impl Default for ProcedureSettings {
    fn default() -> Self {
        Self {
            four_eyes: false,
            publish_on_decision: true,
            holiday_calendar_file: None,
        }
    }
}

impl Settings {
    /// The working-day calendar of the HDAB's member state: the configured file, else the
    /// built-in one, else weekends only (with a warning).
    pub fn holiday_calendar(
        &self,
    ) -> anyhow::Result<ehds_core::domain::application::calendar::HolidayCalendar> {
        use ehds_core::domain::application::calendar::HolidayCalendar;
        if let Some(path) = &self.procedure.holiday_calendar_file {
            anyhow::ensure!(
                path.exists(),
                "holiday calendar {} not found",
                path.display()
            );
            let calendar: HolidayCalendar = Figment::from(Toml::file(path))
                .extract()
                .map_err(|e| anyhow::anyhow!("holiday calendar {}: {e}", path.display()))?;
            calendar.validate().map_err(anyhow::Error::msg)?;
            return Ok(calendar);
        }
        Ok(HolidayCalendar::builtin(&self.hdab.member_state).unwrap_or_else(|| {
            tracing::warn!(member_state = %self.hdab.member_state, "no built-in holiday calendar: working days count weekends only until procedure.holiday_calendar_file is set");
            HolidayCalendar::weekends_only(&self.hdab.member_state)
        }))
    }
}

/// The web console's sign-in (docs/console.md): an OpenID Connect client of the configured
/// issuer using the authorization code flow with PKCE. Without a `client_id` the console offers
/// no production sign-in (development mode has its role picker).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsoleSettings {
    pub client_id: Option<String>,
    /// Where the issuer sends the browser back; `{public_url}/console/callback` when unset.
    pub redirect_url: Option<String>,
    /// Scopes asked for beside `openid`, e.g. the scope under which the issuer puts the
    /// gateway in the access token's audience.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// RFC 8707 resource indicator sent with the authorization and token requests, for issuers
    /// that issue an access token for the gateway only when it is named (oidc-provider).
    pub resource: Option<String>,
}

/// Signed webhooks announcing study and permit state changes (src/webhooks.rs,
/// docs/webhooks.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSettings {
    pub endpoints: Vec<EndpointSettings>,
    /// Attempts per event before it is given up and the endpoint moves on.
    pub max_attempts: usize,
    /// Wait before the first retry; doubled on each further one, up to `retry_max_delay_ms`.
    pub retry_min_delay_ms: u64,
    pub retry_max_delay_ms: u64,
    /// Longest one delivery attempt may take.
    pub timeout_seconds: u64,
    /// How often an idle dispatcher looks for new audit entries.
    pub poll_millis: u64,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            endpoints: vec![],
            max_attempts: 8,
            retry_min_delay_ms: 1000,
            retry_max_delay_ms: 300_000,
            timeout_seconds: 10,
            poll_millis: 1000,
        }
    }
}

/// One receiver.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSettings {
    /// Names the endpoint's cursor; renaming it starts a new one.
    pub name: String,
    /// `https://...`; plain `http://` only to a loopback address.
    pub url: String,
    /// The shared secret: raw bytes (at least 16), or `whsec_<base64>` as Standard Webhooks
    /// libraries generate it.
    pub secret_file: PathBuf,
    /// Event types (`study.completed`) or families (`permit.*`); empty means all.
    #[serde(default)]
    pub events: Vec<String>,
}

/// `GET /metrics` (docs/observability.md).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSettings {
    /// File holding the bearer token Prometheus presents (its `authorization.credentials_file`).
    /// Without it `/metrics` is served in development mode only.
    pub bearer_token_file: Option<PathBuf>,
}

/// The verifiable audit log (docs/verifiable-log.md).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSettings {
    /// The log's origin: the first line of its checkpoints and the name of the key that signs
    /// them. Defaults to the public URL's host (and port) followed by `/audit`.
    pub log_origin: Option<String>,
    /// File holding the Ed25519 key that signs checkpoints: 32 raw seed bytes, or a signer key
    /// `PRIVATE+KEY+<origin>+<id>+<base64>`. Defaults to `audit-log.key` in `data_dir`,
    /// created on first start.
    pub log_key_file: Option<PathBuf>,
    /// How audited transactions reach the disk: `group` (default) flushes the transactions
    /// that commit together once, `each` flushes every transaction on its own.
    #[serde(default)]
    pub commit: crate::store::CommitMode,
}

/// The round loop and the node protocol.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FederationSettings {
    /// How often the round loop looks at deadlines when nothing wakes it earlier.
    pub tick_millis: u64,
    /// How long a replica's lease on a study's round loop (and on the sweeps and webhook
    /// deliveries) lasts without renewal: after a replica dies, another takes its work over
    /// within this time.
    pub lease_seconds: u64,
    /// Largest model update a node may upload (decoded safetensors bytes).
    pub max_update_bytes: usize,
    /// Longest a node's `GET /v1/node/tasks?wait=` may hold the request open.
    pub long_poll_max_seconds: u64,
    /// Attempts a round may fail for want of quorum before the study fails.
    pub max_round_attempts: u32,
    /// Floors of every study's output check before a model may leave (Art. 73(2)).
    pub output_min_sites: usize,
    pub output_min_samples_per_site: u64,
    /// Per-holder counts between 1 and this minus 1 are withheld from what researchers see
    /// (small-cell suppression; 1 or 0 shows every count).
    pub small_cell_threshold: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// OpenID Connect issuer; discovery at `<issuer>/.well-known/openid-configuration`.
    /// Ignored in development mode, where the gateway is its own issuer.
    pub issuer: Option<String>,
    pub audience: String,
    /// Allowed JWS algorithms. HMAC algorithms and `none` are refused at start-up.
    pub algorithms: Vec<String>,
    pub leeway_seconds: u64,
    /// Claim holding the caller's roles (dotted path, e.g. `realm_access.roles`).
    pub roles_claim: String,
    /// Claim holding the caller's organisation (also the data-holder id for nodes).
    pub organisation_claim: String,
    /// Minimum seconds between JWKS refreshes triggered by an unknown `kid`.
    pub jwks_refresh_min_seconds: u64,
    /// Seconds the issuer's key set is used before it is fetched again, so a key the issuer
    /// retired stops verifying tokens within this time.
    pub jwks_max_age_seconds: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSettings {
    pub body_limit_bytes: usize,
    /// Longest a request may take once its head has been read.
    pub request_timeout_seconds: u64,
    /// Origins allowed by CORS; empty (the default) disables CORS.
    pub cors_allowed_origins: Vec<String>,
    /// Largest request head (request line and headers) accepted; a bearer JWT needs a few kB.
    /// Larger heads are refused with 431.
    pub max_header_bytes: usize,
    /// Longest a client may take to send a request head, and longest an idle keep-alive
    /// connection stays open waiting for the next one (slow-header attacks).
    pub header_read_timeout_seconds: u64,
    /// Connections served at once; further clients wait in the listen backlog.
    pub max_connections: usize,
    /// Requests without valid credentials that one source address may make per minute before
    /// it is answered 429 (and its refusals are only counted, not audited one by one).
    pub unauthenticated_per_source_per_minute: u32,
    /// Refusals of requests without valid credentials, from all sources together, audited one
    /// entry each per minute; beyond it they are counted into one summary entry per minute.
    pub unauthenticated_audited_per_minute: u32,
    /// How long a 429 to a throttled source is held before it is sent (then the connection is
    /// closed): a flooding client that waits for its answers gets one per connection per hold
    /// instead of as many as the gateway can produce. 0 answers at once.
    pub throttled_hold_ms: u64,
    /// 429s held at once; beyond it they are sent without the hold, so held answers never tie
    /// up more than this many of the `max_connections` slots.
    pub throttled_held_max: usize,
    /// Requests one authenticated caller (one token subject) may make per second, sustained;
    /// beyond it (and its burst) the caller is answered 429 with `Retry-After`. 0: no limit.
    pub per_principal_per_second: u32,
    /// Requests one caller may make at once above that pace.
    pub per_principal_burst: u32,
    /// Header naming the client address when the gateway runs behind a trusted reverse proxy
    /// (e.g. `x-forwarded-for`, whose last hop is used); unset, the peer address is used.
    pub client_ip_header: Option<String>,
}

/// The controller details that GDPR Art. 30 records carry.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HdabSettings {
    pub name: String,
    pub contact: String,
    pub dpo_contact: String,
    pub member_state: String,
    pub security_measures: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".parse().expect("valid default address"),
            public_url: None,
            data_dir: PathBuf::from("data"),
            database_url: None,
            auth: AuthSettings {
                issuer: None,
                audience: "ehds-gateway".into(),
                algorithms: vec!["RS256".into(), "PS256".into(), "ES256".into(), "EdDSA".into()],
                leeway_seconds: 30,
                roles_claim: "roles".into(),
                organisation_claim: "org".into(),
                jwks_refresh_min_seconds: 10,
                jwks_max_age_seconds: 300,
            },
            http: HttpSettings {
                body_limit_bytes: 1024 * 1024,
                request_timeout_seconds: 30,
                cors_allowed_origins: vec![],
                max_header_bytes: 16 * 1024,
                header_read_timeout_seconds: 10,
                max_connections: 1024,
                unauthenticated_per_source_per_minute: 60,
                unauthenticated_audited_per_minute: 120,
                throttled_hold_ms: 1000,
                throttled_held_max: 256,
                per_principal_per_second: 200,
                per_principal_burst: 2000,
                client_ip_header: None,
            },
            hdab: HdabSettings {
                name: "Example Health Data Access Body".into(),
                contact: "hdab@example.eu".into(),
                dpo_contact: "dpo@example.eu".into(),
                member_state: "DE".into(),
                security_measures: vec![
                    "Authenticated personal accounts (OpenID Connect), role- and permit-scoped authorisation (Cedar policies)".into(),
                    "Hash-chained, append-only audit trail of every access and change".into(),
                    "Pseudonymised subjects; opt-out registry keyed by HMAC".into(),
                    "Federated processing: personal data stays with data holders; only DP-protected aggregates leave".into(),
                ],
            },
            expiry_sweep_seconds: 60,
            federation: FederationSettings {
                tick_millis: 250,
                lease_seconds: 10,
                max_update_bytes: 64 * 1024 * 1024,
                long_poll_max_seconds: 20,
                max_round_attempts: 3,
                output_min_sites: 2,
                output_min_samples_per_site: 10,
                small_cell_threshold: 10,
            },
            audit: AuditSettings::default(),
            metrics: MetricsSettings::default(),
            webhooks: WebhookSettings::default(),
            console: ConsoleSettings::default(),
            procedure: ProcedureSettings::default(),
            fees: None,
            statistics: StatisticsConfig::default(),
        }
    }
}

const SETTING_KEYS: [&str; 16] = [
    "listen",
    "public_url",
    "data_dir",
    "database_url",
    "auth",
    "http",
    "hdab",
    "expiry_sweep_seconds",
    "federation",
    "audit",
    "metrics",
    "webhooks",
    "console",
    "procedure",
    "fees",
    "statistics",
];

impl Settings {
    /// Defaults, then `file` (if given, it must exist), then the environment.
    pub fn load(file: Option<&std::path::Path>) -> anyhow::Result<Self> {
        let mut fig = Figment::from(Serialized::defaults(Settings::default()));
        if let Some(path) = file {
            anyhow::ensure!(
                path.exists(),
                "configuration file {} not found",
                path.display()
            );
            fig = fig.merge(Toml::file(path));
        }
        // Only variables naming a setting: EHDS_CONFIG names the file, and orchestrators add
        // variables of their own (Kubernetes service links such as EHDS_GATEWAY_SERVICE_HOST).
        let env = Env::prefixed("EHDS_").filter(|key| {
            let top = key
                .as_str()
                .split("__")
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            SETTING_KEYS.contains(&top.as_str())
        });
        let settings: Settings = fig.merge(env.split("__")).extract()?;
        Ok(settings)
    }

    pub fn public_url(&self) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.listen))
            .trim_end_matches('/')
            .to_owned()
    }

    /// The verifiable audit log's origin (see `AuditSettings::log_origin`).
    pub fn log_origin(&self) -> String {
        if let Some(origin) = &self.audit.log_origin {
            return origin.clone();
        }
        let public = self.public_url();
        let host = url::Url::parse(&public)
            .ok()
            .and_then(|u| {
                u.host_str().map(|h| match u.port() {
                    Some(p) => format!("{h}:{p}"),
                    None => h.to_owned(),
                })
            })
            .unwrap_or_else(|| "ehds-gateway".into());
        format!("{host}/audit")
    }

    pub fn database_url(&self) -> String {
        self.database_url.clone().unwrap_or_else(|| {
            format!(
                "sqlite://{}?mode=rwc",
                self.data_dir.join("ehds-gateway.db").display()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_ehds_variables_are_ignored_and_settings_are_read() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("EHDS_CONFIG", "/etc/ehds/config.toml");
            jail.set_env("EHDS_GATEWAY_SERVICE_HOST", "10.0.0.1");
            jail.set_env("EHDS_AUTH__AUDIENCE", "hdab-api");
            jail.set_env("EHDS_LISTEN", "0.0.0.0:9000");
            let s = Settings::load(None).map_err(|e| e.to_string())?;
            assert_eq!(s.auth.audience, "hdab-api");
            assert_eq!(s.listen.port(), 9000);
            Ok(())
        });
    }

    #[test]
    fn a_holiday_calendar_file_replaces_the_built_in_one() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "ie.toml",
                r#"
member_state = "IE"
source = "Organisation of Working Time Act 1997, Schedule 2"

[[holidays]]
fixed = { month = 1, day = 1 }

[[holidays]]
easter = { offset = 1 }

[[holidays]]
nth_weekday = { month = 5, weekday = "Mon", nth = 1 }
"#,
            )?;
            let mut s = Settings::default();
            s.procedure.holiday_calendar_file = Some(jail.directory().join("ie.toml"));
            let calendar = s.holiday_calendar().map_err(|e| e.to_string())?;
            assert_eq!(calendar.member_state, "IE");
            let may_day = chrono::NaiveDate::from_ymd_opt(2026, 5, 4).unwrap();
            let easter_monday = chrono::NaiveDate::from_ymd_opt(2026, 4, 6).unwrap();
            assert!(calendar.is_holiday(may_day) && calendar.is_holiday(easter_monday));
            // the built-in calendar of the configured member state otherwise
            s.procedure.holiday_calendar_file = None;
            assert_eq!(
                s.holiday_calendar()
                    .map_err(|e| e.to_string())?
                    .member_state,
                "DE"
            );
            jail.create_file(
                "bad.toml",
                "member_state = \"IE\"\n[[holidays]]\nfixed = { month = 2, day = 30 }\n",
            )?;
            s.procedure.holiday_calendar_file = Some(jail.directory().join("bad.toml"));
            assert!(s.holiday_calendar().is_err());
            Ok(())
        });
    }
}
