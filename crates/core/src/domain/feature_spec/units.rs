//! Unit conversion of Observation quantities into the unit a feature specification asks for.
//!
//! Commensurable units (UCUM §17: the same dimension, `kPa` and `mm[Hg]`, `Cel` and `[degF]`,
//! `mg/dL` and `g/L`) convert through the UCUM tables of `octofhir-ucum`. A mass and an
//! amount of substance are not commensurable (`mg/dL` and `mmol/L`): converting between them
//! needs the analyte's molar mass, which [`ANALYTES`] gives for the common laboratory analytes,
//! keyed by their LOINC codes (both the mass and the molar variant). Equivalents (`meq`) are
//! moles in UCUM; for an ion of charge 2 (calcium, magnesium) that is wrong by a factor of 2,
//! so a conversion between `eq` and `mol` needs the ion's charge from the same table. Anything
//! else is refused with a message that names the units and the code.
//!
//! Clinical systems often send a human-readable unit instead of a UCUM code (`mmHg`, `bpm`,
//! `°C`, `mEq/L`); [`ALIASES`] maps the common ones, and a holder's code map may add its own.
//!
//! Conversions are affine (`y = a x + b`) for every unit read here; a [`Converter`] works out
//! `a` and `b` once per source unit and caches them, so the hot path does no parsing.
use std::collections::HashMap;

/// Human-readable units and UCUM codes as clinical systems write them.
pub const ALIASES: &[(&str, &str)] = &[
    ("mmHg", "mm[Hg]"),
    ("mm Hg", "mm[Hg]"),
    ("cmH2O", "cm[H2O]"),
    ("bpm", "/min"),
    ("beats/min", "/min"),
    ("beats/minute", "/min"),
    ("breaths/min", "/min"),
    ("breaths/minute", "/min"),
    ("{beats}/min", "/min"),
    ("{breaths}/min", "/min"),
    ("°C", "Cel"),
    ("degC", "Cel"),
    ("C", "Cel"),
    ("°F", "[degF]"),
    ("degF", "[degF]"),
    ("F", "[degF]"),
    ("mEq/L", "meq/L"),
    ("years", "a"),
    ("year", "a"),
    ("yr", "a"),
    ("lb", "[lb_av]"),
    ("lbs", "[lb_av]"),
    ("in", "[in_i]"),
    ("inch", "[in_i]"),
    ("µmol/L", "umol/L"),
    ("μmol/L", "umol/L"),
    ("µg/L", "ug/L"),
];

/// A laboratory analyte whose mass and amount concentrations convert into each other.
#[derive(Debug, Clone, Copy)]
pub struct Analyte {
    pub name: &'static str,
    /// LOINC codes of the analyte's mass and molar observations.
    pub loinc: &'static [&'static str],
    /// Molar mass in g/mol (for urea nitrogen: of the two nitrogen atoms of one urea).
    pub molar_mass: f64,
    /// Charge of the ion, for conversions between equivalents and moles.
    pub charge: Option<u8>,
}

