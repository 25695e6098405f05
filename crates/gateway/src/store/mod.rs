//! Storage: one interface, a PostgreSQL and a SQLite implementation, picked from the database URL.
//!
//! Work happens in transactions (`Tx`): a state change and the audit entry that records it are
//! written in the same transaction, so either both are stored or neither is.

mod migrations;
mod postgres;
mod rows;
mod sqlite;
pub(crate) mod tree;

use async_trait::async_trait;
use serde::Serialize;
use translog::Hash;

use ehds_core::domain::{
    audit::{AuditEntry, NewAuditEvent, Outcome},
    catalogue::{CatalogueEntry, DatasetId},
    optout::{NewOptOutEvent, OptOutEvent},
    permit::PermitTerms,
    statistics::{Contribution, RunStatus, StatisticsRun, StatisticsTaskRecord},
    study::{Checkpoint, Round, SiteEvaluation, Study, Task, TaskStatus},
    time::Timestamp,
    Application, ApplicationId, ApplicationStatus, OptOutId, OrgId, Permit, PermitId, RoundId,
    StatisticsRunId, StatisticsTaskId, StudyId, TaskId,
};

pub use postgres::PgStore;
pub use sqlite::SqliteStore;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The row changed since it was read (optimistic concurrency).
    #[error("the record was changed concurrently")]
    Conflict,
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("stored data is invalid: {0}")]
    Corrupt(String),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
    /// Another transaction of the group this one was committed with failed the group's flush:
    /// none of the group is stored.
    #[error("the transactions committed with this one could not be stored: {message}")]
    GroupFailed {
        state: Option<Unavailable>,
        message: String,
    },
}

