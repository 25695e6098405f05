//! SQLite, the embedded default. One writer at a time: a transaction takes the process-wide
//! write lock before it begins and SQLite's write lock as it begins (`BEGIN IMMEDIATE`), so
//! reads that a transaction later turns into writes never hit SQLITE_BUSY and the audit chain
//! has a single, ordered head. The second lock matters even within one process: a dropped
//! transaction's rollback runs on its connection's worker thread after the first is released.
//!
//! Group commit ([`CommitMode::Group`]): the writers take turns in one SQLite transaction, each
//! as a savepoint of it. A writer that commits releases its savepoint and, when others are
//! waiting for their turn, leaves the transaction open for them and waits; the transaction is
//! committed (one flush) once nobody is waiting, by the last writer or by a flush queued behind
//! the waiting ones (the lock is fair, first come first served), and every writer in it is then
//! answered. A writer that rolls back rolls back its savepoint only. If SQLite ends the
//! transaction itself (a full disk) or its commit fails, every writer of the group is told, and
//! none of them is stored.

use std::{
    str::FromStr,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use anyhow::Context;
use async_trait::async_trait;
use sqlx::{
    pool::PoolConnection,
    sqlite::{
        SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
    },
    Sqlite,
};
use tokio::sync::{oneshot, Mutex, OwnedMutexGuard};

use super::{
    migrations, rows::RowCache, tree::TreeEdge, CommitMode, Result, Store, StoreError, Tx,
};

#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Connections for [`Store::read`], which refuse writes (`query_only`): in WAL mode they
    /// read the last committed state while the writer writes.
    readers: SqlitePool,
    writer: Arc<Writer>,
    edge: TreeEdge,
    rows: RowCache,
}

impl SqliteStore {
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        Self::connect_with(url, CommitMode::default()).await
    }

    pub async fn connect_with(url: &str, mode: CommitMode) -> anyhow::Result<Self> {
        let options = SqliteConnectOptions::from_str(url)
            .context("Invalid SQLite URL")?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // The audit trail must survive a power cut, not just a crash.
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        restrict_database_files(options.get_filename())?;
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options.clone())
            .await
            .context("Failed to open SQLite database")?;
        migrations::sqlite()
            .run(&pool)
            .await
            .context("Failed to migrate SQLite")?;
        let readers = SqlitePoolOptions::new()
            .max_connections(8)
            .min_connections(0)
            .connect_lazy_with(options.pragma("query_only", "ON"));
        Ok(Self {
            readers,
            writer: Arc::new(Writer {
                mode,
                pool: pool.clone(),
                batch: Arc::new(Mutex::new(Batch::default())),
                waiting: AtomicUsize::new(0),
                flush_queued: AtomicBool::new(false),
            }),
            pool,
            edge: TreeEdge::default(),
            rows: RowCache::default(),
        })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

/// The database holds pseudonymised health-governance records: it and its WAL and shared-memory
/// files are readable by the owner only. SQLite gives the WAL and shared-memory files the mode
/// of the database file, so creating that file with 0600 before SQLite opens it is enough; files
/// left readable by older versions are tightened.
fn restrict_database_files(path: &std::path::Path) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        if path.as_os_str().is_empty() || path.to_str() == Some(":memory:") {
            return Ok(());
        }
        if let Some(dir) = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty() && !d.exists())
        {
            ehds_core::key_file::create_private_dir(dir)?;
        }
        if !path.exists() {
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path)
                .with_context(|| format!("Failed to create {}", path.display()))?;
        }
        for suffix in ["", "-wal", "-shm"] {
            let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
            let Ok(meta) = std::fs::metadata(&file) else {
                continue;
            };
            if meta.permissions().mode() & 0o077 != 0 {
                tracing::warn!(path = %file.display(), "restricting the database file to its owner (0600)");
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
                    .with_context(|| format!("Failed to restrict {}", file.display()))?;
            }
        }
    }
    Ok(())
}

/// The write side of the database: whose turn it is, and the open SQLite transaction.
struct Writer {
    mode: CommitMode,
    pool: SqlitePool,
    /// Held by the writer whose turn it is (`tokio`'s lock is fair: turns go in order of
    /// asking).
    batch: Arc<Mutex<Batch>>,
    /// Writers waiting for their turn.
    waiting: AtomicUsize,
    /// A flush is waiting for its turn behind them.
    flush_queued: AtomicBool,
}

