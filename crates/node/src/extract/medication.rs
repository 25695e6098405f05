//! MedicationRequests and MedicationStatements, coded inline, by a contained Medication or
//! by a Medication resource of the export (kept pending until everything is read).
//!
//! Status: a MedicationRequest that is entered-in-error, cancelled or draft (never issued),
//! and a MedicationStatement that is entered-in-error or not-taken, does not count. An undated
//! one (no `authoredOn`; no `effective[x]` or `dateAsserted`) is placed at the index when its
//! status is active, on-hold, completed or stopped: it was prescribed or taken at some point
//! the record no longer dates. Any other status (unknown, intended, none) leaves it unplaced.
use crate::reader::At;
use crate::report::{IgnoreReason, Issue, IssueKind, Report};
use crate::resource::{Concept, Raw};

use super::{EvValue, Event, Family, PendingMed, Place, Store};

impl Store {
    pub(super) fn medication_use(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        if !self.wants(Family::Medication) {
            return;
        }
        let ty = r.resource_type.as_deref().unwrap_or_default();
        let status = r.status.as_deref();
        let void = match ty {
            "MedicationRequest" => {
                matches!(status, Some("entered-in-error" | "cancelled" | "draft"))
            }
            _ => matches!(status, Some("entered-in-error" | "not-taken")),
        };
        let rid = r.id.as_deref().map(|i| format!("{ty}/{i}"));
        let when = if ty == "MedicationRequest" {
            r.authored_on.as_deref()
        } else {
            r.effective_date_time
                .as_deref()
                .or(r.effective_period.as_ref().and_then(|p| p.start.as_deref()))
                .or(r.date_asserted.as_deref())
        };
        let place = match (when, status) {
            (None, Some("active" | "on-hold" | "completed" | "stopped")) => Place::AtIndex,
            (None, Some("intended")) => Place::Inactive,
            _ => Place::Unknown,
        };
        // the codes: inline, from a contained Medication, or from a Medication resource
        let reference = r
            .medication_reference
            .as_ref()
            .and_then(|m| m.reference.as_deref());
        let local = reference.and_then(|m| m.strip_prefix('#'));
        let contained_codes = local.and_then(|local| {
            r.contained.iter().flatten().find(|c| {
                c.get("resourceType").and_then(|t| t.as_str()) == Some("Medication")
                    && c.get("id").and_then(|i| i.as_str()) == Some(local)
            })
        });
        if let (Some(local), None, None) = (local, contained_codes, &r.medication_codeable_concept)
        {
            // its codes are unknown, so it cannot be told which feature it would have matched
            report.issue(at.issue(
                IssueKind::UnresolvedMedication,
                rid.clone(),
                format!("#{local} names no Medication contained in the resource"),
            ));
            return;
        }
        let contained: Option<Concept<'_>> = contained_codes
            .and_then(|c| c.get("code"))
            .and_then(|c| serde::Deserialize::deserialize(c).ok());
        let concept = r
            .medication_codeable_concept
            .as_ref()
            .or(contained.as_ref());
        let slots = self.matching(Family::Medication, concept, None);
        let external = concept.is_none() && reference.is_some_and(|m| !m.starts_with('#'));
        if slots.is_empty() && !external {
            return;
        }
        if self.duplicate(&at, ty, r.id.as_deref(), report) {
            return;
        }
        if !external {
            self.matched(&slots, report);
            if void {
                return self.ignored(&slots, IgnoreReason::Status, report);
            }
        }
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return self.ignored(&slots, IgnoreReason::Unresolved, report);
        };
        let time = Self::time(&at, "date", when, &rid, report);
        self.touch(subject, time);
        if external {
            self.pending.push(PendingMed {
                subject,
                time,
                place,
                void,
                medication: reference.unwrap_or_default().to_owned(),
                at: (at.file.to_owned(), at.line, rid),
            });
            return;
        }
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

    /// A Medication of the export, by its id and by its Bundle entry's `fullUrl` (a
    /// `urn:uuid:` reference names the latter).
    pub(super) fn medication(&mut self, at: At<'_>, r: &Raw<'_>) {
        if !self.wants(Family::Medication) {
            return;
        }
        let Some(code) = r.code.as_ref() else { return };
        let codes: Vec<(Option<String>, String)> = code
            .codings()
            .map(|(s, c)| (s.map(str::to_owned), c.to_owned()))
            .collect();
        if let Some(u) = at.full_url {
            self.medications.insert(u.to_owned(), codes.clone());
        }
        if let Some(id) = r.id.as_deref() {
            self.medications.insert(id.to_owned(), codes);
        }
    }

    /// Resolves the pending references to Medication resources into events.
    pub(super) fn resolve_medications(&mut self, report: &mut Report) {
        for p in std::mem::take(&mut self.pending) {
            let Some(codes) = self.medication_codes(&p.medication) else {
                report.issue(Issue {
                    kind: IssueKind::UnresolvedMedication,
                    file: Some(p.at.0),
                    line: Some(p.at.1),
                    resource: p.at.2,
                    detail: format!("{} names no Medication in the export", p.medication),
                });
                continue;
            };
            let slots: Vec<usize> = self
                .matchers
                .iter()
                .enumerate()
                .filter(|(_, m)| {
                    m.family == Family::Medication
                        && codes.iter().any(|(s, c)| m.codes.matches(s.as_deref(), c))
                })
                .map(|(i, _)| i)
                .collect();
            self.matched(&slots, report);
            if p.void {
                self.ignored(&slots, IgnoreReason::Status, report);
                continue;
            }
            for slot in slots {
                self.events.push(Event {
                    subject: p.subject,
                    slot: slot as u16,
                    time: p.time,
                    place: p.place,
                    value: EvValue::None,
                    n: 0,
                });
            }
        }
    }

    /// The codes of the Medication `reference` names: by `fullUrl` (`urn:uuid:...` or an
    /// absolute URL), else by id from `Medication/<id>`, relative or absolute, with or
    /// without `/_history/<version>`.
    fn medication_codes(&self, reference: &str) -> Option<&Vec<(Option<String>, String)>> {
        if let Some(c) = self.medications.get(reference) {
            return Some(c);
        }
        let plain = reference.split("/_history/").next().unwrap_or(reference);
        let id = plain
            .strip_prefix("Medication/")
            .or_else(|| plain.rsplit_once("/Medication/").map(|(_, id)| id))?;
        self.medications.get(id)
    }
}
