//! Node task services: the open tasks a data holder is handed, the parameters it starts a task
//! from, and the checks on the result it delivers. Every result is checked before it is stored:
//! the task still open, the study and permit still active, the counts and metrics sane, and the
//! update a well-formed parameter file of exactly the global model's names and shapes, with
//! finite values, within the size limit.

use std::collections::HashMap;

use bytes::Bytes;

use fl_engine::{FitIns, FitRes};

use super::secagg_relay as relay;
use super::Requester;
use crate::federation::engine;
use crate::{
    authz::Action,
    federation::parameter_files::ParameterFiles,
    store::{StoreError, Tx},
};
use ehds_core::{
    domain::{
        audit::{AuditAction, AuditSubject},
        audit_details::{ParametersSent, ResultAccepted, SecaggMessageAccepted, TasksDelivered},
        study::{
            Checkpoint, Round, RoundPhase, Study, StudyStatus, Task, TaskKind, TaskReport,
            TaskStatus,
        },
        time::Timestamp,
        OrgId, PermitState, StudyId,
    },
    secure_aggregation::{self as sa, NodeMessage, Relayed, SecaggView},
    wire::{decode_update, encode_fit_ins, NodeStudy, NodeTask, TaskResultBody, UpdateError},
};

/// The study behind a task, when the task may still be worked on: the study running and its
/// permit active.
async fn live_study(
    tx: &mut dyn Tx,
    study_id: StudyId,
    now: Timestamp,
) -> Result<Option<Study>, StoreError> {
    let Some(study) = tx.get_study(study_id).await? else {
        return Ok(None);
    };
    if study.status() != StudyStatus::Running {
        return Ok(None);
    }
    let active = tx
        .get_permit(study.spec.permit_id)
        .await?
        .is_some_and(|p| p.state(now) == PermitState::Active);
    Ok(active.then_some(study))
}

/// At most `limit` open tasks of `holder` whose study may still be worked on; the delivery is
/// audited when there is any. The caller commits only then (nothing is written otherwise).
#[tracing::instrument(name = "Delivering node tasks", skip(tx, by))]
pub async fn open_tasks(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    holder: &OrgId,
    limit: i64,
    now: Timestamp,
) -> Result<Vec<NodeTask>, StoreError> {
    let pending = tx.pending_tasks_for(holder, now, limit).await?;
    if pending.is_empty() {
        return Ok(vec![]);
    }
    let mut studies: HashMap<StudyId, Option<Study>> = HashMap::new();
    let mut out = Vec::new();
    for t in pending {
        if let std::collections::hash_map::Entry::Vacant(slot) = studies.entry(t.study_id) {
            slot.insert(live_study(tx, t.study_id, now).await?);
        }
        let Some(study) = studies.get(&t.study_id).and_then(Option::as_ref) else {
            continue;
        };
        let Some(registry_version) = tx.round_registry_version(t.round_id).await? else {
            continue;
        };
        out.push(NodeTask {
            task_id: t.id,
            study_id: t.study_id,
            permit_id: study.spec.permit_id,
            data_holder: t.data_holder.clone(),
            round: t.round,
            kind: t.kind,
            deadline: t.deadline,
            registry_version,
            study: NodeStudy::from(&*study.spec),
        });
    }
    if !out.is_empty() {
        let delivered = out.iter().map(|t| t.task_id.to_string()).collect();
        tx.append_audit(
            by.audit(Action::NodeTasks, AuditSubject::Tasks)
                .details(&TasksDelivered { delivered }),
        )
        .await?;
    }
    Ok(out)
}

/// Why the server's side of a task could not be set up.
#[derive(Debug)]
pub enum SetupError {
    /// The study moved on: the task's round is no longer its current round.
    RoundMoved,
    Store(StoreError),
    Internal(anyhow::Error),
}

