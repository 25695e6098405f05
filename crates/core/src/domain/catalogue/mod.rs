//! The Art. 77 dataset catalogue in HealthDCAT-AP: what a data holder submits about a dataset
//! (`DatasetForm`), the dataset it becomes once every rule holds (`Dataset`, parsed with every
//! problem reported at once, each under the SHACL property path it breaks), and its rendering
//! as HealthDCAT-AP in JSON-LD and Turtle, alone or in the HDAB's `dcat:Catalog`.
//!
//! Counts are published only rounded, and never below the small-cell threshold
//! (`small_cell.rs`); the Art. 78 label is a field of its own (`label.rs`).

pub mod graph;
pub mod jsonld;
pub mod label;
pub mod rdf;
pub mod turtle;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    small_cell::SmallCellRule, time::Timestamp, DataCategory, Errors, FieldError, MemberState,
    OrgId, ParseResult, Purpose,
};
pub use label::{LabelElement, LabelStatement, QualityLabel, QualityLabelForm};

pub use super::ids::DatasetId;

/// The ELI of the EHDS Regulation: every dataset's and distribution's applicable legislation.
pub const EHDS_ELI: &str = "http://data.europa.eu/eli/reg/2025/327/oj";

/// Longest title, keyword, name or identifier.
pub const MAX_SHORT_CHARS: usize = 300;
/// Longest description, provenance or population coverage.
pub const MAX_LONG_CHARS: usize = 10_000;
/// Longest IRI accepted.
pub const MAX_IRI_CHARS: usize = 2_000;
/// Most entries of a list (keywords, features, distributions...).
pub const MAX_LIST: usize = 200;
/// Oldest typical age accepted.
pub const MAX_AGE: u32 = 150;

/// The 24 official languages of the Union (ISO 639-1): Art. 77(2) wants a description in at
/// least one of them.
pub const EU_LANGUAGES: [&str; 24] = [
    "bg", "cs", "da", "de", "el", "en", "es", "et", "fi", "fr", "ga", "hr", "hu", "it", "lt", "lv",
    "mt", "nl", "pl", "pt", "ro", "sk", "sl", "sv",
];

// ---------------------------------------------------------------------------------------------
// The form.

