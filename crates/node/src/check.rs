//! `ehds-node check`: what a feature specification makes of a holder's own records,
//! before the holder joins a study. Reads the local data exactly as the node agent would
//! (same reader, same code map) and summarises it as a table or as JSON: the cohort and what
//! was excluded, label balance, per-column coverage, missingness and imputation, units found
//! and converted, time-series coverage, categories read, the bad input met, the split the
//! node would use, and the warnings of [`super::preflight`]. It never contacts the gateway,
//! and nothing it prints is sent anywhere.
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::features::{FeatureSpec, Impute, Task};
use super::preflight::{Preflight, SplitCounts, Warning};
use super::report::{IgnoreReason, Report};
use super::SiteRows;

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub specification: String,
    pub task: &'static str,
    pub unit: &'static str,
    pub categories: Vec<String>,
    pub cohort: Cohort,
    /// The split the node would use: the records' tags, or its own under the study's (or
    /// `check`'s default) fractions and seed.
    pub split: SplitCounts,
    pub label: Label,
    pub columns: Vec<Column>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub private_columns: Vec<Column>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_series: Option<Series>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,
    pub input: Report,
    /// What makes a study on these records useless or misleading (stable codes).
    pub warnings: Vec<Warning>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Image {
    pub name: String,
    /// `[channels, height, width]` as declared.
    pub shape: [usize; 3],
    /// Rows considered (kept and dropped-incomplete) without a usable image.
    pub missing: usize,
    /// Images that were found but could not be used (the `image` input issues).
    pub unusable: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cohort {
    /// Rows the specification keeps (the training data, before opt-outs).
    pub rows: usize,
    pub train: usize,
    pub test: usize,
    pub untagged: usize,
    /// Rows dropped because a feature without an imputation policy was missing.
    pub dropped_incomplete: usize,
    /// Rows the cohort definition excluded, per reason.
    pub excluded: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Label {
    pub name: String,
    /// Binary: rows per label value; multi-class: rows per class; multi-label: positive rows
    /// per label; survival: events and censored rows.
    pub counts: BTreeMap<String, usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_follow_up_days: Option<f32>,
    /// Records matching the label's (or its classes' or labels') codes.
    pub matched: u64,
    /// Of those, and of the label's patient facts, what did not count, per reason.
    pub ignored: BTreeMap<IgnoreReason, u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub name: String,
    /// Share of the rows considered (kept and dropped-incomplete) that had a value.
    pub coverage: f64,
    pub missing: usize,
    /// `drop`, `mean`, `median` or `constant`.
    pub missing_policy: String,
    /// Values imputed (kept rows only).
    pub imputed: usize,
    pub mean: Option<f64>,
    /// Records matching the codes of the feature this column reads.
    pub matched: u64,
    /// Of those, the ones that did not count, per reason.
    pub ignored: BTreeMap<IgnoreReason, u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub steps: usize,
    /// Per channel, the share of bins with an Observation.
    pub observed: BTreeMap<String, f64>,
}

fn policy(p: &Option<Impute>) -> String {
    match p {
        None => "drop".into(),
        Some(Impute::Mean) => "mean".into(),
        Some(Impute::Median) => "median".into(),
        Some(Impute::Constant(v)) => format!("constant {v}"),
    }
}

fn columns(
    names: &[String],
    policies: &[Option<Impute>],
    rows: &SiteRows,
    value: impl Fn(&super::SubjectRow, usize) -> f32,
) -> Vec<Column> {
    let considered = rows.rows.len() + rows.incomplete.len();
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let missing = rows.missing_by_column.get(name).copied().unwrap_or(0);
            let vals: Vec<f64> = rows
                .rows
                .iter()
                .map(|r| f64::from(value(r, i)))
                .filter(|v| !v.is_nan())
                .collect();
            // a one-hot column `name=value` and an indicator `name#missing` read `name`
            let feature = name.split(['=', '#']).next().unwrap_or(name);
            Column {
                matched: rows.report.matched.get(feature).copied().unwrap_or(0),
                ignored: rows
                    .report
                    .ignored
                    .get(feature)
                    .cloned()
                    .unwrap_or_default(),
                name: name.clone(),
                coverage: if considered == 0 {
                    0.0
                } else {
                    1.0 - missing as f64 / considered as f64
                },
                missing,
                missing_policy: policy(&policies.get(i).copied().flatten()),
                imputed: rows.rows.len() - vals.len(),
                mean: (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64),
            }
        })
        .collect()
}

