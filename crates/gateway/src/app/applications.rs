//! Application services: the Art. 67-68 procedure on a data access application, from draft to
//! decision, each step one audited write in the caller's transaction. The state machine itself
//! is in `ehds_core::domain::application::procedure`; this layer persists each step with the
//! deadline its new state runs against and issues the permit of a grant.

use serde::{Deserialize, Serialize};

use super::statistics::{self, RunError, RunRequest, StatisticsSettings};
use super::Requester;
use crate::{
    authz::Action,
    store::{StoreError, Tx},
};
use ehds_core::domain::{
    application::{
        calendar::HolidayCalendar,
        fees::FeeSchedule,
        procedure::{granted_request, CategoryAssessment, FeeLine, GrantScope},
        Transition, TransitionError,
    },
    audit::{Actor, AuditAction, AuditSubject, NewAuditEvent},
    audit_details::{
        ApplicationCreated, ApplicationDeadlinePassed, ApplicationDecided, ApplicationStep,
        PermitIssued,
    },
    catalogue::EntryStatus,
    statistics::DeclaredStatistics,
    time::Timestamp,
    Application, ApplicationId, ApplicationStatus, DpRequirement, FieldError, NewApplication,
    OrgId, Permit,
};

/// How this HDAB runs the procedure (configuration `procedure`).
#[derive(Debug, Clone)]
pub struct ProcedureRules {
    /// A grant takes effect only when a second officer confirms it.
    pub four_eyes: bool,
    /// Decisions are public as soon as they are made.
    pub publish_on_decision: bool,
    /// The member state's working days, for the publication deadline.
    pub calendar: HolidayCalendar,
    /// The fee schedule: when set, a grant needs an accepted fee estimate (Art. 62(5)).
    pub fees: Option<FeeSchedule>,
    /// How Art. 69 data requests are answered: their declared statistics start at the grant.
    pub statistics: StatisticsSettings,
}

impl Default for ProcedureRules {
    fn default() -> Self {
        Self {
            four_eyes: false,
            publish_on_decision: true,
            calendar: HolidayCalendar::weekends_only("EU"),
            fees: None,
            statistics: StatisticsSettings::default(),
        }
    }
}

impl ProcedureRules {
    /// The deadline `app`'s state runs against.
    pub fn due_at(&self, app: &Application, now: Timestamp) -> Option<Timestamp> {
        app.clocks(now, &self.calendar).next_due
    }
}

/// Why a step was not recorded; nothing was stored.
#[derive(Debug)]
pub enum StepError {
    /// The application's state does not allow the step.
    Transition(TransitionError),
    /// The step's input is inconsistent with the application.
    Invalid(Vec<FieldError>),
    /// A rejection must state its reasons (Art. 68(9)).
    ReasonRequired,
    /// The exception was granted, but the application did not ask for it.
    ExceptionNotRequested,
    /// The requested period has already ended.
    PeriodEnded,
    /// The four-eyes rule: the officer who proposed a grant cannot confirm it.
    SameOfficer,
    /// The HDAB charges fees: the applicant must accept an estimate before a grant (Art. 62(5)).
    FeeEstimateRequired,
    Store(StoreError),
}

