//! The opt-out registry: the `optout_event` table, whose sequence numbers are the registry's
//! versions.

use async_trait::async_trait;
use sqlx::{QueryBuilder, Row};

use ehds_core::domain::{
    optout::{NewOptOutEvent, OptOutEvent, OptOutEventKind, SCOPE_ALL_SECONDARY_USE},
    MemberState, OptOutId,
};

use super::{corrupt, Db, DbRow, DbTx};
use crate::store::{OptOutTx, Result};

#[async_trait]
impl OptOutTx for DbTx {
    async fn append_optout(&mut self, e: NewOptOutEvent) -> Result<OptOutEvent> {
        self.order_writes().await?;
        let row = sqlx::query(
            "insert into optout_event (record_id, subject_key, kind, scope, member_state, \
             effective_at, recorded_at, channel) values ($1, $2, $3, $4, $5, $6, $7, $8) \
             returning *",
        )
        .bind(e.record_id.0)
        .bind(&e.subject_key)
        .bind(e.kind.as_str())
        .bind(SCOPE_ALL_SECONDARY_USE)
        .bind(e.member_state.as_str())
        .bind(e.effective_at)
        .bind(e.recorded_at)
        .bind(&e.channel)
        .fetch_one(&mut *self.tx)
        .await?;
        optout_row(&row)
    }

    async fn optout_record(&mut self, id: OptOutId) -> Result<Vec<OptOutEvent>> {
        let found = sqlx::query("select * from optout_event where record_id = $1 order by seq")
            .bind(id.0)
            .fetch_all(&mut *self.tx)
            .await?;
        found.iter().map(optout_row).collect()
    }

    async fn optout_events_for(
        &mut self,
        subject_keys: &[String],
        max_seq: i64,
    ) -> Result<Vec<OptOutEvent>> {
        let mut out = Vec::new();
        for chunk in subject_keys.chunks(500) {
            let mut q = QueryBuilder::<Db>::new("select * from optout_event where seq <= ");
            q.push_bind(max_seq).push(" and subject_key in (");
            let mut list = q.separated(", ");
            for k in chunk {
                list.push_bind(k.clone());
            }
            q.push(") order by seq");
            let found = q.build().fetch_all(&mut *self.tx).await?;
            for r in &found {
                out.push(optout_row(r)?);
            }
        }
        Ok(out)
    }

    async fn optout_registry_version(&mut self) -> Result<i64> {
        let v: Option<i64> = sqlx::query_scalar("select max(seq) from optout_event")
            .fetch_one(&mut *self.tx)
            .await?;
        Ok(v.unwrap_or(0))
    }

    async fn put_optout_match(&mut self, subject_key: &str, match_value: &str) -> Result<()> {
        self.order_writes().await?;
        sqlx::query(
            "insert into optout_match (subject_key, match_value) values ($1, $2) \
             on conflict (subject_key) do nothing",
        )
        .bind(subject_key)
        .bind(match_value)
        .execute(&mut *self.tx)
        .await?;
        Ok(())
    }

    async fn optout_scope(&mut self, max_seq: i64) -> Result<Vec<(OptOutEvent, Option<String>)>> {
        let found = sqlx::query(
            "select e.*, m.match_value from optout_event e \
             left join optout_match m on m.subject_key = e.subject_key \
             where e.seq <= $1 order by e.seq",
        )
        .bind(max_seq)
        .fetch_all(&mut *self.tx)
        .await?;
        found
            .iter()
            .map(|r| Ok((optout_row(r)?, r.try_get("match_value")?)))
            .collect()
    }
}

fn optout_row(r: &DbRow) -> Result<OptOutEvent> {
    let kind: String = r.try_get("kind")?;
    let state: String = r.try_get("member_state")?;
    Ok(OptOutEvent {
        seq: r.try_get("seq")?,
        record_id: OptOutId(r.try_get("record_id")?),
        subject_key: r.try_get("subject_key")?,
        kind: OptOutEventKind::parse(&kind).ok_or_else(|| corrupt("opt-out kind"))?,
        scope: r.try_get("scope")?,
        member_state: MemberState::parse(&state).map_err(|_| corrupt("member state"))?,
        effective_at: r.try_get("effective_at")?,
        recorded_at: r.try_get("recorded_at")?,
        channel: r.try_get("channel")?,
    })
}
