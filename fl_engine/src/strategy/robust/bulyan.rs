//! Bulyan (El Mhamdi, Guerraoui, Rouault 2018, "The Hidden Vulnerability of Distributed
//! Learning in Byzantium", ICML 2018, arXiv:1802.07927), on top of Krum.
//!
//! With n updates of which at most f are Byzantine (n >= 4f + 3, refused otherwise with
//! [`EngineError::TooFewUpdates`]):
//!
//! ```text
//! selection: R = all updates, S = {}; repeat theta = n - 2f times:
//!              i = Krum(R) (scores over R with |R| - f - 2 neighbours), move u_i from R to S
//! per coordinate j: m_j = median of {u_{i,j} : i in S};
//!              out_j = mean of the beta = theta - 2f values of S closest to m_j
//! ```
//!
//! Choices the paper leaves open:
//! * the Krum step inside the selection uses `max(|R| - f - 2, 1)` neighbours: the last
//!   iterations have |R| < f + 3, where the paper's count would be zero or negative and every
//!   update (the Byzantine ones included) would tie at score 0;
//! * ties go to the lower site index (Krum) or the lower sorted position (closest to the
//!   median); a median of an even count is the mean of the two middle values;
//! * sample counts are ignored (see the module documentation).
//!
//! Sensitivity under [`DpRobust`](super::DpRobust), replace-one, inputs of L2 norm <= C. The
//! output is *not* a mean of whole selected vectors (each coordinate averages its own beta
//! values), so its norm can exceed C: with theta = 5, beta = 3 the clipped inputs (1,0),
//! (1,0), (0.71,0.71), (0,1), (0,1) give (0.90, 0.90), of norm 1.28 (checked in the tests).
//! Bound: for each coordinate `out_j^2 <= (1/beta) sum_{i in S_j} u_{i,j}^2` (Jensen, S_j the
//! beta chosen values) `<= (1/beta) sum_{i in S} u_{i,j}^2`, so
//! `||out||^2 <= (1/beta) sum_{i in S} ||u_i||^2 <= theta C^2 / beta`. Any two outputs are
//! within the diameter of that ball: sensitivity `2C sqrt(theta / beta)`.
use super::krum::{by_score, krum_scores};
use super::{run_plain, RobustReport, RobustRule};
use crate::error::{EngineError, Result};
use crate::strategy::{Aggregator, AggregatorKind, AggregatorReport};

/// Bulyan over Krum with f assumed Byzantine updates.
#[derive(Debug)]
pub struct Bulyan {
    f: usize,
    last: Option<RobustReport>,
}

impl Bulyan {
    pub fn new(f: usize) -> Self {
        Self { f, last: None }
    }

    /// Number of updates assumed Byzantine.
    pub fn byzantine(&self) -> usize {
        self.f
    }

    pub fn last_report(&self) -> Option<&RobustReport> {
        self.last.as_ref()
    }

    /// (theta, beta) for `n` updates, checking n >= 4f + 3.
    fn sizes(&self, n: usize) -> Result<(usize, usize)> {
        let needed = 4 * self.f + 3;
        if n < needed {
            return Err(EngineError::TooFewUpdates {
                rule: "bulyan",
                needed,
                found: n,
            });
        }
        let theta = n - 2 * self.f;
        Ok((theta, theta - 2 * self.f))
    }
}

/// Per coordinate: the mean of the `beta` values of `rows` closest to their median.
pub(super) fn closest_to_median_mean(updates: &[&[f32]], rows: &[usize], beta: usize) -> Vec<f64> {
    let theta = rows.len();
    let dim = rows.first().map_or(0, |&r| updates[r].len());
    let mut col = vec![0f64; theta];
    let mut order: Vec<usize> = (0..theta).collect();
    (0..dim)
        .map(|j| {
            for (c, &r) in col.iter_mut().zip(rows) {
                *c = updates[r][j] as f64;
            }
            col.sort_by(f64::total_cmp);
            let med = if theta % 2 == 1 {
                col[theta / 2]
            } else {
                (col[theta / 2 - 1] + col[theta / 2]) / 2.0
            };
            order.sort_by(|&a, &b| {
                (col[a] - med)
                    .abs()
                    .total_cmp(&(col[b] - med).abs())
                    .then(a.cmp(&b))
            });
            order[..beta].iter().map(|&p| col[p]).sum::<f64>() / beta as f64
        })
        .collect()
}

impl Aggregator for Bulyan {
    fn name(&self) -> &'static str {
        "bulyan"
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

impl RobustRule for Bulyan {
    fn combine(
        &mut self,
        updates: &[&[f32]],
        _clip: Option<f64>,
    ) -> Result<(Vec<f64>, RobustReport)> {
        let n = updates.len();
        let (theta, beta) = self.sizes(n)?;
        let mut remaining: Vec<usize> = (0..n).collect();
        let mut selected = Vec::with_capacity(theta);
        let mut first_scores = vec![];
        while selected.len() < theta {
            let neighbours = remaining.len().saturating_sub(self.f + 2).max(1);
            let scores = krum_scores(updates, &remaining, neighbours);
            let best = by_score(&scores)[0];
            if first_scores.is_empty() {
                first_scores = scores;
            }
            selected.push(remaining.remove(best));
        }
        selected.sort_unstable();
        let out = closest_to_median_mean(updates, &selected, beta);
        let mut report = RobustReport::new(Aggregator::name(self), n);
        report.selected = selected;
        report.scores = first_scores;
        report.trimmed_per_coordinate = theta - beta;
        Ok((out, report))
    }