/// The SQLite transaction the writers take turns in, and the writers that committed in it and
/// wait for its flush.
#[derive(Default)]
struct Batch {
    open: Option<OpenTransaction>,
    committed: Vec<oneshot::Sender<Result<()>>>,
    /// Successful commits so far.
    flushes: u64,
}

impl Batch {
    fn connection(&mut self) -> &mut sqlx::SqliteConnection {
        self.open
            .as_mut()
            .expect("a writer's turn has an open transaction")
    }

    /// Commits the transaction and answers every writer that committed in it; `current` is
    /// the writer whose turn it is, if it committed too.
    async fn flush(&mut self, current: bool) -> Result<()> {
        let Some(mut open) = self.open.take() else {
            return Ok(());
        };
        let result = match sqlx::query("COMMIT").execute(&mut *open).await {
            Ok(_) => {
                open.open = false;
                self.flushes += 1;
                crate::observability::store_flushed(self.committed.len() + usize::from(current));
                Ok(())
            }
            // dropping `open` rolls back what SQLite did not
            Err(e) => Err(StoreError::from(e)),
        };
        self.answer(&result);
        result
    }

    /// Rolls the transaction back (SQLite may have done so already) and tells every writer
    /// that committed in it.
    fn fail(&mut self, cause: &StoreError) {
        self.open = None;
        self.answer(&Err(StoreError::group_failed(cause)));
    }

    fn answer(&mut self, result: &Result<()>) {
        for writer in self.committed.drain(..) {
            let _ = writer.send(match result {
                Ok(()) => Ok(()),
                Err(e) => Err(StoreError::group_failed(e)),
            });
        }
    }
}

impl Writer {
    /// Waits for the turn to write and opens the transaction (or the writer's savepoint in it).
    async fn turn(self: &Arc<Self>) -> Result<OwnedMutexGuard<Batch>> {
        let mut batch = {
            let _waiting = Waiting::on(&self.waiting);
            self.batch.clone().lock_owned().await
        };
        if batch.open.is_none() {
            batch.open = Some(OpenTransaction::begin(&self.pool).await?);
        }
        if self.mode == CommitMode::Group {
            if let Err(e) = sqlx::query("SAVEPOINT writer")
                .execute(batch.connection())
                .await
            {
                let e = StoreError::from(e);
                batch.fail(&e);
                return Err(e);
            }
        }
        Ok(batch)
    }

    /// Commits the writer whose turn `batch` is, and answers once it is on disk.
    async fn commit(self: &Arc<Self>, mut batch: OwnedMutexGuard<Batch>) -> Result<()> {
        if self.mode == CommitMode::Each {
            return batch.flush(true).await;
        }
        if let Err(e) = sqlx::query("RELEASE SAVEPOINT writer")
            .execute(batch.connection())
            .await
        {
            let e = StoreError::from(e);
            batch.fail(&e);
            return Err(e);
        }
        if self.waiting.load(Ordering::Acquire) == 0 {
            // nobody to share the flush with
            return batch.flush(true).await;
        }
        let (answer, answered) = oneshot::channel();
        batch.committed.push(answer);
        self.queue_flush();
        drop(batch);
        answered
            .await
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the commit group was dropped").into()))
    }

    /// Queues a flush behind the writers waiting now (unless one is queued already), so the
    /// group is flushed even if none of them commits.
    fn queue_flush(self: &Arc<Self>) {
        if self.flush_queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let writer = self.clone();
        tokio::spawn(async move {
            let mut batch = writer.batch.clone().lock_owned().await;
            writer.flush_queued.store(false, Ordering::Release);
            if !batch.committed.is_empty() {
                // each writer of the group is answered with the outcome
                let _ = batch.flush(false).await;
            }
        });
    }

