//! What the specification looks for: one matcher per feature, series channel, label source
//! and cohort criterion that reads records, and which of them a coded concept matches.
use std::collections::{HashMap, HashSet};

use crate::cohort::{CodeSet, IndexEvent};
use crate::features::{
    Feature, FeatureSpec, LabelSource, ObservationSource, Source, SurvivalEvent,
};
use crate::resource::Concept;
use crate::units::Converter;

use super::{Family, Matcher, Slots, Store};

fn observation_matcher(
    name: &str,
    o: &ObservationSource,
    unit: Option<&str>,
    aliases: &[(String, String)],
) -> Matcher {
    Matcher {
        name: name.to_owned(),
        family: Family::Observation,
        codes: o.codes.clone(),
        method: o.method.clone(),
        converter: Some(Converter::new(unit, o.loinc(), aliases)),
        require_date: false,
    }
}

fn code_matcher(name: &str, family: Family, codes: &CodeSet) -> Matcher {
    Matcher {
        name: name.to_owned(),
        family,
        codes: codes.clone(),
        method: None,
        converter: None,
        require_date: false,
    }
}

impl Store {
    /// A store for `features` (the study's and any site-private ones) of `spec`.
    pub fn new(spec: &FeatureSpec, features: &[Feature], aliases: &[(String, String)]) -> Self {
        let mut m = Vec::new();
        let mut slots = Slots::default();
        for f in features {
            let slot = match &f.source {
                Source::Observation(o) => {
                    m.push(observation_matcher(&f.name, o, f.transform.unit(), aliases));
                    Some(m.len() - 1)
                }
                Source::Condition {
                    codes,
                    require_date,
                    ..
                } => {
                    m.push(Matcher {
                        require_date: *require_date,
                        ..code_matcher(&f.name, Family::Condition, codes)
                    });
                    Some(m.len() - 1)
                }
                Source::Medication {
                    codes,
                    require_date,
                    ..
                } => {
                    m.push(Matcher {
                        require_date: *require_date,
                        ..code_matcher(&f.name, Family::Medication, codes)
                    });
                    Some(m.len() - 1)
                }
                Source::Patient(_) => None,
            };
            slots.features.push(slot);
        }
        for c in spec.series.iter().flat_map(|s| &s.channels) {
            m.push(observation_matcher(
                &c.name,
                &c.source,
                c.unit.as_deref(),
                aliases,
            ));
            slots.channels.push(m.len() - 1);
        }
        let label = &spec.label;
        let sources: Vec<(String, &LabelSource)> = match &label.source {
            LabelSource::FirstMatch { classes: parts, .. } | LabelSource::Labels(parts) => parts
                .iter()
                .map(|p| (format!("{}/{}", label.name, p.name), &p.source))
                .collect(),
            s => vec![(label.name.clone(), s)],
        };
        for (name, source) in sources {
            let matcher = match source {
                LabelSource::Condition { codes, .. }
                | LabelSource::Survival {
                    event: SurvivalEvent::Condition(codes),
                    ..
                } => Some(code_matcher(&name, Family::Condition, codes)),
                LabelSource::Medication { codes, .. } => {
                    Some(code_matcher(&name, Family::Medication, codes))
                }
                LabelSource::Observation { source, unit, .. }
                | LabelSource::Bins { source, unit, .. } => {
                    Some(observation_matcher(&name, source, unit.as_deref(), aliases))
                }
                LabelSource::Coded { source, .. } => {
                    Some(observation_matcher(&name, source, None, aliases))
                }
                _ => None,
            };
            slots.label.push(matcher.map(|lm| {
                m.push(lm);
                m.len() - 1
            }));
        }
        if let IndexEvent::FirstCondition(codes) = &spec.cohort.index {
            m.push(code_matcher("cohort index", Family::Condition, codes));
            slots.index = Some(m.len() - 1);
        }
        if let Some((codes, _)) = &spec.cohort.include.condition {
            m.push(code_matcher("cohort inclusion", Family::Condition, codes));
            slots.include = Some(m.len() - 1);
        }
        let track_activity = matches!(
            label.source,
            LabelSource::Survival {
                censor_at: None,
                ..
            }
        );
        Self {
            matchers: m,
            slots,
            track_activity,
            patients: Vec::new(),
            by_id: HashMap::new(),
            by_url: HashMap::new(),
            refs: HashMap::new(),
            ref_info: Vec::new(),
            activity: Vec::new(),
            encounters: Vec::new(),
            events: Vec::new(),
            coded: Vec::new(),
            medications: HashMap::new(),
            pending: Vec::new(),
            seen: HashSet::new(),
            fatal: None,
            image: spec.image.clone(),
            media: Vec::new(),
            binaries: HashMap::new(),
            binary_urls: HashMap::new(),
            first_image: HashMap::new(),
        }
    }

    pub(super) fn wants(&self, family: Family) -> bool {
        self.matchers.iter().any(|m| m.family == family)
    }

    pub(super) fn matching(
        &self,
        family: Family,
        concept: Option<&Concept<'_>>,
        method: Option<&Concept<'_>>,
    ) -> Vec<usize> {
        let Some(concept) = concept else {
            return vec![];
        };
        let mut out = Vec::new();
        for (i, m) in self.matchers.iter().enumerate() {
            if m.family != family || !concept.codings().any(|(s, c)| m.codes.matches(s, c)) {
                continue;
            }
            let method_ok = m.method.as_ref().is_none_or(|ms| {
                method.is_some_and(|mc| mc.codings().any(|(s, c)| ms.matches(s, c)))
            });
            if method_ok {
                out.push(i);
            }
        }
        out
    }
}
