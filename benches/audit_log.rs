//! Audit appends with the verifiable log against the hash chain alone, on SQLite and
//! PostgreSQL in the same run.
//!
//! * `chain + tree`: `append_audit` + commit as the gateway does it now: the chained row
//!   carrying its Merkle leaf and the perfect subtrees it completes (`tree_nodes`), computed
//!   from the tree's right edge the store keeps between transactions;
//! * `chain only`: the append as it was before the tree (head read, sealed row insert, commit),
//!   run with the same SQL on a second database of the same backend.
//!
//! Both append the same entry, one transaction per append, sequentially; the two variants run
//! in alternating blocks so that drift in the machine's load hits both alike. At the end the
//! tree's root is checked against the tree recomputed from the rows.
//!
//! Run: `cargo bench -p ehds-gateway --bench audit_log`
//!
//! Environment (all optional): `EHDS_BENCH_APPENDS` (per variant, default 2000),
//! `EHDS_BENCH_BACKENDS` (`sqlite,postgres`), `TEST_POSTGRES_URL` (administrative URL, default
//! `postgres://postgres@127.0.0.1:5432/postgres`; a database per variant is created and dropped).

use std::time::{Duration, Instant};

use anyhow::Context;
use ehds_core::domain::audit::{
    Actor, AuditAction, AuditEntry, AuditSubject, NewAuditEvent, GENESIS_HASH,
};
use ehds_gateway::{
    app::audit::{recompute_tree, tree_head},
    store::{PgStore, SqliteStore, Store},
};

const BLOCK: usize = 100;

fn event() -> NewAuditEvent {
    NewAuditEvent::success(
        &Actor {
            sub: "node-hosp-1".into(),
            roles: vec!["data_holder".into()],
            organisation: Some("hosp-1".into()),
        },
        AuditAction::Request(ehds_gateway::authz::Action::PermitCheck),
        AuditSubject::Permit(ehds_core::domain::PermitId::new()),
    )
    .detail(serde_json::json!({"allowed": true, "purpose": "scientific_research"}))
}

/// The append as it was before the tree: the same statements `append_audit` ran then.
macro_rules! chain_only_append {
    ($pool:expr, $lock:expr) => {{
        let mut tx = $pool.begin().await?;
        if $lock {
            sqlx::query("select pg_advisory_xact_lock($1)")
                .bind(0x4548_4453_i64)
                .execute(&mut *tx)
                .await?;
        }
        let head: Option<(i64, String)> =
            sqlx::query_as("select seq, hash from audit_event order by seq desc limit 1")
                .fetch_optional(&mut *tx)
                .await?;
        let (seq, prev) = head
            .map(|(s, h)| (s + 1, h))
            .unwrap_or((1, GENESIS_HASH.to_owned()));
        let e = AuditEntry::seal(event(), seq, prev, ehds_core::domain::time::now());
        sqlx::query(
            "insert into audit_event (seq, event_id, recorded_at, actor_sub, actor_roles, actor_organisation, \
             action, outcome, resource_type, resource_id, permit_id, request_id, http_status, detail, \
             prev_hash, hash) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        )
        .bind(e.seq)
        .bind(e.id)
        .bind(e.recorded_at)
        .bind(&e.actor.sub)
        .bind(serde_json::to_string(&e.actor.roles)?)
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
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
    }};
}

async fn tree_append(store: &dyn Store) -> anyhow::Result<()> {
    let mut tx = store.begin().await?;
    tx.append_audit(event()).await?;
    tx.commit().await?;
    Ok(())
}

struct Timings {
    tree: Vec<Duration>,
    chain: Vec<Duration>,
}

impl Timings {
    fn report(&mut self, backend: &str) {
        let stats = |v: &mut Vec<Duration>| {
            v.sort_unstable();
            let total: Duration = v.iter().sum();
            let mean = total.as_secs_f64() * 1e6 / v.len() as f64;
            let p50 = v[v.len() / 2].as_secs_f64() * 1e6;
            let p99 = v[(v.len() * 99 / 100).min(v.len() - 1)].as_secs_f64() * 1e6;
            (mean, p50, p99)
        };
        let (tm, t50, t99) = stats(&mut self.tree);
        let (cm, c50, c99) = stats(&mut self.chain);
        println!(
            "| {backend:<8} | chain only   | {:>6} | {cm:>9.1} | {c50:>9.1} | {c99:>9.1} |",
            self.chain.len()
        );
        println!(
            "| {backend:<8} | chain + tree | {:>6} | {tm:>9.1} | {t50:>9.1} | {t99:>9.1} |",
            self.tree.len()
        );
        println!(
            "| {backend:<8} | ratio tree/chain: mean {:.3}, median {:.3}",
            tm / cm,
            t50 / c50
        );
    }
}

async fn check_tree(store: &dyn Store) -> anyhow::Result<()> {
    let mut tx = store.begin().await?;
    let recomputed = recompute_tree(&mut *tx).await?;
    let (size, root) = tree_head(&mut *tx).await?;
    anyhow::ensure!(
        recomputed.gap_at.is_none()
            && (size, root)
                == (
                    translog::SubtreeHashes::size(&recomputed.tree),
                    recomputed.tree.root()
                ),
        "the stored tree does not match the rows"
    );
    Ok(())
}

async fn bench_sqlite(appends: usize) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = |name: &str| format!("sqlite://{}?mode=rwc", dir.path().join(name).display());
    let tree = SqliteStore::connect(&url("tree.db")).await?;
    let chain = SqliteStore::connect(&url("chain.db")).await?;
    let mut t = Timings {
        tree: vec![],
        chain: vec![],
    };
    // Warm-up.
    for _ in 0..50 {
        tree_append(&tree).await?;
        chain_only_append!(chain.pool(), false);
    }
    while t.tree.len() < appends {
        for _ in 0..BLOCK {
            let s = Instant::now();
            chain_only_append!(chain.pool(), false);
            t.chain.push(s.elapsed());
        }
        for _ in 0..BLOCK {
            let s = Instant::now();
            tree_append(&tree).await?;
            t.tree.push(s.elapsed());
        }
    }
    t.report("sqlite");
    check_tree(&tree).await
}

