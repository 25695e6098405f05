//! Imputation of missing values, fitted on a site's own training rows only (the DTU thesis's
//! protocol: no statistic of validation, test or another site's rows leaks into training).
//!
//! A column's policy is the feature's `missing.impute`: the training rows' mean, median, or a
//! constant. A column with no observed training value falls back to 0, after standardisation
//! the training mean, and [`Imputer::fallbacks`] names it so the holder sees it.
use fl_engine::data::Dataset;

use super::features::Impute;
use super::SourceError;

/// Fill values per column (`None`: the column is never missing).
#[derive(Debug, Clone, PartialEq)]
pub struct Imputer {
    pub fill: Vec<Option<f32>>,
    /// Columns whose statistic had no observed training value.
    pub fallbacks: Vec<usize>,
}

impl Imputer {
    /// Fit on `rows` (every row has one value per policy; NaN is missing).
    pub fn fit<'a>(policies: &[Option<Impute>], rows: impl Iterator<Item = &'a [f32]>) -> Self {
        let mut observed: Vec<Vec<f32>> = vec![Vec::new(); policies.len()];
        let wanted: Vec<bool> = policies
            .iter()
            .map(|p| matches!(p, Some(Impute::Mean | Impute::Median)))
            .collect();
        for row in rows {
            for (c, v) in row.iter().enumerate() {
                if wanted.get(c).copied().unwrap_or(false) && !v.is_nan() {
                    observed[c].push(*v);
                }
            }
        }
        let mut fallbacks = Vec::new();
        let fill = policies
            .iter()
            .enumerate()
            .map(|(c, p)| {
                let obs = &mut observed[c];
                let stat = match p {
                    None => return None,
                    Some(Impute::Constant(v)) => return Some(*v),
                    Some(Impute::Mean) if !obs.is_empty() => {
                        (obs.iter().map(|v| f64::from(*v)).sum::<f64>() / obs.len() as f64) as f32
                    }
                    Some(Impute::Median) if !obs.is_empty() => median(obs),
                    Some(_) => {
                        fallbacks.push(c);
                        0.0
                    }
                };
                Some(stat)
            })
            .collect();
        Self { fill, fallbacks }
    }

    /// Replace the NaNs of one row.
    pub fn fill(&self, row: &mut [f32]) {
        for (v, f) in row.iter_mut().zip(&self.fill) {
            if let (true, Some(f)) = (v.is_nan(), f) {
                *v = *f;
            }
        }
    }
}

fn median(v: &mut [f32]) -> f32 {
    v.sort_by(f32::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The row positions the engine's seeded train / validation split picks for `n` rows: the
/// split of [`Dataset::split`] applied to the row numbers themselves, so imputation can be
/// fitted on exactly the rows [`fl_engine::data::SiteData::prepare`] trains on.
pub fn split_indices(
    n: usize,
    val_fraction: f64,
    seed: u64,
) -> Result<(Vec<usize>, Vec<usize>), SourceError> {
    // row numbers below 2^24 are exact in f32
    assert!(n < 1 << 24, "more rows than one site holds");
    let rows = Dataset::new(1, (0..n).map(|i| i as f32).collect(), vec![0; n])?;
    let (train, val) = rows.split(val_fraction, seed)?;
    let idx = |d: &Dataset| d.features().iter().map(|v| *v as usize).collect();
    Ok((idx(&train), idx(&val)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitted_on_the_given_rows_only() {
        let nan = f32::NAN;
        let rows = [
            [1.0, nan, 5.0],
            [3.0, 2.0, nan],
            [nan, 4.0, nan],
            [8.0, 9.0, nan],
        ];
        let policies = [
            Some(Impute::Mean),
            Some(Impute::Median),
            Some(Impute::Constant(-1.0)),
        ];
        // fitted on the first three rows: mean(1, 3) = 2, median(2, 4) = 3
        let imp = Imputer::fit(&policies, rows[..3].iter().map(|r| r.as_slice()));
        assert_eq!(imp.fill, vec![Some(2.0), Some(3.0), Some(-1.0)]);
        let mut r = rows[2];
        imp.fill(&mut r);
        assert_eq!(r, [2.0, 4.0, -1.0]);
        let mut all_missing = [nan];
        let fb = Imputer::fit(&[Some(Impute::Mean)], [[nan].as_slice()].into_iter());
        fb.fill(&mut all_missing);
        assert_eq!((all_missing, fb.fallbacks), ([0.0], vec![0]));
        let none = Imputer::fit(&[None], std::iter::empty());
        let mut untouched = [nan];
        none.fill(&mut untouched);
        assert!(untouched[0].is_nan());
    }

    #[test]
    fn split_indices_are_the_engine_split() {
        let data =
            Dataset::new(1, (0..10).map(|v| v as f32 * 10.0).collect(), vec![0; 10]).unwrap();
        let (train, val) = data.split(0.3, 5).unwrap();
        let (ti, vi) = split_indices(10, 0.3, 5).unwrap();
        let pick = |idx: &[usize]| idx.iter().map(|&i| i as f32 * 10.0).collect::<Vec<_>>();
        assert_eq!(pick(&ti), train.features());
        assert_eq!(pick(&vi), val.features());
    }
}
