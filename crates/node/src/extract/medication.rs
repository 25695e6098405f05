//! MedicationRequests and MedicationStatements, coded inline, by a contained Medication or
//! by a Medication resource of the export (kept pending until everything is read).
use crate::reader::At;
use crate::report::Report;
use crate::resource::{Concept, Raw};

use super::{EvValue, Event, Family, PendingMed, Store};

impl Store {
    pub(super) fn medication_use(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        let ty = r.resource_type.as_deref().unwrap_or_default();
        let skip = match ty {
            "MedicationRequest" => {
                matches!(r.status.as_deref(), Some("entered-in-error" | "cancelled"))
            }
            _ => matches!(r.status.as_deref(), Some("entered-in-error" | "not-taken")),
        };
        if skip || !self.wants(Family::Medication) {
            return;
        }
        let rid = r.id.as_deref().map(|i| format!("{ty}/{i}"));
        let when = if ty == "MedicationRequest" {
            r.authored_on.as_deref()
        } else {
            r.effective_date_time
                .as_deref()
                .or(r.effective_period.as_ref().and_then(|p| p.start.as_deref()))
                .or(r.date_asserted.as_deref())
        };
        // the codes: inline, from a contained Medication, or from a Medication resource
        let reference = r
            .medication_reference
            .as_ref()
            .and_then(|m| m.reference.as_deref());
        let contained_codes = reference
            .and_then(|m| m.strip_prefix('#'))
            .and_then(|local| {
                r.contained.iter().flatten().find(|c| {
                    c.get("resourceType").and_then(|t| t.as_str()) == Some("Medication")
                        && c.get("id").and_then(|i| i.as_str()) == Some(local)
                })
            });
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
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return;
        };
        let time = Self::time(&at, "date", when, &rid, report);
        self.touch(subject, time);
        if external {
            let medication = reference.unwrap_or_default();
            let medication = medication
                .rsplit('/')
                .next()
                .unwrap_or(medication)
                .to_owned();
            self.pending.push(PendingMed {
                subject,
                time,
                medication,
                at: (at.file.to_owned(), at.line, rid),
            });
            return;
        }
        for slot in slots {
            self.events.push(Event {
                subject,
                slot: slot as u16,
                time,
                value: EvValue::None,
            });
        }
    }

    pub(super) fn medication(&mut self, r: &Raw<'_>) {
        if !self.wants(Family::Medication) {
            return;
        }
        if let (Some(id), Some(code)) = (r.id.as_deref(), r.code.as_ref()) {
            self.medications.insert(
                id.to_owned(),
                code.codings()
                    .map(|(s, c)| (s.map(str::to_owned), c.to_owned()))
                    .collect(),
            );
        }
    }
}
