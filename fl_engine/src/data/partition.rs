//! Splitting a pooled dataset across sites.
//!
//! * Natural partition: each row already carries its site (e.g. the hospital).
//! * Dirichlet(alpha) label skew (Hsu et al. 2019, arXiv:1909.06335): for each class c draw
//!   p_c ~ Dir(alpha 1_K) and deal that class's shuffled rows to the K sites in proportions
//!   p_c. Small alpha -> each site sees few classes. Draws are repeated until every site
//!   holds at least `min_per_site` rows, as is customary, so no site ends up empty.
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma};

use crate::error::{EngineError, Result};

/// Row indices per site from a per-row site id.
pub fn natural_partition(site_of_row: &[usize], n_sites: usize) -> Result<Vec<Vec<usize>>> {
    let mut out = vec![Vec::new(); n_sites];
    for (row, &s) in site_of_row.iter().enumerate() {
        out.get_mut(s)
            .ok_or_else(|| EngineError::Data(format!("row {row} names site {s} of {n_sites}")))?
            .push(row);
    }
    Ok(out)
}

/// Row indices per site under Dirichlet(alpha) label skew.
pub fn dirichlet_label_skew(
    labels: &[u32],
    n_sites: usize,
    alpha: f64,
    min_per_site: usize,
    seed: u64,
) -> Result<Vec<Vec<usize>>> {
    if n_sites == 0 || !(alpha > 0.0 && alpha.is_finite()) {
        return Err(EngineError::InvalidConfig(format!(
            "need n_sites > 0 and alpha > 0, got {n_sites}, {alpha}"
        )));
    }
    if min_per_site * n_sites > labels.len() {
        return Err(EngineError::InvalidConfig(
            "not enough rows for the minimum per site".into(),
        ));
    }
    let n_classes = labels.iter().max().map_or(0, |m| *m as usize + 1);
    if n_classes > 1 << 16 {
        // survival and multi-label target codes are not class indices
        return Err(EngineError::InvalidConfig(format!(
            "label skew needs class labels; the largest label is {}",
            n_classes - 1
        )));
    }
    let gamma = Gamma::new(alpha, 1.0).map_err(|e| EngineError::InvalidConfig(e.to_string()))?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for _attempt in 0..1000 {
        let mut sites = vec![Vec::new(); n_sites];
        for c in 0..n_classes {
            let mut rows: Vec<usize> = (0..labels.len())
                .filter(|&i| labels[i] as usize == c)
                .collect();
            rows.shuffle(&mut rng);
            let draws: Vec<f64> = (0..n_sites).map(|_| gamma.sample(&mut rng)).collect();
            let total: f64 = draws.iter().sum();
            let mut start = 0;
            let mut cum = 0.0;
            for (k, g) in draws.iter().enumerate() {
                cum += g / total;
                let end = if k + 1 == n_sites {
                    rows.len()
                } else {
                    ((cum * rows.len() as f64).round() as usize).min(rows.len())
                };
                sites[k].extend_from_slice(&rows[start..end.max(start)]);
                start = end.max(start);
            }
        }
        if sites.iter().all(|s| s.len() >= min_per_site) {
            sites.iter_mut().for_each(|s| s.sort_unstable());
            return Ok(sites);
        }
    }
    Err(EngineError::InvalidConfig(format!(
        "no Dirichlet({alpha}) draw gave every site {min_per_site} rows in 1000 attempts"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_partition_groups_rows() {
        let p = natural_partition(&[1, 0, 1], 2).unwrap();
        assert_eq!(p, vec![vec![1], vec![0, 2]]);
        assert!(natural_partition(&[2], 2).is_err());
    }

    #[test]
    fn dirichlet_covers_every_row_once_and_skews_labels() {
        let labels: Vec<u32> = (0..1000).map(|i| (i % 2) as u32).collect();
        let sites = dirichlet_label_skew(&labels, 5, 0.1, 10, 42).unwrap();
        let mut all: Vec<usize> = sites.concat();
        all.sort_unstable();
        assert_eq!(all, (0..1000).collect::<Vec<_>>());
        // with alpha = 0.1 at least one site should be far from the global 50/50 mix
        let skew = sites.iter().map(|s| {
            let pos = s.iter().filter(|&&i| labels[i] == 1).count() as f64;
            (pos / s.len() as f64 - 0.5).abs()
        });
        assert!(skew.fold(0.0, f64::max) > 0.3);
        assert_eq!(
            sites,
            dirichlet_label_skew(&labels, 5, 0.1, 10, 42).unwrap()
        );
    }

    #[test]
    fn dirichlet_rejects_bad_settings() {
        assert!(dirichlet_label_skew(&[0, 1], 0, 1.0, 0, 0).is_err());
        assert!(dirichlet_label_skew(&[0, 1], 2, 0.0, 0, 0).is_err());
        assert!(dirichlet_label_skew(&[0, 1], 2, 1.0, 5, 0).is_err());
    }
}
