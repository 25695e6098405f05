//! Secure aggregation as the gateway relays it and the nodes run it (docs/secure-aggregation.md):
//! the session parameters both sides derive from the round, the fixed-point encoding of an
//! update, the stage deadlines, and what travels through `/v1/node/tasks/{id}/secagg`.
//!
//! The protocol itself is the `secagg` crate's: the gateway keeps a `secagg::Server` per round
//! in its store (`ehds_gateway::app::secagg_relay`), each node a `secagg::Client` in memory for
//! the round.

use chrono::{DateTime, Utc};
use secagg::{
    encoding::FixedPoint,
    messages::{
        AdvertiseKeys, KeysBroadcast, MaskedInput, ShareKeys, SharesRelay, UnmaskRequest,
        UnmaskResponse,
    },
    ClientId, Round as Stage, RoundConfig, SessionId,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::{
    study::{DpPlan, Round, SecureAggregation},
    OrgId, RoundId,
};

/// Inputs and sums live in `Z_{2^64}`.
pub const MODULUS_BITS: u32 = 64;
/// Fixed point with 2^-32 resolution: an entry of the summed update is off by at most
/// `n * 2^-33`, far below f32 rounding of the model.
pub const FRACTION_BITS: u32 = 32;
/// Largest magnitude of one entry of a holder's update (its change to the global model); a
/// larger one is refused by the node's encoder, which then drops out of the round. With 64
/// bits and 32 fraction bits, up to 2^20 holders sum without wrapping around.
pub const ENTRY_BOUND: f32 = 1024.0;

/// The encoding of a round with `clients` holders; checked against wrap-around of their sum.
pub fn encoding(clients: u32) -> Result<FixedPoint, secagg::Error> {
    FixedPoint::new(MODULUS_BITS, FRACTION_BITS, ENTRY_BOUND, clients.max(1))
}

/// The ring `Z_{2^bits}` and the length of the vectors a study's holders sum: the update's
/// `model_len` entries in fixed point in `Z_{2^64}`, or, under distributed DP, the plan's
/// padded and rotated entries in its ring.
pub fn ring(dp: &DpPlan, model_len: usize) -> (u32, usize) {
    match &dp.distributed {
        Some(plan) => (plan.params.modulus_bits, plan.padded_dim),
        None => (MODULUS_BITS, model_len),
    }
}

/// The holder's number in the round's session: its position among the round's participants,
/// from 1.
pub fn client_id(round: &Round, holder: &OrgId) -> Option<ClientId> {
    round
        .participants
        .iter()
        .position(|p| p == holder)
        .and_then(|i| u32::try_from(i + 1).ok())
        .map(ClientId)
}

fn digest(label: &str, round: RoundId) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"ehds-gateway/secure-aggregation/");
    h.update(label.as_bytes());
    h.update(round.0.as_bytes());
    h.finalize().into()
}

/// The session of round attempt `round` with `clients` holders and vectors of `vector_len`
/// entries in `Z_{2^modulus_bits}` (see [`ring`]). Session and graph are bound to the attempt's
/// id, so nothing carries over between rounds or attempts. A round that lost holders to a
/// permit amendment uses the largest graph the remaining ones allow.
pub fn session_config(
    plan: SecureAggregation,
    round: RoundId,
    clients: u32,
    (modulus_bits, vector_len): (u32, usize),
) -> Result<RoundConfig, secagg::Error> {
    let complete = clients.saturating_sub(1);
    let mut degree = plan.neighbours.min(complete);
    if degree != complete && degree % 2 == 1 {
        degree -= 1;
    }
    let config = RoundConfig {
        session: SessionId(digest("session", round)),
        clients,
        threshold: plan.threshold,
        degree,
        graph_seed: digest("graph", round),
        vector_len,
        modulus_bits,
    };
    config.validate()?;
    Ok(config)
}

/// The stable name of a protocol stage.
pub fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::AdvertiseKeys => "advertise_keys",
        Stage::ShareKeys => "share_keys",
        Stage::MaskedInputCollection => "masked_input",
        Stage::Unmasking => "unmasking",
        Stage::Finished => "finished",
    }
}

/// When `stage` of `round` closes at the latest (it closes earlier once every holder still in
/// has answered). The nodes train before they advertise their keys, so the first stage gets
/// most of the round's time.
pub fn stage_deadline(round: &Round, stage: Stage) -> DateTime<Utc> {
    let share = match stage {
        Stage::AdvertiseKeys => 0.6,
        Stage::ShareKeys => 0.7,
        Stage::MaskedInputCollection => 0.8,
        Stage::Unmasking | Stage::Finished => 1.0,
    };
    let span = (round.deadline - round.opened_at).num_milliseconds() as f64;
    round.opened_at + chrono::Duration::milliseconds((span * share) as i64)
}

