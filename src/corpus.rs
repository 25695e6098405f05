//! A generated multi-site ICU federation written as FHIR R4 Bulk Data exports: one directory
//! per hospital with gzipped NDJSON files per resource type, as `$export` writes them.
//!
//! Each patient has a birth date and gender, chronic conditions recorded years before
//! (hypertension, type 2 diabetes, chronic kidney disease, heart failure), the medications
//! they take (requested before the stay), an earlier outpatient visit for some, and one ICU
//! stay (an inpatient Encounter with its length of stay) during whose first 24 hours heart
//! rate, respiratory rate, systolic blood pressure, temperature and oxygen saturation are
//! charted hourly (each reading missing with some probability) and glucose, creatinine and
//! lactate measured every 8 hours. A latent severity, raised by age and comorbidity, moves
//! the vitals and labs and decides in-hospital death (discharge disposition `exp` and
//! `deceasedDateTime`) and death in the year after discharge. Patients who survive have a
//! follow-up visit months later, which ends their records (survival censoring).
//!
//! The hospitals differ the way real ones do: one codes conditions in SNOMED CT and the
//! others in ICD-10; two prescribe in ATC and one in RxNorm; one charts temperature in
//! degrees Fahrenheit; one reports glucose and creatinine in molar units under the molar
//! LOINC codes; one sends blood pressure as a panel with components. The example code maps
//! (`<site>.codemap.json`) map each to the study's codes.
//!
//! The values are random draws, not data about anyone. The same seed writes the same files.
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};
use sha2::Digest;

use ehds_node::features::{ATC, ICD10, LOINC, RXNORM, SNOMED, UCUM};
use ehds_node::SPLIT_TAG_SYSTEM;

#[derive(clap::Args)]
pub struct CorpusArgs {
    #[arg(long, default_value = "examples/icu-federation")]
    pub out: PathBuf,
    /// Patients per hospital.
    #[arg(long, default_value_t = 120)]
    pub patients: usize,
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// Write plain `.ndjson` instead of `.ndjson.gz`.
    #[arg(long)]
    pub uncompressed: bool,
}

pub fn generate_corpus(args: CorpusArgs) -> anyhow::Result<i32> {
    let counts = generate(
        &args.out,
        &SITES,
        args.patients,
        args.seed,
        !args.uncompressed,
    )?;
    for (site, c) in SITES.iter().zip(&counts) {
        println!(
            "{}: {} patients, {} resources ({} observations), {} deaths ({} in hospital) -> {}",
            site.key,
            c.patients,
            c.resources(),
            c.observations,
            c.deaths,
            c.in_hospital_deaths,
            args.out.join(site.key).display()
        );
    }
    Ok(0)
}

const V3_ACT: &str = "http://terminology.hl7.org/CodeSystem/v3-ActCode";
const DISCHARGE: &str = "http://terminology.hl7.org/CodeSystem/discharge-disposition";
const CATEGORY: &str = "http://terminology.hl7.org/CodeSystem/observation-category";

/// How one hospital records things.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site {
    pub key: &'static str,
    pub member_state: &'static str,
    /// Conditions in SNOMED CT (else ICD-10).
    pub snomed_conditions: bool,
    /// Medications in RxNorm (else ATC).
    pub rxnorm: bool,
    /// Temperature in `[degF]` (else `Cel`).
    pub fahrenheit: bool,
    /// Glucose and creatinine in molar units under the molar LOINC codes.
    pub molar_labs: bool,
    /// Blood pressure as an 85354-9 panel with components (else a single 8480-6).
    pub bp_panel: bool,
}

/// The three hospitals of the generated federation.
pub const SITES: [Site; 3] = [
    Site {
        key: "north",
        member_state: "DE",
        snomed_conditions: true,
        rxnorm: false,
        fahrenheit: false,
        molar_labs: true,
        bp_panel: false,
    },
    Site {
        key: "south",
        member_state: "IT",
        snomed_conditions: false,
        rxnorm: false,
        fahrenheit: false,
        molar_labs: false,
        bp_panel: true,
    },
    Site {
        key: "west",
        member_state: "FR",
        snomed_conditions: false,
        rxnorm: true,
        fahrenheit: true,
        molar_labs: false,
        bp_panel: false,
    },
];

