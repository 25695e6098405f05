//! Data access applications (Art. 67) and the HDAB's procedure on them (Art. 68): one route
//! per step, each answering the application as it now stands with its clocks.

use axum::{
    extract::State,
    http::{header, StatusCode},
    response::IntoResponse,
    routing::{get, post},
    Json, Router,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    error::{ApiError, ApiResult, Problem},
    extract::{ApiJson, ApiPath, ApiQuery, Caller},
    permits::PermitView,
    AppState,
};
use crate::app::reads::{self, Read};
use crate::{
    app::applications::{self, Decision, GrantTerms, Step, StepError},
    authz::{Action, Resource},
    store::{ApplicationFilter, Page, Scope},
};
use ehds_core::domain::{
    application::{
        fees::HolderCost,
        procedure::{CategoryAssessment, FeeLine, GrantScope, MAX_EXTENSION_MONTHS},
        ApplicationRequest, Clocks, Transition, TransitionError,
    },
    audit::AuditSubject,
    time, Application, ApplicationId, ApplicationStatus, DataCategory, DpRequirement, FieldError,
    NewApplication, OrgId,
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/applications", post(create).get(list))
        .route("/applications/{id}", get(read))
        .route("/applications/{id}/submit", post(submit))
        .route(
            "/applications/{id}/information-requests",
            post(request_information),
        )
        .route("/applications/{id}/information", post(answer_information))
        .route("/applications/{id}/completeness", post(confirm_complete))
        .route("/applications/{id}/extension", post(extend))
        .route("/applications/{id}/routing", post(route_to_trusted_holder))
        .route(
            "/applications/{id}/conversion-proposal",
            post(propose_conversion),
        )
        .route("/applications/{id}/conversion", post(accept_conversion))
        .route("/applications/{id}/fee-estimate", post(send_fee_estimate))
        .route(
            "/applications/{id}/fee-estimate/acceptance",
            post(accept_fee_estimate),
        )
        .route("/applications/{id}/decision", post(decide))
        .route("/applications/{id}/confirmation", post(confirm_grant))
        .route("/applications/{id}/publication", post(publish))
        .route("/applications/{id}/withdraw", post(withdraw))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// At most this many items (1-500, default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

impl ListParams {
    pub fn page(&self) -> ApiResult<Page> {
        let limit = self.limit.unwrap_or(100);
        let offset = self.offset.unwrap_or(0);
        if !(1..=500).contains(&limit) || offset < 0 {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                "limit must be within 1-500 and offset non-negative",
            ));
        }
        Ok(Page { limit, offset })
    }
}

/// The rows a caller may list: officers and admins all, researchers their organisation's, data
/// holders those naming them. Cedar still decides on each row.
pub fn scope_for(caller: &Caller) -> Scope {
    use crate::auth::Role;
    let p = &caller.principal;
    match (
        &p.organisation,
        p.has(Role::HdabOfficer) || p.has(Role::Admin),
    ) {
        (_, true) => Scope::All,
        (Some(org), false) if p.has(Role::Researcher) => Scope::Organisation(org.clone()),
        (Some(org), false) => Scope::DataHolder(org.clone()),
        (None, false) => Scope::Nothing,
    }
}

fn location(id: ApplicationId) -> [(header::HeaderName, String); 1] {
    [(header::LOCATION, format!("/v1/applications/{id}"))]
}

/// An application as it stands: its record, its deadlines now, and the steps open to it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ApplicationView {
    #[serde(flatten)]
    pub application: Application,
    pub clocks: Clocks,
    pub allowed_transitions: Vec<Transition>,
}

