//! PostgreSQL, the production backend.

use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use sqlx::postgres::{PgListener, PgPool, PgPoolOptions};

use super::{
    migrations, rows::RowCache, tree::TreeEdge, CommitMode, Result, Store, Subscription, Tx,
};

/// Key of the transaction-scoped advisory lock that orders audit and registry appends: the
/// chain needs every writer to see the previous head, and registry versions must be committed
/// in order.
const WRITE_ORDER_LOCK: i64 = 0x4548_4453; // "EHDS"

#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    edge: TreeEdge,
    rows: RowCache,
    mode: CommitMode,
}

impl PgStore {
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        Self::connect_with(url, CommitMode::default()).await
    }

    pub async fn connect_with(url: &str, mode: CommitMode) -> anyhow::Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await
            .context("Failed to connect to PostgreSQL")?;
        migrations::postgres()
            .run(&pool)
            .await
            .context("Failed to migrate PostgreSQL")?;
        Ok(Self {
            pool,
            edge: TreeEdge::default(),
            rows: RowCache::default(),
            mode,
        })
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

pub struct PgTx {
    tx: sqlx::Transaction<'static, sqlx::Postgres>,
    ordered: bool,
    observed: crate::observability::TxEvents,
    edge: TreeEdge,
    rows: RowCache,
    /// Set in group commit: where the flush that makes an ordered transaction durable is
    /// asked for after its commit.
    group: Option<PgPool>,
}

impl PgTx {
    /// Group commit: a transaction that took the write order commits without waiting for the
    /// flush (`synchronous_commit = off` for it alone), which releases the write order at once,
    /// and then waits for a flush that covers its commit record. The flush is that of a
    /// second, empty transaction that is given a transaction id and so commits durably
    /// (PostgreSQL flushes the log up to its own commit record, which comes after ours). The
    /// server serves callers waiting for a flush with one write of the log, so the writers
    /// that commit together share one flush instead of each holding the write order through
    /// its own. Until that flush the commit is visible but not yet durable; whoever answers a
    /// caller about it waits for the flush first.
    async fn commit_transaction(self) -> Result<()> {
        self.tx.commit().await?;
        if let (true, Some(pool)) = (self.ordered, self.group) {
            sqlx::query("select txid_current()").execute(&pool).await?;
        }
        Ok(())
    }

    async fn order_writes(&mut self) -> Result<()> {
        if !self.ordered {
            if self.group.is_some() {
                // one round trip: the simple protocol runs both statements
                sqlx::raw_sql(ORDER_WRITES_IN_GROUP)
                    .execute(&mut *self.tx)
                    .await?;
            } else {
                sqlx::query("select pg_advisory_xact_lock($1)")
                    .bind(WRITE_ORDER_LOCK)
                    .execute(&mut *self.tx)
                    .await?;
            }
            self.ordered = true;
        }
        Ok(())
    }
}

/// Takes [`WRITE_ORDER_LOCK`] and commits the transaction without waiting for the flush.
const ORDER_WRITES_IN_GROUP: &str =
    "select pg_advisory_xact_lock(1162363987); set local synchronous_commit = off";

#[async_trait]
impl Store for PgStore {
    async fn begin(&self) -> Result<Box<dyn Tx>> {
        Ok(Box::new(PgTx {
            tx: self.pool.begin().await?,
            ordered: false,
            observed: Default::default(),
            edge: self.edge.clone(),
            rows: self.rows.clone(),
            group: (self.mode == CommitMode::Group).then(|| self.pool.clone()),
        }))
    }
    async fn read(&self) -> Result<Box<dyn Tx>> {
        // MVCC: a reader never waits for the write order
        self.begin().await
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
        "postgres"
    }
    async fn publish(&self, payload: &str) -> Result<()> {
        sqlx::query("select pg_notify($1, $2)")
            .bind(FLEET_CHANNEL)
            .bind(payload)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
    async fn subscribe(&self) -> Result<Option<Box<dyn Subscription>>> {
        // holds one of the pool's connections for as long as the process runs
        let mut listener = PgListener::connect_with(&self.pool).await?;
        listener.listen(FLEET_CHANNEL).await?;
        Ok(Some(Box::new(PgSubscription { listener })))
    }
}

/// The NOTIFY channel the gateway processes on one database signal each other on.
const FLEET_CHANNEL: &str = "ehds_fleet";

struct PgSubscription {
    listener: PgListener,
}

#[async_trait]
impl Subscription for PgSubscription {
    // `try_recv` answers `None` once when the connection was lost, and connects and listens
    // again on the next call.
    async fn next(&mut self) -> Result<Option<String>> {
        Ok(self
            .listener
            .try_recv()
            .await?
            .map(|n| n.payload().to_owned()))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_group_statement_takes_the_write_order_lock() {
        assert_eq!(super::WRITE_ORDER_LOCK, 1162363987);
        assert!(super::ORDER_WRITES_IN_GROUP.contains(&super::WRITE_ORDER_LOCK.to_string()));
    }
}

// The transaction traits' SQL (`sql/`), compiled here for this backend, named `Db` and `DbTx`;
// `sqlite.rs` compiles the same files for its own.
type Db = sqlx::Postgres;
type DbTx = PgTx;
#[allow(clippy::duplicate_mod)]
#[path = "sql/mod.rs"]
mod sql;
