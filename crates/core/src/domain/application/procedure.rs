//! The HDAB's procedure on a data access application (Art. 67-68), as a state machine: each
//! transition is a method that checks the current state and records what it did, so a
//! transition the regulation does not allow cannot be written.
//!
//! ```text
//! draft -> submitted -> assessing -> (fee_pending -> assessing) -> approved | partially_approved
//!              |   ^        |  ^                                     | rejected
//!              v   |        v  |            (four eyes: assessing -> awaiting_confirmation
//!            incomplete <---+--+             -> approved | partially_approved | assessing)
//!              |
//!              v  (four weeks unanswered, Art. 68(4))
//!            lapsed
//! ```
//! Any open state can be withdrawn by the applicant. Deadlines are never stored as flags: they
//! are computed from the recorded events and the time (see [`Clocks`]).

use chrono::{Duration, Months};
use serde::{Deserialize, Serialize};

use super::{calendar::HolidayCalendar, Application, ApplicationStatus};
use crate::domain::{time::Timestamp, DataCategory, OrgId};

/// Art. 68(4): an applicant told the application is incomplete has four weeks to complete it.
pub const INFORMATION_DAYS: i64 = 28;
/// Art. 68(4): the decision period may be extended once, by up to three months.
pub const MAX_EXTENSION_MONTHS: u32 = 3;
/// Art. 57(1)(j)(iii): permits and refusals are made public within 30 working days.
pub const PUBLICATION_WORKING_DAYS: u32 = 30;
/// How long an applicant has to accept or decline a fee estimate before it shows as overdue
/// (no article sets it; four weeks mirrors the information period).
pub const FEE_RESPONSE_DAYS: i64 = 28;

/// A step of the procedure, by its stable name (the `allowed_transitions` of a 409).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Transition {
    Submit,
    RequestInformation,
    AnswerInformation,
    ConfirmComplete,
    Extend,
    RouteToTrustedHolder,
    SendFeeEstimate,
    AcceptFeeEstimate,
    Approve,
    Reject,
    ConfirmGrant,
    DeclineGrant,
    Publish,
    Withdraw,
    Lapse,
    /// The officer proposes to answer the application as an Art. 69 data request.
    ProposeConversion,
    /// The applicant agrees, declaring the statistics that answer it.
    AcceptConversion,
}

impl Transition {
    pub const ALL: [Transition; 17] = [
        Self::Submit,
        Self::RequestInformation,
        Self::AnswerInformation,
        Self::ConfirmComplete,
        Self::Extend,
        Self::RouteToTrustedHolder,
        Self::SendFeeEstimate,
        Self::AcceptFeeEstimate,
        Self::Approve,
        Self::Reject,
        Self::ConfirmGrant,
        Self::DeclineGrant,
        Self::Publish,
        Self::Withdraw,
        Self::Lapse,
        Self::ProposeConversion,
        Self::AcceptConversion,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Submit => "submit",
            Self::RequestInformation => "request_information",
            Self::AnswerInformation => "answer_information",
            Self::ConfirmComplete => "confirm_complete",
            Self::Extend => "extend",
            Self::RouteToTrustedHolder => "route_to_trusted_holder",
            Self::SendFeeEstimate => "send_fee_estimate",
            Self::AcceptFeeEstimate => "accept_fee_estimate",
            Self::Approve => "approve",
            Self::Reject => "reject",
            Self::ConfirmGrant => "confirm_grant",
            Self::DeclineGrant => "decline_grant",
            Self::Publish => "publish",
            Self::Withdraw => "withdraw",
            Self::Lapse => "lapse",
            Self::ProposeConversion => "propose_conversion",
            Self::AcceptConversion => "accept_conversion",
        }
    }

    /// The states this step may start from. A decision on a `submitted` application confirms
    /// its completeness at the same time (the officer who decides has found it complete).
    fn from(self) -> &'static [ApplicationStatus] {
        use ApplicationStatus::*;
        match self {
            Self::Submit => &[Draft],
            Self::RequestInformation => &[Submitted, Assessing],
            Self::AnswerInformation => &[Incomplete],
            Self::ConfirmComplete => &[Submitted],
            Self::Extend
            | Self::RouteToTrustedHolder
            | Self::SendFeeEstimate
            | Self::ProposeConversion
            | Self::AcceptConversion => &[Assessing],
            Self::AcceptFeeEstimate => &[FeePending],
            Self::Approve | Self::Reject => &[Submitted, Assessing],
            Self::ConfirmGrant | Self::DeclineGrant => &[AwaitingConfirmation],
            Self::Publish => &[Approved, PartiallyApproved, Rejected],
            Self::Withdraw => &[
                Draft,
                Submitted,
                Incomplete,
                Assessing,
                FeePending,
                AwaitingConfirmation,
            ],
            Self::Lapse => &[Incomplete],
        }
    }

    /// The steps open from `status`.
    pub fn allowed_from(status: ApplicationStatus) -> Vec<Transition> {
        Self::ALL
            .into_iter()
            .filter(|t| t.from().contains(&status))
            .collect()
    }
}