impl ApplicationView {
    fn new(state: &AppState, application: Application, now: time::Timestamp) -> Self {
        Self {
            clocks: application.clocks(now, &state.procedure.calendar),
            allowed_transitions: application.allowed_transitions(),
            application,
        }
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct CreateParams {
    /// Keep the application as a draft that only the applicant's organisation sees, to submit
    /// later (`POST /v1/applications/{id}/submit`). Default false: submitted at once.
    pub draft: Option<bool>,
}

/// Submit a data access application (or save it as a draft).
#[utoipa::path(post, path = "/v1/applications", tag = "applications", request_body = ApplicationRequest,
    params(CreateParams), security(("bearer" = [])),
    responses((status = 201, body = ApplicationView), (status = 422, body = Problem), (status = 403, body = Problem)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<CreateParams>,
    ApiJson(req): ApiJson<ApplicationRequest>,
) -> ApiResult<impl IntoResponse> {
    state.authorize(&caller, Action::ApplicationCreate, &Resource::Service)?;
    let action = Action::ApplicationCreate;
    let org = caller_organisation(&caller, action)?;
    let now = time::now();
    let request =
        NewApplication::parse(req, &org, now).map_err(|e| ApiError::invalid(e).action(action))?;
    let mut tx = state.store.begin().await?;
    let unlisted = applications::unknown_datasets(&mut *tx, &request).await?;
    if !unlisted.is_empty() {
        return Err(ApiError::invalid(unlisted).action(action));
    }
    let app = applications::create(
        &mut *tx,
        &caller.requester(),
        request,
        params.draft.unwrap_or(false),
        &state.procedure,
        now,
    )
    .await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        location(app.id),
        Json(ApplicationView::new(&state, app, now)),
    ))
}

fn caller_organisation(caller: &Caller, action: Action) -> ApiResult<OrgId> {
    caller.principal.organisation.clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "organisation_required",
            "the caller's token names no organisation",
        )
        .action(action)
    })
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ApplicationListParams {
    /// At most this many items (1-500, default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    /// Only applications in these states (comma-separated, e.g. `submitted,assessing`).
    pub status: Option<String>,
    /// `true`: only those whose current deadline has passed.
    pub overdue: Option<bool>,
}

/// List the applications the caller may see, optionally by state or only the overdue ones.
#[utoipa::path(get, path = "/v1/applications", tag = "applications", params(ApplicationListParams), security(("bearer" = [])),
    responses((status = 200, body = Vec<ApplicationView>), (status = 400, body = Problem)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(params): ApiQuery<ApplicationListParams>,
) -> ApiResult<Json<Vec<ApplicationView>>> {
    state.authorize(&caller, Action::ApplicationList, &Resource::Service)?;
    let page = ListParams {
        limit: params.limit,
        offset: params.offset,
    }
    .page()?;
    let now = time::now();
    let mut filter = ApplicationFilter::default();
    for s in params
        .status
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.is_empty())
    {
        let status = ApplicationStatus::parse(s).ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                format!(
                    "unknown status `{}`: one of {}",
                    s,
                    ApplicationStatus::ALL.map(|s| s.as_str()).join(", ")
                ),
            )
        })?;
        filter.statuses.push(status);
    }
    if params.overdue == Some(true) {
        filter.due_by = Some(now);
    }
    let mut tx = state.store.begin().await?;
    let rows = tx
        .list_applications(&scope_for(&caller), &filter, page)
        .await?;
    let visible = super::list_visible(
        &state,
        &caller,
        (Action::ApplicationList, Action::ApplicationRead),
        AuditSubject::Applications,
        tx,
        rows,
        |a| Resource::Application(a),
        |app| ApplicationView::new(&state, app, now),
    )
    .await?;
    Ok(Json(visible))
}

/// Read one application, with its clocks and the steps open to it.
#[utoipa::path(get, path = "/v1/applications/{id}", tag = "applications", security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 404, body = Problem)))]
pub async fn read(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
) -> ApiResult<Json<ApplicationView>> {
    let mut tx = state.store.begin().await?;
    let app = load(&mut *tx, &caller, id, Action::ApplicationRead).await?;
    state
        .authorize(
            &caller,
            Action::ApplicationRead,
            &Resource::Application(&app),
        )
        .map_err(|e| e.on(AuditSubject::Application(id)))?;
    let read = Read::of(Action::ApplicationRead, AuditSubject::Application(id));
    reads::record_read(&mut *tx, &caller.requester(), read).await?;
    tx.commit().await?;
    Ok(Json(ApplicationView::new(&state, app, time::now())))
}

/// The application, if it exists and the caller may know it does: a draft exists only for
/// its own organisation.
async fn load(
    tx: &mut dyn crate::store::Tx,
    caller: &Caller,
    id: ApplicationId,
    action: Action,
) -> ApiResult<Application> {
    tx.get_application(id)
        .await?
        .filter(|app| {
            app.status != ApplicationStatus::Draft
                || caller.principal.organisation.as_ref() == Some(&app.request.organisation)
        })
        .ok_or_else(|| {
            ApiError::not_found("application", id)
                .action(action)
                .on(AuditSubject::Application(id))
        })
}

