//! A CSV extract as a second source: header `pseudonym,split,label,<columns...>` with the
//! columns exactly as the feature specification names them (one-hot columns as `name=level`).
//! `split` is `train`, `test` or empty; an empty feature or label cell is a missing value: the
//! subject is dropped and counted as with a FHIR source, or, for a feature the specification
//! imputes, kept with the value imputed from the site's training rows. Missingness indicator
//! columns are written and read like any other column. The label cell is the target code: 0 or
//! 1, the class index of a multi-class label, the bit mask of a multi-label one.
use std::io::{Read, Write};

use super::features::FeatureSpec;
use super::{SiteRows, SourceError, Split, SubjectRow};

const FIXED: [&str; 3] = ["pseudonym", "split", "label"];

/// Write the complete rows (incomplete subjects have no values to write).
pub fn write_csv<W: Write>(rows: &SiteRows, out: W) -> Result<(), SourceError> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(
        FIXED
            .iter()
            .copied()
            .chain(rows.columns.iter().map(String::as_str)),
    )?;
    for r in &rows.rows {
        let mut rec = vec![
            r.pseudonym.clone(),
            r.split.map(Split::as_str).unwrap_or_default().to_owned(),
            r.label.to_string(),
        ];
        // `{}` prints the shortest text that reads back to the same f32; a value still to be
        // imputed is an empty cell.
        rec.extend(r.features.iter().map(|v| {
            if v.is_nan() {
                String::new()
            } else {
                v.to_string()
            }
        }));
        w.write_record(&rec)?;
    }
    w.flush()?;
    Ok(())
}