/// The analytes the node converts between mass and amount units. Molar masses from the
/// IUPAC standard atomic weights; the conventional factors of clinical chemistry follow
/// (e.g. glucose mg/dL x 0.0555 = mmol/L, creatinine mg/dL x 88.4 = umol/L).
pub const ANALYTES: &[Analyte] = &[
    Analyte {
        name: "glucose",
        loinc: &[
            "2345-7", "2339-0", "1558-6", "41653-7", "15074-8", "14749-6", "14771-0",
        ],
        molar_mass: 180.156,
        charge: None,
    },
    Analyte {
        name: "cholesterol",
        loinc: &[
            "2093-3", "14647-2", "2085-9", "14646-4", "2089-1", "13457-7", "22748-8",
        ],
        molar_mass: 386.654,
        charge: None,
    },
    Analyte {
        name: "triglycerides",
        loinc: &["2571-8", "14927-8"],
        molar_mass: 885.7,
        charge: None,
    },
    Analyte {
        name: "creatinine",
        loinc: &["2160-0", "38483-4", "14682-9"],
        molar_mass: 113.12,
        charge: None,
    },
    Analyte {
        name: "urea nitrogen",
        loinc: &["3094-0", "6299-2", "22664-7"],
        molar_mass: 28.014,
        charge: None,
    },
    Analyte {
        name: "uric acid",
        loinc: &["3084-1", "14933-6"],
        molar_mass: 168.11,
        charge: None,
    },
    Analyte {
        name: "bilirubin",
        loinc: &["1975-2", "14631-6"],
        molar_mass: 584.66,
        charge: None,
    },
    Analyte {
        name: "lactate",
        loinc: &["2524-7", "32693-4", "14118-4"],
        molar_mass: 90.08,
        charge: None,
    },
    Analyte {
        name: "hemoglobin (monomer)",
        loinc: &["718-7", "59260-0"],
        molar_mass: 16_114.5,
        charge: None,
    },
    Analyte {
        name: "iron",
        loinc: &["2498-4", "14798-3"],
        molar_mass: 55.845,
        charge: None,
    },
    Analyte {
        name: "phosphate (as phosphorus)",
        loinc: &["2777-1", "14879-1"],
        molar_mass: 30.974,
        charge: None,
    },
    Analyte {
        name: "calcium",
        loinc: &["17861-6", "2000-8"],
        molar_mass: 40.078,
        charge: Some(2),
    },
    Analyte {
        name: "magnesium",
        loinc: &["19123-9", "2601-3"],
        molar_mass: 24.305,
        charge: Some(2),
    },
    Analyte {
        name: "sodium",
        loinc: &["2951-2", "2947-0"],
        molar_mass: 22.990,
        charge: Some(1),
    },
    Analyte {
        name: "potassium",
        loinc: &["2823-3", "6298-4"],
        molar_mass: 39.098,
        charge: Some(1),
    },
    Analyte {
        name: "chloride",
        loinc: &["2075-0"],
        molar_mass: 35.45,
        charge: Some(1),
    },
    Analyte {
        name: "bicarbonate",
        loinc: &["1963-8", "1959-6"],
        molar_mass: 61.017,
        charge: Some(1),
    },
];

/// The analyte a LOINC code measures, if the table has it.
pub fn analyte(loinc: &str) -> Option<&'static Analyte> {
    ANALYTES.iter().find(|a| a.loinc.contains(&loinc))
}

/// Whether `unit` is a valid UCUM expression (after aliasing).
pub fn check_unit(unit: &str) -> Result<(), String> {
    octofhir_ucum::validate(canonical_alias(unit, &[]))
        .map_err(|e| format!("`{unit}` is not a UCUM unit: {e}"))
}

fn canonical_alias<'a>(unit: &'a str, extra: &'a [(String, String)]) -> &'a str {
    let unit = unit.trim();
    extra
        .iter()
        .find(|(a, _)| a == unit)
        .map(|(_, u)| u.as_str())
        .or_else(|| ALIASES.iter().find(|(a, _)| *a == unit).map(|(_, u)| *u))
        .unwrap_or(unit)
}

/// `y = scale x + offset`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Affine {
    pub scale: f64,
    pub offset: f64,
}

impl Affine {
    const IDENTITY: Affine = Affine {
        scale: 1.0,
        offset: 0.0,
    };

    pub fn apply(self, x: f64) -> f64 {
        self.scale * x + self.offset
    }
}

fn ucum_affine(from: &str, to: &str) -> Result<Affine, String> {
    let at = |x: f64| octofhir_ucum::convert(x, from, to).map_err(|e| e.to_string());
    let (y0, y1, y2) = (at(0.0)?, at(1.0)?, at(2.0)?);
    let (scale, offset) = (y1 - y0, y0);
    if ((y2 - y1) - scale).abs() > 1e-9 * scale.abs().max(1e-300) {
        return Err(format!("`{from}` to `{to}` is not a linear conversion"));
    }
    Ok(Affine { scale, offset })
}

fn commensurable(a: &str, b: &str) -> bool {
    octofhir_ucum::is_comparable(a, b).unwrap_or(false)
}

fn mentions_equivalents(unit: &str) -> bool {
    unit.contains("eq")
}

