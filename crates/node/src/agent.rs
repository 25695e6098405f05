//! The node agent a data holder runs next to its records: it long-polls the gateway for
//! tasks, reads its records through the study's feature specification, asks the gateway which
//! subjects have opted out and drops them, trains locally, and returns only the model update
//! and counts.
//!
//! Training is reproducible: a task of round r starts from the node's saved state after round
//! r-1 and draws from generators seeded by (study seed, holder, round), so a task fetched twice
//! (after a gateway or node restart) yields the same update. Personalised state (personal
//! models, local heads, control variates) is saved under the state directory and never sent;
//! so is the best model this holder evaluated ([`super::best_model`]).

use std::{
    collections::{BTreeSet, HashMap},
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use fl_engine::{
    data::SiteData,
    dp::NoiseRng,
    seeds::stream_seed,
    strategy::{ClientStrategy, Site, SiteSnapshot},
    ModelSpec,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::node_log::{Decision, NodeLog, Verdict};
pub use super::policy::NodePolicy;
use super::policy::{Admission, Guard, Refusal};
pub use super::source::DataSource;
use super::{FeatureSpec, SiteRows};
use crate::client::{
    ClientCredentials, ClientError, ClientLogin, DevTokens, GatewayClient, MatchValues,
    OptOutQuery, RetryPolicy, StaticToken,
};
use ehds_core::{
    dev_issuer::DevIssuer,
    domain::{study::TaskKind, OrgId, StatisticsTaskId, StudyId, TaskId},
    secure_aggregation::{self as sa, NodeMessage, Relayed},
    wire::{
        encode_update, FilterRequest, NodeEvaluation, NodeTask, StatisticsResultBody,
        StatisticsTask, TaskResultBody,
    },
};

/// How the node authenticates as a data holder.
pub enum Credentials {
    /// OAuth 2.0 client credentials at the issuer's token endpoint (found by discovery).
    ClientCredentials(ClientLogin),
    /// Development mode: tokens minted with the gateway's development key.
    Dev {
        issuer: Arc<DevIssuer>,
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
    /// What the node accepts (docs/node-policy.md).
    pub policy: NodePolicy,
}

pub struct Agent {
    config: AgentConfig,
    /// The gateway, as this data holder; retries are set per call.
    gateway: GatewayClient,
    /// Records per study, read once: (feature specification text, rows).
    rows: HashMap<StudyId, (String, SiteRows)>,
    /// Seeds the node's DP-SGD noise; kept in the state directory, never sent.
    noise_key: [u8; 32],
    /// The node's policy and privacy ledger, and its log of every decision.
    guard: Guard,
    log: NodeLog,
    /// Tasks the policy refused (they stay open at the gateway until their deadline).
    refused: std::collections::HashSet<TaskId>,
    /// The unblinded opt-out match values of the holder's subjects (one evaluation each).
    match_values: MatchValues,
    /// Statistics tasks the policy refused, or that failed here (decided once each).
    statistics_done: std::collections::HashSet<StatisticsTaskId>,
}

/// What the node keeps between rounds of a study.
#[derive(Serialize, Deserialize)]
struct SavedState {
    round: u64,
    site: SiteSnapshot,
    client: serde_json::Value,
}

/// The holder's stream of the study's seeded generators.
pub(crate) fn holder_stream(holder: &OrgId) -> u64 {
    let h = Sha256::digest(holder.as_str().as_bytes());
    u64::from_le_bytes(h[..8].try_into().expect("8 bytes"))
}

impl Agent {
    pub fn new(config: AgentConfig) -> anyhow::Result<Self> {
        let (key, _) = ehds_core::key_file::load_or_create(&config.state_dir.join("noise.key"))?;
        let noise_key: [u8; 32] = key[..32].try_into().expect("at least 32 bytes");
        let gateway = GatewayClient::builder(&config.gateway)
            .timeout(Duration::from_secs(config.poll_wait_seconds + 60))
            .build()?;
        let gateway = match &config.credentials {
            Credentials::Static(t) => gateway.with_tokens(StaticToken(t.clone())),
            Credentials::Dev {
                issuer,
                sub,
                organisation,
            } => gateway.with_tokens(DevTokens::new(
                issuer.clone(),
                sub,
                "data_holder",
                Some(organisation.as_str()),
            )),
            Credentials::ClientCredentials(login) => {
                gateway.with_tokens(ClientCredentials::new(login.clone())?)
            }
        };
        let guard = Guard::new(config.policy.clone(), &config.state_dir)?;
        let log = NodeLog::open(&config.state_dir)?;
        Ok(Self {
            config,
            gateway,
            rows: HashMap::new(),
            noise_key,
            guard,
            log,
            refused: Default::default(),
            match_values: MatchValues::default(),
            statistics_done: Default::default(),
        })
    }

    /// Polls and works until `max_tasks` tasks are done (forever without a limit).
    pub async fn run(&mut self) -> anyhow::Result<()> {
        let mut done = 0;
        loop {
            // the gateway may be down for a while (an upgrade): keep asking
            let gateway = self.gateway.with_retry(RetryPolicy::until(
                Instant::now() + Duration::from_secs(24 * 3600),
            ));
            // statistics first: they are quick, and a run waits for every holder's part
            match gateway.poll_statistics_tasks(0).await {
                Ok(tasks) => {
                    for task in tasks {
                        if !self.statistics_done.insert(task.task_id) {
                            continue;
                        }
                        self.answer_statistics(&task).await?;
                        done += 1;
                        if self.config.max_tasks.is_some_and(|m| done >= m) {
                            return Ok(());
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not fetch statistics tasks"),
            }
            let polled = gateway.poll_tasks(self.config.poll_wait_seconds).await?;
            // a refused task stays open at the gateway until its deadline: decided once
            let polled_any = !polled.is_empty();
            let tasks: Vec<NodeTask> = polled
                .into_iter()
                .filter(|t| !self.refused.contains(&t.task_id))
                .collect();
            if polled_any && tasks.is_empty() {
                // the long poll answers at once while refused tasks are open
                tokio::time::sleep(Duration::from_secs(self.config.poll_wait_seconds.max(1))).await;
            }
            for task in tasks {
                let id = task.task_id;
                if let Err(refusal) = self.admit(&task)? {
                    self.refused.insert(id);
                    tracing::warn!(task = %id, code = refusal.code, "task refused by the node's policy: {}", refusal.reason);
                    done += 1;
                    if self.config.max_tasks.is_some_and(|m| done >= m) {
                        return Ok(());
                    }
                    continue;
                }
                match self.work(&task).await {
                    Ok(()) => {
                        tracing::info!(task = %id, round = task.round, kind = task.kind.as_str(), "task done")
                    }
                    Err(e) if e.downcast_ref::<RelayMisbehaved>().is_some() => {
                        let m = e.downcast_ref::<RelayMisbehaved>().expect("checked");
                        tracing::warn!(task = %id, code = m.code, "left the round's secure aggregation: {}", m.reason);
                        self.log_relay_misbehaved(&task, m)?;
                    }
                    Err(e) => match e.downcast_ref::<ClientError>() {
                        Some(ClientError::Problem { code, detail, .. }) => {
                            tracing::warn!(task = %id, code = %code, "task refused: {detail}")
                        }
                        _ => tracing::error!(task = %id, error = ?e, "task failed"),
                    },
                }
                done += 1;
                if self.config.max_tasks.is_some_and(|m| done >= m) {
                    return Ok(());
                }
            }
        }
    }

    /// Answers a statistics task, if the policy admits it: the holder's records read through
    /// the task's specification, opted-out subjects dropped, the partial computed and sent.
    /// Every decision, and a failure, goes to the node's log; only a log that cannot be
    /// written stops the agent.
    async fn answer_statistics(&mut self, task: &StatisticsTask) -> anyhow::Result<()> {
        let method = format!(
            "{}:{}",
            super::policy::STATISTICS_METHOD,
            task.query.statistic
        );
        let decision = Decision {
            task_id: task.task_id.to_string(),
            study_id: task.run_id.to_string(),
            permit_id: task.permit_id.to_string(),
            round: 0,
            kind: "statistics",
            method: &method,
            verdict: Verdict::Accepted {
                permit_epsilon: None,
            },
        };
        if let Err(refusal) = self.guard.admit_statistics(task) {
            tracing::warn!(task = %task.task_id, code = refusal.code, "statistics task refused by the node's policy: {}", refusal.reason);
            self.log.append(Decision {
                verdict: Verdict::Refused {
                    code: refusal.code,
                    reason: &refusal.reason,
                },
                ..decision
            })?;
            return Ok(());
        }
        self.log.append(decision)?;
        match self.compute_statistics(task).await {
            Ok(()) => {
                tracing::info!(task = %task.task_id, run = %task.run_id, "statistics task done")
            }
            Err(e) => tracing::warn!(task = %task.task_id, error = ?e, "statistics task failed"),
        }
        Ok(())
    }

    async fn compute_statistics(&mut self, task: &StatisticsTask) -> anyhow::Result<()> {
        let give_up = Instant::now()
            + (task.deadline - chrono::Utc::now())
                .to_std()
                .unwrap_or(Duration::ZERO);
        let gateway = self.gateway.with_retry(RetryPolicy::until(give_up));
        let spec = FeatureSpec::from_json(&task.feature_spec.to_string())?;
        let query = ehds_stats::Query::parse(task.query.clone(), &Default::default())?;
        let mut rows = self.config.source.read_for_study(&spec, &task.categories)?;
        let opt_outs = OptOutQuery::for_task(
            task.permit_id,
            &task.categories,
            task.optout_policy,
            task.registry_version,
        );
        let excluded = Self::opted_out(&gateway, opt_outs, &rows, &mut self.match_values).await?;
        let exclusion = rows.exclude(&excluded);
        let table = super::statistics::table(&spec, &rows)?;
        let partial = ehds_stats::partial(&query, &table)?;
        gateway
            .submit_statistics_result(
                task.task_id,
                &StatisticsResultBody {
                    registry_version: task.registry_version,
                    opted_out: exclusion.total() as u64,
                    incomplete: rows.incomplete.len() as u64,
                    partial,
                },
            )
            .await?;
        Ok(())
    }

    /// The policy's decision on `task`, written to the node's log either way.
    fn admit(&mut self, task: &NodeTask) -> anyhow::Result<Result<Admission, Refusal>> {
        let decision = self.guard.admit(task)?;
        let refusal = decision.as_ref().err();
        let method = task.study.strategy.request_name();
        self.log.append(Decision {
            task_id: task.task_id.to_string(),
            study_id: task.study_id.to_string(),
            permit_id: task.permit_id.to_string(),
            round: task.round,
            kind: task.kind.as_str(),
            method: &method,
            verdict: match (refusal, &decision) {
                (Some(r), _) => Verdict::Refused {
                    code: r.code,
                    reason: &r.reason,
                },
                (None, d) => Verdict::Accepted {
                    permit_epsilon: d.as_ref().ok().map(|a| a.permit_epsilon),
                },
            },
        })?;
        Ok(decision)
    }

    /// Records in the node's log that it stopped its part of `task`'s secure aggregation
    /// because the relay misbehaved.
    fn log_relay_misbehaved(&mut self, task: &NodeTask, m: &RelayMisbehaved) -> anyhow::Result<()> {
        let method = task.study.strategy.request_name();
        self.log.append(Decision {
            task_id: task.task_id.to_string(),
            study_id: task.study_id.to_string(),
            permit_id: task.permit_id.to_string(),
            round: task.round,
            kind: task.kind.as_str(),
            method: &method,
            verdict: Verdict::Aborted {
                code: m.code,
                reason: &m.reason,
            },
        })?;
        Ok(())
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
        let rows = self
            .config
            .source
            .read_for_study(&spec, &task.study.categories)?;
        self.rows.insert(task.study_id, (text, rows.clone()));
        Ok(rows)
    }

    /// Asks the gateway which of the node's subjects the permit excludes (Art. 71), at the
    /// round's pinned registry version, without telling it whom the node holds (the match
    /// protocol, docs/threat-model.md). Only when the registry still holds opt-outs without
    /// match values (registered before they were kept) does the node fall back to the filter
    /// that discloses the cohort: honouring every opt-out comes first.
    async fn opted_out(
        gateway: &GatewayClient,
        query: OptOutQuery,
        rows: &SiteRows,
        known: &mut MatchValues,
    ) -> Result<BTreeSet<String>, ClientError> {
        let subjects = rows.subjects();
        let matched = gateway.match_opt_outs(&query, &subjects, known).await?;
        if matched.unmatchable == 0 {
            return Ok(matched.excluded);
        }
        tracing::warn!(
            unmatchable = matched.unmatchable,
            "the opt-out registry holds opt-outs without match values; checking the cohort \
             with the disclosing filter until the registry is imported again from its source"
        );
        let answer = gateway
            .filter_opt_outs(&FilterRequest {
                permit_id: query.permit_id,
                subjects: subjects.into_iter().map(str::to_owned).collect(),
                categories: query.categories,
                policy: query.policy,
                registry_version: query.registry_version,
            })
            .await?;
        Ok(answer.exclude.into_iter().collect())
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
        ehds_core::key_file::create_private_dir(&dir)?;
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

    /// The site and its strategy client as they stood after round `round` (0: fresh), with
    /// the holder's model `spec` of the study.
    fn site(
        &self,
        task: &NodeTask,
        data: SiteData,
        spec: &ModelSpec,
        round: u64,
    ) -> anyhow::Result<(Site, Box<dyn ClientStrategy>)> {
        let s = &task.study;
        let mut site = super::local_model::fresh_site(s, &task.data_holder, data, spec)?;
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
        // a task is worth retrying for until its deadline
        let give_up = Instant::now()
            + (task.deadline - chrono::Utc::now())
                .to_std()
                .unwrap_or(Duration::ZERO);
        let gateway = self.gateway.with_retry(RetryPolicy::until(give_up));
        let mut rows = self.read_rows(task)?;
        let query = OptOutQuery::for_task(
            task.permit_id,
            &task.study.categories,
            task.study.optout_policy,
            task.registry_version,
        );
        let excluded = Self::opted_out(&gateway, query, &rows, &mut self.match_values).await?;
        let exclusion = rows.exclude(&excluded);
        let s = &task.study;
        let stream = holder_stream(&task.data_holder);
        let (data, spec) = super::local_model::site_data(s, &task.data_holder, &rows)?;
        // the researcher sees what these records make of the features: flags and counts,
        // small ones withheld here already (the gateway withholds again under its threshold)
        let data_quality = super::preflight::data_quality(
            &rows,
            &super::preflight::Preflight {
                plan: super::local_model::split_plan(s, &task.data_holder),
                ..Default::default()
            },
        );
        let ins = gateway.task_parameters(task).await?;
        let start_from = match task.kind {
            TaskKind::Fit => task.round - 1,
            TaskKind::Evaluate => task.round,
        };
        // what `node evaluate-model` and `node fedmap-finetune` use after the study
        super::local_model::remember(
            &self.config.state_dir,
            task.study_id,
            &super::local_model::StudyRecord {
                data_holder: task.data_holder.clone(),
                study: s.clone(),
                registry_version: task.registry_version,
                excluded,
            },
            &ins,
            start_from,
        )?;
        let (mut site, mut client) = self.site(task, data, &spec, start_from)?;
        let num_examples = site.data.train.len() as u64;

        let (data, loss) = (site.data.clone(), site.train.loss.clone());
        let net = client.evaluation_net(&mut site, &ins.params)?;
        let scores = super::local_model::evaluate_site(net, &data, &loss, s.threshold)?;
        let evaluation = NodeEvaluation {
            validation: scores.validation,
            test: scores.test,
        };
        // the evaluated model is the one after round `start_from`, with this site's own parts
        super::best_model::offer(
            &self.config.state_dir,
            task.study_id,
            &task.data_holder,
            start_from,
            &evaluation.validation,
            net,
        )?;
        let mut body = TaskResultBody {
            num_examples,
            excluded_subjects: exclusion.total() as u64,
            registry_version: task.registry_version,
            parameters: None,
            train_loss: None,
            local_steps: None,
            evaluation: Some(evaluation),
            data_quality: Some(data_quality),
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
            // under DP-SGD the batch losses are not privatised, so none is reported; nor under
            // distributed DP, whose point is that the gateway learns nothing of this holder
            // beyond the noised sum
            let distributed = s.dp.is_some_and(|p| p.distributed.is_some());
            body.train_loss =
                (s.train.record_dp.is_none() && !distributed).then_some(res.report.mean_loss);
            body.local_steps = Some(res.report.steps as u64);
            if s.secure_aggregation.is_some() {
                if !res.extras.is_empty() {
                    anyhow::bail!("the method sends values beside the model, which secure aggregation does not carry");
                }
                ins.params.check_compatible(&res.params)?;
                let delta: Vec<f32> = res
                    .params
                    .to_flat()
                    .iter()
                    .zip(ins.params.to_flat())
                    .map(|(new, old)| new - old)
                    .collect();
                return secure_round(&gateway, task, &delta, &body).await;
            }
            body.parameters = Some(encode_update(
                &res.params,
                &res.extras,
                task.study_id,
                task.round,
                &task.data_holder,
            )?);
        }
        gateway.submit_result(task.task_id, &body).await?;
        Ok(())
    }
}

/// The relay sent this node something the secure-aggregation protocol refuses: the node stops
/// its part of the round (its keys die with it) and records why in its own log.
#[derive(Debug, thiserror::Error)]
#[error("the secure-aggregation relay misbehaved ({code}): {reason}")]
pub struct RelayMisbehaved {
    /// `secure_aggregation::refusal_code` of the protocol's refusal, or
    /// `secagg_survivors_below_plan`.
    pub code: &'static str,
    pub reason: String,
}

impl From<secagg::Error> for RelayMisbehaved {
    fn from(e: secagg::Error) -> Self {
        Self {
            code: sa::refusal_code(&e),
            reason: e.to_string(),
        }
    }
}

/// Takes part in the secure aggregation of `task`'s round (docs/secure-aggregation.md) with
/// `delta`, this holder's change to the global model: it leaves the node only encoded and
/// masked. Under distributed DP the encoding clips it and adds this holder's share of the
/// discrete Gaussian noise, drawn from the operating system's entropy, and the node reveals
/// its unmasking shares only if the sum holds as many holders as the noise was planned for.
/// The protocol's keys live in this call only; a node stopped mid-round has dropped out of
/// it. The result (counts and evaluation, no update) goes out once the masked input is in,
/// before the unmasking, so the round never waits for it. Public so that the orchestration
/// benchmark's simulated nodes run exactly this exchange.
pub async fn secure_round(
    gateway: &GatewayClient,
    task: &NodeTask,
    delta: &[f32],
    body: &TaskResultBody,
) -> anyhow::Result<()> {
    let view = gateway.secagg_view(task.task_id, 0).await?;
    let distributed = task.study.dp.and_then(|p| p.distributed);
    let input = match &distributed {
        Some(plan) => {
            let c = &view.config;
            if c.modulus_bits != plan.params.modulus_bits
                || c.vector_len != plan.padded_dim
                || c.clients > plan.params.max_clients
            {
                return Err(RelayMisbehaved::from(secagg::Error::BadRelay(format!(
                    "the session ({} holders, {} entries in Z_2^{}) is not the one the study's \
                     noise plan was made for ({} holders at most, {} entries in Z_2^{})",
                    c.clients,
                    c.vector_len,
                    c.modulus_bits,
                    plan.params.max_clients,
                    plan.padded_dim,
                    plan.params.modulus_bits
                )))
                .into());
            }
            plan.encode(delta, &mut secagg::rng_from_os()?)?
        }
        None => sa::encoding(view.config.clients)?.encode(delta)?,
    };
    let mut client = secagg::Client::new(
        view.config,
        secagg::ClientId(view.client),
        secagg::rng_from_os()?,
    )
    .map_err(RelayMisbehaved::from)?;
    // every refusal of the client below is about what the relay sent
    let relay = |e: secagg::Error| anyhow::Error::from(RelayMisbehaved::from(e));
    let id = task.task_id;
    gateway
        .secagg_submit(id, &NodeMessage::AdvertiseKeys(client.advertise_keys()?))
        .await?;
    let keys = relayed(gateway, task, secagg::Round::AdvertiseKeys, |r| match r {
        Relayed::Keys(k) => Some(k),
        _ => None,
    })
    .await?;
    let shares = client.share_keys(&keys).map_err(relay)?;
    gateway
        .secagg_submit(id, &NodeMessage::ShareKeys(shares))
        .await?;
    let shares = relayed(gateway, task, secagg::Round::ShareKeys, |r| match r {
        Relayed::Shares(s) => Some(s),
        _ => None,
    })
    .await?;
    let masked = client.masked_input(&shares, &input).map_err(relay)?;
    gateway
        .secagg_submit(id, &NodeMessage::MaskedInput(masked))
        .await?;
    gateway.submit_result(id, body).await?;
    let request = relayed(
        gateway,
        task,
        secagg::Round::MaskedInputCollection,
        |r| match r {
            Relayed::Unmask(u) => Some(u),
            _ => None,
        },
    )
    .await?;
    if let Some(plan) = &distributed {
        // fewer holders in the sum than the noise was planned for: unmasking it would hand the
        // gateway a sum with less noise than accounted for (an honest relay fails such a
        // round before asking)
        if let Err(e) = plan.check_survivors(request.survivors.len()) {
            return Err(RelayMisbehaved {
                code: "secagg_survivors_below_plan",
                reason: e.to_string(),
            }
            .into());
        }
    }
    let response = client.unmask(&request).map_err(relay)?;
    gateway
        .secagg_submit(id, &NodeMessage::Unmask(response))
        .await?;
    Ok(())
}

/// Waits while the relay collects `stage` for what its close relays to this holder. The
/// relay moving on without a message for it means the holder was dropped from the session.
async fn relayed<T>(
    gateway: &GatewayClient,
    task: &NodeTask,
    stage: secagg::Round,
    pick: impl Fn(Relayed) -> Option<T>,
) -> anyhow::Result<T> {
    loop {
        // a long poll: the gateway answers when the stage closes
        let view = gateway
            .secagg_view(task.task_id, SECAGG_WAIT_SECONDS)
            .await?;
        if let Some(message) = view.relayed.and_then(&pick) {
            return Ok(message);
        }
        if view.stage != sa::stage_name(stage) {
            anyhow::bail!(
                "dropped from the secure aggregation: the relay moved on to {} without this holder",
                view.stage
            );
        }
        // the wait ran out with the stage still open (or a gateway that does not hold the
        // request): ask again, without hammering it
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// How long one secure-aggregation long poll may wait; within the agent's request timeout,
/// which allows a task poll's wait plus a minute.
const SECAGG_WAIT_SECONDS: u64 = 20;
