//! Domain types: every value that reaches the store has been parsed into one of these, so the
//! rules of the regulation (Art. 51 categories, Art. 53/54 purposes, Art. 68 durations, Art. 71
//! opt-outs) hold by construction.

pub mod action;
pub mod application;
pub mod audit;
pub mod audit_action;
pub mod audit_details;
pub mod audit_subject;
pub mod budget;
pub mod catalogue;
pub mod category;
pub mod check;
pub mod data_quality;
pub mod dp_requirement;
pub mod feature_spec;
pub mod ids;
pub mod optout;
pub mod permit;
pub mod purpose;
pub mod small_cell;
pub mod statistics;
pub mod study;
pub mod study_request;
pub mod time;

pub use application::{Application, ApplicationStatus, NewApplication};
pub use budget::{BudgetUnit, Delta, Epsilon, PrivacyBudget};
pub use category::DataCategory;
pub use dp_requirement::DpRequirement;
pub use ids::{
    ApplicationId, DatasetId, MemberState, OptOutId, OrgId, PermitId, RoundId, StatisticsRunId,
    StatisticsTaskId, StudyId, SubjectPseudonym, TaskId,
};
pub use permit::{Permit, PermitState, PermitTerms};
pub use purpose::Purpose;

pub use fl_engine::request::{Errors, FieldError};

/// The error of parsing one value: a stable code plus a human message.
pub type ParseResult<T> = Result<T, (&'static str, String)>;

/// Longest reason (decision, suspension, revocation, amendment, cancellation) accepted.
pub const MAX_REASON_CHARS: usize = 2_000;
/// Longest permit conditions accepted.
pub const MAX_CONDITIONS_CHARS: usize = 10_000;

/// Refuses free text longer than `max` characters (`too_long`, like every bounded field).
pub fn within_length(field: &str, value: &str, max: usize) -> Result<(), FieldError> {
    if value.chars().count() > max {
        return Err(FieldError::new(
            field,
            "too_long",
            format!("`{field}` is limited to {max} characters"),
        ));
    }
    Ok(())
}
