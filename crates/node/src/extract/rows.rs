//! Building the rows once everything is read: subject references and medications resolved,
//! events sorted per patient, each subject's image chosen; then every candidate filtered by
//! the inclusion criteria, labelled, and given its features, series and image.
use crate::cohort::Instant;
use crate::features::{
    Coding, Feature, FeatureSpec, ImageSpec, LabelSource, PatientField, Source, SurvivalEvent,
    Value,
};
use std::cell::Cell;

use crate::report::{IgnoreReason, Issue, IssueKind, Report};
use crate::{SiteRows, SourceError, SubjectRow};

use super::candidates::Candidate;
use super::events::{Events, Fate};
use super::label::DEATH_UNDATED;
use super::{MediaRec, Store};

const GENDER_SYSTEM: &str = "http://hl7.org/fhir/administrative-gender";

impl Store {
    /// Read everything, then build the rows. `private` are the holder's site-private
    /// features, extracted after the study's.
    pub fn into_rows(
        mut self,
        spec: &FeatureSpec,
        features: &[Feature],
        n_private: usize,
        mut report: Report,
    ) -> Result<SiteRows, SourceError> {
        if let Some(e) = self.fatal.take() {
            return Err(e);
        }
        // subject references -> patients
        let resolve = |s: &str| -> Option<u32> {
            self.by_url.get(s).copied().or_else(|| {
                let s = s.split("/_history/").next().unwrap_or(s);
                let id = s
                    .strip_prefix("Patient/")
                    .or_else(|| s.rsplit_once("/Patient/").map(|(_, id)| id))?;
                self.by_id.get(id).copied()
            })
        };
        let patient_of: Vec<Option<u32>> = self.ref_info.iter().map(|r| resolve(&r.text)).collect();
        for (info, p) in self.ref_info.iter().zip(&patient_of) {
            // a reference met only to date a subject's activity is no record the
            // specification reads
            if p.is_none() && info.uses > 0 {
                report.issue(Issue {
                    kind: IssueKind::UnresolvedSubject,
                    file: Some(info.first.0.clone()),
                    line: Some(info.first.1),
                    resource: info.first.2.clone(),
                    detail: format!(
                        "subject {:?} names no Patient in the export ({} resources refer to it; skipped)",
                        info.text, info.uses
                    ),
                });
            }
        }
        self.resolve_medications(&mut report);
        // events per patient, in (slot, time) order; the sort is stable, so events of
        // equal time stay in source order
        let mut events = std::mem::take(&mut self.events);
        events.retain_mut(|e| match patient_of[e.subject as usize] {
            Some(p) => {
                e.subject = p;
                true
            }
            None => {
                report.ignored(
                    &self.matchers[e.slot as usize].name,
                    IgnoreReason::Unresolved,
                );
                false
            }
        });
        events.sort_by_key(|e| (e.subject, e.slot, e.time));
        for (n, e) in events.iter_mut().enumerate() {
            e.n = n as u32;
        }
        let fates = vec![Cell::new(Fate::Unread); events.len()];
        // each patient's image: its earliest dated Media, else its first undated one
        for (k, m) in self.media.iter().enumerate() {
            let Some(p) = patient_of[m.subject as usize] else {
                continue;
            };
            let key = |m: &MediaRec| (m.time.is_none(), m.time);
            match self.first_image.get(&p) {
                Some(&j) if key(&self.media[j]) <= key(m) => {}
                _ => {
                    self.first_image.insert(p, k);
                }
            }
        }
        let mut encounters: Vec<(u32, usize)> = self
            .encounters
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((patient_of[e.subject as usize]?, i)))
            .collect();
        encounters.sort_by_key(|&(p, i)| (p, self.encounters[i].start, i));
        let activity: Vec<Instant> = if self.track_activity {
            let mut a = vec![Instant::MIN; self.patients.len()];
            for (r, p) in patient_of.iter().enumerate() {
                if let Some(p) = p {
                    a[*p as usize] = a[*p as usize].max(self.activity[r]);
                }
            }
            a
        } else {
            vec![]
        };

        let n_shared = features.len() - n_private;
        let columns: Vec<String> = features[..n_shared]
            .iter()
            .flat_map(Feature::columns)
            .collect();
        let private_columns: Vec<String> = features[n_shared..]
            .iter()
            .flat_map(Feature::columns)
            .collect();
        let mut out = SiteRows {
            columns,
            private_columns,
            imputation: features[..n_shared].iter().flat_map(imputation).collect(),
            private_imputation: features[n_shared..].iter().flat_map(imputation).collect(),
            task: spec.task(),
            series: spec.series.as_ref().map(|s| crate::SeriesShape {
                steps: s.steps(),
                channels: s.channel_names(),
            }),
            image_len: spec.image.as_ref().map_or(0, ImageSpec::len),
            ..SiteRows::default()
        };

