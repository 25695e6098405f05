//! Secure aggregation of model updates between federated nodes, relayed by a server that
//! only routes what it cannot read, plus the distributed discrete Gaussian mechanism that
//! makes the revealed sum differentially private.
//!
//! * [`client`] and [`server`]: the protocol of Bonawitz et al., "Practical Secure Aggregation
//!   for Privacy-Preserving Machine Learning" (CCS 2017, IACR ePrint 2017/281), honest-but-curious
//!   version (rounds AdvertiseKeys, ShareKeys, MaskedInputCollection, Unmasking), with each node
//!   masking and sharing only with its neighbours on the sparse graph of Bell et al., "Secure
//!   Single-Server Aggregation with (Poly)Logarithmic Overhead" (SecAgg+, CCS 2020, IACR ePrint
//!   2020/704). Both sides are explicit message-passing state machines; every message is serde.
//! * [`encoding`]: fixed-point encoding of `f32` vectors into `Z_{2^b}` with the overflow bound
//!   checked when the encoder is built.
//! * [`ddg`]: the distributed discrete Gaussian mechanism of Kairouz, Liu and Steinke (ICML 2021,
//!   arXiv 2102.06387) with the exact sampler of Canonne, Kamath and Steinke (NeurIPS 2020,
//!   arXiv 2004.00010) and its Rényi-DP accounting.
#![forbid(unsafe_code)]

mod bytes;
pub mod client;
mod config;
mod crypto;
pub mod ddg;
pub mod encoding;
mod error;
mod graph;
pub mod messages;
mod packed;
pub mod server;
mod sum;

pub use client::Client;
pub use config::{ClientId, RoundConfig, SessionId};
pub use crypto::rng_from_os;
pub use error::{Error, Round};
pub use graph::Graph;
pub use server::{Aggregate, Server};
pub use sum::MaskedSum;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod protocol_tests;
