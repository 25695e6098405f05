//! Builds the application from settings and runs it until a shutdown signal.

use std::{future::Future, path::Path, sync::Arc, time::Duration};

use anyhow::Context;
use tokio::net::TcpListener;

use crate::{
    auth::Authenticator,
    authz::Authorizer,
    configuration::Settings,
    federation::Federation,
    http::{self, AppState},
    secret::KeyVault,
    store,
};
use ehds_core::{dev_issuer::DevIssuer, domain::optout::PseudonymKey};

pub struct Application {
    listener: TcpListener,
    state: AppState,
    base_url: String,
    webhooks: Vec<crate::webhooks::Endpoint>,
}

const PSEUDONYM_KEY_FILE: &str = "optout-pseudonym.key";

/// The HMAC key of the opt-out registry. Created once; losing it makes the registry unreadable,
/// so operators must back it up with the database.
fn load_or_create_pseudonym_key(data_dir: &Path) -> anyhow::Result<PseudonymKey> {
    let path = data_dir.join(PSEUDONYM_KEY_FILE);
    let (key, created) = ehds_core::key_file::load_or_create(&path)?;
    if created {
        tracing::warn!(path = %path.display(), "created a new opt-out pseudonym key; back it up with the database");
    }
    Ok(PseudonymKey::new(key))
}

/// The log's origin: the setting, else derived from the URL the gateway is reached at (the
/// bound address when no public URL is set).
fn log_origin(settings: &Settings, base_url: &str) -> String {
    if settings.audit.log_origin.is_some() || settings.public_url.is_some() {
        return settings.log_origin();
    }
    Settings {
        public_url: Some(base_url.to_owned()),
        ..settings.clone()
    }
    .log_origin()
}

impl Application {
    pub async fn build(settings: Settings, dev: bool) -> anyhow::Result<Self> {
        // before anything happens that /metrics counts
        crate::observability::process_metrics();
        ehds_core::key_file::create_private_dir(&settings.data_dir)?;
        let listener = TcpListener::bind(settings.listen)
            .await
            .with_context(|| format!("Failed to listen on {}", settings.listen))?;
        let local = listener.local_addr()?;
        let base_url = settings
            .public_url
            .clone()
            .map(|u| u.trim_end_matches('/').to_owned())
            .unwrap_or_else(|| format!("http://{local}"));
        let store = store::connect_with(&settings.database_url(), settings.audit.commit).await?;
        let dev_issuer = if dev {
            Some(Arc::new(DevIssuer::load_or_create(
                &settings.data_dir,
                &base_url,
                &settings.auth.audience,
            )?))
        } else {
            None
        };
        let issuer = match &dev_issuer {
            Some(d) => d.issuer().to_owned(),
            None => settings.auth.issuer.clone()
                .context("auth.issuer (EHDS_AUTH__ISSUER) must name the OpenID Connect issuer, or run with --dev")?,
        };
        let auth = Authenticator::new(&settings.auth, issuer)?;
        crate::app::audit::catch_up_tree(store.as_ref())
            .await
            .context("Failed to extend the audit tree over the existing audit entries")?;
        let log_signer = Arc::new(crate::secret::load_log_signer(
            &settings.data_dir,
            settings.audit.log_key_file.as_deref(),
            &log_origin(&settings, &base_url),
        )?);
        tracing::info!(verifier_key = %log_signer.verifier().to_key_string(), "audit log checkpoints are signed; auditors pin this verifier key");
        let pseudonym_key = load_or_create_pseudonym_key(&settings.data_dir)?;
        let authz = Arc::new(Authorizer::new()?);
        let settings_http = settings.http.clone();
        let vault = Arc::new(KeyVault::load_or_create(&settings.data_dir)?);
        crate::app::studies::seal_stored_noise_keys(store.as_ref(), &vault)
            .await
            .context("Failed to seal the stored study noise keys")?;
        let metrics_access =
            http::metrics::MetricsAccess::load(settings.metrics.bearer_token_file.as_deref(), dev)?;
        let federation = Arc::new(Federation::new(
            store.clone(),
            authz.clone(),
            settings.federation.clone(),
            vault,
        ));
        let procedure = Arc::new(crate::app::applications::ProcedureRules {
            four_eyes: settings.procedure.four_eyes,
            publish_on_decision: settings.procedure.publish_on_decision,
            calendar: settings.holiday_calendar()?,
            fees: match &settings.fees {
                Some(fees) => {
                    fees.validate().map_err(anyhow::Error::msg)?;
                    Some(fees.clone())
                }
                None => None,
            },
            statistics: crate::app::statistics::StatisticsSettings {
                rules: settings.statistics.rules,
                review: settings.statistics.review,
                node_deadline: chrono::Duration::seconds(
                    settings
                        .statistics
                        .node_deadline_seconds
                        .clamp(1, 30 * 24 * 3600) as i64,
                ),
            },
        });
        let state = AppState {
            procedure,
            store,
            auth: Arc::new(auth),
            authz,
            federation,
            settings: Arc::new(settings),
            base_url: base_url.clone(),
            dev: dev_issuer,
            pseudonym_key,
            optout_scopes: Arc::new(crate::app::optouts::ScopeCache::default()),
            unauthenticated: Arc::new(http::guard::UnauthenticatedLimits::new(&settings_http)),
            principals: Arc::new(http::guard::PrincipalLimits::new(&settings_http)),
            log_signer,
            metrics_access,
        };
        // every replica at its start, lease or not: a restarted gateway records what time did
        // while it was down before it serves, even while its predecessor's lease runs out
        crate::app::sweeps::sweep(state.store.as_ref(), &state.procedure)
            .await
            .context("Failed to record expired permits and passed deadlines")?;
        let webhooks = crate::webhooks::prepare(state.store.as_ref(), &state.settings.webhooks)
            .await
            .context("Failed to set up the webhook endpoints")?;
        Ok(Self {
            listener,
            state,
            base_url,
            webhooks,
        })
    }

