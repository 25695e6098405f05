//! Fed-Heart-Disease (FLamby): four hospitals of the UCI Heart Disease data.
//!
//! Preprocessing (as in FLamby / FL4Health): drop `slope`, `ca`, `thal`; drop rows with a
//! missing value; one-hot `cp` (levels 1..4) and `restecg` (levels 0..2) dropping the first
//! level; label = `num > 0`. Features, in order: age, sex, trestbps, chol, fbs, thalach,
//! exang, oldpeak, cp=2, cp=3, cp=4, restecg=1, restecg=2 (13). The train/test split comes
//! from `flamby_split.csv`, whose `line` is the 0-based line in the processed file.
//!
//! The files ship inside the crate (`data/heart_disease`) and are compiled in, so a binary
//! never depends on a path outside itself.
use crate::data::Dataset;
use crate::error::{EngineError, Result};

pub const N_FEATURES: usize = 13;
pub const CENTERS: [&str; 4] = ["cleveland", "hungarian", "switzerland", "va"];

const FILES: [&str; 4] = [
    include_str!("../../data/heart_disease/processed.cleveland.data"),
    include_str!("../../data/heart_disease/processed.hungarian.data"),
    include_str!("../../data/heart_disease/processed.switzerland.data"),
    include_str!("../../data/heart_disease/processed.va.data"),
];
const SPLIT: &str = include_str!("../../data/heart_disease/flamby_split.csv");

/// One parsed row: the 13 features and the binary label.
pub type Row = ([f32; N_FEATURES], u32);

/// One hospital's FLamby train and test rows (not yet standardised).
#[derive(Clone, Debug, PartialEq)]
pub struct CenterSplit {
    pub name: String,
    pub train: Dataset,
    pub test: Dataset,
}

/// Parse one line of a processed file; `None` when a used column is missing.
pub fn parse_row(line: &str) -> Result<Option<Row>> {
    let cols: Vec<&str> = line.trim().split(',').collect();
    if cols.len() != 14 {
        return Err(EngineError::Data(format!(
            "expected 14 columns, got {}: {line}",
            cols.len()
        )));
    }
    // 0 age, 1 sex, 2 cp, 3 trestbps, 4 chol, 5 fbs, 6 restecg, 7 thalach, 8 exang,
    // 9 oldpeak, 10 slope, 11 ca, 12 thal (dropped), 13 num
    let used = [0usize, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13];
    if used.iter().any(|&c| cols[c].trim() == "?") {
        return Ok(None);
    }
    let num = |c: usize| -> Result<f32> {
        cols[c]
            .trim()
            .parse::<f32>()
            .map_err(|e| EngineError::Data(format!("column {c} `{}`: {e}", cols[c])))
    };
    let (cp, restecg) = (num(2)?, num(6)?);
    if !(1.0..=4.0).contains(&cp) || !(0.0..=2.0).contains(&restecg) {
        return Err(EngineError::Data(format!(
            "cp {cp} / restecg {restecg} outside their levels"
        )));
    }
    let one_hot = |v: f32, level: f32| if v == level { 1.0 } else { 0.0 };
    let x = [
        num(0)?,
        num(1)?,
        num(3)?,
        num(4)?,
        num(5)?,
        num(7)?,
        num(8)?,
        num(9)?,
        one_hot(cp, 2.0),
        one_hot(cp, 3.0),
        one_hot(cp, 4.0),
        one_hot(restecg, 1.0),
        one_hot(restecg, 2.0),
    ];
    Ok(Some((x, u32::from(num(13)? > 0.0))))
}

/// The four centres with FLamby's train/test split, from the copy compiled into the crate.
pub fn load() -> Result<Vec<CenterSplit>> {
    load_from(&FILES, SPLIT)
}

/// Same, from the text of the four processed files (in [`CENTERS`] order) and the split CSV.
pub fn load_from(files: &[&str; 4], split_csv: &str) -> Result<Vec<CenterSplit>> {
    let mut rows: Vec<Vec<Option<Row>>> = Vec::new();
    for text in files {
        rows.push(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(parse_row)
                .collect::<Result<_>>()?,
        );
    }
    let mut parts: Vec<[(Vec<f32>, Vec<u32>); 2]> = (0..4).map(|_| Default::default()).collect();
    for (i, line) in split_csv.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.trim().split(',').collect();
        if f.len() != 4 {
            return Err(EngineError::Data(format!(
                "split line {i}: expected 4 fields"
            )));
        }
        let center = CENTERS.iter().position(|c| *c == f[1]).ok_or_else(|| {
            EngineError::Data(format!("split line {i}: unknown centre `{}`", f[1]))
        })?;
        let row: usize = f[2]
            .parse()
            .map_err(|_| EngineError::Data(format!("split line {i}: bad line number")))?;
        let set = match f[3] {
            "train" => 0,
            "test" => 1,
            other => {
                return Err(EngineError::Data(format!(
                    "split line {i}: unknown set `{other}`"
                )))
            }
        };
        let (x, y) = rows[center].get(row).copied().flatten().ok_or_else(|| {
            EngineError::Data(format!(
                "split line {i} points at a missing or incomplete row {row}"
            ))
        })?;
        parts[center][set].0.extend_from_slice(&x);
        parts[center][set].1.push(y);
    }
    CENTERS
        .iter()
        .zip(parts)
        .map(|(name, [(trx, try_), (tex, tey)])| {
            Ok(CenterSplit {
                name: name.to_string(),
                train: Dataset::new(N_FEATURES, trx, try_)?,
                test: Dataset::new(N_FEATURES, tex, tey)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_sizes_match_flamby() {
        let c = load().unwrap();
        let sizes: Vec<(usize, usize)> = c.iter().map(|s| (s.train.len(), s.test.len())).collect();
        assert_eq!(sizes, vec![(199, 104), (172, 89), (30, 16), (85, 45)]);
        assert!(c.iter().all(|s| s.train.n_features() == 13));
    }

    #[test]
    fn one_row_by_hand() {
        // Cleveland line 0: 63,1,1,145,233,1,2,150,0,2.3,3,0,6,0
        let (x, y) = parse_row("63.0,1.0,1.0,145.0,233.0,1.0,2.0,150.0,0.0,2.3,3.0,0.0,6.0,0")
            .unwrap()
            .unwrap();
        assert_eq!(
            x,
            [63., 1., 145., 233., 1., 150., 0., 2.3, 0., 0., 0., 0., 1.]
        );
        assert_eq!(y, 0);
        let (_, y) = parse_row("60,1,4,132,218,0,1,140,1,1.5,3,?,?,2")
            .unwrap()
            .unwrap();
        assert_eq!(y, 1);
        assert!(parse_row("60,1,4,?,218,0,1,140,1,1.5,3,?,?,2")
            .unwrap()
            .is_none());
        assert!(parse_row("60,1").is_err());
    }
}
