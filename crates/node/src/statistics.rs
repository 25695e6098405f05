//! A holder's part of a statistics run (Art. 69): the table of the query's variables over the
//! holder's own records, after the opt-out filter, and the partial the gateway pools. Nothing
//! but the partial's counts and moments leaves the node (see `ehds_stats::partial`).

use ehds_core::domain::{
    feature_spec::features::{FeatureSpec, Task},
    statistics::variables,
};
use ehds_stats::{Table, TableError};

use super::SiteRows;

/// The holder's table over `spec`'s variables ([`variables`]): every model input column as
/// read (a value to be imputed is missing), the label's code and, for a survival label, the
/// follow-up time in days. Subjects dropped as incomplete are not in `rows`; the caller reports
/// how many.
pub fn table(spec: &FeatureSpec, rows: &SiteRows) -> Result<Table, TableError> {
    let columns = variables(spec);
    let survival = spec.task() == Task::Survival;
    let data = rows
        .rows
        .iter()
        .map(|r| {
            let mut v: Vec<f64> = r.features.iter().map(|x| f64::from(*x)).collect();
            v.push(f64::from(r.label));
            if survival {
                v.push(r.time.map_or(f64::NAN, f64::from));
            }
            v
        })
        .collect();
    Table::new(columns, data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SubjectRow;

    #[test]
    fn the_table_has_the_declared_variables_with_missing_values_as_nan() {
        let spec = FeatureSpec::from_json(include_str!(
            "../../../examples/federation/heart_disease.features.json"
        ))
        .unwrap();
        let n = spec.columns().len();
        let mut features = vec![1.0f32; n];
        features[0] = 63.0;
        features[1] = f32::NAN;
        let rows = SiteRows {
            columns: spec.columns(),
            rows: vec![SubjectRow {
                pseudonym: "p".into(),
                features,
                label: 1,
                ..Default::default()
            }],
            ..Default::default()
        };
        let t = table(&spec, &rows).unwrap();
        let q = ehds_stats::Query::parse(
            serde_json::from_value(serde_json::json!({
                "statistic": "mean", "variable": "age",
                "group_by": [{"column": "coronary_heart_disease", "levels": [0, 1]}]
            }))
            .unwrap(),
            &Default::default(),
        )
        .unwrap();
        let p = ehds_stats::partial(&q, &t).unwrap();
        assert_eq!(p.rows_matched, 1);
        assert_eq!(p.cells[1].n, 1);
        let q = ehds_stats::Query::parse(
            serde_json::from_value(serde_json::json!({"statistic": "mean", "variable": "sex"}))
                .unwrap(),
            &Default::default(),
        )
        .unwrap();
        let p = ehds_stats::partial(&q, &t).unwrap();
        // the missing value is counted as excluded, not dropped
        assert_eq!(p.excluded.values().sum::<u64>(), 1);
    }
}