/// A step the application's state does not allow; nothing changed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("application is {} and cannot {}", current.as_str(), transition.as_str())]
pub struct TransitionError {
    pub current: ApplicationStatus,
    pub transition: Transition,
    pub allowed: Vec<Transition>,
}

/// A request for information: the application is incomplete until it is answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InformationRequest {
    pub requested_at: chrono::DateTime<chrono::Utc>,
    pub requested_by: String,
    pub questions: String,
    pub due_at: chrono::DateTime<chrono::Utc>,
    /// The state the answer returns the application to.
    pub resumes: ApplicationStatus,
    pub answered_at: Option<chrono::DateTime<chrono::Utc>>,
    pub answer: Option<String>,
}

/// The one extension of the decision period (Art. 68(4)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Extension {
    pub at: chrono::DateTime<chrono::Utc>,
    pub by: String,
    pub months: u32,
    pub reasons: String,
}

/// Assessment handed to a trusted health data holder (Art. 72).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Routing {
    pub at: chrono::DateTime<chrono::Utc>,
    pub by: String,
    pub data_holder: OrgId,
    pub reasons: String,
}

/// One line of a fee estimate, in minor units of its currency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FeeLine {
    pub description: String,
    pub amount_minor: i64,
    /// The data holder whose costs the line passes through (Art. 62(2)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_holder: Option<OrgId>,
}

/// The fee estimate (Art. 62) sent before the decision; the applicant accepts or withdraws.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FeeEstimate {
    pub sent_at: chrono::DateTime<chrono::Utc>,
    pub sent_by: String,
    /// ISO 4217 code.
    pub currency: String,
    pub lines: Vec<FeeLine>,
    pub total_minor: i64,
    pub accepted_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// What the applicant is charged: on a grant, the accepted estimate; on a withdrawal after an
/// estimate, the costs already incurred (Art. 62(5)); nothing on a refusal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Invoice {
    pub issued_at: chrono::DateTime<chrono::Utc>,
    pub currency: String,
    pub total_minor: i64,
    /// The part passed on to the data holders (Art. 62(2)).
    pub holders_minor: i64,
}

/// What a partial grant keeps of the request (Art. 68(3)); absent parts are granted as asked.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GrantScope {
    pub data_holders: Option<Vec<OrgId>>,
    pub categories: Option<Vec<DataCategory>>,
    pub period_end: Option<chrono::DateTime<chrono::Utc>>,
}

/// The data-minimisation assessment of one requested category (Art. 68(1)(b), Art. 66).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CategoryAssessment {
    pub category: DataCategory,
    pub necessary: bool,
    pub note: String,
}

/// An approval recorded by one officer, waiting for a second one (the four-eyes rule).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProposedGrant {
    pub proposed_at: chrono::DateTime<chrono::Utc>,
    pub proposed_by: String,
    /// The permit terms the proposal carries, as the decision request gave them.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub terms: serde_json::Value,
    pub note: Option<String>,
}

/// A proposal the second officer declined, with their reasons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeclinedGrant {
    pub proposal: ProposedGrant,
    pub reasons: String,
}

/// The record of the procedure: every step's facts, from which the clocks are computed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct Procedure {
    /// When the application was found complete: the decision clock starts (Art. 68(4)).
    pub completed_at: Option<chrono::DateTime<chrono::Utc>>,
    pub information_requests: Vec<InformationRequest>,
    pub extension: Option<Extension>,
    pub routing: Option<Routing>,
    pub fee_estimate: Option<FeeEstimate>,
    pub proposed_grant: Option<ProposedGrant>,
    /// Declined proposals (four-eyes), newest last.
    pub declined_grants: Vec<DeclinedGrant>,
    pub scope: Option<GrantScope>,
    pub minimisation: Vec<CategoryAssessment>,
    /// When the decision was made public (Art. 57(1)(j)(iii)).
    pub published_at: Option<chrono::DateTime<chrono::Utc>>,
    pub invoice: Option<Invoice>,
    /// The proposal to answer the application as an Art. 69 data request, and its acceptance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversion: Option<Conversion>,
}