impl From<StoreError> for SetupError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Why a node's request on a task was refused; nothing was stored.
#[derive(Debug)]
pub enum TaskError {
    /// The task no longer takes work: `code` and `detail` say why (deadline passed, result
    /// already accepted, or closed in another way), `current_state` is its status.
    Closed {
        code: &'static str,
        detail: String,
        current_state: TaskStatus,
    },
    /// The study or its permit is not active.
    NotLive,
    /// What the server sends for the task could not be prepared.
    Setup(SetupError),
    /// The result was filtered against another opt-out registry version than the round's.
    RegistryVersionMismatch {
        expected: i64,
    },
    /// The result claims no training example.
    ZeroSamples,
    /// The holder's evaluation holds a non-finite metric or a rate outside [0, 1].
    InvalidMetrics,
    /// A fit task's result carries no update.
    ParametersRequired,
    /// An evaluation task's result carries an update.
    UnexpectedParameters,
    /// The update could not be decoded.
    Update(UpdateError),
    /// The update does not fit the global model.
    InvalidUpdate(String),
    /// A result for this task was already accepted.
    AlreadyCompleted,
    /// A study under secure aggregation takes no update in clear.
    ClearUpdateRefused,
    /// The task's study does not run secure aggregation, or the task is not a fit task.
    NotSecure,
    /// The relay refused a secure-aggregation message (`secagg`'s reason); nothing changed.
    Secagg(secagg::Error),
    /// The message names another sender than the task's holder.
    SecaggSender,
    Store(StoreError),
    Internal(anyhow::Error),
}

impl From<StoreError> for TaskError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Why `task` no longer takes work at `now`, if it does not.
fn closed(task: &Task, now: Timestamp) -> Option<TaskError> {
    let (code, detail) = match task.status {
        TaskStatus::Pending if now >= task.deadline => (
            "task_deadline_passed",
            "the task's deadline has passed".to_owned(),
        ),
        TaskStatus::Pending => return None,
        TaskStatus::Completed => (
            "task_already_completed",
            "a result for this task was already accepted".to_owned(),
        ),
        other => ("task_closed", format!("the task is {}", other.as_str())),
    };
    Some(TaskError::Closed {
        code,
        detail,
        current_state: task.status,
    })
}

/// The study of `task`, if the task is open and the study live.
async fn workable(tx: &mut dyn Tx, task: &Task, now: Timestamp) -> Result<Study, TaskError> {
    if let Some(e) = closed(task, now) {
        return Err(e);
    }
    live_study(tx, task.study_id, now)
        .await?
        .ok_or(TaskError::NotLive)
}

/// The study's last checkpoint, which `task` starts from: the global model of the previous
/// round (fit) or the final model (evaluate).
async fn task_checkpoint(
    tx: &mut dyn Tx,
    study: &Study,
    task: &Task,
) -> Result<Checkpoint, SetupError> {
    let checkpoint = tx
        .latest_checkpoint(study.id)
        .await?
        .ok_or_else(|| SetupError::Internal(anyhow::anyhow!("study without checkpoint")))?;
    let expected = match task.kind {
        TaskKind::Fit => task.round - 1,
        TaskKind::Evaluate => task.round,
    };
    if checkpoint.round != expected {
        return Err(SetupError::RoundMoved);
    }
    Ok(checkpoint)
}

/// The instructions of `task` and the method's server they came from, at `checkpoint`.
fn configure(
    study: &Study,
    task: &Task,
    checkpoint: Checkpoint,
) -> Result<(FitIns, Box<dyn fl_engine::strategy::ServerStrategy>), SetupError> {
    engine::fit_ins(&study.spec, task.round, &checkpoint)
        .map_err(|e| SetupError::Internal(e.into()))
}

/// The instructions of `task` and the method's server they came from (at the study's last
/// checkpoint).
async fn fit_ins_and_server(
    tx: &mut dyn Tx,
    study: &Study,
    task: &Task,
) -> Result<(FitIns, Box<dyn fl_engine::strategy::ServerStrategy>), SetupError> {
    let checkpoint = task_checkpoint(tx, study, task).await?;
    configure(study, task, checkpoint)
}

