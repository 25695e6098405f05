//! Data permits (Art. 68) and their lifecycle. The state is private: the transition methods are
//! the only way to change it, and each refuses a transition from the wrong state.

use chrono::Months;
use serde::{Deserialize, Serialize};

use super::{
    application::{
        validate_optout_exception, validate_public_body_purposes, NewApplication, OptOutException,
        ResearchFlag, MAX_PERMIT_MONTHS,
    },
    time::Timestamp,
    ApplicationId, DataCategory, DpRequirement, Epsilon, Errors, FieldError, MemberState, OrgId,
    PermitId, PrivacyBudget, Purpose,
};

/// Art. 68(13): an extension must be requested at least one month before expiry.
pub const EXTENSION_NOTICE_MONTHS: u32 = 1;

/// A granted value and when it entered the permit: data added by an amendment is subject to the
/// opt-outs in force at the amendment, not at issue (Art. 71(3)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Grant<T> {
    pub value: T,
    pub added_at: chrono::DateTime<chrono::Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PermitTerms {
    pub purposes: Vec<Purpose>,
    pub research_flags: Vec<ResearchFlag>,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub categories: Vec<Grant<DataCategory>>,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub data_holders: Vec<Grant<OrgId>>,
    pub member_states: Vec<MemberState>,
    pub privacy_budget: PrivacyBudget,
    /// Set when the HDAB granted the Art. 71(4) exception; opt-outs then do not exclude subjects.
    pub optout_exception: Option<OptOutException>,
    pub conditions: Option<String>,
    /// Which privacy plans studies under the permit may use; permits issued before this term
    /// existed read as `client_or_record`.
    #[serde(default)]
    pub dp_requirement: DpRequirement,
    /// Studies under the permit must sum the holders' updates under secure aggregation, so
    /// that the gateway never sees one (docs/secure-aggregation.md); absent on older permits.
    #[serde(default)]
    pub require_secure_aggregation: bool,
    /// Issued for an Art. 69 data request: only statistics are answered under it, never a
    /// study (absent on older permits, and written only when set, so that the terms of other
    /// permits serialise as before).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub statistics_only: bool,
}

impl PermitTerms {
    pub fn has_category(&self, c: DataCategory) -> bool {
        self.categories.iter().any(|g| g.value == c)
    }
    pub fn has_data_holder(&self, h: &OrgId) -> bool {
        self.data_holders.iter().any(|g| &g.value == h)
    }
    pub fn data_holder_ids(&self) -> impl Iterator<Item = &OrgId> {
        self.data_holders.iter().map(|g| &g.value)
    }
}

/// The lifecycle. `Expired` is also derived from time: an active or suspended permit whose
/// expiry has passed is expired whether or not anyone recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PermitState {
    Active,
    /// Processing halted while an Art. 63 non-compliance procedure runs.
    Suspended {
        since: chrono::DateTime<chrono::Utc>,
        reason: String,
    },
    Revoked {
        at: chrono::DateTime<chrono::Utc>,
        reason: String,
    },
    Expired {
        at: chrono::DateTime<chrono::Utc>,
    },
}

impl PermitState {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Suspended { .. } => "suspended",
            Self::Revoked { .. } => "revoked",
            Self::Expired { .. } => "expired",
        }
    }
}

/// A refused lifecycle transition: maps to 409 with the current state.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct TransitionError {
    pub code: &'static str,
    pub current_state: &'static str,
    pub message: String,
}

impl TransitionError {
    fn from_state(action: &str, state: &PermitState) -> Self {
        Self {
            code: "invalid_transition",
            current_state: state.name(),
            message: format!("cannot {action} a permit that is {}", state.name()),
        }
    }
}

/// Why an amendment or extension was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum ChangeError {
    Transition(TransitionError),
    Invalid(Vec<FieldError>),
}

impl From<TransitionError> for ChangeError {
    fn from(e: TransitionError) -> Self {
        Self::Transition(e)
    }
}

