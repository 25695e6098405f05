//! Which of a site's rows train, validate and test.
//!
//! Where the records carry split tags (`meta.tag` [`super::SPLIT_TAG_SYSTEM`], or the CSV
//! `split` column) the tags decide train and test, and the engine's seeded split of the
//! tagged training rows picks the validation rows, as before. Hospital exports carry no such
//! tags, so without them the node splits the rows itself:
//!
//! - patient by patient: every row of one pseudonym (an encounter cohort has several) lands
//!   in one part, so no patient is trained on and tested on;
//! - stratified by the label where the task has classes (a patient's stratum is its most
//!   frequent class; binary and survival: whether any of its rows is positive or an event),
//!   so a rare class reaches every part; multi-label tasks are not stratified;
//! - seeded by the study: each patient's rank within its stratum is
//!   [`fl_engine::seeds::subject_seed`] of the split seed and its pseudonym, so a restarted
//!   node, or any command run later on the same records, picks the same rows whatever order
//!   the export lists them in, and an opt-out moves only the patients at a part's edge;
//! - the study's fractions: `test_fraction` of each stratum's patients test, then
//!   `validation_fraction` of the rest validate (both rounded per stratum).
//!
//! A source where some subjects carry a tag and others none is refused
//! ([`SourceError::PartlyTagged`]): a fixed test set that silently grew by the node's own
//! draw would no longer be the test set the tags promised.
use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::{impute, SiteRows, SourceError, Split, SubjectRow, Task};

/// How a site's rows are split: the study's fractions and the seed of the holder's split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitPlan {
    /// Share of the training rows (tagged) or patients (the node's own split) that validate.
    pub validation_fraction: f64,
    /// Share of the patients that test, where the records carry no split tags.
    pub test_fraction: f64,
    pub seed: u64,
}

impl SplitPlan {
    pub fn new(validation_fraction: f64, test_fraction: f64, seed: u64) -> Self {
        Self {
            validation_fraction,
            test_fraction,
            seed,
        }
    }
}

/// The part a row belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    Train,
    Validation,
    Test,
}

/// What decided train and test (shared with the gateway, which shows it per holder).
pub use ehds_core::domain::data_quality::DecidedBy;

/// Every kept row's part, in source order, and what decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    pub parts: Vec<Part>,
    pub decided_by: DecidedBy,
}

impl Assignment {
    pub fn count(&self, part: Part) -> usize {
        self.parts.iter().filter(|p| **p == part).count()
    }
}

/// `fraction` of `n`, rounded, never more than `n`.
fn share(n: usize, fraction: f64) -> usize {
    ((n as f64 * fraction).round() as usize).min(n)
}

/// The class a patient is stratified by.
fn stratum(task: Task, labels: &[u32]) -> u32 {
    match task {
        Task::Binary | Task::Survival => u32::from(labels.contains(&1)),
        Task::Multiclass { .. } => {
            let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
            for &l in labels {
                *counts.entry(l).or_default() += 1;
            }
            // most frequent, the lowest class on a tie
            counts
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                .map_or(0, |(l, _)| *l)
        }
        Task::Multilabel { .. } => 0,
    }
}

impl SiteRows {
    /// The part of every kept row under `plan` (see the module's text).
    pub fn assign(&self, plan: &SplitPlan) -> Result<Assignment, SourceError> {
        let mut tagged = BTreeMap::<&str, bool>::new();
        for r in &self.rows {
            tagged.insert(r.pseudonym.as_str(), r.split.is_some());
        }
        let untagged = tagged.values().filter(|t| !**t).count();
        if untagged == 0 && !tagged.is_empty() {
            return self.by_tags(plan);
        }
        if untagged < tagged.len() {
            return Err(SourceError::PartlyTagged {
                untagged,
                subjects: tagged.len(),
            });
        }
        Ok(self.by_node(plan))
    }