/// An officer's proposal to convert an application into an Art. 69 data request; the
/// applicant's agreement converts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Conversion {
    pub proposed_at: chrono::DateTime<chrono::Utc>,
    pub proposed_by: String,
    pub reasons: String,
    pub accepted_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// The deadlines of an application at one instant, all computed from its record.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Clocks {
    /// When the decision is due: three months from completeness, plus the extension, plus the
    /// time information requests stopped the clock. Absent before the application is complete.
    pub decision_due: Option<chrono::DateTime<chrono::Utc>>,
    /// The decision clock is stopped by an open information request.
    pub decision_clock_stopped: bool,
    pub information_due: Option<chrono::DateTime<chrono::Utc>>,
    pub fee_response_due: Option<chrono::DateTime<chrono::Utc>>,
    /// When the decision must be public (30 working days in the HDAB's member state).
    pub publication_due: Option<chrono::DateTime<chrono::Utc>>,
    /// The deadline the current state runs against.
    pub next_due: Option<chrono::DateTime<chrono::Utc>>,
    pub overdue: bool,
}

impl Application {
    fn guard(&self, transition: Transition) -> Result<(), TransitionError> {
        if transition.from().contains(&self.status) {
            Ok(())
        } else {
            Err(TransitionError {
                current: self.status,
                transition,
                allowed: Transition::allowed_from(self.status),
            })
        }
    }

    /// The steps open now.
    pub fn allowed_transitions(&self) -> Vec<Transition> {
        Transition::allowed_from(self.status)
            .into_iter()
            .filter(|t| self.applies(*t))
            .collect()
    }

    /// Whether a step the state allows also fits the record: one extension, none for a data
    /// request (Art. 69(3)); a conversion proposed to a data access application only, and
    /// accepted only while proposed.
    fn applies(&self, t: Transition) -> bool {
        let data_request = self.request.kind == super::ApplicationKind::DataRequest;
        let proposed = self
            .procedure
            .conversion
            .as_ref()
            .is_some_and(|c| c.accepted_at.is_none());
        match t {
            Transition::Extend => self.procedure.extension.is_none() && !data_request,
            Transition::ProposeConversion => !data_request && !proposed,
            Transition::AcceptConversion => proposed,
            _ => true,
        }
    }

    /// The refusal of `t` when the record does not fit it (see [`Application::applies`]).
    fn fits(&self, t: Transition) -> Result<(), TransitionError> {
        self.guard(t)?;
        if self.applies(t) {
            Ok(())
        } else {
            Err(TransitionError {
                current: self.status,
                transition: t,
                allowed: self.allowed_transitions(),
            })
        }
    }

    /// The officer proposes to answer the application as an Art. 69 data request, with the
    /// reasons (the applicant's data need is met by statistics).
    pub fn propose_conversion(
        &mut self,
        by: &str,
        reasons: String,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        self.fits(Transition::ProposeConversion)?;
        self.procedure.conversion = Some(Conversion {
            proposed_at: now,
            proposed_by: by.to_owned(),
            reasons,
            accepted_at: None,
        });
        Ok(())
    }

    /// The applicant agrees to the conversion, declaring the statistics that answer the request;
    /// the application is a data request from now on.
    pub fn accept_conversion(
        &mut self,
        statistics: crate::domain::statistics::DeclaredStatistics,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        self.fits(Transition::AcceptConversion)?;
        if let Some(c) = &mut self.procedure.conversion {
            c.accepted_at = Some(now);
        }
        self.request.kind = super::ApplicationKind::DataRequest;
        self.request.statistics = Some(statistics);
        Ok(())
    }

    /// Granted (in whole or in part) or refused: a decision the register publishes.
    pub fn is_decided(&self) -> bool {
        matches!(
            self.status,
            ApplicationStatus::Approved
                | ApplicationStatus::PartiallyApproved
                | ApplicationStatus::Rejected
        )
    }

    /// Draft -> submitted: the application is received (and published, Art. 57(1)(j)(ii)).
    pub fn submit(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        self.guard(Transition::Submit)?;
        self.status = ApplicationStatus::Submitted;
        self.submitted_at = now;
        Ok(())
    }

    pub fn request_information(
        &mut self,
        by: &str,
        questions: String,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        self.guard(Transition::RequestInformation)?;
        self.procedure
            .information_requests
            .push(InformationRequest {
                requested_at: now,
                requested_by: by.to_owned(),
                questions,
                due_at: now + Duration::days(INFORMATION_DAYS),
                resumes: self.status,
                answered_at: None,
                answer: None,
            });
        self.status = ApplicationStatus::Incomplete;
        Ok(())
    }

