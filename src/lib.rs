//! ehds-gateway: governance for federated learning under the European Health Data Space
//! regulation (EU) 2025/327.
#![forbid(unsafe_code)]

pub mod auth;
pub mod authz;
pub mod cli;
pub mod configuration;
pub mod domain;
pub mod http;
pub mod startup;
pub mod store;
pub mod telemetry;
