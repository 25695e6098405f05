//! Identifier newtypes. Organisation ids and subject pseudonyms are free text from callers, so
//! they are parsed once, here, and nothing downstream re-validates them.

use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::ParseResult;

macro_rules! uuid_id {
    ($name:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        #[serde(transparent)]
        #[cfg_attr(feature = "openapi", schema(value_type = String, format = Uuid))]
        pub struct $name(pub Uuid);

        impl $name {
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }
            pub fn parse(s: &str) -> ParseResult<Self> {
                Uuid::parse_str(s)
                    .map(Self)
                    .map_err(|_| ("invalid_id", format!("`{s}` is not a UUID")))
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

uuid_id!(
    ApplicationId,
    "Identifier of a data access application (Art. 67)."
);
uuid_id!(PermitId, "Identifier of a data permit (Art. 68).");
uuid_id!(OptOutId, "Identifier of an opt-out record (Art. 71).");
uuid_id!(
    StudyId,
    "Identifier of a federated study run under a permit."
);
uuid_id!(
    RoundId,
    "Identifier of one attempt at one round of a federated study."
);
uuid_id!(TaskId, "Identifier of one data holder's task in a round.");
uuid_id!(
    StatisticsRunId,
    "Identifier of one statistical query answered by the federation."
);
uuid_id!(
    StatisticsTaskId,
    "Identifier of one data holder's part of a statistics run."
);
uuid_id!(
    DatasetId,
    "Identifier of a dataset in the HDAB's catalogue (Art. 77)."
);

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')
}

/// An organisation: an applicant's organisation or a data holder. Matches the organisation claim
/// of the caller's token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct OrgId(String);

impl OrgId {
    pub fn parse(s: &str) -> ParseResult<Self> {
        if s.is_empty() || s.len() > 128 || !s.chars().all(is_token_char) {
            return Err((
                "invalid_organisation",
                format!("organisation id `{s}` must be 1-128 characters of [A-Za-z0-9._:-]"),
            ));
        }
        Ok(Self(s.to_owned()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OrgId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A data subject's pseudonym. The registry never accepts something that looks like a national
/// identifier (EHDS gotcha 8): pseudonyms must be long and must not be mostly digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SubjectPseudonym(String);

impl SubjectPseudonym {
    pub fn parse(s: &str) -> ParseResult<Self> {
        if s.len() < 16 || s.len() > 128 || !s.chars().all(is_token_char) {
            return Err((
                "invalid_pseudonym",
                "a subject pseudonym must be 16-128 characters of [A-Za-z0-9._:-]".into(),
            ));
        }
        let digits = s.chars().filter(|c| c.is_ascii_digit()).count();
        let letters = s.chars().filter(|c| c.is_ascii_alphabetic()).count();
        if letters < 4 || digits * 4 > s.len() * 3 {
            return Err((
                "identifier_not_pseudonymous",
                "the subject value looks like a direct identifier; send a pseudonym".into(),
            ));
        }
        Ok(Self(s.to_owned()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// EU Member States plus the EEA states the Regulation extends to (ISO 3166-1 alpha-2; Greece as
/// `GR`, the ISO code, rather than the EU's `EL`).
const MEMBER_STATES: [&str; 30] = [
    "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU", "IE", "IT",
    "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK", "IS", "LI", "NO",
];

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct MemberState(String);

impl MemberState {
    pub fn parse(s: &str) -> ParseResult<Self> {
        let code = if s == "EL" { "GR" } else { s };
        if MEMBER_STATES.contains(&code) {
            Ok(Self(code.to_owned()))
        } else {
            Err((
                "unknown_member_state",
                format!("`{s}` is not an EU/EEA member state code"),
            ))
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn national_identifiers_are_refused_as_pseudonyms() {
        for bad in [
            "1234567890123456",
            "850101-1234-5678-90",
            "short",
            "has space in it 12345",
        ] {
            assert!(SubjectPseudonym::parse(bad).is_err(), "{bad}");
        }
        assert!(SubjectPseudonym::parse("psn-7f3a9c2e-cleveland-0001").is_ok());
    }

    #[test]
    fn member_states_accept_eu_and_eea_codes_only() {
        assert_eq!(MemberState::parse("EL").unwrap().as_str(), "GR");
        assert!(MemberState::parse("NO").is_ok());
        assert!(MemberState::parse("US").is_err());
        assert!(MemberState::parse("de").is_err());
    }

    #[test]
    fn organisation_ids_are_tokens() {
        assert!(OrgId::parse("hospital-cleveland").is_ok());
        assert!(OrgId::parse("").is_err());
        assert!(OrgId::parse("a b").is_err());
    }
}
