//! SQLite, the embedded default. One writer at a time: a transaction takes the process-wide
//! write lock before it begins and SQLite's write lock as it begins (`BEGIN IMMEDIATE`), so
//! reads that a transaction later turns into writes never hit SQLITE_BUSY and the audit chain
//! has a single, ordered head. The second lock matters even within one process: a dropped
//! transaction's rollback runs on its connection's worker thread after the first is released.

use std::{str::FromStr, sync::Arc, time::Duration};

use anyhow::Context;
use async_trait::async_trait;
use sqlx::{
    pool::PoolConnection,
    sqlite::{
        SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
    },
    Sqlite,
};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::{tree::TreeEdge, Result, Store, Tx};

#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    writer: Arc<Mutex<()>>,
    edge: TreeEdge,
}

impl SqliteStore {
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
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
            .connect_with(options)
            .await
            .context("Failed to open SQLite database")?;
        sqlx::migrate!("../../migrations/sqlite")
            .run(&pool)
            .await
            .context("Failed to migrate SQLite")?;
        Ok(Self {
            pool,
            writer: Arc::new(Mutex::new(())),
            edge: TreeEdge::default(),
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

pub struct SqliteTx {
    tx: OpenTransaction,
    _writer: OwnedMutexGuard<()>,
    observed: crate::observability::TxEvents,
    edge: TreeEdge,
}

impl SqliteTx {
    async fn order_writes(&mut self) -> Result<()> {
        Ok(())
    }

    async fn commit_transaction(mut self) -> Result<()> {
        sqlx::query("COMMIT").execute(&mut *self.tx).await?;
        self.tx.open = false;
        Ok(())
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
        let guard = self.writer.clone().lock_owned().await;
        Ok(Box::new(SqliteTx {
            tx: OpenTransaction::begin(&self.pool).await?,
            _writer: guard,
            observed: Default::default(),
            edge: self.edge.clone(),
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
}
