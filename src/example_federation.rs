//! The example federation: the four hospitals of the UCI Heart Disease data set as four FHIR
//! Bundles (type `collection`), one per data holder, plus a sample opt-out file.
//!
//! Each line of a `processed.<hospital>.data` file becomes one Patient (its id a stable,
//! non-identifying pseudonym, [`pseudonym`]) with one Observation per clinical variable that
//! is present, and a Condition when the angiographic diagnosis is positive (`num > 0`). A
//! missing value (`?`) yields no Observation, so the gap stays visible. The FLamby
//! Fed-Heart-Disease train/test assignment travels as a `meta.tag` on the Patient
//! ([`SPLIT_TAG_SYSTEM`]); lines outside the split (those with a missing value) carry no tag.
//!
//! Codes. LOINC where a code fits: age 30525-0 (UCUM `a`), systolic blood pressure 8480-6
//! (`mm[Hg]`), serum cholesterol 2093-3 (`mg/dL`), fasting glucose 1558-6, EKG impression
//! 8601-7, heart rate 8867-4 (`/min`) with a method saying it is the maximum reached in the
//! exercise test. The source records fasting glucose only as "above 120 mg/dL or not"; the
//! Observation says exactly that with a censored quantity (`> 120 mg/dL` or `<= 120 mg/dL`),
//! which the `above` transform reads like a measured value. Chest pain type, exercise-induced
//! angina and exercise ST depression have no LOINC code we could vouch for, so they use the
//! local code system [`OBSERVATION_SYSTEM`]; the values of chest pain type and resting ECG use
//! the local systems [`CP_SYSTEM`] and [`RESTECG_SYSTEM`] with the UCI codes. The diagnosis is
//! SNOMED CT 53741008 (coronary arteriosclerosis), clinical status active; the angiographic
//! disease status itself (UCI `num`, 0..4, the data set's original multi-class target) is an
//! Observation with a coded value in the local system [`NUM_SYSTEM`].
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};
use fhir_sdk::r4b::codes::{
    AdministrativeGender, BundleType, ObservationStatus, QuantityComparator,
};
use fhir_sdk::r4b::resources::{
    Bundle, BundleEntry, Condition, Observation, ObservationValue, Patient, Resource,
};
use fhir_sdk::r4b::types::{Annotation, CodeableConcept, Coding, Meta, Quantity, Reference};
use sha2::{Digest, Sha256};

use ehds_node::features::{LOINC, SNOMED, UCUM};
use ehds_node::SPLIT_TAG_SYSTEM;

/// Local code system for observations without a suitable LOINC code.
pub const OBSERVATION_SYSTEM: &str = "urn:ehds-gateway:example:observation";
/// Local code system of chest pain types (UCI `cp`, 1..4).
pub const CP_SYSTEM: &str = "urn:ehds-gateway:example:cp";
/// Local code system of resting ECG results (UCI `restecg`, 0..2).
pub const RESTECG_SYSTEM: &str = "urn:ehds-gateway:example:restecg";
/// Local code system of the angiographic disease status (UCI `num`, 0..4).
pub const NUM_SYSTEM: &str = "urn:ehds-gateway:example:num";
/// Local code system of observation methods.
pub const METHOD_SYSTEM: &str = "urn:ehds-gateway:example:method";

const CATEGORY_SYSTEM: &str = "http://terminology.hl7.org/CodeSystem/observation-category";

/// One data holder of the example federation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hospital {
    /// Short name, as in FLamby's split file and the output file name.
    pub key: &'static str,
    /// Where the data were collected.
    pub name: &'static str,
    /// The EU member state the example assigns (a fiction: see the README).
    pub member_state: &'static str,
}

pub const HOSPITALS: [Hospital; 4] = [
    Hospital {
        key: "cleveland",
        name: "Cleveland Clinic Foundation",
        member_state: "DE",
    },
    Hospital {
        key: "hungarian",
        name: "Hungarian Institute of Cardiology, Budapest",
        member_state: "HU",
    },
    Hospital {
        key: "switzerland",
        name: "University Hospitals of Zurich and Basel",
        member_state: "AT",
    },
    Hospital {
        key: "va",
        name: "V.A. Medical Center, Long Beach",
        member_state: "NL",
    },
];