impl From<StoreError> for StepError {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<TransitionError> for StepError {
    fn from(e: TransitionError) -> Self {
        Self::Transition(e)
    }
}

/// What is wrong with the catalogue datasets `request` names (Art. 77): each must be in the
/// catalogue, published, and of a data holder the request names. Empty when nothing is.
pub async fn unknown_datasets(
    tx: &mut dyn Tx,
    request: &NewApplication,
) -> Result<Vec<FieldError>, StoreError> {
    let mut errors = Vec::new();
    for (i, id) in request.datasets.iter().enumerate() {
        let field = format!("datasets[{i}]");
        match tx.get_dataset(*id).await? {
            None => errors.push(FieldError::new(
                &field,
                "dataset_not_found",
                format!("dataset {id} is not in the catalogue"),
            )),
            Some(d) if d.status != EntryStatus::Published => errors.push(FieldError::new(
                &field,
                "dataset_withdrawn",
                format!("dataset {id} was withdrawn from the catalogue"),
            )),
            Some(d) if !request.data_holders.contains(d.publisher()) => {
                errors.push(FieldError::new(
                    &field,
                    "dataset_holder_not_requested",
                    format!(
                        "dataset {id} is held by `{}`, which `data_holders` does not name",
                        d.publisher()
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(errors)
}

/// Stores a new application by `by`: submitted (received, Art. 67), or a draft only its
/// organisation sees.
#[tracing::instrument(name = "Submitting an application", skip_all)]
pub async fn create(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    request: NewApplication,
    draft: bool,
    rules: &ProcedureRules,
    now: Timestamp,
) -> Result<Application, StoreError> {
    let app = Application {
        id: ApplicationId::new(),
        applicant_sub: by.principal.sub.clone(),
        status: if draft {
            ApplicationStatus::Draft
        } else {
            ApplicationStatus::Submitted
        },
        submitted_at: now,
        decided_at: None,
        decided_by: None,
        decision_reason: None,
        permit_id: None,
        request,
        procedure: Default::default(),
    };
    tx.insert_application(&app, rules.due_at(&app, now)).await?;
    tx.append_audit(
        by.audit(Action::ApplicationCreate, AuditSubject::Application(app.id))
            .details(&ApplicationCreated {
                title: &app.request.title,
                purposes: &app.request.purposes,
                categories: &app.request.categories,
            }),
    )
    .await?;
    Ok(app)
}

/// A step of the procedure other than the decision, by the officer (`application.assess`) or
/// the applicant (`application.respond`).
#[derive(Debug)]
pub enum Step {
    /// Draft -> submitted (applicant).
    Submit,
    /// The application is incomplete: questions for the applicant, due in four weeks.
    RequestInformation { questions: String },
    /// The applicant's answer, possibly with the application amended (applicant).
    AnswerInformation {
        answer: String,
        amended: Option<Box<NewApplication>>,
    },
    /// The application is complete: the decision clock starts.
    ConfirmComplete,
    /// The one extension of the decision period, with reasons.
    Extend { months: u32, reasons: String },
    /// Assessment by a trusted health data holder (Art. 72).
    RouteToTrustedHolder { data_holder: OrgId, reasons: String },
    /// A fee estimate (Art. 62) the applicant accepts or withdraws over.
    SendFeeEstimate {
        currency: String,
        lines: Vec<FeeLine>,
    },
    /// The applicant accepts the fee estimate (applicant).
    AcceptFeeEstimate,
    /// The decision is made public (Art. 57(1)(j)(iii)).
    Publish,
    /// The officer proposes to answer the application as an Art. 69 data request.
    ProposeConversion { reasons: String },
    /// The applicant agrees, declaring the statistics (applicant).
    AcceptConversion { statistics: DeclaredStatistics },
}

impl Step {
    pub fn transition(&self) -> Transition {
        match self {
            Self::Submit => Transition::Submit,
            Self::RequestInformation { .. } => Transition::RequestInformation,
            Self::AnswerInformation { .. } => Transition::AnswerInformation,
            Self::ConfirmComplete => Transition::ConfirmComplete,
            Self::Extend { .. } => Transition::Extend,
            Self::RouteToTrustedHolder { .. } => Transition::RouteToTrustedHolder,
            Self::SendFeeEstimate { .. } => Transition::SendFeeEstimate,
            Self::AcceptFeeEstimate => Transition::AcceptFeeEstimate,
            Self::Publish => Transition::Publish,
            Self::ProposeConversion { .. } => Transition::ProposeConversion,
            Self::AcceptConversion { .. } => Transition::AcceptConversion,
        }
    }

    /// The API action the step is authorised and audited under.
    pub fn action(&self) -> Action {
        match self {
            Self::Submit
            | Self::AnswerInformation { .. }
            | Self::AcceptFeeEstimate
            | Self::AcceptConversion { .. } => Action::ApplicationRespond,
            _ => Action::ApplicationAssess,
        }
    }
}

/// Takes `step` on `app` and records it.
#[tracing::instrument(name = "Taking a step on an application", skip_all, fields(application = %app.id, step = step.transition().as_str()))]
pub async fn take_step(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    app: &mut Application,
    step: Step,
    rules: &ProcedureRules,
    now: Timestamp,
) -> Result<(), StepError> {
    let from = app.status;
    let action = step.action();
    let transition = step.transition();
    let who = by.principal.sub.clone();
    let reason = match &step {
        Step::RequestInformation { questions } => Some(questions.clone()),
        Step::Extend { reasons, .. }
        | Step::RouteToTrustedHolder { reasons, .. }
        | Step::ProposeConversion { reasons } => Some(reasons.clone()),
        _ => None,
    };
    match step {
        Step::Submit => app.submit(now)?,
        Step::RequestInformation { questions } => app.request_information(&who, questions, now)?,
        Step::AnswerInformation { answer, amended } => {
            app.answer_information(answer, amended.map(|a| *a), now)?
        }
        Step::ConfirmComplete => app.confirm_complete(now)?,
        Step::Extend { months, reasons } => app.extend(&who, months, reasons, now)?,
        Step::RouteToTrustedHolder {
            data_holder,
            reasons,
        } => {
            if !app.request.data_holders.contains(&data_holder) {
                return Err(StepError::Invalid(vec![FieldError::new(
                    "data_holder",
                    "not_requested",
                    "the trusted data holder must be one the application names",
                )]));
            }
            app.route_to_trusted_holder(&who, data_holder, reasons, now)?
        }
        Step::SendFeeEstimate { currency, lines } => {
            app.send_fee_estimate(&who, currency, lines, now)?
        }
        Step::AcceptFeeEstimate => app.accept_fee_estimate(now)?,
        Step::Publish => app.publish(now)?,
        Step::ProposeConversion { reasons } => app.propose_conversion(&who, reasons, now)?,
        Step::AcceptConversion { statistics } => app.accept_conversion(statistics, now)?,
    }
    let due_at = rules.due_at(app, now);
    tx.update_application(app, from, due_at).await?;
    tx.append_audit(by.audit(action, AuditSubject::Application(app.id)).details(
        &ApplicationStep {
            step: transition.as_str(),
            from: from.as_str(),
            to: app.status.as_str(),
            reason: reason.as_deref(),
            due_at,
        },
    ))
    .await?;
    Ok(())
}

/// The permit terms of a grant (kept as they are while a grant awaits its second officer).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GrantTerms {
    pub grant_optout_exception: bool,
    pub conditions: Option<String>,
    /// Which privacy plans the permit's studies may use.
    pub dp_requirement: DpRequirement,
    /// Whether the permit's studies must use secure aggregation.
    pub require_secure_aggregation: bool,
    /// A partial grant: what it keeps of the request.
    pub scope: Option<GrantScope>,
    /// The data-minimisation assessment per requested category.
    pub minimisation: Vec<CategoryAssessment>,
}

/// The HDAB's decision on an application.
#[derive(Debug)]
pub enum Decision {
    /// Grant (in whole or, with a scope, in part), issuing a permit with these terms.
    Approve(GrantTerms),
    Reject {
        minimisation: Vec<CategoryAssessment>,
    },
}

/// What a decision did.
#[derive(Debug)]
pub struct Decided {
    /// The permit a grant issued; none while a grant awaits its second officer.
    pub permit: Option<Permit>,
}

/// Records `decision` on `app` with `reason` (required for a refusal). A grant issues the
/// permit, audited on the permit before the decision is on the application; under the
/// four-eyes rule it waits for a second officer instead.
#[tracing::instrument(name = "Deciding an application", skip_all, fields(application = %app.id))]
pub async fn decide(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    app: &mut Application,
    decision: Decision,
    reason: Option<String>,
    rules: &ProcedureRules,
    now: Timestamp,
) -> Result<Decided, StepError> {
    let from = app.status;
    let decided_by = by.principal.sub.clone();
    let permit = match decision {
        Decision::Reject { minimisation } => {
            let reason = reason.ok_or(StepError::ReasonRequired)?;
            granted_request(&app.request, None, &minimisation, now).map_err(StepError::Invalid)?;
            app.refuse(&decided_by, reason, minimisation, now)?;
            None
        }
        Decision::Approve(terms) => {
            let granted = check_grant(app, &terms, now)?;
            if rules.fees.is_some() && !app.fee_accepted() {
                return Err(StepError::FeeEstimateRequired);
            }
            if rules.four_eyes {
                let value = serde_json::to_value(&terms).expect("grant terms serialise");
                app.propose_grant(&decided_by, value, reason, now)?;
                None
            } else {
                Some(issue(tx, app, &granted, terms, reason, false, &decided_by, now).await?)
            }
        }
    };
    finish_decision(tx, by, app, from, permit.as_ref(), rules, now).await?;
    let mut permit = permit;
    if let Some(p) = permit.as_mut() {
        start_declared_statistics(tx, by, p, &granted_statistics(app), rules, now).await?;
    }
    Ok(Decided { permit })
}

fn granted_statistics(app: &Application) -> Option<DeclaredStatistics> {
    app.request.statistics.clone()
}

/// Starts the declared queries of a granted data request (Art. 69): its answer is due within
/// three months. A query the permit cannot pay for refuses the grant.
async fn start_declared_statistics(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    permit: &mut Permit,
    declared: &Option<DeclaredStatistics>,
    rules: &ProcedureRules,
    now: Timestamp,
) -> Result<(), StepError> {
    let Some(declared) = declared else {
        return Ok(());
    };
    let purpose = permit.terms().purposes[0];
    for (i, query) in declared.queries.iter().enumerate() {
        let field = format!("statistics.queries[{i}]");
        statistics::start(
            tx,
            by,
            permit,
            RunRequest {
                purpose,
                query: query.to_form(),
                feature_spec: declared.feature_spec.clone(),
                data_holders: Vec::new(),
            },
            Some(now),
            &rules.statistics,
            now,
        )
        .await
        .map_err(|e| match e {
            RunError::Store(e) => StepError::Store(e),
            RunError::Invalid(errors) => StepError::Invalid(
                errors
                    .into_iter()
                    .map(|mut fe| {
                        fe.field = format!("{field}.{}", fe.field);
                        fe
                    })
                    .collect(),
            ),
            RunError::Denied(reasons) => StepError::Invalid(
                reasons
                    .iter()
                    .map(|r| FieldError::new(&field, "statistics_not_permitted", r.to_string()))
                    .collect(),
            ),
            RunError::NotDeclared => StepError::Invalid(vec![FieldError::new(
                &field,
                "query_not_declared",
                "the query is not one the data request declared",
            )]),
        })?;
    }
    Ok(())
}

/// The second officer's word on a proposed grant: confirm it (issuing the permit) or send it
/// back to assessment with reasons.
#[tracing::instrument(name = "Confirming a grant", skip_all, fields(application = %app.id))]
pub async fn confirm_grant(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    app: &mut Application,
    confirm: bool,
    reason: Option<String>,
    rules: &ProcedureRules,
    now: Timestamp,
) -> Result<Decided, StepError> {
    let from = app.status;
    let transition = if confirm {
        Transition::ConfirmGrant
    } else {
        Transition::DeclineGrant
    };
    let proposal = match (&app.procedure.proposed_grant, from) {
        (Some(p), ApplicationStatus::AwaitingConfirmation) => p.clone(),
        _ => {
            return Err(StepError::Transition(TransitionError {
                current: from,
                transition,
                allowed: app.allowed_transitions(),
            }))
        }
    };
    if proposal.proposed_by == by.principal.sub {
        return Err(StepError::SameOfficer);
    }
    if !confirm {
        let reasons = reason.ok_or(StepError::ReasonRequired)?;
        app.decline_grant(reasons.clone())?;
        let due_at = rules.due_at(app, now);
        tx.update_application(app, from, due_at).await?;
        tx.append_audit(
            by.audit(Action::ApplicationDecide, AuditSubject::Application(app.id))
                .details(&ApplicationStep {
                    step: transition.as_str(),
                    from: from.as_str(),
                    to: app.status.as_str(),
                    reason: Some(&reasons),
                    due_at,
                }),
        )
        .await?;
        return Ok(Decided { permit: None });
    }
    let terms: GrantTerms = serde_json::from_value(proposal.terms.clone())
        .map_err(|e| StoreError::Corrupt(format!("proposed grant terms: {e}")))?;
    let granted = check_grant(app, &terms, now)?;
    let note = reason.or(proposal.note.clone());
    let permit = issue(
        tx,
        app,
        &granted,
        terms,
        note,
        true,
        &by.principal.sub.clone(),
        now,
    )
    .await?;
    app.procedure.proposed_grant = None;
    finish_decision(tx, by, app, from, Some(&permit), rules, now).await?;
    let mut permit = permit;
    start_declared_statistics(tx, by, &mut permit, &granted_statistics(app), rules, now).await?;
    Ok(Decided {
        permit: Some(permit),
    })
}

/// Checks a grant's terms against the application; the request as granted.
fn check_grant(
    app: &Application,
    terms: &GrantTerms,
    now: Timestamp,
) -> Result<NewApplication, StepError> {
    if terms.grant_optout_exception && app.request.optout_exception.is_none() {
        return Err(StepError::ExceptionNotRequested);
    }
    if app.request.period_end <= now {
        return Err(StepError::PeriodEnded);
    }
    granted_request(&app.request, terms.scope.as_ref(), &terms.minimisation, now)
        .map_err(StepError::Invalid)
}

/// Grants `app` and stores the permit it issues over `granted` (what [`check_grant`] made of
/// the request).
#[allow(clippy::too_many_arguments)]
async fn issue(
    tx: &mut dyn Tx,
    app: &mut Application,
    granted: &NewApplication,
    terms: GrantTerms,
    note: Option<String>,
    confirming: bool,
    decided_by: &str,
    now: Timestamp,
) -> Result<Permit, StepError> {
    let permit = Permit::issue(
        app.id,
        &app.applicant_sub,
        granted,
        terms.grant_optout_exception,
        terms.conditions,
        terms.dp_requirement,
        now,
    )
    .requiring_secure_aggregation(terms.require_secure_aggregation);
    app.grant(
        decided_by,
        permit.id(),
        terms.scope,
        terms.minimisation,
        note,
        confirming,
        now,
    )?;
    app.invoice_estimate(now);
    tx.insert_permit(&permit, decided_by, now).await?;
    Ok(permit)
}

/// Publishes a decision when the HDAB publishes on decision, stores the application and
/// audits the decision (and the permit it issued, first).
async fn finish_decision(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    app: &mut Application,
    from: ApplicationStatus,
    permit: Option<&Permit>,
    rules: &ProcedureRules,
    now: Timestamp,
) -> Result<(), StepError> {
    if app.is_decided() && rules.publish_on_decision {
        app.publish(now)?;
    }
    tx.update_application(app, from, rules.due_at(app, now))
        .await?;
    let action = Action::ApplicationDecide;
    let id = app.id;
    let mut event = by
        .audit(action, AuditSubject::Application(id))
        .details(&ApplicationDecided {
            decision: app.status.as_str(),
            reason: match app.status {
                ApplicationStatus::AwaitingConfirmation => app
                    .procedure
                    .proposed_grant
                    .as_ref()
                    .and_then(|p| p.note.as_deref()),
                _ => app.decision_reason.as_deref(),
            },
        });
    if let Some(p) = permit {
        event = event.permit(p.id());
        tx.append_audit(
            by.audit(action, AuditSubject::Permit(p.id()))
                .permit(p.id())
                .details(&PermitIssued::new(
                    id,
                    p.record().expires_at,
                    p.terms().optout_exception.is_some(),
                    p.terms().dp_requirement,
                )),
        )
        .await?;
    }
    tx.append_audit(event).await?;
    Ok(())
}

/// Withdraws `app` on its applicant's request, before it is decided.
#[tracing::instrument(name = "Withdrawing an application", skip_all, fields(application = %app.id))]
pub async fn withdraw(
    tx: &mut dyn Tx,
    by: &Requester<'_>,
    app: &mut Application,
    rules: &ProcedureRules,
    now: Timestamp,
) -> Result<(), StepError> {
    let from = app.status;
    app.withdraw(&by.principal.sub, now)?;
    if let Some(schedule) = &rules.fees {
        app.invoice_withdrawal(schedule, now);
    }
    tx.update_application(app, from, rules.due_at(app, now))
        .await?;
    tx.append_audit(by.audit(
        Action::ApplicationWithdraw,
        AuditSubject::Application(app.id),
    ))
    .await?;
    Ok(())
}

/// What one sweep of the procedure's deadlines did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DeadlineSweep {
    pub lapsed: usize,
    pub raised: usize,
    pub backfilled: usize,
}

/// Acts on the deadlines that have passed: an unanswered request for information lapses the
/// application (Art. 68(4)); every other passed deadline is raised once as an
/// `application.deadline` entry (webhook `application.deadline`). Safe to run on several
/// replicas at once: a lapse is a conditional write and each deadline is raised once.
#[tracing::instrument(name = "Sweeping application deadlines", skip_all)]
pub async fn sweep_deadlines(
    tx: &mut dyn Tx,
    rules: &ProcedureRules,
    now: Timestamp,
) -> Result<DeadlineSweep, StoreError> {
    let mut done = DeadlineSweep::default();
    let system = Actor::system();
    for mut app in tx.list_applications_due(now).await? {
        let from = app.status;
        let clocks = app.clocks(now, &rules.calendar);
        if from == ApplicationStatus::Incomplete && clocks.overdue {
            if app.lapse(now).is_ok() {
                let due_at = rules.due_at(&app, now);
                tx.update_application(&app, from, due_at).await?;
                tx.append_audit(
                    NewAuditEvent::success(
                        &system,
                        AuditAction::ApplicationLapse,
                        AuditSubject::Application(app.id),
                    )
                    .details(&ApplicationStep {
                        step: Transition::Lapse.as_str(),
                        from: from.as_str(),
                        to: app.status.as_str(),
                        reason: app.decision_reason.as_deref(),
                        due_at,
                    }),
                )
                .await?;
                metrics::counter!(crate::observability::APPLICATION_DEADLINES, "deadline" => "information", "outcome" => "lapsed").increment(1);
                done.lapsed += 1;
            }
            continue;
        }
        let Some(due) = clocks.next_due else {
            continue;
        };
        if !clocks.overdue {
            // a row older than the procedure: its deadline was never stored
            tx.update_application(&app, from, Some(due)).await?;
            done.backfilled += 1;
            continue;
        }
        let kind = match from {
            ApplicationStatus::FeePending if clocks.fee_response_due.is_some_and(|f| f <= now) => {
                "fee_response"
            }
            ApplicationStatus::Approved
            | ApplicationStatus::PartiallyApproved
            | ApplicationStatus::Rejected => "publication",
            _ => "decision",
        };
        if app.procedure.completed_at.is_some() || kind == "publication" {
            // a migrated row may lack its deadline: store it, so that the raised deadline
            // takes the row off the sweep's list
            tx.update_application(&app, from, Some(due)).await?;
            if tx
                .raise_application_deadline(app.id, kind, due, now)
                .await?
            {
                tx.append_audit(
                    NewAuditEvent::success(
                        &system,
                        AuditAction::ApplicationDeadline,
                        AuditSubject::Application(app.id),
                    )
                    .details(&ApplicationDeadlinePassed {
                        deadline: kind,
                        due_at: due,
                        status: from.as_str(),
                    }),
                )
                .await?;
                metrics::counter!(crate::observability::APPLICATION_DEADLINES, "deadline" => kind, "outcome" => "overdue").increment(1);
                done.raised += 1;
            }
        }
    }
    Ok(done)
}
