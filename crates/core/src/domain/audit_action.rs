//! The audit vocabulary: every action an audit entry can name, with the dotted string stored in
//! the trail (and covered by its hash) and the entry's FHIR AuditEvent coding.
//!
//! The strings are part of the stored data: changing one breaks `GET /v1/audit/events?action=`
//! queries over older entries and every consumer of the exports, so a variant's string never
//! changes once released.

use std::fmt;

use super::action::Action;

/// What an audit entry records.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AuditAction {
    /// A request under an authorised API action, stored under the action's name.
    Request(Action),
    /// A node downloads the parameters of its task.
    NodeTaskParameters,
    /// A node delivers the result of its task.
    NodeTaskResult,
    /// A node delivers a secure-aggregation message of its task.
    NodeTaskSecagg,
    /// A node delivers its part of a statistics run.
    NodeStatisticsResult,
    /// A refused request that no handler named: `http.<method>` (method in lower case).
    Http(HttpMethod),
    /// The same for a request with an extension method: the whole stored name, `http.<method>`.
    HttpExtension(Box<str>),

    // System events, recorded by the gateway itself.
    /// A permit's validity period ended.
    PermitExpire,
    /// An application's request for information went unanswered for four weeks (Art. 68(4)).
    ApplicationLapse,
    /// A deadline of the procedure on an application passed.
    ApplicationDeadline,
    /// Study noise keys stored in clear by older versions were sealed.
    SystemNoiseKeysSealed,
    /// Counts of unauthenticated refusals held back from the trail in the last minute.
    HttpRefusalsSummarised,
    StudySuspend,
    StudyStop,
    StudyResume,
    StudyFail,
    StudyComplete,
    StudyRoundStart,
    StudyRoundRefuse,
    StudyRoundFail,
    StudyRoundAggregate,
    StudyEvaluateStart,
    /// A secure-aggregation stage of a round closed.
    StudyRoundSecagg,
    /// The gateway pooled a statistics run's partials and checked the output.
    StatisticsComplete,
}

/// The standard method of a refused request, as it appears in `http.<method>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpMethod {
    Get,
    Post,
    Put,
    Patch,
    Delete,
    Head,
    Options,
    Trace,
    Connect,
}

impl HttpMethod {
    const STANDARD: [HttpMethod; 9] = [
        Self::Get,
        Self::Post,
        Self::Put,
        Self::Patch,
        Self::Delete,
        Self::Head,
        Self::Options,
        Self::Trace,
        Self::Connect,
    ];

    /// The standard method `lower` names (in lower case), if it is one.
    pub fn parse(lower: &str) -> Option<Self> {
        Self::STANDARD.into_iter().find(|m| m.as_str() == lower)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Post => "post",
            Self::Put => "put",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::Head => "head",
            Self::Options => "options",
            Self::Trace => "trace",
            Self::Connect => "connect",
        }
    }
}

/// FHIR AuditEvent.action (C/R/U/D/E).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FhirAction {
    Create,
    Read,
    Update,
    Execute,
}

impl FhirAction {
    pub fn code(self) -> &'static str {
        match self {
            Self::Create => "C",
            Self::Read => "R",
            Self::Update => "U",
            Self::Execute => "E",
        }
    }
}

/// FHIR AuditEvent.type and subtype of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FhirEventType {
    /// DICOM 110113 Security Alert, subtype AuthZconsent: opt-out filtering.
    ConsentAlert,
    /// DICOM 110106 Export: a model leaves the processing environment.
    Export,
    /// HL7 `rest` RESTful Operation, subtype the action itself.
    Rest,
}

/// The actions with a fixed name besides the requests under an `Action`: the node's task
/// work and the system events (all but the refused-request family `http.<method>`).
const OTHERS: [AuditAction; 21] = {
    use AuditAction::*;
    [
        NodeTaskParameters,
        NodeTaskResult,
        NodeTaskSecagg,
        NodeStatisticsResult,
        PermitExpire,
        ApplicationLapse,
        ApplicationDeadline,
        SystemNoiseKeysSealed,
        HttpRefusalsSummarised,
        StudySuspend,
        StudyStop,
        StudyResume,
        StudyFail,
        StudyComplete,
        StudyRoundStart,
        StudyRoundRefuse,
        StudyRoundFail,
        StudyRoundAggregate,
        StudyEvaluateStart,
        StudyRoundSecagg,
        StatisticsComplete,
    ]
};

/// Every action with a fixed name.
fn simple() -> impl Iterator<Item = AuditAction> {
    Action::ALL
        .into_iter()
        .map(AuditAction::Request)
        .chain(OTHERS)
}

