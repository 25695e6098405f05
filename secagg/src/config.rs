//! Public parameters of one secure-aggregation session, known to every node and the server.

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// A node's number in the session, `1..=clients`. Never 0: it is also the node's Shamir
/// evaluation point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientId(pub u32);

impl std::fmt::Display for ClientId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Names one run of the protocol (e.g. a hash of study id and round number). Every key,
/// share encryption and mask is bound to it, so nothing carries over between sessions.
///
/// Serialised as an array of numbers, which nodes of earlier releases read in what the relay
/// sends them; base64 is read too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(#[serde(with = "crate::bytes::array_32")] pub [u8; 32]);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundConfig {
    pub session: SessionId,
    /// Number of nodes invited, `n`; their ids are `1..=n`.
    pub clients: u32,
    /// Shares needed to rebuild a node's secrets, `t`. `2t > degree` so that a server that
    /// tells half the neighbours "dropped" and the other half "survived" still cannot collect
    /// both secrets of one node.
    pub threshold: u32,
    /// Neighbours per node, `k`: `n - 1` is the complete graph of Bonawitz et al.; smaller
    /// even values give the SecAgg+ Harary graph.
    pub degree: u32,
    /// Public randomness that places the nodes on the graph.
    #[serde(with = "crate::bytes::array_32")]
    pub graph_seed: [u8; 32],
    /// Entries per input vector.
    pub vector_len: usize,
    /// Inputs and sums live in `Z_{2^modulus_bits}`, `1..=64`.
    pub modulus_bits: u32,
}

impl RoundConfig {
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        let (n, t, k) = (self.clients, self.threshold, self.degree);
        if n < 3 {
            return bad(format!("{n} clients: at least 3 are needed"));
        }
        if k < 2 || k > n - 1 {
            return bad(format!("degree {k} must lie in 2..={}", n - 1));
        }
        if k != n - 1 && k % 2 == 1 {
            return bad(format!("degree {k}: a sparse graph needs an even degree"));
        }
        if t < 2 || t > k {
            return bad(format!("threshold {t} must lie in 2..={k}"));
        }
        if 2 * t <= k {
            return bad(format!("threshold {t} must exceed half the degree {k}"));
        }
        if self.vector_len == 0 {
            return bad("empty vectors".into());
        }
        if !(1..=64).contains(&self.modulus_bits) {
            return bad(format!(
                "modulus of {} bits: 1..=64 supported",
                self.modulus_bits
            ));
        }
        Ok(())
    }

    /// Bit mask of the ring `Z_{2^b}`.
    pub fn ring_mask(&self) -> u64 {
        if self.modulus_bits == 64 {
            u64::MAX
        } else {
            (1u64 << self.modulus_bits) - 1
        }
    }

    pub fn contains(&self, id: ClientId) -> bool {
        (1..=self.clients).contains(&id.0)
    }
}
