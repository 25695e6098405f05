//! What an audit entry is about: its `resource_type` and `resource_id`, as stored (and covered
//! by the entry's hash). Like the action names, the strings never change once released:
//! `GET /v1/audit/events?resource_type=` queries and every export depend on them.

use super::{
    ApplicationId, DatasetId, OptOutId, PermitId, StatisticsRunId, StatisticsTaskId, StudyId,
    TaskId,
};

/// The record (or collection) an audit entry names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditSubject {
    Application(ApplicationId),
    /// The applications as a collection (a listing).
    Applications,
    Permit(PermitId),
    /// The permits as a collection (a listing).
    Permits,
    Study(StudyId),
    /// The studies as a collection (a listing, or a change to many at once).
    Studies,
    Task(TaskId),
    /// A node's tasks as a collection (a delivery of several).
    Tasks,
    OptOut(OptOutId),
    /// The opt-out registry as a whole, under a bulk import.
    OptOutImport,
    /// A dataset of the Art. 77 catalogue.
    Dataset(DatasetId),
    /// The catalogue as a collection (a publication refused before it had an id).
    Catalogue,
    /// The audit trail itself (exports, verification, records of processing).
    AuditLog,
    /// Requests as such (the summary of refusals held back from the trail).
    Requests,
    StatisticsRun(StatisticsRunId),
    /// Statistics runs as a collection (a listing).
    StatisticsRuns,
    StatisticsTask(StatisticsTaskId),
}

impl AuditSubject {
    /// The stored `resource_type`.
    pub fn resource_type(&self) -> &'static str {
        match self {
            Self::Application(_) | Self::Applications => "application",
            Self::Permit(_) | Self::Permits => "permit",
            Self::Study(_) | Self::Studies => "study",
            Self::Task(_) | Self::Tasks => "task",
            Self::OptOut(_) => "opt_out",
            Self::OptOutImport => "opt_out_registry",
            Self::Dataset(_) | Self::Catalogue => "catalogue_dataset",
            Self::AuditLog => "audit_log",
            Self::Requests => "request",
            Self::StatisticsRun(_) | Self::StatisticsRuns => "statistics_run",
            Self::StatisticsTask(_) => "statistics_task",
        }
    }

    /// The stored `resource_id`.
    pub fn resource_id(&self) -> Option<String> {
        match self {
            Self::Application(id) => Some(id.to_string()),
            Self::Permit(id) => Some(id.to_string()),
            Self::Study(id) => Some(id.to_string()),
            Self::Task(id) => Some(id.to_string()),
            Self::OptOut(id) => Some(id.to_string()),
            Self::OptOutImport => Some("import".into()),
            Self::StatisticsRun(id) => Some(id.to_string()),
            Self::StatisticsTask(id) => Some(id.to_string()),
            Self::Dataset(id) => Some(id.to_string()),
            Self::Applications
            | Self::Catalogue
            | Self::Permits
            | Self::Studies
            | Self::Tasks
            | Self::AuditLog
            | Self::StatisticsRuns
            | Self::Requests => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_store_the_strings_the_handlers_wrote() {
        let permit = PermitId::new();
        let cases = [
            (
                AuditSubject::Permit(permit),
                "permit",
                Some(permit.to_string()),
            ),
            (AuditSubject::Permits, "permit", None),
            (AuditSubject::Applications, "application", None),
            (AuditSubject::Studies, "study", None),
            (AuditSubject::Tasks, "task", None),
            (
                AuditSubject::OptOutImport,
                "opt_out_registry",
                Some("import".to_owned()),
            ),
            (AuditSubject::AuditLog, "audit_log", None),
            (AuditSubject::Catalogue, "catalogue_dataset", None),
            (AuditSubject::Requests, "request", None),
        ];
        for (subject, kind, id) in cases {
            assert_eq!(subject.resource_type(), kind, "{subject:?}");
            assert_eq!(subject.resource_id(), id, "{subject:?}");
        }
        let study = StudyId::new();
        assert_eq!(
            AuditSubject::Study(study).resource_id(),
            Some(study.to_string())
        );
        let record = OptOutId::new();
        assert_eq!(AuditSubject::OptOut(record).resource_type(), "opt_out");
        assert_eq!(
            AuditSubject::OptOut(record).resource_id(),
            Some(record.to_string())
        );
        let task = TaskId::new();
        assert_eq!(AuditSubject::Task(task).resource_type(), "task");
        let app = ApplicationId::new();
        assert_eq!(
            AuditSubject::Application(app).resource_id(),
            Some(app.to_string())
        );
    }
}