    /// The applicant completes the application; `amended` replaces the request when given.
    pub fn answer_information(
        &mut self,
        answer: String,
        amended: Option<super::NewApplication>,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        self.guard(Transition::AnswerInformation)?;
        let open = self
            .procedure
            .information_requests
            .last_mut()
            .expect("an incomplete application has an open information request");
        open.answered_at = Some(now);
        open.answer = Some(answer);
        self.status = open.resumes;
        if let Some(request) = amended {
            self.request = request;
        }
        Ok(())
    }

    pub fn confirm_complete(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        self.guard(Transition::ConfirmComplete)?;
        self.procedure.completed_at = Some(now);
        self.status = ApplicationStatus::Assessing;
        Ok(())
    }

    /// The one extension; `Err(None)` when the period was already extended.
    pub fn extend(
        &mut self,
        by: &str,
        months: u32,
        reasons: String,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        // once; never for a data request (Art. 69(3) gives it three months, without the
        // extension of Art. 68(4))
        self.fits(Transition::Extend)?;
        self.procedure.extension = Some(Extension {
            at: now,
            by: by.to_owned(),
            months: months.clamp(1, MAX_EXTENSION_MONTHS),
            reasons,
        });
        Ok(())
    }

    pub fn route_to_trusted_holder(
        &mut self,
        by: &str,
        data_holder: OrgId,
        reasons: String,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        self.guard(Transition::RouteToTrustedHolder)?;
        self.procedure.routing = Some(Routing {
            at: now,
            by: by.to_owned(),
            data_holder,
            reasons,
        });
        Ok(())
    }

    pub fn send_fee_estimate(
        &mut self,
        by: &str,
        currency: String,
        lines: Vec<FeeLine>,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        self.guard(Transition::SendFeeEstimate)?;
        let total_minor = lines.iter().map(|l| l.amount_minor).sum();
        self.procedure.fee_estimate = Some(FeeEstimate {
            sent_at: now,
            sent_by: by.to_owned(),
            currency,
            lines,
            total_minor,
            accepted_at: None,
        });
        self.status = ApplicationStatus::FeePending;
        Ok(())
    }

    pub fn accept_fee_estimate(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        self.guard(Transition::AcceptFeeEstimate)?;
        if let Some(fee) = &mut self.procedure.fee_estimate {
            fee.accepted_at = Some(now);
        }
        self.status = ApplicationStatus::Assessing;
        Ok(())
    }

    /// Whether the applicant accepted a fee estimate.
    pub fn fee_accepted(&self) -> bool {
        self.procedure
            .fee_estimate
            .as_ref()
            .is_some_and(|f| f.accepted_at.is_some())
    }

    /// Invoices the accepted estimate (on a grant).
    pub fn invoice_estimate(&mut self, now: Timestamp) {
        if let Some(fee) = self
            .procedure
            .fee_estimate
            .as_ref()
            .filter(|f| f.accepted_at.is_some())
        {
            self.procedure.invoice = Some(Invoice {
                issued_at: now,
                currency: fee.currency.clone(),
                total_minor: fee.total_minor,
                holders_minor: fee
                    .lines
                    .iter()
                    .filter(|l| l.data_holder.is_some())
                    .map(|l| l.amount_minor)
                    .sum(),
            });
        }
    }

    /// Invoices the costs already incurred when the applicant withdraws after a fee estimate
    /// (Art. 62(5)): the schedule's assessment fee, reduced as the estimate was.
    pub fn invoice_withdrawal(&mut self, schedule: &super::fees::FeeSchedule, now: Timestamp) {
        if self.procedure.fee_estimate.is_some() {
            self.procedure.invoice = Some(Invoice {
                issued_at: now,
                currency: schedule.currency.clone(),
                total_minor: schedule.withdrawal_charge(&self.request.user_kinds),
                holders_minor: 0,
            });
        }
    }

    /// Starts a decision: from `submitted`, the deciding officer confirms completeness.
    fn begin_decision(&mut self, t: Transition, now: Timestamp) -> Result<(), TransitionError> {
        self.guard(t)?;
        if self.procedure.completed_at.is_none() {
            self.procedure.completed_at = Some(now);
        }
        Ok(())
    }

    /// Records a grant proposal that a second officer must confirm (four-eyes rule).
    pub fn propose_grant(
        &mut self,
        by: &str,
        terms: serde_json::Value,
        note: Option<String>,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        self.begin_decision(Transition::Approve, now)?;
        self.procedure.proposed_grant = Some(ProposedGrant {
            proposed_at: now,
            proposed_by: by.to_owned(),
            terms,
            note,
        });
        self.status = ApplicationStatus::AwaitingConfirmation;
        Ok(())
    }