/// The parameters `task` starts from, as safetensors; the download is audited. The file is
/// built once per round and checkpoint (`ParameterFiles`).
#[tracing::instrument(name = "Sending task parameters", skip_all, fields(task = %task.id))]
pub async fn parameters(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    task: &Task,
    files: &ParameterFiles,
    now: Timestamp,
) -> Result<Bytes, TaskError> {
    let study = workable(tx, task, now).await?;
    let checkpoint = task_checkpoint(tx, &study, task)
        .await
        .map_err(TaskError::Setup)?;
    let bytes = match files.get(study.id, task.round, task.kind, &checkpoint) {
        Some(file) => file,
        None => {
            // once per round: the copy is kept to recognise the checkpoint
            let (ins, _) = configure(&study, task, checkpoint.clone()).map_err(TaskError::Setup)?;
            let file = Bytes::from(
                encode_fit_ins(&ins, study.id).map_err(|e| TaskError::Internal(e.into()))?,
            );
            files.keep(study.id, task.round, task.kind, checkpoint, file.clone());
            file
        }
    };
    tx.append_audit(
        by.audit(AuditAction::NodeTaskParameters, AuditSubject::Task(task.id))
            .permit(study.spec.permit_id)
            .details(&ParametersSent {
                study: study.id,
                round: task.round,
                bytes: bytes.len(),
            }),
    )
    .await?;
    Ok(bytes)
}

/// Whether a holder's metrics are sane: finite, rates within [0, 1].
pub fn metric_ok(m: &fl_engine::MetricSummary) -> bool {
    let unit = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
    // the multi-class Brier score sums over the classes: at most 2
    let brier = |v: f64| v.is_finite() && (0.0..=2.0).contains(&v);
    unit(m.accuracy)
        && unit(m.balanced_accuracy)
        && m.loss.is_finite()
        && m.auroc.is_none_or(unit)
        && m.auprc.is_none_or(unit)
        && m.f1.is_none_or(unit)
        && m.precision.is_none_or(unit)
        && m.recall.is_none_or(unit)
        && m.brier.is_none_or(brier)
        && m.ece.is_none_or(unit)
        && m.predicted_positive_rate.is_none_or(unit)
        // a threshold chosen on validation data may sit just below the lowest score to
        // call every row positive: below 0 by at most one f32 step when that score is 0
        && m.threshold.is_none_or(|t| (-f32::EPSILON..=1.0).contains(&t))
        && m.c_index.is_none_or(unit)
        && m.integrated_brier.is_none_or(unit)
}