/// Plain data for the store; `Permit::restore` is the only way back.
#[derive(Debug, Clone)]
pub struct PermitRecord {
    pub id: PermitId,
    pub application_id: ApplicationId,
    pub organisation: OrgId,
    pub principal_investigator: String,
    pub public_body: bool,
    pub issued_at: chrono::DateTime<chrono::Utc>,
    pub valid_from: chrono::DateTime<chrono::Utc>,
    pub expires_at: chrono::DateTime<chrono::Utc>,
    pub extended_at: Option<chrono::DateTime<chrono::Utc>>,
    pub state: PermitState,
    pub terms: PermitTerms,
    pub terms_version: i64,
    pub row_version: i64,
    pub epsilon_spent: f64,
}

/// A permit; cloning it is cheap (its record is shared until one of the clones changes), so
/// that a permit naming thousands of data holders can be kept and handed out per request.
#[derive(Debug, Clone)]
pub struct Permit(std::sync::Arc<PermitRecord>);

/// A requested change of terms. Absent fields keep their current value.
#[derive(Debug, Clone, Default)]
pub struct Amendment {
    pub purposes: Option<Vec<Purpose>>,
    pub categories: Option<Vec<DataCategory>>,
    pub data_holders: Option<Vec<OrgId>>,
    pub member_states: Option<Vec<MemberState>>,
    pub epsilon: Option<Epsilon>,
    pub conditions: Option<String>,
    pub dp_requirement: Option<DpRequirement>,
    pub require_secure_aggregation: Option<bool>,
}

fn regrant<T: PartialEq + Clone>(old: &[Grant<T>], new: Vec<T>, now: Timestamp) -> Vec<Grant<T>> {
    new.into_iter()
        .map(|value| match old.iter().find(|g| g.value == value) {
            Some(g) => g.clone(),
            None => Grant {
                value,
                added_at: now,
            },
        })
        .collect()
}

impl Permit {
    /// Issues the permit an approved application asked for.
    pub fn issue(
        app_id: ApplicationId,
        applicant: &str,
        req: &NewApplication,
        grant_exception: bool,
        conditions: Option<String>,
        dp_requirement: DpRequirement,
        now: Timestamp,
    ) -> Permit {
        let grant = |v| Grant {
            value: v,
            added_at: now,
        };
        Permit(std::sync::Arc::new(PermitRecord {
            id: PermitId::new(),
            application_id: app_id,
            organisation: req.organisation.clone(),
            principal_investigator: applicant.to_owned(),
            public_body: req.public_body,
            issued_at: now,
            valid_from: req.period_start.max(now),
            expires_at: req.period_end,
            extended_at: None,
            state: PermitState::Active,
            terms: PermitTerms {
                purposes: req.purposes.clone(),
                research_flags: req.research_flags.clone(),
                categories: req.categories.iter().copied().map(grant).collect(),
                data_holders: req
                    .data_holders
                    .iter()
                    .cloned()
                    .map(|h| Grant {
                        value: h,
                        added_at: now,
                    })
                    .collect(),
                member_states: req.member_states.clone(),
                privacy_budget: req.privacy_budget,
                optout_exception: if grant_exception {
                    req.optout_exception.clone()
                } else {
                    None
                },
                conditions,
                dp_requirement,
                require_secure_aggregation: false,
                statistics_only: req.kind == super::application::ApplicationKind::DataRequest,
            },
            terms_version: 1,
            row_version: 1,
            epsilon_spent: 0.0,
        }))
    }

    /// The permit with the decision's secure-aggregation term.
    pub fn requiring_secure_aggregation(mut self, required: bool) -> Permit {
        self.record_mut().terms.require_secure_aggregation = required;
        self
    }

    pub fn restore(record: PermitRecord) -> Permit {
        Permit(std::sync::Arc::new(record))
    }

    /// The record to change: this permit's own copy (a clone made before keeps the old one).
    fn record_mut(&mut self) -> &mut PermitRecord {
        std::sync::Arc::make_mut(&mut self.0)
    }

    pub fn record(&self) -> &PermitRecord {
        &self.0
    }

    pub fn id(&self) -> PermitId {
        self.0.id
    }
    pub fn terms(&self) -> &PermitTerms {
        &self.0.terms
    }
    pub fn organisation(&self) -> &OrgId {
        &self.0.organisation
    }
    pub fn row_version(&self) -> i64 {
        self.0.row_version
    }