impl StoreError {
    /// What every transaction of a group whose flush failed with `e` is told.
    pub(crate) fn group_failed(e: &StoreError) -> Self {
        match e {
            StoreError::GroupFailed { state, message } => StoreError::GroupFailed {
                state: *state,
                message: message.clone(),
            },
            StoreError::Database(db) => StoreError::GroupFailed {
                state: Unavailable::of(db),
                message: db.to_string(),
            },
            other => StoreError::GroupFailed {
                state: None,
                message: other.to_string(),
            },
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The database's state, not the request, stopped the work: the client should retry later, and
/// the transaction rolled back whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// Unreachable, restarting, shutting down, or out of connections.
    Unreachable,
    /// Out of disk space.
    Full,
    /// Refuses writes: a read-only file system or data directory, or a standby server.
    ReadOnly,
}

impl Unavailable {
    /// What `e` says of the database, if it is one of these states.
    pub fn of(e: &sqlx::Error) -> Option<Self> {
        match e {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => Some(Self::Unreachable),
            sqlx::Error::Database(db) => {
                let code = db.code()?;
                if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                    // primary result codes (https://www.sqlite.org/rescode.html); the extended
                    // code carries the primary one in its low byte
                    return match code.parse::<i32>().ok()? & 0xff {
                        13 => Some(Self::Full),             // SQLITE_FULL
                        8 => Some(Self::ReadOnly),          // SQLITE_READONLY
                        10 | 14 => Some(Self::Unreachable), // SQLITE_IOERR, SQLITE_CANTOPEN
                        _ => None,
                    };
                }
                // PostgreSQL SQLSTATE classes
                match code.as_ref() {
                    "53100" => Some(Self::Full),        // disk_full
                    "25006" => Some(Self::ReadOnly),    // read_only_sql_transaction
                    "53300" => Some(Self::Unreachable), // too_many_connections
                    c if c.starts_with("08") || c.starts_with("57P") => Some(Self::Unreachable),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The first state of the database found along `e`'s chain of causes.
    pub fn in_chain(e: &anyhow::Error) -> Option<Self> {
        e.chain().find_map(|e| {
            match e.downcast_ref::<StoreError>() {
                Some(StoreError::Database(db)) => return Self::of(db),
                Some(StoreError::GroupFailed { state, .. }) => return *state,
                _ => {}
            }
            e.downcast_ref::<sqlx::Error>().and_then(Self::of)
        })
    }

    /// The stable problem code of the 503 answered.
    pub fn code(self) -> &'static str {
        match self {
            Self::Unreachable => "database_unavailable",
            Self::Full => "storage_full",
            Self::ReadOnly => "storage_read_only",
        }
    }

    pub fn detail(self) -> &'static str {
        match self {
            Self::Unreachable => "the database cannot be reached right now; nothing was changed, retry later",
            Self::Full => "the gateway's storage is full; nothing was changed, retry once the operator has freed space",
            Self::ReadOnly => "the gateway's storage refuses writes; nothing was changed, retry once the operator has made it writable",
        }
    }
}

/// How committed transactions are made durable. Either way a transaction's change and its audit
/// entries commit together, in the chain's order, and a commit returns only once they are on
/// disk (docs/architecture.md, "Group commit").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommitMode {
    /// Transactions that commit while others are waiting share one flush to disk: SQLite runs
    /// them as savepoints of one transaction, PostgreSQL releases the write order before the
    /// flush and lets the server flush the waiting commits together.
    #[default]
    Group,
    /// One flush per transaction, with the write order held through it.
    Each,
}

/// Which rows a caller may list: the SQL pre-filter that the policy check then confirms per row.
#[derive(Debug, Clone)]
pub enum Scope {
    All,
    Organisation(OrgId),
    DataHolder(OrgId),
    /// A caller without an organisation sees nothing.
    Nothing,
}

#[derive(Debug, Clone, Copy)]
pub struct Page {
    pub limit: i64,
    pub offset: i64,
}

#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub from: Option<chrono::DateTime<chrono::Utc>>,
    pub to: Option<chrono::DateTime<chrono::Utc>>,
    pub actor: Option<String>,
    pub action: Option<String>,
    pub outcome: Option<Outcome>,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    pub permit_id: Option<String>,
    pub after_seq: Option<i64>,
    /// Only entries up to and including this sequence number.
    pub until_seq: Option<i64>,
    pub limit: i64,
}

/// How many entries a filter matches (up to its limit), and the first and last of them.
#[derive(Debug, Clone, Copy, Default)]
pub struct AuditSpan {
    pub count: u64,
    pub first_seq: Option<i64>,
    pub last_seq: Option<i64>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PermitVersion {
    pub terms_version: i64,
    pub terms: PermitTerms,
    pub recorded_at: chrono::DateTime<chrono::Utc>,
    pub recorded_by: String,
    pub reason: Option<String>,
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    async fn begin(&self) -> Result<Box<dyn Tx>>;
    /// A transaction for reads only: it sees one consistent state of the database and never
    /// waits for a writer (on SQLite it does not take the write turn; its writes are refused).
    async fn read(&self) -> Result<Box<dyn Tx>>;
    async fn ping(&self) -> Result<()>;
    /// Connections of the pool, for `/metrics`.
    fn pool_usage(&self) -> crate::observability::PoolUsage;
    fn backend(&self) -> &'static str;
    /// Sends `payload` to every gateway process on this database that [`Store::subscribe`]d,
    /// this one included. A no-op where the backend serves one process (SQLite).
    async fn publish(&self, payload: &str) -> Result<()>;
    /// Payloads other processes [`Store::publish`]; `None` where the backend serves one
    /// process.
    async fn subscribe(&self) -> Result<Option<Box<dyn Subscription>>>;
}

/// What other gateway processes on the database [`Store::publish`].
#[async_trait]
pub trait Subscription: Send {
    /// The next payload, or `None` when the connection was lost and is listening again, so
    /// payloads may have been missed in between.
    async fn next(&mut self) -> Result<Option<String>>;
}

/// A transaction: every aggregate's storage operations (the traits below), the write order and
/// the commit. Dropping it uncommitted rolls it back. Calls through `dyn Tx` reach the
/// aggregates' methods without importing their traits.
#[async_trait]
pub trait Tx:
    ApplicationTx
    + PermitTx
    + OptOutTx
    + CatalogueTx
    + StudyTx
    + RoundTx
    + SecaggTx
    + StatisticsTx
    + AuditTx
    + WebhookTx
    + LeaseTx
    + Send
{
    /// Takes the database's write order for the rest of the transaction now, before any read
    /// that a write of this transaction depends on (PostgreSQL: the advisory lock every audit
    /// append takes; SQLite: the connection's writer lock is held from `begin`).
    async fn take_write_order(&mut self) -> Result<()>;

    async fn commit(self: Box<Self>) -> Result<()>;
}

/// Which applications a list returns, besides the caller's scope.
#[derive(Debug, Clone, Default)]
pub struct ApplicationFilter {
    /// Only these states (any when empty).
    pub statuses: Vec<ApplicationStatus>,
    /// Only those whose current deadline is at or before this instant.
    pub due_by: Option<Timestamp>,
}

/// Applications for a data permit, the procedure on them and their decisions.
#[async_trait]
pub trait ApplicationTx: Send {
    /// Stores a new application with the deadline its state runs against.
    async fn insert_application(
        &mut self,
        app: &Application,
        due_at: Option<Timestamp>,
    ) -> Result<()>;
    async fn get_application(&mut self, id: ApplicationId) -> Result<Option<Application>>;
    /// Drafts are listed only to their organisation.
    async fn list_applications(
        &mut self,
        scope: &Scope,
        filter: &ApplicationFilter,
        page: Page,
    ) -> Result<Vec<Application>>;
    /// Writes `app` if it is still in state `from` (`Conflict` otherwise: another writer moved
    /// it first), with the deadline its new state runs against.
    async fn update_application(
        &mut self,
        app: &Application,
        from: ApplicationStatus,
        due_at: Option<Timestamp>,
    ) -> Result<()>;
    /// Open or unpublished applications whose deadline is unknown (rows older than the
    /// procedure) or has passed by `now`.
    async fn list_applications_due(&mut self, now: Timestamp) -> Result<Vec<Application>>;
    /// How many applications (drafts aside) are in each state as the public sees it: a
    /// decision not yet published counts as `assessing`.
    async fn count_applications_by_status(&mut self) -> Result<Vec<(ApplicationStatus, u64)>>;
    /// Records that deadline `kind` at `due_at` was raised; false if it already was.
    async fn raise_application_deadline(
        &mut self,
        id: ApplicationId,
        kind: &str,
        due_at: Timestamp,
        now: Timestamp,
    ) -> Result<bool>;
}

/// Data permits, the versions of their terms, and the data holders they name.
#[async_trait]
pub trait PermitTx: Send {
    async fn insert_permit(&mut self, permit: &Permit, by: &str, now: Timestamp) -> Result<()>;
    async fn get_permit(&mut self, id: PermitId) -> Result<Option<Permit>>;
    async fn list_permits(&mut self, scope: &Scope, page: Page) -> Result<Vec<Permit>>;
    /// Permits still recorded as active or suspended whose expiry has passed.
    async fn list_lapsed_permits(&mut self, now: Timestamp) -> Result<Vec<Permit>>;
    /// Writes a changed permit if its stored row version is still `expected_row_version`.
    async fn update_permit(&mut self, permit: &Permit, expected_row_version: i64) -> Result<()>;
    /// Keeps the current terms as a new version (issue and every amendment).
    async fn insert_permit_version(
        &mut self,
        permit: &Permit,
        by: &str,
        reason: Option<&str>,
        now: Timestamp,
    ) -> Result<()>;
    async fn list_permit_versions(&mut self, id: PermitId) -> Result<Vec<PermitVersion>>;
}

/// The opt-out registry: an append-only log of opt-out events.
#[async_trait]
pub trait OptOutTx: Send {
    async fn append_optout(&mut self, event: NewOptOutEvent) -> Result<OptOutEvent>;
    async fn optout_record(&mut self, id: OptOutId) -> Result<Vec<OptOutEvent>>;
    async fn optout_events_for(
        &mut self,
        subject_keys: &[String],
        max_seq: i64,
    ) -> Result<Vec<OptOutEvent>>;
    async fn optout_registry_version(&mut self) -> Result<i64>;
    /// Keeps a subject's match value (the first one written stays: it is a function of the
    /// subject's pseudonym).
    async fn put_optout_match(&mut self, subject_key: &str, match_value: &str) -> Result<()>;
    /// Every registry row up to `max_seq`, in order, with its subject's match value if kept.
    async fn optout_scope(&mut self, max_seq: i64) -> Result<Vec<(OptOutEvent, Option<String>)>>;
}

/// The Art. 77 dataset catalogue: each dataset's current description, and its revisions.
#[async_trait]
pub trait CatalogueTx: Send {
    async fn insert_dataset(&mut self, entry: &CatalogueEntry) -> Result<()>;
    async fn get_dataset(&mut self, id: DatasetId) -> Result<Option<CatalogueEntry>>;
    /// Writes a changed entry (a new revision, or its withdrawal) if its stored revision is
    /// still `expected_revision` and its publisher the same (`Conflict` otherwise).
    async fn update_dataset(
        &mut self,
        entry: &CatalogueEntry,
        expected_revision: i64,
    ) -> Result<()>;
    /// Keeps the entry's current description as its revision (first publication and every
    /// new version).
    async fn insert_dataset_revision(
        &mut self,
        entry: &CatalogueEntry,
        by: &str,
        now: Timestamp,
    ) -> Result<()>;
    /// Published datasets, oldest first (a harvester's pages stay stable as datasets are added).
    async fn list_published_datasets(&mut self, page: Page) -> Result<Vec<CatalogueEntry>>;
    async fn count_published_datasets(&mut self) -> Result<u64>;
}

/// Studies, their checkpoints and the data holders' evaluations of their models.
#[async_trait]
pub trait StudyTx: Send {
    async fn insert_study(&mut self, study: &Study, noise_key: &[u8]) -> Result<()>;
    async fn get_study(&mut self, id: StudyId) -> Result<Option<Study>>;
    async fn list_studies(&mut self, scope: &Scope, page: Page) -> Result<Vec<Study>>;
    /// Studies the round loop still drives (running or suspended), oldest first.
    async fn live_study_ids(&mut self) -> Result<Vec<StudyId>>;
    /// The running or suspended studies under a permit.
    async fn live_studies_for_permit(&mut self, permit: PermitId) -> Result<Vec<Study>>;
    /// Writes a changed study if its stored row version is still `expected_row_version`.
    async fn update_study(&mut self, study: &Study, expected_row_version: i64) -> Result<()>;
    /// The secret that seeds the study's aggregation noise, as stored (sealed by `KeyVault`).
    async fn study_noise_key(&mut self, id: StudyId) -> Result<Vec<u8>>;
    /// Every study's stored noise key (sealing keys stored in clear at start-up).
    async fn study_noise_keys(&mut self) -> Result<Vec<(StudyId, Vec<u8>)>>;
    async fn set_study_noise_key(&mut self, id: StudyId, stored: &[u8]) -> Result<()>;

