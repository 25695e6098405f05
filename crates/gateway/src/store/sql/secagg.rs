//! Secure aggregation's relay: the `secagg_session`, `secagg_masked_sum`, `secagg_message` and
//! `secagg_received` tables.

use async_trait::async_trait;

use ehds_core::domain::RoundId;

use super::DbTx;
use crate::store::{Result, SecaggTx, StoreError};

#[async_trait]
impl SecaggTx for DbTx {
    async fn insert_secagg_session(&mut self, round: RoundId, state: &[u8]) -> Result<()> {
        sqlx::query("insert into secagg_session (round_id, state, row_version) values ($1, $2, 1)")
            .bind(round.0)
            .bind(state)
            .execute(&mut *self.tx)
            .await?;
        Ok(())
    }

    async fn secagg_session(&mut self, round: RoundId) -> Result<Option<Vec<u8>>> {
        Ok(
            sqlx::query_scalar("select state from secagg_session where round_id = $1")
                .bind(round.0)
                .fetch_optional(&mut *self.tx)
                .await?,
        )
    }

    async fn lock_secagg_session(&mut self, round: RoundId) -> Result<Option<Vec<u8>>> {
        // an update takes the row lock on both backends (SQLite: the writer lock is
        // already held) and returns the state as committed by whoever held it before
        Ok(sqlx::query_scalar(
            "update secagg_session set row_version = row_version + 1 where round_id = $1 \
             returning state",
        )
        .bind(round.0)
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    async fn update_secagg_session(&mut self, round: RoundId, state: &[u8]) -> Result<()> {
        let done = sqlx::query("update secagg_session set state = $2 where round_id = $1")
            .bind(round.0)
            .bind(state)
            .execute(&mut *self.tx)
            .await?;
        if done.rows_affected() == 1 {
            Ok(())
        } else {
            Err(StoreError::Conflict)
        }
    }

    async fn secagg_sum(&mut self, round: RoundId) -> Result<Option<Vec<u8>>> {
        Ok(
            sqlx::query_scalar("select masked_sum from secagg_masked_sum where round_id = $1")
                .bind(round.0)
                .fetch_optional(&mut *self.tx)
                .await?,
        )
    }

    async fn update_secagg_sum(&mut self, round: RoundId, sum: &[u8]) -> Result<()> {
        sqlx::query(
            "insert into secagg_masked_sum (round_id, masked_sum) values ($1, $2) \
             on conflict (round_id) do update set masked_sum = excluded.masked_sum",
        )
        .bind(round.0)
        .bind(sum)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn insert_secagg_messages(
        &mut self,
        round: RoundId,
        kind: &str,
        messages: &[(u32, Vec<u8>)],
    ) -> Result<()> {
        for (client, message) in messages {
            sqlx::query(
                "insert into secagg_message (round_id, client, kind, message) \
                 values ($1, $2, $3, $4)",
            )
            .bind(round.0)
            .bind(i64::from(*client))
            .bind(kind)
            .bind(message.as_slice())
            .execute(&mut *self.tx)
            .await?;
        }
        Ok(())
    }

    async fn secagg_message(
        &mut self,
        round: RoundId,
        client: u32,
        kind: &str,
    ) -> Result<Option<Vec<u8>>> {
        Ok(sqlx::query_scalar(
            "select message from secagg_message where round_id = $1 and client = $2 and kind = $3",
        )
        .bind(round.0)
        .bind(i64::from(client))
        .bind(kind)
        .fetch_optional(&mut *self.tx)
        .await?)
    }

    async fn insert_secagg_received(
        &mut self,
        round: RoundId,
        client: u32,
        kind: &str,
        message: &[u8],
    ) -> Result<()> {
        sqlx::query(
            "insert into secagg_received (round_id, client, kind, message) values ($1, $2, $3, $4) \
             on conflict (round_id, client, kind) do nothing",
        )
        .bind(round.0)
        .bind(i64::from(client))
        .bind(kind)
        .bind(message)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn secagg_received(&mut self, round: RoundId, kind: &str) -> Result<Vec<(u32, Vec<u8>)>> {
        let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(
            "select client, message from secagg_received where round_id = $1 and kind = $2 \
             order by client",
        )
        .bind(round.0)
        .bind(kind)
        .fetch_all(&mut *self.tx)
        .await?;
        rows.into_iter()
            .map(|(client, message)| {
                let client = u32::try_from(client).map_err(|_| {
                    StoreError::Corrupt(format!("secagg_received holds client number {client}"))
                })?;
                Ok((client, message))
            })
            .collect()
    }

    async fn delete_secagg_received(&mut self, round: RoundId, kind: &str) -> Result<()> {
        sqlx::query("delete from secagg_received where round_id = $1 and kind = $2")
            .bind(round.0)
            .bind(kind)
            .execute(&mut *self.tx)
            .await?;
        Ok(())
    }

    async fn delete_secagg(&mut self, round: RoundId) -> Result<()> {
        sqlx::query("delete from secagg_message where round_id = $1")
            .bind(round.0)
            .execute(&mut *self.tx)
            .await?;
        sqlx::query("delete from secagg_received where round_id = $1")
            .bind(round.0)
            .execute(&mut *self.tx)
            .await?;
        sqlx::query("delete from secagg_masked_sum where round_id = $1")
            .bind(round.0)
            .execute(&mut *self.tx)
            .await?;
        sqlx::query("delete from secagg_session where round_id = $1")
            .bind(round.0)
            .execute(&mut *self.tx)
            .await?;
        Ok(())
    }
}
