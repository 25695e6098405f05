//! The gateway's side of a secure-aggregation round kept in its store: the `secagg::Server` of
//! each round attempt, and beside it what the server leaves to its caller (the running sum of
//! the masked inputs, and the ShareKeys and Unmasking messages until their stage closes). The
//! session parameters and the messages are the shared protocol's
//! (`ehds_core::secure_aggregation`).

use secagg::{ClientId, MaskedSum, Server};
use serde::{de::DeserializeOwned, Serialize};

use crate::store::Tx;
use ehds_core::domain::RoundId;

/// The kind under which the relay keeps each holder's accepted ShareKeys message until the
/// stage closes and relays its ciphertexts.
pub const SHARE_KEYS_KEPT: &str = "share_keys";
/// The kind under which the relay keeps each holder's accepted Unmasking answer until the sum
/// is unmasked.
pub const UNMASK_KEPT: &str = "unmask";

/// The relay of round attempt `round`, locked until the transaction ends (messages of several
/// holders and the round loop change it one after the other). The running sum of the masked
/// inputs is not part of it ([`masked_sum`] loads that where it is used), nor are the ShareKeys
/// and Unmasking messages ([`kept`] loads those for their stage's close). A state written
/// before these had tables of their own (migrations 0007 and 0008) still carries them; they
/// move to those tables here, before anything rewrites the state without them.
pub async fn lock_relay(tx: &mut dyn Tx, round: RoundId) -> anyhow::Result<Server> {
    use anyhow::Context;
    let state = tx
        .lock_secagg_session(round)
        .await?
        .context("a round under secure aggregation has no relay state")?;
    let mut server: Server =
        serde_json::from_slice(&state).context("the stored relay state is invalid")?;
    if let Some(carried) = server.take_carried_sum() {
        if tx.secagg_sum(round).await?.is_none() {
            tx.update_secagg_sum(round, &carried.to_bytes(server.config()))
                .await?;
        }
    }
    for m in server.take_carried_share_keys() {
        keep(tx, round, SHARE_KEYS_KEPT, m.from, &m).await?;
    }
    for m in server.take_carried_unmask() {
        keep(tx, round, UNMASK_KEPT, m.from, &m).await?;
    }
    Ok(server)
}

/// Keeps `message`, which the relay of `round` accepted from holder `from`, for its stage's
/// close. Only under [`lock_relay`]'s lock.
pub async fn keep<M: Serialize>(
    tx: &mut dyn Tx,
    round: RoundId,
    kind: &str,
    from: ClientId,
    message: &M,
) -> anyhow::Result<()> {
    tx.insert_secagg_received(round, from.0, kind, &serde_json::to_vec(message)?)
        .await?;
    Ok(())
}

/// The messages of `kind` [`keep`] kept for the round. Only under [`lock_relay`]'s lock.
pub async fn kept<M: DeserializeOwned>(
    tx: &mut dyn Tx,
    round: RoundId,
    kind: &str,
) -> anyhow::Result<Vec<M>> {
    use anyhow::Context;
    tx.secagg_received(round, kind)
        .await?
        .into_iter()
        .map(|(client, bytes)| {
            serde_json::from_slice(&bytes)
                .with_context(|| format!("the stored {kind} message of holder {client} is invalid"))
        })
        .collect()
}

/// The running sum of the masked inputs of the round `server` relays, zero before the first
/// one. Only under [`lock_relay`]'s lock.
pub async fn masked_sum(
    tx: &mut dyn Tx,
    round: RoundId,
    server: &Server,
) -> anyhow::Result<MaskedSum> {
    Ok(match tx.secagg_sum(round).await? {
        Some(bytes) => MaskedSum::from_bytes(server.config(), &bytes)?,
        None => MaskedSum::zero(server.config()),
    })
}
