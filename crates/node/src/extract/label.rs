//! Labels: a row's target decided from its events and death: binary sources (condition,
//! medication, death, observation threshold), coded classes, bins, first-match classes,
//! multiple labels, and survival times.
use crate::cohort::Instant;
use crate::features::{FeatureSpec, LabelSource, SurvivalEvent, Value};
use crate::report::IgnoreReason;

use super::candidates::Candidate;
use super::events::Events;
use super::{Event, PatientRec, Store};

/// Why a dated death label cannot be decided; also counted under the label as undated.
pub(super) const DEATH_UNDATED: &str = "deceased without a date of death";

impl Store {
    /// When the patient died: `deceasedDateTime`, else the end of an encounter whose
    /// discharge disposition is `exp`; `Err` when the records say deceased without a date
    /// (`deceasedBoolean`, or an expired encounter without an end).
    pub(super) fn death_time(
        &self,
        pat: &PatientRec,
        encs: &[usize],
    ) -> Result<Option<Instant>, ()> {
        if let Some(t) = pat.deceased_at {
            return Ok(Some(t));
        }
        let expired = || {
            encs.iter()
                .map(|&i| &self.encounters[i])
                .filter(|e| e.expired)
        };
        match (expired().filter_map(|e| e.end).min(), pat.deceased) {
            (Some(t), _) => Ok(Some(t)),
            (None, Some(true)) => Err(()),
            (None, _) if expired().next().is_some() => Err(()),
            _ => Ok(None),
        }
    }

    pub(super) fn label(
        &self,
        spec: &FeatureSpec,
        c: &Candidate,
        evs: &Events<'_>,
        death: Result<Option<Instant>, ()>,
        last_activity: Option<Instant>,
    ) -> Result<(u32, Option<f32>), &'static str> {
        let slot = |k: usize| self.slots.label[k].expect("label matcher");
        match &spec.label.source {
            LabelSource::FirstMatch { classes, otherwise } => {
                // in order: an undecidable class before the first positive one leaves the
                // class undecided
                for (k, p) in classes.iter().enumerate() {
                    if self.positive(&p.source, self.slots.label[k], c, evs, death)? {
                        return Ok((k as u32, None));
                    }
                }
                match otherwise {
                    Some(_) => Ok((classes.len() as u32, None)),
                    None => Err("label: no class matches"),
                }
            }
            LabelSource::Labels(parts) => {
                let mut mask = 0u32;
                for (k, p) in parts.iter().enumerate() {
                    if self.positive(&p.source, self.slots.label[k], c, evs, death)? {
                        mask |= 1 << k;
                    }
                }
                Ok((mask, None))
            }
            LabelSource::Coded { source, classes } => {
                let sel = self.select(evs, slot(0), source.window, c.index);
                match self.aggregate(evs, &sel, source.aggregate, None) {
                    Some(Value::Coded(codings)) => classes
                        .iter()
                        .position(|k| {
                            codings
                                .iter()
                                .any(|x| k.codes.matches(x.system.as_deref(), &x.code))
                        })
                        .map(|k| (k as u32, None))
                        .ok_or("label: the coded value is in none of the classes"),
                    Some(_) => Err("label: the observation's value is not coded"),
                    None => Err("label: no observation within the horizon"),
                }
            }
            LabelSource::Bins {
                source,
                unit,
                classes,
            } => {
                let sel = self.select(evs, slot(0), source.window, c.index);
                let v = match self.aggregate(evs, &sel, source.aggregate, unit.as_deref()) {
                    Some(Value::Quantity(q)) if q.comparator.is_none() => q.value,
                    Some(Value::Integer(i)) => i as f64,
                    Some(Value::Quantity(_)) => return Err("label: a censored value has no bin"),
                    Some(_) => return Err("label: the observation's value is not a number"),
                    None => return Err("label: no observation within the horizon"),
                };
                let k = classes
                    .iter()
                    .position(|b| b.below.is_none_or(|u| v < u))
                    .expect("the last class has no bound");
                Ok((k as u32, None))
            }
            LabelSource::Survival {
                event,
                follow_up,
                censor_at,
            } => {
                let index = c.index.expect("an index");
                let event_time = match event {
                    SurvivalEvent::Death => death.map_err(|_| DEATH_UNDATED)?,
                    SurvivalEvent::Condition(_) => {
                        // the first dated one after the index is the event
                        let mut first = None;
                        for e in evs.of(slot(0)) {
                            match e.time {
                                None => evs.ignore(e, IgnoreReason::Undated),
                                Some(t) if t <= index => evs.ignore(e, IgnoreReason::OutsideWindow),
                                Some(t) => {
                                    evs.used(e);
                                    first = first.or(Some(t));
                                }
                            }
                        }
                        first
                    }
                };
                let mut censor = index + follow_up.0;
                if let Some(ca) = censor_at {
                    censor = censor.min(*ca);
                } else if let Some(last) = last_activity {
                    // the records end at the last dated one; a recorded death after it shows
                    // the subject was followed until then
                    let death_at = death.ok().flatten().unwrap_or(index);
                    censor = censor.min(last.max(index).max(death_at));
                }
                if censor <= index {
                    return Err("no follow-up after the index");
                }
                let days = |t: Instant| ((t - index) as f64 / 86_400.0) as f32;
                Ok(match event_time {
                    Some(t) if t <= censor => (1, Some(days(t))),
                    _ => (0, Some(days(censor))),
                })
            }
            binary => self
                .positive(binary, self.slots.label[0], c, evs, death)
                .map(|p| (u32::from(p), None)),
        }
    }

    /// A binary label source (the label, a class criterion or one of several labels) for one
    /// row; `Err` when it cannot be decided. `slot` is the source's matcher.
    fn positive(
        &self,
        source: &LabelSource,
        slot: Option<usize>,
        c: &Candidate,
        evs: &Events<'_>,
        death: Result<Option<Instant>, ()>,
    ) -> Result<bool, &'static str> {
        // strictly after the index and within the horizon; an undated record is never after
        // the index, whatever its status
        let after = |slot: usize, within: Option<crate::cohort::Span>| -> bool {
            let index = c.index.expect("an index");
            let mut any = false;
            for e in evs.of(slot) {
                match e.time {
                    None => evs.ignore(e, IgnoreReason::Undated),
                    Some(t) if t > index && within.is_none_or(|w| t - index <= w.0) => {
                        evs.used(e);
                        any = true;
                    }
                    Some(_) => evs.ignore(e, IgnoreReason::OutsideWindow),
                }
            }
            any
        };
        let matcher = || slot.expect("label matcher");
        match source {
            LabelSource::Condition { within, .. } | LabelSource::Medication { within, .. } => {
                Ok(match c.index {
                    None => {
                        let all: &[Event] = evs.of(matcher());
                        all.iter().for_each(|e| evs.used(e));
                        !all.is_empty()
                    }
                    Some(_) => after(matcher(), *within),
                })
            }
            LabelSource::Death { within } => {
                let index = c.index.expect("an index");
                match death {
                    Err(()) => Err(DEATH_UNDATED),
                    Ok(d) => Ok(d.is_some_and(|d| d > index && d - index <= within.0)),
                }
            }
            // ever, as of the extraction: a recorded death, dated or not
            LabelSource::Deceased => Ok(!matches!(death, Ok(None))),
            LabelSource::Observation {
                source,
                threshold,
                above,
                unit,
            } => {
                let sel = self.select(evs, matcher(), source.window, c.index);
                let v = self.aggregate(evs, &sel, source.aggregate, unit.as_deref());
                let decided = match v {
                    Some(Value::Quantity(q)) => {
                        let a = crate::transform::above(&q, *threshold);
                        if *above {
                            a
                        } else {
                            // below t: not above, and not equal
                            a.map(|a| !a && q.value < *threshold)
                        }
                    }
                    Some(Value::Integer(i)) => Some(if *above {
                        i as f64 > *threshold
                    } else {
                        (i as f64) < *threshold
                    }),
                    _ => None,
                };
                decided.ok_or("label: no observation within the horizon")
            }
            // the parser only lets yes/no sources into classes and labels
            _ => Err("label: this source has no yes/no value"),
        }
    }
}

