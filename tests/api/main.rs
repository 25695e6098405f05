//! Black-box API tests: each test spawns the gateway on a random port with a fresh database and
//! speaks HTTP to it. Tests written with `both_backends!` run on SQLite and on PostgreSQL.

mod helpers;

mod audit;
mod auth;
mod catalogue;
mod console;
mod dp_requirement;
mod legacy_db;
mod lifecycle;
mod metrics;
mod openapi;
mod optouts;
mod procedure;
mod roles;
mod secure_aggregation;
mod security;
mod statistics;
mod studies;
mod validation;
mod verifiable_log;
mod webhooks;