    async fn insert_checkpoint(&mut self, checkpoint: &Checkpoint, now: Timestamp) -> Result<()>;
    async fn latest_checkpoint(&mut self, id: StudyId) -> Result<Option<Checkpoint>>;
    /// The checkpoint taken after `round` (0: the initial model).
    async fn checkpoint_at(&mut self, id: StudyId, round: u64) -> Result<Option<Checkpoint>>;

    /// Records a holder's evaluation of a round's model; a repeat of the same one is ignored.
    async fn insert_evaluation(
        &mut self,
        study: StudyId,
        round: u64,
        evaluation: &SiteEvaluation,
        now: Timestamp,
    ) -> Result<()>;
    async fn list_evaluations(&mut self, study: StudyId) -> Result<Vec<(u64, SiteEvaluation)>>;
}

/// A statistics run as stored, with the version an update must name.
#[derive(Debug, Clone)]
pub struct StoredRun {
    pub run: StatisticsRun,
    pub row_version: i64,
}

/// Which statistics runs a list returns, besides the caller's scope.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub permit_id: Option<PermitId>,
    pub application_id: Option<ApplicationId>,
    /// Only these states (any when empty).
    pub statuses: Vec<RunStatus>,
}

/// Statistics runs (Art. 69) and their data holders' tasks.
#[async_trait]
pub trait StatisticsTx: Send {
    async fn insert_statistics_run(&mut self, run: &StatisticsRun) -> Result<()>;
    async fn get_statistics_run(&mut self, id: StatisticsRunId) -> Result<Option<StoredRun>>;
    async fn list_statistics_runs(
        &mut self,
        scope: &Scope,
        filter: &RunFilter,
        page: Page,
    ) -> Result<Vec<StoredRun>>;
    /// The organisation's released runs, oldest first (the differencing check's lineage).
    async fn released_statistics_runs(&mut self, organisation: &OrgId) -> Result<Vec<StoredRun>>;
    /// Runs still computing whose holders' deadline has passed.
    async fn computing_runs_past_deadline(
        &mut self,
        now: Timestamp,
    ) -> Result<Vec<StatisticsRunId>>;
    /// Stores the run's new state; `Conflict` if it changed since it was read.
    async fn update_statistics_run(
        &mut self,
        run: &StatisticsRun,
        expected_row_version: i64,
    ) -> Result<()>;
    async fn insert_statistics_task(&mut self, task: &StatisticsTaskRecord) -> Result<()>;
    async fn get_statistics_task(
        &mut self,
        id: StatisticsTaskId,
    ) -> Result<Option<StatisticsTaskRecord>>;
    /// A holder's unanswered tasks whose deadline has not passed, soonest deadline first.
    async fn open_statistics_tasks_for(
        &mut self,
        holder: &OrgId,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<StatisticsTaskRecord>>;
    async fn statistics_tasks(&mut self, run: StatisticsRunId)
        -> Result<Vec<StatisticsTaskRecord>>;
    /// Stores a holder's contribution; `Conflict` if the task was answered already.
    async fn complete_statistics_task(
        &mut self,
        id: StatisticsTaskId,
        contribution: &Contribution,
        now: Timestamp,
    ) -> Result<()>;
}

/// A study's rounds and the tasks each hands the data holders.
#[async_trait]
pub trait RoundTx: Send {
    async fn insert_round(&mut self, round: &Round) -> Result<()>;
    /// Closes a collecting round (phase, reason, budget, summary); `Conflict` if it was closed.
    async fn close_round(&mut self, round: &Round) -> Result<()>;
    async fn get_round(&mut self, id: RoundId) -> Result<Option<Round>>;
    /// The study's round attempt still collecting results, if any.
    async fn open_round(&mut self, id: StudyId) -> Result<Option<Round>>;
    async fn list_rounds(&mut self, id: StudyId) -> Result<Vec<Round>>;