    fn by_tags(&self, plan: &SplitPlan) -> Result<Assignment, SourceError> {
        let mut parts: Vec<Part> = self
            .rows
            .iter()
            .map(|r| match r.split {
                Some(Split::Test) => Part::Test,
                _ => Part::Train,
            })
            .collect();
        let train: Vec<usize> = (0..parts.len())
            .filter(|&i| parts[i] == Part::Train)
            .collect();
        // the engine's split of the tagged training rows, as `SiteData::prepare` picks them
        let (_, val) = impute::split_indices(train.len(), plan.validation_fraction, plan.seed)?;
        for v in val {
            parts[train[v]] = Part::Validation;
        }
        Ok(Assignment {
            parts,
            decided_by: DecidedBy::Tags,
        })
    }

    fn by_node(&self, plan: &SplitPlan) -> Assignment {
        let mut labels = BTreeMap::<&str, Vec<u32>>::new();
        for r in &self.rows {
            labels
                .entry(r.pseudonym.as_str())
                .or_default()
                .push(r.label);
        }
        let mut strata = BTreeMap::<u32, Vec<(u64, &str)>>::new();
        for (p, ls) in &labels {
            let key = fl_engine::seeds::subject_seed(plan.seed, p);
            strata
                .entry(stratum(self.task, ls))
                .or_default()
                .push((key, p));
        }
        let mut part_of = HashMap::<&str, Part>::new();
        for members in strata.values_mut() {
            // ties of the 64-bit key are broken by the pseudonym, so the order is total
            members.sort_unstable();
            let n_test = share(members.len(), plan.test_fraction);
            let n_val = share(members.len() - n_test, plan.validation_fraction);
            for (i, (_, p)) in members.iter().enumerate() {
                let part = if i < n_test {
                    Part::Test
                } else if i < n_test + n_val {
                    Part::Validation
                } else {
                    Part::Train
                };
                part_of.insert(p, part);
            }
        }
        Assignment {
            parts: self
                .rows
                .iter()
                .map(|r| part_of[r.pseudonym.as_str()])
                .collect(),
            decided_by: DecidedBy::Node,
        }
    }

