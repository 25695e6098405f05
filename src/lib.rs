//! ehds-gateway: governance for federated learning under the European Health Data Space
//! regulation (EU) 2025/327.
#![forbid(unsafe_code)]
// `ApiError` carries a whole problem document; it travels only on the cold path of a refused
// request, so boxing it would add an allocation without making any request faster.
#![allow(clippy::result_large_err)]

pub mod app;
pub mod auth;
pub mod authz;
pub mod cli;
pub mod client;
pub mod configuration;
pub mod console;
pub mod demo;
pub mod domain;
pub mod federation;
pub mod fhir;
pub mod http;
pub mod node;
pub mod observability;
pub mod secret;
pub mod startup;
pub mod store;
pub mod telemetry;
pub mod webhooks;
pub mod witness;