    /// Undoes the writes of the writer whose turn `batch` is.
    async fn roll_back(&self, mut batch: OwnedMutexGuard<Batch>) {
        if self.mode == CommitMode::Each || batch.committed.is_empty() {
            // nobody else's work in the transaction: end it, so that other processes can write
            if let Some(mut open) = batch.open.take() {
                if sqlx::query("ROLLBACK").execute(&mut *open).await.is_ok() {
                    open.open = false;
                }
            }
            return;
        }
        let undone = async {
            sqlx::query("ROLLBACK TO SAVEPOINT writer")
                .execute(batch.connection())
                .await?;
            sqlx::query("RELEASE SAVEPOINT writer")
                .execute(batch.connection())
                .await
        };
        if let Err(e) = undone.await {
            // SQLite ended the transaction itself (SQLITE_FULL, SQLITE_IOERR): the group is lost
            batch.fail(&e.into());
        }
    }
}

/// Counts a writer waiting for its turn, until it has it or gives up.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn on(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

pub struct SqliteTx {
    tx: Access,
    observed: crate::observability::TxEvents,
    edge: TreeEdge,
    rows: RowCache,
}

/// What a transaction may do: write in its turn, or read a snapshot beside the writer.
enum Access {
    Write(WriterTurn),
    Read(sqlx::Transaction<'static, Sqlite>),
}

impl std::ops::Deref for Access {
    type Target = sqlx::SqliteConnection;
    fn deref(&self) -> &Self::Target {
        match self {
            Access::Write(turn) => turn,
            Access::Read(tx) => tx,
        }
    }
}

impl std::ops::DerefMut for Access {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Access::Write(turn) => turn,
            Access::Read(tx) => tx,
        }
    }
}

impl SqliteTx {
    async fn order_writes(&mut self) -> Result<()> {
        Ok(())
    }

    async fn commit_transaction(self) -> Result<()> {
        let mut turn = match self.tx {
            Access::Read(tx) => return Ok(tx.commit().await?),
            Access::Write(turn) => turn,
        };
        let batch = turn.batch.take().expect("a turn is ended once");
        let writer = turn.writer.clone();
        // A task of its own: a caller that goes away mid-commit (a client disconnecting) must
        // not leave the group's flush half done and its writers unanswered.
        tokio::spawn(async move { writer.commit(batch).await })
            .await
            .map_err(|e| anyhow::anyhow!("the commit task failed: {e}"))?
    }
}

/// A writer's turn: the open transaction, rolled back to where the turn began unless committed.
struct WriterTurn {
    batch: Option<OwnedMutexGuard<Batch>>,
    writer: Arc<Writer>,
}

impl std::ops::Deref for WriterTurn {
    type Target = sqlx::SqliteConnection;
    fn deref(&self) -> &Self::Target {
        self.batch
            .as_ref()
            .and_then(|b| b.open.as_deref())
            .expect("used only during its turn")
    }
}

impl std::ops::DerefMut for WriterTurn {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.batch
            .as_mut()
            .expect("used only during its turn")
            .connection()
    }
}

impl Drop for WriterTurn {
    fn drop(&mut self) {
        let Some(mut batch) = self.batch.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            // the next writer's turn begins once this one is undone
            Ok(runtime) => {
                let writer = self.writer.clone();
                runtime.spawn(async move { writer.roll_back(batch).await });
            }
            // no runtime to roll back on: closing the connection rolls back the whole group
            Err(_) => batch.fail(&StoreError::Other(anyhow::anyhow!(
                "a transaction was dropped outside the runtime"
            ))),
        }
    }
}

/// A pooled connection inside a transaction begun and ended with plain `BEGIN IMMEDIATE` and
/// `COMMIT` rather than through `sqlx::Transaction`. SQLite ends a transaction by itself on
/// some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY, SQLITE_NOMEM: a full disk at commit);
/// sqlx's rollback then fails with "no transaction is active" and leaves its count of open
/// transactions raised on the connection, which goes back to the pool and refuses every later
/// `BEGIN` with "attempted to call begin_with at non-zero transaction depth". Here a transaction
/// dropped open (a refusal, an error, a failed commit) is rolled back before its connection
/// returns to the pool, and a rollback SQLite already did is no error.
struct OpenTransaction {
    connection: Option<PoolConnection<Sqlite>>,
    open: bool,
}

impl OpenTransaction {
    async fn begin(pool: &SqlitePool) -> Result<Self> {
        let mut connection = pool.acquire().await?;
        // IMMEDIATE: the write lock is taken here, where SQLite waits for it (busy timeout),
        // not at the first write after a read, where it fails at once
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut *connection)
            .await?;
        Ok(Self {
            connection: Some(connection),
            open: true,
        })
    }
}