    /// The state at `now`: expiry is computed from time, so an expired permit is never valid.
    pub fn state(&self, now: Timestamp) -> PermitState {
        match &self.0.state {
            PermitState::Active | PermitState::Suspended { .. } if now >= self.0.expires_at => {
                PermitState::Expired {
                    at: self.0.expires_at,
                }
            }
            s => s.clone(),
        }
    }

    /// The state as stored, which may lag behind `state(now)` until the expiry sweep records it.
    pub fn stored_state(&self) -> &PermitState {
        &self.0.state
    }

    pub fn epsilon_remaining(&self) -> f64 {
        (self.0.terms.privacy_budget.epsilon.value() - self.0.epsilon_spent).max(0.0)
    }

    fn bump(&mut self) {
        self.record_mut().row_version += 1;
    }

    pub fn suspend(&mut self, reason: String, now: Timestamp) -> Result<(), TransitionError> {
        match self.state(now) {
            PermitState::Active => {
                self.record_mut().state = PermitState::Suspended { since: now, reason };
                self.bump();
                Ok(())
            }
            s => Err(TransitionError::from_state("suspend", &s)),
        }
    }

    pub fn reinstate(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        match self.state(now) {
            PermitState::Suspended { .. } => {
                self.record_mut().state = PermitState::Active;
                self.bump();
                Ok(())
            }
            s => Err(TransitionError::from_state("reinstate", &s)),
        }
    }

    pub fn revoke(&mut self, reason: String, now: Timestamp) -> Result<(), TransitionError> {
        match self.state(now) {
            PermitState::Active | PermitState::Suspended { .. } => {
                self.record_mut().state = PermitState::Revoked { at: now, reason };
                self.bump();
                Ok(())
            }
            s => Err(TransitionError::from_state("revoke", &s)),
        }
    }

    /// Spends `epsilon` of the privacy budget for processing now. Refused unless the permit is
    /// active and the budget covers it: the budget is never exceeded, not even by one round.
    pub fn spend_epsilon(&mut self, epsilon: f64, now: Timestamp) -> Result<(), TransitionError> {
        let state = self.state(now);
        if state != PermitState::Active {
            return Err(TransitionError::from_state("spend the budget of", &state));
        }
        let total = self.0.terms.privacy_budget.epsilon.value();
        // A plan that fits exactly is paid for in per-round pieces whose float sum may differ
        // from the total in the last bits; that is the only slack allowed.
        if !(epsilon.is_finite() && epsilon >= 0.0)
            || self.0.epsilon_spent + epsilon > total * (1.0 + 1e-12)
        {
            return Err(TransitionError {
                code: "budget_exceeded",
                current_state: state.name(),
                message: format!(
                    "spending {epsilon} would exceed the budget ({} of {total} spent)",
                    self.0.epsilon_spent
                ),
            });
        }
        self.record_mut().epsilon_spent += epsilon;
        self.bump();
        Ok(())
    }

    /// Records an expiry that time has already made effective. Returns false if there is nothing
    /// to record.
    pub fn record_expiry(&mut self, now: Timestamp) -> bool {
        let effective = self.state(now);
        if matches!(effective, PermitState::Expired { .. }) && effective != self.0.state {
            self.record_mut().state = effective;
            self.bump();
            true
        } else {
            false
        }
    }

    /// Art. 68(13): one extension, of up to ten years, requested at least a month before expiry.
    pub fn extend(&mut self, new_expires_at: Timestamp, now: Timestamp) -> Result<(), ChangeError> {
        let state = self.state(now);
        if state != PermitState::Active {
            return Err(TransitionError::from_state("extend", &state).into());
        }
        if self.0.extended_at.is_some() {
            return Err(TransitionError {
                code: "already_extended",
                current_state: state.name(),
                message: "a permit can be extended only once (Art. 68(13))".into(),
            }
            .into());
        }
        let deadline = self
            .0
            .expires_at
            .checked_sub_months(Months::new(EXTENSION_NOTICE_MONTHS));
        if deadline.is_none_or(|d| now > d) {
            return Err(TransitionError {
                code: "extension_too_late",
                current_state: state.name(),
                message:
                    "an extension must be requested at least one month before expiry (Art. 68(13))"
                        .into(),
            }
            .into());
        }
        let mut e = Errors::default();
        if new_expires_at <= self.0.expires_at {
            e.push(
                "expires_at",
                "invalid_extension",
                "the new expiry must be later than the current one",
            );
        } else if self
            .0
            .expires_at
            .checked_add_months(Months::new(MAX_PERMIT_MONTHS))
            .is_none_or(|m| new_expires_at > m)
        {
            e.push(
                "expires_at",
                "duration_exceeds_maximum",
                "an extension adds at most ten years (Art. 68(13))",
            );
        }
        if !e.0.is_empty() {
            return Err(ChangeError::Invalid(e.0));
        }
        self.record_mut().expires_at = new_expires_at;
        self.record_mut().extended_at = Some(now);
        self.bump();
        Ok(())
    }

