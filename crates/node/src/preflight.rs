//! The warnings of `ehds-node check`: what makes a study on these records useless or
//! misleading before it starts. Each has a stable code (scripts and `--strict` rely on it), the
//! feature, label class or split part it concerns, and a sentence for the holder.
//!
//! | code | when |
//! |---|---|
//! | `single_class` | a binary or multi-class label takes one value at the site |
//! | `small_class` | a label class (survival: events or censored rows) below the small-cell threshold |
//! | `constant_feature` | a column has one value in every row that has one |
//! | `ignored_matches` | more than a share of the resources matching a feature did not count |
//! | `unit_display_text` | a quantity's unit is only display text, without a UCUM code |
//! | `partly_tagged` | some subjects carry a split tag, others none: the node refuses the split |
//! | `empty_part` | the split leaves the train, validation or test part without rows |
use std::collections::BTreeMap;

use ehds_core::domain::data_quality::{DataQuality, FeatureQuality};
use ehds_core::domain::small_cell::SmallCellRule;
use ehds_core::domain::study::{DEFAULT_TEST_FRACTION, DEFAULT_VALIDATION_FRACTION};
use serde::Serialize;

use super::features::Task;
use super::{DecidedBy, Part, SiteRows, SourceError, SplitPlan};

/// The HDAB's default small-cell threshold (`federation.small_cell_threshold`).
pub const DEFAULT_SMALL_CELL_THRESHOLD: u64 = 10;

/// The share of a feature's matches that may be set aside before `ignored_matches` warns.
pub const DEFAULT_IGNORED_SHARE: f64 = 0.25;

pub use ehds_core::domain::data_quality::WarningCode;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub code: WarningCode,
    /// The feature, `label=class` or split part concerned.
    pub subject: String,
    pub detail: String,
}

/// What `check` assumes in place of a study: the split it would use and the thresholds of
/// its warnings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Preflight {
    pub plan: SplitPlan,
    pub small_cell: SmallCellRule,
    pub ignored_share: f64,
}

impl Default for Preflight {
    fn default() -> Self {
        Self {
            plan: SplitPlan::new(DEFAULT_VALIDATION_FRACTION, DEFAULT_TEST_FRACTION, 0),
            small_cell: SmallCellRule::new(DEFAULT_SMALL_CELL_THRESHOLD),
            ignored_share: DEFAULT_IGNORED_SHARE,
        }
    }
}

/// The split `check` would use, in rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SplitCounts {
    /// `tags` or `node`; absent when the split is refused.
    pub decided_by: Option<DecidedBy>,
    pub train: usize,
    pub validation: usize,
    pub test: usize,
    pub validation_fraction: f64,
    pub test_fraction: f64,
    pub seed: u64,
    /// Why the node would refuse to split these records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// The split of `rows` under `plan`, and the warnings it raises.
pub fn split(rows: &SiteRows, plan: &SplitPlan) -> (SplitCounts, Vec<Warning>) {
    let mut counts = SplitCounts {
        decided_by: None,
        train: 0,
        validation: 0,
        test: 0,
        validation_fraction: plan.validation_fraction,
        test_fraction: plan.test_fraction,
        seed: plan.seed,
        refused: None,
    };
    let mut warnings = Vec::new();
    match rows.assign(plan) {
        Ok(a) => {
            counts.decided_by = Some(a.decided_by);
            counts.train = a.count(Part::Train);
            counts.validation = a.count(Part::Validation);
            counts.test = a.count(Part::Test);
            if !rows.rows.is_empty() {
                for (part, n) in [
                    ("train", counts.train),
                    ("validation", counts.validation),
                    ("test", counts.test),
                ] {
                    if n == 0 {
                        warnings.push(Warning {
                            code: WarningCode::EmptyPart,
                            subject: part.into(),
                            detail: format!("the {part} part has no rows"),
                        });
                    }
                }
            }
        }
        Err(e) => {
            let code = match e {
                SourceError::PartlyTagged { .. } => WarningCode::PartlyTagged,
                _ => WarningCode::EmptyPart,
            };
            warnings.push(Warning {
                code,
                subject: "split".into(),
                detail: e.to_string(),
            });
            counts.refused = Some(e.to_string());
        }
    }
    (counts, warnings)
}

