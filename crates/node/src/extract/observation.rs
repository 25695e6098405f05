//! Observations: the matching value of the resource and of each component, with
//! quantities converted into the unit the specification asks for (and counted per unit
//! found), coded values kept as their codings; unmatched ones only mark activity. A matching
//! one that is entered-in-error or cancelled, names no patient, or whose value cannot be read
//! (an unknown comparator, a unit that does not convert) is counted under its feature.
use crate::features::{Coding, Comparator};
use crate::reader::At;
use crate::report::{IgnoreReason, IssueKind, Report, UnitStats};
use crate::resource::{ObsValue, Raw};
use crate::units::Converted;

use super::{EvValue, Event, Family, Place, RefInfo, Store};

impl Store {
    fn value(
        &mut self,
        slot: usize,
        v: ObsValue<'_, '_>,
        at: &At<'_>,
        rid: &Option<String>,
        report: &mut Report,
    ) -> Option<EvValue> {
        Some(match v {
            ObsValue::Quantity(q) => {
                let Some(value) = q.value else {
                    // an event without a value: counted by `count`, set aside by the others
                    report.issue(at.issue(
                        IssueKind::NoValue,
                        rid.clone(),
                        format!(
                            "{}: a valueQuantity without a value",
                            self.matchers[slot].name
                        ),
                    ));
                    return Some(EvValue::None);
                };
                let cmp = match q.comparator.as_deref() {
                    None => None,
                    Some(c) => match Comparator::parse(c) {
                        Some(c) => Some(c),
                        None => {
                            report.issue(at.issue(
                                IssueKind::InvalidResource,
                                rid.clone(),
                                format!("comparator `{c}`"),
                            ));
                            report.ignored(&self.matchers[slot].name, IgnoreReason::Value);
                            return None;
                        }
                    },
                };
                let m = &mut self.matchers[slot];
                let unit = q.unit();
                let stats = report
                    .units
                    .entry(m.name.clone())
                    .or_insert_with(|| UnitStats {
                        target: m
                            .converter
                            .as_ref()
                            .and_then(|c| c.target().map(str::to_owned)),
                        ..UnitStats::default()
                    });
                *stats
                    .found
                    .entry(unit.unwrap_or("(none)").to_owned())
                    .or_default() += 1;
                let result = m.converter.as_mut().map(|c| c.convert(value, unit));
                // a text-only unit is read by its spelling: `node check` shows how
                if let (true, Some(text)) = (q.unit_is_text_only(), unit) {
                    let read_as = m.converter.as_ref().map(|c| c.resolve(text));
                    let refused = matches!(result, Some(Converted::Refused(_)));
                    stats.text_only(text, read_as, refused);
                }
                match result {
                    None => EvValue::Num(value, cmp),
                    Some(Converted::Value { value, converted }) => {
                        stats.converted += u64::from(converted);
                        EvValue::Num(value, cmp)
                    }
                    Some(Converted::Refused(why)) => {
                        stats.refused += 1;
                        report.issue(at.issue(
                            IssueKind::Unit,
                            rid.clone(),
                            format!("{}: {why}", m.name),
                        ));
                        report.ignored(&m.name, IgnoreReason::Unit);
                        return None;
                    }
                }
            }
            ObsValue::Concept(c) => {
                self.coded.push(
                    c.codings()
                        .map(|(s, code)| Coding {
                            system: s.map(str::to_owned),
                            code: code.to_owned(),
                        })
                        .collect(),
                );
                EvValue::Coded(self.coded.len() as u32 - 1)
            }
            ObsValue::Boolean(b) => EvValue::Bool(b),
            ObsValue::Integer(i) => EvValue::Int(i),
            ObsValue::Other(k) => EvValue::Other(k),
            ObsValue::Absent => EvValue::None,
        })
    }

    pub(super) fn observation(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        let void = matches!(r.status.as_deref(), Some("entered-in-error" | "cancelled"));
        let top = self.matching(Family::Observation, r.code.as_ref(), r.method.as_ref());
        let parts: Vec<(usize, Vec<usize>)> = r
            .component
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, c)| {
                (
                    i,
                    self.matching(Family::Observation, c.code.as_ref(), r.method.as_ref()),
                )
            })
            .filter(|(_, m)| !m.is_empty())
            .collect();
        if top.is_empty() && parts.is_empty() {
            if self.track_activity && !void {
                self.activity_of(&at, r, report);
            }
            return;
        }
        let rid = r.id.as_deref().map(|i| format!("Observation/{i}"));
        if self.duplicate(&at, "Observation", r.id.as_deref(), report) {
            return;
        }
        let slots: Vec<usize> = top
            .iter()
            .chain(parts.iter().flat_map(|(_, s)| s))
            .copied()
            .collect();
        self.matched(&slots, report);
        if void {
            return self.ignored(&slots, IgnoreReason::Status, report);
        }
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return self.ignored(&slots, IgnoreReason::Unresolved, report);
        };
        let when = r
            .effective_date_time
            .as_deref()
            .or(r.effective_instant.as_deref())
            .or(r.effective_period.as_ref().and_then(|p| p.start.as_deref()))
            .or(r.issued.as_deref());
        let time = Self::time(&at, "effective[x]", when, &rid, report);
        self.touch(subject, time);
        let push = |store: &mut Self, slot: usize, v: ObsValue<'_, '_>, report: &mut Report| {
            if matches!(v, ObsValue::Absent) {
                report.issue(at.issue(
                    IssueKind::NoValue,
                    rid.clone(),
                    format!("{}: no value", store.matchers[slot].name),
                ));
            }
            if let Some(value) = store.value(slot, v, &at, &rid, report) {
                store.events.push(Event {
                    subject,
                    slot: slot as u16,
                    time,
                    place: Place::Unknown,
                    value,
                    n: 0,
                });
            }
        };
        for slot in top {
            push(self, slot, r.value(), report);
        }
        let components: Vec<_> = r.component.iter().flatten().collect();
        for (i, slots) in parts {
            for slot in slots {
                push(self, slot, components[i].value(), report);
            }
        }
    }

    /// An Observation no part of the specification reads still shows its subject was
    /// followed then, whether or not a matching record of the subject was read before.
    fn activity_of(&mut self, at: &At<'_>, r: &Raw<'_>, report: &mut Report) {
        let reference = r
            .subject
            .as_ref()
            .or(r.patient.as_ref())
            .and_then(|s| s.reference.as_deref());
        let Some(reference) = reference else { return };
        let when = r
            .effective_date_time
            .as_deref()
            .or(r.effective_instant.as_deref())
            .or(r.effective_period.as_ref().and_then(|p| p.start.as_deref()))
            .or(r.issued.as_deref());
        let Some(t) = Self::time(at, "effective[x]", when, &None, report) else {
            return;
        };
        let n = match self.refs.get(reference) {
            Some(n) => *n,
            None => {
                // registered without a use: an unresolved one is not reported for this
                let n = self.ref_info.len() as u32;
                self.refs.insert(reference.to_owned(), n);
                self.ref_info.push(RefInfo {
                    text: reference.to_owned(),
                    uses: 0,
                    first: (at.file.to_owned(), at.line, None),
                });
                self.activity.push(t);
                n
            }
        };
        self.touch(n, Some(t));
    }
}
