//! The Art. 78 data quality and utility label as a catalogue field: what the holder states for
//! each element of Art. 78(3), with the documentation the HDAB can check it against (Art.
//! 60(4)). Distinct from `data_quality::DataQuality`, which is what a node's preflight measured
//! for one study's features; the label describes the whole dataset, as its holder declares it.

use serde::{Deserialize, Serialize};

use super::{check_text, Iri};
use crate::domain::Errors;

/// The elements of Art. 78(3), points (a) to (f).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum LabelElement {
    /// (a) metadata, support documentation, data dictionary, formats and standards, source, model.
    Documentation,
    /// (b) completeness, uniqueness, accuracy, validity, timeliness and consistency.
    TechnicalQuality,
    /// (c) maturity of the data quality management processes, review, audit, bias examination.
    QualityManagement,
    /// (d) period, population coverage, representativity, average time a person appears.
    Coverage,
    /// (e) time from collection to the dataset, and to provision after a permit.
    AccessAndProvision,
    /// (f) merging and adding data, links with other datasets.
    Modifications,
}

impl LabelElement {
    pub const ALL: [LabelElement; 6] = [
        Self::Documentation,
        Self::TechnicalQuality,
        Self::QualityManagement,
        Self::Coverage,
        Self::AccessAndProvision,
        Self::Modifications,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Documentation => "documentation",
            Self::TechnicalQuality => "technical_quality",
            Self::QualityManagement => "quality_management",
            Self::Coverage => "coverage",
            Self::AccessAndProvision => "access_and_provision",
            Self::Modifications => "modifications",
        }
    }

    /// The point of Art. 78(3) the element comes from.
    pub fn article_point(self) -> char {
        match self {
            Self::Documentation => 'a',
            Self::TechnicalQuality => 'b',
            Self::QualityManagement => 'c',
            Self::Coverage => 'd',
            Self::AccessAndProvision => 'e',
            Self::Modifications => 'f',
        }
    }
}

/// What the holder submits for one element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LabelStatementForm {
    pub statement: String,
    /// Where the documentation behind the statement is (an `http(s)` URL).
    pub evidence: Option<String>,
}

/// The label as submitted: the elements that apply (Art. 78(3): "where applicable").
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct QualityLabelForm {
    pub documentation: Option<LabelStatementForm>,
    pub technical_quality: Option<LabelStatementForm>,
    pub quality_management: Option<LabelStatementForm>,
    pub coverage: Option<LabelStatementForm>,
    pub access_and_provision: Option<LabelStatementForm>,
    pub modifications: Option<LabelStatementForm>,
}

impl QualityLabelForm {
    fn elements(&self) -> [(LabelElement, Option<&LabelStatementForm>); 6] {
        [
            (LabelElement::Documentation, self.documentation.as_ref()),
            (
                LabelElement::TechnicalQuality,
                self.technical_quality.as_ref(),
            ),
            (
                LabelElement::QualityManagement,
                self.quality_management.as_ref(),
            ),
            (LabelElement::Coverage, self.coverage.as_ref()),
            (
                LabelElement::AccessAndProvision,
                self.access_and_provision.as_ref(),
            ),
            (LabelElement::Modifications, self.modifications.as_ref()),
        ]
    }
}

/// One element of a parsed label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LabelStatement {
    pub element: LabelElement,
    pub statement: String,
    pub evidence: Option<Iri>,
}

/// A parsed label: at least one element, each stated in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct QualityLabel(Vec<LabelStatement>);

/// Where the label's errors point: the annotations of `dqv:hasQualityAnnotation`.
pub const LABEL_PATH: &str = "dqv:hasQualityAnnotation";

/// Longest statement of one element.
pub const MAX_STATEMENT_CHARS: usize = 4_000;

impl QualityLabel {
    pub fn statements(&self) -> &[LabelStatement] {
        &self.0
    }

    /// Parses the label, recording every problem in `e`.
    pub fn parse(e: &mut Errors, form: &QualityLabelForm) -> Option<Self> {
        let before = e.0.len();
        let mut statements = Vec::new();
        for (element, given) in form.elements() {
            let Some(given) = given else { continue };
            let path = format!("{LABEL_PATH}[{}]", element.as_str());
            check_text(
                e,
                &format!("{path}/oa:hasBody"),
                &given.statement,
                MAX_STATEMENT_CHARS,
            );
            let evidence = given
                .evidence
                .as_deref()
                .and_then(|u| e.take(format!("{path}/rdfs:seeAlso"), Iri::parse_web(u)));
            statements.push(LabelStatement {
                element,
                statement: given.statement.trim().to_owned(),
                evidence,
            });
        }
        if statements.is_empty() {
            e.push(
                LABEL_PATH,
                "empty_label",
                "a data quality and utility label states at least one element of Art. 78(3)",
            );
        }
        (e.0.len() == before).then_some(Self(statements))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_of_a_label_names_its_element() {
        let mut e = Errors::default();
        let form = QualityLabelForm {
            technical_quality: Some(LabelStatementForm {
                statement: " ".into(),
                evidence: Some("ftp://x.eu/doc".into()),
            }),
            ..Default::default()
        };
        assert_eq!(QualityLabel::parse(&mut e, &form), None);
        let found: Vec<(&str, &str)> = e.0.iter().map(|f| (f.field.as_str(), f.code)).collect();
        assert_eq!(
            found,
            [
                (
                    "dqv:hasQualityAnnotation[technical_quality]/oa:hasBody",
                    "required"
                ),
                (
                    "dqv:hasQualityAnnotation[technical_quality]/rdfs:seeAlso",
                    "invalid_iri"
                ),
            ]
        );
        let mut e = Errors::default();
        assert_eq!(
            QualityLabel::parse(&mut e, &QualityLabelForm::default()),
            None
        );
        assert_eq!(e.0[0].code, "empty_label");
        assert_eq!(e.0[0].field, LABEL_PATH);
    }

    #[test]
    fn elements_follow_article_78_3() {
        let points: String = LabelElement::ALL
            .iter()
            .map(|e| e.article_point())
            .collect();
        assert_eq!(points, "abcdef");
        let mut e = Errors::default();
        let label = QualityLabel::parse(
            &mut e,
            &QualityLabelForm {
                coverage: Some(LabelStatementForm {
                    statement: " All admissions 2015-2024. ".into(),
                    evidence: Some("https://holder.eu/coverage".into()),
                }),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(label.statements()[0].element, LabelElement::Coverage);
        assert_eq!(label.statements()[0].statement, "All admissions 2015-2024.");
    }
}