/// The example opt-outs: (hospital, 0-based line of the processed file). Five of these
/// subjects are complete and in the FLamby split; Hungarian line 2 has a missing value, so it
/// shows an opt-out of a subject that would not have been trained on anyway.
pub const OPTOUT_LINES: [(&str, usize); 6] = [
    ("cleveland", 3),
    ("cleveland", 7),
    ("hungarian", 2),
    ("hungarian", 5),
    ("switzerland", 5),
    ("va", 1),
];

/// When the example opt-outs take effect.
pub const OPTOUT_EFFECTIVE_FROM: &str = "2026-01-01T00:00:00Z";

/// What [`convert`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub sites: Vec<SiteSummary>,
    pub optouts_path: PathBuf,
    pub optouts: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteSummary {
    pub hospital: &'static str,
    pub member_state: &'static str,
    pub path: PathBuf,
    pub bytes: u64,
    pub patients: usize,
    pub observations: usize,
    pub conditions: usize,
    pub train: usize,
    pub test: usize,
}

/// The stable pseudonym of line `line` (0-based) of `hospital`'s file: a hash of the two, so
/// it is reproducible and carries no attribute of the person. A real data holder takes its
/// pseudonyms from its pseudonymisation service (a keyed HMAC) instead.
pub fn pseudonym(hospital: &str, line: usize) -> String {
    let digest = Sha256::digest(format!(
        "ehds-gateway example federation\n{hospital}\n{line}"
    ));
    format!("psn-{hospital}-{}", &hex::encode(digest)[..16])
}

/// Read the four processed files and FLamby's split from `uci_dir` (as in
/// `fl_engine/data/heart_disease`), write `<hospital>.json` for each hospital and
/// `optouts.ndjson` into `out_dir`.
pub fn convert(uci_dir: &Path, out_dir: &Path) -> anyhow::Result<Summary> {
    let split_path = uci_dir.join("flamby_split.csv");
    let split_text = std::fs::read_to_string(&split_path)
        .with_context(|| format!("reading {}", split_path.display()))?;
    let splits = parse_split(&split_text)?;
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;

    let mut sites = Vec::new();
    for h in HOSPITALS {
        let path = uci_dir.join(format!("processed.{}.data", h.key));
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let empty = BTreeMap::new();
        let split = splits.get(h.key).unwrap_or(&empty);
        let (bundle, mut summary) = hospital_bundle(h, &text, split)?;
        let mut json = serde_json::to_string_pretty(&bundle)?;
        json.push('\n');
        summary.path = out_dir.join(format!("{}.json", h.key));
        std::fs::write(&summary.path, &json)
            .with_context(|| format!("writing {}", summary.path.display()))?;
        summary.bytes = json.len() as u64;
        sites.push(summary);
    }

    let mut ndjson = String::new();
    for (n, (key, line)) in OPTOUT_LINES.iter().enumerate() {
        let h = HOSPITALS
            .iter()
            .find(|h| h.key == *key)
            .ok_or_else(|| anyhow!("unknown hospital {key}"))?;
        let record = OptOutRecord {
            id: format!("example-optout-{}", n + 1),
            subject_pseudonym: pseudonym(key, *line),
            member_state: h.member_state,
            effective_from: OPTOUT_EFFECTIVE_FROM,
        };
        writeln!(ndjson, "{}", serde_json::to_string(&record)?)?;
    }
    let optouts_path = out_dir.join("optouts.ndjson");
    std::fs::write(&optouts_path, ndjson)
        .with_context(|| format!("writing {}", optouts_path.display()))?;
    Ok(Summary {
        sites,
        optouts_path,
        optouts: OPTOUT_LINES.len(),
    })
}