    fn sensitivity(&self, n: usize, clip: f64) -> Result<f64> {
        let (theta, beta) = self.sizes(n)?;
        Ok(2.0 * clip * (theta as f64 / beta as f64).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// n = 7, f = 1 (theta = 5, beta = 3), u_k = (v_k, -v_k) with v = 0, 1, 3, 1000
    /// (Byzantine, index 3), 7, 12, 20. Squared distances are twice the 1-d ones, which does
    /// not change any ranking; in 1-d units:
    /// 1. all 7, 4 neighbours: 0 -> 1+9+49+144 = 203, 1 -> 1+4+36+121 = 162,
    ///    3 -> 4+9+16+81 = 110, 7 -> 16+25+36+49 = 126, 12 -> 25+64+81+121 = 291,
    ///    20 -> 64+169+289+361 = 883, 1000 -> ~3.9e6: pick 3 (index 2);
    /// 2. 3 neighbours: 0 -> 194, 1 -> 158, 7 -> 25+36+49 = 110, 12 -> 210, 20 -> 594: pick 7;
    /// 3. 2 neighbours: 0 -> 1+144 = 145, 1 -> 1+121 = 122, 12 -> 185, 20 -> 425: pick 1;
    /// 4. 1 neighbour: 0 -> 144, 12 -> 64, 20 -> 64: tie, pick 12 (lower index);
    /// 5. 1 neighbour: 0 -> 400, 20 -> 400: tie, pick 0.
    ///
    /// S = {0, 1, 3, 7, 12}; median 3; the 3 closest are 3, 1, 0 -> 4/3 (and -4/3).
    #[test]
    fn bulyan_n7_f1_by_hand() {
        let v = [0.0f32, 1.0, 3.0, 1000.0, 7.0, 12.0, 20.0];
        let u: Vec<[f32; 2]> = v.iter().map(|x| [*x, -*x]).collect();
        let views: Vec<&[f32]> = u.iter().map(|x| x.as_slice()).collect();
        let mut b = Bulyan::new(1);
        let out = b.aggregate(&views, &[1.0; 7]).unwrap();
        let third = (4.0f64 / 3.0) as f32;
        assert_eq!(out, vec![third, -third]);
        let r = b.last_report().unwrap();
        assert_eq!(r.selected, vec![0, 1, 2, 4, 5]);
        assert_eq!(r.trimmed_per_coordinate, 2);
        let first: Vec<f64> = r.scores.iter().map(|s| s / 2.0).collect();
        assert_eq!(&first[..3], &[203.0, 162.0, 110.0]);
        assert_eq!(&first[4..], &[126.0, 291.0, 883.0]);
    }

    #[test]
    fn refuses_too_few_updates() {
        let u = [[0.0f32]; 6];
        let views: Vec<&[f32]> = u.iter().map(|x| x.as_slice()).collect();
        assert!(matches!(
            Bulyan::new(1).aggregate(&views, &[1.0; 6]),
            Err(EngineError::TooFewUpdates {
                needed: 7,
                found: 6,
                ..
            })
        ));
        // n = 7, f = 1: theta = 5, beta = 3 -> 2C sqrt(5/3)
        let s = Bulyan::new(1).sensitivity(7, 1.0).unwrap();
        assert!((s - 2.0 * (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn output_norm_can_exceed_the_clip_norm() {
        // (1,0), (1,0), (r,r), (0,1), (0,1) with r = 1/sqrt(2), all of norm 1. Coordinate 0:
        // 0, 0, r, 1, 1, median r, closest three r, 1, 1 -> (2 + r)/3 = 0.902; coordinate 1
        // the same, so the norm is 0.902 sqrt(2) = 1.276 > 1 (<= sqrt(5/3) = 1.291).
        let r = std::f32::consts::FRAC_1_SQRT_2;
        let u: [&[f32]; 5] = [&[1.0, 0.0], &[1.0, 0.0], &[r, r], &[0.0, 1.0], &[0.0, 1.0]];
        let out = closest_to_median_mean(&u, &[0, 1, 2, 3, 4], 3);
        let norm = out.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!((out[0] - (2.0 + r as f64) / 3.0).abs() < 1e-7);
        assert!(norm > 1.27 && norm <= (5.0f64 / 3.0).sqrt());
    }

    #[test]
    fn huge_byzantine_updates_are_never_selected() {
        // n = 11, f = 2 (the minimum n for f = 2), two Byzantine updates of norm ~1.7e6
        let mut u: Vec<Vec<f32>> = (0..11)
            .map(|k| vec![0.1 * k as f32, -0.05 * k as f32, 0.2])
            .collect();
        u[4] = vec![1e6, 1e6, -1e6];
        u[7] = vec![-1e6, 5e5, 1e6];
        let views: Vec<&[f32]> = u.iter().map(Vec::as_slice).collect();
        let mut b = Bulyan::new(2);
        let out = b.aggregate(&views, &[1.0; 11]).unwrap();
        let sel = &b.last_report().unwrap().selected;
        assert_eq!(sel.len(), 7);
        assert!(!sel.contains(&4) && !sel.contains(&7));
        assert!(out.iter().all(|v| v.abs() <= 1.0));
        assert!(Bulyan::new(3).aggregate(&views, &[1.0; 11]).is_err());
    }
}