/// The label's warnings from its counts (class name -> rows, as `check` shows them).
pub fn label(
    name: &str,
    task: Task,
    counts: &BTreeMap<String, usize>,
    rule: SmallCellRule,
) -> Vec<Warning> {
    let mut out = Vec::new();
    let present = counts.values().filter(|n| **n > 0).count();
    if matches!(task, Task::Binary | Task::Multiclass { .. }) && present == 1 {
        let (class, n) = counts.iter().find(|(_, n)| **n > 0).expect("one class");
        out.push(Warning {
            code: WarningCode::SingleClass,
            subject: name.to_owned(),
            detail: format!(
                "every one of the {n} rows has class `{class}`: this site cannot teach a model \
                 to tell the classes apart, and its metrics are undefined"
            ),
        });
    }
    for (class, &n) in counts {
        if rule.hides(n as u64) {
            out.push(Warning {
                code: WarningCode::SmallClass,
                subject: format!("{name}={class}"),
                detail: format!(
                    "{n} rows, below the small-cell threshold of {}: the gateway withholds \
                     figures this small and a model learns little from them",
                    rule.threshold()
                ),
            });
        }
    }
    out
}

/// Columns with one value in every kept row that has one.
pub fn constant_columns(
    names: &[String],
    rows: &SiteRows,
    value: impl Fn(&super::SubjectRow, usize) -> f32,
) -> Vec<Warning> {
    names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let mut seen = rows
                .rows
                .iter()
                .map(|r| value(r, i))
                .filter(|v| !v.is_nan());
            let first = seen.next()?;
            seen.all(|v| v == first).then(|| Warning {
                code: WarningCode::ConstantFeature,
                subject: name.clone(),
                detail: format!(
                    "{first} in every row that has a value: it carries nothing at this site"
                ),
            })
        })
        .collect()
}

/// Features whose matching resources were set aside beyond `share`, and units read only from
/// their display text.
pub fn input(report: &super::report::Report, share: f64) -> Vec<Warning> {
    let mut out = Vec::new();
    for (name, &matched) in &report.matched {
        let ignored = report.ignored_total(name);
        if matched > 0 && ignored as f64 > share * matched as f64 {
            let reasons = report
                .ignored
                .get(name)
                .into_iter()
                .flatten()
                .map(|(reason, n)| {
                    let reason = serde_json::to_value(reason)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default();
                    format!("{reason} {n}")
                })
                .collect::<Vec<_>>()
                .join(", ");
            out.push(Warning {
                code: WarningCode::IgnoredMatches,
                subject: name.clone(),
                detail: format!(
                    "{ignored} of {matched} matching resources did not count ({reasons}), more \
                     than {:.0}%",
                    100.0 * share
                ),
            });
        }
    }
    for (name, stats) in &report.units {
        for (text, t) in &stats.text_only {
            let how = match (&t.read_as, t.refused) {
                (_, r) if r == t.values => "refused: no unit that converts".to_owned(),
                (Some(ucum), 0) => format!("read as UCUM `{ucum}`"),
                (Some(ucum), r) => format!("read as UCUM `{ucum}`, {r} refused"),
                (None, _) => "read as it is: the feature names no unit".to_owned(),
            };
            out.push(Warning {
                code: WarningCode::UnitDisplayText,
                subject: name.clone(),
                detail: format!(
                    "unit `{text}` on {} values is display text without a UCUM code; {how}",
                    t.values
                ),
            });
        }
    }
    out
}