/// One line of `optouts.ndjson`, in the gateway's import format (a struct, so the field
/// order does not depend on serde_json's features).
#[derive(serde::Serialize)]
struct OptOutRecord {
    id: String,
    subject_pseudonym: String,
    member_state: &'static str,
    effective_from: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Set {
    Train,
    Test,
}

/// hospital -> line -> set, from `center_id,center,line,set`.
fn parse_split(text: &str) -> anyhow::Result<BTreeMap<String, BTreeMap<usize, Set>>> {
    let mut out: BTreeMap<String, BTreeMap<usize, Set>> = BTreeMap::new();
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("center_id,center,line,set") {
        bail!("flamby_split.csv: unexpected header");
    }
    for (i, l) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f: Vec<&str> = l.trim().split(',').collect();
        let [_, center, line, set] = f[..] else {
            bail!("flamby_split.csv line {}: expected 4 fields", i + 2);
        };
        let set = match set {
            "train" => Set::Train,
            "test" => Set::Test,
            other => bail!("flamby_split.csv line {}: unknown set `{other}`", i + 2),
        };
        let line: usize = line
            .parse()
            .with_context(|| format!("flamby_split.csv line {}", i + 2))?;
        if out
            .entry(center.to_owned())
            .or_default()
            .insert(line, set)
            .is_some()
        {
            bail!("flamby_split.csv: {center} line {line} listed twice");
        }
    }
    Ok(out)
}

fn coding(system: &str, code: &str, display: &str) -> anyhow::Result<Coding> {
    Ok(Coding::builder()
        .system(system.to_owned())
        .code(code.to_owned())
        .display(display.to_owned())
        .build()?)
}

fn concept(system: &str, code: &str, display: &str) -> anyhow::Result<CodeableConcept> {
    Ok(CodeableConcept::builder()
        .coding(vec![Some(coding(system, code, display)?)])
        .build()?)
}

fn quantity(
    value: f64,
    comparator: Option<QuantityComparator>,
    unit: &str,
    ucum: &str,
) -> anyhow::Result<ObservationValue> {
    let b = Quantity::builder()
        .value(value)
        .unit(unit.to_owned())
        .system(UCUM.to_owned())
        .code(ucum.to_owned());
    let b = match comparator {
        Some(c) => b.comparator(c),
        None => b,
    };
    Ok(ObservationValue::Quantity(b.build()?))
}

fn entry(base: &str, kind: &str, id: &str, resource: Resource) -> anyhow::Result<BundleEntry> {
    Ok(BundleEntry::builder()
        .full_url(format!("{base}/{kind}/{id}"))
        .resource(resource)
        .build()?)
}

/// One parsed line: the 14 UCI columns, `None` where the file has `?`.
struct Line([Option<f64>; 14]);

impl Line {
    fn parse(text: &str) -> anyhow::Result<Self> {
        let cols: Vec<&str> = text.trim().split(',').collect();
        if cols.len() != 14 {
            bail!("expected 14 columns, got {}", cols.len());
        }
        let mut v = [None; 14];
        for (slot, c) in v.iter_mut().zip(&cols) {
            let c = c.trim();
            if c != "?" {
                *slot = Some(c.parse::<f64>().with_context(|| format!("value `{c}`"))?);
            }
        }
        Ok(Self(v))
    }

    /// A coded column: an integer within `range`.
    fn level(
        &self,
        col: usize,
        range: std::ops::RangeInclusive<i64>,
    ) -> anyhow::Result<Option<i64>> {
        self.0[col]
            .map(|v| {
                if v.fract() == 0.0 && range.contains(&(v as i64)) {
                    Ok(v as i64)
                } else {
                    Err(anyhow!("column {col}: {v} is not a level in {range:?}"))
                }
            })
            .transpose()
    }
}

struct ObsDraft {
    slug: &'static str,
    code: CodeableConcept,
    category: Option<(&'static str, &'static str)>,
    method: Option<CodeableConcept>,
    value: ObservationValue,
    note: Option<&'static str>,
}

