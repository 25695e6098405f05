//! The actions the API authorises: each is a Cedar action (`policies/schema.cedarschema`) and
//! the audit action of a request under it (`AuditAction::Request`), under the same name.

/// Declares the actions once: the enum, the list of all of them, and each one's name.
macro_rules! actions {
    ($($variant:ident => $name:literal,)*) => {
        /// An action a caller asks to perform; `name()` is its Cedar action id and its stored
        /// audit name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Action {
            $($variant,)*
        }

        impl Action {
            /// Every action.
            pub const ALL: [Action; [$($name,)*].len()] = [$(Action::$variant,)*];

            pub fn name(self) -> &'static str {
                match self {
                    $(Action::$variant => $name,)*
                }
            }
        }
    };
}

actions! {
    ApplicationCreate => "application.create",
    ApplicationList => "application.list",
    ApplicationRead => "application.read",
    ApplicationDecide => "application.decide",
    ApplicationWithdraw => "application.withdraw",
    ApplicationAssess => "application.assess",
    ApplicationRespond => "application.respond",
    PermitList => "permit.list",
    PermitRead => "permit.read",
    PermitVersions => "permit.versions",
    PermitSuspend => "permit.suspend",
    PermitReinstate => "permit.reinstate",
    PermitRevoke => "permit.revoke",
    PermitAmend => "permit.amend",
    PermitExtend => "permit.extend",
    PermitCheck => "permit.check",
    OptOutFilter => "optout.filter",
    OptOutRegister => "optout.register",
    OptOutWithdraw => "optout.withdraw",
    OptOutImport => "optout.import",
    OptOutRead => "optout.read",
    AuditRead => "audit.read",
    AuditVerify => "audit.verify",
    AuditRecords => "audit.records",
    AuditProof => "audit.proof",
    StudyCreate => "study.create",
    StudyList => "study.list",
    StudyRead => "study.read",
    StudyCancel => "study.cancel",
    StudyModel => "study.model",
    StudyRun => "study.run",
    NodeTasks => "node.tasks",
    NodeTask => "node.task",
    StatisticsRequest => "statistics.request",
    StatisticsList => "statistics.list",
    StatisticsRead => "statistics.read",
    StatisticsReview => "statistics.review",
    NodeStatistics => "node.statistics",
    CatalogueCreate => "catalogue.create",
    CatalogueUpdate => "catalogue.update",
    CatalogueWithdraw => "catalogue.withdraw",
}