/// Rows per label class by value: binary and multi-class by class index, multi-label
/// positives per label bit, survival events and censored rows.
fn label_counts(rows: &SiteRows) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    match rows.task {
        Task::Binary | Task::Multiclass { .. } => {
            for r in &rows.rows {
                *counts.entry(r.label.to_string()).or_default() += 1;
            }
        }
        Task::Multilabel { labels } => {
            for k in 0..labels {
                let n = rows.rows.iter().filter(|r| r.label >> k & 1 == 1).count();
                counts.insert(k.to_string(), n);
            }
        }
        Task::Survival => {
            let events = rows.rows.iter().filter(|r| r.label == 1).count();
            counts.insert("event".into(), events);
            counts.insert("censored".into(), rows.rows.len() - events);
        }
    }
    counts
}

/// The summary a node sends with its task results: the preflight's warnings as flags, and per
/// study column (site-private ones stay out) its missing, matched and ignored counts, with
/// the counts `preflight.small_cell` withholds already `null`.
pub fn data_quality(rows: &SiteRows, preflight: &Preflight) -> DataQuality {
    let (counts, mut general) = split(rows, &preflight.plan);
    general.extend(label(
        "label",
        rows.task,
        &label_counts(rows),
        preflight.small_cell,
    ));
    let mut per_column = constant_columns(&rows.columns, rows, |r, i| r.features[i]);
    per_column.extend(input(&rows.report, preflight.ignored_share));
    let codes = |ws: &mut dyn Iterator<Item = &Warning>| {
        let mut c: Vec<WarningCode> = ws.map(|w| w.code).collect();
        c.sort();
        c.dedup();
        c
    };
    let features = rows
        .columns
        .iter()
        .map(|name| {
            // a one-hot column `name=value` and an indicator `name#missing` read `name`
            let base = name.split(['=', '#']).next().unwrap_or(name);
            let about = |w: &&Warning| w.subject == *name || w.subject == base;
            FeatureQuality {
                name: name.clone(),
                missing: Some(rows.missing_by_column.get(name).copied().unwrap_or(0) as u64),
                matched: Some(rows.report.matched.get(base).copied().unwrap_or(0)),
                ignored: Some(rows.report.ignored_total(base)),
                flags: codes(&mut per_column.iter().filter(about)),
            }
        })
        .collect();
    DataQuality {
        split: counts.decided_by,
        flags: codes(&mut general.iter()),
        features,
    }
    .shown(preflight.small_cell)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{IgnoreReason, Report, TextUnit, UnitStats};
    use crate::{Split, SubjectRow};

    fn rows(labels: &[u32], x: &[f32]) -> SiteRows {
        SiteRows {
            columns: vec!["x".into()],
            imputation: vec![None],
            rows: labels
                .iter()
                .zip(x)
                .enumerate()
                .map(|(i, (&label, &v))| SubjectRow {
                    pseudonym: format!("p{i}"),
                    features: vec![v],
                    label,
                    ..SubjectRow::default()
                })
                .collect(),
            ..SiteRows::default()
        }
    }

    fn codes(w: &[Warning]) -> Vec<(WarningCode, &str)> {
        w.iter().map(|w| (w.code, w.subject.as_str())).collect()
    }

    #[test]
    fn label_warnings_single_class_and_small_class() {
        let rule = SmallCellRule::new(10);
        let one = BTreeMap::from([("0".to_owned(), 40)]);
        assert_eq!(
            codes(&label("death", Task::Binary, &one, rule)),
            [(WarningCode::SingleClass, "death")]
        );
        let rare = BTreeMap::from([("0".to_owned(), 40), ("1".to_owned(), 3)]);
        assert_eq!(
            codes(&label("death", Task::Binary, &rare, rule)),
            [(WarningCode::SmallClass, "death=1")]
        );
        // survival: too few events; a balanced label is clean
        let events = BTreeMap::from([("event".to_owned(), 2), ("censored".to_owned(), 50)]);
        assert_eq!(
            codes(&label("t", Task::Survival, &events, rule)),
            [(WarningCode::SmallClass, "t=event")]
        );
        let fine = BTreeMap::from([("0".to_owned(), 40), ("1".to_owned(), 30)]);
        assert!(label("death", Task::Binary, &fine, rule).is_empty());
    }

    #[test]
    fn a_constant_column_warns_missing_values_aside() {
        let r = rows(&[0, 1, 0], &[2.0, f32::NAN, 2.0]);
        let w = constant_columns(&r.columns, &r, |r, i| r.features[i]);
        assert_eq!(codes(&w), [(WarningCode::ConstantFeature, "x")]);
        let r = rows(&[0, 1], &[2.0, 3.0]);
        assert!(constant_columns(&r.columns, &r, |r, i| r.features[i]).is_empty());
    }

    #[test]
    fn ignored_matches_and_display_text_units() {
        let mut report = Report::default();
        for _ in 0..10 {
            report.matched("lactate");
            report.matched("sbp");
        }
        for _ in 0..3 {
            report.ignored("lactate", IgnoreReason::OutsideWindow);
        }
        report.ignored("sbp", IgnoreReason::Unit);
        report.units.insert(
            "sbp".into(),
            UnitStats {
                text_only: BTreeMap::from([(
                    "mm Hg".to_owned(),
                    TextUnit {
                        values: 4,
                        read_as: Some("mm[Hg]".into()),
                        refused: 0,
                    },
                )]),
                ..UnitStats::default()
            },
        );
        let w = input(&report, 0.25);
        assert_eq!(
            codes(&w),
            [
                (WarningCode::IgnoredMatches, "lactate"),
                (WarningCode::UnitDisplayText, "sbp")
            ]
        );
        assert!(w[0].detail.contains("outside_window 3"), "{}", w[0].detail);
        assert!(w[1].detail.contains("`mm[Hg]`"), "{}", w[1].detail);
    }

    #[test]
    fn the_data_quality_summary_carries_flags_and_withholds_small_counts() {
        // 30 patients, 3 positive; x constant; 4 values of x missing
        let labels: Vec<u32> = (0..30).map(|i| u32::from(i < 3)).collect();
        let mut r = rows(&labels, &[5.0; 30]);
        r.missing_by_column.insert("x".into(), 4);
        for _ in 0..40 {
            r.report.matched("x");
        }
        for _ in 0..20 {
            r.report.ignored("x", IgnoreReason::Undated);
        }
        let q = data_quality(&r, &Preflight::default());
        assert_eq!(q.split, Some(DecidedBy::Node));
        assert_eq!(q.flags, [WarningCode::SmallClass]);
        let x = &q.features[0];
        assert_eq!(
            x.flags,
            [WarningCode::ConstantFeature, WarningCode::IgnoredMatches]
        );
        // 4 missing is below the threshold of 10: withheld; 40 and 20 are shown
        assert_eq!(
            (x.missing, x.matched, x.ignored),
            (None, Some(40), Some(20))
        );
    }

    #[test]
    fn the_split_shows_what_decided_it_and_refuses_a_partly_tagged_source() {
        let mut r = rows(&[0, 1, 0, 1, 0, 1, 0, 1, 0, 1], &[1.0; 10]);
        let plan = SplitPlan::new(0.2, 0.2, 5);
        let (counts, w) = split(&r, &plan);
        assert_eq!(counts.decided_by, Some(DecidedBy::Node));
        assert_eq!((counts.train, counts.validation, counts.test), (6, 2, 2));
        assert!(w.is_empty(), "{w:?}");
        r.rows[0].split = Some(Split::Train);
        let (counts, w) = split(&r, &plan);
        assert_eq!(counts.decided_by, None);
        assert_eq!(codes(&w), [(WarningCode::PartlyTagged, "split")]);
        for row in &mut r.rows {
            row.split = Some(Split::Train);
        }
        let (counts, w) = split(&r, &plan);
        assert_eq!(counts.decided_by, Some(DecidedBy::Tags));
        assert_eq!(codes(&w), [(WarningCode::EmptyPart, "test")]);
    }
}