/// Read a CSV extract whose columns are those of `spec`.
pub fn read_csv<R: Read>(spec: &FeatureSpec, input: R) -> Result<SiteRows, SourceError> {
    if spec.image.is_some() {
        return Err(SourceError::ImageNeedsFhir);
    }
    let mut r = csv::Reader::from_reader(input);
    let columns = spec.columns();
    let expected: Vec<String> = FIXED
        .iter()
        .map(|s| s.to_string())
        .chain(columns.iter().cloned())
        .collect();
    let found: Vec<String> = r.headers()?.iter().map(str::to_owned).collect();
    if found != expected {
        return Err(SourceError::CsvHeader { expected, found });
    }
    let imputation: Vec<_> = spec
        .features
        .iter()
        .flat_map(|f| {
            let mut v = vec![f.missing.impute; f.value_columns().len()];
            if f.missing.indicator {
                v.push(None);
            }
            v
        })
        .collect();
    let mut out = SiteRows {
        columns,
        imputation,
        task: spec.task(),
        ..SiteRows::default()
    };
    for (n, rec) in r.records().enumerate() {
        let rec = rec?;
        let bad = |reason: String| SourceError::CsvValue {
            record: n + 1,
            reason,
        };
        let pseudonym = rec[0].trim().to_owned();
        if pseudonym.is_empty() {
            return Err(bad("empty pseudonym".into()));
        }
        let split = match rec[1].trim() {
            "" => None,
            s => Some(Split::parse(s).ok_or_else(|| bad(format!("split `{s}`")))?),
        };
        let label = match rec[2].trim() {
            "" => None,
            s => match s.parse::<u32>() {
                Ok(code) if out.task.holds(code) => Some(code),
                _ => return Err(bad(format!("label `{s}` is not {}", out.task.codes()))),
            },
        };
        let mut features = Vec::with_capacity(out.columns.len());
        let mut complete = label.is_some();
        if label.is_none() {
            *out.missing_by_column
                .entry(FIXED[2].to_owned())
                .or_default() += 1;
        }
        for ((c, cell), impute) in out
            .columns
            .iter()
            .zip(rec.iter().skip(FIXED.len()))
            .zip(&out.imputation)
        {
            match cell.trim() {
                "" => {
                    *out.missing_by_column.entry(c.clone()).or_default() += 1;
                    match impute {
                        Some(_) => features.push(f32::NAN),
                        None => complete = false,
                    }
                }
                s => {
                    let v: f32 = s
                        .parse()
                        .ok()
                        .filter(|v: &f32| v.is_finite())
                        .ok_or_else(|| bad(format!("column `{c}`: `{s}` is not a number")))?;
                    features.push(v);
                }
            }
        }
        match (complete, label) {
            (true, Some(label)) => out.rows.push(SubjectRow {
                pseudonym,
                split,
                features,
                label,
                ..SubjectRow::default()
            }),
            _ => out.incomplete.push(pseudonym),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"{"name": "t", "features": [
        {"name": "x", "category": "ehr_data",
         "source": {"observation": {"system": "s", "code": "x"}}, "transform": {"kind": "number"}},
        {"name": "k", "category": "ehr_data",
         "source": {"observation": {"system": "s", "code": "k"}},
         "transform": {"kind": "one_hot", "levels": ["a", "b"]}}],
      "label": {"name": "y", "category": "ehr_data",
                "source": {"condition": {"system": "s", "code": "y"}}}}"#;

    #[test]
    fn reads_missing_cells_and_rejects_bad_ones() {
        let spec = FeatureSpec::from_json(SPEC).unwrap();
        let text = "pseudonym,split,label,x,k=b\np1,train,1,0.1,1\np2,,0,,0\np3,test,,2,0\n";
        let rows = read_csv(&spec, text.as_bytes()).unwrap();
        assert_eq!(rows.rows.len(), 1);
        assert_eq!(rows.rows[0].features, [0.1, 1.0]);
        assert_eq!(rows.incomplete, ["p2", "p3"]);
        assert_eq!(rows.missing_by_column.get("x"), Some(&1));
        assert!(matches!(
            read_csv(&spec, "pseudonym,split,label,x\n".as_bytes()),
            Err(SourceError::CsvHeader { .. })
        ));
        for bad in [
            "p1,train,1,zero,1",
            "p1,holdout,1,0,1",
            "p1,train,2,0,1",
            "p1,train,1,NaN,1",
        ] {
            let text = format!("pseudonym,split,label,x,k=b\n{bad}\n");
            assert!(
                matches!(
                    read_csv(&spec, text.as_bytes()),
                    Err(SourceError::CsvValue { record: 1, .. })
                ),
                "{bad}"
            );
        }
        // a three-class label reads class indices, a two-label one bit masks
        let classes = SPEC.replace(
            r#"{"condition": {"system": "s", "code": "y"}}"#,
            r#"{"first_match": {"classes": [
                {"name": "a", "source": {"condition": {"system": "s", "code": "a"}}},
                {"name": "b", "source": {"condition": {"system": "s", "code": "b"}}}],
                "otherwise": "c"}}"#,
        );
        let labels = SPEC.replace(
            r#"{"condition": {"system": "s", "code": "y"}}"#,
            r#"{"labels": [
                {"name": "a", "source": {"condition": {"system": "s", "code": "a"}}},
                {"name": "b", "source": {"condition": {"system": "s", "code": "b"}}}]}"#,
        );
        for (spec, ok, bad) in [(classes, "2", "3"), (labels, "3", "4")] {
            let spec = FeatureSpec::from_json(&spec).unwrap();
            let read = |label: &str| {
                let text = format!("pseudonym,split,label,x,k=b\np1,train,{label},0,1\n");
                read_csv(&spec, text.as_bytes())
            };
            assert_eq!(read(ok).unwrap().rows[0].label, ok.parse::<u32>().unwrap());
            assert!(matches!(
                read(bad),
                Err(SourceError::CsvValue { record: 1, .. })
            ));
        }
        let short = "pseudonym,split,label,x,k=b\np1,train,1\n";
        assert!(matches!(
            read_csv(&spec, short.as_bytes()),
            Err(SourceError::Csv(_))
        ));
    }
}
