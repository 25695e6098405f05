//! The unit of analysis of a feature specification and the vocabulary of time around it:
//! code patterns, durations, windows relative to the index event, inclusion filters.
//!
//! ```json
//! "cohort": {
//!   "unit": "encounter", "index": "admission", "category": "ehr_data",
//!   "include": { "age": {"min": 18}, "encounter_class": ["IMP"],
//!                "length_of_stay": {"min": "24h"},
//!                "condition": {"codes": [{"system": "http://hl7.org/fhir/sid/icd-10", "code": "I50*"}]} }
//! }
//! ```
//!
//! `unit` is `patient` (one row per patient; `index` is `{"date": "2024-01-01"}` or the first
//! qualifying event, `{"first": {"condition": {...}}}` / `{"first": {"encounter": {...}}}`)
//! or `encounter` (one row per Encounter; `index` is `admission` or `discharge`). Without a
//! `cohort` every Patient is a row and there is no index: every record counts, whatever its
//! date.
use serde::Deserialize;

use crate::domain::DataCategory;

/// Seconds since the Unix epoch (UTC).
pub type Instant = i64;

/// A code a coding must carry: an exact code, or every code starting with a prefix when the
/// pattern ends in `*` (`I10*` matches `I10`, `I10.0`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodePattern {
    pub system: String,
    pub code: String,
    pub prefix: bool,
}

impl CodePattern {
    pub fn new(system: &str, pattern: &str) -> Self {
        match pattern.strip_suffix('*') {
            Some(p) => Self {
                system: system.to_owned(),
                code: p.to_owned(),
                prefix: true,
            },
            None => Self {
                system: system.to_owned(),
                code: pattern.to_owned(),
                prefix: false,
            },
        }
    }

    pub fn matches(&self, system: Option<&str>, code: &str) -> bool {
        system == Some(self.system.as_str())
            && if self.prefix {
                code.starts_with(&self.code)
            } else {
                code == self.code
            }
    }

    /// The pattern as written in a specification (`I10*`).
    pub fn written(&self) -> String {
        if self.prefix {
            format!("{}*", self.code)
        } else {
            self.code.clone()
        }
    }
}

/// Several patterns; a coding matching any of them matches.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CodeSet(pub Vec<CodePattern>);

impl CodeSet {
    pub fn matches(&self, system: Option<&str>, code: &str) -> bool {
        self.0.iter().any(|p| p.matches(system, code))
    }
}

/// A code as a specification or a code map writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCode {
    pub system: String,
    pub code: String,
}

/// The set of `codes` (exact codes, or prefixes written `C*`); refused when empty or when a
/// code is neither.
pub fn code_set(codes: &[RawCode]) -> Result<CodeSet, String> {
    if codes.is_empty() {
        return Err("`codes` lists no code".into());
    }
    let mut out = Vec::with_capacity(codes.len());
    for c in codes {
        // `*` only as the last character; what precedes it is cut at a character boundary
        // (a byte index before the end once panicked on a code ending in `é`).
        let body = c.code.strip_suffix('*').unwrap_or(&c.code);
        if body.is_empty() || body.contains('*') {
            return Err(format!(
                "`{}` is not a code or a prefix pattern ending in `*`",
                c.code
            ));
        }
        out.push(CodePattern::new(&c.system, &c.code));
    }
    Ok(CodeSet(out))
}

/// A signed duration written `<integer><unit>` with unit `min`, `h` or `d` (`-48h`, `30d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Span(pub i64);

impl Span {
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let (num, secs) = if let Some(n) = t.strip_suffix("min") {
            (n, 60)
        } else if let Some(n) = t.strip_suffix('h') {
            (n, 3600)
        } else if let Some(n) = t.strip_suffix('d') {
            (n, 86_400)
        } else {
            return Err(format!(
                "`{text}` is not a duration: write an integer and min, h or d (`-48h`, `30d`)"
            ));
        };
        let n: i64 = num
            .parse()
            .map_err(|_| format!("`{text}` is not a duration: `{num}` is not an integer"))?;
        n.checked_mul(secs)
            .filter(|s| s.abs() <= 200 * 365 * 86_400)
            .map(Span)
            .ok_or_else(|| format!("`{text}` is out of range"))
    }

    pub fn seconds(self) -> i64 {
        self.0
    }

    pub fn days(self) -> f64 {
        self.0 as f64 / 86_400.0
    }
}

