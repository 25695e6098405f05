//! PostgreSQL, the production backend.

use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use sqlx::postgres::{PgListener, PgPool, PgPoolOptions};

use super::{tree::TreeEdge, Result, Store, Subscription, Tx};

/// Key of the transaction-scoped advisory lock that orders audit and registry appends: the
/// chain needs every writer to see the previous head, and registry versions must be committed
/// in order.
const WRITE_ORDER_LOCK: i64 = 0x4548_4453; // "EHDS"

#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    edge: TreeEdge,
}

impl PgStore {
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await
            .context("Failed to connect to PostgreSQL")?;
        sqlx::migrate!("../../migrations/postgres")
            .run(&pool)
            .await
            .context("Failed to migrate PostgreSQL")?;
        Ok(Self {
            pool,
            edge: TreeEdge::default(),
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
}

impl PgTx {
    async fn commit_transaction(self) -> Result<()> {
        self.tx.commit().await?;
        Ok(())
    }

    async fn order_writes(&mut self) -> Result<()> {
        if !self.ordered {
            sqlx::query("select pg_advisory_xact_lock($1)")
                .bind(WRITE_ORDER_LOCK)
                .execute(&mut *self.tx)
                .await?;
            self.ordered = true;
        }
        Ok(())
    }
}

#[async_trait]
impl Store for PgStore {
    async fn begin(&self) -> Result<Box<dyn Tx>> {
        Ok(Box::new(PgTx {
            tx: self.pool.begin().await?,
            ordered: false,
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

// The transaction traits' SQL (`sql/`), compiled here for this backend, named `Db` and `DbTx`;
// `sqlite.rs` compiles the same files for its own.
type Db = sqlx::Postgres;
type DbTx = PgTx;
#[allow(clippy::duplicate_mod)]
#[path = "sql/mod.rs"]
mod sql;