    async fn insert_task(&mut self, task: &Task) -> Result<()>;
    async fn get_task(&mut self, id: TaskId) -> Result<Option<Task>>;
    /// Pending tasks of a data holder whose deadline has not passed, oldest first.
    async fn pending_tasks_for(
        &mut self,
        holder: &OrgId,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<Task>>;
    async fn round_tasks(&mut self, round: RoundId) -> Result<Vec<Task>>;
    /// How many fit tasks the round has, and how many of them delivered their result: what
    /// the round loop checks on every wake-up, without reading the tasks.
    async fn count_fit_results(&mut self, round: RoundId) -> Result<(u64, u64)>;
    /// The opt-out registry version round `round` pinned, if the round exists.
    async fn round_registry_version(&mut self, round: RoundId) -> Result<Option<i64>>;
    /// The study's tasks that carry a holder's report, by round, then completion.
    async fn reported_tasks(&mut self, study: StudyId) -> Result<Vec<Task>>;
    /// Stores a pending task's result; `Conflict` if the task is no longer pending.
    async fn complete_task(&mut self, task: &Task, result: Option<&[u8]>) -> Result<()>;
    /// Moves every pending task of the round to `status`; returns how many moved.
    async fn close_pending_tasks(&mut self, round: RoundId, status: TaskStatus) -> Result<u64>;
    async fn task_result(&mut self, id: TaskId) -> Result<Option<Vec<u8>>>;
}

/// Secure aggregation of a round (docs/secure-aggregation.md): the relay's state, the running
/// masked sum and the holders' messages.
#[async_trait]
pub trait SecaggTx: Send {
    async fn insert_secagg_session(&mut self, round: RoundId, state: &[u8]) -> Result<()>;
    /// The relay's state, read without locking.
    async fn secagg_session(&mut self, round: RoundId) -> Result<Option<Vec<u8>>>;
    /// The relay's state, locked until the transaction ends, so that messages of several
    /// holders and the round loop change it one after the other.
    async fn lock_secagg_session(&mut self, round: RoundId) -> Result<Option<Vec<u8>>>;
    async fn update_secagg_session(&mut self, round: RoundId, state: &[u8]) -> Result<()>;
    /// The running sum of the round's masked inputs (`secagg::MaskedSum::to_bytes`), in a
    /// table apart from the state that every message, poll and round-loop pass reads and
    /// rewrites; `None` before the first masked input. Read and written only under
    /// [`SecaggTx::lock_secagg_session`].
    async fn secagg_sum(&mut self, round: RoundId) -> Result<Option<Vec<u8>>>;
    async fn update_secagg_sum(&mut self, round: RoundId, sum: &[u8]) -> Result<()>;
    /// Stores the messages a closed stage relays, one per (holder, kind).
    async fn insert_secagg_messages(
        &mut self,
        round: RoundId,
        kind: &str,
        messages: &[(u32, Vec<u8>)],
    ) -> Result<()>;
    async fn secagg_message(
        &mut self,
        round: RoundId,
        client: u32,
        kind: &str,
    ) -> Result<Option<Vec<u8>>>;
    /// Keeps a holder's message of `kind` that the relay accepted, until the stage that uses
    /// it closes; a second one of the same holder and kind is ignored (the relay's state tells
    /// which one it accepted). Only under [`SecaggTx::lock_secagg_session`].
    async fn insert_secagg_received(
        &mut self,
        round: RoundId,
        client: u32,
        kind: &str,
        message: &[u8],
    ) -> Result<()>;
    /// Every kept message of `kind` of the round, by holder.
    async fn secagg_received(&mut self, round: RoundId, kind: &str) -> Result<Vec<(u32, Vec<u8>)>>;
    /// Forgets the kept messages of `kind` of the round (its stage closed).
    async fn delete_secagg_received(&mut self, round: RoundId, kind: &str) -> Result<()>;
    /// Forgets a closed round's protocol state and messages.
    async fn delete_secagg(&mut self, round: RoundId) -> Result<()>;
}

/// The audit trail and its Merkle tree.
#[async_trait]
pub trait AuditTx: Send {
    async fn append_audit(&mut self, event: NewAuditEvent) -> Result<AuditEntry>;
    async fn list_audit(&mut self, filter: &AuditFilter) -> Result<Vec<AuditEntry>>;
    /// The span of entries `list_audit` would return, without loading them.
    async fn audit_span(&mut self, filter: &AuditFilter) -> Result<AuditSpan>;