impl AuditAction {
    /// The stored, dotted name.
    pub fn as_str(&self) -> &str {
        use AuditAction::*;
        match self {
            Request(action) => action.name(),
            NodeTaskParameters => "node.task.parameters",
            NodeTaskResult => "node.task.result",
            NodeTaskSecagg => "node.task.secagg",
            NodeStatisticsResult => "node.statistics.result",
            Http(m) => match m {
                HttpMethod::Get => "http.get",
                HttpMethod::Post => "http.post",
                HttpMethod::Put => "http.put",
                HttpMethod::Patch => "http.patch",
                HttpMethod::Delete => "http.delete",
                HttpMethod::Head => "http.head",
                HttpMethod::Options => "http.options",
                HttpMethod::Trace => "http.trace",
                HttpMethod::Connect => "http.connect",
            },
            HttpExtension(name) => name,
            PermitExpire => "permit.expire",
            ApplicationLapse => "application.lapse",
            ApplicationDeadline => "application.deadline",
            SystemNoiseKeysSealed => "system.noise_keys_sealed",
            HttpRefusalsSummarised => "http.refusals_summarised",
            StudySuspend => "study.suspend",
            StudyStop => "study.stop",
            StudyResume => "study.resume",
            StudyFail => "study.fail",
            StudyComplete => "study.complete",
            StudyRoundStart => "study.round.start",
            StudyRoundRefuse => "study.round.refuse",
            StudyRoundFail => "study.round.fail",
            StudyRoundAggregate => "study.round.aggregate",
            StudyEvaluateStart => "study.evaluate.start",
            StudyRoundSecagg => "study.round.secagg",
            StatisticsComplete => "statistics.complete",
        }
    }

    /// The action a stored name stands for; `None` for a name this version does not know.
    pub fn parse(s: &str) -> Option<Self> {
        if let Some(known) = simple().find(|a| a.as_str() == s) {
            return Some(known);
        }
        let method = s.strip_prefix("http.")?;
        if method.is_empty() || method.contains('.') {
            return None;
        }
        Some(Self::refused_request(method))
    }

    /// The action recorded for a refused request no handler named.
    pub fn refused_request(method: &str) -> Self {
        let lower = method.to_lowercase();
        match HttpMethod::parse(&lower) {
            Some(m) => Self::Http(m),
            None => Self::HttpExtension(format!("http.{lower}").into()),
        }
    }

    /// The federated rounds and the nodes' work on them: processing the gateway runs as a job.
    pub fn is_round_work(&self) -> bool {
        use AuditAction::*;
        matches!(
            self,
            StudyRoundStart
                | StudyRoundRefuse
                | StudyRoundFail
                | StudyRoundAggregate
                | StudyEvaluateStart
                | StudyRoundSecagg
                | Request(Action::NodeTasks | Action::NodeTask | Action::NodeStatistics)
                | NodeTaskParameters
                | NodeTaskResult
                | NodeTaskSecagg
                | NodeStatisticsResult
                | StatisticsComplete
        )
    }

    /// FHIR AuditEvent.action, following the mapping of the IHE BALP profile.
    pub fn fhir_action(&self) -> FhirAction {
        use AuditAction::*;
        use FhirAction::*;
        if self.is_round_work() {
            // federated rounds and the nodes' work on them execute processing (BALP: action E)
            return Execute;
        }
        match self {
            Request(a) => {
                use Action::*;
                match a {
                    ApplicationCreate | OptOutRegister | OptOutImport | StudyCreate
                    | StatisticsRequest | CatalogueCreate => Create,
                    ApplicationList | ApplicationRead | PermitList | PermitRead
                    | PermitVersions | OptOutRead | AuditRead | AuditVerify | AuditRecords
                    | AuditProof | StudyList | StudyRead | StudyModel | StatisticsList
                    | StatisticsRead => Read,
                    PermitCheck | OptOutFilter => Execute,
                    _ => Update,
                }
            }
            Http(_) | HttpExtension(_) | HttpRefusalsSummarised => Execute,
            _ => Update,
        }
    }

    /// FHIR AuditEvent.type and subtype.
    pub fn fhir_type(&self) -> FhirEventType {
        match self {
            Self::Request(Action::OptOutFilter) => FhirEventType::ConsentAlert,
            Self::Request(Action::StudyModel) => FhirEventType::Export,
            _ => FhirEventType::Rest,
        }
    }
}

impl From<Action> for AuditAction {
    /// The audit entry of a request under this action.
    fn from(action: Action) -> Self {
        Self::Request(action)
    }
}