/// A dataset description as a data holder submits it. Texts are keyed by language tag.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DatasetForm {
    /// The holder's own identifier of the dataset (`dct:identifier`).
    pub identifier: String,
    /// `dct:title` by language tag (e.g. `{"en": "...", "de": "..."}`).
    pub title: BTreeMap<String, String>,
    /// `dct:description` by language tag.
    pub description: BTreeMap<String, String>,
    /// `dcat:keyword`s by language tag.
    #[serde(default)]
    pub keywords: BTreeMap<String, Vec<String>>,
    /// EU data themes (`dcat:theme`), e.g. `HEAL`.
    #[serde(default)]
    pub themes: Vec<String>,
    /// The data holder publishing the dataset (`dct:publisher`).
    pub publisher: PublisherForm,
    /// `dcat:contactPoint`: where researchers ask about the dataset.
    pub contact_point: ContactForm,
    /// Art. 51(1) categories (`healthdcatap:healthCategory`).
    #[serde(default)]
    pub health_categories: Vec<String>,
    /// `dct:type`: `personal_data`, `synthetic_data` or `statistical`.
    pub dataset_type: String,
    /// Where the data come from and how they were collected (`dct:provenance`), by language.
    #[serde(default)]
    pub provenance: BTreeMap<String, String>,
    /// `dct:temporal`.
    pub temporal: Option<PeriodForm>,
    /// Member States the data cover (`dct:spatial`).
    #[serde(default)]
    pub spatial: Vec<String>,
    /// Published rounded (`healthdcatap:numberOfRecords`).
    pub number_of_records: Option<u64>,
    /// Published rounded (`healthdcatap:numberOfUniqueIndividuals`).
    pub number_of_unique_individuals: Option<u64>,
    /// `healthdcatap:populationCoverage` by language.
    #[serde(default)]
    pub population_coverage: BTreeMap<String, String>,
    pub min_typical_age: Option<u32>,
    pub max_typical_age: Option<u32>,
    /// `dct:accessRights`: `non_public` (through a data permit) or `public`.
    pub access_rights: String,
    /// Collected or processed with Union or national public funding: the label is then
    /// required (Art. 78(2)).
    #[serde(default)]
    pub publicly_funded: bool,
    /// The Art. 78 data quality and utility label.
    pub quality_label: Option<QualityLabelForm>,
    /// The feature-specification variables the holder's node can provide.
    #[serde(default)]
    pub available_features: Vec<String>,
    /// `dcat:distribution`s: at least one.
    #[serde(default)]
    pub distributions: Vec<DistributionForm>,
    /// The holder's version of the dataset (`dcat:version`).
    pub version: Option<String>,
    /// GDPR legal bases (`dpv:hasLegalBasis`), e.g. `gdpr_9_2_j`.
    #[serde(default)]
    pub legal_basis: Vec<String>,
    /// Art. 53(1) purposes the dataset suits (`dpv:hasPurpose`).
    #[serde(default)]
    pub purposes: Vec<String>,
    /// Further legislation (ELI IRIs) besides the EHDS Regulation, always stated.
    #[serde(default)]
    pub applicable_legislation: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PublisherForm {
    /// The holder's organisation id: the caller's own.
    pub organisation: String,
    /// `foaf:name`.
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ContactForm {
    /// `vcard:fn`.
    pub name: String,
    pub email: Option<String>,
    pub url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PeriodForm {
    /// `YYYY-MM-DD`.
    pub start: String,
    /// `YYYY-MM-DD`; absent while the dataset still grows.
    pub end: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DistributionForm {
    /// `dcat:accessURL` (`http(s)`).
    pub access_url: String,
    #[serde(default)]
    pub title: BTreeMap<String, String>,
    /// IANA media type, e.g. `application/fhir+json`.
    pub media_type: Option<String>,
    /// EU file type code, e.g. `CSV`.
    pub format: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// The parsed dataset.

/// A text in one language; the tag is a checked BCP 47 tag.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LangText {
    pub lang: String,
    pub text: String,
}

/// An absolute IRI that Turtle and JSON-LD can carry as it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct Iri(String);

impl Iri {
    /// An `http(s)` URL: scheme, host, and no character an IRI cannot hold.
    pub fn parse_web(s: &str) -> ParseResult<Self> {
        let invalid = || {
            (
                "invalid_iri",
                format!("`{s}` is not an absolute http(s) IRI"),
            )
        };
        let rest = s
            .strip_prefix("https://")
            .or_else(|| s.strip_prefix("http://"))
            .ok_or_else(invalid)?;
        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
        if host.is_empty() || s.chars().count() > MAX_IRI_CHARS || !iri_chars(s) {
            return Err(invalid());
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// No space, control character or character that IRIREF excludes.
fn iri_chars(s: &str) -> bool {
    !s.chars().any(|c| {
        c.is_whitespace()
            || c.is_control()
            || matches!(c, '<' | '>' | '"' | '{' | '}' | '|' | '^' | '`' | '\\')
    })
}

/// An e-mail address, published as a `mailto:` IRI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct Email(String);

impl Email {
    pub fn parse(s: &str) -> ParseResult<Self> {
        let ok = s.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains('@')
        }) && s.len() <= 254
            && iri_chars(s)
            && !s.contains(['?', '#', '/', '%']);
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(("invalid_email", format!("`{s}` is not an e-mail address")))
        }
    }

    pub fn mailto(&self) -> String {
        format!("mailto:{}", self.0)
    }
}

/// A count as the catalogue publishes it: rounded down to two significant figures (so that
/// successive versions do not reveal a handful of records joining), never below the HDAB's
/// small-cell threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct PublishedCount(u64);

impl PublishedCount {
    pub fn publish(count: u64, rule: SmallCellRule) -> ParseResult<Self> {
        if rule.hides(count) {
            return Err((
                "small_count",
                format!(
                    "counts between 1 and {} are not published (small-cell threshold); leave the count out",
                    rule.threshold() - 1
                ),
            ));
        }
        let mut unit = 1;
        while count / unit >= 100 {
            unit *= 10;
        }
        Ok(Self((count / unit * unit).max(count.min(rule.threshold()))))
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

/// `dct:accessRights` (EU access-right vocabulary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum AccessRights {
    /// Through a data permit or data request approval of the HDAB.
    NonPublic,
    /// Openly available (non-personal data in a trusted open database, Art. 60(5)).
    Public,
}

impl AccessRights {
    pub fn parse(s: &str) -> ParseResult<Self> {
        match s {
            "non_public" => Ok(Self::NonPublic),
            "public" => Ok(Self::Public),
            _ => Err((
                "unknown_access_rights",
                format!("`{s}` is not `non_public` or `public`"),
            )),
        }
    }

    pub fn iri(self) -> &'static str {
        match self {
            Self::NonPublic => {
                "http://publications.europa.eu/resource/authority/access-right/NON_PUBLIC"
            }
            Self::Public => "http://publications.europa.eu/resource/authority/access-right/PUBLIC",
        }
    }
}

/// `dct:type` (EU dataset-type vocabulary).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DatasetType {
    PersonalData,
    SyntheticData,
    Statistical,
}

impl DatasetType {
    pub fn parse(s: &str) -> ParseResult<Self> {
        match s {
            "personal_data" => Ok(Self::PersonalData),
            "synthetic_data" => Ok(Self::SyntheticData),
            "statistical" => Ok(Self::Statistical),
            _ => Err((
                "unknown_dataset_type",
                format!("`{s}` is not `personal_data`, `synthetic_data` or `statistical`"),
            )),
        }
    }

    pub fn iri(self) -> String {
        let code = match self {
            Self::PersonalData => "PERSONAL_DATA",
            Self::SyntheticData => "SYNTHETIC_DATA",
            Self::Statistical => "STATISTICAL",
        };
        format!("http://publications.europa.eu/resource/authority/dataset-type/{code}")
    }
}

/// The EU data themes (`dcat:theme`).
pub const DATA_THEMES: [&str; 14] = [
    "AGRI",
    "ECON",
    "EDUC",
    "ENER",
    "ENVI",
    "GOVE",
    "HEAL",
    "INTR",
    "JUST",
    "OP_DATPRO",
    "REGI",
    "SOCI",
    "TECH",
    "TRAN",
];

/// A data theme code of [`DATA_THEMES`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct DataTheme(String);

impl DataTheme {
    pub fn parse(s: &str) -> ParseResult<Self> {
        if DATA_THEMES.contains(&s) {
            Ok(Self(s.to_owned()))
        } else {
            Err((
                "unknown_theme",
                format!("`{s}` is not an EU data theme ({})", DATA_THEMES.join(", ")),
            ))
        }
    }

    pub fn iri(&self) -> String {
        format!(
            "http://publications.europa.eu/resource/authority/data-theme/{}",
            self.0
        )
    }
}

/// A GDPR legal basis of processing (`dpv:hasLegalBasis`, DPV's GDPR extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum LegalBasis {
    #[serde(rename = "gdpr_6_1_c")]
    Gdpr6_1C,
    #[serde(rename = "gdpr_6_1_e")]
    Gdpr6_1E,
    #[serde(rename = "gdpr_9_2_g")]
    Gdpr9_2G,
    #[serde(rename = "gdpr_9_2_h")]
    Gdpr9_2H,
    #[serde(rename = "gdpr_9_2_i")]
    Gdpr9_2I,
    #[serde(rename = "gdpr_9_2_j")]
    Gdpr9_2J,
}

impl LegalBasis {
    const ALL: [(LegalBasis, &'static str, &'static str); 6] = [
        (Self::Gdpr6_1C, "gdpr_6_1_c", "A6-1-c"),
        (Self::Gdpr6_1E, "gdpr_6_1_e", "A6-1-e"),
        (Self::Gdpr9_2G, "gdpr_9_2_g", "A9-2-g"),
        (Self::Gdpr9_2H, "gdpr_9_2_h", "A9-2-h"),
        (Self::Gdpr9_2I, "gdpr_9_2_i", "A9-2-i"),
        (Self::Gdpr9_2J, "gdpr_9_2_j", "A9-2-j"),
    ];

    pub fn parse(s: &str) -> ParseResult<Self> {
        Self::ALL
            .iter()
            .find(|(_, code, _)| *code == s)
            .map(|(b, _, _)| *b)
            .ok_or((
                "unknown_legal_basis",
                format!("`{s}` is not one of gdpr_6_1_c, gdpr_6_1_e, gdpr_9_2_g to gdpr_9_2_j"),
            ))
    }

    pub fn iri(self) -> String {
        let article = Self::ALL
            .iter()
            .find(|(b, _, _)| *b == self)
            .map(|(_, _, a)| *a)
            .expect("every basis is listed");
        format!("https://w3id.org/dpv/legal/eu/gdpr#{article}")
    }
}

/// The name of a feature-specification variable (`feature_spec`): the column a study asks for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct FeatureName(String);

impl FeatureName {
    pub fn parse(s: &str) -> ParseResult<Self> {
        let ok = !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err((
                "invalid_feature",
                format!("`{s}` is not a feature name (1-64 characters of [A-Za-z0-9_.-])"),
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Publisher {
    pub organisation: OrgId,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ContactPoint {
    pub name: String,
    pub email: Option<Email>,
    pub url: Option<Iri>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Period {
    pub start: chrono::NaiveDate,
    pub end: Option<chrono::NaiveDate>,
}

/// An IANA media type `type/subtype`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct MediaType(String);

impl MediaType {
    pub fn parse(s: &str) -> ParseResult<Self> {
        let token = |t: &str| {
            !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+".contains(c))
        };
        match s.split_once('/') {
            Some((t, sub)) if token(t) && token(sub) && s.len() <= 127 => {
                Ok(Self(s.to_ascii_lowercase()))
            }
            _ => Err((
                "invalid_media_type",
                format!("`{s}` is not a media type `type/subtype`"),
            )),
        }
    }

    pub fn iri(&self) -> String {
        format!("https://www.iana.org/assignments/media-types/{}", self.0)
    }
}

/// An EU file-type code (`CSV`, `JSON`, `RDF_TURTLE`...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct FileType(String);

impl FileType {
    pub fn parse(s: &str) -> ParseResult<Self> {
        let ok = !s.is_empty()
            && s.len() <= 32
            && s.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err((
                "invalid_format",
                format!("`{s}` is not an EU file-type code (upper case, e.g. `CSV`)"),
            ))
        }
    }

    pub fn iri(&self) -> String {
        format!(
            "http://publications.europa.eu/resource/authority/file-type/{}",
            self.0
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Distribution {
    pub access_url: Iri,
    pub title: Vec<LangText>,
    pub media_type: Option<MediaType>,
    pub format: Option<FileType>,
}

/// A dataset description every rule of the catalogue holds for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Dataset {
    pub identifier: String,
    pub title: Vec<LangText>,
    pub description: Vec<LangText>,
    pub keywords: Vec<LangText>,
    pub themes: Vec<DataTheme>,
    pub publisher: Publisher,
    pub contact_point: ContactPoint,
    pub health_categories: Vec<DataCategory>,
    pub dataset_type: DatasetType,
    pub provenance: Vec<LangText>,
    pub temporal: Option<Period>,
    pub spatial: Vec<MemberState>,
    pub number_of_records: Option<PublishedCount>,
    pub number_of_unique_individuals: Option<PublishedCount>,
    pub population_coverage: Vec<LangText>,
    pub min_typical_age: Option<u32>,
    pub max_typical_age: Option<u32>,
    pub access_rights: AccessRights,
    pub quality_label: Option<QualityLabel>,
    pub available_features: Vec<FeatureName>,
    pub distributions: Vec<Distribution>,
    pub version: Option<String>,
    pub legal_basis: Vec<LegalBasis>,
    pub purposes: Vec<Purpose>,
    /// The EHDS Regulation first, then what the holder added.
    pub applicable_legislation: Vec<Iri>,
}

// ---------------------------------------------------------------------------------------------
// Parsing.

/// A required free text: not blank, within `max` characters (`required`, `too_long`).
pub(crate) fn check_text(e: &mut Errors, path: &str, value: &str, max: usize) {
    if value.trim().is_empty() {
        e.push(path, "required", format!("`{path}` must not be blank"));
    } else if value.chars().count() > max {
        e.push(
            path,
            "too_long",
            format!("`{path}` is limited to {max} characters"),
        );
    }
}

/// A BCP 47 language tag: a 2-3 letter primary language and subtags of 1-8 letters or digits.
pub fn parse_lang(tag: &str) -> ParseResult<String> {
    let mut parts = tag.split('-');
    let primary = parts.next().unwrap_or("");
    let ok = (2..=3).contains(&primary.len())
        && primary.chars().all(|c| c.is_ascii_alphabetic())
        && parts
            .all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()));
    if ok {
        Ok(tag.to_ascii_lowercase())
    } else {
        Err((
            "invalid_language",
            format!("`{tag}` is not a language tag (BCP 47, e.g. `en`, `de-AT`)"),
        ))
    }
}

/// Texts by language: each tag checked, each text within `max`; `required` when none at all.
fn lang_texts(
    e: &mut Errors,
    path: &str,
    texts: &BTreeMap<String, String>,
    max: usize,
    required: bool,
) -> Vec<LangText> {
    if required && texts.is_empty() {
        e.push(
            path,
            "required",
            format!("`{path}` needs a text in at least one language"),
        );
    }
    let mut out = Vec::new();
    for (tag, text) in texts {
        let at = format!("{path}@{tag}");
        let lang = e.take(&at, parse_lang(tag));
        let before = e.0.len();
        check_text(e, &at, text, max);
        if let Some(lang) = lang.filter(|_| e.0.len() == before) {
            out.push(LangText {
                lang,
                text: text.trim().to_owned(),
            });
        }
    }
    out
}

/// A list parsed item by item (`path[i]`), without duplicates, within [`MAX_LIST`];
/// `required` when empty and `min_one`.
fn list<T: PartialEq>(
    e: &mut Errors,
    path: &str,
    raw: &[String],
    min_one: bool,
    parse: impl Fn(&str) -> ParseResult<T>,
) -> Vec<T> {
    if min_one && raw.is_empty() {
        e.push(
            path,
            "required",
            format!("`{path}` needs at least one value"),
        );
    }
    if raw.len() > MAX_LIST {
        e.push(
            path,
            "too_many",
            format!("`{path}` takes at most {MAX_LIST} values"),
        );
    }
    let mut out: Vec<T> = Vec::new();
    for (i, s) in raw.iter().enumerate() {
        if let Some(v) = e.take(format!("{path}[{i}]"), parse(s)) {
            if out.contains(&v) {
                e.push(
                    format!("{path}[{i}]"),
                    "duplicate_value",
                    format!("`{s}` is listed twice"),
                );
            } else {
                out.push(v);
            }
        }
    }
    out
}

fn parse_date(s: &str) -> ParseResult<chrono::NaiveDate> {
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map_err(|_| ("invalid_date", format!("`{s}` is not a date `YYYY-MM-DD`")))
}

impl Dataset {
    /// Parses a holder's form, reporting every problem at once under its SHACL path. Counts
    /// are published under `small_cells`.
    pub fn parse(form: &DatasetForm, small_cells: SmallCellRule) -> Result<Self, Vec<FieldError>> {
        let mut e = Errors::default();
        check_text(&mut e, "dct:identifier", &form.identifier, MAX_SHORT_CHARS);

        let title = lang_texts(&mut e, "dct:title", &form.title, MAX_SHORT_CHARS, true);
        let in_official_language = |texts: &[LangText]| {
            texts
                .iter()
                .any(|t| EU_LANGUAGES.contains(&t.lang.split('-').next().unwrap_or("")))
        };
        if !title.is_empty() && !in_official_language(&title) {
            e.push(
                "dct:title",
                "no_official_language",
                "Art. 77(2): the description must be available in at least one official language of the Union",
            );
        }
        let description = lang_texts(
            &mut e,
            "dct:description",
            &form.description,
            MAX_LONG_CHARS,
            true,
        );
        if !description.is_empty() && !in_official_language(&description) {
            e.push(
                "dct:description",
                "no_official_language",
                "Art. 77(2): the description must be available in at least one official language of the Union",
            );
        }

        let mut keywords = Vec::new();
        if form.keywords.values().all(|k| k.is_empty()) {
            e.push(
                "dcat:keyword",
                "required",
                "`dcat:keyword` needs at least one keyword",
            );
        }
        for (tag, words) in &form.keywords {
            let at = format!("dcat:keyword@{tag}");
            let lang = e.take(&at, parse_lang(tag));
            for (i, word) in words.iter().enumerate() {
                check_text(&mut e, &format!("{at}[{i}]"), word, MAX_SHORT_CHARS);
                if let Some(lang) = &lang {
                    let kw = LangText {
                        lang: lang.clone(),
                        text: word.trim().to_owned(),
                    };
                    if !kw.text.is_empty() && !keywords.contains(&kw) {
                        keywords.push(kw);
                    }
                }
            }
        }
        if keywords.len() > MAX_LIST {
            e.push(
                "dcat:keyword",
                "too_many",
                format!("`dcat:keyword` takes at most {MAX_LIST} values"),
            );
        }

        let themes = list(&mut e, "dcat:theme", &form.themes, true, DataTheme::parse);
        let organisation = e.take(
            "dct:publisher/dct:identifier",
            OrgId::parse(&form.publisher.organisation),
        );
        check_text(
            &mut e,
            "dct:publisher/foaf:name",
            &form.publisher.name,
            MAX_SHORT_CHARS,
        );
        let contact_point = contact(&mut e, &form.contact_point);
        let health_categories = list(
            &mut e,
            "healthdcatap:healthCategory",
            &form.health_categories,
            true,
            DataCategory::parse,
        );
        let dataset_type = e.take("dct:type", DatasetType::parse(&form.dataset_type));
        let provenance = lang_texts(
            &mut e,
            "dct:provenance",
            &form.provenance,
            MAX_LONG_CHARS,
            true,
        );
        let temporal = form.temporal.as_ref().and_then(|p| period(&mut e, p));
        let spatial = list(
            &mut e,
            "dct:spatial",
            &form.spatial,
            false,
            MemberState::parse,
        );

        let records = form.number_of_records.and_then(|n| {
            e.take(
                "healthdcatap:numberOfRecords",
                PublishedCount::publish(n, small_cells),
            )
        });
        let individuals = form.number_of_unique_individuals.and_then(|n| {
            e.take(
                "healthdcatap:numberOfUniqueIndividuals",
                PublishedCount::publish(n, small_cells),
            )
        });
        if let (Some(r), Some(i)) = (form.number_of_records, form.number_of_unique_individuals) {
            if i > r {
                e.push(
                    "healthdcatap:numberOfUniqueIndividuals",
                    "exceeds_records",
                    "there cannot be more unique individuals than records",
                );
            }
        }
        let population_coverage = lang_texts(
            &mut e,
            "healthdcatap:populationCoverage",
            &form.population_coverage,
            MAX_LONG_CHARS,
            false,
        );
        for (path, age) in [
            ("healthdcatap:minTypicalAge", form.min_typical_age),
            ("healthdcatap:maxTypicalAge", form.max_typical_age),
        ] {
            if age.is_some_and(|a| a > MAX_AGE) {
                e.push(path, "invalid_age", format!("an age is at most {MAX_AGE}"));
            }
        }
        if let (Some(min), Some(max)) = (form.min_typical_age, form.max_typical_age) {
            if min > max {
                e.push(
                    "healthdcatap:maxTypicalAge",
                    "invalid_age_range",
                    "the maximum typical age is below the minimum",
                );
            }
        }
        let access_rights = e.take("dct:accessRights", AccessRights::parse(&form.access_rights));
        let quality_label = form
            .quality_label
            .as_ref()
            .and_then(|l| QualityLabel::parse(&mut e, l));
        if form.publicly_funded && form.quality_label.is_none() {
            e.push(
                label::LABEL_PATH,
                "label_required",
                "Art. 78(2): a dataset collected or processed with public funding carries a data quality and utility label",
            );
        }
        let available_features = list(
            &mut e,
            "ehdsgw:availableFeature",
            &form.available_features,
            false,
            FeatureName::parse,
        );
        let distributions = distributions(&mut e, &form.distributions);
        if let Some(v) = &form.version {
            check_text(&mut e, "dcat:version", v, MAX_SHORT_CHARS);
        }
        let legal_basis = list(
            &mut e,
            "dpv:hasLegalBasis",
            &form.legal_basis,
            false,
            LegalBasis::parse,
        );
        let purposes = list(
            &mut e,
            "dpv:hasPurpose",
            &form.purposes,
            false,
            Purpose::parse,
        );
        let mut applicable_legislation = vec![Iri(EHDS_ELI.to_owned())];
        let further = list(
            &mut e,
            "dcatap:applicableLegislation",
            &form.applicable_legislation,
            false,
            Iri::parse_web,
        );
        applicable_legislation.extend(further.into_iter().filter(|i| i.0 != EHDS_ELI));

        e.into_result(|| Self {
            identifier: form.identifier.trim().to_owned(),
            title,
            description,
            keywords,
            themes,
            publisher: Publisher {
                organisation: organisation.expect("checked"),
                name: form.publisher.name.trim().to_owned(),
            },
            contact_point: contact_point.expect("checked"),
            health_categories,
            dataset_type: dataset_type.expect("checked"),
            provenance,
            temporal,
            spatial,
            number_of_records: records,
            number_of_unique_individuals: individuals,
            population_coverage,
            min_typical_age: form.min_typical_age,
            max_typical_age: form.max_typical_age,
            access_rights: access_rights.expect("checked"),
            quality_label,
            available_features,
            distributions,
            version: form.version.as_ref().map(|v| v.trim().to_owned()),
            legal_basis,
            purposes,
            applicable_legislation,
        })
    }
}

fn contact(e: &mut Errors, form: &ContactForm) -> Option<ContactPoint> {
    let before = e.0.len();
    check_text(e, "dcat:contactPoint/vcard:fn", &form.name, MAX_SHORT_CHARS);
    let email = form
        .email
        .as_deref()
        .and_then(|m| e.take("dcat:contactPoint/vcard:hasEmail", Email::parse(m)));
    let url = form
        .url
        .as_deref()
        .and_then(|u| e.take("dcat:contactPoint/vcard:hasURL", Iri::parse_web(u)));
    if form.email.is_none() && form.url.is_none() {
        e.push(
            "dcat:contactPoint",
            "contact_unreachable",
            "a contact point has an e-mail address or a URL",
        );
    }
    (e.0.len() == before).then(|| ContactPoint {
        name: form.name.trim().to_owned(),
        email,
        url,
    })
}

fn period(e: &mut Errors, form: &PeriodForm) -> Option<Period> {
    let start = e.take("dct:temporal/dcat:startDate", parse_date(&form.start));
    let end = match &form.end {
        Some(end) => Some(e.take("dct:temporal/dcat:endDate", parse_date(end))?),
        None => None,
    };
    let start = start?;
    if end.is_some_and(|end| end < start) {
        e.push(
            "dct:temporal/dcat:endDate",
            "invalid_period",
            "the period ends before it starts",
        );
        return None;
    }
    Some(Period { start, end })
}

fn distributions(e: &mut Errors, forms: &[DistributionForm]) -> Vec<Distribution> {
    if forms.is_empty() {
        e.push(
            "dcat:distribution",
            "required",
            "a dataset has at least one distribution: how its data are made available",
        );
    }
    if forms.len() > MAX_LIST {
        e.push(
            "dcat:distribution",
            "too_many",
            format!("at most {MAX_LIST} distributions"),
        );
    }
    let mut out = Vec::new();
    for (i, d) in forms.iter().enumerate() {
        let at = format!("dcat:distribution[{i}]");
        let before = e.0.len();
        let access_url = e.take(
            format!("{at}/dcat:accessURL"),
            Iri::parse_web(&d.access_url),
        );
        let title = lang_texts(
            e,
            &format!("{at}/dct:title"),
            &d.title,
            MAX_SHORT_CHARS,
            false,
        );
        let media_type = d
            .media_type
            .as_deref()
            .and_then(|m| e.take(format!("{at}/dcat:mediaType"), MediaType::parse(m)));
        let format = d
            .format
            .as_deref()
            .and_then(|f| e.take(format!("{at}/dct:format"), FileType::parse(f)));
        if e.0.len() == before {
            out.push(Distribution {
                access_url: access_url.expect("checked"),
                title,
                media_type,
                format,
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Entries of the catalogue.

/// Whether a dataset is in the public catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    Published,
    /// Taken out of the catalogue by its holder; the record stays for the audit trail.
    Withdrawn,
}

impl EntryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Published => "published",
            Self::Withdrawn => "withdrawn",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "published" => Some(Self::Published),
            "withdrawn" => Some(Self::Withdrawn),
            _ => None,
        }
    }
}

/// A dataset in the catalogue: its description at its current revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CatalogueEntry {
    pub id: DatasetId,
    /// 1 when first published, one more with each new version.
    pub revision: i64,
    pub status: EntryStatus,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub issued: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub modified: Timestamp,
    pub dataset: Dataset,
}

impl CatalogueEntry {
    pub fn publisher(&self) -> &OrgId {
        &self.dataset.publisher.organisation
    }
}

#[cfg(test)]
mod tests;
