//! The node protocol, as a data holder speaks it: long-poll for tasks, ask which subjects
//! have opted out, download the global model, return the result.

use std::collections::BTreeSet;

use base64::{engine::general_purpose::STANDARD as BASE64, Engine as _};
use fl_engine::FitIns;
use rand::seq::SliceRandom as _;

use super::{Call, ClientError, GatewayClient};
use ehds_core::{
    domain::{
        optout::salted_match, optout::FilterPolicy, DataCategory, PermitId, StatisticsTaskId,
        TaskId,
    },
    oprf::{Blinded, OUTPUT_LEN},
    secure_aggregation::{NodeMessage, SecaggView},
    wire::{
        decode_fit_ins, FilterRequest, FilterResponse, MatchRequest, MatchResponse, NodeTask,
        StatisticsResultBody, StatisticsTask, TaskResultBody,
    },
};

/// The smallest number of elements a match request sends: a small cohort does not say how small.
const MIN_MATCH_ELEMENTS: usize = 64;

/// What a holder asks in an opt-out check, whichever protocol answers it.
#[derive(Debug, Clone)]
pub struct OptOutQuery {
    pub permit_id: PermitId,
    pub categories: Vec<String>,
    pub policy: FilterPolicy,
    pub registry_version: Option<i64>,
}

impl OptOutQuery {
    /// The check of a task under `permit_id` reading `categories`, pinned to the task's
    /// registry version.
    pub fn for_task(
        permit_id: PermitId,
        categories: &[DataCategory],
        policy: FilterPolicy,
        registry_version: i64,
    ) -> Self {
        Self {
            permit_id,
            categories: categories.iter().map(|c| c.as_str().to_owned()).collect(),
            policy,
            registry_version: Some(registry_version),
        }
    }
}

/// The unblinded match values of a holder's subjects, kept between checks under the registry
/// key that produced them: the values do not change from round to round (only each answer's
/// salt does), so a node evaluates each subject once, not once per round. Kept in memory only.
#[derive(Debug, Default)]
pub struct MatchValues {
    key_id: Option<String>,
    values: std::collections::HashMap<String, [u8; OUTPUT_LEN]>,
}

impl MatchValues {
    /// Subjects whose value is kept.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// One answer, unblinded.
struct MatchRound {
    key_id: String,
    salt: Vec<u8>,
    opted_out: BTreeSet<String>,
    unmatchable: usize,
    registry_version: i64,
    /// The values of the subjects this request evaluated.
    fresh: Vec<(String, [u8; OUTPUT_LEN])>,
}

/// The answer of [`GatewayClient::match_opt_outs`].
#[derive(Debug, Clone)]
pub struct Matched {
    /// The holder's subjects that opted out, as far as match values reach.
    pub excluded: BTreeSet<String>,
    /// In-scope opt-outs the registry holds no match value for: only the disclosing filter
    /// (`filter_opt_outs`) can match them.
    pub unmatchable: usize,
    pub registry_version: i64,
}

/// How a result reached the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Accepted,
    /// The gateway already holds this task's result: an earlier attempt got through before
    /// its answer was lost.
    AlreadyAccepted,
}

impl GatewayClient {
    /// The caller's pending tasks, waiting up to `wait_seconds` for one to appear.
    pub async fn poll_tasks(&self, wait_seconds: u64) -> Result<Vec<NodeTask>, ClientError> {
        self.send_json(Call::get(format!("/v1/node/tasks?wait={wait_seconds}")))
            .await
    }

    /// The global model `task` trains or evaluates, checked to be this task's (study, round).
    pub async fn task_parameters(&self, task: &NodeTask) -> Result<FitIns, ClientError> {
        let call = Call::get(format!("/v1/node/tasks/{}/parameters", task.task_id));
        let what = call.what();
        let answer = self.send(call).await?;
        decode_fit_ins(&answer.body, task.study_id, task.round)
            .map_err(|e| ClientError::decode(what, e))
    }

    /// Which of the holder's subjects the permit excludes (Art. 71).
    pub async fn filter_opt_outs(
        &self,
        request: &FilterRequest,
    ) -> Result<FilterResponse, ClientError> {
        self.send_json(Call::post("/v1/opt-outs/filter").json(request)?)
            .await
    }

    /// Which of `subjects` the permit excludes, asked without disclosing them: each pseudonym
    /// goes out blinded (with random padding elements), and the intersection with the
    /// registry's salted match values is taken here (docs/threat-model.md). Subjects whose
    /// value `known` already holds under the registry's current key are not sent again.
    pub async fn match_opt_outs(
        &self,
        query: &OptOutQuery,
        subjects: &[&str],
        known: &mut MatchValues,
    ) -> Result<Matched, ClientError> {
        let mut answer = self.match_round(query, subjects, known).await?;
        if known.key_id.as_deref() != Some(answer.key_id.as_str()) {
            // The registry's key changed (or this is the first answer): values kept under
            // the old key match nothing now, so every subject is evaluated again.
            let stale = known.key_id.is_some();
            known.values.clear();
            known.key_id = Some(answer.key_id.clone());
            if stale {
                answer = self.match_round(query, subjects, known).await?;
                if known.key_id.as_deref() != Some(answer.key_id.as_str()) {
                    return Err(ClientError::decode(
                        "POST /v1/opt-outs/match",
                        "the registry's key changed twice in a row",
                    ));
                }
            }
        }
        known.values.extend(answer.fresh);
        let salt = &answer.salt;
        let mut excluded = BTreeSet::new();
        for s in subjects {
            let value = known.values.get(*s).ok_or_else(|| {
                ClientError::decode("POST /v1/opt-outs/match", "a subject was not evaluated")
            })?;
            if answer.opted_out.contains(&salted_match(salt, value)) {
                excluded.insert((*s).to_owned());
            }
        }
        Ok(Matched {
            excluded,
            unmatchable: answer.unmatchable,
            registry_version: answer.registry_version,
        })
    }

