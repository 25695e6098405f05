//! Statistics services (Art. 69): starting a run under a permit through the governance check,
//! handing the holders' nodes their parts, taking their partials, pooling and checking the
//! output when the last one arrives (or at the deadline), and an officer's review. Each step is
//! one audited write in the caller's transaction. The run's rules are in
//! `ehds_core::domain::statistics`; the statistics themselves in `ehds_stats`.

use super::Requester;
use crate::{
    authz::Action,
    store::{StoreError, StoredRun, Tx},
};
use ehds_core::{
    domain::{
        audit::{Actor, AuditAction, AuditSubject, NewAuditEvent},
        audit_details::{
            ApplicationDeadlinePassed, StatisticsCompleted, StatisticsContributed,
            StatisticsRequested, StatisticsReviewed,
        },
        check::{check, CheckRequest, DenyReason},
        statistics::{
            charge, parse_query, parse_spec, ChargeError, Contribution, NewRun, ReviewDecision,
            ReviewPolicy, RunStateError, RunStatus, StatisticsRun, StatisticsTaskRecord,
        },
        time::Timestamp,
        Epsilon, Errors, FieldError, OrgId, Permit, PermitState, Purpose, StatisticsTaskId,
    },
    wire::{StatisticsResultBody, StatisticsTask},
};
use ehds_stats::{QueryForm, Rules};

/// How this HDAB answers statistics (configuration `statistics`).
#[derive(Debug, Clone)]
pub struct StatisticsSettings {
    /// The output-checking rules (defaults: ACRO's).
    pub rules: Rules,
    /// Whether an officer sees every answer, or only those the checker flags.
    pub review: ReviewPolicy,
    /// How long the holders' nodes have for their part.
    pub node_deadline: chrono::Duration,
}

impl Default for StatisticsSettings {
    fn default() -> Self {
        Self {
            rules: Rules::default(),
            review: ReviewPolicy::Flagged,
            node_deadline: chrono::Duration::hours(1),
        }
    }
}

/// A query to answer under a permit.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub purpose: Purpose,
    pub query: QueryForm,
    pub feature_spec: serde_json::Value,
    /// The holders to ask; all of the permit's when empty.
    pub data_holders: Vec<OrgId>,
}

/// Why a run was not started; nothing was stored.
#[derive(Debug)]
pub enum RunError {
    Invalid(Vec<FieldError>),
    /// The governance check refused the processing (every reason).
    Denied(Vec<DenyReason>),
    /// The permit answers its data request's declared statistics only (Art. 69).
    NotDeclared,
    Store(StoreError),
}

