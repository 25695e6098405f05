//! What an extraction met on the way: bad input (counted by reason, with the first few
//! occurrences named by file, line and resource), resources read, rows excluded and why,
//! units found and converted per feature. A holder reads it in `ehds-node check`;
//! none of it is sent to the gateway.
use std::collections::BTreeMap;

use serde::Serialize;

/// How many occurrences of each kind of issue are kept with their location.
pub const EXAMPLES_PER_KIND: usize = 5;

/// Why a line, a resource or a value was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueKind {
    /// A line (or a whole file) that is not JSON.
    MalformedJson,
    /// JSON that is not a resource the node can read (a field of the wrong type, no type).
    InvalidResource,
    /// A resource of a type no part of the specification reads (counted, not an error).
    TypeNotRead,
    /// A resource without an `id` where one is needed (a Patient).
    MissingId,
    /// The same resource id twice; the later copy is skipped.
    DuplicateId,
    /// A resource about a patient the export does not hold.
    UnresolvedSubject,
    /// A resource without a subject.
    NoSubject,
    /// A date or dateTime that does not parse.
    BadDate,
    /// A dated window applies but the resource has no date.
    Undated,
    /// A quantity whose unit cannot be converted into the feature's unit.
    Unit,
    /// A value of a type the feature's transform cannot read.
    ValueType,
    /// A matching Observation without a value.
    NoValue,
    /// A medication reference to a Medication the export does not hold.
    UnresolvedMedication,
    /// A subject's image that cannot be used: not PNG, not decodable, not the declared size
    /// or colour, or its Binary is missing (the subject is dropped as incomplete).
    Image,
}

impl IssueKind {
    /// Issues that are normal in any export and say nothing about its quality.
    pub fn informational(self) -> bool {
        matches!(self, IssueKind::TypeNotRead | IssueKind::NoValue)
    }
}

/// Why a resource that matched a feature's (or label's, or channel's) codes did not count.
/// Every such resource is counted under its feature and reason in [`Report::ignored`], so a
/// feature that reads as 0 or missing because its matches were set aside never looks clean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IgnoreReason {
    /// No date where the feature needs one (a window, `require_date`, a dated label).
    Undated,
    /// Dated, but outside the feature's window relative to the index.
    OutsideWindow,
    /// A status that says the fact does not hold (entered-in-error, refuted, inactive,
    /// resolved, cancelled, stopped...).
    Status,
    /// A value that cannot be read as the feature's type, or no value at all.
    Value,
    /// A quantity whose unit does not convert into the feature's unit.
    Unit,
    /// A value with a comparator (`<`, `>=` ...) where an exact number is needed.
    Comparator,
    /// A subject reference that names no Patient of the export, or no subject at all.
    Unresolved,
}

/// One occurrence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    pub kind: IssueKind,
    /// File name (without its directory), when the input has files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line of an NDJSON file, or 1-based entry of a Bundle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// `Type/id` of the resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    pub detail: String,
}

/// Units met by one feature (or channel, or label).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct UnitStats {
    /// The unit the values were converted into, if the feature names one.
    pub target: Option<String>,
    /// Source unit -> number of values.
    pub found: BTreeMap<String, u64>,
    /// Values converted from another unit.
    pub converted: u64,
    /// Values refused because their unit does not convert.
    pub refused: u64,
    /// Units found only as display text (`valueQuantity.unit` without a UCUM `code`), per
    /// text: how the node read them. A misspelt or ambiguous text is the holder's to fix.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub text_only: BTreeMap<String, TextUnit>,
}

/// What became of one display-text unit.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct TextUnit {
    /// Values that carried it.
    pub values: u64,
    /// The UCUM unit the text was read as (after the code map's and the node's aliases);
    /// `None` when the feature names no unit and values are read as they are.
    pub read_as: Option<String>,
    /// Values refused because the text is no unit that converts into the feature's.
    pub refused: u64,
}

impl UnitStats {
    /// One value whose unit was only the display text `text`, read as `read_as`.
    pub fn text_only(&mut self, text: &str, read_as: Option<&str>, refused: bool) {
        let t = self.text_only.entry(text.to_owned()).or_default();
        t.values += 1;
        t.read_as = read_as.map(str::to_owned);
        t.refused += u64::from(refused);
    }
}

/// Everything counted while reading.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Report {
    /// Files read, in order.
    pub files: Vec<String>,
    /// Non-empty lines (or Bundle entries) read.
    pub entries: u64,
    /// Resources read, per type.
    pub resources: BTreeMap<String, u64>,
    /// Issues per kind.
    pub issues: BTreeMap<IssueKind, u64>,
    /// The first [`EXAMPLES_PER_KIND`] issues of each kind (all of them with
    /// [`Report::keep_all`]).
    pub examples: Vec<Issue>,
    /// Rows the cohort definition excluded, per reason.
    pub excluded: BTreeMap<String, u64>,
    /// Per feature, channel or label name.
    pub units: BTreeMap<String, UnitStats>,
    /// Per feature, channel or label name: resources whose codes matched it.
    pub matched: BTreeMap<String, u64>,
    /// Per feature, channel or label name: matched resources that did not count, per reason.
    pub ignored: BTreeMap<String, BTreeMap<IgnoreReason, u64>>,
    #[serde(skip)]
    pub keep_all: bool,
}

impl Report {
    pub fn issue(&mut self, issue: Issue) {
        let n = self.issues.entry(issue.kind).or_default();
        *n += 1;
        if self.keep_all || *n <= EXAMPLES_PER_KIND as u64 {
            self.examples.push(issue);
        }
    }

    pub fn count(&self, kind: IssueKind) -> u64 {
        self.issues.get(&kind).copied().unwrap_or(0)
    }

    /// One resource matched `name`'s codes.
    pub fn matched(&mut self, name: &str) {
        *self.matched.entry(name.to_owned()).or_default() += 1;
    }

    /// One resource matched `name`'s codes and did not count, for `reason`.
    pub fn ignored(&mut self, name: &str, reason: IgnoreReason) {
        *self
            .ignored
            .entry(name.to_owned())
            .or_default()
            .entry(reason)
            .or_default() += 1;
    }

    /// Matched resources of `name` that did not count, all reasons together.
    pub fn ignored_total(&self, name: &str) -> u64 {
        self.ignored.get(name).map_or(0, |m| m.values().sum())
    }

    pub fn exclude(&mut self, reason: &str) {
        *self.excluded.entry(reason.to_owned()).or_default() += 1;
    }

    /// Issues that are not merely informational.
    pub fn bad_inputs(&self) -> u64 {
        self.issues
            .iter()
            .filter(|(k, _)| !k.informational())
            .map(|(_, n)| n)
            .sum()
    }
}
