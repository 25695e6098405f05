//! The Central baseline's data: every site's training and validation rows pooled (using the
//! same per-site 80/20 split as the federated runs), standardised with statistics of the
//! pooled training rows, plus each site's test set under that same standardisation so the
//! central model is scored per site like every other method.
use crate::data::{Dataset, SiteData, Standardizer};
use crate::error::Result;

/// `(pooled site, per-site test sets)` from each site's raw `(name, train, test)` rows.
pub fn pooled_site(
    raw: &[(String, Dataset, Dataset)],
    val_fraction: f64,
    seed: u64,
) -> Result<(SiteData, Vec<Dataset>)> {
    let mut trains = Vec::new();
    let mut vals = Vec::new();
    for (k, (_, train_full, _)) in raw.iter().enumerate() {
        let (t, v) = train_full.split(val_fraction, crate::seeds::split_seed(seed, k))?;
        trains.push(t);
        vals.push(v);
    }
    let train = Dataset::concat(&trains.iter().collect::<Vec<_>>())?;
    let val = Dataset::concat(&vals.iter().collect::<Vec<_>>())?;
    let tests: Vec<&Dataset> = raw.iter().map(|(_, _, t)| t).collect();
    let s = Standardizer::fit(&train)?;
    let site = SiteData {
        name: "central".into(),
        train: s.apply(&train)?,
        val: s.apply(&val)?,
        test: s.apply(&Dataset::concat(&tests)?)?,
    };
    let per_site = tests.iter().map(|t| s.apply(t)).collect::<Result<_>>()?;
    Ok((site, per_site))
}
