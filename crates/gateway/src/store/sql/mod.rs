//! The SQL of the transaction traits, written once for both backends: `sqlite.rs` and
//! `postgres.rs` each compile this module (through `#[path]`) after naming their sqlx database
//! `Db` and their transaction `DbTx`, which has the fields `tx`, `observed`, `edge` and `rows` and an
//! `order_writes` method. Queries use `$n` placeholders, which PostgreSQL and sqlx's SQLite
//! driver both accept; column types differ only in the migrations.

mod audit;
mod catalogue;
mod leases;
mod optouts;
mod permits;
mod rounds;
mod secagg;
mod statistics;
mod studies;
mod webhooks;

use async_trait::async_trait;

use super::{Db, DbTx};
use crate::store::{Result, StoreError, Tx};

/// A result row of the backend.
type DbRow = <Db as sqlx::Database>::Row;

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(what.to_owned())
}

#[async_trait]
impl Tx for DbTx {
    async fn take_write_order(&mut self) -> Result<()> {
        self.order_writes().await
    }

    async fn commit(self: Box<Self>) -> Result<()> {
        let mut this = *self;
        let observed = std::mem::take(&mut this.observed);
        this.commit_transaction().await?;
        observed.emit();
        Ok(())
    }
}