impl std::ops::Deref for OpenTransaction {
    type Target = sqlx::SqliteConnection;
    fn deref(&self) -> &Self::Target {
        self.connection.as_ref().expect("taken only on drop")
    }
}

impl std::ops::DerefMut for OpenTransaction {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.connection.as_mut().expect("taken only on drop")
    }
}

impl Drop for OpenTransaction {
    fn drop(&mut self) {
        let Some(mut connection) = self.connection.take().filter(|_| self.open) else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    // "no transaction is active" when SQLite rolled back already
                    let _ = sqlx::query("ROLLBACK").execute(&mut *connection).await;
                });
            }
            // no runtime to roll back on: closing the connection rolls back
            Err(_) => connection.close_on_drop(),
        }
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn begin(&self) -> Result<Box<dyn Tx>> {
        Ok(Box::new(SqliteTx {
            tx: Access::Write(WriterTurn {
                batch: Some(self.writer.turn().await?),
                writer: self.writer.clone(),
            }),
            observed: Default::default(),
            edge: self.edge.clone(),
            rows: self.rows.clone(),
        }))
    }
    async fn read(&self) -> Result<Box<dyn Tx>> {
        Ok(Box::new(SqliteTx {
            tx: Access::Read(self.readers.begin().await?),
            observed: Default::default(),
            edge: self.edge.clone(),
            rows: self.rows.clone(),
        }))
    }
    async fn ping(&self) -> Result<()> {
        sqlx::query("select 1").execute(&self.pool).await?;
        Ok(())
    }
    fn pool_usage(&self) -> crate::observability::PoolUsage {
        crate::observability::PoolUsage {
            open: self.pool.size(),
            idle: self.pool.num_idle() as u32,
            max: self.pool.options().get_max_connections(),
        }
    }
    fn backend(&self) -> &'static str {
        "sqlite"
    }
    // One process owns an SQLite database (it holds the writer lock), so nobody else listens.
    async fn publish(&self, _payload: &str) -> Result<()> {
        Ok(())
    }
    async fn subscribe(&self) -> Result<Option<Box<dyn super::Subscription>>> {
        Ok(None)
    }
}