impl fmt::Display for AuditAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_round_trips_through_its_stored_name() {
        let mut seen = std::collections::HashSet::new();
        for a in simple() {
            assert!(seen.insert(a.as_str().to_owned()), "{a} named twice");
            assert_eq!(AuditAction::parse(a.as_str()), Some(a.clone()));
        }
        for m in HttpMethod::STANDARD {
            let a = AuditAction::Http(m);
            assert_eq!(AuditAction::parse(a.as_str()), Some(a.clone()));
        }
        let ext = AuditAction::refused_request("PROPFIND");
        assert_eq!(ext.as_str(), "http.propfind");
        assert_eq!(AuditAction::parse("http.propfind"), Some(ext));
        assert_eq!(
            AuditAction::refused_request("DELETE").as_str(),
            "http.delete"
        );
        assert_eq!(AuditAction::parse("study.round.unknown"), None);
        assert_eq!(AuditAction::parse("http."), None);
    }

    /// The mapping the FHIR export used when actions were strings, kept to show the enum's
    /// coding is the same.
    fn legacy_fhir_action(action: &str) -> &'static str {
        let round_work = action.starts_with("study.round.")
            || action.starts_with("study.evaluate.")
            || action.starts_with("node.task");
        if round_work {
            return "E";
        }
        if action == "study.model" {
            return "R";
        }
        match action.rsplit('.').next().unwrap_or("") {
            "create" | "register" | "import" => "C",
            "read" | "list" | "versions" | "verify" | "records" | "proof" => "R",
            "check" | "filter" => "E",
            _ if action.starts_with("http.") => "E",
            _ => "U",
        }
    }

    /// Names released after the string rules were replaced, with their coding: statistics runs
    /// are created, read and reviewed like records; their computation is processing (E) like a
    /// round's.
    const CODED_SINCE: [(&str, &str, bool); 7] = [
        ("statistics.request", "C", false),
        ("statistics.list", "R", false),
        ("statistics.read", "R", false),
        ("statistics.review", "U", false),
        ("node.statistics", "E", true),
        ("node.statistics.result", "E", true),
        ("statistics.complete", "E", true),
    ];

    #[test]
    fn the_fhir_coding_matches_the_string_rules_it_replaced() {
        for (name, code, round_work) in CODED_SINCE {
            let a = AuditAction::parse(name).unwrap();
            assert_eq!(a.fhir_action().code(), code, "{name}");
            assert_eq!(a.is_round_work(), round_work, "{name}");
        }
        for a in simple().chain(HttpMethod::STANDARD.map(AuditAction::Http)) {
            if CODED_SINCE.iter().any(|(name, ..)| *name == a.as_str()) {
                continue;
            }
            assert_eq!(
                a.fhir_action().code(),
                legacy_fhir_action(a.as_str()),
                "{a}"
            );
            let round_work = a.as_str().starts_with("study.round.")
                || a.as_str().starts_with("study.evaluate.")
                || a.as_str().starts_with("node.task");
            assert_eq!(a.is_round_work(), round_work, "{a}");
        }
    }

    /// The stored names, as released: a request's name comes from its `Action`, and neither
    /// list may drift from what older trails hold.
    #[test]
    fn the_stored_names_are_the_released_ones() {
        const RELEASED: [&str; 62] = [
            "application.create",
            "application.list",
            "application.read",
            "application.decide",
            "application.withdraw",
            "application.assess",
            "application.respond",
            "permit.list",
            "permit.read",
            "permit.versions",
            "permit.suspend",
            "permit.reinstate",
            "permit.revoke",
            "permit.amend",
            "permit.extend",
            "permit.check",
            "optout.filter",
            "optout.register",
            "optout.withdraw",
            "optout.import",
            "optout.read",
            "audit.read",
            "audit.verify",
            "audit.records",
            "audit.proof",
            "study.create",
            "study.list",
            "study.read",
            "study.cancel",
            "study.model",
            "study.run",
            "node.tasks",
            "node.task",
            "statistics.request",
            "statistics.list",
            "statistics.read",
            "statistics.review",
            "node.statistics",
            "catalogue.create",
            "catalogue.update",
            "catalogue.withdraw",
            "node.task.parameters",
            "node.task.result",
            "node.task.secagg",
            "node.statistics.result",
            "permit.expire",
            "application.lapse",
            "application.deadline",
            "system.noise_keys_sealed",
            "http.refusals_summarised",
            "study.suspend",
            "study.stop",
            "study.resume",
            "study.fail",
            "study.complete",
            "study.round.start",
            "study.round.refuse",
            "study.round.fail",
            "study.round.aggregate",
            "study.evaluate.start",
            "study.round.secagg",
            "statistics.complete",
        ];
        let names: Vec<String> = simple().map(|a| a.as_str().to_owned()).collect();
        assert_eq!(names, RELEASED);
    }
}