/// (SNOMED CT, ICD-10, display) of the conditions.
const CONDITIONS: [(&str, &str, &str); 5] = [
    ("38341003", "I10", "Hypertensive disorder"),
    ("44054006", "E11.9", "Type 2 diabetes mellitus"),
    ("709044004", "N18.3", "Chronic kidney disease"),
    ("84114007", "I50.9", "Heart failure"),
    ("91302008", "A41.9", "Sepsis"),
];

/// (ATC, RxNorm, display) of the medications.
const MEDICATIONS: [(&str, &str, &str); 4] = [
    ("C09AA03", "29046", "lisinopril"),
    ("A10BA02", "6809", "metformin"),
    ("A10AB01", "5856", "insulin (human)"),
    ("C03CA01", "4603", "furosemide"),
];

/// What [`generate`] wrote for one site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SiteCounts {
    pub patients: usize,
    pub encounters: usize,
    pub observations: usize,
    pub conditions: usize,
    pub medication_requests: usize,
    pub in_hospital_deaths: usize,
    pub deaths: usize,
}

impl SiteCounts {
    pub fn resources(&self) -> usize {
        self.patients
            + self.encounters
            + self.observations
            + self.conditions
            + self.medication_requests
    }
}

struct Writers {
    files: Vec<(&'static str, Box<dyn Write>)>,
}

impl Writers {
    fn new(dir: &Path, gzip: bool) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut files = Vec::new();
        for ty in [
            "Patient",
            "Encounter",
            "Condition",
            "MedicationRequest",
            "Observation",
        ] {
            let name = if gzip {
                format!("{ty}.ndjson.gz")
            } else {
                format!("{ty}.ndjson")
            };
            let f = std::io::BufWriter::new(std::fs::File::create(dir.join(name))?);
            let w: Box<dyn Write> = if gzip {
                Box::new(flate2::write::GzEncoder::new(
                    f,
                    flate2::Compression::new(6),
                ))
            } else {
                Box::new(f)
            };
            files.push((ty, w));
        }
        Ok(Self { files })
    }

    fn write(&mut self, resource: &Value) -> anyhow::Result<()> {
        let ty = resource["resourceType"].as_str().unwrap_or_default();
        let (_, w) = self
            .files
            .iter_mut()
            .find(|(t, _)| *t == ty)
            .expect("a file per generated type");
        serde_json::to_writer(&mut *w, resource)?;
        w.write_all(b"\n")?;
        Ok(())
    }

    fn finish(self) -> anyhow::Result<()> {
        for (_, mut w) in self.files {
            w.flush()?;
        }
        Ok(())
    }
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn when(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .expect("a generated time is in range")
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn day(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .expect("a generated time is in range")
        .format("%Y-%m-%d")
        .to_string()
}

fn concept(system: &str, code: &str, display: &str) -> Value {
    json!({"coding": [{"system": system, "code": code, "display": display}]})
}

fn quantity(value: f64, unit: &str) -> Value {
    // two decimals, as a device or a LIS reports them
    let v = (value * 100.0).round() / 100.0;
    json!({"value": v, "unit": unit, "system": UCUM, "code": unit})
}

/// Write `patients` patients for each of `sites` into `out/<site>/`. Returns per-site counts.
pub fn generate(
    out: &Path,
    sites: &[Site],
    patients: usize,
    seed: u64,
    gzip: bool,
) -> anyhow::Result<Vec<SiteCounts>> {
    let mut all = Vec::new();
    for (n, site) in sites.iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((n as u64 + 1) << 32));
        let mut w = Writers::new(&out.join(site.key), gzip)?;
        let mut counts = SiteCounts::default();
        for p in 0..patients {
            patient(&mut w, &mut rng, site, p, &mut counts)?;
        }
        w.finish()?;
        all.push(counts);
    }
    Ok(all)
}

