//! PostgreSQL, the production backend.

use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use sqlx::postgres::{PgPool, PgPoolOptions};

use super::{tree::TreeEdge, Result, Store, Tx};

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
}

// The transaction traits' SQL (`sql/`), compiled here for this backend, named `Db` and `DbTx`;
// `sqlite.rs` compiles the same files for its own.
type Db = sqlx::Postgres;
type DbTx = PgTx;
#[allow(clippy::duplicate_mod)]
#[path = "sql/mod.rs"]
mod sql;