/// Which events count, relative to the index: both ends inclusive; a missing `from` is
/// unbounded, a missing `to` is the index itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: Option<Span>,
    pub to: Span,
}

impl Window {
    /// Everything up to and including the index.
    pub const UP_TO_INDEX: Window = Window {
        from: None,
        to: Span(0),
    };

    pub fn contains(&self, index: Instant, t: Instant) -> bool {
        let d = t - index;
        self.from.is_none_or(|f| d >= f.0) && d <= self.to.0
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWindow {
    from: Option<String>,
    to: Option<String>,
}

pub(crate) fn window(raw: &RawWindow) -> Result<Window, String> {
    let from = raw.from.as_deref().map(Span::parse).transpose()?;
    let to = raw
        .to
        .as_deref()
        .map(Span::parse)
        .transpose()?
        .unwrap_or(Span(0));
    if from.is_some_and(|f| f > to) {
        return Err("the window's `from` is after its `to`".into());
    }
    Ok(Window { from, to })
}

/// One row per patient or per encounter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Patient,
    Encounter,
}

/// The instant each row's features and labels are measured from.
#[derive(Debug, Clone, PartialEq)]
pub enum IndexEvent {
    /// No index (the specification has no cohort): every record counts.
    None,
    /// A fixed date for every patient.
    Date(Instant),
    /// The first Condition with one of these codes.
    FirstCondition(CodeSet),
    /// The start of the first Encounter of one of these classes (any class when empty).
    FirstEncounter(Vec<String>),
    /// The start of the row's Encounter.
    Admission,
    /// The end of the row's Encounter.
    Discharge,
}

/// Inclusion filters, all of which a row must pass.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Inclusion {
    /// Age in full years at the index, inclusive bounds.
    pub age: Option<(Option<f64>, Option<f64>)>,
    /// `Encounter.class` codes (v3 ActCode: `IMP`, `EMER`, `AMB`, `ACUTE`, ...).
    pub encounter_class: Vec<String>,
    /// Length of stay of the row's encounter, inclusive bounds.
    pub length_of_stay: Option<(Option<Span>, Option<Span>)>,
    /// A Condition with one of these codes within the window.
    pub condition: Option<(CodeSet, Window)>,
}

/// A parsed `cohort`.
#[derive(Debug, Clone, PartialEq)]
pub struct Cohort {
    pub unit: Unit,
    pub index: IndexEvent,
    pub include: Inclusion,
    /// The category of the records the cohort definition reads (encounters, conditions,
    /// birth dates); `None` for the implicit cohort, which reads nothing but the Patient.
    pub category: Option<DataCategory>,
}

impl Cohort {
    /// Every Patient, no index.
    pub fn implicit() -> Self {
        Self {
            unit: Unit::Patient,
            index: IndexEvent::None,
            include: Inclusion::default(),
            category: None,
        }
    }