fn patient(
    w: &mut Writers,
    rng: &mut ChaCha8Rng,
    site: &Site,
    p: usize,
    c: &mut SiteCounts,
) -> anyhow::Result<()> {
    // the gateway accepts only pseudonyms (16+ characters, not a bare number), as a
    // pseudonymisation service would issue them
    let digest = sha2::Sha256::digest(format!("ehds-gateway icu corpus\n{}\n{p}", site.key));
    let pid = format!("psn-{}-{}", site.key, &hex::encode(digest)[..16]);
    let subject = json!({"reference": format!("Patient/{pid}")});
    // admissions spread over 2023-2024
    let admit = 1_672_531_200 + rng.random_range(0..730) * 86_400 + rng.random_range(0..86_400);
    let age: f64 = rng.random_range(18.0..95.0);
    let birth = admit - (age * 365.25 * 86_400.0) as i64;
    let male = rng.random_bool(0.55);
    let old = (age - 60.0) / 15.0;
    let has = [
        rng.random_bool(sigmoid(-0.6 + 0.8 * old)), // hypertension
        rng.random_bool(sigmoid(-1.5 + 0.4 * old)), // diabetes
        rng.random_bool(sigmoid(-2.3 + 0.6 * old)), // CKD
        rng.random_bool(sigmoid(-2.4 + 0.7 * old)), // heart failure
        false,
    ];
    let sepsis = rng.random_bool(0.25);
    let comorbid = has.iter().filter(|h| **h).count() as f64;
    let severity = normal(rng)
        + 0.45 * old
        + 0.25 * comorbid
        + if sepsis { 0.9 } else { 0.0 }
        + if has[2] { 0.3 } else { 0.0 };
    let los_h = (24.0 + 60.0 * rng.random::<f64>() + 30.0 * severity.max(0.0)) as i64;
    let discharge = admit + los_h * 3600;
    let dies_in_hospital = rng.random_bool(sigmoid(-2.6 + 1.3 * severity));
    let later_death = !dies_in_hospital && rng.random_bool(sigmoid(-2.8 + 0.9 * severity));
    let death = if dies_in_hospital {
        Some(discharge)
    } else if later_death {
        Some(discharge + rng.random_range(2..365) * 86_400)
    } else {
        None
    };
    let split = if rng.random_bool(0.7) {
        "train"
    } else {
        "test"
    };

    let mut pat = json!({
        "resourceType": "Patient", "id": pid,
        "meta": {"tag": [{"system": SPLIT_TAG_SYSTEM, "code": split}]},
        "gender": if male { "male" } else { "female" },
        "birthDate": day(birth),
    });
    if let Some(d) = death {
        pat["deceasedDateTime"] = json!(when(d));
    }
    w.write(&pat)?;
    c.patients += 1;
    c.deaths += usize::from(death.is_some());
    c.in_hospital_deaths += usize::from(dies_in_hospital);

    // chronic conditions, recorded 1-10 years before, and sepsis at admission
    let mut conditions: Vec<(usize, i64)> = has
        .iter()
        .enumerate()
        .filter(|(_, h)| **h)
        .map(|(i, _)| (i, admit - rng.random_range(365..3650) * 86_400))
        .collect();
    if sepsis {
        conditions.push((4, admit + rng.random_range(0..6) * 3600));
    }
    for (k, (i, t)) in conditions.iter().enumerate() {
        let (snomed, icd, display) = CONDITIONS[*i];
        let code = if site.snomed_conditions {
            concept(SNOMED, snomed, display)
        } else {
            concept(ICD10, icd, display)
        };
        w.write(&json!({
            "resourceType": "Condition", "id": format!("{pid}-c{k}"),
            "clinicalStatus": concept("http://terminology.hl7.org/CodeSystem/condition-clinical", "active", "Active"),
            "verificationStatus": concept("http://terminology.hl7.org/CodeSystem/condition-ver-status", "confirmed", "Confirmed"),
            "code": code, "subject": subject,
            "onsetDateTime": when(*t), "recordedDate": when(*t),
        }))?;
        c.conditions += 1;
    }

    // medications: the treatment of each chronic condition, requested before the stay
    let mut meds = Vec::new();
    if has[0] {
        meds.push(0);
    }
    if has[1] {
        meds.push(if rng.random_bool(0.3) { 2 } else { 1 });
    }
    if has[3] {
        meds.push(3);
    }
    for (k, m) in meds.iter().enumerate() {
        let (atc, rx, display) = MEDICATIONS[*m];
        let code = if site.rxnorm {
            concept(RXNORM, rx, display)
        } else {
            concept(ATC, atc, display)
        };
        w.write(&json!({
            "resourceType": "MedicationRequest", "id": format!("{pid}-m{k}"),
            "status": "active", "intent": "order",
            "medicationCodeableConcept": code, "subject": subject,
            "authoredOn": when(admit - rng.random_range(30..900) * 86_400),
        }))?;
        c.medication_requests += 1;
    }

    // an earlier outpatient visit for some
    if rng.random_bool(0.4) {
        let t = admit - rng.random_range(30..400) * 86_400;
        w.write(&json!({
            "resourceType": "Encounter", "id": format!("{pid}-e0"), "status": "finished",
            "class": {"system": V3_ACT, "code": "AMB", "display": "ambulatory"},
            "subject": subject, "period": {"start": when(t), "end": when(t + 1800)},
        }))?;
        c.encounters += 1;
    }
    let disposition = if dies_in_hospital {
        ("exp", "Expired")
    } else {
        ("home", "Home")
    };
    w.write(&json!({
        "resourceType": "Encounter", "id": format!("{pid}-icu"), "status": "finished",
        "class": {"system": V3_ACT, "code": "IMP", "display": "inpatient encounter"},
        "subject": subject,
        "period": {"start": when(admit), "end": when(discharge)},
        "hospitalization": {"dischargeDisposition": concept(DISCHARGE, disposition.0, disposition.1)},
    }))?;
    c.encounters += 1;
    // survivors come back for a follow-up visit, which ends their records
    if death.is_none() {
        let t = discharge + rng.random_range(60..500) * 86_400;
        w.write(&json!({
            "resourceType": "Encounter", "id": format!("{pid}-e2"), "status": "finished",
            "class": {"system": V3_ACT, "code": "AMB", "display": "ambulatory"},
            "subject": subject, "period": {"start": when(t), "end": when(t + 1800)},
        }))?;
        c.encounters += 1;
    }

    // vitals hourly over the first 24 hours, each reading present with probability 0.8
    let mut k = 0;
    let mut obs = |w: &mut Writers, code: Value, category: &str, t: i64, body: Value| {
        let mut o = json!({
            "resourceType": "Observation", "id": format!("{pid}-o{k}"), "status": "final",
            "category": [concept(CATEGORY, category, category)],
            "code": code, "subject": subject, "effectiveDateTime": when(t),
        });
        for (key, v) in body.as_object().expect("an object").iter() {
            o[key] = v.clone();
        }
        k += 1;
        c.observations += 1;
        w.write(&o)
    };
    let hours = los_h.min(24);
    for h in 0..hours {
        let t = admit + h * 3600 + rng.random_range(0..1800);
        let drift = h as f64 / 24.0;
        if rng.random_bool(0.8) {
            let hr = 82.0 + 9.0 * severity + 4.0 * drift * severity + 6.0 * normal(rng);
            obs(
                w,
                concept(LOINC, "8867-4", "Heart rate"),
                "vital-signs",
                t,
                json!({"valueQuantity": quantity(hr, "/min")}),
            )?;
        }
        if rng.random_bool(0.8) {
            let rr = 17.0 + 2.5 * severity + 2.0 * normal(rng);
            obs(
                w,
                concept(LOINC, "9279-1", "Respiratory rate"),
                "vital-signs",
                t,
                json!({"valueQuantity": quantity(rr.max(6.0), "/min")}),
            )?;
        }
        if rng.random_bool(0.8) {
            let sbp = 124.0 - 9.0 * severity + 10.0 * normal(rng);
            if site.bp_panel {
                let dbp = sbp * 0.6 + 4.0 * normal(rng);
                obs(
                    w,
                    concept(LOINC, "85354-9", "Blood pressure panel"),
                    "vital-signs",
                    t,
                    json!({
                    "component": [
                        {"code": concept(LOINC, "8480-6", "Systolic blood pressure"), "valueQuantity": quantity(sbp, "mm[Hg]")},
                        {"code": concept(LOINC, "8462-4", "Diastolic blood pressure"), "valueQuantity": quantity(dbp, "mm[Hg]")}
                    ]}),
                )?;
            } else {
                obs(
                    w,
                    concept(LOINC, "8480-6", "Systolic blood pressure"),
                    "vital-signs",
                    t,
                    json!({"valueQuantity": quantity(sbp, "mm[Hg]")}),
                )?;
            }
        }
        if rng.random_bool(0.6) {
            let cel =
                37.0 + 0.5 * severity.max(0.0) * if sepsis { 1.5 } else { 0.5 } + 0.4 * normal(rng);
            let q = if site.fahrenheit {
                quantity(cel * 9.0 / 5.0 + 32.0, "[degF]")
            } else {
                quantity(cel, "Cel")
            };
            obs(
                w,
                concept(LOINC, "8310-5", "Body temperature"),
                "vital-signs",
                t,
                json!({"valueQuantity": q}),
            )?;
        }
        if rng.random_bool(0.8) {
            let spo2 = (96.5 - 1.8 * severity.max(0.0) + 1.2 * normal(rng)).min(100.0);
            obs(
                w,
                concept(LOINC, "59408-5", "Oxygen saturation by pulse oximetry"),
                "vital-signs",
                t,
                json!({"valueQuantity": quantity(spo2, "%")}),
            )?;
        }
    }
    // laboratory every 8 hours; lactate only for the patients it was ordered for
    let lactate_ordered = rng.random_bool(0.65);
    for h in (0..hours).step_by(8) {
        let t = admit + h * 3600 + rng.random_range(0..3600);
        let glucose =
            120.0 + if has[1] { 45.0 } else { 0.0 } + 15.0 * severity + 20.0 * normal(rng);
        let creat =
            (0.9 + if has[2] { 1.1 } else { 0.0 } + 0.35 * severity.max(0.0) + 0.2 * normal(rng))
                .max(0.3);
        let lactate = (1.3 + 0.9 * severity.max(0.0) + 0.4 * normal(rng)).max(0.4);
        if site.molar_labs {
            obs(
                w,
                concept(LOINC, "15074-8", "Glucose [Moles/volume] in Blood"),
                "laboratory",
                t,
                json!({"valueQuantity": quantity(glucose / 18.0156, "mmol/L")}),
            )?;
            obs(
                w,
                concept(
                    LOINC,
                    "14682-9",
                    "Creatinine [Moles/volume] in Serum or Plasma",
                ),
                "laboratory",
                t,
                json!({"valueQuantity": quantity(creat * 88.42, "umol/L")}),
            )?;
        } else {
            obs(
                w,
                concept(LOINC, "2345-7", "Glucose [Mass/volume] in Serum or Plasma"),
                "laboratory",
                t,
                json!({"valueQuantity": quantity(glucose.max(40.0), "mg/dL")}),
            )?;
            obs(
                w,
                concept(
                    LOINC,
                    "2160-0",
                    "Creatinine [Mass/volume] in Serum or Plasma",
                ),
                "laboratory",
                t,
                json!({"valueQuantity": quantity(creat, "mg/dL")}),
            )?;
        }
        if lactate_ordered {
            obs(
                w,
                concept(LOINC, "2524-7", "Lactate [Moles/volume] in Serum or Plasma"),
                "laboratory",
                t,
                json!({"valueQuantity": quantity(lactate, "mmol/L")}),
            )?;
        }
    }
    Ok(())
}
