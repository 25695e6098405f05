//! Art. 53(1) purposes and Art. 54 prohibited uses.

use serde::{Deserialize, Serialize};

use super::ParseResult;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// 53(1)(a): public interest in public and occupational health. Public bodies only.
    PublicOccupationalHealth,
    /// 53(1)(b): policy-making and regulatory activities. Public bodies only.
    PolicyRegulatory,
    /// 53(1)(c): official statistics. Public bodies only.
    OfficialStatistics,
    /// 53(1)(d): education or teaching in health or care sectors.
    EducationTeaching,
    /// 53(1)(e): scientific research, including product innovation and algorithm training.
    ScientificResearch,
    /// 53(1)(f): improvement of the delivery of care.
    CareImprovement,
}

/// Art. 54: uses no permit can cover. Named so that an application asking for one gets a precise
/// refusal rather than "unknown value".
pub const PROHIBITED_USES: [&str; 5] = [
    "detrimental_decision",
    "discriminatory_decision",
    "advertising_marketing",
    "harmful_product_development",
    "unethical_under_national_law",
];

impl Purpose {
    pub const ALL: [Purpose; 6] = [
        Purpose::PublicOccupationalHealth,
        Purpose::PolicyRegulatory,
        Purpose::OfficialStatistics,
        Purpose::EducationTeaching,
        Purpose::ScientificResearch,
        Purpose::CareImprovement,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::PublicOccupationalHealth => "public_occupational_health",
            Purpose::PolicyRegulatory => "policy_regulatory",
            Purpose::OfficialStatistics => "official_statistics",
            Purpose::EducationTeaching => "education_teaching",
            Purpose::ScientificResearch => "scientific_research",
            Purpose::CareImprovement => "care_improvement",
        }
    }

    /// The point of Art. 53(1) the purpose comes from.
    pub fn article_point(self) -> char {
        match self {
            Purpose::PublicOccupationalHealth => 'a',
            Purpose::PolicyRegulatory => 'b',
            Purpose::OfficialStatistics => 'c',
            Purpose::EducationTeaching => 'd',
            Purpose::ScientificResearch => 'e',
            Purpose::CareImprovement => 'f',
        }
    }

    pub fn parse(s: &str) -> ParseResult<Self> {
        if let Some(p) = Self::ALL.into_iter().find(|p| p.as_str() == s) {
            return Ok(p);
        }
        if PROHIBITED_USES.contains(&s) {
            return Err((
                "prohibited_use",
                format!("`{s}` is a prohibited use under Art. 54"),
            ));
        }
        Err((
            "unknown_purpose",
            format!("`{s}` is not an Art. 53(1) purpose"),
        ))
    }

    /// Art. 53(2): purposes (a)-(c) are reserved for public-sector bodies and those acting for them.
    pub fn reserved_for_public_bodies(self) -> bool {
        matches!(
            self,
            Purpose::PublicOccupationalHealth
                | Purpose::PolicyRegulatory
                | Purpose::OfficialStatistics
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_purpose_round_trips_through_its_identifier() {
        for p in Purpose::ALL {
            assert_eq!(Purpose::parse(p.as_str()), Ok(p));
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
    }

    #[test]
    fn prohibited_uses_get_their_own_code() {
        assert_eq!(
            Purpose::parse("advertising_marketing").unwrap_err().0,
            "prohibited_use"
        );
        assert_eq!(
            Purpose::parse("marketing").unwrap_err().0,
            "unknown_purpose"
        );
    }

    #[test]
    fn only_a_to_c_are_reserved() {
        let reserved: Vec<_> = Purpose::ALL
            .into_iter()
            .filter(|p| p.reserved_for_public_bodies())
            .collect();
        assert_eq!(reserved.len(), 3);
        assert!(!Purpose::ScientificResearch.reserved_for_public_bodies());
    }
}