// The transaction traits' SQL (`sql/`), compiled here for this backend, named `Db` and `DbTx`;
// `postgres.rs` compiles the same files for its own.
type Db = sqlx::Sqlite;
type DbTx = SqliteTx;
#[allow(clippy::duplicate_mod)]
#[path = "sql/mod.rs"]
mod sql;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sample_audit_event;

    /// A transaction must wait while another connection holds the database's write lock:
    /// another process on the same file (the command-line tools), or a transaction of this
    /// one that was dropped after a write and whose rollback is still queued on its
    /// connection's worker thread. A read transaction that then wants the write lock gets
    /// "database is locked" at once, without waiting, so transactions must take the lock when
    /// they begin.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_transaction_waits_for_a_writer_on_another_connection() {
        use sqlx::Connection;
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("g.db").display());
        let store = SqliteStore::connect(&url).await.unwrap();
        let mut other = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("begin immediate")
            .execute(&mut other)
            .await
            .unwrap();
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            sqlx::query("rollback").execute(&mut other).await.unwrap();
            other
        });
        let mut tx = store.begin().await.unwrap();
        let size = tx.audit_tree_size().await.unwrap();
        tx.append_audit(sample_audit_event()).await.unwrap();
        tx.commit().await.unwrap();
        release.await.unwrap().close().await.unwrap();
        let mut check = store.begin().await.unwrap();
        assert_eq!(check.audit_tree_size().await.unwrap(), size + 1);
    }

    async fn fresh_store(dir: &tempfile::TempDir, mode: CommitMode) -> SqliteStore {
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("g.db").display());
        SqliteStore::connect_with(&url, mode).await.unwrap()
    }

    /// Waits until `n` writers wait for their turn.
    async fn writers_waiting(store: &SqliteStore, n: usize) {
        while store.writer.waiting.load(Ordering::Acquire) != n {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    async fn flushes(store: &SqliteStore) -> u64 {
        store.writer.batch.lock().await.flushes
    }

    /// Three writers that commit while the next one waits share one flush, and each is
    /// answered only after it; the chain runs through all three in turn order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writers_committing_while_others_wait_share_one_flush() {
        let dir = tempfile::tempdir().unwrap();
        let store = fresh_store(&dir, CommitMode::Group).await;
        let before = flushes(&store).await;
        let mut first = store.begin().await.unwrap();
        first.append_audit(sample_audit_event()).await.unwrap();
        let spawn_writer = |store: SqliteStore| {
            tokio::spawn(async move {
                let mut tx = store.begin().await.unwrap();
                let seq = tx.append_audit(sample_audit_event()).await.unwrap().seq;
                tx.commit().await.unwrap();
                seq
            })
        };
        let second = spawn_writer(store.clone());
        writers_waiting(&store, 1).await;
        let third = spawn_writer(store.clone());
        writers_waiting(&store, 2).await;
        first.commit().await.unwrap();
        assert_eq!((second.await.unwrap(), third.await.unwrap()), (2, 3));
        assert_eq!(flushes(&store).await - before, 1);
        let mut check = store.begin().await.unwrap();
        let entries = check
            .list_audit(&crate::store::AuditFilter {
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap();
        let mut chain = ehds_core::domain::audit::ChainVerifier::default();
        assert!(entries.iter().all(|e| chain.feed(e)));
        assert_eq!(chain.finish().entries_checked, 3);
    }

    /// A writer that rolls back in a group undoes its own writes only.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_writer_rolling_back_in_a_group_undoes_only_its_own_writes() {
        let dir = tempfile::tempdir().unwrap();
        let store = fresh_store(&dir, CommitMode::Group).await;
        let mut first = store.begin().await.unwrap();
        first.append_audit(sample_audit_event()).await.unwrap();
        let refused = {
            let store = store.clone();
            tokio::spawn(async move {
                let mut tx = store.begin().await.unwrap();
                tx.append_audit(sample_audit_event()).await.unwrap();
                // dropped uncommitted: a refusal
            })
        };
        writers_waiting(&store, 1).await;
        let committing = tokio::spawn(async move { first.commit().await });
        refused.await.unwrap();
        committing.await.unwrap().unwrap();
        let mut tx = store.begin().await.unwrap();
        assert_eq!(tx.append_audit(sample_audit_event()).await.unwrap().seq, 2);
        tx.commit().await.unwrap();
        let mut check = store.begin().await.unwrap();
        assert_eq!(check.audit_tree_size().await.unwrap(), 2);
    }

    /// A reader sees the last committed state while a writer holds its turn, without waiting
    /// for it, and cannot write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn readers_do_not_wait_for_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let store = fresh_store(&dir, CommitMode::Group).await;
        let mut tx = store.begin().await.unwrap();
        tx.append_audit(sample_audit_event()).await.unwrap();
        tx.commit().await.unwrap();
        let mut writing = store.begin().await.unwrap();
        writing.append_audit(sample_audit_event()).await.unwrap();
        let mut reader = tokio::time::timeout(Duration::from_secs(5), store.read())
            .await
            .expect("a reader does not wait for the writer")
            .unwrap();
        assert_eq!(reader.audit_tree_size().await.unwrap(), 1);
        assert!(reader.append_audit(sample_audit_event()).await.is_err());
        drop(reader);
        writing.commit().await.unwrap();
        let mut reader = store.read().await.unwrap();
        assert_eq!(reader.audit_tree_size().await.unwrap(), 2);
    }

    /// `each`: every writer is flushed on its own, as before group commit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_mode_flushes_every_writer() {
        let dir = tempfile::tempdir().unwrap();
        let store = fresh_store(&dir, CommitMode::Each).await;
        let before = flushes(&store).await;
        let mut first = store.begin().await.unwrap();
        first.append_audit(sample_audit_event()).await.unwrap();
        let second = {
            let store = store.clone();
            tokio::spawn(async move {
                let mut tx = store.begin().await.unwrap();
                tx.append_audit(sample_audit_event()).await.unwrap();
                tx.commit().await.unwrap();
            })
        };
        writers_waiting(&store, 1).await;
        first.commit().await.unwrap();
        second.await.unwrap();
        assert_eq!(flushes(&store).await - before, 2);
    }
}
