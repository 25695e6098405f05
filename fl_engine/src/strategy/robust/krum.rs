//! Krum and Multi-Krum (Blanchard, El Mhamdi, Guerraoui, Stainer 2017, "Machine Learning with
//! Adversaries: Byzantine Tolerant Gradient Descent", NeurIPS 2017, arXiv:1703.02757).
//!
//! With n updates of which at most f are Byzantine (n >= 2f + 3, refused otherwise with
//! [`EngineError::TooFewUpdates`]):
//!
//! ```text
//! score(i) = sum of ||u_i - u_j||^2 over the n - f - 2 updates j != i closest to u_i
//! Krum       = u_{i*},  i* = argmin_i score(i)
//! Multi-Krum = (1/m) sum of the m updates with the lowest scores    (m = n - f by default)
//! ```
//!
//! Choices the paper leaves open: ties in score go to the lower site index (stable sort), so
//! the result depends only on the inputs; Multi-Krum refuses m > n - f, because averaging
//! more than n - f updates includes a Byzantine one whenever f are present; squared distances
//! are accumulated in `f64`. Sample counts are ignored (see the module documentation).
//!
//! Sensitivity under [`DpRobust`](super::DpRobust): the output is a mean of clipped updates,
//! so its norm is at most C whatever was selected; replacing one site's update can change the
//! selection entirely, hence the replace-one L2 sensitivity is the diameter of the C-ball, 2C.
use super::{mean_of, run_plain, sq_dist, RobustReport, RobustRule};
use crate::error::{EngineError, Result};
use crate::strategy::{Aggregator, AggregatorKind, AggregatorReport};

/// Krum (m = 1) or Multi-Krum (m > 1) with f assumed Byzantine updates.
#[derive(Debug)]
pub struct Krum {
    f: usize,
    /// `None` = Multi-Krum's default n - f; `Some(1)` = Krum.
    m: Option<usize>,
    multi: bool,
    last: Option<RobustReport>,
}

impl Krum {
    /// Krum: the single update with the lowest score.
    pub fn new(f: usize) -> Self {
        Self {
            f,
            m: Some(1),
            multi: false,
            last: None,
        }
    }

    /// Multi-Krum: the mean of the `m` lowest-scored updates (`None`: m = n - f).
    pub fn multi(f: usize, m: Option<usize>) -> Result<Self> {
        if m == Some(0) {
            return Err(EngineError::InvalidConfig(
                "Multi-Krum needs m >= 1 updates to average".into(),
            ));
        }
        Ok(Self {
            f,
            m,
            multi: true,
            last: None,
        })
    }

    /// Number of updates assumed Byzantine.
    pub fn byzantine(&self) -> usize {
        self.f
    }

    /// The latest round's selection and scores.
    pub fn last_report(&self) -> Option<&RobustReport> {
        self.last.as_ref()
    }

    /// m for `n` updates, checking n >= 2f + 3 and m <= n - f.
    fn resolve(&self, n: usize) -> Result<usize> {
        let needed = 2 * self.f + 3;
        if n < needed {
            return Err(EngineError::TooFewUpdates {
                rule: Aggregator::name(self),
                needed,
                found: n,
            });
        }
        let m = self.m.unwrap_or(n - self.f);
        if m > n - self.f {
            return Err(EngineError::InvalidConfig(format!(
                "Multi-Krum m = {m} exceeds n - f = {}",
                n - self.f
            )));
        }
        Ok(m)
    }
}

/// Krum scores of the updates `idx` (indices into `updates`) among themselves: for each, the
/// sum of its `neighbours` smallest squared distances to the other members of `idx`.
pub(super) fn krum_scores(updates: &[&[f32]], idx: &[usize], neighbours: usize) -> Vec<f64> {
    let n = idx.len();
    let mut d = vec![0f64; n * n];
    for a in 0..n {
        for b in a + 1..n {
            let v = sq_dist(updates[idx[a]], updates[idx[b]]);
            d[a * n + b] = v;
            d[b * n + a] = v;
        }
    }
    (0..n)
        .map(|a| {
            let mut row: Vec<f64> = (0..n).filter(|&b| b != a).map(|b| d[a * n + b]).collect();
            row.sort_by(f64::total_cmp);
            row.iter().take(neighbours).sum()
        })
        .collect()
}

/// Positions (into the score vector) sorted by score, ties by position.
pub(super) fn by_score(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(a.cmp(&b)));
    order
}

impl Aggregator for Krum {
    fn name(&self) -> &'static str {
        if self.multi {
            "multi-krum"
        } else {
            "krum"
        }
    }

    fn kind(&self) -> AggregatorKind {
        AggregatorKind::Robust
    }

    fn report(&self) -> Option<AggregatorReport> {
        self.last.clone().map(AggregatorReport::Robust)
    }

    fn aggregate(&mut self, updates: &[&[f32]], weights: &[f64]) -> Result<Vec<f32>> {
        let (out, report) = run_plain(self, updates, weights)?;
        self.last = Some(report);
        Ok(out)
    }
}