/// Tags a refusal with the action and the application it was about.
fn tagged(action: Action, id: ApplicationId) -> impl Fn(ApiError) -> ApiError {
    move |e| e.action(action).on(AuditSubject::Application(id))
}

/// The refusal of a step the application's state does not allow.
fn invalid_transition(action: Action, id: ApplicationId, e: TransitionError) -> ApiError {
    tagged(action, id)(
        ApiError::new(StatusCode::CONFLICT, "invalid_transition", e.to_string())
            .with("current_state", json!(e.current.as_str()))
            .with(
                "allowed_transitions",
                json!(e.allowed.iter().map(|t| t.as_str()).collect::<Vec<_>>()),
            ),
    )
}

fn step_error(action: Action, id: ApplicationId) -> impl Fn(StepError) -> ApiError {
    move |e| {
        match e {
        StepError::Transition(e) => invalid_transition(action, id, e),
        StepError::Invalid(errors) => tagged(action, id)(ApiError::invalid(errors)),
        StepError::ReasonRequired => tagged(action, id)(ApiError::field(
            "reason",
            "reason_required",
            "a refusal, or a declined grant, must state its reasons (Art. 68(9))",
        )),
        StepError::ExceptionNotRequested => tagged(action, id)(ApiError::field(
            "grant_optout_exception",
            "optout_exception_not_requested",
            "the application did not ask for the Art. 71(4) exception",
        )),
        StepError::PeriodEnded => tagged(action, id)(ApiError::field(
            "requested_period",
            "period_in_past",
            "the requested period has already ended",
        )),
        StepError::FeeEstimateRequired => tagged(action, id)(ApiError::new(
            StatusCode::CONFLICT,
            "fee_estimate_required",
            "the HDAB charges fees: the applicant must accept a fee estimate before a grant (Art. 62(5))",
        )),
        StepError::SameOfficer => tagged(action, id)(ApiError::new(
            StatusCode::CONFLICT,
            "second_officer_required",
            "the four-eyes rule: a grant is confirmed by an officer other than the one who proposed it",
        )),
        StepError::Store(e) => e.into(),
    }
    }
}

/// A required free text, trimmed, checked as the application's own texts are.
fn text(errors: &mut Vec<FieldError>, field: &str, value: &str, max: usize) -> String {
    let value = value.trim();
    let mut e = ehds_core::domain::Errors::default();
    ehds_core::domain::application::non_blank(&mut e, field, value, max);
    errors.extend(e.0);
    value.to_owned()
}

/// Loads, authorises and takes `step` on application `id`. `step` reads the body against the
/// application and reports every problem; a refused body, like a refused step, rolls the
/// transaction back, so bad input changes nothing.
async fn run_step(
    state: &AppState,
    caller: &Caller,
    id: ApplicationId,
    step: impl FnOnce(&Application) -> Result<Step, Vec<FieldError>>,
    action: Action,
) -> ApiResult<Json<ApplicationView>> {
    let mut tx = state.store.begin().await?;
    let mut app = load(&mut *tx, caller, id, action).await?;
    state
        .authorize(caller, action, &Resource::Application(&app))
        .map_err(|e| e.on(AuditSubject::Application(id)))?;
    let step = step(&app).map_err(|e| tagged(action, id)(ApiError::invalid(e)))?;
    let now = time::now();
    applications::take_step(
        &mut *tx,
        &caller.requester(),
        &mut app,
        step,
        &state.procedure,
        now,
    )
    .await
    .map_err(step_error(action, id))?;
    tx.commit().await?;
    Ok(Json(ApplicationView::new(state, app, now)))
}

