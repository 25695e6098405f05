//! The audit trail: the `audit_event` table, each row an entry of the hash chain that also
//! holds the Merkle-tree hashes its leaf completes (`store::tree`).

use std::collections::HashMap;

use async_trait::async_trait;
use sqlx::{QueryBuilder, Row};
use translog::Hash;

use ehds_core::domain::{
    audit::{Actor, AuditEntry, NewAuditEvent, Outcome, GENESIS_HASH},
    time,
};

use super::{Db, DbRow, DbTx};
use crate::store::{tree, AuditFilter, AuditSpan, AuditTx, Result, StoreError, StoredForm};

#[async_trait]
impl AuditTx for DbTx {
    async fn append_audit(&mut self, event: NewAuditEvent) -> Result<AuditEntry> {
        self.order_writes().await?;
        let head: Option<(i64, String)> =
            sqlx::query_as("select seq, hash from audit_event order by seq desc limit 1")
                .fetch_optional(&mut *self.tx)
                .await?;
        let (seq, prev) = head
            .map(|(s, h)| (s + 1, h))
            .unwrap_or((1, GENESIS_HASH.to_owned()));
        // The tree's right edge after the head just read: kept from the last append
        // when that is the head, read from the rows otherwise.
        let mut edge = match self.edge.after(seq - 1, &prev) {
            Some(edge) => edge,
            None => {
                let size = u64::try_from(seq - 1)
                    .map_err(|_| StoreError::Corrupt("audit sequence below 1".into()))?;
                tree::load_edge(&mut *self, size).await?
            }
        };
        let (e, canonical) = AuditEntry::seal_canonical(event, seq, prev, time::now());
        // The same entry as a Merkle leaf, with the subtrees it completes, in its row.
        let nodes = edge.append(translog::hash_leaf(&canonical));
        sqlx::query(
            "insert into audit_event (seq, event_id, recorded_at, actor_sub, actor_roles, \
             actor_organisation, action, outcome, resource_type, resource_id, permit_id, \
             request_id, http_status, detail, prev_hash, hash, tree_nodes) \
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
        )
        .bind(e.seq)
        .bind(e.id)
        .bind(e.recorded_at)
        .bind(&e.actor.sub)
        .bind(serde_json::to_string(&e.actor.roles).map_err(anyhow::Error::from)?)
        .bind(&e.actor.organisation)
        .bind(&e.action)
        .bind(e.outcome.as_str())
        .bind(&e.resource_type)
        .bind(&e.resource_id)
        .bind(&e.permit_id)
        .bind(&e.request_id)
        .bind(e.http_status.map(i32::from))
        .bind(e.detail.to_string())
        .bind(&e.prev_hash)
        .bind(&e.hash)
        .bind(tree::encode_nodes(&nodes))
        .execute(&mut *self.tx)
        .await?;
        self.edge.keep(e.seq, &e.hash, edge);
        self.observed.audit_appended();
        Ok(e)
    }

    async fn list_audit(&mut self, f: &AuditFilter) -> Result<Vec<AuditEntry>> {
        // every column but the tree's hashes, which a listing never shows
        let mut q = QueryBuilder::<Db>::new(
            "select seq, event_id, recorded_at, actor_sub, actor_roles, actor_organisation, \
             action, outcome, resource_type, resource_id, permit_id, request_id, \
             http_status, detail, prev_hash, hash from audit_event where 1 = 1",
        );
        audit_conditions(&mut q, f);
        q.push(" order by seq limit ").push_bind(f.limit);
        let found = q.build().fetch_all(&mut *self.tx).await?;
        found.iter().map(audit_row).collect()
    }

    async fn audit_span(&mut self, f: &AuditFilter) -> Result<AuditSpan> {
        let mut q = QueryBuilder::<Db>::new(
            "select count(*), min(seq), max(seq) from (select seq from audit_event where 1 = 1",
        );
        audit_conditions(&mut q, f);
        q.push(" order by seq limit ").push_bind(f.limit);
        q.push(") matched");
        let (count, first_seq, last_seq): (i64, Option<i64>, Option<i64>) =
            q.build_query_as().fetch_one(&mut *self.tx).await?;
        Ok(AuditSpan {
            count: count.max(0) as u64,
            first_seq,
            last_seq,
        })
    }

    async fn audit_tree_size(&mut self) -> Result<u64> {
        // the rows with tree hashes are a prefix of the trail (`fill_audit_tree_nodes`)
        let last: Option<i64> = sqlx::query_scalar(
            "select seq from audit_event where tree_nodes is not null order by seq desc limit 1",
        )
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(last.map_or(0, |s| s as u64))
    }

