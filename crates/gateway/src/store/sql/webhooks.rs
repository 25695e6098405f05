//! The webhook endpoints' cursors into the audit trail: the `webhook_cursor` table.

use async_trait::async_trait;

use super::DbTx;
use crate::store::{Result, WebhookTx};

#[async_trait]
impl WebhookTx for DbTx {
    async fn webhook_cursor(&mut self, endpoint: &str) -> Result<Option<i64>> {
        Ok(
            sqlx::query_scalar("select last_seq from webhook_cursor where endpoint = $1")
                .bind(endpoint)
                .fetch_optional(&mut *self.tx)
                .await?,
        )
    }

    async fn advance_webhook_cursor(&mut self, endpoint: &str, seq: i64) -> Result<()> {
        sqlx::query(
            "insert into webhook_cursor (endpoint, last_seq) values ($1, $2) \
             on conflict (endpoint) do update set last_seq = excluded.last_seq \
             where webhook_cursor.last_seq < excluded.last_seq",
        )
        .bind(endpoint)
        .bind(seq)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }
}