#[cfg(test)]
mod label_tests {
    //! Multi-class and multi-label targets of hand-written records.
    use crate::features::{FeatureSpec, Task};
    use crate::fhir_source::extract_json;
    use crate::SiteRows;

    fn extract(label: &str, entries: &[String]) -> SiteRows {
        let spec = FeatureSpec::from_json(&format!(
            r#"{{"name": "t", "features": [{{"name": "sex", "category": "ehr_data",
                 "source": {{"patient": "gender"}},
                 "transform": {{"kind": "map", "values": {{"male": 1, "female": 0}}}}}}],
                "label": {{"name": "y", "category": "ehr_data", "source": {label}}}}}"#
        ))
        .unwrap();
        let bundle = format!(
            r#"{{"resourceType": "Bundle", "type": "collection", "entry": [{}]}}"#,
            entries.join(",")
        );
        let rows = extract_json(&spec, &bundle).unwrap();
        assert_eq!(rows.task, spec.task());
        rows
    }

    fn patient(id: &str) -> String {
        format!(r#"{{"resource": {{"resourceType": "Patient", "id": "{id}", "gender": "male"}}}}"#)
    }

    fn obs(subject: &str, value: &str) -> String {
        format!(
            r#"{{"resource": {{"resourceType": "Observation", "status": "final",
                "code": {{"coding": [{{"system": "urn:o", "code": "k"}}]}},
                "subject": {{"reference": "Patient/{subject}"}}, {value}}}}}"#
        )
    }

    fn coded(subject: &str, code: &str) -> String {
        obs(
            subject,
            &format!(
                r#""valueCodeableConcept": {{"coding": [{{"system": "urn:v", "code": "{code}"}}]}}"#
            ),
        )
    }

    fn condition(subject: &str, code: &str) -> String {
        format!(
            r#"{{"resource": {{"resourceType": "Condition", "subject": {{"reference": "Patient/{subject}"}},
                "code": {{"coding": [{{"system": "http://hl7.org/fhir/sid/icd-10", "code": "{code}"}}]}}}}}}"#
        )
    }

    /// (patient, target) of every kept row.
    fn targets(rows: &SiteRows) -> Vec<(&str, u32)> {
        rows.rows
            .iter()
            .map(|r| (r.pseudonym.as_str(), r.label))
            .collect()
    }

    #[test]
    fn coded_observation_values_are_class_indices() {
        let label = r#"{"coded": {"observation": {"system": "urn:o", "code": "k"}, "classes": [
            {"name": "none", "codes": [{"system": "urn:v", "code": "0"}]},
            {"name": "mild", "codes": [{"system": "urn:v", "code": "1"}, {"system": "urn:v", "code": "2"}]},
            {"name": "severe", "codes": [{"system": "urn:v", "code": "3"}]}]}}"#;
        let rows = extract(
            label,
            &[
                patient("a"),
                coded("a", "0"),
                patient("b"),
                coded("b", "2"),
                patient("c"),
                coded("c", "9"),
                patient("d"),
                patient("e"),
                coded("e", "1"),
                coded("e", "3"),
            ],
        );
        assert_eq!(rows.task, Task::Multiclass { classes: 3 });
        // e: the latest of its two values (undated: the last in source order)
        assert_eq!(targets(&rows), [("a", 0), ("b", 1), ("e", 2)]);
        let ex = &rows.report.excluded;
        assert_eq!(ex["label: the coded value is in none of the classes"], 1);
        assert_eq!(ex["label: no observation within the horizon"], 1);
    }

    #[test]
    fn numeric_values_fall_in_bins_with_exclusive_upper_bounds() {
        let label = r#"{"bins": {"observation": {"system": "urn:o", "code": "k"}, "unit": "mg/dL",
            "classes": [{"name": "low", "below": 5}, {"name": "mid", "below": 10}, {"name": "high"}]}}"#;
        let q = |v: &str, extra: &str| {
            format!(
                r#""valueQuantity": {{"value": {v}, {extra} "system": "http://unitsofmeasure.org", "code": "mg/dL"}}"#
            )
        };
        let rows = extract(
            label,
            &[
                patient("a"),
                obs("a", &q("4.9", "")),
                patient("b"),
                obs("b", &q("5", "")),
                patient("c"),
                obs("c", &q("12", "")),
                patient("d"),
                obs("d", &q("5", r#""comparator": ">","#)),
                patient("e"),
                obs(
                    "e",
                    r#""valueQuantity": {"value": 0.1, "system": "http://unitsofmeasure.org", "code": "g/dL"}"#,
                ),
            ],
        );
        // e: 0.1 g/dL = 100 mg/dL
        assert_eq!(targets(&rows), [("a", 0), ("b", 1), ("c", 2), ("e", 2)]);
        assert_eq!(
            rows.report.excluded["label: a censored value has no bin"],
            1
        );
    }

    #[test]
    fn the_first_matching_class_wins_and_otherwise_takes_the_rest() {
        let classes = r#"[
            {"name": "ihd", "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10", "code": "I25*"}]}}},
            {"name": "htn", "source": {"condition": {"system": "http://hl7.org/fhir/sid/icd-10", "code": "I10"}}}]"#;
        let records = [
            patient("a"),
            condition("a", "I10"),
            condition("a", "I25.1"),
            patient("b"),
            condition("b", "I10"),
            patient("c"),
        ];
        let rows = extract(
            &format!(r#"{{"first_match": {{"classes": {classes}, "otherwise": "neither"}}}}"#),
            &records,
        );
        assert_eq!(rows.task, Task::Multiclass { classes: 3 });
        assert_eq!(targets(&rows), [("a", 0), ("b", 1), ("c", 2)]);
        // without `otherwise` a subject matching no class has no label
        let rows = extract(
            &format!(r#"{{"first_match": {{"classes": {classes}}}}}"#),
            &records,
        );
        assert_eq!(rows.task, Task::Multiclass { classes: 2 });
        assert_eq!(targets(&rows), [("a", 0), ("b", 1)]);
        assert_eq!(rows.report.excluded["label: no class matches"], 1);
    }

    #[test]
    fn each_label_sets_its_bit() {
        let label = r#"{"labels": [
            {"name": "ihd", "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10", "code": "I25*"}]}}},
            {"name": "htn", "source": {"condition": {"system": "http://hl7.org/fhir/sid/icd-10", "code": "I10"}}},
            {"name": "t2d", "source": {"condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10", "code": "E11*"}]}}}]}"#;
        let rows = extract(
            label,
            &[
                patient("a"),
                condition("a", "I10"),
                condition("a", "I25.1"),
                patient("b"),
                condition("b", "E11.9"),
                patient("c"),
            ],
        );
        assert_eq!(rows.task, Task::Multilabel { labels: 3 });
        assert_eq!(targets(&rows), [("a", 0b011), ("b", 0b100), ("c", 0)]);
    }
}
