//! What a data holder's records make of a study's features, as researchers may see it: the
//! warnings of the node's preflight (`ehds-node check`) by stable code, and per feature the
//! counts behind them. Only counts and flags travel, never a row or a value; every count
//! about one holder between 1 and the small-cell threshold minus 1 is withheld, by the node
//! before it sends the summary and again by the gateway under the HDAB's own threshold.
use serde::{Deserialize, Serialize};

use super::small_cell::SmallCellRule;

/// What a warning is about. The codes are stable: scripts, `ehds-node check --strict` and the
/// study view rely on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WarningCode {
    /// A binary or multi-class label takes one value at the site.
    SingleClass,
    /// A label class (survival: events or censored rows) below the small-cell threshold.
    SmallClass,
    /// A column has one value in every row that has one.
    ConstantFeature,
    /// More than a share of the records matching a feature did not count.
    IgnoredMatches,
    /// A quantity's unit was only display text, without a UCUM code.
    UnitDisplayText,
    /// Some subjects carry a split tag, others none: the node refuses to split.
    PartlyTagged,
    /// The split leaves the train, validation or test part without rows.
    EmptyPart,
}

impl WarningCode {
    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::SingleClass => "single_class",
            WarningCode::SmallClass => "small_class",
            WarningCode::ConstantFeature => "constant_feature",
            WarningCode::IgnoredMatches => "ignored_matches",
            WarningCode::UnitDisplayText => "unit_display_text",
            WarningCode::PartlyTagged => "partly_tagged",
            WarningCode::EmptyPart => "empty_part",
        }
    }
}

/// What decided a holder's train / test split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// Every subject's split tag in the holder's records.
    Tags,
    /// The node's own patient-level, stratified split, seeded by the study.
    Node,
}

/// One study column at one holder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FeatureQuality {
    /// The column, as the study's feature specification names it.
    pub name: String,
    /// Training rows without a value (imputed, or dropped where the feature has no imputation);
    /// `null` when withheld.
    pub missing: Option<u64>,
    /// Records matching the feature's codes; `null` when withheld.
    pub matched: Option<u64>,
    /// Of those, records that did not count (undated, outside the window, a refused unit...);
    /// `null` when withheld.
    pub ignored: Option<u64>,
    /// The preflight's warnings about this column.
    pub flags: Vec<WarningCode>,
}

/// One holder's data-quality summary.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DataQuality {
    /// What decided the holder's split (absent where it was refused).
    pub split: Option<DecidedBy>,
    /// The preflight's warnings about the label and the split.
    pub flags: Vec<WarningCode>,
    pub features: Vec<FeatureQuality>,
}

impl DataQuality {
    /// The summary with every count `rule` withholds replaced by `null`.
    pub fn shown(mut self, rule: SmallCellRule) -> Self {
        for f in &mut self.features {
            let cell = |c: Option<u64>| c.and_then(|c| rule.cell(c));
            f.missing = cell(f.missing);
            f.matched = cell(f.matched);
            f.ignored = cell(f.ignored);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_counts_are_withheld_and_codes_are_stable() {
        let q = DataQuality {
            split: Some(DecidedBy::Node),
            flags: vec![WarningCode::SmallClass],
            features: vec![FeatureQuality {
                name: "lactate".into(),
                missing: Some(3),
                matched: Some(120),
                ignored: Some(0),
                flags: vec![WarningCode::UnitDisplayText],
            }],
        }
        .shown(SmallCellRule::new(10));
        let f = &q.features[0];
        assert_eq!(
            (f.missing, f.matched, f.ignored),
            (None, Some(120), Some(0))
        );
        let json = serde_json::to_value(&q).unwrap();
        assert_eq!(json["split"], "node");
        assert_eq!(json["flags"][0], "small_class");
        assert_eq!(json["features"][0]["flags"][0], "unit_display_text");
        for code in [WarningCode::PartlyTagged, WarningCode::IgnoredMatches] {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
    }
}
