//! The privacy requirement a data permit sets for the studies run under it: which
//! differential-privacy levels a study may use, or whether it may run without formal DP.

use serde::{Deserialize, Serialize};

use super::study::DpLevel;

/// What the HDAB's decision requires of every study's privacy plan under a permit. Amendable
/// like the other terms. Permits issued before this term existed allow client- or record-level
/// DP, which is also the default of a new decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DpRequirement {
    /// Studies must use client-level DP (DP-FedAvg at the gateway).
    Client,
    /// Studies must use record-level DP (DP-SGD at each data holder).
    Record,
    /// Studies must use formal DP, at either level.
    #[default]
    ClientOrRecord,
    /// Studies may also run without formal DP (`"dp": {"level": "none"}`); they spend no
    /// epsilon, and the output check still applies before a model is released.
    NoneAllowed,
}

impl DpRequirement {
    /// The study DP levels this requirement allows, strongest first.
    pub fn permitted_levels(self) -> Vec<DpLevel> {
        match self {
            Self::Client => vec![DpLevel::Client],
            Self::Record => vec![DpLevel::Record],
            Self::ClientOrRecord => vec![DpLevel::Client, DpLevel::Record],
            Self::NoneAllowed => vec![DpLevel::Client, DpLevel::Record, DpLevel::NoFormalDp],
        }
    }

    /// Whether a study with this DP level may run under the permit.
    pub fn permits(self, level: DpLevel) -> bool {
        self.permitted_levels().contains(&level)
    }

    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Record => "record",
            Self::ClientOrRecord => "client_or_record",
            Self::NoneAllowed => "none_allowed",
        }
    }

    /// Parses the API's spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "client" => Some(Self::Client),
            "record" => Some(Self::Record),
            "client_or_record" => Some(Self::ClientOrRecord),
            "none_allowed" => Some(Self::NoneAllowed),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_requirement_permits_exactly_its_levels() {
        use DpLevel::*;
        let cases = [
            (DpRequirement::Client, [true, false, false]),
            (DpRequirement::Record, [false, true, false]),
            (DpRequirement::ClientOrRecord, [true, true, false]),
            (DpRequirement::NoneAllowed, [true, true, true]),
        ];
        for (req, expect) in cases {
            let got = [Client, Record, NoFormalDp].map(|l| req.permits(l));
            assert_eq!(got, expect, "{req:?}");
            let json = serde_json::to_value(req).unwrap();
            assert_eq!(DpRequirement::parse(json.as_str().unwrap()), Some(req));
        }
        assert_eq!(DpRequirement::default(), DpRequirement::ClientOrRecord);
        assert_eq!(DpRequirement::parse("none"), None);
    }
}