/// The conversion of `from` into `to` for an Observation coded `loinc`.
pub fn conversion(from: &str, to: &str, loinc: Option<&str>) -> Result<Affine, String> {
    if from == to {
        return Ok(Affine::IDENTITY);
    }
    octofhir_ucum::validate(from).map_err(|e| format!("`{from}` is not a UCUM unit: {e}"))?;
    let code = loinc.unwrap_or("(no LOINC code)");
    let needs_analyte = |why: &str| {
        format!(
            "converting `{from}` to `{to}` needs the {why} of the analyte of {code}, which the \
             node's table does not have (it knows {})",
            ANALYTES
                .iter()
                .map(|a| a.name)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    if commensurable(from, to) {
        let affine = ucum_affine(from, to)?;
        if mentions_equivalents(from) == mentions_equivalents(to) {
            return Ok(affine);
        }
        // UCUM counts an equivalent as one mole whatever the ion's charge.
        let charge = loinc
            .and_then(analyte)
            .and_then(|a| a.charge)
            .ok_or_else(|| needs_analyte("charge"))?;
        let z = f64::from(charge);
        let scale = if mentions_equivalents(from) {
            affine.scale / z
        } else {
            affine.scale * z
        };
        return Ok(Affine { scale, offset: 0.0 });
    }
    for (mass, amount) in [("g/L", "mol/L"), ("g", "mol")] {
        let forward = commensurable(from, mass) && commensurable(to, amount);
        let backward = commensurable(from, amount) && commensurable(to, mass);
        if !(forward || backward) {
            continue;
        }
        let a = loinc
            .and_then(analyte)
            .ok_or_else(|| needs_analyte("molar mass"))?;
        let (into, out) = if forward {
            (ucum_affine(from, mass)?, ucum_affine(amount, to)?)
        } else {
            (ucum_affine(from, amount)?, ucum_affine(mass, to)?)
        };
        let molar = if forward {
            1.0 / a.molar_mass
        } else {
            a.molar_mass
        };
        let mut scale = into.scale * molar * out.scale;
        // equivalents on the amount side
        let amount_unit = if forward { to } else { from };
        if mentions_equivalents(amount_unit) {
            let z = f64::from(a.charge.ok_or_else(|| needs_analyte("charge"))?);
            scale = if forward { scale * z } else { scale / z };
        }
        return Ok(Affine { scale, offset: 0.0 });
    }
    Err(format!(
        "`{from}` cannot be converted to `{to}`: the units measure different quantities"
    ))
}

/// Converts the quantities of one feature into its unit, caching the conversion of every
/// source unit it meets.
#[derive(Debug, Clone)]
pub struct Converter {
    target: Option<String>,
    loinc: Option<String>,
    aliases: Vec<(String, String)>,
    cache: HashMap<String, Result<Affine, String>>,
}

/// What a [`Converter`] made of a quantity's unit.
#[derive(Debug, Clone, PartialEq)]
pub enum Converted {
    /// The value in the target unit; `converted` when the source unit differed.
    Value { value: f64, converted: bool },
    /// The unit cannot be converted; the reason names both units.
    Refused(String),
}

impl Converter {
    /// `target`: the unit the feature asks for (`None`: values are read as they are).
    /// `loinc`: the feature's LOINC code, for the analyte table.
    pub fn new(target: Option<&str>, loinc: Option<&str>, aliases: &[(String, String)]) -> Self {
        Self {
            target: target.map(|t| canonical_alias(t, aliases).to_owned()),
            loinc: loinc.map(str::to_owned),
            aliases: aliases.to_vec(),
            cache: HashMap::new(),
        }
    }

    pub fn target(&self) -> Option<&str> {
        self.target.as_deref()
    }

    /// The UCUM code a source unit stands for.
    pub fn resolve<'a>(&'a self, unit: &'a str) -> &'a str {
        canonical_alias(unit, &self.aliases)
    }

    pub fn convert(&mut self, value: f64, unit: Option<&str>) -> Converted {
        let Some(target) = &self.target else {
            return Converted::Value {
                value,
                converted: false,
            };
        };
        let Some(unit) = unit else {
            return Converted::Refused(format!(
                "a quantity without a unit, where `{target}` is expected"
            ));
        };
        if unit == target {
            return Converted::Value {
                value,
                converted: false,
            };
        }
        if !self.cache.contains_key(unit) {
            let from = canonical_alias(unit, &self.aliases);
            let c = conversion(from, target, self.loinc.as_deref());
            self.cache.insert(unit.to_owned(), c);
        }
        match &self.cache[unit] {
            Ok(a) => Converted::Value {
                value: a.apply(value),
                converted: *a != Affine::IDENTITY,
            },
            Err(e) => Converted::Refused(e.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn commensurable_units_convert_through_ucum() {
        // UCUM defines mm[Hg] through the density of mercury: 133.3224 Pa
        let kpa = conversion("kPa", "mm[Hg]", None).unwrap();
        assert!(close(kpa.apply(1.0), 7.500_637_55), "{kpa:?}");
        let f = conversion("[degF]", "Cel", None).unwrap();
        assert!(close(f.apply(98.6), 37.0));
        assert!(close(
            conversion("mg/dL", "g/L", None).unwrap().apply(150.0),
            1.5
        ));
        assert!(conversion("kg", "mm[Hg]", None).is_err());
        assert!(conversion("furlongs", "m", None).is_err());
    }

    #[test]
    fn mass_and_amount_need_the_molar_mass() {
        // glucose 100 mg/dL = 5.551 mmol/L (clinical factor 0.0555)
        let g = conversion("mg/dL", "mmol/L", Some("2345-7")).unwrap();
        assert!(close(g.apply(100.0), 5.550_744), "{}", g.apply(100.0));
        // and back
        let back = conversion("mmol/L", "mg/dL", Some("15074-8")).unwrap();
        assert!(close(back.apply(5.550_744), 100.0));
        // creatinine 1 mg/dL = 88.4 umol/L
        let c = conversion("mg/dL", "umol/L", Some("2160-0")).unwrap();
        assert!((c.apply(1.0) - 88.4).abs() < 0.05);
        let refused = conversion("mg/dL", "mmol/L", Some("1234-5")).unwrap_err();
        assert!(
            refused.contains("molar mass") && refused.contains("1234-5"),
            "{refused}"
        );
    }

    #[test]
    fn equivalents_respect_the_charge() {
        let ca = conversion("meq/L", "mmol/L", Some("17861-6")).unwrap();
        assert!(close(ca.apply(5.0), 2.5));
        let na = conversion("meq/L", "mmol/L", Some("2951-2")).unwrap();
        assert!(close(na.apply(140.0), 140.0));
        assert!(conversion("meq/L", "mmol/L", None).is_err());
        // calcium 10 mg/dL = 2.495 mmol/L = 4.99 meq/L
        let m = conversion("mg/dL", "meq/L", Some("17861-6")).unwrap();
        assert!(close(m.apply(10.0), 4.990_269), "{}", m.apply(10.0));
    }

    #[test]
    fn converter_aliases_and_caches() {
        let mut c = Converter::new(Some("mm[Hg]"), Some("8480-6"), &[]);
        assert_eq!(
            c.convert(120.0, Some("mmHg")),
            Converted::Value {
                value: 120.0,
                converted: false
            }
        );
        assert!(matches!(
            c.convert(16.0, Some("kPa")),
            Converted::Value {
                converted: true,
                ..
            }
        ));
        assert!(matches!(c.convert(1.0, Some("kg")), Converted::Refused(_)));
        assert!(matches!(c.convert(1.0, None), Converted::Refused(_)));
        let local = [("Torr-ish".to_owned(), "mm[Hg]".to_owned())];
        let mut c = Converter::new(Some("mm[Hg]"), None, &local);
        assert!(matches!(
            c.convert(1.0, Some("Torr-ish")),
            Converted::Value { value, .. } if value == 1.0
        ));
        assert!(check_unit("mg/dL").is_ok());
        assert!(check_unit("mmHg").is_ok());
        assert!(check_unit("zorkmids").is_err());
    }
}