    /// The rows of each part under `plan`: in source order, but for the train and validation
    /// rows of a tagged source, which come in the order of the engine's split, as
    /// [`fl_engine::data::SiteData::prepare`] has them.
    pub fn train_val(&self, plan: &SplitPlan) -> Result<super::TrainValTest<'_>, SourceError> {
        let a = self.assign(plan)?;
        if a.decided_by == DecidedBy::Tags {
            let (train, test): (Vec<&SubjectRow>, Vec<&SubjectRow>) =
                self.rows.iter().partition(|r| r.split != Some(Split::Test));
            let (ti, vi) = impute::split_indices(train.len(), plan.validation_fraction, plan.seed)?;
            let pick = |idx: &[usize]| idx.iter().map(|&i| train[i]).collect::<Vec<_>>();
            return Ok((pick(&ti), pick(&vi), test));
        }
        let pick = |part: Part| -> Vec<&SubjectRow> {
            self.rows
                .iter()
                .zip(&a.parts)
                .filter(|(_, p)| **p == part)
                .map(|(r, _)| r)
                .collect()
        };
        Ok((pick(Part::Train), pick(Part::Validation), pick(Part::Test)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// `patients` patients with `per` rows each; every `positive_every`-th patient positive.
    fn site(patients: usize, per: usize, positive_every: usize) -> SiteRows {
        let mut rows = Vec::new();
        for p in 0..patients {
            for e in 0..per {
                rows.push(SubjectRow {
                    pseudonym: format!("pat-{p:04}"),
                    features: vec![p as f32],
                    label: u32::from(p % positive_every == 0),
                    encounter: Some(format!("enc-{p}-{e}")),
                    ..SubjectRow::default()
                });
            }
        }
        SiteRows {
            columns: vec!["x".into()],
            imputation: vec![None],
            rows,
            ..SiteRows::default()
        }
    }

    fn patients_of(rows: &[&SubjectRow]) -> BTreeSet<String> {
        rows.iter().map(|r| r.pseudonym.clone()).collect()
    }

    #[test]
    fn untagged_rows_split_patient_by_patient() {
        let s = site(50, 3, 4);
        let (train, val, test) = s.train_val(&SplitPlan::new(0.2, 0.2, 1)).unwrap();
        assert_eq!(train.len() + val.len() + test.len(), 150);
        let (tr, va, te) = (patients_of(&train), patients_of(&val), patients_of(&test));
        assert!(tr.is_disjoint(&va) && tr.is_disjoint(&te) && va.is_disjoint(&te));
        // every row of a patient follows it
        assert_eq!(train.len(), 3 * tr.len());
        assert_eq!(test.len(), 3 * te.len());
        assert_eq!(
            s.assign(&SplitPlan::new(0.2, 0.2, 1)).unwrap().decided_by,
            DecidedBy::Node
        );
    }

    #[test]
    fn the_split_is_stratified_and_honours_the_fractions() {
        // 100 patients, 20 positive
        let s = site(100, 1, 5);
        let (train, val, test) = s.train_val(&SplitPlan::new(0.25, 0.3, 7)).unwrap();
        let positives = |rows: &[&SubjectRow]| rows.iter().filter(|r| r.label == 1).count();
        // per stratum: test round(0.3 n), validation round(0.25 of the rest)
        assert_eq!((test.len(), positives(&test)), (30, 6));
        assert_eq!((val.len(), positives(&val)), (18, 4));
        assert_eq!((train.len(), positives(&train)), (52, 10));
        // multi-class: a patient's stratum is its most frequent class
        let mut m = site(30, 1, 1);
        m.task = Task::Multiclass { classes: 3 };
        for (i, r) in m.rows.iter_mut().enumerate() {
            r.label = (i % 3) as u32;
        }
        let (_, _, test) = m.train_val(&SplitPlan::new(0.2, 0.2, 7)).unwrap();
        for class in 0..3 {
            assert_eq!(test.iter().filter(|r| r.label == class).count(), 2);
        }
        assert_eq!(stratum(m.task, &[2, 1, 1, 2]), 1);
        assert_eq!(stratum(Task::Survival, &[0, 1, 0]), 1);
    }

    #[test]
    fn the_seed_decides_not_the_order_of_the_records() {
        let s = site(60, 2, 3);
        let plan = SplitPlan::new(0.2, 0.2, 11);
        let (_, _, test) = s.train_val(&plan).unwrap();
        let first = patients_of(&test);
        // the same seed on the records in another order: the same patients
        let mut reversed = s.clone();
        reversed.rows.reverse();
        let (_, _, again) = reversed.train_val(&plan).unwrap();
        assert_eq!(patients_of(&again), first);
        // another seed: other patients
        let (_, _, other) = s.train_val(&SplitPlan::new(0.2, 0.2, 12)).unwrap();
        assert_ne!(patients_of(&other), first);
    }

    #[test]
    fn tags_decide_where_every_subject_has_one() {
        let mut s = site(10, 2, 2);
        for r in &mut s.rows {
            let n: usize = r.pseudonym[4..].parse().unwrap();
            r.split = Some(if n < 3 { Split::Test } else { Split::Train });
        }
        let plan = SplitPlan::new(0.25, 0.5, 3);
        let a = s.assign(&plan).unwrap();
        assert_eq!(a.decided_by, DecidedBy::Tags);
        // the test fraction is the node's own: the tags' three test patients test
        assert_eq!(a.count(Part::Test), 6);
        let (train, val, test) = s.train_val(&plan).unwrap();
        assert_eq!(
            patients_of(&test),
            BTreeSet::from(["pat-0000", "pat-0001", "pat-0002"].map(String::from))
        );
        // validation comes from the tagged training rows (the engine's split of 14 rows)
        assert_eq!((train.len(), val.len()), (10, 4));
        // one subject without a tag among tagged ones: refused
        s.rows[0].split = None;
        s.rows[1].split = None;
        assert!(matches!(
            s.assign(&plan),
            Err(SourceError::PartlyTagged {
                untagged: 1,
                subjects: 10
            })
        ));
    }
}