    /// One match request: blinds the subjects `known` lacks (padded, shuffled) and unblinds
    /// the answer.
    async fn match_round(
        &self,
        query: &OptOutQuery,
        subjects: &[&str],
        known: &MatchValues,
    ) -> Result<MatchRound, ClientError> {
        const WHAT: &str = "POST /v1/opt-outs/match";
        let decode = |reason: String| ClientError::decode(WHAT, reason);
        let new: Vec<&str> = subjects
            .iter()
            .copied()
            .filter(|s| !known.values.contains_key(*s))
            .collect();
        let padded = new.len().max(MIN_MATCH_ELEMENTS).next_power_of_two();
        // (the subject, or None for a padding element, and its blinding)
        let mut blinds: Vec<(Option<&str>, Blinded)> = Vec::with_capacity(padded);
        for s in &new {
            let b = Blinded::new(s.as_bytes()).map_err(|e| decode(e.to_string()))?;
            blinds.push((Some(*s), b));
        }
        while blinds.len() < padded {
            let filler = uuid::Uuid::new_v4();
            let b = Blinded::new(filler.as_bytes()).map_err(|e| decode(e.to_string()))?;
            blinds.push((None, b));
        }
        // The padding must not sit at the end, where it could be told apart by position.
        blinds.shuffle(&mut rand::rand_core::UnwrapErr(rand::rngs::SysRng));
        let request = MatchRequest {
            permit_id: query.permit_id,
            blinded: blinds
                .iter()
                .map(|(_, b)| BASE64.encode(b.element))
                .collect(),
            categories: query.categories.clone(),
            policy: query.policy,
            registry_version: query.registry_version,
        };
        let answer: MatchResponse = self
            .send_json(Call::post("/v1/opt-outs/match").json(&request)?)
            .await?;
        if answer.evaluated.len() != blinds.len() {
            return Err(decode(format!(
                "{} evaluated elements for {} sent",
                answer.evaluated.len(),
                blinds.len()
            )));
        }
        let salt = BASE64
            .decode(&answer.salt)
            .map_err(|e| decode(format!("salt: {e}")))?;
        let mut fresh = Vec::with_capacity(new.len());
        for ((subject, blind), evaluated) in blinds.iter().zip(&answer.evaluated) {
            let Some(subject) = subject else { continue };
            let evaluated = BASE64
                .decode(evaluated)
                .map_err(|e| decode(format!("evaluated element: {e}")))?;
            let value = blind
                .finalize(subject.as_bytes(), &evaluated)
                .map_err(|e| decode(e.to_string()))?;
            fresh.push(((*subject).to_owned(), value));
        }
        Ok(MatchRound {
            key_id: answer.key_id,
            salt,
            opted_out: answer.opted_out.into_iter().collect(),
            unmatchable: answer.unmatchable,
            registry_version: answer.registry_version,
            fresh,
        })
    }

    /// The caller's open parts of statistics runs, waiting up to `wait_seconds` for one.
    pub async fn poll_statistics_tasks(
        &self,
        wait_seconds: u64,
    ) -> Result<Vec<StatisticsTask>, ClientError> {
        self.send_json(Call::get(format!(
            "/v1/node/statistics-tasks?wait={wait_seconds}"
        )))
        .await
    }

    /// Returns the holder's partial for a statistics task.
    pub async fn submit_statistics_result(
        &self,
        task: StatisticsTaskId,
        body: &StatisticsResultBody,
    ) -> Result<(), ClientError> {
        let call = Call::post(format!("/v1/node/statistics-tasks/{task}/result")).json(body)?;
        self.send(call).await.map(|_| ())
    }

    /// Returns a task's result. A result the gateway already holds counts as delivered.
    pub async fn submit_result(
        &self,
        task: TaskId,
        body: &TaskResultBody,
    ) -> Result<Delivery, ClientError> {
        let call = Call::post(format!("/v1/node/tasks/{task}/result")).json(body)?;
        match self.send(call).await {
            Ok(_) => Ok(Delivery::Accepted),
            Err(e) if e.code() == Some("task_already_completed") => Ok(Delivery::AlreadyAccepted),
            Err(e) => Err(e),
        }
    }

    /// Where the secure aggregation of a task's round stands for this holder; with
    /// `wait_seconds`, the gateway holds the answer until the holder is awaited or the stage
    /// moves on (long poll).
    pub async fn secagg_view(
        &self,
        task: TaskId,
        wait_seconds: u64,
    ) -> Result<SecaggView, ClientError> {
        self.send_json(Call::get(format!(
            "/v1/node/tasks/{task}/secagg?wait={wait_seconds}"
        )))
        .await
    }

    /// Hands a protocol message to the gateway's relay. A message the relay already holds
    /// (a retry after a lost answer) counts as delivered.
    pub async fn secagg_submit(
        &self,
        task: TaskId,
        message: &NodeMessage,
    ) -> Result<Delivery, ClientError> {
        let call = Call::post(format!("/v1/node/tasks/{task}/secagg")).json(message)?;
        match self.send(call).await {
            Ok(_) => Ok(Delivery::Accepted),
            Err(e) if e.code() == Some("secagg_message_replayed") => Ok(Delivery::AlreadyAccepted),
            Err(e) => Err(e),
        }
    }
}
