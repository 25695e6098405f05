//! Small-cell suppression of per-holder figures in what researchers see.
//!
//! A count between 1 and `threshold - 1` about one data holder (its training samples, its
//! opted-out subjects, the examples a metric was computed on) can single out patients, so it
//! is withheld (primary suppression). A column's total would give a lone withheld cell back
//! by subtraction, so the total is withheld too whenever the withheld cells together stay
//! below the threshold (secondary suppression). Zero is shown: it discloses nobody.
//! The HDAB sets the threshold (`federation.small_cell_threshold`, default 10, the usual
//! floor of statistical disclosure control in health statistics).
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmallCellRule {
    threshold: u64,
}

/// A column of per-holder counts as shown: each cell, and the total.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShownColumn {
    pub cells: Vec<Option<u64>>,
    pub total: Option<u64>,
}

impl SmallCellRule {
    /// `threshold` ≤ 1 disables suppression (every count is at least 1 or zero).
    pub fn new(threshold: u64) -> Self {
        Self { threshold }
    }

    pub fn threshold(self) -> u64 {
        self.threshold
    }

    /// Whether a count about one holder is too small to show.
    pub fn hides(self, count: u64) -> bool {
        count > 0 && count < self.threshold
    }

    /// `count`, unless it is too small to show.
    pub fn cell(self, count: u64) -> Option<u64> {
        (!self.hides(count)).then_some(count)
    }

    /// Per-holder counts and their total, with primary and secondary suppression.
    pub fn column(self, counts: &[u64]) -> ShownColumn {
        let cells: Vec<Option<u64>> = counts.iter().map(|&c| self.cell(c)).collect();
        let hidden: u64 = counts.iter().filter(|&&c| self.hides(c)).sum();
        let total = counts.iter().sum();
        ShownColumn {
            cells,
            total: (hidden == 0 || hidden >= self.threshold).then_some(total),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_below_the_threshold_are_withheld_zero_is_shown() {
        let rule = SmallCellRule::new(10);
        assert_eq!(rule.cell(0), Some(0));
        assert_eq!(rule.cell(1), None);
        assert_eq!(rule.cell(9), None);
        assert_eq!(rule.cell(10), Some(10));
        assert_eq!(SmallCellRule::new(1).cell(1), Some(1));
    }

    #[test]
    fn a_total_that_would_give_back_a_withheld_cell_is_withheld() {
        let rule = SmallCellRule::new(10);
        // nothing withheld: the total is shown
        assert_eq!(
            rule.column(&[12, 0, 30]),
            ShownColumn {
                cells: vec![Some(12), Some(0), Some(30)],
                total: Some(42)
            }
        );
        // one cell of 3 withheld: 45 - 12 - 30 would give it back
        assert_eq!(
            rule.column(&[12, 3, 30]),
            ShownColumn {
                cells: vec![Some(12), None, Some(30)],
                total: None
            }
        );
        // two withheld cells summing to 4: still too small
        assert_eq!(rule.column(&[12, 3, 1]).total, None);
        // withheld cells summing to 9 + 8 = 17 >= 10: the total discloses only a group of 17
        assert_eq!(rule.column(&[12, 9, 8]).total, Some(29));
    }
}