impl From<StoreError> for RunError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Starts a run of `req` under `permit`: the same governance check as a round (purpose,
/// categories, holders, state, budget), the query's differential privacy charged to the
/// permit's one budget, one task per holder. `approved_at` is the approval of the data request
/// the run answers (its Art. 69(4) clock).
#[tracing::instrument(name = "Starting a statistics run", skip_all, fields(permit = %permit.id()))]
pub async fn start(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    permit: &mut Permit,
    req: RunRequest,
    approved_at: Option<Timestamp>,
    settings: &StatisticsSettings,
    now: Timestamp,
) -> Result<StatisticsRun, RunError> {
    let mut e = Errors::default();
    let granted: Vec<_> = permit.terms().categories.iter().map(|g| g.value).collect();
    let spec = parse_spec(&mut e, "feature_spec", &req.feature_spec, &granted);
    let query = parse_query(&mut e, "query", req.query, spec.as_ref());
    let holders: Vec<OrgId> = if req.data_holders.is_empty() {
        permit.terms().data_holder_ids().cloned().collect()
    } else {
        req.data_holders
    };
    let (Some(spec), Some(query)) = (spec, query) else {
        return Err(RunError::Invalid(e.0));
    };
    if !e.0.is_empty() {
        return Err(RunError::Invalid(e.0));
    }
    let mut answering = None;
    if permit.terms().statistics_only {
        let app = tx
            .get_application(permit.record().application_id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("a permit without its application".into()))?;
        let declared = app
            .request
            .statistics
            .as_ref()
            .is_some_and(|d| d.feature_spec == req.feature_spec && d.queries.contains(&query));
        if !declared {
            return Err(RunError::NotDeclared);
        }
        answering = Some(app.id);
    }
    let charged = charge(&query, permit.terms().privacy_budget.delta.value()).map_err(|c| {
        let code = match c {
            ChargeError::DeltaAbovePermit { .. } => "delta_above_permit",
            ChargeError::DistributedNotOffered => "placement_not_offered",
        };
        RunError::Invalid(vec![FieldError {
            field: "query.dp".into(),
            code,
            message: c.to_string(),
        }])
    })?;
    let epsilon = match charged {
        Some(c) => Some(Epsilon::parse(c.epsilon).map_err(|(code, message)| {
            RunError::Invalid(vec![FieldError {
                field: "query.dp".into(),
                code,
                message,
            }])
        })?),
        None => None,
    };
    let categories: Vec<_> = spec.data_categories().into_iter().collect();
    let outcome = check(
        permit,
        &CheckRequest {
            purpose: req.purpose,
            categories: categories.clone(),
            data_holders: holders.clone(),
            epsilon,
        },
        now,
    );
    if !outcome.allowed {
        return Err(RunError::Denied(outcome.reasons));
    }
    if let Some(c) = charged {
        let version = permit.row_version();
        permit.spend_epsilon(c.epsilon, now).map_err(|_| {
            RunError::Denied(vec![DenyReason::BudgetExceeded {
                requested: c.epsilon,
                remaining: permit.epsilon_remaining(),
            }])
        })?;
        tx.update_permit(permit, version).await?;
    }
    let registry_version = tx.optout_registry_version().await?;
    let run = StatisticsRun::new(
        NewRun {
            permit_id: permit.id(),
            application_id: answering,
            organisation: permit.organisation().clone(),
            requested_by: by.principal.sub.clone(),
            purpose: req.purpose,
            query,
            feature_spec: req.feature_spec,
            categories,
            data_holders: holders,
            optout_policy: Default::default(),
            registry_version,
            rules: settings.rules,
            charge: charged,
            deadline: now + settings.node_deadline,
            approved_at: answering.and(approved_at.or(Some(permit.record().issued_at))),
        },
        now,
    );
    tx.insert_statistics_run(&run).await?;
    for holder in &run.data_holders {
        tx.insert_statistics_task(&StatisticsTaskRecord {
            id: StatisticsTaskId::new(),
            run_id: run.id,
            data_holder: holder.clone(),
            deadline: run.deadline,
            contribution: None,
        })
        .await?;
    }
    tx.append_audit(
        by.audit(
            Action::StatisticsRequest,
            AuditSubject::StatisticsRun(run.id),
        )
        .permit(run.permit_id)
        .details(&StatisticsRequested {
            statistic: run.query.statistic().name(),
            application_id: run.application_id,
            data_holders: &run.data_holders,
            registry_version,
            epsilon: charged.map(|c| c.epsilon),
        }),
    )
    .await?;
    Ok(run)
}

/// The open statistics tasks of `holder` whose run still computes and whose permit is still
/// active; the delivery is not audited (the result is).
pub async fn open_tasks(
    tx: &mut dyn Tx,
    holder: &OrgId,
    limit: i64,
    now: Timestamp,
) -> Result<Vec<StatisticsTask>, StoreError> {
    let mut out = Vec::new();
    for t in tx.open_statistics_tasks_for(holder, now, limit).await? {
        let Some(StoredRun { run, .. }) = tx.get_statistics_run(t.run_id).await? else {
            continue;
        };
        if run.status.is_final() || !permit_active(tx, &run, now).await? {
            continue;
        }
        out.push(StatisticsTask {
            task_id: t.id,
            run_id: run.id,
            permit_id: run.permit_id,
            data_holder: t.data_holder,
            purpose: run.purpose,
            categories: run.categories.clone(),
            feature_spec: run.feature_spec.clone(),
            query: run.query.to_form(),
            optout_policy: run.optout_policy,
            registry_version: run.registry_version,
            deadline: t.deadline,
        });
    }
    Ok(out)
}

async fn permit_active(
    tx: &mut dyn Tx,
    run: &StatisticsRun,
    now: Timestamp,
) -> Result<bool, StoreError> {
    Ok(tx
        .get_permit(run.permit_id)
        .await?
        .is_some_and(|p| p.state(now) == PermitState::Active))
}

/// Why a node's result was refused; nothing was stored.
#[derive(Debug)]
pub enum ResultError {
    NotFound,
    /// The task belongs to another holder.
    NotYours,
    /// The task was answered already, its deadline passed, or its run is over.
    Closed,
    /// The permit is no longer active: nothing more is computed under it.
    PermitInactive,
    /// The node filtered against another opt-out registry version.
    WrongRegistryVersion {
        expected: i64,
    },
    /// The partial does not have the query's shape.
    Malformed(String),
    Store(StoreError),
}

impl From<StoreError> for ResultError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Takes `holder`'s partial for task `id`; when it is the last one, pools and checks the run.
#[tracing::instrument(name = "Taking a statistics result", skip_all, fields(task = %id))]
pub async fn accept_result(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    holder: &OrgId,
    id: StatisticsTaskId,
    body: StatisticsResultBody,
    settings: &StatisticsSettings,
    now: Timestamp,
) -> Result<StatisticsRun, ResultError> {
    let task = tx
        .get_statistics_task(id)
        .await?
        .ok_or(ResultError::NotFound)?;
    if &task.data_holder != holder {
        return Err(ResultError::NotYours);
    }
    let StoredRun { run, .. } = tx
        .get_statistics_run(task.run_id)
        .await?
        .ok_or_else(|| StoreError::Corrupt("a task without its run".into()))?;
    if task.contribution.is_some() || task.deadline <= now || run.status.is_final() {
        return Err(ResultError::Closed);
    }
    if !permit_active(tx, &run, now).await? {
        return Err(ResultError::PermitInactive);
    }
    if body.registry_version != run.registry_version {
        return Err(ResultError::WrongRegistryVersion {
            expected: run.registry_version,
        });
    }
    ehds_stats::combine(&run.query, std::slice::from_ref(&body.partial))
        .map_err(|e| ResultError::Malformed(e.to_string()))?;
    let contribution = Contribution {
        holder: holder.clone(),
        partial: body.partial,
        opted_out: body.opted_out,
        incomplete: body.incomplete,
    };
    tx.complete_statistics_task(id, &contribution, now)
        .await
        .map_err(|e| match e {
            StoreError::Conflict => ResultError::Closed,
            e => ResultError::Store(e),
        })?;
    tx.append_audit(
        by.audit(
            AuditAction::NodeStatisticsResult,
            AuditSubject::StatisticsTask(id),
        )
        .permit(run.permit_id)
        .details(&StatisticsContributed {
            run_id: run.id,
            registry_version: body.registry_version,
        }),
    )
    .await?;
    let tasks = tx.statistics_tasks(run.id).await?;
    if tasks.iter().all(|t| t.contribution.is_some()) {
        return Ok(complete(tx, run.id, settings, now).await?);
    }
    Ok(run)
}

/// Pools what arrived for run `id`, checks the output and records the outcome (a system
/// entry). A run no longer computing is returned as it is.
pub async fn complete(
    tx: &mut dyn Tx,
    id: ehds_core::domain::StatisticsRunId,
    settings: &StatisticsSettings,
    now: Timestamp,
) -> Result<StatisticsRun, StoreError> {
    let StoredRun {
        mut run,
        row_version,
    } = tx
        .get_statistics_run(id)
        .await?
        .ok_or_else(|| StoreError::Corrupt("a run that vanished".into()))?;
    let contributions: Vec<Contribution> = tx
        .statistics_tasks(id)
        .await?
        .into_iter()
        .filter_map(|t| t.contribution)
        .collect();
    let earlier: Vec<_> = tx
        .released_statistics_runs(&run.organisation)
        .await?
        .into_iter()
        .flat_map(|s| s.run.released_counts())
        .collect();
    // Noise must be unpredictable to everyone, the gateway's operators included: drawn from
    // the operating system's generator directly.
    let mut rng = rand::rand_core::UnwrapErr(rand::rngs::SysRng);
    match run.complete(&contributions, &earlier, settings.review, &mut rng, now) {
        Ok(()) => {}
        Err(RunStateError(_)) => return Ok(run),
    }
    tx.update_statistics_run(&run, row_version).await?;
    let outcome = run.outcome.as_ref();
    let no_flags = Vec::new();
    tx.append_audit(
        NewAuditEvent::success(
            &Actor::system(),
            AuditAction::StatisticsComplete,
            AuditSubject::StatisticsRun(run.id),
        )
        .permit(run.permit_id)
        .details(&StatisticsCompleted {
            status: run.status.as_str(),
            holders_answered: outcome.map_or(0, |o| o.holders_answered),
            holders_missing: outcome.map_or(&[][..], |o| &o.holders_missing),
            flags: outcome.map_or(&no_flags, |o| &o.flags),
        }),
    )
    .await?;
    metrics::counter!(crate::observability::STATISTICS_RUNS, "status" => run.status.as_str())
        .increment(1);
    Ok(run)
}

/// Completes every run whose holders' deadline passed, with what arrived. Safe on several
/// replicas at once: the run's update is conditional on its version.
pub async fn sweep(
    tx: &mut dyn Tx,
    settings: &StatisticsSettings,
    now: Timestamp,
) -> Result<usize, StoreError> {
    // the answer deadline first: a run the holders' deadline then closes was still open
    raise_answer_deadlines(tx, now).await?;
    let due = tx.computing_runs_past_deadline(now).await?;
    for id in &due {
        complete(tx, *id, settings, now).await?;
    }
    Ok(due.len())
}

/// Raises, once each, the Art. 69(4) answer deadline of every data request whose answer is
/// still not released three months after its approval: an `application.deadline` entry
/// (`deadline: answer`, webhook `application.deadline`) on the request, as for the procedure's
/// own deadlines.
async fn raise_answer_deadlines(tx: &mut dyn Tx, now: Timestamp) -> Result<(), StoreError> {
    let open = crate::store::RunFilter {
        statuses: vec![RunStatus::Computing, RunStatus::UnderReview],
        ..Default::default()
    };
    let mut offset = 0;
    loop {
        let page = crate::store::Page { limit: 500, offset };
        let runs = tx
            .list_statistics_runs(&crate::store::Scope::All, &open, page)
            .await?;
        for StoredRun { run, .. } in &runs {
            let (Some(application), Some(due)) = (run.application_id, run.answer_due) else {
                continue;
            };
            if !run.overdue(now)
                || !tx
                    .raise_application_deadline(application, "answer", due, now)
                    .await?
            {
                continue;
            }
            tx.append_audit(
                NewAuditEvent::success(
                    &Actor::system(),
                    AuditAction::ApplicationDeadline,
                    AuditSubject::Application(application),
                )
                .permit(run.permit_id)
                .details(&ApplicationDeadlinePassed {
                    deadline: "answer",
                    due_at: due,
                    status: run.status.as_str(),
                }),
            )
            .await?;
            metrics::counter!(crate::observability::APPLICATION_DEADLINES, "deadline" => "answer", "outcome" => "overdue").increment(1);
        }
        if runs.len() < 500 {
            return Ok(());
        }
        offset += 500;
    }
}

/// An officer's release or withholding of a flagged answer, with the justification.
pub async fn review(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    stored: StoredRun,
    decision: ReviewDecision,
    justification: String,
    now: Timestamp,
) -> Result<StatisticsRun, ReviewError> {
    let StoredRun {
        mut run,
        row_version,
    } = stored;
    run.review(decision, &by.principal.sub, justification.clone(), now)
        .map_err(ReviewError::State)?;
    tx.update_statistics_run(&run, row_version).await?;
    tx.append_audit(
        by.audit(
            Action::StatisticsReview,
            AuditSubject::StatisticsRun(run.id),
        )
        .permit(run.permit_id)
        .details(&StatisticsReviewed {
            decision: match decision {
                ReviewDecision::Release => "release",
                ReviewDecision::Withhold => "withhold",
            },
            justification: &justification,
        }),
    )
    .await?;
    Ok(run)
}

#[derive(Debug)]
pub enum ReviewError {
    State(RunStateError),
    Store(StoreError),
}

impl From<StoreError> for ReviewError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}