        let mut ev_lo = 0;
        let mut enc_lo = 0;
        for p in 0..self.patients.len() as u32 {
            let ev_hi = ev_lo + events[ev_lo..].partition_point(|e| e.subject == p);
            let evs = Events {
                all: &events[ev_lo..ev_hi],
                fates: &fates,
            };
            ev_lo = ev_hi;
            let enc_hi = enc_lo + encounters[enc_lo..].partition_point(|e| e.0 == p);
            let encs: Vec<usize> = encounters[enc_lo..enc_hi].iter().map(|e| e.1).collect();
            enc_lo = enc_hi;
            for c in self.candidates(spec, p, &evs, &encs, &mut report) {
                let last = activity.get(p as usize).copied();
                self.row(
                    spec,
                    features,
                    n_shared,
                    &c,
                    &evs,
                    &encs,
                    last,
                    &mut out,
                    &mut report,
                );
            }
        }
        // what matched and no row used, with the first reason a row had to set it aside;
        // events of excluded rows were read by none and are counted in `excluded` instead
        for (e, f) in events.iter().zip(&fates) {
            if let Fate::Ignored(why) = f.get() {
                report.ignored(&self.matchers[e.slot as usize].name, why);
            }
        }
        out.report = report;
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn row(
        &self,
        spec: &FeatureSpec,
        features: &[Feature],
        n_shared: usize,
        c: &Candidate,
        evs: &Events<'_>,
        encs: &[usize],
        last_activity: Option<Instant>,
        out: &mut SiteRows,
        report: &mut Report,
    ) {
        let pat = &self.patients[c.patient as usize];
        let enc = c.encounter.map(|i| &self.encounters[i]);
        let inc = &spec.cohort.include;
        let death = self.death_time(pat, encs);
        if let (Some(i), Ok(Some(d))) = (c.index, death) {
            if d <= i && spec.cohort.has_index() {
                report.exclude("died at or before the index");
                return;
            }
        }
        let age = match (pat.birth, c.index) {
            (Some(b), Some(i)) => Some(full_years(b, i)),
            _ => None,
        };
        if let Some((lo, hi)) = inc.age {
            match age {
                None => return report.exclude("no birth date for the age filter"),
                Some(a)
                    if lo.is_some_and(|l| (a as f64) < l) || hi.is_some_and(|h| a as f64 > h) =>
                {
                    return report.exclude("age outside the range")
                }
                _ => {}
            }
        }
        if let (false, Some(e)) = (inc.encounter_class.is_empty(), enc) {
            if !e
                .class
                .as_ref()
                .is_some_and(|k| inc.encounter_class.contains(k))
            {
                return report.exclude("encounter class not included");
            }
        }
        if let (Some((lo, hi)), Some(e)) = (inc.length_of_stay, enc) {
            let Some(los) = e.start.zip(e.end).map(|(s, t)| t - s) else {
                return report.exclude("encounter without a start and an end (length of stay)");
            };
            if lo.is_some_and(|l| los < l.0) || hi.is_some_and(|h| los > h.0) {
                return report.exclude("length of stay outside the range");
            }
        }
        if let Some((_, w)) = &inc.condition {
            let slot = self.slots.include.expect("inclusion matcher");
            let sel = self.select(evs, slot, Some(*w), c.index);
            if sel.is_empty() {
                return report.exclude("no qualifying condition");
            }
            sel.iter().for_each(|e| evs.used(e));
        }

        // a recorded death is the record a death label reads
        if reads_death(&spec.label.source) && !matches!(death, Ok(None)) {
            report.matched(&spec.label.name);
        }
        // label first: a row whose label cannot be decided is excluded, not dropped as
        // incomplete
        let (label, time) = match self.label(spec, c, evs, death, last_activity) {
            Ok(l) => l,
            Err(reason) => {
                if reason == DEATH_UNDATED {
                    // the label's record is there but lacks the date it needs
                    report.ignored(&spec.label.name, IgnoreReason::Undated);
                }
                return report.exclude(reason);
            }
        };

        let mut x = Vec::new();
        let mut complete = true;
        let mut missing_cols = Vec::new();
        for (k, f) in features.iter().enumerate() {
            let value = match &f.source {
                Source::Patient(PatientField::Gender) => pat.gender.as_ref().map(|g| {
                    Value::Coded(vec![Coding {
                        system: Some(GENDER_SYSTEM.to_owned()),
                        code: g.clone(),
                    }])
                }),
                Source::Patient(PatientField::Age) => age.map(Value::Integer),
                Source::Patient(PatientField::AgeAt(d)) => {
                    pat.birth.map(|b| Value::Integer(full_years(b, *d)))
                }
                Source::Patient(PatientField::Deceased) => {
                    Some(Value::Boolean(match (c.index, pat.deceased_at) {
                        (Some(i), Some(d)) => d <= i,
                        _ => pat.deceased.unwrap_or(false),
                    }))
                }
                Source::Observation(o) => {
                    let slot = self.slots.features[k].expect("feature matcher");
                    let sel = self.select(evs, slot, o.window, c.index);
                    self.aggregate(evs, &sel, o.aggregate, f.transform.unit())
                }
                Source::Condition { window, .. } | Source::Medication { window, .. } => {
                    let slot = self.slots.features[k].expect("feature matcher");
                    let sel = self.select(evs, slot, *window, c.index);
                    sel.iter().for_each(|e| evs.used(e));
                    Some(Value::Integer(sel.len() as i64))
                }
            };
            let cols = match value.map(|v| f.transform.apply(&v)) {
                Some(Ok(cols)) => cols,
                Some(Err(e)) => {
                    report.issue(Issue {
                        kind: IssueKind::ValueType,
                        file: None,
                        line: None,
                        resource: Some(format!("Patient/{}", pat.id)),
                        detail: format!("feature `{}`: {e}", f.name),
                    });
                    None
                }
                None => None,
            };
            let width = f.value_columns().len();
            match cols {
                Some(v) => {
                    x.extend(v);
                    if f.missing.indicator {
                        x.push(0.0);
                    }
                }
                None => {
                    missing_cols.extend(f.value_columns());
                    match f.missing.impute {
                        Some(_) => {
                            x.extend(std::iter::repeat_n(f32::NAN, width));
                            if f.missing.indicator {
                                x.push(1.0);
                            }
                        }
                        None => complete = false,
                    }
                }
            }
        }
        let image = match &spec.image {
            None => None,
            Some(is) => match self.image_of(c.patient, is) {
                Ok(Some(v)) => Some(v),
                Ok(None) => {
                    missing_cols.push(is.name.clone());
                    complete = false;
                    None
                }
                Err((k, e)) => {
                    let at = &self.media[k].at;
                    report.issue(Issue {
                        kind: IssueKind::Image,
                        file: Some(at.0.clone()),
                        line: Some(at.1),
                        resource: at.2.clone(),
                        detail: format!("image `{}` of Patient/{}: {e}", is.name, pat.id),
                    });
                    missing_cols.push(is.name.clone());
                    complete = false;
                    None
                }
            },
        };
        for col in missing_cols {
            *out.missing_by_column.entry(col).or_default() += 1;
        }
        if !complete {
            out.incomplete.push(pat.id.clone());
            return;
        }
        let series = spec
            .series
            .as_ref()
            .map(|s| self.series(s, evs, c.index.expect("series need an index")));
        let n_shared_cols: usize = features[..n_shared].iter().map(|f| f.columns().len()).sum();
        let private = x.split_off(n_shared_cols);
        out.rows.push(SubjectRow {
            pseudonym: pat.id.clone(),
            split: pat.split,
            features: x,
            label,
            time,
            series,
            image,
            encounter: enc.and_then(|e| e.id.clone()),
            private,
        });
    }
}

/// Whether the label (or one of its classes or labels) reads the patient's death.
fn reads_death(s: &LabelSource) -> bool {
    match s {
        LabelSource::Death { .. }
        | LabelSource::Deceased
        | LabelSource::Survival {
            event: SurvivalEvent::Death,
            ..
        } => true,
        LabelSource::FirstMatch { classes: parts, .. } | LabelSource::Labels(parts) => {
            parts.iter().any(|p| reads_death(&p.source))
        }
        _ => false,
    }
}

fn imputation(f: &Feature) -> Vec<Option<crate::features::Impute>> {
    let mut v = vec![f.missing.impute; f.value_columns().len()];
    if f.missing.indicator {
        v.push(None);
    }
    v
}

/// Full years from `birth` to `at`.
fn full_years(birth: Instant, at: Instant) -> i64 {
    use chrono::{DateTime, Datelike};
    let (Some(b), Some(a)) = (
        DateTime::from_timestamp(birth, 0),
        DateTime::from_timestamp(at, 0),
    ) else {
        return 0;
    };
    let mut years = i64::from(a.year() - b.year());
    if (a.month(), a.day()) < (b.month(), b.day()) {
        years -= 1;
    }
    years
}