const CP_DISPLAY: [&str; 4] = [
    "typical angina",
    "atypical angina",
    "non-anginal pain",
    "asymptomatic",
];
const RESTECG_DISPLAY: [&str; 3] = [
    "normal",
    "ST-T wave abnormality",
    "probable or definite left ventricular hypertrophy by Estes' criteria",
];

const NUM_DISPLAY: [&str; 5] = [
    "less than 50% diameter narrowing",
    "more than 50% diameter narrowing, level 1",
    "more than 50% diameter narrowing, level 2",
    "more than 50% diameter narrowing, level 3",
    "more than 50% diameter narrowing, level 4",
];

fn observations(l: &Line) -> anyhow::Result<Vec<ObsDraft>> {
    let vital = Some(("vital-signs", "Vital Signs"));
    let lab = Some(("laboratory", "Laboratory"));
    let exam = Some(("exam", "Exam"));
    let mut out = Vec::new();
    let mut push = |slug, code, category, method, value, note| {
        out.push(ObsDraft {
            slug,
            code,
            category,
            method,
            value,
            note,
        })
    };
    if let Some(age) = l.0[0] {
        push(
            "age",
            concept(LOINC, "30525-0", "Age")?,
            None,
            None,
            quantity(age, None, "years", "a")?,
            None,
        );
    }
    if let Some(cp) = l.level(2, 1..=4)? {
        push(
            "cp",
            concept(OBSERVATION_SYSTEM, "chest-pain-type", "Chest pain type")?,
            exam,
            None,
            ObservationValue::CodeableConcept(concept(
                CP_SYSTEM,
                &cp.to_string(),
                CP_DISPLAY[(cp - 1) as usize],
            )?),
            None,
        );
    }
    if let Some(bp) = l.0[3] {
        push(
            "bp",
            concept(LOINC, "8480-6", "Systolic blood pressure")?,
            vital,
            None,
            quantity(bp, None, "mmHg", "mm[Hg]")?,
            Some("Resting blood pressure on admission to the hospital."),
        );
    }
    if let Some(chol) = l.0[4] {
        push(
            "chol",
            concept(
                LOINC,
                "2093-3",
                "Cholesterol [Mass/volume] in Serum or Plasma",
            )?,
            lab,
            None,
            quantity(chol, None, "mg/dL", "mg/dL")?,
            None,
        );
    }
    if let Some(fbs) = l.level(5, 0..=1)? {
        let cmp = if fbs == 1 {
            QuantityComparator::Greater
        } else {
            QuantityComparator::LessOrEqual
        };
        push(
            "fbs",
            concept(
                LOINC,
                "1558-6",
                "Fasting glucose [Mass/volume] in Serum or Plasma",
            )?,
            lab,
            None,
            quantity(120.0, Some(cmp), "mg/dL", "mg/dL")?,
            Some("The source records only whether fasting blood sugar exceeded 120 mg/dL."),
        );
    }
    if let Some(ecg) = l.level(6, 0..=2)? {
        push(
            "ecg",
            concept(LOINC, "8601-7", "EKG impression")?,
            exam,
            None,
            ObservationValue::CodeableConcept(concept(
                RESTECG_SYSTEM,
                &ecg.to_string(),
                RESTECG_DISPLAY[ecg as usize],
            )?),
            Some("Resting electrocardiographic result."),
        );
    }
    if let Some(hr) = l.0[7] {
        push(
            "hr",
            concept(LOINC, "8867-4", "Heart rate")?,
            vital,
            Some(concept(
                METHOD_SYSTEM,
                "exercise-test-maximum",
                "Maximum reached during an exercise test",
            )?),
            quantity(hr, None, "beats/minute", "/min")?,
            None,
        );
    }
    if let Some(exang) = l.level(8, 0..=1)? {
        push(
            "exang",
            concept(
                OBSERVATION_SYSTEM,
                "exercise-induced-angina",
                "Exercise-induced angina",
            )?,
            exam,
            None,
            ObservationValue::Boolean(exang == 1),
            None,
        );
    }
    if let Some(st) = l.0[9] {
        push(
            "st",
            concept(
                OBSERVATION_SYSTEM,
                "exercise-st-depression",
                "ST depression induced by exercise relative to rest",
            )?,
            exam,
            None,
            quantity(st, None, "mm", "mm")?,
            None,
        );
    }
    // the data set's original multi-class target, beside the Condition that says only
    // whether it is above 0
    if let Some(num) = l.level(13, 0..=4)? {
        push(
            "num",
            concept(
                OBSERVATION_SYSTEM,
                "angiographic-disease-status",
                "Angiographic disease status",
            )?,
            Some(("procedure", "Procedure")),
            None,
            ObservationValue::CodeableConcept(concept(
                NUM_SYSTEM,
                &num.to_string(),
                NUM_DISPLAY[num as usize],
            )?),
            Some(
                "UCI num: 0 is less than 50% diameter narrowing of a major vessel; 1 to 4 are \
                  increasing levels of disease with more than 50% narrowing.",
            ),
        );
    }
    Ok(out)
}

