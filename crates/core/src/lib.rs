//! ehds-core: the vocabulary the EHDS gateway and its data holders' node agents share. Domain
//! types parsed once so the regulation's rules hold by construction ([`domain`]: ids, Art. 51
//! categories, Art. 53/54 purposes, permits, studies, the feature specification, the audit
//! entry and its hash), the node wire protocol ([`wire`]), the secure-aggregation session both
//! sides derive from a round ([`secure_aggregation`]), the development-mode token issuer
//! ([`dev_issuer`]), key files ([`key_file`]), log set-up ([`telemetry`]) and the end of a
//! program's run ([`shutdown`]).
//!
//! It depends on no database driver, web framework, policy engine or HTTP client: the gateway
//! (`ehds-gateway`) and the node agent (`ehds-node`) both build on it and never on each other.
#![forbid(unsafe_code)]

pub mod dev_issuer;
pub mod domain;
pub mod key_file;
pub mod oprf;
pub mod secure_aggregation;
pub mod shutdown;
pub mod telemetry;
pub mod wire;
