//! The cohort's candidate rows: one per patient, at its index event (none, a date, the first
//! qualifying condition or encounter), or one per encounter, at admission or discharge.
use crate::cohort::{IndexEvent, Instant};
use crate::features::FeatureSpec;
use crate::report::{IgnoreReason, Report};

use super::events::Events;
use super::Store;

/// One candidate row: a patient, maybe one of its encounters, and the index.
pub(super) struct Candidate {
    pub(super) patient: u32,
    pub(super) encounter: Option<usize>,
    pub(super) index: Option<Instant>,
}

impl Store {
    pub(super) fn candidates(
        &self,
        spec: &FeatureSpec,
        p: u32,
        evs: &Events<'_>,
        encs: &[usize],
        report: &mut Report,
    ) -> Vec<Candidate> {
        let one = |index| {
            vec![Candidate {
                patient: p,
                encounter: None,
                index,
            }]
        };
        match (&spec.cohort.index, spec.cohort.unit) {
            (IndexEvent::None, _) => one(None),
            (IndexEvent::Date(d), _) => one(Some(*d)),
            (IndexEvent::FirstCondition(_), _) => {
                let slot = self.slots.index.expect("index matcher");
                // an undated one cannot date the index; the first dated one does
                let all = evs.of(slot);
                all.iter()
                    .filter(|e| e.time.is_none())
                    .for_each(|e| evs.ignore(e, IgnoreReason::Undated));
                let first = all.iter().find(|e| e.time.is_some());
                first.inspect(|e| evs.used(e));
                match first.and_then(|e| e.time) {
                    Some(t) => one(Some(t)),
                    None => {
                        report.exclude("no qualifying condition for the index");
                        vec![]
                    }
                }
            }
            (IndexEvent::FirstEncounter(classes), _) => {
                let first = encs.iter().find_map(|&i| {
                    let e = &self.encounters[i];
                    let ok =
                        classes.is_empty() || e.class.as_ref().is_some_and(|c| classes.contains(c));
                    ok.then_some(e.start).flatten()
                });
                match first {
                    Some(t) => one(Some(t)),
                    None => {
                        report.exclude("no qualifying encounter for the index");
                        vec![]
                    }
                }
            }
            (IndexEvent::Admission | IndexEvent::Discharge, _) => encs
                .iter()
                .filter_map(|&i| {
                    let e = &self.encounters[i];
                    let index = if spec.cohort.index == IndexEvent::Admission {
                        e.start
                    } else {
                        e.end
                    };
                    if index.is_none() {
                        report.exclude(if spec.cohort.index == IndexEvent::Admission {
                            "encounter without a start"
                        } else {
                            "encounter without an end"
                        });
                        return None;
                    }
                    Some(Candidate {
                        patient: p,
                        encounter: Some(i),
                        index,
                    })
                })
                .collect(),
        }
    }
}
