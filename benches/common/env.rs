//! The machine and the database around a bench run: the load average, and a fresh PostgreSQL
//! database per run on the server `TEST_POSTGRES_URL` names (the tests' default otherwise).

use std::time::Duration;

use anyhow::Context;

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unavailable".into())
}

pub fn postgres_admin_url() -> String {
    std::env::var("TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

async fn admin_pool() -> anyhow::Result<sqlx::PgPool> {
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(5))
        .connect(&postgres_admin_url())
        .await
        .context("cannot reach PostgreSQL (set TEST_POSTGRES_URL)")
}

pub async fn create_postgres_database() -> anyhow::Result<(String, String)> {
    use sqlx::Executor;
    let admin = postgres_admin_url();
    let name = format!("ehds_bench_{}", uuid::Uuid::new_v4().simple());
    let pool = admin_pool().await?;
    pool.execute(sqlx::AssertSqlSafe(format!("create database {name}")))
        .await?;
    pool.close().await;
    let (base, _) = admin
        .rsplit_once('/')
        .context("PostgreSQL URL has no database path")?;
    Ok((format!("{base}/{name}"), name))
}

pub async fn drop_postgres_database(name: &str) -> anyhow::Result<()> {
    use sqlx::Executor;
    let pool = admin_pool().await?;
    pool.execute(sqlx::AssertSqlSafe(format!(
        "drop database if exists {name} with (force)"
    )))
    .await?;
    pool.close().await;
    Ok(())
}