    /// Applies an amendment as a new version of the terms; the caller keeps the old version.
    pub fn amend(&mut self, change: Amendment, now: Timestamp) -> Result<(), ChangeError> {
        let state = self.state(now);
        if state != PermitState::Active {
            return Err(TransitionError::from_state("amend", &state).into());
        }
        let mut e = Errors::default();
        let mut terms = self.0.terms.clone();
        if let Some(p) = change.purposes {
            if p.is_empty() {
                e.push(
                    "purposes",
                    "empty_list",
                    "a permit needs at least one purpose",
                );
            }
            validate_public_body_purposes(&mut e, "purposes", &p, self.0.public_body);
            terms.purposes = p;
        }
        if let Some(c) = change.categories {
            if c.is_empty() {
                e.push(
                    "categories",
                    "empty_list",
                    "a permit needs at least one category",
                );
            }
            terms.categories = regrant(&terms.categories, c, now);
        }
        if let Some(h) = change.data_holders {
            if h.is_empty() {
                e.push(
                    "data_holders",
                    "empty_list",
                    "a permit needs at least one data holder",
                );
            }
            terms.data_holders = regrant(&terms.data_holders, h, now);
        }
        if let Some(m) = change.member_states {
            if m.is_empty() {
                e.push(
                    "member_states",
                    "empty_list",
                    "a permit needs at least one member state",
                );
            }
            terms.member_states = m;
        }
        if let Some(eps) = change.epsilon {
            if eps.value() < self.0.epsilon_spent {
                e.push(
                    "epsilon",
                    "budget_below_spent",
                    format!(
                        "epsilon {} is below what was already spent ({})",
                        eps.value(),
                        self.0.epsilon_spent
                    ),
                );
            }
            terms.privacy_budget.epsilon = eps;
        }
        if let Some(c) = change.conditions {
            terms.conditions = Some(c);
        }
        if let Some(r) = change.dp_requirement {
            terms.dp_requirement = r;
        }
        if let Some(r) = change.require_secure_aggregation {
            terms.require_secure_aggregation = r;
        }
        if let Some(ex) = &terms.optout_exception {
            validate_optout_exception(
                &mut e,
                ex,
                self.0.public_body,
                &terms.purposes,
                &terms.research_flags,
            );
        }
        if !e.0.is_empty() {
            return Err(ChangeError::Invalid(e.0));
        }
        if terms == self.0.terms {
            return Err(ChangeError::Invalid(vec![FieldError::new(
                "",
                "empty_amendment",
                "the amendment changes nothing",
            )]));
        }
        self.record_mut().terms = terms;
        self.record_mut().terms_version += 1;
        self.bump();
        Ok(())
    }

    /// The time whose opt-outs bind the given data: the latest time any of the requested
    /// categories, or the data holder, entered the permit (Art. 71(3)).
    pub fn optout_reference_time(&self, holder: &OrgId, categories: &[DataCategory]) -> Timestamp {
        let terms = &self.0.terms;
        let holder_time = terms
            .data_holders
            .iter()
            .filter(|g| &g.value == holder)
            .map(|g| g.added_at);
        let cats = terms
            .categories
            .iter()
            .filter(|g| categories.is_empty() || categories.contains(&g.value));
        holder_time
            .chain(cats.map(|g| g.added_at))
            .max()
            .unwrap_or(self.0.issued_at)
    }
}

/// A permit for tests: one organisation, one holder, eight record-level epsilon for a year.
#[cfg(test)]
pub(crate) fn sample_permit(now: Timestamp) -> Permit {
    sample_permit_for(now, &["hosp-1"], 8.0, crate::domain::BudgetUnit::Record)
}

