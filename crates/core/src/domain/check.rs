//! The governance check: may this permit cover this processing now? The HTTP endpoint and every
//! federated round call this one function, so they cannot disagree.

use serde::{Deserialize, Serialize};

use super::{time::Timestamp, DataCategory, Epsilon, OrgId, Permit, PermitState, Purpose};

#[derive(Debug, Clone)]
pub struct CheckRequest {
    pub purpose: Purpose,
    pub categories: Vec<DataCategory>,
    pub data_holders: Vec<OrgId>,
    /// Privacy budget the processing would spend, if any.
    pub epsilon: Option<Epsilon>,
}

/// One reason a check failed. Every failed condition is reported, not just the first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum DenyReason {
    PermitNotActive {
        state: String,
    },
    PermitNotYetValid {
        valid_from: chrono::DateTime<chrono::Utc>,
    },
    PermitExpired {
        expired_at: chrono::DateTime<chrono::Utc>,
    },
    PurposeNotPermitted {
        purpose: Purpose,
    },
    CategoryNotPermitted {
        category: DataCategory,
    },
    DataHolderNotPermitted {
        data_holder: OrgId,
    },
    BudgetExceeded {
        requested: f64,
        remaining: f64,
    },
}

/// The reason as a sentence, shown beside its code wherever a refusal lists its reasons.
impl std::fmt::Display for DenyReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::PermitNotActive { state } => write!(f, "the permit is {state}, not active"),
            Self::PermitNotYetValid { valid_from } => write!(
                f,
                "the permit is valid only from {}",
                valid_from.format("%Y-%m-%d %H:%M UTC")
            ),
            Self::PermitExpired { expired_at } => write!(
                f,
                "the permit expired on {}",
                expired_at.format("%Y-%m-%d %H:%M UTC")
            ),
            Self::PurposeNotPermitted { purpose } => write!(
                f,
                "the permit does not grant the purpose `{}`",
                purpose.as_str()
            ),
            Self::CategoryNotPermitted { category } => write!(
                f,
                "the permit does not grant the data category `{}`",
                category.as_str()
            ),
            Self::DataHolderNotPermitted { data_holder } => write!(
                f,
                "the permit does not name the data holder `{data_holder}`"
            ),
            Self::BudgetExceeded {
                requested,
                remaining,
            } => write!(
                f,
                "epsilon {requested} is asked for, but only {remaining} is left on the permit"
            ),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckOutcome {
    pub allowed: bool,
    pub reasons: Vec<DenyReason>,
    pub permit_state: String,
    pub epsilon_remaining: f64,
}

pub fn check(permit: &Permit, req: &CheckRequest, now: Timestamp) -> CheckOutcome {
    let mut reasons = Vec::new();
    let state = permit.state(now);
    match &state {
        PermitState::Active => {}
        PermitState::Expired { at } => reasons.push(DenyReason::PermitExpired { expired_at: *at }),
        s => reasons.push(DenyReason::PermitNotActive {
            state: s.name().into(),
        }),
    }
    if now < permit.record().valid_from {
        reasons.push(DenyReason::PermitNotYetValid {
            valid_from: permit.record().valid_from,
        });
    }
    let terms = permit.terms();
    if !terms.purposes.contains(&req.purpose) {
        reasons.push(DenyReason::PurposeNotPermitted {
            purpose: req.purpose,
        });
    }
    for c in &req.categories {
        if !terms.has_category(*c) {
            reasons.push(DenyReason::CategoryNotPermitted { category: *c });
        }
    }
    for h in &req.data_holders {
        if !terms.has_data_holder(h) {
            reasons.push(DenyReason::DataHolderNotPermitted {
                data_holder: h.clone(),
            });
        }
    }
    let remaining = permit.epsilon_remaining();
    if let Some(eps) = req.epsilon {
        if eps.value() > remaining {
            reasons.push(DenyReason::BudgetExceeded {
                requested: eps.value(),
                remaining,
            });
        }
    }
    CheckOutcome {
        allowed: reasons.is_empty(),
        reasons,
        permit_state: state.name().into(),
        epsilon_remaining: remaining,
    }
}
