//! Leases on work one replica does at a time: the `lease` table.

use async_trait::async_trait;

use super::DbTx;
use crate::store::{LeaseTx, Result};
use ehds_core::domain::time::Timestamp;

#[async_trait]
impl LeaseTx for DbTx {
    async fn take_lease(
        &mut self,
        name: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool> {
        // No row comes back when another owner's lease is still running.
        let taken: Option<String> = sqlx::query_scalar(
            "insert into lease (name, owner, expires_at) values ($1, $2, $3) \
             on conflict (name) do update set owner = excluded.owner, expires_at = excluded.expires_at \
             where lease.owner = excluded.owner or lease.expires_at <= $4 \
             returning owner",
        )
        .bind(name)
        .bind(owner)
        .bind(until)
        .bind(now)
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(taken.is_some())
    }

    async fn release_leases(&mut self, owner: &str) -> Result<u64> {
        Ok(sqlx::query("delete from lease where owner = $1")
            .bind(owner)
            .execute(&mut *self.tx)
            .await?
            .rows_affected())
    }
}