    /// Leaves in the audit trail's Merkle tree (entry `seq` is leaf `seq - 1`; its row's
    /// `tree_nodes` holds the leaf and the subtrees it completes, `store::tree`).
    async fn audit_tree_size(&mut self) -> Result<u64>;
    /// The stored perfect-subtree hashes among `wanted`, `(level, index)` pairs (see
    /// `translog::SubtreeHashes`); pairs not stored are left out of the answer.
    async fn audit_subtrees(&mut self, wanted: &[(u32, u64)]) -> Result<Vec<(u32, u64, Hash)>>;
    /// Stores the tree hashes that entry `seq`, the next leaf, completes (`translog::Frontier`'s
    /// append): for entries written before the tree existed. `append_audit` stores its own.
    async fn fill_audit_tree_nodes(&mut self, seq: i64, nodes: &[Hash]) -> Result<()>;
}

/// How far each webhook endpoint has been served the audit trail.
#[async_trait]
pub trait WebhookTx: Send {
    /// The audit entry up to which webhook `endpoint` has been served, if it ever was.
    async fn webhook_cursor(&mut self, endpoint: &str) -> Result<Option<i64>>;
    /// Moves `endpoint`'s cursor to `seq` (never back: a slower replica cannot rewind it).
    async fn advance_webhook_cursor(&mut self, endpoint: &str, seq: i64) -> Result<()>;
}

/// Leases on work that one replica of a fleet does at a time (`federation::fleet`).
#[async_trait]
pub trait LeaseTx: Send {
    /// Takes or renews lease `name` for `owner` until `until`: granted when nobody holds it,
    /// `owner` already does, or the holder's lease ran out by `now`.
    async fn take_lease(
        &mut self,
        name: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool>;
    /// Gives up every lease `owner` holds (a replica stopping); how many there were.
    async fn release_leases(&mut self, owner: &str) -> Result<u64>;
}

/// Whether an audit row's `recorded_at` is stored in the one form the gateway writes. The hash
/// covers the instant, so a row rewritten to the same instant in another UTC offset would still
/// verify while text comparisons (SQLite's time-window filters) miss it; verification therefore
/// also checks the stored form.
pub(crate) trait StoredForm {
    fn recorded_at_canonical(&self) -> Result<bool>;
}

impl StoredForm for sqlx::sqlite::SqliteRow {
    fn recorded_at_canonical(&self) -> Result<bool> {
        use sqlx::Row;
        let text: String = self.try_get("recorded_at")?;
        let instant: chrono::DateTime<chrono::Utc> = self.try_get("recorded_at")?;
        // The form sqlx writes for a `DateTime<Utc>` (RFC 3339, `+00:00`, shortest fraction).
        Ok(text == instant.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false))
    }
}

impl StoredForm for sqlx::postgres::PgRow {
    /// `timestamptz` stores the instant itself: there is no other form to rewrite it into.
    fn recorded_at_canonical(&self) -> Result<bool> {
        Ok(true)
    }
}

/// An audit event for the stores' own tests: an officer's permit check.
#[cfg(test)]
pub(crate) fn sample_audit_event() -> ehds_core::domain::audit::NewAuditEvent {
    use ehds_core::domain::audit::{Actor, AuditAction, AuditSubject, NewAuditEvent};
    let actor = Actor {
        sub: "officer".into(),
        roles: vec![],
        organisation: None,
    };
    NewAuditEvent::success(
        &actor,
        AuditAction::Request(crate::authz::Action::PermitCheck),
        AuditSubject::Permit(ehds_core::domain::PermitId::new()),
    )
}

/// Opens the store named by `url`: `postgres://` or `postgresql://` for PostgreSQL, `sqlite:`
/// for SQLite. Runs the backend's migrations.
pub async fn connect(url: &str) -> anyhow::Result<std::sync::Arc<dyn Store>> {
    connect_with(url, CommitMode::default()).await
}

/// [`connect`], committing as `mode` says.
pub async fn connect_with(
    url: &str,
    mode: CommitMode,
) -> anyhow::Result<std::sync::Arc<dyn Store>> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(std::sync::Arc::new(PgStore::connect_with(url, mode).await?))
    } else if url.starts_with("sqlite:") {
        Ok(std::sync::Arc::new(
            SqliteStore::connect_with(url, mode).await?,
        ))
    } else {
        anyhow::bail!("unsupported database URL scheme (expected postgres:// or sqlite:)")
    }
}
