//! Conditions: each matching, non-refuted one becomes a dated event of its subject.
use crate::reader::At;
use crate::report::Report;
use crate::resource::Raw;

use super::{EvValue, Event, Family, Store};

impl Store {
    pub(super) fn condition(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        let void = r.verification_status.as_ref().is_some_and(|v| {
            v.codings()
                .any(|(_, c)| matches!(c, "refuted" | "entered-in-error"))
        });
        if void {
            return;
        }
        let slots = self.matching(Family::Condition, r.code.as_ref(), None);
        if slots.is_empty() {
            return;
        }
        let rid = r.id.as_deref().map(|i| format!("Condition/{i}"));
        if self.duplicate(&at, "Condition", r.id.as_deref(), report) {
            return;
        }
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return;
        };
        let when = r
            .onset_date_time
            .as_deref()
            .or(r.onset_period.as_ref().and_then(|p| p.start.as_deref()))
            .or(r.recorded_date.as_deref());
        let time = Self::time(&at, "onset[x]", when, &rid, report);
        self.touch(subject, time);
        for slot in slots {
            self.events.push(Event {
                subject,
                slot: slot as u16,
                time,
                value: EvValue::None,
            });
        }
    }
}