    pub fn has_index(&self) -> bool {
        self.index != IndexEvent::None
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCohort {
    unit: RawUnit,
    category: String,
    index: serde_json::Value,
    #[serde(default)]
    include: RawInclusion,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawUnit {
    Patient,
    Encounter,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInclusion {
    age: Option<RawRange<f64>>,
    #[serde(default)]
    encounter_class: Vec<String>,
    length_of_stay: Option<RawRange<String>>,
    condition: Option<RawCodesWindow>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRange<T> {
    min: Option<T>,
    max: Option<T>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCodesWindow {
    pub codes: Vec<RawCode>,
    pub window: Option<RawWindow>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RawFirst {
    Condition {
        codes: Vec<RawCode>,
    },
    Encounter {
        #[serde(default)]
        class: Vec<String>,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RawIndex {
    Date(String),
    First(RawFirst),
}

/// Parse a FHIR `date` or `dateTime` (a partial date stands for its first instant; a time
/// without a zone is read as UTC).
pub fn parse_instant(text: &str) -> Option<Instant> {
    use chrono::{NaiveDate, NaiveDateTime};
    let t = text.trim();
    match t.len() {
        4 => NaiveDate::from_ymd_opt(t.parse().ok()?, 1, 1),
        7 => NaiveDate::parse_from_str(&format!("{t}-01"), "%Y-%m-%d").ok(),
        10 => NaiveDate::parse_from_str(t, "%Y-%m-%d").ok(),
        _ => {
            return chrono::DateTime::parse_from_rfc3339(t)
                .map(|d| d.timestamp())
                .ok()
                .or_else(|| {
                    NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f")
                        .ok()
                        .map(|d| d.and_utc().timestamp())
                })
        }
    }
    .and_then(|d| d.and_hms_opt(0, 0, 0))
    .map(|d| d.and_utc().timestamp())
}

pub(crate) fn cohort(raw: RawCohort) -> Result<Cohort, String> {
    let category = DataCategory::parse(&raw.category)
        .map_err(|_| format!("`{}` is not an Art. 51(1) data category", raw.category))?;
    let unit = match raw.unit {
        RawUnit::Patient => Unit::Patient,
        RawUnit::Encounter => Unit::Encounter,
    };
    let index = match (&raw.index, unit) {
        (serde_json::Value::String(s), Unit::Encounter) if s == "admission" => {
            IndexEvent::Admission
        }
        (serde_json::Value::String(s), Unit::Encounter) if s == "discharge" => {
            IndexEvent::Discharge
        }
        (serde_json::Value::String(s), _) => {
            return Err(format!(
                "index `{s}`: an encounter cohort's index is `admission` or `discharge`; a \
                 patient cohort's is {{\"date\": ...}} or {{\"first\": ...}}"
            ))
        }
        (v, Unit::Patient) => {
            let r: RawIndex =
                serde_json::from_value(v.clone()).map_err(|e| format!("index: {e}"))?;
            match r {
                RawIndex::Date(d) => IndexEvent::Date(
                    parse_instant(&d).ok_or_else(|| format!("index date `{d}` is not a date"))?,
                ),
                RawIndex::First(RawFirst::Condition { codes }) => {
                    IndexEvent::FirstCondition(code_set(&codes)?)
                }
                RawIndex::First(RawFirst::Encounter { class }) => IndexEvent::FirstEncounter(class),
            }
        }
        (_, Unit::Encounter) => {
            return Err("an encounter cohort's index is `admission` or `discharge`".into())
        }
    };
    let inc = raw.include;
    let age = inc.age.map(|r| (r.min, r.max));
    if let Some((lo, hi)) = age {
        if lo.zip(hi).is_some_and(|(l, h)| l > h) || lo.or(hi).is_none() {
            return Err("include.age needs `min` and/or `max`, min <= max".into());
        }
    }
    let length_of_stay = match inc.length_of_stay {
        Some(r) => {
            if unit != Unit::Encounter {
                return Err("include.length_of_stay applies to encounter cohorts".into());
            }
            let lo = r.min.as_deref().map(Span::parse).transpose()?;
            let hi = r.max.as_deref().map(Span::parse).transpose()?;
            if lo.zip(hi).is_some_and(|(l, h)| l > h) || lo.or(hi).is_none() {
                return Err("include.length_of_stay needs `min` and/or `max`, min <= max".into());
            }
            Some((lo, hi))
        }
        None => None,
    };
    let condition = match inc.condition {
        Some(c) => Some((
            code_set(&c.codes)?,
            c.window
                .as_ref()
                .map(window)
                .transpose()?
                .unwrap_or(Window::UP_TO_INDEX),
        )),
        None => None,
    };
    if !inc.encounter_class.is_empty()
        && unit == Unit::Patient
        && !matches!(index, IndexEvent::FirstEncounter(_))
    {
        return Err(
            "include.encounter_class applies to encounter cohorts; a patient cohort names \
             classes in its index ({\"first\": {\"encounter\": {\"class\": [...]}}})"
                .into(),
        );
    }
    Ok(Cohort {
        unit,
        index,
        include: Inclusion {
            age,
            encounter_class: inc.encounter_class,
            length_of_stay,
            condition,
        },
        category: Some(category),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_windows_and_patterns() {
        assert_eq!(Span::parse("-48h"), Ok(Span(-48 * 3600)));
        assert_eq!(Span::parse("30d"), Ok(Span(30 * 86_400)));
        assert_eq!(Span::parse("15min"), Ok(Span(900)));
        assert!(Span::parse("2w").is_err());
        assert!(Span::parse("xh").is_err());
        let w = window(&RawWindow {
            from: Some("-1d".into()),
            to: None,
        })
        .unwrap();
        assert!(w.contains(1000, 1000) && w.contains(1000, 1000 - 86_400));
        assert!(!w.contains(1000, 1001) && !w.contains(1000, 999 - 86_400));
        assert!(window(&RawWindow {
            from: Some("1d".into()),
            to: Some("0h".into())
        })
        .is_err());
        let p = CodePattern::new("icd", "I10*");
        assert!(p.matches(Some("icd"), "I10.9") && !p.matches(Some("x"), "I10"));
        assert!(!p.matches(Some("icd"), "I11"));
        let exact = CodePattern::new("icd", "I10");
        assert!(exact.matches(Some("icd"), "I10") && !exact.matches(Some("icd"), "I10.9"));
        let bad = [RawCode {
            system: "s".into(),
            code: "I*0".into(),
        }];
        assert!(code_set(&bad).is_err());
    }

    /// Found by fuzzing: a code whose last character is not ASCII.
    #[test]
    fn codes_ending_in_a_multibyte_character() {
        let set = |code: &str| {
            code_set(&[RawCode {
                system: "s".into(),
                code: code.into(),
            }])
        };
        assert!(set("9\u{fffd}").unwrap().matches(Some("s"), "9\u{fffd}"));
        assert!(set("Ä*").unwrap().matches(Some("s"), "Äb"));
        assert!(set("*é").is_err());
        for bad in ["", "*", "**", "a*b*"] {
            assert!(set(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn instants() {
        assert_eq!(parse_instant("1970-01-02"), Some(86_400));
        assert_eq!(parse_instant("1970"), Some(0));
        assert_eq!(parse_instant("1970-02"), Some(31 * 86_400));
        assert_eq!(parse_instant("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse_instant("1970-01-01T00:00:10Z"), Some(10));
        assert_eq!(parse_instant("1970-01-01T00:00:10.5"), Some(10));
        assert_eq!(parse_instant("yesterday"), None);
        assert_eq!(parse_instant("2023-02-30"), None);
    }

    #[test]
    fn cohorts_parse_and_refuse() {
        let c = |v: serde_json::Value| cohort(serde_json::from_value(v).unwrap());
        let enc = c(
            serde_json::json!({"unit": "encounter", "index": "admission",
            "category": "ehr_data", "include": {"length_of_stay": {"min": "24h"}}}),
        )
        .unwrap();
        assert_eq!(enc.index, IndexEvent::Admission);
        let pat = c(
            serde_json::json!({"unit": "patient", "category": "ehr_data",
            "index": {"first": {"condition": {"codes": [{"system": "s", "code": "E11*"}]}}}}),
        )
        .unwrap();
        assert!(matches!(pat.index, IndexEvent::FirstCondition(_)));
        assert!(c(
            serde_json::json!({"unit": "patient", "index": "admission", "category": "ehr_data"})
        )
        .is_err());
        assert!(c(serde_json::json!({"unit": "patient", "index": {"date": "soon"}, "category": "ehr_data"})).is_err());
        assert!(c(
            serde_json::json!({"unit": "patient", "index": {"date": "2020-01-01"},
            "category": "ehr_data", "include": {"length_of_stay": {"min": "1d"}}})
        )
        .is_err());
        assert!(c(
            serde_json::json!({"unit": "patient", "index": {"date": "2020-01-01"},
            "category": "astrology"})
        )
        .is_err());
    }
}