/// Accepts the result of `task` once everything about it checks out: stores the update (fit)
/// and the holder's evaluation of the model it received, completes the task, audits the
/// counts. `max_update_bytes` bounds the decoded update.
#[tracing::instrument(name = "Accepting a task result", skip_all, fields(task = %task.id))]
pub async fn accept_result(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    task: &mut Task,
    body: TaskResultBody,
    max_update_bytes: usize,
    now: Timestamp,
) -> Result<(), TaskError> {
    let study = workable(tx, task, now).await?;
    let registry_version = tx
        .round_registry_version(task.round_id)
        .await?
        .ok_or_else(|| TaskError::Internal(anyhow::anyhow!("task without round")))?;
    if body.registry_version != registry_version {
        return Err(TaskError::RegistryVersionMismatch {
            expected: registry_version,
        });
    }
    if body.num_examples == 0 {
        return Err(TaskError::ZeroSamples);
    }
    if let Some(ev) = &body.evaluation {
        if !metric_ok(&ev.validation) || !metric_ok(&ev.test) {
            return Err(TaskError::InvalidMetrics);
        }
    }
    let secure = study.spec.secure_aggregation.is_some();
    let stored = match (task.kind, &body.parameters) {
        // the update reaches the gateway only masked, inside the secure sum
        (TaskKind::Fit, Some(_)) if secure => return Err(TaskError::ClearUpdateRefused),
        (TaskKind::Fit, None) if secure => None,
        (TaskKind::Fit, None) => return Err(TaskError::ParametersRequired),
        (TaskKind::Evaluate, Some(_)) => return Err(TaskError::UnexpectedParameters),
        (TaskKind::Evaluate, None) => None,
        (TaskKind::Fit, Some(b64)) => {
            let (bytes, params, extras) = decode_update(
                b64,
                max_update_bytes,
                study.id,
                task.round,
                &task.data_holder,
            )
            .map_err(TaskError::Update)?;
            let (ins, mut server) = fit_ins_and_server(tx, &study, task)
                .await
                .map_err(TaskError::Setup)?;
            let res = FitRes {
                site: task.data_holder.to_string(),
                num_examples: body.num_examples as usize,
                params,
                extras,
                report: Default::default(),
            };
            engine::check_update(&ins, server.as_mut(), task.round, &res)
                .map_err(|e| TaskError::InvalidUpdate(e.to_string()))?;
            Some(bytes)
        }
    };
    task.status = TaskStatus::Completed;
    task.completed_at = Some(now);
    task.report = Some(TaskReport {
        num_examples: body.num_examples,
        excluded_subjects: body.excluded_subjects,
        registry_version: body.registry_version,
        train_loss: body.train_loss.filter(|l| l.is_finite()),
        local_steps: body.local_steps,
        data_quality: body.data_quality,
    });
    tx.complete_task(task, stored.as_deref())
        .await
        .map_err(|_| TaskError::AlreadyCompleted)?;
    if let Some(ev) = body.evaluation {
        // a fit task evaluates the model it received: the previous round's
        let evaluated = match task.kind {
            TaskKind::Fit => task.round - 1,
            TaskKind::Evaluate => task.round,
        };
        tx.insert_evaluation(
            study.id,
            evaluated,
            &ev.for_holder(task.data_holder.clone()),
            now,
        )
        .await?;
    }
    tx.append_audit(
        by.audit(AuditAction::NodeTaskResult, AuditSubject::Task(task.id))
            .permit(study.spec.permit_id)
            .details(&ResultAccepted {
                study: study.id,
                round: task.round,
                kind: task.kind.as_str(),
                num_examples: body.num_examples,
                excluded_subjects: body.excluded_subjects,
                bytes: stored.as_ref().map(Vec::len),
            }),
    )
    .await?;
    Ok(())
}

/// The round and study of a fit task under secure aggregation, while the round collects: the
/// holder keeps exchanging protocol messages after it delivered its result (counts and
/// evaluation), up to the round's deadline.
async fn secure_round(
    tx: &mut dyn Tx,
    task: &Task,
    now: Timestamp,
) -> Result<(Study, Round, secagg::ClientId), TaskError> {
    if task.kind != TaskKind::Fit {
        return Err(TaskError::NotSecure);
    }
    match task.status {
        TaskStatus::Pending | TaskStatus::Completed if now < task.deadline => {}
        _ => {
            return Err(closed(task, now).unwrap_or(TaskError::Closed {
                code: "task_deadline_passed",
                detail: "the task's deadline has passed".to_owned(),
                current_state: task.status,
            }))
        }
    }
    let study = live_study(tx, task.study_id, now)
        .await?
        .ok_or(TaskError::NotLive)?;
    if study.spec.secure_aggregation.is_none() {
        return Err(TaskError::NotSecure);
    }
    let round = tx
        .get_round(task.round_id)
        .await?
        .ok_or_else(|| TaskError::Internal(anyhow::anyhow!("task without round")))?;
    if round.phase != RoundPhase::Collecting {
        return Err(TaskError::Closed {
            code: "task_closed",
            detail: format!("the round is {}", round.phase.as_str()),
            current_state: task.status,
        });
    }
    let client = sa::client_id(&round, &task.data_holder)
        .ok_or_else(|| TaskError::Internal(anyhow::anyhow!("the holder is not in its round")))?;
    Ok((study, round, client))
}

fn relay_state(bytes: Option<Vec<u8>>) -> Result<secagg::Server, TaskError> {
    let bytes = bytes.ok_or_else(|| TaskError::Internal(anyhow::anyhow!("no relay state")))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| TaskError::Internal(anyhow::anyhow!("stored relay state: {e}")))
}

