//! Patients and Encounters, and what every resource reader shares: the subject a record
//! refers to, its dates, duplicate ids, and each subject's last recorded activity.
use std::hash::{Hash, Hasher};

use crate::cohort::{parse_instant, Instant};
use crate::reader::At;
use crate::report::{IssueKind, Report};
use crate::resource::Raw;
use crate::{SourceError, Split, SPLIT_TAG_SYSTEM};

use super::{EncounterRec, PatientRec, RefInfo, Store};

const DISCHARGE_SYSTEM: &str = "http://terminology.hl7.org/CodeSystem/discharge-disposition";

fn id_hash(ty: &str, id: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ty.hash(&mut h);
    id.hash(&mut h);
    h.finish()
}

impl Store {
    pub(super) fn subject(
        &mut self,
        at: &At<'_>,
        r: &Raw<'_>,
        rid: &Option<String>,
        report: &mut Report,
    ) -> Option<u32> {
        let reference = r
            .subject
            .as_ref()
            .or(r.patient.as_ref())
            .and_then(|s| s.reference.as_deref());
        let Some(reference) = reference else {
            report.issue(at.issue(
                IssueKind::NoSubject,
                rid.clone(),
                "no subject reference".into(),
            ));
            return None;
        };
        let n = match self.refs.get(reference) {
            Some(n) => *n,
            None => {
                let n = self.ref_info.len() as u32;
                self.refs.insert(reference.to_owned(), n);
                self.ref_info.push(RefInfo {
                    text: reference.to_owned(),
                    uses: 0,
                    first: (at.file.to_owned(), at.line, rid.clone()),
                });
                if self.track_activity {
                    self.activity.push(Instant::MIN);
                }
                n
            }
        };
        let info = &mut self.ref_info[n as usize];
        if info.uses == 0 {
            // first met dating activity only: name the first record that needs it instead
            info.first = (at.file.to_owned(), at.line, rid.clone());
        }
        info.uses += 1;
        Some(n)
    }

    pub(super) fn time(
        at: &At<'_>,
        field: &str,
        text: Option<&str>,
        rid: &Option<String>,
        report: &mut Report,
    ) -> Option<Instant> {
        let text = text?;
        let t = parse_instant(text);
        if t.is_none() {
            report.issue(at.issue(
                IssueKind::BadDate,
                rid.clone(),
                format!("{field} `{text}` is not a FHIR date or dateTime"),
            ));
        }
        t
    }

    pub(super) fn duplicate(
        &mut self,
        at: &At<'_>,
        ty: &str,
        id: Option<&str>,
        report: &mut Report,
    ) -> bool {
        let Some(id) = id else { return false };
        if self.seen.insert(id_hash(ty, id)) {
            return false;
        }
        report.issue(at.issue(
            IssueKind::DuplicateId,
            Some(format!("{ty}/{id}")),
            "the same id was read before; this copy is skipped".into(),
        ));
        true
    }

    pub(super) fn patient(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        let Some(id) = r.id.as_deref() else {
            report.issue(at.issue(IssueKind::MissingId, None, "Patient without an id".into()));
            return;
        };
        if self.by_id.contains_key(id) {
            self.fatal = Some(SourceError::DuplicatePatient {
                id: id.to_owned(),
                file: at.file.to_owned(),
                line: at.line,
            });
            return;
        }
        let rid = Some(format!("Patient/{id}"));
        let mut split = None;
        for tag in r.meta.iter().flat_map(|m| m.tag.iter().flatten()) {
            if tag.system.as_deref() == Some(SPLIT_TAG_SYSTEM) {
                let code = tag.code.as_deref().unwrap_or_default();
                match Split::parse(code) {
                    Some(s) => split = Some(s),
                    None => {
                        self.fatal = Some(SourceError::BadSplitTag {
                            patient: id.to_owned(),
                            code: code.to_owned(),
                        });
                        return;
                    }
                }
            }
        }
        let n = self.patients.len() as u32;
        self.by_id.insert(id.to_owned(), n);
        if let Some(u) = at.full_url {
            self.by_url.insert(u.to_owned(), n);
        }
        self.patients.push(PatientRec {
            id: id.to_owned(),
            split,
            gender: r.gender.as_deref().map(str::to_owned),
            birth: Self::time(&at, "birthDate", r.birth_date.as_deref(), &rid, report),
            deceased: r
                .deceased_boolean
                .or(r.deceased_date_time.as_ref().map(|_| true)),
            deceased_at: Self::time(
                &at,
                "deceasedDateTime",
                r.deceased_date_time.as_deref(),
                &rid,
                report,
            ),
        });
    }

    pub(super) fn encounter(&mut self, at: At<'_>, r: &Raw<'_>, report: &mut Report) {
        if matches!(r.status.as_deref(), Some("cancelled" | "entered-in-error")) {
            return;
        }
        let rid = r.id.as_deref().map(|i| format!("Encounter/{i}"));
        if self.duplicate(&at, "Encounter", r.id.as_deref(), report) {
            return;
        }
        let Some(subject) = self.subject(&at, r, &rid, report) else {
            return;
        };
        let period = r.period.as_ref();
        let start = Self::time(
            &at,
            "period.start",
            period.and_then(|p| p.start.as_deref()),
            &rid,
            report,
        );
        let end = Self::time(
            &at,
            "period.end",
            period.and_then(|p| p.end.as_deref()),
            &rid,
            report,
        );
        let expired = r
            .hospitalization
            .as_ref()
            .and_then(|h| h.discharge_disposition.as_ref())
            .is_some_and(|d| {
                d.codings()
                    .any(|(s, c)| s == Some(DISCHARGE_SYSTEM) && c == "exp")
            });
        self.touch(subject, end.or(start));
        self.encounters.push(EncounterRec {
            id: r.id.as_deref().map(str::to_owned),
            subject,
            class: r
                .class
                .as_ref()
                .and_then(|c| c.code.as_deref())
                .map(str::to_owned),
            start,
            end,
            expired,
        });
    }

    pub(super) fn touch(&mut self, subject: u32, t: Option<Instant>) {
        if let (true, Some(t)) = (self.track_activity, t) {
            let a = &mut self.activity[subject as usize];
            *a = (*a).max(t);
        }
    }
}
