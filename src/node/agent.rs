//! The node agent a data holder runs next to its records: it long-polls the gateway for
//! tasks, reads its records through the study's feature specification, asks the gateway which
//! subjects have opted out and drops them, trains locally, and returns only the model update
//! and counts.
//!
//! Training is reproducible: a task of round r starts from the node's saved state after round
//! r-1 and draws from generators seeded by (study seed, holder, round), so a task fetched twice
//! (after a gateway or node restart) yields the same update. Personalised state (personal
//! models, local heads, control variates) is saved under the state directory and never sent.

use std::{
    collections::{BTreeSet, HashMap},
    path::PathBuf,
    time::Duration,
};

use anyhow::{bail, Context};
use fl_engine::{
    data::SiteData,
    dp::NoiseRng,
    sim::stream_seed,
    strategy::{ClientStrategy, Site, SiteSnapshot},
    train::evaluate,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{csv_source, fhir_source, FeatureSpec, SiteRows};
use crate::{
    auth::dev::DevIssuer,
    domain::{study::TaskKind, OrgId, StudyId},
    federation::wire::{decode_fit_ins, encode_update, NodeEvaluation, NodeTask, TaskResultBody},
};

/// Where the node's records are.
#[derive(Debug, Clone)]
pub enum DataSource {
    /// A FHIR R4 Bundle (Patient, Observation, Condition).
    Fhir(PathBuf),
    /// A CSV extract with the specification's columns.
    Csv(PathBuf),
}

/// How the node authenticates as a data holder.
pub enum Credentials {
    /// OAuth 2.0 client credentials at the issuer's token endpoint (found by discovery).
    ClientCredentials {
        issuer: String,
        client_id: String,
        client_secret: String,
    },
    /// Development mode: tokens minted with the gateway's development key.
    Dev {
        issuer: Box<DevIssuer>,
        sub: String,
        organisation: OrgId,
    },
    /// A bearer token obtained elsewhere.
    Static(String),
}

pub struct AgentConfig {
    pub gateway: String,
    pub organisation: OrgId,
    pub credentials: Credentials,
    pub source: DataSource,
    pub state_dir: PathBuf,
    /// Seconds each long poll may wait.
    pub poll_wait_seconds: u64,
    /// Stop after this many tasks (tests and demos); run forever without.
    pub max_tasks: Option<usize>,
}

struct Token {
    value: String,
    renew_at: std::time::Instant,
}

pub struct Agent {
    config: AgentConfig,
    http: reqwest::Client,
    token: Option<Token>,
    /// Records per study, read once: (feature specification text, rows).
    rows: HashMap<StudyId, (String, SiteRows)>,
    /// Seeds the node's DP-SGD noise; kept in the state directory, never sent.
    noise_key: [u8; 32],
}

/// What the node keeps between rounds of a study.
#[derive(Serialize, Deserialize)]
struct SavedState {
    round: u64,
    site: SiteSnapshot,
    client: serde_json::Value,
}

/// A refusal by the gateway that retrying will not change.
#[derive(Debug, thiserror::Error)]
#[error("the gateway refused ({status}): {code}: {detail}")]
pub struct Refused {
    pub status: u16,
    pub code: String,
    pub detail: String,
}

fn holder_stream(holder: &OrgId) -> u64 {
    let h = Sha256::digest(holder.as_str().as_bytes());
    u64::from_le_bytes(h[..8].try_into().expect("8 bytes"))
}

impl Agent {
    pub fn new(config: AgentConfig) -> anyhow::Result<Self> {
        let (key, _) = crate::secret::load_or_create(&config.state_dir.join("noise.key"))?;
        let noise_key: [u8; 32] = key[..32].try_into().expect("at least 32 bytes");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.poll_wait_seconds + 60))
            .build()?;
        Ok(Self {
            config,
            http,
            token: None,
            rows: HashMap::new(),
            noise_key,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.config.gateway.trim_end_matches('/'))
    }

    async fn bearer(&mut self) -> anyhow::Result<String> {
        if let Some(t) = &self.token {
            if std::time::Instant::now() < t.renew_at {
                return Ok(t.value.clone());
            }
        }
        let (value, lifetime) = match &self.config.credentials {
            Credentials::Static(t) => (t.clone(), Duration::from_secs(u64::MAX / 4)),
            Credentials::Dev {
                issuer,
                sub,
                organisation,
            } => (
                issuer.mint(
                    sub,
                    &["data_holder".to_owned()],
                    Some(organisation.as_str()),
                    3600,
                )?,
                Duration::from_secs(3000),
            ),
            Credentials::ClientCredentials {
                issuer,
                client_id,
                client_secret,
            } => client_credentials(&self.http, issuer, client_id, client_secret).await?,
        };
        self.token = Some(Token {
            value: value.clone(),
            renew_at: std::time::Instant::now() + lifetime,
        });
        Ok(value)
    }

    /// Sends a request built by `build`, retrying while the gateway is unreachable (it may be
    /// restarting) until `give_up`. A refusal comes back as [`Refused`].
    async fn call(
        &mut self,
        give_up: std::time::Instant,
        build: impl Fn(&reqwest::Client, String) -> reqwest::RequestBuilder,
    ) -> anyhow::Result<reqwest::Response> {
        let mut backoff = Duration::from_millis(100);
        loop {
            let token = self.bearer().await?;
            match build(&self.http, token).send().await {
                Ok(r) if r.status().is_success() => return Ok(r),
                Ok(r) if r.status() == reqwest::StatusCode::UNAUTHORIZED => {
                    self.token = None;
                    if std::time::Instant::now() >= give_up {
                        bail!("the gateway does not accept the node's credentials");
                    }
                }
                Ok(r) if r.status().is_client_error() => {
                    let status = r.status().as_u16();
                    let body: serde_json::Value = r.json().await.unwrap_or_default();
                    return Err(Refused {
                        status,
                        code: body["code"].as_str().unwrap_or("").to_owned(),
                        detail: body["detail"].as_str().unwrap_or("").to_owned(),
                    }
                    .into());
                }
                Ok(r) => tracing::warn!(status = %r.status(), "gateway error; retrying"),
                Err(e) => tracing::debug!(error = %e, "gateway unreachable; retrying"),
            }
            if std::time::Instant::now() >= give_up {
                bail!("the gateway did not answer in time");
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }

    /// Polls and works until `max_tasks` tasks are done (forever without a limit).
    pub async fn run(&mut self) -> anyhow::Result<()> {
        let mut done = 0;
        loop {
            let wait = self.config.poll_wait_seconds;
            let url = self.url(&format!("/v1/node/tasks?wait={wait}"));
            let give_up = std::time::Instant::now() + Duration::from_secs(24 * 3600);
            let tasks: Vec<NodeTask> = self
                .call(give_up, |c, t| c.get(&url).bearer_auth(t))
                .await?
                .json()
                .await?;
            for task in tasks {
                let id = task.task_id;
                match self.work(&task).await {
                    Ok(()) => {
                        tracing::info!(task = %id, round = task.round, kind = task.kind.as_str(), "task done")
                    }
                    Err(e) => match e.downcast_ref::<Refused>() {
                        Some(r) => {
                            tracing::warn!(task = %id, code = %r.code, "task refused: {}", r.detail)
                        }
                        None => tracing::error!(task = %id, error = ?e, "task failed"),
                    },
                }
                done += 1;
                if self.config.max_tasks.is_some_and(|m| done >= m) {
                    return Ok(());
                }
            }
        }
    }

    fn study_dir(&self, study: StudyId) -> PathBuf {
        self.config.state_dir.join(study.to_string())
    }

    fn read_rows(&mut self, task: &NodeTask) -> anyhow::Result<SiteRows> {
        let text = task.study.feature_spec.to_string();
        if let Some((t, rows)) = self.rows.get(&task.study_id) {
            if *t == text {
                return Ok(rows.clone());
            }
        }
        let spec = FeatureSpec::from_json(&text)?;
        // Defence in depth: the node reads nothing the study did not declare (and the gateway
        // checked the declaration against the permit).
        let undeclared: Vec<_> = spec
            .data_categories()
            .into_iter()
            .filter(|c| !task.study.categories.contains(c))
            .collect();
        if !undeclared.is_empty() {
            bail!("the feature specification reads undeclared categories {undeclared:?}");
        }
        let rows = match &self.config.source {
            DataSource::Fhir(p) => fhir_source::load_bundle_file(&spec, p)?,
            DataSource::Csv(p) => csv_source::read_csv(&spec, std::fs::File::open(p)?)?,
        };
        self.rows.insert(task.study_id, (text, rows.clone()));
        Ok(rows)
    }

    /// Asks the gateway which of the node's subjects the permit excludes (Art. 71), at the
    /// round's pinned registry version.
    async fn opted_out(
        &mut self,
        task: &NodeTask,
        rows: &SiteRows,
        give_up: std::time::Instant,
    ) -> anyhow::Result<BTreeSet<String>> {
        let subjects: Vec<&str> = rows
            .rows
            .iter()
            .map(|r| r.pseudonym.as_str())
            .chain(rows.incomplete.iter().map(String::as_str))
            .collect();
        let body = json!({
            "permit_id": task.permit_id, "subjects": subjects, "categories": task.study.categories,
            "policy": task.study.optout_policy, "registry_version": task.registry_version,
        });
        let url = self.url("/v1/opt-outs/filter");
        let answer: serde_json::Value = self
            .call(give_up, |c, t| c.post(&url).bearer_auth(t).json(&body))
            .await?
            .json()
            .await?;
        let exclude = answer["exclude"]
            .as_array()
            .context("the filter answer has no `exclude` list")?;
        Ok(exclude
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect())
    }

    /// The latest state saved after a round no later than `round`: a node that missed rounds
    /// (it was down, or too late) continues from where it last trained.
    fn load_state(&self, study: StudyId, round: u64) -> anyhow::Result<Option<SavedState>> {
        let dir = self.study_dir(study);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(None);
        };
        let best = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let r: u64 = name
                    .strip_prefix("state-")?
                    .strip_suffix(".json")?
                    .parse()
                    .ok()?;
                (r <= round).then_some(r)
            })
            .max();
        match best {
            Some(r) => {
                let bytes = std::fs::read(dir.join(format!("state-{r}.json")))?;
                Ok(Some(serde_json::from_slice(&bytes)?))
            }
            None => Ok(None),
        }
    }

    fn save_state(&self, study: StudyId, state: &SavedState) -> anyhow::Result<()> {
        let dir = self.study_dir(study);
        std::fs::create_dir_all(&dir)?;
        let tmp = dir.join(format!("state-{}.json.tmp", state.round));
        std::fs::write(&tmp, serde_json::to_vec(state)?)?;
        std::fs::rename(&tmp, dir.join(format!("state-{}.json", state.round)))?;
        // keep this state and the one a repeated task of this round starts from
        for entry in std::fs::read_dir(&dir)?.filter_map(|e| e.ok()) {
            let name = entry.file_name().into_string().unwrap_or_default();
            let older = name
                .strip_prefix("state-")
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|r| r + 1 < state.round);
            if older {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    /// The site and its strategy client as they stood after round `round` (0: fresh).
    fn site(
        &self,
        task: &NodeTask,
        data: SiteData,
        round: u64,
    ) -> anyhow::Result<(Site, Box<dyn ClientStrategy>)> {
        let s = &task.study;
        let stream = holder_stream(&task.data_holder);
        let mut site = Site::new(
            data,
            &s.model,
            s.train.clone(),
            stream_seed(s.seed, stream, 0),
        )?;
        let mut client = s.strategy.client()?;
        if round > 0 {
            match self.load_state(task.study_id, round)? {
                Some(saved) => {
                    site.restore(saved.site)?;
                    client.load_state(saved.client)?;
                }
                None => tracing::warn!(study = %task.study_id, round,
                    "no saved state; starting from a fresh local model"),
            }
        }
        Ok((site, client))
    }

    async fn work(&mut self, task: &NodeTask) -> anyhow::Result<()> {
        let give_up = std::time::Instant::now()
            + (task.deadline - chrono::Utc::now())
                .to_std()
                .unwrap_or(Duration::ZERO);
        let mut rows = self.read_rows(task)?;
        let excluded = self.opted_out(task, &rows, give_up).await?;
        let exclusion = rows.exclude(&excluded);
        let s = &task.study;
        let stream = holder_stream(&task.data_holder);
        let data = rows.site_data(
            task.data_holder.as_str(),
            s.validation_fraction,
            stream_seed(s.seed, stream, u64::MAX),
        )?;
        let url = self.url(&format!("/v1/node/tasks/{}/parameters", task.task_id));
        let bytes = self
            .call(give_up, |c, t| c.get(&url).bearer_auth(t))
            .await?
            .bytes()
            .await?;
        let ins = decode_fit_ins(&bytes, task.study_id, task.round)?;
        let start_from = match task.kind {
            TaskKind::Fit => task.round - 1,
            TaskKind::Evaluate => task.round,
        };
        let (mut site, mut client) = self.site(task, data, start_from)?;
        let num_examples = site.data.train.len() as u64;

        let (val, test, loss) = (
            site.data.val.clone(),
            site.data.test.clone(),
            site.train.loss.clone(),
        );
        let net = client.evaluation_net(&mut site, &ins.params)?;
        let evaluation = NodeEvaluation {
            validation: evaluate(net, &val, &loss)?,
            test: evaluate(net, &test, &loss)?,
        };
        let mut body = TaskResultBody {
            num_examples,
            excluded_subjects: exclusion.total() as u64,
            registry_version: task.registry_version,
            parameters: None,
            train_loss: None,
            local_steps: None,
            evaluation: Some(evaluation),
        };
        if task.kind == TaskKind::Fit {
            let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(s.seed, stream, task.round));
            if s.train.record_dp.is_some() {
                // DP-SGD noise from the node's own secret: reproducible for this node, unknown
                // to everyone else (the study seed is not secret).
                let context = format!("{}/{}", task.study_id, task.round);
                site.noise = Some(NoiseRng::from_secret(&self.noise_key, context.as_bytes()));
            }
            let res = client.fit(&mut site, &ins, &mut rng)?;
            site.noise = None;
            self.save_state(
                task.study_id,
                &SavedState {
                    round: task.round,
                    site: site.snapshot()?,
                    client: client.save_state()?,
                },
            )?;
            body.parameters = Some(encode_update(
                &res.params,
                &res.extras,
                task.study_id,
                task.round,
                &task.data_holder,
            )?);
            // under DP-SGD the batch losses are not privatised, so none is reported
            body.train_loss = s.train.record_dp.is_none().then_some(res.report.mean_loss);
            body.local_steps = Some(res.report.steps as u64);
        }
        let url = self.url(&format!("/v1/node/tasks/{}/result", task.task_id));
        match self
            .call(give_up, |c, t| c.post(&url).bearer_auth(t).json(&body))
            .await
        {
            Ok(_) => Ok(()),
            // an earlier attempt got through before the connection broke
            Err(e)
                if e.downcast_ref::<Refused>()
                    .is_some_and(|r| r.code == "task_already_completed") =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

async fn client_credentials(
    http: &reqwest::Client,
    issuer: &str,
    client_id: &str,
    client_secret: &str,
) -> anyhow::Result<(String, Duration)> {
    let discovery: serde_json::Value = http
        .get(format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        ))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let endpoint = discovery["token_endpoint"]
        .as_str()
        .context("the issuer publishes no token endpoint")?;
    let answer: serde_json::Value = http
        .post(endpoint)
        .basic_auth(client_id, Some(client_secret))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token = answer["access_token"]
        .as_str()
        .context("the token response has no access_token")?
        .to_owned();
    let expires = answer["expires_in"].as_u64().unwrap_or(300);
    // renew a little early so a long task never runs on an expired token
    Ok((
        token,
        Duration::from_secs(expires.saturating_sub(30).max(10)),
    ))
}