/// Where the secure aggregation of `task`'s round stands for its holder, with what the last
/// closed stage relayed to it. Reads only: not audited (a node polls it); what it relays
/// is public keys, ciphertexts only the holder can open, and the survivor list.
pub async fn secagg_view(
    tx: &mut dyn Tx,
    task: &Task,
    now: Timestamp,
) -> Result<SecaggView, TaskError> {
    let (_, round, client) = secure_round(tx, task, now).await?;
    let server = relay_state(tx.secagg_session(round.id).await?)?;
    let stage = server.round();
    let previous = match stage {
        secagg::Round::AdvertiseKeys => None,
        secagg::Round::ShareKeys => Some(secagg::Round::AdvertiseKeys),
        secagg::Round::MaskedInputCollection => Some(secagg::Round::ShareKeys),
        secagg::Round::Unmasking | secagg::Round::Finished => {
            Some(secagg::Round::MaskedInputCollection)
        }
    };
    let relayed = match previous.and_then(sa::relayed_kind) {
        Some(kind) => match tx.secagg_message(round.id, client.0, kind).await? {
            Some(bytes) => Some(serde_json::from_slice::<Relayed>(&bytes).map_err(|e| {
                TaskError::Internal(anyhow::anyhow!("stored relayed message: {e}"))
            })?),
            None => None,
        },
        None => None,
    };
    Ok(SecaggView {
        config: server.config().clone(),
        client: client.0,
        stage: sa::stage_name(stage).to_owned(),
        stage_deadline: sa::stage_deadline(&round, stage),
        awaited: server.awaiting().contains(&client),
        relayed,
    })
}

/// Hands a holder's protocol message to the round's relay and keeps the relay's new state;
/// audited with its stage. Refused, with nothing changed, when the relay refuses it.
#[tracing::instrument(name = "Relaying a secure-aggregation message", skip_all, fields(task = %task.id))]
pub async fn secagg_submit(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    task: &Task,
    message: NodeMessage,
    now: Timestamp,
) -> Result<(), TaskError> {
    let (study, round, client) = secure_round(tx, task, now).await?;
    if message.from() != client {
        return Err(TaskError::SecaggSender);
    }
    let mut server = relay::lock_relay(tx, round.id)
        .await
        .map_err(TaskError::Internal)?;
    let stage = message.stage();
    // the server's state records that a message was accepted; the ShareKeys and Unmasking
    // messages themselves are kept beside it, for their stage's close
    match message {
        NodeMessage::AdvertiseKeys(m) => server.receive_advertise(m).map_err(TaskError::Secagg)?,
        NodeMessage::ShareKeys(m) => {
            server.receive_share_keys(&m).map_err(TaskError::Secagg)?;
            relay::keep(tx, round.id, relay::SHARE_KEYS_KEPT, client, &m)
                .await
                .map_err(TaskError::Internal)?;
        }
        NodeMessage::MaskedInput(m) => {
            let mut sum = relay::masked_sum(tx, round.id, &server)
                .await
                .map_err(TaskError::Internal)?;
            server
                .receive_masked_input(&m, &mut sum)
                .map_err(TaskError::Secagg)?;
            tx.update_secagg_sum(round.id, &sum.to_bytes(server.config()))
                .await?;
        }
        NodeMessage::Unmask(m) => {
            server.receive_unmask(&m).map_err(TaskError::Secagg)?;
            relay::keep(tx, round.id, relay::UNMASK_KEPT, client, &m)
                .await
                .map_err(TaskError::Internal)?;
        }
    }
    let state = serde_json::to_vec(&server).map_err(|e| TaskError::Internal(e.into()))?;
    tx.update_secagg_session(round.id, &state).await?;
    tx.append_audit(
        by.audit(AuditAction::NodeTaskSecagg, AuditSubject::Task(task.id))
            .permit(study.spec.permit_id)
            .details(&SecaggMessageAccepted {
                study: study.id,
                round: task.round,
                stage: sa::stage_name(stage),
            }),
    )
    .await?;
    Ok(())
}