async fn fresh_postgres(admin: &str) -> anyhow::Result<(String, String)> {
    use sqlx::Executor;
    let name = format!("ehds_bench_{}", uuid::Uuid::new_v4().simple());
    let pool = sqlx::PgPool::connect(admin)
        .await
        .context("PostgreSQL must be running")?;
    pool.execute(sqlx::AssertSqlSafe(format!("create database {name}")))
        .await?;
    pool.close().await;
    let (base, _) = admin.rsplit_once('/').context("database URL has a path")?;
    Ok((format!("{base}/{name}"), name))
}

async fn drop_postgres(admin: &str, name: &str) -> anyhow::Result<()> {
    use sqlx::Executor;
    let pool = sqlx::PgPool::connect(admin).await?;
    pool.execute(sqlx::AssertSqlSafe(format!(
        "drop database if exists {name} with (force)"
    )))
    .await?;
    pool.close().await;
    Ok(())
}

async fn bench_postgres(appends: usize) -> anyhow::Result<()> {
    let admin = std::env::var("TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let (tree_url, tree_name) = fresh_postgres(&admin).await?;
    let (chain_url, chain_name) = fresh_postgres(&admin).await?;
    let result = async {
        let tree = PgStore::connect(&tree_url).await?;
        let chain = PgStore::connect(&chain_url).await?;
        let mut t = Timings {
            tree: vec![],
            chain: vec![],
        };
        for _ in 0..50 {
            tree_append(&tree).await?;
            chain_only_append!(chain.pool(), true);
        }
        while t.tree.len() < appends {
            for _ in 0..BLOCK {
                let s = Instant::now();
                chain_only_append!(chain.pool(), true);
                t.chain.push(s.elapsed());
            }
            for _ in 0..BLOCK {
                let s = Instant::now();
                tree_append(&tree).await?;
                t.tree.push(s.elapsed());
            }
        }
        t.report("postgres");
        check_tree(&tree).await?;
        tree.pool().close().await;
        chain.pool().close().await;
        anyhow::Ok(())
    }
    .await;
    drop_postgres(&admin, &tree_name).await?;
    drop_postgres(&admin, &chain_name).await?;
    result
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let appends: usize = std::env::var("EHDS_BENCH_APPENDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let backends =
        std::env::var("EHDS_BENCH_BACKENDS").unwrap_or_else(|_| "sqlite,postgres".into());
    println!("audit append: chain + Merkle tree against the chain alone");
    println!(
        "  {appends} appends per variant, one transaction each, sequential, alternating blocks of {BLOCK}; {} CPUs visible",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!();
    println!("| backend  | variant      | n      | mean (µs) | p50 (µs)  | p99 (µs)  |");
    println!("|----------|--------------|--------|-----------|-----------|-----------|");
    for backend in backends.split(',') {
        match backend.trim() {
            "sqlite" => bench_sqlite(appends).await?,
            "postgres" => bench_postgres(appends).await?,
            other => anyhow::bail!("unknown backend {other}"),
        }
    }
    Ok(())
}
