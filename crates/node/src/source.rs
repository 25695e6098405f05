//! Where a holder's records are, and reading them for a study.
use std::path::PathBuf;

use super::codemap::CodeMap;
use super::features::FeatureSpec;
use super::{csv_source, fhir_source, SiteRows, SourceError};
use ehds_core::domain::DataCategory;

/// Where the node's records are.
#[derive(Debug, Clone)]
pub enum DataSource {
    /// FHIR R4: a Bulk Data export directory (NDJSON per resource type, optionally gzipped),
    /// an NDJSON file, or a Bundle.
    Fhir(PathBuf),
    /// A CSV extract with the specification's columns.
    Csv(PathBuf),
    /// A source read through the holder's code map (local codes, unit spellings,
    /// site-private features).
    Mapped {
        data: Box<DataSource>,
        code_map: PathBuf,
    },
}

impl DataSource {
    /// Read the rows `spec` describes.
    pub fn read(&self, spec: &FeatureSpec) -> Result<SiteRows, SourceError> {
        match self {
            DataSource::Fhir(p) => fhir_source::load(spec, p, None),
            DataSource::Csv(p) => csv_source::read_csv(spec, std::fs::File::open(p)?),
            DataSource::Mapped { data, code_map } => {
                let map = CodeMap::from_file(code_map, spec)?;
                match &**data {
                    DataSource::Fhir(p) => fhir_source::load(spec, p, Some(&map)),
                    DataSource::Csv(_) => Err(SourceError::CodeMap(
                        "a CSV extract already has the study's columns; it takes no code map"
                            .into(),
                    )),
                    DataSource::Mapped { .. } => {
                        Err(SourceError::CodeMap("one code map per source".into()))
                    }
                }
            }
        }
    }

    /// Read the rows of a study whose specification the gateway accepted for `declared`
    /// categories. Defence in depth: the node reads nothing the study did not declare (and
    /// the gateway checked the declaration against the permit), site-private features
    /// included.
    pub fn read_for_study(
        &self,
        spec: &FeatureSpec,
        declared: &[DataCategory],
    ) -> anyhow::Result<SiteRows> {
        let undeclared: Vec<_> = spec
            .data_categories()
            .into_iter()
            .filter(|c| !declared.contains(c))
            .collect();
        if !undeclared.is_empty() {
            anyhow::bail!("the feature specification reads undeclared categories {undeclared:?}");
        }
        if let DataSource::Mapped { code_map, .. } = self {
            for f in CodeMap::from_file(code_map, spec)?.private_features {
                if !declared.contains(&f.category) {
                    return Err(SourceError::UndeclaredPrivateCategory {
                        feature: f.name,
                        category: f.category.as_str().to_owned(),
                    }
                    .into());
                }
            }
        }
        let rows = self.read(spec)?;
        let r = &rows.report;
        if r.bad_inputs() > 0 {
            tracing::warn!(
                bad_inputs = r.bad_inputs(),
                issues = ?r.issues,
                "the records have bad input; it was skipped (run `ehds-node check` for details)"
            );
        }
        Ok(rows)
    }
}