impl RobustRule for Krum {
    fn combine(
        &mut self,
        updates: &[&[f32]],
        _clip: Option<f64>,
    ) -> Result<(Vec<f64>, RobustReport)> {
        let n = updates.len();
        let m = self.resolve(n)?;
        let all: Vec<usize> = (0..n).collect();
        let scores = krum_scores(updates, &all, n - self.f - 2);
        let mut selected: Vec<usize> = by_score(&scores).into_iter().take(m).collect();
        let out = mean_of(updates, &selected);
        selected.sort_unstable();
        let mut report = RobustReport::new(Aggregator::name(self), n);
        report.selected = selected;
        report.scores = scores;
        report.trimmed_per_coordinate = n - m;
        Ok((out, report))
    }

    fn sensitivity(&self, n: usize, clip: f64) -> Result<f64> {
        self.resolve(n)?;
        Ok(2.0 * clip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// u0 = (1,0), u1 = (0,1), u2 = (10,10) (outlier), u3 = (0.5,0.5), u4 = (1,1); f = 1, so
    /// n - f - 2 = 2 neighbours. Squared distances: u3 is 0.5 from each of u0, u1, u4;
    /// u0-u1 = 2, u0-u4 = u1-u4 = 1; u2 is 162 from u4, 180.5 from u3, 181 from u0 and u1.
    /// Scores: u0 = 0.5 + 1 = 1.5, u1 = 1.5, u2 = 162 + 180.5 = 342.5, u3 = 0.5 + 0.5 = 1,
    /// u4 = 0.5 + 1 = 1.5.
    fn five() -> Vec<Vec<f32>> {
        vec![
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![10.0, 10.0],
            vec![0.5, 0.5],
            vec![1.0, 1.0],
        ]
    }

    fn views(v: &[Vec<f32>]) -> Vec<&[f32]> {
        v.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn krum_scores_and_pick_by_hand() {
        let u = five();
        let mut k = Krum::new(1);
        let out = k.aggregate(&views(&u), &[1.0; 5]).unwrap();
        assert_eq!(out, vec![0.5, 0.5]);
        let r = k.last_report().unwrap();
        assert_eq!(r.scores, vec![1.5, 1.5, 342.5, 1.0, 1.5]);
        assert_eq!(r.selected, vec![3]);
    }

    #[test]
    fn multi_krum_by_hand() {
        let u = five();
        // default m = n - f = 4: u3, u0, u1, u4 -> ((1+0+0.5+1)/4, (0+1+0.5+1)/4) = (0.625, 0.625)
        let mut k = Krum::multi(1, None).unwrap();
        assert_eq!(
            k.aggregate(&views(&u), &[1.0; 5]).unwrap(),
            vec![0.625, 0.625]
        );
        assert_eq!(k.last_report().unwrap().selected, vec![0, 1, 3, 4]);
        // m = 2: u3 and u0 (the 1.5 tie goes to the lower index) -> (0.75, 0.25)
        let mut k = Krum::multi(1, Some(2)).unwrap();
        assert_eq!(
            k.aggregate(&views(&u), &[1.0; 5]).unwrap(),
            vec![0.75, 0.25]
        );
        // sample counts do not matter
        let mut k2 = Krum::multi(1, Some(2)).unwrap();
        assert_eq!(
            k2.aggregate(&views(&u), &[1.0, 1.0, 1e9, 1.0, 1.0])
                .unwrap(),
            vec![0.75, 0.25]
        );
    }

    #[test]
    fn refuses_too_few_updates_and_bad_m() {
        let u = five();
        let mut k = Krum::new(2); // needs 7
        assert!(matches!(
            k.aggregate(&views(&u), &[1.0; 5]),
            Err(EngineError::TooFewUpdates {
                needed: 7,
                found: 5,
                ..
            })
        ));
        assert!(Krum::multi(1, Some(0)).is_err());
        let mut k = Krum::multi(1, Some(5)).unwrap(); // 5 > n - f = 4
        assert!(k.aggregate(&views(&u), &[1.0; 5]).is_err());
        assert!(Krum::new(1).sensitivity(4, 1.0).is_err());
        assert_eq!(Krum::new(1).sensitivity(5, 0.5).unwrap(), 1.0);
    }

    #[test]
    fn a_huge_byzantine_update_is_never_selected() {
        let mut u = five();
        u[2] = vec![1e6, -1e6];
        for mut k in [Krum::new(1), Krum::multi(1, None).unwrap()] {
            let out = k.aggregate(&views(&u), &[1.0; 5]).unwrap();
            assert!(!k.last_report().unwrap().selected.contains(&2));
            assert!(out.iter().all(|v| (0.0..=1.0).contains(v)));
        }
    }
}