    async fn audit_subtrees(&mut self, wanted: &[(u32, u64)]) -> Result<Vec<(u32, u64, Hash)>> {
        let holders = wanted
            .iter()
            .map(|(level, index)| tree::holding_seq(*level, *index))
            .collect::<Result<Vec<i64>>>()?;
        let mut seqs = holders.clone();
        seqs.sort_unstable();
        seqs.dedup();
        let mut rows = HashMap::with_capacity(seqs.len());
        // Bounded statements: a proof asks for O(log² n) subtrees.
        for chunk in seqs.chunks(200) {
            let mut q = QueryBuilder::<Db>::new(
                "select seq, tree_nodes from audit_event where tree_nodes is not null and seq in (",
            );
            let mut list = q.separated(", ");
            for seq in chunk {
                list.push_bind(*seq);
            }
            q.push(")");
            for r in q.build().fetch_all(&mut *self.tx).await? {
                let seq: i64 = r.try_get("seq")?;
                let nodes: Vec<u8> = r.try_get("tree_nodes")?;
                rows.insert(seq, nodes);
            }
        }
        let mut found = Vec::with_capacity(wanted.len());
        for ((level, index), seq) in wanted.iter().zip(holders) {
            if let Some(nodes) = rows.get(&seq) {
                let hash = tree::node_in_row(seq, nodes, *level)?;
                found.push((*level, *index, hash));
            }
        }
        Ok(found)
    }

    async fn fill_audit_tree_nodes(&mut self, seq: i64, nodes: &[Hash]) -> Result<()> {
        self.order_writes().await?;
        let filled = sqlx::query(
            "update audit_event set tree_nodes = $1 where seq = $2 and tree_nodes is null",
        )
        .bind(tree::encode_nodes(nodes))
        .bind(seq)
        .execute(&mut *self.tx)
        .await?;
        if filled.rows_affected() != 1 {
            return Err(StoreError::Corrupt(format!(
                "audit entry {seq} is missing or already has its tree hashes"
            )));
        }
        Ok(())
    }
}

/// The `AuditFilter`'s conditions, each appended as ` and …` to a `where` clause.
fn audit_conditions(q: &mut QueryBuilder<Db>, f: &AuditFilter) {
    if let Some(v) = f.from {
        q.push(" and recorded_at >= ").push_bind(v);
    }
    if let Some(v) = f.to {
        q.push(" and recorded_at < ").push_bind(v);
    }
    if let Some(v) = &f.actor {
        q.push(" and actor_sub = ").push_bind(v.clone());
    }
    if let Some(v) = &f.action {
        q.push(" and action = ").push_bind(v.clone());
    }
    if let Some(v) = f.outcome {
        q.push(" and outcome = ").push_bind(v.as_str());
    }
    if let Some(v) = &f.resource_type {
        q.push(" and resource_type = ").push_bind(v.clone());
    }
    if let Some(v) = &f.resource_id {
        q.push(" and resource_id = ").push_bind(v.clone());
    }
    if let Some(v) = &f.permit_id {
        q.push(" and permit_id = ").push_bind(v.clone());
    }
    if let Some(v) = f.after_seq {
        q.push(" and seq > ").push_bind(v);
    }
    if let Some(v) = f.until_seq {
        q.push(" and seq <= ").push_bind(v);
    }
}

/// Decodes an audit row as stored, without judging it: verification is the chain's job,
/// so even a tampered row must decode.
fn audit_row(r: &DbRow) -> Result<AuditEntry> {
    let roles: String = r.try_get("actor_roles")?;
    let outcome: String = r.try_get("outcome")?;
    let detail: String = r.try_get("detail")?;
    let status: Option<i32> = r.try_get("http_status")?;
    Ok(AuditEntry {
        seq: r.try_get("seq")?,
        id: r.try_get("event_id")?,
        recorded_at: r.try_get("recorded_at")?,
        timestamp_stored_canonically: r.recorded_at_canonical()?,
        actor: Actor {
            sub: r.try_get("actor_sub")?,
            roles: serde_json::from_str(&roles).unwrap_or_else(|_| vec![roles.clone()]),
            organisation: r.try_get("actor_organisation")?,
        },
        action: r.try_get("action")?,
        outcome: Outcome::parse(&outcome).unwrap_or(Outcome::Failure),
        resource_type: r.try_get("resource_type")?,
        resource_id: r.try_get("resource_id")?,
        permit_id: r.try_get("permit_id")?,
        request_id: r.try_get("request_id")?,
        http_status: status.and_then(|s| u16::try_from(s).ok()),
        detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::String(detail)),
        prev_hash: r.try_get("prev_hash")?,
        hash: r.try_get("hash")?,
    })
}