    /// The second officer declines the proposal: back to assessment.
    pub fn decline_grant(&mut self, reasons: String) -> Result<(), TransitionError> {
        self.guard(Transition::DeclineGrant)?;
        if let Some(p) = self.procedure.proposed_grant.take() {
            self.procedure.declined_grants.push(DeclinedGrant {
                proposal: p,
                reasons,
            });
        }
        self.status = ApplicationStatus::Assessing;
        Ok(())
    }

    /// Grants the application (directly, or confirming a proposal), whole or in part.
    #[allow(clippy::too_many_arguments)]
    pub fn grant(
        &mut self,
        by: &str,
        permit: crate::domain::PermitId,
        scope: Option<GrantScope>,
        minimisation: Vec<CategoryAssessment>,
        note: Option<String>,
        confirming: bool,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        if confirming {
            self.guard(Transition::ConfirmGrant)?;
        } else {
            self.begin_decision(Transition::Approve, now)?;
        }
        self.status = if scope.is_some() {
            ApplicationStatus::PartiallyApproved
        } else {
            ApplicationStatus::Approved
        };
        self.procedure.scope = scope;
        self.procedure.minimisation = minimisation;
        self.decided_at = Some(now);
        self.decided_by = Some(by.to_owned());
        self.decision_reason = note;
        self.permit_id = Some(permit);
        Ok(())
    }

    /// Refuses the application with reasons (Art. 68(3); no fee is charged for a refusal).
    pub fn refuse(
        &mut self,
        by: &str,
        reasons: String,
        minimisation: Vec<CategoryAssessment>,
        now: Timestamp,
    ) -> Result<(), TransitionError> {
        self.begin_decision(Transition::Reject, now)?;
        self.status = ApplicationStatus::Rejected;
        self.procedure.minimisation = minimisation;
        self.decided_at = Some(now);
        self.decided_by = Some(by.to_owned());
        self.decision_reason = Some(reasons);
        Ok(())
    }

    pub fn publish(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        self.guard(Transition::Publish)?;
        if self.procedure.published_at.is_some() {
            return Err(TransitionError {
                current: self.status,
                transition: Transition::Publish,
                allowed: Vec::new(),
            });
        }
        self.procedure.published_at = Some(now);
        Ok(())
    }

    pub fn withdraw(&mut self, by: &str, now: Timestamp) -> Result<(), TransitionError> {
        self.guard(Transition::Withdraw)?;
        self.status = ApplicationStatus::Withdrawn;
        self.decided_at = Some(now);
        self.decided_by = Some(by.to_owned());
        self.decision_reason = None;
        Ok(())
    }

    /// An information request went unanswered for four weeks: no permit is issued (Art. 68(4)).
    /// Refused before the due date: the applicant still has time.
    pub fn lapse(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        self.guard(Transition::Lapse)?;
        let due = self.open_information_request().map(|r| r.due_at);
        if due.is_none_or(|due| now < due) {
            return Err(TransitionError {
                current: self.status,
                transition: Transition::Lapse,
                allowed: self.allowed_transitions(),
            });
        }
        self.status = ApplicationStatus::Lapsed;
        self.decided_at = Some(now);
        self.decided_by = None;
        self.decision_reason =
            Some("the application was not completed within four weeks (Art. 68(4))".to_owned());
        Ok(())
    }

    fn open_information_request(&self) -> Option<&InformationRequest> {
        self.procedure
            .information_requests
            .last()
            .filter(|r| r.answered_at.is_none())
    }

    /// The deadlines at `now`, publication counted in `calendar`'s working days.
    pub fn clocks(&self, now: Timestamp, calendar: &HolidayCalendar) -> Clocks {
        use ApplicationStatus::*;
        let p = &self.procedure;
        let decision_due = p.completed_at.map(|start| {
            let months = super::DECISION_MONTHS + p.extension.as_ref().map_or(0, |e| e.months);
            let stopped: Duration = p
                .information_requests
                .iter()
                .filter(|r| r.requested_at >= start)
                .map(|r| r.answered_at.unwrap_or(now).max(r.requested_at) - r.requested_at)
                .sum();
            start
                .checked_add_months(Months::new(months))
                .unwrap_or(start)
                + stopped
        });
        let information_due = self.open_information_request().map(|r| r.due_at);
        let fee_response_due = p
            .fee_estimate
            .as_ref()
            .filter(|f| f.accepted_at.is_none() && self.status == FeePending)
            .map(|f| f.sent_at + Duration::days(FEE_RESPONSE_DAYS));
        let publication_due = self.decided_at.filter(|_| self.is_decided()).map(|at| {
            let day = calendar.add_working_days(at.date_naive(), PUBLICATION_WORKING_DAYS);
            day.succ_opt()
                .unwrap_or(day)
                .and_hms_opt(0, 0, 0)
                .expect("midnight exists")
                .and_utc()
        });
        let next_due = match self.status {
            Incomplete => information_due,
            Submitted | Assessing | AwaitingConfirmation => decision_due,
            FeePending => fee_response_due.into_iter().chain(decision_due).min(),
            Approved | PartiallyApproved | Rejected if p.published_at.is_none() => publication_due,
            _ => None,
        };
        Clocks {
            decision_due,
            decision_clock_stopped: self.status == Incomplete && p.completed_at.is_some(),
            information_due,
            fee_response_due,
            publication_due,
            next_due,
            overdue: next_due.is_some_and(|due| now >= due),
        }
    }
}

