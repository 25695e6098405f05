//! Fees (Art. 62): the HDAB's published schedule, the estimate it gives the applicant before
//! the decision (Art. 62(5)), and what is invoiced. Amounts are integers in the currency's minor
//! unit (cents), so sums are exact.
//!
//! The schedule is transparent and the same for everyone (Art. 62(3)): a fixed fee for
//! assessing an application, one for issuing a permit, processing time at an hourly rate, the
//! data holders' preparation costs passed through at their estimate (Art. 62(2)), and the
//! reductions a member state sets for kinds of user (Art. 62(1), fourth subparagraph).

use serde::{Deserialize, Serialize};

use super::procedure::FeeLine;

/// A kind of health data user a member state may grant reduced fees (Art. 62(1)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum UserKind {
    /// A public sector body, or a Union institution, with a legal mandate in public health.
    PublicBody,
    UniversityResearcher,
    Microenterprise,
}

/// One reduction of the schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reduction {
    pub applies_to: UserKind,
    /// Percent off the HDAB's own fees (1-100); holders' costs are passed through unreduced.
    pub percent: u8,
}

/// The HDAB's fee schedule (configuration `fees`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeeSchedule {
    /// ISO 4217 code.
    pub currency: String,
    /// Assessing an application, charged even when it is withdrawn after the estimate (the
    /// cost already incurred, Art. 62(5)).
    pub assessment_minor: i64,
    /// Issuing the permit.
    pub permit_minor: i64,
    /// Processing (preparation, pseudonymisation, provision), per hour.
    pub hourly_minor: i64,
    #[serde(default)]
    pub reductions: Vec<Reduction>,
}

/// A data holder's estimate of its costs, passed through (Art. 62(2)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct HolderCost {
    pub data_holder: crate::domain::OrgId,
    pub amount_minor: i64,
}

/// Whether `code` has the form of an ISO 4217 currency code (three capital letters).
pub fn is_currency_code(code: &str) -> bool {
    code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase())
}

impl FeeSchedule {
    pub fn validate(&self) -> Result<(), String> {
        if !is_currency_code(&self.currency) {
            return Err(format!(
                "fees.currency {:?} is no ISO 4217 code",
                self.currency
            ));
        }
        if [self.assessment_minor, self.permit_minor, self.hourly_minor]
            .iter()
            .any(|a| *a < 0)
        {
            return Err("fees: amounts are not negative".into());
        }
        if let Some(r) = self
            .reductions
            .iter()
            .find(|r| r.percent == 0 || r.percent > 100)
        {
            return Err(format!(
                "fees: a reduction of {}% is out of 1-100",
                r.percent
            ));
        }
        Ok(())
    }

    /// The largest reduction that applies to `kinds`, in percent.
    pub fn reduction_for(&self, kinds: &[UserKind]) -> u8 {
        self.reductions
            .iter()
            .filter(|r| kinds.contains(&r.applies_to))
            .map(|r| r.percent)
            .max()
            .unwrap_or(0)
    }

    /// The estimate's lines for `hours` of processing (in quarter hours, rounded up) and the
    /// holders' costs, with the reduction for `kinds` on the HDAB's own part.
    pub fn estimate(
        &self,
        kinds: &[UserKind],
        quarter_hours: u32,
        holder_costs: &[HolderCost],
    ) -> Vec<FeeLine> {
        let processing = self.hourly_minor * i64::from(quarter_hours) / 4;
        let own = self.assessment_minor + self.permit_minor + processing;
        let mut lines = vec![
            FeeLine {
                description: "assessment of the application (Art. 62(1))".into(),
                amount_minor: self.assessment_minor,
                data_holder: None,
            },
            FeeLine {
                description: "issue of the data permit".into(),
                amount_minor: self.permit_minor,
                data_holder: None,
            },
            FeeLine {
                description: format!(
                    "processing, {}.{:02} h at {} {}/h",
                    quarter_hours / 4,
                    (quarter_hours % 4) * 25,
                    self.currency,
                    minor_text(self.hourly_minor)
                ),
                amount_minor: processing,
                data_holder: None,
            },
        ];
        let percent = self.reduction_for(kinds);
        if percent > 0 {
            // rounded in the applicant's favour
            let off = own * i64::from(percent) / 100;
            lines.push(FeeLine {
                description: format!("reduction of {percent}% on the HDAB's fees (Art. 62(1))"),
                amount_minor: -off,
                data_holder: None,
            });
        }
        for c in holder_costs {
            lines.push(FeeLine {
                description: format!(
                    "{}'s costs of compiling and preparing the data (Art. 62(2))",
                    c.data_holder.as_str()
                ),
                amount_minor: c.amount_minor,
                data_holder: Some(c.data_holder.clone()),
            });
        }
        lines
    }

    /// What an applicant who withdraws after the estimate owes: the assessment, reduced as
    /// the estimate was (Art. 62(5): only the costs already incurred).
    pub fn withdrawal_charge(&self, kinds: &[UserKind]) -> i64 {
        let percent = i64::from(self.reduction_for(kinds));
        self.assessment_minor - self.assessment_minor * percent / 100
    }
}

fn minor_text(amount: i64) -> String {
    format!("{}.{:02}", amount / 100, (amount % 100).abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule() -> FeeSchedule {
        FeeSchedule {
            currency: "EUR".into(),
            assessment_minor: 30_000,
            permit_minor: 20_000,
            hourly_minor: 9_000,
            reductions: vec![
                Reduction {
                    applies_to: UserKind::PublicBody,
                    percent: 50,
                },
                Reduction {
                    applies_to: UserKind::UniversityResearcher,
                    percent: 30,
                },
            ],
        }
    }

    #[test]
    fn an_estimate_adds_processing_reductions_and_holder_costs() {
        let s = schedule();
        let holders = [HolderCost {
            data_holder: crate::domain::OrgId::parse("hosp-1").unwrap(),
            amount_minor: 12_050,
        }];
        // 6.5 h = 26 quarter hours: 9000 * 26 / 4 = 58 500
        let lines = s.estimate(&[], 26, &holders);
        let amounts: Vec<i64> = lines.iter().map(|l| l.amount_minor).collect();
        assert_eq!(amounts, [30_000, 20_000, 58_500, 12_050]);
        assert!(lines[2].description.contains("6.50 h at EUR 90.00/h"));
        // a university researcher: 30% off 108 500 = 32 550; the holder's part unreduced
        let reduced = s.estimate(&[UserKind::UniversityResearcher], 26, &holders);
        let total: i64 = reduced.iter().map(|l| l.amount_minor).sum();
        assert_eq!(total, 108_500 - 32_550 + 12_050);
        // the largest reduction that applies
        assert_eq!(
            s.reduction_for(&[UserKind::UniversityResearcher, UserKind::PublicBody]),
            50
        );
        assert_eq!(s.withdrawal_charge(&[UserKind::PublicBody]), 15_000);
    }

    #[test]
    fn schedules_are_checked() {
        let mut s = schedule();
        assert!(s.validate().is_ok());
        s.reductions[0].percent = 0;
        assert!(s.validate().is_err());
        let mut s = schedule();
        s.currency = "eur".into();
        assert!(s.validate().is_err());
    }
}
