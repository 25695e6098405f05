//! ehds-gateway: the Health Data Access Body's service for federated learning under the European
//! Health Data Space regulation (EU) 2025/327: applications and permits, the opt-out registry,
//! the audit trail, and the round loop that drives federated studies through governance. The
//! vocabulary it shares with the data holders' node agents is `ehds_core`'s.
#![forbid(unsafe_code)]
// `ApiError` carries a whole problem document; it travels only on the cold path of a refused
// request, so boxing it would add an allocation without making any request faster.
#![allow(clippy::result_large_err)]

pub mod app;
pub mod auth;
pub mod authz;
pub mod cli;
pub mod configuration;
pub mod console;
pub mod federation;
pub mod fhir;
pub mod http;
pub mod observability;
pub mod provenance;
pub mod secret;
pub mod startup;
pub mod store;
pub mod webhooks;
pub mod witness;