/// The names the label's records are counted under: its own, and `label/part` for each of
/// its classes or labels.
fn label_names<'r>(report: &'r Report, label: &'r str) -> impl Iterator<Item = &'r String> {
    report
        .matched
        .keys()
        .chain(report.ignored.keys())
        .filter(move |n| {
            n.as_str() == label
                || n.strip_prefix(label)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
}

/// `undated 3, status 1`.
fn reasons(ignored: &BTreeMap<IgnoreReason, u64>) -> String {
    ignored
        .iter()
        .map(|(k, n)| {
            let k = serde_json::to_value(k)
                .ok()
                .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
                .unwrap_or_default();
            format!("{k} {n}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Check {
    /// The check under `check`'s defaults (see [`Preflight`]).
    pub fn new(spec: &FeatureSpec, rows: SiteRows) -> Self {
        Self::with(spec, rows, &Preflight::default())
    }

    pub fn with(spec: &FeatureSpec, rows: SiteRows, preflight: &Preflight) -> Self {
        let (split, mut warnings) = super::preflight::split(&rows, &preflight.plan);
        let count = |s| rows.rows.iter().filter(|r| r.split == s).count();
        let mut counts = BTreeMap::new();
        let mut median = None;
        match rows.task {
            Task::Binary => {
                for r in &rows.rows {
                    *counts.entry(r.label.to_string()).or_default() += 1;
                }
            }
            Task::Multiclass { .. } => {
                let names = spec.label.target_names();
                for r in &rows.rows {
                    let name = names.get(r.label as usize).cloned();
                    *counts
                        .entry(name.unwrap_or_else(|| r.label.to_string()))
                        .or_default() += 1;
                }
            }
            Task::Multilabel { .. } => {
                // positives per label
                for (k, name) in spec.label.target_names().into_iter().enumerate() {
                    let n = rows.rows.iter().filter(|r| r.label >> k & 1 == 1).count();
                    counts.insert(name, n);
                }
            }
            Task::Survival => {
                let events = rows.rows.iter().filter(|r| r.label == 1).count();
                counts.insert("event".into(), events);
                counts.insert("censored".into(), rows.rows.len() - events);
                let mut t: Vec<f32> = rows.rows.iter().filter_map(|r| r.time).collect();
                t.sort_by(f32::total_cmp);
                median = t.get(t.len() / 2).copied();
            }
        }
        let time_series = rows.series.as_ref().map(|shape| {
            let k = shape.channels.len();
            let observed = shape
                .channels
                .iter()
                .enumerate()
                .map(|(c, name)| {
                    let (seen, all) = rows.rows.iter().filter_map(|r| r.series.as_ref()).fold(
                        (0usize, 0usize),
                        |(s, a), series| {
                            let hits = series.mask.iter().skip(c).step_by(k).filter(|m| **m == 1);
                            (s + hits.count(), a + shape.steps)
                        },
                    );
                    (
                        name.clone(),
                        if all == 0 {
                            0.0
                        } else {
                            seen as f64 / all as f64
                        },
                    )
                })
                .collect();
            Series {
                steps: shape.steps,
                observed,
            }
        });
        warnings.extend(super::preflight::label(
            &spec.label.name,
            rows.task,
            &counts,
            preflight.small_cell,
        ));
        warnings.extend(super::preflight::constant_columns(
            &rows.columns,
            &rows,
            |r, i| r.features[i],
        ));
        warnings.extend(super::preflight::constant_columns(
            &rows.private_columns,
            &rows,
            |r, i| r.private[i],
        ));
        warnings.extend(super::preflight::input(
            &rows.report,
            preflight.ignored_share,
        ));
        let image = spec.image.as_ref().map(|i| Image {
            name: i.name.clone(),
            shape: [i.channels, i.height, i.width],
            missing: rows.missing_by_column.get(&i.name).copied().unwrap_or(0),
            unusable: rows.report.count(super::report::IssueKind::Image),
        });
        Self {
            specification: spec.name.clone(),
            task: match rows.task {
                Task::Binary => "binary",
                Task::Multiclass { .. } => "multiclass",
                Task::Multilabel { .. } => "multilabel",
                Task::Survival => "survival",
            },
            unit: match spec.cohort.unit {
                super::cohort::Unit::Patient => "patient",
                super::cohort::Unit::Encounter => "encounter",
            },
            categories: spec.categories().into_iter().collect(),
            cohort: Cohort {
                rows: rows.rows.len(),
                train: count(Some(super::Split::Train)),
                test: count(Some(super::Split::Test)),
                untagged: count(None),
                dropped_incomplete: rows.incomplete.len(),
                excluded: rows.report.excluded.clone(),
            },
            split,
            label: Label {
                name: spec.label.name.clone(),
                counts,
                median_follow_up_days: median,
                matched: label_names(&rows.report, &spec.label.name)
                    .filter_map(|n| rows.report.matched.get(n))
                    .sum(),
                ignored: label_names(&rows.report, &spec.label.name)
                    .filter_map(|n| rows.report.ignored.get(n))
                    .flatten()
                    .fold(BTreeMap::new(), |mut m, (k, n)| {
                        *m.entry(*k).or_default() += n;
                        m
                    }),
            },
            columns: columns(&rows.columns, &rows.imputation, &rows, |r, i| r.features[i]),
            private_columns: columns(
                &rows.private_columns,
                &rows.private_imputation,
                &rows,
                |r, i| r.private[i],
            ),
            time_series,
            image,
            input: rows.report,
            warnings,
        }
    }

    /// The report as a plain-text table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let c = &self.cohort;
        let _ = writeln!(
            s,
            "specification  {} ({} task, one row per {})",
            self.specification, self.task, self.unit
        );
        let _ = writeln!(s, "categories     {}", self.categories.join(", "));
        let _ = writeln!(
            s,
            "input          {} files, {} entries; resources: {}",
            self.input.files.len(),
            self.input.entries,
            self.input
                .resources
                .iter()
                .map(|(t, n)| format!("{t} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            s,
            "cohort         {} rows (train {}, test {}, untagged {}); {} dropped for a missing input",
            c.rows, c.train, c.test, c.untagged, c.dropped_incomplete
        );
        for (reason, n) in &c.excluded {
            let _ = writeln!(s, "  excluded     {n:>6}  {reason}");
        }
        let sp = &self.split;
        let _ = match (sp.decided_by, &sp.refused) {
            (_, Some(why)) => writeln!(s, "split          refused: {why}"),
            (by, None) => writeln!(
                s,
                "split          train {}, validation {}, test {} rows ({})",
                sp.train,
                sp.validation,
                sp.test,
                match by {
                    Some(super::DecidedBy::Tags) => format!(
                        "the records' split tags; validation {} of the training rows, seed {}",
                        sp.validation_fraction, sp.seed
                    ),
                    _ => format!(
                        "the node's own split by patient: test {}, validation {} of the rest, \
                         stratified by the label, seed {}",
                        sp.test_fraction, sp.validation_fraction, sp.seed
                    ),
                }
            ),
        };
        let _ = writeln!(
            s,
            "label          {}: {}{}",
            self.label.name,
            self.label
                .counts
                .iter()
                .map(|(k, n)| format!("{k} = {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            self.label
                .median_follow_up_days
                .map(|d| format!("; median follow-up {d:.1} days"))
                .unwrap_or_default()
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:<28} {:>8} {:>8} {:>10} {:>8} {:>10}  units (found -> converted)",
            "column", "coverage", "missing", "policy", "imputed", "mean"
        );
        for (private, col) in self
            .columns
            .iter()
            .map(|c| (false, c))
            .chain(self.private_columns.iter().map(|c| (true, c)))
        {
            let base = col.name.split(['=', '#']).next().unwrap_or(&col.name);
            let units = (!col.name.contains('#'))
                .then(|| self.input.units.get(base))
                .flatten()
                .map(|u| {
                    format!(
                        "{} -> {} ({} converted, {} refused)",
                        u.found
                            .iter()
                            .map(|(k, n)| format!("{k} x{n}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        u.target.as_deref().unwrap_or("as is"),
                        u.converted,
                        u.refused
                    )
                })
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "{:<28} {:>7.1}% {:>8} {:>10} {:>8} {:>10}  {}",
                format!("{}{}", col.name, if private { " (private)" } else { "" }),
                100.0 * col.coverage,
                col.missing,
                col.missing_policy,
                col.imputed,
                col.mean
                    .map(|m| format!("{m:.3}"))
                    .unwrap_or_else(|| "-".into()),
                units
            );
        }
        // every feature, channel, label and cohort criterion that reads records: what matched
        // and what of it did not count, so a column of zeros is never mistaken for clean
        let names: std::collections::BTreeSet<&String> = self
            .input
            .matched
            .keys()
            .chain(self.input.ignored.keys())
            .collect();
        if !names.is_empty() {
            let _ = writeln!(s);
            let _ = writeln!(
                s,
                "{:<28} {:>8}  not counted, per reason",
                "records of", "matched"
            );
            for name in names {
                let matched = self.input.matched.get(name).copied().unwrap_or(0);
                let ignored = self.input.ignored.get(name).cloned().unwrap_or_default();
                let _ = writeln!(
                    s,
                    "{name:<28} {matched:>8}  {}",
                    if ignored.is_empty() {
                        "-".into()
                    } else {
                        reasons(&ignored)
                    }
                );
            }
        }
        if let Some(ts) = &self.time_series {
            let _ = writeln!(s);
            let _ = writeln!(s, "time series    {} bins per row", ts.steps);
            for (name, share) in &ts.observed {
                let _ = writeln!(s, "  {name:<26} {:>6.1}% of bins observed", 100.0 * share);
            }
        }
        if let Some(i) = &self.image {
            let [c, h, w] = i.shape;
            let _ = writeln!(s);
            let _ = writeln!(
                s,
                "image          {} ({c} x {h} x {w}): {} rows without a usable one, {} found \
                 but unusable",
                i.name, i.missing, i.unusable
            );
        }
        let _ = writeln!(s);
        if self.input.issues.is_empty() {
            let _ = writeln!(s, "input issues   none");
        } else {
            let _ = writeln!(s, "input issues");
            for (kind, n) in &self.input.issues {
                let _ = writeln!(
                    s,
                    "  {:<22} {n:>8}{}",
                    serde_json::to_value(kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    if kind.informational() {
                        "  (informational)"
                    } else {
                        ""
                    }
                );
            }
            for e in &self.input.examples {
                if e.kind.informational() {
                    continue;
                }
                let _ = writeln!(
                    s,
                    "    {}{}{}: {}",
                    e.file.as_deref().unwrap_or(""),
                    e.line.map(|l| format!(" line {l}")).unwrap_or_default(),
                    e.resource
                        .as_deref()
                        .map(|r| format!(" {r}"))
                        .unwrap_or_default(),
                    e.detail
                );
            }
        }
        let _ = writeln!(s);
        if self.warnings.is_empty() {
            let _ = writeln!(s, "warnings       none");
        } else {
            let _ = writeln!(s, "warnings");
            for w in &self.warnings {
                let _ = writeln!(s, "  {:<18} {}: {}", w.code.as_str(), w.subject, w.detail);
            }
        }
        s
    }
}
