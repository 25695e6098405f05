//! Whether the permit a study claims covers it: the governance check every round runs, the DP
//! level and secure aggregation the permit demands, and the budget the whole plan spends.

use serde::Serialize;

use crate::domain::{
    check::{check, CheckRequest, DenyReason},
    dp_requirement::DpRequirement,
    study::{DpLevel, StudySpec},
    time::Timestamp,
    BudgetUnit, Permit,
};

/// A reason the permit does not cover a submitted study.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum StudyRefusal {
    Permit(DenyReason),
    Study(StudyReason),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum StudyReason {
    /// The permit's budget protects whole data holders; only client-level DP does that.
    DpLevelWeakerThanPermitUnit { permit_unit: BudgetUnit },
    /// The permit's `dp_requirement` does not allow the study's DP level.
    DpLevelNotPermitted {
        level: DpLevel,
        dp_requirement: DpRequirement,
        permitted_levels: Vec<DpLevel>,
    },
    /// The permit requires secure aggregation, which the study does not use.
    SecureAggregationRequired,
    /// The permit was issued for an Art. 69 data request: it is answered by statistics only.
    PermitForStatisticsOnly,
    /// `remaining`: the permit's unspent budget less what its other live studies reserved.
    BudgetTooSmallForOneRound {
        epsilon_one_round: f64,
        remaining: f64,
    },
    PlannedRoundsExceedBudget {
        planned_epsilon: f64,
        remaining: f64,
        affordable_rounds: u64,
    },
}

/// The reason as a sentence, shown beside its code wherever a refusal lists its reasons.
impl std::fmt::Display for StudyRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Permit(reason) => reason.fmt(f),
            Self::Study(reason) => reason.fmt(f),
        }
    }
}

impl std::fmt::Display for StudyReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::DpLevelWeakerThanPermitUnit { permit_unit } => write!(
                f,
                "the permit's budget is per {}: only client-level DP protects a whole data holder",
                permit_unit.as_str().replace('_', " ")
            ),
            Self::DpLevelNotPermitted {
                level,
                dp_requirement,
                permitted_levels,
            } => write!(
                f,
                "the permit's privacy requirement `{}` does not allow DP level `{}`; it allows {}",
                dp_requirement.as_str(),
                level.as_str(),
                permitted_levels
                    .iter()
                    .map(|l| format!("`{}`", l.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Self::SecureAggregationRequired => {
                f.write_str("the permit requires secure aggregation, which the study does not use")
            }
            Self::PermitForStatisticsOnly => f.write_str(
                "the permit answers an Art. 69 data request: only its declared statistics run under it, no study",
            ),
            Self::BudgetTooSmallForOneRound {
                epsilon_one_round,
                remaining,
            } => write!(
                f,
                "one round spends epsilon {epsilon_one_round:.4}, more than the {remaining:.4} \
                 left on the permit after what its other live studies reserved"
            ),
            Self::PlannedRoundsExceedBudget {
                planned_epsilon,
                remaining,
                affordable_rounds,
            } => write!(
                f,
                "the planned rounds spend epsilon {planned_epsilon:.4}, more than the \
                 {remaining:.4} left on the permit after what its other live studies reserved; \
                 {affordable_rounds} round(s) would fit"
            ),
        }
    }
}

/// Every reason `permit` does not cover `spec` now: the round-time governance check, the DP
/// level the permit's budget unit demands, and the budget the whole plan spends. `reserved` is
/// what the permit's other live studies have planned but not yet spent: their plans were
/// accepted first, so a new study may not count on that budget.
pub fn assess(
    spec: &StudySpec,
    permit: &Permit,
    reserved: f64,
    now: Timestamp,
) -> anyhow::Result<Vec<StudyRefusal>> {
    let outcome = check(
        permit,
        &CheckRequest {
            purpose: spec.purpose,
            categories: spec.categories.clone(),
            data_holders: spec.data_holders.clone(),
            epsilon: None,
        },
        now,
    );
    let mut reasons: Vec<StudyRefusal> = outcome
        .reasons
        .into_iter()
        .map(StudyRefusal::Permit)
        .collect();
    let requirement = permit.terms().dp_requirement;
    if !requirement.permits(spec.dp.level) {
        reasons.push(StudyRefusal::Study(StudyReason::DpLevelNotPermitted {
            level: spec.dp.level,
            dp_requirement: requirement,
            permitted_levels: requirement.permitted_levels(),
        }));
    }
    if permit.terms().require_secure_aggregation && spec.secure_aggregation.is_none() {
        reasons.push(StudyRefusal::Study(StudyReason::SecureAggregationRequired));
    }
    if permit.terms().statistics_only {
        reasons.push(StudyRefusal::Study(StudyReason::PermitForStatisticsOnly));
    }
    // a data-holder budget is spent only by formal DP, and only client-level DP protects a
    // whole holder; a study without formal DP spends none of it
    let unit = permit.terms().privacy_budget.unit;
    if unit == BudgetUnit::DataHolder && spec.dp.level == DpLevel::Record {
        reasons.push(StudyRefusal::Study(
            StudyReason::DpLevelWeakerThanPermitUnit { permit_unit: unit },
        ));
    }
    let remaining = (permit.epsilon_remaining() - reserved).max(0.0);
    let one = spec.dp.epsilon_for_rounds(1)?;
    let planned = spec.dp.epsilon_for_rounds(spec.rounds)?;
    if one > remaining {
        reasons.push(StudyRefusal::Study(
            StudyReason::BudgetTooSmallForOneRound {
                epsilon_one_round: one,
                remaining,
            },
        ));
    } else if planned > remaining {
        // epsilon grows with the rounds, so the affordable count is found by bisection
        let (mut lo, mut hi) = (1, spec.rounds);
        while lo + 1 < hi {
            let mid = (lo + hi) / 2;
            if spec.dp.epsilon_for_rounds(mid)? <= remaining {
                lo = mid
            } else {
                hi = mid
            }
        }
        reasons.push(StudyRefusal::Study(
            StudyReason::PlannedRoundsExceedBudget {
                planned_epsilon: planned,
                remaining,
                affordable_rounds: lo,
            },
        ));
    }
    Ok(reasons)
}
