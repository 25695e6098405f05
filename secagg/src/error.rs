//! Typed refusals. A message refused with one of the "routing" errors (wrong session, wrong
//! round, replay, duplicate, unknown or unexpected sender) changes no state: the caller may
//! drop it and carry on. The others abort the round on the side that raised them.

use serde::{Deserialize, Serialize};

use crate::config::ClientId;

/// The protocol's rounds, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Round {
    AdvertiseKeys,
    ShareKeys,
    MaskedInputCollection,
    Unmasking,
    Finished,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("message belongs to another session")]
    WrongSession,
    #[error("message for round {got:?} arrived during round {expected:?}")]
    WrongRound { expected: Round, got: Round },
    #[error("message addressed to client {got}, this is client {expected}")]
    WrongRecipient { expected: ClientId, got: ClientId },
    #[error("client {0} is not part of this session")]
    UnknownClient(ClientId),
    #[error("client {client} may not send in round {round:?} (dropped earlier or never admitted)")]
    UnexpectedClient { client: ClientId, round: Round },
    #[error("client {from} is not a neighbour of client {to} on the aggregation graph")]
    NotNeighbour { from: ClientId, to: ClientId },
    #[error("client {client} sent round {round:?} twice")]
    Replayed { client: ClientId, round: Round },
    #[error("client {client} sent two different messages for round {round:?}")]
    Duplicate { client: ClientId, round: Round },
    #[error("the message from client {client} for round {round:?} is malformed: {reason}")]
    Malformed {
        client: ClientId,
        round: Round,
        reason: String,
    },
    #[error("round {round:?} has {have} participants, {need} needed")]
    TooFewSurvivors {
        round: Round,
        have: usize,
        need: usize,
    },
    #[error("{have} shares of client {owner}'s secret arrived, {need} needed")]
    TooFewShares {
        owner: ClientId,
        have: usize,
        need: usize,
    },
    #[error("the shares of client {owner}'s secret do not lie on one polynomial")]
    InconsistentShares { owner: ClientId },
    #[error("the share from client {from} does not decrypt: tampered, misrouted or replayed")]
    Decryption { from: ClientId },
    #[error("two clients advertised the same public key")]
    ReusedKey,
    #[error("client {0} advertised a key that yields no shared secret")]
    WeakKey(ClientId),
    #[error("the relayed message is inconsistent: {0}")]
    BadRelay(String),
    #[error("the server's survivor list is inconsistent: {0}")]
    InconsistentSurvivors(String),
    #[error("vector has {got} entries, {expected} expected")]
    VectorLength { expected: usize, got: usize },
    #[error("entry {index} lies outside the ring Z_2^{bits}")]
    OutOfRing { index: usize, bits: u32 },
    #[error("the stored sum of masked inputs does not fit the session: {0}")]
    BadSum(String),
    /// The messages a relay kept for a closing stage are not the ones the server accepted.
    #[error("the stored messages do not match the relay's state: {0}")]
    BadStored(String),
    #[error("this client aborted the round earlier")]
    Aborted,
    #[error("encoding: {0}")]
    Encoding(String),
    #[error("differential privacy: {0}")]
    Dp(String),
}

impl Error {
    /// True for refusals that leave the state untouched (the message can simply be dropped).
    pub fn is_routing(&self) -> bool {
        matches!(
            self,
            Error::WrongSession
                | Error::WrongRound { .. }
                | Error::WrongRecipient { .. }
                | Error::UnknownClient(_)
                | Error::UnexpectedClient { .. }
                | Error::Replayed { .. }
                | Error::Duplicate { .. }
        )
    }
}