fn hospital_bundle(
    h: Hospital,
    text: &str,
    split: &BTreeMap<usize, Set>,
) -> anyhow::Result<(Bundle, SiteSummary)> {
    let base = format!("https://{}.example/fhir", h.key);
    let mut entries = Vec::new();
    let mut s = SiteSummary {
        hospital: h.key,
        member_state: h.member_state,
        path: PathBuf::new(),
        bytes: 0,
        patients: 0,
        observations: 0,
        conditions: 0,
        train: 0,
        test: 0,
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if let Some(last) = split.keys().next_back() {
        if *last >= lines.len() {
            bail!("{}: the split names line {last} of {}", h.key, lines.len());
        }
    }
    for (n, raw) in lines.iter().enumerate() {
        let l = Line::parse(raw).with_context(|| format!("{} line {n}", h.key))?;
        let psn = pseudonym(h.key, n);
        let subject = Reference::builder()
            .reference(format!("Patient/{psn}"))
            .build()?;

        let mut patient = Patient::builder().id(psn.clone());
        if let Some(sex) = l.level(1, 0..=1)? {
            patient = patient.gender(if sex == 1 {
                AdministrativeGender::Male
            } else {
                AdministrativeGender::Female
            });
        }
        if let Some(set) = split.get(&n) {
            let (code, display) = match set {
                Set::Train => {
                    s.train += 1;
                    ("train", "FLamby Fed-Heart-Disease training set")
                }
                Set::Test => {
                    s.test += 1;
                    ("test", "FLamby Fed-Heart-Disease test set")
                }
            };
            patient = patient.meta(
                Meta::builder()
                    .tag(vec![Some(coding(SPLIT_TAG_SYSTEM, code, display)?)])
                    .build()?,
            );
        }
        let patient = patient
            .managing_organization(Reference::builder().display(h.name.to_owned()).build()?)
            .build()?;
        entries.push(Some(entry(&base, "Patient", &psn, patient.into())?));
        s.patients += 1;

        for o in observations(&l).with_context(|| format!("{} line {n}", h.key))? {
            let id = format!("{psn}-{}", o.slug);
            let mut b = Observation::builder()
                .id(id.clone())
                .status(ObservationStatus::Final)
                .code(o.code)
                .subject(subject.clone())
                .value(o.value);
            if let Some((code, display)) = o.category {
                b = b.category(vec![Some(concept(CATEGORY_SYSTEM, code, display)?)]);
            }
            if let Some(m) = o.method {
                b = b.method(m);
            }
            if let Some(note) = o.note {
                b = b.note(vec![Some(
                    Annotation::builder().text(note.to_owned()).build()?,
                )]);
            }
            entries.push(Some(entry(&base, "Observation", &id, b.build()?.into())?));
            s.observations += 1;
        }

        let num = l
            .level(13, 0..=4)?
            .ok_or_else(|| anyhow!("{} line {n}: the diagnosis (num) is missing", h.key))?;
        if num > 0 {
            let id = format!("{psn}-chd");
            let condition = Condition::builder()
                .id(id.clone())
                .clinical_status(concept(
                    "http://terminology.hl7.org/CodeSystem/condition-clinical",
                    "active",
                    "Active",
                )?)
                .verification_status(concept(
                    "http://terminology.hl7.org/CodeSystem/condition-ver-status",
                    "confirmed",
                    "Confirmed",
                )?)
                .code(concept(SNOMED, "53741008", "Coronary arteriosclerosis")?)
                .subject(subject)
                .note(vec![Some(
                    Annotation::builder()
                        .text(format!(
                            "Angiographic disease status: more than 50% diameter narrowing \
                             (UCI num = {num})."
                        ))
                        .build()?,
                )])
                .build()?;
            entries.push(Some(entry(&base, "Condition", &id, condition.into())?));
            s.conditions += 1;
        }
    }
    if s.train + s.test != split.len() {
        bail!("{}: the split lists lines that are not in the file", h.key);
    }
    let bundle = Bundle::builder()
        .id(format!("example-federation-{}", h.key))
        .r#type(BundleType::Collection)
        .entry(entries)
        .build()?;
    Ok((bundle, s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ehds_core::domain::SubjectPseudonym;

    #[test]
    fn pseudonyms_are_stable_distinct_and_accepted_by_the_registry() {
        assert_eq!(pseudonym("va", 1), pseudonym("va", 1));
        assert_ne!(pseudonym("va", 1), pseudonym("va", 2));
        assert_ne!(pseudonym("va", 1), pseudonym("cleveland", 1));
        for h in HOSPITALS {
            for line in [0, 1, 299] {
                let p = pseudonym(h.key, line);
                assert!(SubjectPseudonym::parse(&p).is_ok(), "{p}");
                assert!(p.len() <= 64, "FHIR ids are at most 64 characters: {p}");
            }
        }
    }

    #[test]
    fn one_line_by_hand() {
        let split = BTreeMap::from([(0, Set::Test)]);
        let text = "63.0,1.0,1.0,145.0,?,1.0,2.0,150.0,0.0,2.3,3.0,0.0,6.0,2\n";
        let (b, s) = hospital_bundle(HOSPITALS[0], text, &split).unwrap();
        // Patient, 9 observations (cholesterol missing, the disease status added), 1 condition
        assert_eq!((s.patients, s.observations, s.conditions), (1, 9, 1));
        assert_eq!((s.train, s.test), (0, 1));
        let json = serde_json::to_value(&b).unwrap();
        assert_eq!(json["type"], "collection");
        let p = &json["entry"][0]["resource"];
        assert_eq!(p["resourceType"], "Patient");
        assert_eq!(p["gender"], "male");
        assert_eq!(p["meta"]["tag"][0]["code"], "test");
        let fbs = json["entry"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["resource"]["code"]["coding"][0]["code"] == "1558-6")
            .unwrap();
        assert_eq!(fbs["resource"]["valueQuantity"]["comparator"], ">");
        let num = json["entry"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["resource"]["code"]["coding"][0]["code"] == "angiographic-disease-status")
            .unwrap();
        assert_eq!(
            num["resource"]["valueCodeableConcept"]["coding"][0],
            serde_json::json!({"system": NUM_SYSTEM, "code": "2",
                               "display": "more than 50% diameter narrowing, level 2"})
        );
        assert!(
            hospital_bundle(HOSPITALS[0], "63,1,9,145,1,1,2,150,0,2.3,3,0,6,2", &split).is_err()
        );
        assert!(hospital_bundle(HOSPITALS[0], "63,1", &BTreeMap::new()).is_err());
        let beyond = BTreeMap::from([(5, Set::Train)]);
        assert!(hospital_bundle(HOSPITALS[0], text, &beyond).is_err());
    }
}