/// Submit a draft: the HDAB receives it (and the public register lists it).
#[utoipa::path(post, path = "/v1/applications/{id}/submit", tag = "applications", security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 404, body = Problem), (status = 409, body = Problem)))]
pub async fn submit(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
) -> ApiResult<Json<ApplicationView>> {
    run_step(
        &state,
        &caller,
        id,
        |_| Ok(Step::Submit),
        Action::ApplicationRespond,
    )
    .await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InformationRequestBody {
    /// What the application lacks; the applicant has four weeks to answer (Art. 68(4)).
    pub questions: String,
}

/// Find the application incomplete and ask for information: the decision clock stops, and the
/// application lapses if the answer does not come within four weeks (Art. 68(4)).
#[utoipa::path(post, path = "/v1/applications/{id}/information-requests", tag = "applications",
    request_body = InformationRequestBody, security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn request_information(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
    ApiJson(body): ApiJson<InformationRequestBody>,
) -> ApiResult<Json<ApplicationView>> {
    run_step(
        &state,
        &caller,
        id,
        |_| {
            let mut e = Vec::new();
            let questions = text(
                &mut e,
                "questions",
                &body.questions,
                ehds_core::domain::MAX_REASON_CHARS,
            );
            e.is_empty()
                .then_some(Step::RequestInformation { questions })
                .ok_or(e)
        },
        Action::ApplicationAssess,
    )
    .await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InformationAnswerBody {
    pub answer: String,
    /// The application as completed, replacing the one on file (optional).
    pub application: Option<ApplicationRequest>,
}

/// Answer the HDAB's request for information (the applicant), optionally completing the
/// application itself; the procedure resumes where it stopped.
#[utoipa::path(post, path = "/v1/applications/{id}/information", tag = "applications",
    request_body = InformationAnswerBody, security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn answer_information(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
    ApiJson(body): ApiJson<InformationAnswerBody>,
) -> ApiResult<Json<ApplicationView>> {
    let now = time::now();
    run_step(
        &state,
        &caller,
        id,
        |app| {
            let mut e = Vec::new();
            let answer = text(&mut e, "answer", &body.answer, 20_000);
            let amended = match body.application {
                Some(req) => match NewApplication::parse(req, &app.request.organisation, now) {
                    Ok(a) => Some(Box::new(a)),
                    Err(errors) => {
                        e.extend(errors.into_iter().map(|mut f| {
                            f.field = format!("application.{}", f.field);
                            f
                        }));
                        None
                    }
                },
                None => None,
            };
            e.is_empty()
                .then_some(Step::AnswerInformation { answer, amended })
                .ok_or(e)
        },
        Action::ApplicationRespond,
    )
    .await
}

/// Find a submitted application complete: the three-month decision clock starts (Art. 68(4)).
#[utoipa::path(post, path = "/v1/applications/{id}/completeness", tag = "applications", security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 409, body = Problem)))]
pub async fn confirm_complete(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
) -> ApiResult<Json<ApplicationView>> {
    run_step(
        &state,
        &caller,
        id,
        |_| Ok(Step::ConfirmComplete),
        Action::ApplicationAssess,
    )
    .await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtensionBody {
    /// 1-3 months (Art. 68(4)).
    pub months: u32,
    /// Why more time is needed; the applicant is told (Art. 68(4)).
    pub reasons: String,
}

/// Extend the decision period, once, by up to three months, with reasons.
#[utoipa::path(post, path = "/v1/applications/{id}/extension", tag = "applications",
    request_body = ExtensionBody, security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn extend(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
    ApiJson(body): ApiJson<ExtensionBody>,
) -> ApiResult<Json<ApplicationView>> {
    run_step(
        &state,
        &caller,
        id,
        |_| {
            let mut e = Vec::new();
            let reasons = text(
                &mut e,
                "reasons",
                &body.reasons,
                ehds_core::domain::MAX_REASON_CHARS,
            );
            if !(1..=MAX_EXTENSION_MONTHS).contains(&body.months) {
                e.push(FieldError::new(
                    "months",
                    "out_of_range",
                    format!("an extension is 1 to {MAX_EXTENSION_MONTHS} months (Art. 68(4))"),
                ));
            }
            e.is_empty()
                .then_some(Step::Extend {
                    months: body.months,
                    reasons,
                })
                .ok_or(e)
        },
        Action::ApplicationAssess,
    )
    .await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoutingBody {
    /// The trusted health data holder (Art. 72) that assesses the request for its data.
    pub data_holder: String,
    pub reasons: String,
}

/// Route the assessment to a trusted health data holder the application names (Art. 72).
#[utoipa::path(post, path = "/v1/applications/{id}/routing", tag = "applications",
    request_body = RoutingBody, security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn route_to_trusted_holder(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
    ApiJson(body): ApiJson<RoutingBody>,
) -> ApiResult<Json<ApplicationView>> {
    run_step(
        &state,
        &caller,
        id,
        |_| {
            let mut e = Vec::new();
            let reasons = text(
                &mut e,
                "reasons",
                &body.reasons,
                ehds_core::domain::MAX_REASON_CHARS,
            );
            let holder = match OrgId::parse(&body.data_holder) {
                Ok(h) => Some(h),
                Err((code, message)) => {
                    e.push(FieldError::new("data_holder", code, message));
                    None
                }
            };
            match holder {
                Some(data_holder) if e.is_empty() => Ok(Step::RouteToTrustedHolder {
                    data_holder,
                    reasons,
                }),
                _ => Err(e),
            }
        },
        Action::ApplicationAssess,
    )
    .await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversionProposalBody {
    /// Why statistics meet the applicant's need (Art. 69).
    pub reasons: String,
}

/// Propose to answer the application as an Art. 69 data request: in anonymised statistical
/// form only. The applicant decides.
#[utoipa::path(post, path = "/v1/applications/{id}/conversion-proposal", tag = "applications",
    request_body = ConversionProposalBody, security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn propose_conversion(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
    ApiJson(body): ApiJson<ConversionProposalBody>,
) -> ApiResult<Json<ApplicationView>> {
    run_step(
        &state,
        &caller,
        id,
        |_| {
            let mut e = Vec::new();
            let reasons = text(
                &mut e,
                "reasons",
                &body.reasons,
                ehds_core::domain::MAX_REASON_CHARS,
            );
            if e.is_empty() {
                Ok(Step::ProposeConversion { reasons })
            } else {
                Err(e)
            }
        },
        Action::ApplicationAssess,
    )
    .await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversionBody {
    /// The statistics that answer the request (Art. 69(2)(d)).
    pub statistics: ehds_core::domain::statistics::StatisticsRequest,
}

/// The applicant agrees to the proposed conversion: from now on the application is an Art. 69
/// data request answered by these statistics.
#[utoipa::path(post, path = "/v1/applications/{id}/conversion", tag = "applications",
    request_body = ConversionBody, security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn accept_conversion(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
    ApiJson(body): ApiJson<ConversionBody>,
) -> ApiResult<Json<ApplicationView>> {
    run_step(
        &state,
        &caller,
        id,
        |app| {
            let mut e = ehds_core::domain::Errors::default();
            match body
                .statistics
                .parse(&mut e, "statistics", &app.request.categories)
            {
                Some(statistics) if e.0.is_empty() => Ok(Step::AcceptConversion { statistics }),
                _ => Err(e.0),
            }
        },
        Action::ApplicationRespond,
    )
    .await
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FeeEstimateBody {
    /// ISO 4217 code, e.g. `EUR`; with a fee schedule, the schedule's (default).
    pub currency: Option<String>,
    /// The fee's parts (Art. 62: the HDAB's costs and the data holders' passed through), in
    /// minor units (cents). Without a fee schedule, required.
    pub lines: Option<Vec<FeeLine>>,
    /// With a fee schedule: the processing time the HDAB expects, in hours (rounded up to
    /// the quarter hour); the schedule turns it, the holders' costs and the applicant's
    /// reduction into the lines.
    pub hours: Option<f64>,
    /// The data holders' estimates of their costs (Art. 62(2)), passed through.
    #[serde(default)]
    pub holder_costs: Vec<HolderCost>,
}

/// Send the applicant a fee estimate (Art. 62) before the decision; the procedure waits for
/// the applicant to accept it (or withdraw).
#[utoipa::path(post, path = "/v1/applications/{id}/fee-estimate", tag = "applications",
    request_body = FeeEstimateBody, security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn send_fee_estimate(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
    ApiJson(body): ApiJson<FeeEstimateBody>,
) -> ApiResult<Json<ApplicationView>> {
    run_step(
        &state,
        &caller,
        id,
        |app| {
            let mut e = Vec::new();
            let schedule = state.procedure.fees.as_ref();
            let currency = body
                .currency
                .clone()
                .or_else(|| schedule.map(|s| s.currency.clone()))
                .unwrap_or_default();
            if schedule.is_some_and(|s| s.currency != currency) {
                e.push(FieldError::new(
                    "currency",
                    "invalid_currency",
                    "the fee schedule's currency",
                ));
            }
            let given = match (&body.lines, body.hours, schedule) {
                (Some(lines), None, _) => lines.clone(),
                (None, Some(hours), Some(schedule)) => {
                    if !(0.0..=10_000.0).contains(&hours) {
                        e.push(FieldError::new(
                            "hours",
                            "out_of_range",
                            "processing time is 0 to 10 000 hours",
                        ));
                    }
                    for (i, c) in body.holder_costs.iter().enumerate() {
                        if !app.request.data_holders.contains(&c.data_holder) {
                            e.push(FieldError::new(
                                format!("holder_costs[{i}].data_holder"),
                                "not_requested",
                                "a data holder the application names",
                            ));
                        }
                        if c.amount_minor < 0 {
                            e.push(FieldError::new(
                                format!("holder_costs[{i}].amount_minor"),
                                "out_of_range",
                                "an amount is not negative",
                            ));
                        }
                    }
                    let quarters = (hours.clamp(0.0, 10_000.0) * 4.0).ceil() as u32;
                    schedule.estimate(&app.request.user_kinds, quarters, &body.holder_costs)
                }
                _ => {
                    e.push(FieldError::new(
                        "lines",
                        "required",
                        match schedule {
                            Some(_) => "either `lines`, or `hours` (and `holder_costs`) for the fee schedule",
                            None => "`lines`: no fee schedule is configured to compute them",
                        },
                    ));
                    Vec::new()
                }
            };
            let computed = body.lines.is_none();
            if !ehds_core::domain::application::fees::is_currency_code(&currency) {
                e.push(FieldError::new(
                    "currency",
                    "invalid_currency",
                    "an ISO 4217 code of three capital letters, e.g. `EUR`",
                ));
            }
            if !computed && (given.is_empty() || given.len() > 100) {
                e.push(FieldError::new(
                    "lines",
                    "out_of_range",
                    "a fee estimate has 1 to 100 lines",
                ));
            }
            let mut total: i64 = 0;
            let mut lines = Vec::with_capacity(given.len());
            for (i, line) in given.iter().enumerate() {
                let description = text(&mut e, &format!("lines[{i}].description"), &line.description, 500);
                if line.amount_minor < 0 && !computed {
                    e.push(FieldError::new(
                        format!("lines[{i}].amount_minor"),
                        "out_of_range",
                        "an amount is not negative: reductions are reflected in the lines they reduce",
                    ));
                }
                match total.checked_add(line.amount_minor) {
                    Some(t) if t <= 1_000_000_000_000 => total = t,
                    _ => e.push(FieldError::new(
                        format!("lines[{i}].amount_minor"),
                        "out_of_range",
                        "the estimate's total is out of range",
                    )),
                }
                if let Some(h) = line.data_holder.as_ref().filter(|_| !computed) {
                    if !app.request.data_holders.contains(h) {
                        e.push(FieldError::new(
                            format!("lines[{i}].data_holder"),
                            "not_requested",
                            "a data holder the application names",
                        ));
                    }
                }
                lines.push(FeeLine {
                    description,
                    amount_minor: line.amount_minor,
                    data_holder: line.data_holder.clone(),
                });
            }
            if total < 0 {
                e.push(FieldError::new(
                    "lines",
                    "out_of_range",
                    "the estimate's total is negative",
                ));
            }
            e.is_empty()
                .then_some(Step::SendFeeEstimate { currency, lines })
                .ok_or(e)
        },
        Action::ApplicationAssess,
    )
    .await
}

/// Accept the fee estimate (the applicant); the assessment resumes.
#[utoipa::path(post, path = "/v1/applications/{id}/fee-estimate/acceptance", tag = "applications", security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 409, body = Problem)))]
pub async fn accept_fee_estimate(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
) -> ApiResult<Json<ApplicationView>> {
    run_step(
        &state,
        &caller,
        id,
        |_| Ok(Step::AcceptFeeEstimate),
        Action::ApplicationRespond,
    )
    .await
}

/// Make a decision public in the register (Art. 57(1)(j)(iii): within 30 working days), when
/// the HDAB does not publish on decision.
#[utoipa::path(post, path = "/v1/applications/{id}/publication", tag = "applications", security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 409, body = Problem)))]
pub async fn publish(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
) -> ApiResult<Json<ApplicationView>> {
    run_step(
        &state,
        &caller,
        id,
        |_| Ok(Step::Publish),
        Action::ApplicationAssess,
    )
    .await
}

#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    Approve,
    Reject,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeRequest {
    /// The data holders granted (a subset of those requested).
    pub data_holders: Option<Vec<String>>,
    /// The categories granted (a subset of those requested).
    pub categories: Option<Vec<String>>,
    /// An earlier end of the permit than requested.
    pub period_end: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssessmentRequest {
    pub category: String,
    /// Whether the category is necessary, adequate and proportionate (Art. 68(1)(b)).
    pub necessary: bool,
    #[serde(default)]
    pub note: String,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    pub decision: DecisionKind,
    /// Required for a refusal (Art. 68(9)) and for a partial grant; an optional note for a
    /// grant. Published in the public register with the decision: no personal data.
    pub reason: Option<String>,
    /// Conditions attached to the permit.
    pub conditions: Option<String>,
    /// Whether the HDAB grants the Art. 71(4) exception the application asked for.
    #[serde(default)]
    pub grant_optout_exception: bool,
    /// Which privacy plans studies under the permit may use: `client`, `record`,
    /// `client_or_record` (the default) or `none_allowed` (studies may also run without formal
    /// DP; the output check still applies). Approval only.
    #[serde(default)]
    pub dp_requirement: DpRequirement,
    /// Studies under the permit must use secure aggregation, so that the gateway never sees
    /// one holder's update (default false). Approval only.
    #[serde(default)]
    pub require_secure_aggregation: bool,
    /// A partial grant (Art. 68(3)): what the permit keeps of the request. Approval only.
    pub scope: Option<ScopeRequest>,
    /// The data-minimisation assessment of requested categories (Art. 68(1)(b), Art. 66). A
    /// category found not necessary must be left out of a grant's scope.
    #[serde(default)]
    pub minimisation: Vec<AssessmentRequest>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DecisionResponse {
    pub application: ApplicationView,
    pub permit: Option<PermitView>,
}

fn parse_scope(e: &mut Vec<FieldError>, scope: ScopeRequest) -> GrantScope {
    let mut errors = ehds_core::domain::Errors::default();
    let list = |errors: &mut ehds_core::domain::Errors, field: &str, raw: Option<Vec<String>>| {
        raw.map(|raw| {
            let mut out = Vec::new();
            for (i, s) in raw.iter().enumerate() {
                if let Some(v) = errors.take(format!("{field}[{i}]"), OrgId::parse(s)) {
                    out.push(v);
                }
            }
            out
        })
    };
    let data_holders = list(&mut errors, "scope.data_holders", scope.data_holders);
    let categories = scope.categories.map(|raw| {
        raw.iter()
            .enumerate()
            .filter_map(|(i, s)| {
                errors.take(format!("scope.categories[{i}]"), DataCategory::parse(s))
            })
            .collect()
    });
    e.extend(errors.0);
    GrantScope {
        data_holders,
        categories,
        period_end: scope.period_end.map(time::normalise),
    }
}

fn parse_minimisation(
    e: &mut Vec<FieldError>,
    raw: Vec<AssessmentRequest>,
) -> Vec<CategoryAssessment> {
    let mut errors = ehds_core::domain::Errors::default();
    let out = raw
        .into_iter()
        .enumerate()
        .filter_map(|(i, a)| {
            errors
                .take(
                    format!("minimisation[{i}].category"),
                    DataCategory::parse(&a.category),
                )
                .map(|category| CategoryAssessment {
                    category,
                    necessary: a.necessary,
                    note: a.note.trim().to_owned(),
                })
        })
        .collect();
    e.extend(errors.0);
    out
}

/// Grant (issuing a permit; in part with a `scope`) or refuse (with reasons) an application.
/// Under the four-eyes rule a grant waits for a second officer's confirmation.
#[utoipa::path(post, path = "/v1/applications/{id}/decision", tag = "applications", request_body = DecisionRequest,
    security(("bearer" = [])), params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = DecisionResponse), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn decide(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
    ApiJson(req): ApiJson<DecisionRequest>,
) -> ApiResult<Json<DecisionResponse>> {
    let action = Action::ApplicationDecide;
    let mut tx = state.store.begin().await?;
    let mut app = load(&mut *tx, &caller, id, action).await?;
    state
        .authorize(&caller, action, &Resource::Application(&app))
        .map_err(|e| e.on(AuditSubject::Application(id)))?;
    let now = time::now();
    let mut e: Vec<FieldError> = [
        req.reason.as_deref().map(|r| {
            ehds_core::domain::within_length(
                "reason",
                r.trim(),
                ehds_core::domain::MAX_REASON_CHARS,
            )
        }),
        req.conditions.as_deref().map(|c| {
            ehds_core::domain::within_length(
                "conditions",
                c,
                ehds_core::domain::MAX_CONDITIONS_CHARS,
            )
        }),
    ]
    .into_iter()
    .flatten()
    .filter_map(Result::err)
    .collect();
    let reason = req
        .reason
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty());
    let minimisation = parse_minimisation(&mut e, req.minimisation);
    let scope = req.scope.map(|s| parse_scope(&mut e, s));
    if scope.is_some() && reason.is_none() && matches!(req.decision, DecisionKind::Approve) {
        e.push(FieldError::new(
            "reason",
            "reason_required",
            "a partial grant must state its reasons",
        ));
    }
    if !e.is_empty() {
        return Err(tagged(action, id)(ApiError::invalid(e)));
    }
    let decision = match req.decision {
        DecisionKind::Reject => Decision::Reject { minimisation },
        DecisionKind::Approve => Decision::Approve(GrantTerms {
            grant_optout_exception: req.grant_optout_exception,
            conditions: req.conditions,
            dp_requirement: req.dp_requirement,
            require_secure_aggregation: req.require_secure_aggregation,
            scope,
            minimisation,
        }),
    };
    let decided = applications::decide(
        &mut *tx,
        &caller.requester(),
        &mut app,
        decision,
        reason,
        &state.procedure,
        now,
    )
    .await
    .map_err(step_error(action, id))?;
    tx.commit().await?;
    if decided.permit.is_some() {
        // a granted data request's declared statistics were started
        state
            .federation
            .changed(crate::federation::Change::Statistics);
    }
    Ok(Json(DecisionResponse {
        application: ApplicationView::new(&state, app, now),
        permit: decided.permit.map(|p| PermitView::new(&p, now)),
    }))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmationRequest {
    /// `true` confirms the proposed grant (issuing the permit); `false` sends it back to
    /// assessment.
    pub confirm: bool,
    /// Required when declining; an optional note when confirming.
    pub reason: Option<String>,
}

/// The second officer's confirmation of a proposed grant (four-eyes rule).
#[utoipa::path(post, path = "/v1/applications/{id}/confirmation", tag = "applications", request_body = ConfirmationRequest,
    security(("bearer" = [])), params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = DecisionResponse), (status = 409, body = Problem), (status = 422, body = Problem)))]
pub async fn confirm_grant(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
    ApiJson(req): ApiJson<ConfirmationRequest>,
) -> ApiResult<Json<DecisionResponse>> {
    let action = Action::ApplicationDecide;
    let mut tx = state.store.begin().await?;
    let mut app = load(&mut *tx, &caller, id, action).await?;
    state
        .authorize(&caller, action, &Resource::Application(&app))
        .map_err(|e| e.on(AuditSubject::Application(id)))?;
    let mut e = Vec::new();
    let reason = req
        .reason
        .as_deref()
        .map(|r| text(&mut e, "reason", r, ehds_core::domain::MAX_REASON_CHARS))
        .filter(|r| !r.is_empty());
    if !e.is_empty() {
        return Err(tagged(action, id)(ApiError::invalid(e)));
    }
    let now = time::now();
    let decided = applications::confirm_grant(
        &mut *tx,
        &caller.requester(),
        &mut app,
        req.confirm,
        reason,
        &state.procedure,
        now,
    )
    .await
    .map_err(step_error(action, id))?;
    tx.commit().await?;
    if decided.permit.is_some() {
        // a granted data request's declared statistics were started
        state
            .federation
            .changed(crate::federation::Change::Statistics);
    }
    Ok(Json(DecisionResponse {
        application: ApplicationView::new(&state, app, now),
        permit: decided.permit.map(|p| PermitView::new(&p, now)),
    }))
}

/// Withdraw one's own application before it is decided.
#[utoipa::path(post, path = "/v1/applications/{id}/withdraw", tag = "applications", security(("bearer" = [])),
    params(("id" = String, Path, description = "Application id")),
    responses((status = 200, body = ApplicationView), (status = 409, body = Problem)))]
pub async fn withdraw(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<ApplicationId>,
) -> ApiResult<Json<ApplicationView>> {
    let action = Action::ApplicationWithdraw;
    let mut tx = state.store.begin().await?;
    let mut app = load(&mut *tx, &caller, id, action).await?;
    state
        .authorize(&caller, action, &Resource::Application(&app))
        .map_err(|e| e.on(AuditSubject::Application(id)))?;
    let now = time::now();
    applications::withdraw(
        &mut *tx,
        &caller.requester(),
        &mut app,
        &state.procedure,
        now,
    )
    .await
    .map_err(step_error(action, id))?;
    tx.commit().await?;
    Ok(Json(ApplicationView::new(&state, app, now)))
}
