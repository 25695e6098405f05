//! Conditions: each matching one becomes an event of its subject, dated by its onset (else
//! its recorded date). A refuted or entered-in-error one is counted and set aside; an undated
//! one is placed at the index when its clinical status is active, recurrence or relapse.
use crate::reader::At;
use crate::report::{IgnoreReason, Report};
use crate::resource::Raw;

use super::{EvValue, Event, Family, Place, Store};

impl Store {
    pub(super) fn condition(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        let slots = self.matching(Family::Condition, r.code.as_ref(), None);
        if slots.is_empty() {
            return;
        }
        let rid = r.id.as_deref().map(|i| format!("Condition/{i}"));
        if self.duplicate(&at, "Condition", r.id.as_deref(), report) {
            return;
        }
        self.matched(&slots, report);
        let void = r.verification_status.as_ref().is_some_and(|v| {
            v.codings()
                .any(|(_, c)| matches!(c, "refuted" | "entered-in-error"))
        });
        if void {
            return self.ignored(&slots, IgnoreReason::Status, report);
        }
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return self.ignored(&slots, IgnoreReason::Unresolved, report);
        };
        let when = r
            .onset_date_time
            .as_deref()
            .or(r.onset_period.as_ref().and_then(|p| p.start.as_deref()))
            .or(r.recorded_date.as_deref());
        let time = Self::time(&at, "onset[x]", when, &rid, report);
        // an undated entry of the problem list is as current as its clinical status says
        let place = match (when, r.clinical_status.as_ref()) {
            (Some(_), _) | (None, None) => Place::Unknown,
            (None, Some(s)) => {
                if s.codings()
                    .any(|(_, c)| matches!(c, "active" | "recurrence" | "relapse"))
                {
                    Place::AtIndex
                } else {
                    Place::Inactive
                }
            }
        };
        self.touch(subject, time);
        for slot in slots {
            self.events.push(Event {
                subject,
                slot: slot as u16,
                time,
                place,
                value: EvValue::None,
                n: 0,
            });
        }
    }

    /// Each of `slots` matched one more record.
    pub(super) fn matched(&self, slots: &[usize], report: &mut Report) {
        for &s in slots {
            report.matched(&self.matchers[s].name);
        }
    }

    /// The record that matched `slots` does not count, for `why`.
    pub(super) fn ignored(&self, slots: &[usize], why: IgnoreReason, report: &mut Report) {
        for &s in slots {
            report.ignored(&self.matchers[s].name, why);
        }
    }
}