    pub fn port(&self) -> u16 {
        self.listener
            .local_addr()
            .map(|a| a.port())
            .unwrap_or_default()
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The OpenAPI document of the API this application serves.
    pub fn openapi_json() -> String {
        http::openapi::spec_json()
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let sweep_state = self.state.clone();
        let period = Duration::from_secs(self.state.settings.expiry_sweep_seconds.max(1));
        let sweeper = tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            loop {
                tick.tick().await;
                if let Err(e) = sweep_once(&sweep_state).await {
                    tracing::error!(error = %e, "expiry and deadline sweep failed");
                }
            }
        });
        let fleet = self.state.federation.fleet.clone();
        let signals = fleet.spawn();
        let summary_state = self.state.clone();
        let summariser = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            tick.tick().await;
            loop {
                tick.tick().await;
                if let Err(e) = http::record_refusal_summary(&summary_state).await {
                    tracing::error!(error = %e, "failed to record the summary of refusals");
                }
                summary_state.unauthenticated.forget_idle_sources();
                summary_state.principals.forget_idle();
            }
        });
        // The round loop resumes every live study where the database says it stands.
        let rounds = tokio::spawn(self.state.federation.clone().run());
        let webhooks = crate::webhooks::spawn(
            self.state.store.clone(),
            fleet.clone(),
            &self.state.settings.webhooks,
            self.webhooks,
        )?;
        tracing::info!(url = %self.base_url, dev = self.state.dev.is_some(), backend = self.state.store.backend(), "ehds-gateway listening");
        let http_settings = self.state.settings.http.clone();
        let summary_state_at_stop = self.state.clone();
        // the console beside the API, calling it in process
        let console = crate::console::router(self.state.clone(), http::api(self.state.clone()));
        let app = http::router(self.state.clone()).nest_service(crate::console::BASE, console);
        let app = http::layers(app, &self.state.settings);
        let served = http::server::serve(self.listener, app, &http_settings, shutdown).await;
        sweeper.abort();
        summariser.abort();
        rounds.abort();
        webhooks.iter().for_each(|w| w.abort());
        signals.iter().for_each(|s| s.abort());
        // the other replicas take this one's studies, sweeps and deliveries over at once
        match fleet.release_all().await {
            Ok(n) if n > 0 => tracing::info!(leases = n, "handed this replica's leases back"),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not hand the leases back; they run out on their own")
            }
        }
        if let Err(e) = http::record_refusal_summary(&summary_state_at_stop).await {
            tracing::error!(error = %e, "failed to record the summary of refusals");
        }
        served.context("server error")
    }
}

/// Runs the periodic sweeps if this replica holds their lease: one replica of a fleet sweeps,
/// and keeps the lease for two periods so that the others do not take turns.
async fn sweep_once(state: &AppState) -> anyhow::Result<()> {
    let period = Duration::from_secs(state.settings.expiry_sweep_seconds.max(1));
    if state
        .federation
        .fleet
        .hold_for("sweeps", period * 2)
        .await?
    {
        crate::app::sweeps::sweep(state.store.as_ref(), &state.procedure).await?;
    }
    Ok(())
}