/// A permit for tests from uni-a for scientific research on EHR data over `holders`, with
/// `epsilon` counted per `unit`, valid for a year from `now`.
#[cfg(test)]
pub(crate) fn sample_permit_for(
    now: Timestamp,
    holders: &[&str],
    epsilon: f64,
    unit: crate::domain::BudgetUnit,
) -> Permit {
    let req = NewApplication {
        title: "t".into(),
        organisation: OrgId::parse("uni-a").unwrap(),
        public_body: false,
        user_kinds: vec![],
        purposes: vec![Purpose::ScientificResearch],
        research_flags: vec![],
        categories: vec![DataCategory::EhrData],
        data_holders: holders.iter().map(|h| OrgId::parse(h).unwrap()).collect(),
        member_states: vec![MemberState::parse("DE").unwrap()],
        period_start: now,
        period_end: now + chrono::Duration::days(365),
        privacy_budget: PrivacyBudget {
            epsilon: Epsilon::parse(epsilon).unwrap(),
            delta: crate::domain::Delta::parse(1e-5).unwrap(),
            unit,
        },
        justification: "j".into(),
        optout_exception: None,
        kind: Default::default(),
        statistics: None,
        datasets: vec![],
    };
    Permit::issue(
        ApplicationId::new(),
        "alice",
        &req,
        false,
        None,
        DpRequirement::default(),
        now,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time;

    #[test]
    fn lifecycle_transitions_follow_the_state_machine() {
        let now = time::now();
        let mut p = sample_permit(now);
        assert!(p.reinstate(now).is_err());
        p.suspend("audit finding".into(), now).unwrap();
        assert_eq!(
            p.suspend("again".into(), now).unwrap_err().current_state,
            "suspended"
        );
        p.reinstate(now).unwrap();
        p.revoke("breach".into(), now).unwrap();
        let err = p.reinstate(now).unwrap_err();
        assert_eq!(
            (err.code, err.current_state),
            ("invalid_transition", "revoked")
        );
        assert_eq!(p.row_version(), 4);
    }

    #[test]
    fn expiry_is_derived_from_time() {
        let now = time::now();
        let mut p = sample_permit(now);
        let later = now + chrono::Duration::days(366);
        assert_eq!(p.state(later).name(), "expired");
        assert!(p.suspend("x".into(), later).is_err());
        assert!(p.record_expiry(later));
        assert!(!p.record_expiry(later));
    }

    #[test]
    fn extension_is_allowed_once_and_only_early_enough() {
        let now = time::now();
        let mut p = sample_permit(now);
        let expiry = p.record().expires_at;
        let late = expiry - chrono::Duration::days(10);
        assert!(matches!(
            p.clone().extend(expiry + chrono::Duration::days(30), late),
            Err(ChangeError::Transition(TransitionError {
                code: "extension_too_late",
                ..
            }))
        ));
        let too_long = expiry.checked_add_months(Months::new(121)).unwrap();
        assert!(matches!(
            p.clone().extend(too_long, now),
            Err(ChangeError::Invalid(_))
        ));
        p.extend(expiry + chrono::Duration::days(30), now).unwrap();
        assert!(matches!(
            p.extend(expiry + chrono::Duration::days(60), now),
            Err(ChangeError::Transition(TransitionError {
                code: "already_extended",
                ..
            }))
        ));
    }

    #[test]
    fn amendments_version_terms_and_stamp_new_data() {
        let now = time::now();
        let mut p = sample_permit(now);
        let later = now + chrono::Duration::days(3);
        p.amend(
            Amendment {
                categories: Some(vec![DataCategory::EhrData, DataCategory::GeneticGenomic]),
                ..Default::default()
            },
            later,
        )
        .unwrap();
        assert_eq!(p.record().terms_version, 2);
        let holder = OrgId::parse("hosp-1").unwrap();
        assert_eq!(
            p.optout_reference_time(&holder, &[DataCategory::EhrData]),
            now
        );
        assert_eq!(
            p.optout_reference_time(&holder, &[DataCategory::GeneticGenomic]),
            later
        );
        let reserved = Amendment {
            purposes: Some(vec![Purpose::OfficialStatistics]),
            ..Default::default()
        };
        assert!(matches!(
            p.amend(reserved, later),
            Err(ChangeError::Invalid(_))
        ));
    }
}