/// The request as granted: checks a partial grant's scope and the minimisation assessment
/// against what was asked, reporting every problem.
pub fn granted_request(
    request: &super::NewApplication,
    scope: Option<&GrantScope>,
    minimisation: &[CategoryAssessment],
    now: Timestamp,
) -> Result<super::NewApplication, Vec<crate::domain::FieldError>> {
    let mut e = crate::domain::Errors::default();
    let mut granted = request.clone();
    if let Some(scope) = scope {
        let mut narrower = false;
        if let Some(holders) = &scope.data_holders {
            subset(&mut e, "scope.data_holders", holders, &request.data_holders);
            narrower |= holders.len() < request.data_holders.len();
            granted.data_holders = holders.clone();
        }
        if let Some(categories) = &scope.categories {
            subset(&mut e, "scope.categories", categories, &request.categories);
            narrower |= categories.len() < request.categories.len();
            granted.categories = categories.clone();
        }
        if let Some(end) = scope.period_end {
            if end <= now || end <= request.period_start {
                e.push(
                    "scope.period_end",
                    "invalid_period",
                    "the granted period must end in the future and after it starts",
                );
            } else if end > request.period_end {
                e.push(
                    "scope.period_end",
                    "not_requested",
                    "the granted period cannot outlast the requested one",
                );
            }
            narrower |= end < request.period_end;
            granted.period_end = end;
        }
        if !narrower && e.0.is_empty() {
            e.push(
                "scope",
                "scope_not_narrower",
                "a partial grant must keep less than was asked: leave `scope` out to grant in full",
            );
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, a) in minimisation.iter().enumerate() {
        let field = format!("minimisation[{i}]");
        if !request.categories.contains(&a.category) {
            e.push(
                format!("{field}.category"),
                "not_requested",
                format!("category `{}` was not requested", a.category.as_str()),
            );
        } else if !seen.insert(a.category) {
            e.push(
                format!("{field}.category"),
                "duplicate_value",
                format!("category `{}` is assessed twice", a.category.as_str()),
            );
        } else if !a.necessary && granted.categories.contains(&a.category) {
            e.push(
                format!("{field}.category"),
                "unnecessary_category_granted",
                format!(
                    "category `{}` is assessed as not necessary but would be granted: narrow `scope.categories`",
                    a.category.as_str()
                ),
            );
        }
        if a.note.chars().count() > crate::domain::MAX_REASON_CHARS {
            e.push(
                format!("{field}.note"),
                "too_long",
                format!(
                    "a note is limited to {} characters",
                    crate::domain::MAX_REASON_CHARS
                ),
            );
        }
    }
    // A data request is answered by its declared statistics: a grant that narrows the
    // categories below what they read would leave them unanswerable.
    if let Some(st) = &granted.statistics {
        if let Ok(spec) = crate::domain::feature_spec::features::FeatureSpec::from_json(
            &st.feature_spec.to_string(),
        ) {
            for c in spec.data_categories() {
                if !granted.categories.contains(&c) {
                    e.push(
                        "scope.categories",
                        "statistics_need_category",
                        format!(
                            "the declared statistics read `{}` data: keep the category or refuse",
                            c.as_str()
                        ),
                    );
                }
            }
        }
    }
    e.into_result(|| granted)
}

fn subset<T: PartialEq + Ord>(
    e: &mut crate::domain::Errors,
    field: &str,
    granted: &[T],
    requested: &[T],
) {
    if granted.is_empty() {
        e.push(
            field,
            "empty_list",
            format!("`{field}` must keep at least one value"),
        );
    }
    if granted.iter().any(|g| !requested.contains(g)) {
        e.push(
            field,
            "not_requested",
            format!("`{field}` may only keep values the application asked for"),
        );
    }
    let mut sorted: Vec<&T> = granted.iter().collect();
    sorted.sort();
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        e.push(
            field,
            "duplicate_value",
            format!("`{field}` names a value twice"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{
        ApplicationId, BudgetUnit, Delta, Epsilon, MemberState, NewApplication, PrivacyBudget,
        Purpose,
    };
    use chrono::TimeZone;

    fn at(y: i32, m: u32, d: u32) -> Timestamp {
        chrono::Utc.with_ymd_and_hms(y, m, d, 9, 0, 0).unwrap()
    }

    fn application(now: Timestamp) -> Application {
        Application {
            id: ApplicationId::new(),
            applicant_sub: "alice".into(),
            status: ApplicationStatus::Submitted,
            submitted_at: now,
            decided_at: None,
            decided_by: None,
            decision_reason: None,
            permit_id: None,
            request: NewApplication {
                title: "t".into(),
                organisation: OrgId::parse("uni-a").unwrap(),
                public_body: false,
                user_kinds: vec![],
                purposes: vec![Purpose::ScientificResearch],
                research_flags: vec![],
                categories: vec![DataCategory::EhrData, DataCategory::GeneticGenomic],
                data_holders: vec![
                    OrgId::parse("hosp-1").unwrap(),
                    OrgId::parse("hosp-2").unwrap(),
                ],
                member_states: vec![MemberState::parse("FR").unwrap()],
                period_start: now,
                period_end: now + Duration::days(365),
                privacy_budget: PrivacyBudget {
                    epsilon: Epsilon::parse(4.0).unwrap(),
                    delta: Delta::parse(1e-5).unwrap(),
                    unit: BudgetUnit::Record,
                },
                justification: "j".into(),
                optout_exception: None,
                kind: Default::default(),
                statistics: None,
                datasets: vec![],
            },
            procedure: Procedure::default(),
        }
    }

    fn weekends() -> HolidayCalendar {
        HolidayCalendar::weekends_only("FR")
    }

    #[test]
    fn decision_clock_starts_at_completeness_and_stops_for_information() {
        let t0 = at(2027, 1, 4);
        let mut app = application(t0);
        // not complete yet: no decision clock
        assert_eq!(app.clocks(t0, &weekends()).decision_due, None);
        let t1 = at(2027, 1, 11);
        app.confirm_complete(t1).unwrap();
        assert_eq!(
            app.clocks(t1, &weekends()).decision_due,
            Some(at(2027, 4, 11))
        );
        // a request for information on 1 February, answered ten days later
        let t2 = at(2027, 2, 1);
        app.request_information("officer", "which cohort?".into(), t2)
            .unwrap();
        assert_eq!(app.status, ApplicationStatus::Incomplete);
        let during = app.clocks(at(2027, 2, 6), &weekends());
        assert!(during.decision_clock_stopped);
        assert_eq!(during.information_due, Some(at(2027, 3, 1)));
        assert_eq!(during.next_due, Some(at(2027, 3, 1)));
        app.answer_information("the adult cohort".into(), None, at(2027, 2, 11))
            .unwrap();
        assert_eq!(app.status, ApplicationStatus::Assessing);
        // 11 April + 10 days stopped = 21 April
        let after = app.clocks(at(2027, 2, 12), &weekends());
        assert_eq!(after.decision_due, Some(at(2027, 4, 21)));
        assert!(!after.decision_clock_stopped);
        // the one extension adds three months
        app.extend("officer", 3, "complexity".into(), at(2027, 3, 1))
            .unwrap();
        assert_eq!(
            app.clocks(at(2027, 3, 1), &weekends()).decision_due,
            Some(at(2027, 7, 21))
        );
        let again = app
            .extend("officer", 1, "more".into(), at(2027, 3, 2))
            .unwrap_err();
        assert!(!again.allowed.contains(&Transition::Extend));
        assert!(app.clocks(at(2027, 7, 21), &weekends()).overdue);
        assert!(!app.clocks(at(2027, 7, 20), &weekends()).overdue);
    }

    #[test]
    fn an_unanswered_request_lapses_only_after_four_weeks() {
        let t0 = at(2027, 1, 4);
        let mut app = application(t0);
        app.request_information("officer", "q".into(), t0).unwrap();
        let early = app.lapse(at(2027, 1, 31)).unwrap_err();
        assert_eq!(early.current, ApplicationStatus::Incomplete);
        app.lapse(at(2027, 2, 1)).unwrap();
        assert_eq!(app.status, ApplicationStatus::Lapsed);
        assert!(app.allowed_transitions().is_empty());
        assert!(app.withdraw("alice", at(2027, 2, 2)).is_err());
    }

    #[test]
    fn illegal_transitions_name_the_state_and_the_open_steps() {
        let t0 = at(2027, 1, 4);
        let mut app = application(t0);
        let e = app.accept_fee_estimate(t0).unwrap_err();
        assert_eq!(e.current, ApplicationStatus::Submitted);
        assert_eq!(e.transition, Transition::AcceptFeeEstimate);
        assert_eq!(
            e.allowed,
            vec![
                Transition::RequestInformation,
                Transition::ConfirmComplete,
                Transition::Approve,
                Transition::Reject,
                Transition::Withdraw,
            ]
        );
        // a fee estimate is sent during assessment and holds the decision until accepted
        app.confirm_complete(t0).unwrap();
        app.send_fee_estimate(
            "officer",
            "EUR".into(),
            vec![
                FeeLine {
                    description: "processing, 10 h".into(),
                    amount_minor: 80_000,
                    data_holder: None,
                },
                FeeLine {
                    description: "data holders' costs".into(),
                    amount_minor: 25_050,
                    data_holder: Some(OrgId::parse("hosp-1").unwrap()),
                },
            ],
            t0,
        )
        .unwrap();
        assert_eq!(
            app.procedure.fee_estimate.as_ref().unwrap().total_minor,
            105_050
        );
        assert!(app.refuse("officer", "r".into(), vec![], t0).is_err());
        app.accept_fee_estimate(t0).unwrap();
        app.refuse("officer", "not proportionate".into(), vec![], t0)
            .unwrap();
        assert_eq!(app.status, ApplicationStatus::Rejected);
    }

    #[test]
    fn publication_is_due_thirty_working_days_after_the_decision() {
        let t0 = at(2026, 5, 1);
        let mut app = application(t0);
        app.refuse("officer", "r".into(), vec![], t0).unwrap();
        let fr = HolidayCalendar::builtin("FR").unwrap();
        // 30 French working days after Friday 1 May 2026 is 17 June (calendar.rs): due by the
        // end of that day
        let clocks = app.clocks(t0, &fr);
        assert_eq!(
            clocks.publication_due,
            Some(chrono::Utc.with_ymd_and_hms(2026, 6, 18, 0, 0, 0).unwrap())
        );
        assert_eq!(clocks.next_due, clocks.publication_due);
        app.publish(at(2026, 5, 4)).unwrap();
        assert_eq!(app.clocks(t0, &fr).next_due, None);
        assert!(app.publish(at(2026, 5, 5)).is_err());
    }

    #[test]
    fn a_partial_grant_keeps_a_subset_and_honours_the_minimisation() {
        let now = at(2027, 1, 4);
        let app = application(now);
        let keep_ehr = GrantScope {
            categories: Some(vec![DataCategory::EhrData]),
            ..Default::default()
        };
        let assessed = vec![CategoryAssessment {
            category: DataCategory::GeneticGenomic,
            necessary: false,
            note: "not needed for the outcome".into(),
        }];
        let granted = granted_request(&app.request, Some(&keep_ehr), &assessed, now).unwrap();
        assert_eq!(granted.categories, vec![DataCategory::EhrData]);
        // the unnecessary category may not be granted
        let codes = |r: Result<NewApplication, Vec<crate::domain::FieldError>>| {
            r.unwrap_err()
                .into_iter()
                .map(|e| e.code)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            codes(granted_request(&app.request, None, &assessed, now)),
            vec!["unnecessary_category_granted"]
        );
        // a scope must narrow, and keep only what was asked
        let same = GrantScope {
            data_holders: Some(app.request.data_holders.clone()),
            ..Default::default()
        };
        assert_eq!(
            codes(granted_request(&app.request, Some(&same), &[], now)),
            vec!["scope_not_narrower"]
        );
        let other = GrantScope {
            data_holders: Some(vec![OrgId::parse("hosp-9").unwrap()]),
            ..Default::default()
        };
        assert_eq!(
            codes(granted_request(&app.request, Some(&other), &[], now)),
            vec!["not_requested"]
        );
    }

    #[test]
    fn four_eyes_proposals_wait_and_can_be_declined() {
        let now = at(2027, 1, 4);
        let mut app = application(now);
        app.propose_grant("officer-1", serde_json::json!({}), None, now)
            .unwrap();
        assert_eq!(app.status, ApplicationStatus::AwaitingConfirmation);
        assert_eq!(app.procedure.completed_at, Some(now));
        app.decline_grant("conditions missing".into()).unwrap();
        assert_eq!(app.status, ApplicationStatus::Assessing);
        assert_eq!(app.procedure.declined_grants.len(), 1);
        app.propose_grant("officer-1", serde_json::json!({}), None, now)
            .unwrap();
        app.grant(
            "officer-2",
            crate::domain::PermitId::new(),
            None,
            vec![],
            None,
            true,
            now,
        )
        .unwrap();
        assert_eq!(app.status, ApplicationStatus::Approved);
    }
}