/// The stable code of a protocol refusal: what the relay's endpoint answers a holder's
/// message with, and what a node's log records when it stops its part of a round.
pub fn refusal_code(e: &secagg::Error) -> &'static str {
    use secagg::Error as E;
    match e {
        E::Replayed { .. } => "secagg_message_replayed",
        E::Duplicate { .. } => "secagg_message_duplicate",
        E::WrongSession => "secagg_wrong_session",
        E::WrongRound { .. } => "secagg_wrong_round",
        E::WrongRecipient { .. } => "secagg_wrong_recipient",
        E::UnknownClient(_) => "secagg_unknown_holder",
        E::UnexpectedClient { .. } => "secagg_holder_not_admitted",
        E::NotNeighbour { .. } => "secagg_not_neighbour",
        E::ReusedKey => "secagg_reused_key",
        E::WeakKey(_) => "secagg_weak_key",
        E::Malformed { .. } => "secagg_malformed",
        E::VectorLength { .. } => "secagg_vector_length",
        E::OutOfRing { .. } => "secagg_out_of_ring",
        E::TooFewSurvivors { .. } => "secagg_too_few_survivors",
        E::TooFewShares { .. } => "secagg_too_few_shares",
        E::InconsistentShares { .. } => "secagg_inconsistent_shares",
        E::Decryption { .. } => "secagg_decryption_failed",
        E::BadRelay(_) => "secagg_bad_relay",
        E::InconsistentSurvivors(_) => "secagg_inconsistent_survivors",
        E::Aborted => "secagg_aborted",
        E::Config(_) => "secagg_invalid_config",
        E::Encoding(_) => "secagg_encoding",
        E::Dp(_) => "secagg_distributed_dp",
        E::BadSum(_) => "secagg_stored_sum_invalid",
        E::BadStored(_) => "secagg_stored_messages_invalid",
    }
}

/// The kind under which the relay stores the message a closed stage sends each holder.
pub fn relayed_kind(closed: Stage) -> Option<&'static str> {
    match closed {
        Stage::AdvertiseKeys => Some("keys"),
        Stage::ShareKeys => Some("shares"),
        Stage::MaskedInputCollection => Some("unmask"),
        Stage::Unmasking | Stage::Finished => None,
    }
}

/// A message from the relay to one holder: what the previous stage's close sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Relayed {
    /// After AdvertiseKeys: the keys of the holder's neighbours still in.
    Keys(KeysBroadcast),
    /// After ShareKeys: the share ciphertexts addressed to the holder.
    Shares(SharesRelay),
    /// After MaskedInputCollection: who sent a masked input.
    Unmask(UnmaskRequest),
}

/// A holder's message of one stage, as `POST /v1/node/tasks/{id}/secagg` takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum NodeMessage {
    AdvertiseKeys(AdvertiseKeys),
    ShareKeys(ShareKeys),
    /// The update masked in the session's ring: `masked` is `{"len", "width", "le"}`, the
    /// entries as little-endian words of `width` bytes, base64 (a plain JSON array of
    /// integers is read too).
    MaskedInput(MaskedInput),
    Unmask(UnmaskResponse),
}

impl NodeMessage {
    pub fn stage(&self) -> Stage {
        match self {
            Self::AdvertiseKeys(_) => Stage::AdvertiseKeys,
            Self::ShareKeys(_) => Stage::ShareKeys,
            Self::MaskedInput(_) => Stage::MaskedInputCollection,
            Self::Unmask(_) => Stage::Unmasking,
        }
    }

    pub fn from(&self) -> ClientId {
        match self {
            Self::AdvertiseKeys(m) => m.from,
            Self::ShareKeys(m) => m.from,
            Self::MaskedInput(m) => m.from,
            Self::Unmask(m) => m.from,
        }
    }
}

/// `GET /v1/node/tasks/{id}/secagg`: where the round's secure aggregation stands for the
/// calling holder.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecaggView {
    /// The session's public parameters (`secagg::RoundConfig`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub config: RoundConfig,
    /// The caller's number in the session.
    pub client: u32,
    /// The stage the relay collects now: `advertise_keys`, `share_keys`, `masked_input`,
    /// `unmasking` or `finished`.
    pub stage: String,
    /// When the stage closes at the latest.
    pub stage_deadline: DateTime<Utc>,
    /// Whether the stage still waits for the caller's message.
    pub awaited: bool,
    /// What the last closed stage relayed to the caller; absent when it was not admitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub relayed: Option<Relayed>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(threshold: u32, neighbours: u32) -> SecureAggregation {
        SecureAggregation {
            threshold,
            neighbours,
        }
    }

    #[test]
    fn sessions_are_bound_to_the_round_attempt() {
        let (a, b) = (RoundId::new(), RoundId::new());
        let ca = session_config(plan(2, 3), a, 4, (64, 10)).unwrap();
        let cb = session_config(plan(2, 3), b, 4, (64, 10)).unwrap();
        assert_ne!(ca.session, cb.session);
        assert_ne!(ca.graph_seed, cb.graph_seed);
        assert_eq!(ca, session_config(plan(2, 3), a, 4, (64, 10)).unwrap());
    }

    #[test]
    fn fewer_holders_shrink_the_graph_or_refuse_the_session() {
        // 4 holders planned on the complete graph, one removed: the complete graph of 3
        let c = session_config(plan(2, 3), RoundId::new(), 3, (64, 5)).unwrap();
        assert_eq!(c.degree, 2);
        // a sparse graph never gets an odd degree
        let c = session_config(plan(3, 4), RoundId::new(), 5, (64, 5)).unwrap();
        assert_eq!(c.degree, 4);
        // threshold 3 cannot hold among 3 holders (2 neighbours each)
        assert!(session_config(plan(3, 3), RoundId::new(), 3, (64, 5)).is_err());
    }

    #[test]
    fn the_encoding_round_trips_a_sum_within_its_resolution() {
        let fp = encoding(4).unwrap();
        let xs = [[0.5f32, -1.25, 1000.0], [-0.5, 3.0, -999.0]];
        let mut sum = [0u64; 3];
        for x in &xs {
            for (s, v) in sum.iter_mut().zip(fp.encode(x).unwrap()) {
                *s = s.wrapping_add(v);
            }
        }
        let d = fp.decode(&sum);
        assert!((d[0] - 0.0).abs() < 1e-9 && (d[1] - 1.75).abs() < 1e-9);
        assert!((d[2] - 1.0).abs() < 1e-6, "{d:?}");
        assert!(fp.encode(&[ENTRY_BOUND * 2.0]).is_err());
    }
}
