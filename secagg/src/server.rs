//! The relaying server's side: collects each round's messages, decides who is still in,
//! routes ciphertexts it cannot read, and in the end removes the masks of the sum.
//!
//! Its whole state is serde, so a gateway can keep it in its store between requests. That
//! state holds public keys, who is in at each stage, each node's mask partners and a
//! fingerprint of every accepted message — never an individual input, and nothing that grows
//! faster than the nodes times their neighbours' ids. What is larger is kept by the caller and
//! handed to the one call that uses it, so that the small state every message and poll reads
//! stays small:
//!
//! * the running sum of the masked inputs, the only part as large as the model: a
//!   [`MaskedSum`] for [`Server::receive_masked_input`] and [`Server::finish`];
//! * the ShareKeys messages, every node's share ciphertexts for its neighbours (nodes ×
//!   neighbours of them), which [`Server::receive_share_keys`] checks and the caller stores
//!   until [`Server::close_share_keys`] relays them;
//! * the Unmasking answers, the shares each survivor reveals (nodes × neighbours again), which
//!   [`Server::receive_unmask`] checks and the caller stores until [`Server::finish`].
//!
//! The fingerprints in the state let the two closing calls refuse stored messages that are not
//! the ones accepted ([`Error::BadStored`]).
//!
//! `receive_*` refusals change nothing. `close_*` with too few participants also changes
//! nothing: the caller may wait for stragglers or abandon the session.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::config::{ClientId, RoundConfig, SessionId};
use crate::crypto::{self, Bytes32, SHARE_PLAINTEXT_LEN};
use crate::error::{Error, Round};
use crate::graph::Graph;
use crate::messages::{
    AdvertiseKeys, EncryptedShare, Fingerprint, KeysBroadcast, MaskedInput, PeerKeys, ShareKeys,
    SharesRelay, UnmaskRequest, UnmaskResponse,
};
use crate::sum::MaskedSum;

/// ChaCha20-Poly1305 appends a 16-byte tag.
const SHARE_CIPHERTEXT_LEN: usize = SHARE_PLAINTEXT_LEN + 16;

/// The unmasked sum and who is in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aggregate {
    /// Sum of the contributors' inputs in `Z_{2^b}`.
    pub sum: Vec<u64>,
    pub contributors: Vec<ClientId>,
}

/// A node's two public keys, as the server keeps them (an [`AdvertiseKeys`] without the
/// session and sender, which the state holds already; that message's form is read too).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PublicKeys {
    #[serde(with = "crate::bytes::b64_32")]
    cipher_pk: Bytes32,
    #[serde(with = "crate::bytes::b64_32")]
    mask_pk: Bytes32,
}

/// A message's [`Fingerprint`], base64 in the serialised state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
struct Print(#[serde(with = "crate::bytes::b64_32")] Bytes32);

#[derive(Debug, Serialize, Deserialize)]
pub struct Server {
    config: RoundConfig,
    round: Round,
    #[serde(skip)]
    graph: OnceLock<Graph>,
    /// Round AdvertiseKeys: the public keys received.
    keys: BTreeMap<ClientId, PublicKeys>,
    /// Admitted to ShareKeys (`U1`).
    u1: BTreeSet<ClientId>,
    /// The ShareKeys messages accepted so far, in state serialised while the server still
    /// kept them itself: read once, handed over by [`Server::take_carried_share_keys`]; never
    /// written.
    #[serde(
        default,
        rename = "pending_shares",
        skip_serializing,
        deserialize_with = "carried"
    )]
    carried_share_keys: BTreeMap<ClientId, ShareKeys>,
    /// Admitted to MaskedInputCollection (`U2`).
    u2: BTreeSet<ClientId>,
    /// For each node of `U2`, the nodes whose shares it was sent: its mask partners.
    partners: BTreeMap<ClientId, BTreeSet<ClientId>>,
    /// The running sum as state serialised before it was kept apart carried it: read once,
    /// then handed over by [`Server::take_carried_sum`]; never written.
    #[serde(
        default,
        rename = "masked_sum",
        skip_serializing,
        deserialize_with = "carried_sum"
    )]
    carried_sum: Option<Vec<u64>>,
    /// Sent a masked input (`U3`).
    u3: BTreeSet<ClientId>,
    /// The Unmasking answers accepted so far, in state serialised while the server still kept
    /// them itself: read once, handed over by [`Server::take_carried_unmask`]; never written.
    #[serde(
        default,
        rename = "responses",
        skip_serializing,
        deserialize_with = "carried"
    )]
    carried_unmask: BTreeMap<ClientId, UnmaskResponse>,
    /// Fingerprint of each accepted message, to tell replays from conflicting messages and
    /// the messages the caller stores from others.
    seen: BTreeMap<Round, BTreeMap<ClientId, Print>>,
}

impl Server {
    pub fn new(config: RoundConfig) -> Result<Self, Error> {
        config.validate()?;
        Ok(Self {
            carried_sum: None,
            config,
            round: Round::AdvertiseKeys,
            graph: OnceLock::new(),
            keys: BTreeMap::new(),
            u1: BTreeSet::new(),
            carried_share_keys: BTreeMap::new(),
            u2: BTreeSet::new(),
            partners: BTreeMap::new(),
            u3: BTreeSet::new(),
            carried_unmask: BTreeMap::new(),
            seen: BTreeMap::new(),
        })
    }

    pub fn config(&self) -> &RoundConfig {
        &self.config
    }

    pub fn round(&self) -> Round {
        self.round
    }

    /// The nodes the current round still waits for: admitted to it and not yet heard from.
    /// Empty once the session finished. A relay closes a round early when this is empty.
    pub fn awaiting(&self) -> BTreeSet<ClientId> {
        let admitted: BTreeSet<ClientId> = match self.round {
            Round::AdvertiseKeys => (1..=self.config.clients).map(ClientId).collect(),
            Round::ShareKeys => self.u1.clone(),
            Round::MaskedInputCollection => self.u2.clone(),
            Round::Unmasking => self.u3.clone(),
            Round::Finished => BTreeSet::new(),
        };
        let heard = self.seen.get(&self.round);
        admitted
            .into_iter()
            .filter(|c| heard.is_none_or(|h| !h.contains_key(c)))
            .collect()
    }

    fn graph(&self) -> &Graph {
        self.graph.get_or_init(|| Graph::new(&self.config))
    }

    /// Session, replay, round, membership and duplicate checks shared by every `receive_*`.
    fn admit(
        &self,
        round: Round,
        session: SessionId,
        from: ClientId,
        fp: &Bytes32,
        allowed: Option<&BTreeSet<ClientId>>,
    ) -> Result<(), Error> {
        if session != self.config.session {
            return Err(Error::WrongSession);
        }
        if let Some(Print(prev)) = self.seen.get(&round).and_then(|m| m.get(&from)) {
            return Err(if prev == fp {
                Error::Replayed {
                    client: from,
                    round,
                }
            } else {
                Error::Duplicate {
                    client: from,
                    round,
                }
            });
        }
        if self.round != round {
            return Err(Error::WrongRound {
                expected: self.round,
                got: round,
            });
        }
        if !self.config.contains(from) {
            return Err(Error::UnknownClient(from));
        }
        if allowed.is_some_and(|set| !set.contains(&from)) {
            return Err(Error::UnexpectedClient {
                client: from,
                round,
            });
        }
        Ok(())
    }

    fn record(&mut self, round: Round, from: ClientId, fp: Bytes32) {
        self.seen.entry(round).or_default().insert(from, Print(fp));
    }

    /// The messages of `round` the caller stored, by sender, if they are exactly the ones
    /// this server accepted: one per sender it heard from, each with the fingerprint recorded.
    fn stored<M: Fingerprint>(
        &self,
        round: Round,
        stored: impl IntoIterator<Item = M>,
        from: impl Fn(&M) -> ClientId,
    ) -> Result<BTreeMap<ClientId, M>, Error> {
        let accepted = self.seen.get(&round);
        let mut out = BTreeMap::new();
        for msg in stored {
            let sender = from(&msg);
            match accepted.and_then(|a| a.get(&sender)) {
                Some(Print(fp)) if *fp == msg.fingerprint() => {}
                Some(_) => {
                    return Err(Error::BadStored(format!(
                        "the stored {round:?} message of client {sender} is not the one accepted"
                    )))
                }
                None => {
                    return Err(Error::BadStored(format!(
                        "a {round:?} message of client {sender} is stored, none was accepted"
                    )))
                }
            }
            if out.insert(sender, msg).is_some() {
                return Err(Error::BadStored(format!(
                    "two {round:?} messages of client {sender} are stored"
                )));
            }
        }
        if let Some(missing) = accepted
            .into_iter()
            .flat_map(BTreeMap::keys)
            .find(|c| !out.contains_key(c))
        {
            return Err(Error::BadStored(format!(
                "the {round:?} message accepted from client {missing} is not stored"
            )));
        }
        Ok(out)
    }

    pub fn receive_advertise(&mut self, msg: AdvertiseKeys) -> Result<(), Error> {
        let fp = msg.fingerprint();
        self.admit(Round::AdvertiseKeys, msg.session, msg.from, &fp, None)?;
        if msg.cipher_pk == msg.mask_pk
            || self.keys.values().any(|k| {
                [k.cipher_pk, k.mask_pk]
                    .iter()
                    .any(|pk| *pk == msg.cipher_pk || *pk == msg.mask_pk)
            })
        {
            return Err(Error::ReusedKey);
        }
        self.record(Round::AdvertiseKeys, msg.from, fp);
        self.keys.insert(
            msg.from,
            PublicKeys {
                cipher_pk: msg.cipher_pk,
                mask_pk: msg.mask_pk,
            },
        );
        Ok(())
    }

    /// Keeps the nodes with at least `t` neighbours among the kept ones: a node with fewer
    /// could not have its secrets rebuilt if it dropped.
    fn prune(&self, mut alive: BTreeSet<ClientId>) -> BTreeSet<ClientId> {
        let t = self.config.threshold as usize;
        loop {
            let weak: Vec<ClientId> = alive
                .iter()
                .copied()
                .filter(|u| self.graph().neighbours(*u).intersection(&alive).count() < t)
                .collect();
            if weak.is_empty() {
                return alive;
            }
            for u in weak {
                alive.remove(&u);
            }
        }
    }

    fn enough(&self, round: Round, have: usize) -> Result<(), Error> {
        let need = self.config.threshold as usize;
        if have < need {
            return Err(Error::TooFewSurvivors { round, have, need });
        }
        Ok(())
    }

    /// Ends AdvertiseKeys: each admitted node gets its neighbours' keys.
    pub fn close_advertise(&mut self) -> Result<Vec<KeysBroadcast>, Error> {
        self.at(Round::AdvertiseKeys)?;
        let alive = self.prune(self.keys.keys().copied().collect());
        self.enough(Round::AdvertiseKeys, alive.len())?;
        let out = alive
            .iter()
            .map(|u| KeysBroadcast {
                session: self.config.session,
                to: *u,
                peers: self
                    .graph()
                    .neighbours(*u)
                    .intersection(&alive)
                    .map(|v| {
                        let k = &self.keys[v];
                        PeerKeys {
                            id: *v,
                            cipher_pk: k.cipher_pk,
                            mask_pk: k.mask_pk,
                        }
                    })
                    .collect(),
            })
            .collect();
        self.u1 = alive;
        self.round = Round::ShareKeys;
        Ok(out)
    }

    /// Checks a node's share ciphertexts and records that it sent them. The caller keeps the
    /// accepted message until [`Self::close_share_keys`].
    pub fn receive_share_keys(&mut self, msg: &ShareKeys) -> Result<(), Error> {
        let fp = msg.fingerprint();
        self.admit(Round::ShareKeys, msg.session, msg.from, &fp, Some(&self.u1))?;
        let expected: BTreeSet<ClientId> = self
            .graph()
            .neighbours(msg.from)
            .intersection(&self.u1)
            .copied()
            .collect();
        let got: BTreeSet<ClientId> = msg.shares.iter().map(|s| s.peer).collect();
        let malformed = |reason: &str| Error::Malformed {
            client: msg.from,
            round: Round::ShareKeys,
            reason: reason.to_owned(),
        };
        if got.len() != msg.shares.len() {
            return Err(malformed("two shares for one recipient"));
        }
        if let Some(&to) = got
            .iter()
            .find(|p| !self.config.contains(**p) || !self.graph().are_neighbours(msg.from, **p))
        {
            return Err(Error::NotNeighbour { from: msg.from, to });
        }
        if got != expected {
            return Err(malformed(
                "the recipients are not the node's neighbours that advertised keys",
            ));
        }
        if msg
            .shares
            .iter()
            .any(|s| s.ciphertext.len() != SHARE_CIPHERTEXT_LEN)
        {
            return Err(malformed("ciphertext of the wrong length"));
        }
        self.record(Round::ShareKeys, msg.from, fp);
        Ok(())
    }

    /// Ends ShareKeys: relays each ciphertext of `accepted`, the messages
    /// [`Self::receive_share_keys`] accepted (in any order), to its recipient. The caller may
    /// forget them afterwards.
    pub fn close_share_keys(
        &mut self,
        accepted: impl IntoIterator<Item = ShareKeys>,
    ) -> Result<Vec<SharesRelay>, Error> {
        self.at(Round::ShareKeys)?;
        let pending = self.stored(Round::ShareKeys, accepted, |m| m.from)?;
        let alive = self.prune(pending.keys().copied().collect());
        self.enough(Round::ShareKeys, alive.len())?;
        let mut inbox: BTreeMap<ClientId, Vec<EncryptedShare>> = BTreeMap::new();
        for (from, msg) in pending {
            if !alive.contains(&from) {
                continue;
            }
            for s in msg.shares {
                if alive.contains(&s.peer) {
                    inbox.entry(s.peer).or_default().push(EncryptedShare {
                        peer: from,
                        ciphertext: s.ciphertext,
                    });
                }
            }
        }
        let out = alive
            .iter()
            .map(|v| {
                let shares = inbox.remove(v).unwrap_or_default();
                self.partners
                    .insert(*v, shares.iter().map(|s| s.peer).collect());
                SharesRelay {
                    session: self.config.session,
                    to: *v,
                    shares,
                }
            })
            .collect();
        self.u2 = alive;
        self.round = Round::MaskedInputCollection;
        Ok(out)
    }

    /// State serialised before the sum was kept apart holds the running sum itself: this
    /// hands it over, once, as the session's [`MaskedSum`].
    pub fn take_carried_sum(&mut self) -> Option<MaskedSum> {
        self.carried_sum.take().map(MaskedSum::from_words)
    }

    /// State serialised before the caller kept the ShareKeys messages holds those accepted so
    /// far: this hands them over, once, for the caller to keep with the ones still to come.
    pub fn take_carried_share_keys(&mut self) -> Vec<ShareKeys> {
        std::mem::take(&mut self.carried_share_keys)
            .into_values()
            .collect()
    }

    /// State serialised before the caller kept the Unmasking answers holds those accepted so
    /// far: this hands them over, once, for the caller to keep with the ones still to come.
    pub fn take_carried_unmask(&mut self) -> Vec<UnmaskResponse> {
        std::mem::take(&mut self.carried_unmask)
            .into_values()
            .collect()
    }

    /// Adds the masked input to `sum`, the session's running sum, which the caller keeps.
    pub fn receive_masked_input(
        &mut self,
        msg: &MaskedInput,
        sum: &mut MaskedSum,
    ) -> Result<(), Error> {
        let fp = msg.fingerprint();
        self.admit(
            Round::MaskedInputCollection,
            msg.session,
            msg.from,
            &fp,
            Some(&self.u2),
        )?;
        if msg.masked.len() != self.config.vector_len {
            return Err(Error::VectorLength {
                expected: self.config.vector_len,
                got: msg.masked.len(),
            });
        }
        let ring = self.config.ring_mask();
        if let Some(index) = msg.masked.iter().position(|&v| v & !ring != 0) {
            return Err(Error::OutOfRing {
                index,
                bits: self.config.modulus_bits,
            });
        }
        self.check_sum(sum)?;
        sum.add(&msg.masked, ring);
        self.record(Round::MaskedInputCollection, msg.from, fp);
        self.u3.insert(msg.from);
        Ok(())
    }

    /// Ends MaskedInputCollection: asks every node that sent an input to help unmask.
    pub fn close_masked_input(&mut self) -> Result<Vec<UnmaskRequest>, Error> {
        self.at(Round::MaskedInputCollection)?;
        self.enough(Round::MaskedInputCollection, self.u3.len())?;
        let survivors: Vec<ClientId> = self.u3.iter().copied().collect();
        self.round = Round::Unmasking;
        Ok(self
            .u3
            .iter()
            .map(|u| UnmaskRequest {
                session: self.config.session,
                to: *u,
                survivors: survivors.clone(),
            })
            .collect())
    }

    /// Checks a survivor's revealed shares and records that it sent them. The caller keeps the
    /// accepted message until [`Self::finish`].
    pub fn receive_unmask(&mut self, msg: &UnmaskResponse) -> Result<(), Error> {
        let fp = msg.fingerprint();
        self.admit(Round::Unmasking, msg.session, msg.from, &fp, Some(&self.u3))?;
        let partners = &self.partners[&msg.from];
        let malformed = |reason: &str| Error::Malformed {
            client: msg.from,
            round: Round::Unmasking,
            reason: reason.to_owned(),
        };
        let mut covered = BTreeSet::new();
        for s in &msg.self_mask_shares {
            if !partners.contains(&s.owner) || !self.u3.contains(&s.owner) {
                return Err(malformed(
                    "self-mask share of a node that is not a surviving partner",
                ));
            }
            if !covered.insert(s.owner) {
                return Err(malformed("two shares for one node"));
            }
        }
        for s in &msg.mask_key_shares {
            if !partners.contains(&s.owner) || self.u3.contains(&s.owner) {
                return Err(malformed(
                    "mask-key share of a node that is not a dropped partner",
                ));
            }
            if !covered.insert(s.owner) {
                return Err(malformed("two shares for one node"));
            }
        }
        if covered != *partners {
            return Err(malformed("a partner's share is missing"));
        }
        self.record(Round::Unmasking, msg.from, fp);
        Ok(())
    }

    /// Ends Unmasking: rebuilds each survivor's self-mask seed and each dropped node's mask
    /// key from at least `t` of the shares revealed in `accepted`, the answers
    /// [`Self::receive_unmask`] accepted (in any order), removes those masks from `sum`, the
    /// running sum of the masked inputs, and returns the unmasked sum.
    pub fn finish(
        &mut self,
        sum: MaskedSum,
        accepted: impl IntoIterator<Item = UnmaskResponse>,
    ) -> Result<Aggregate, Error> {
        self.at(Round::Unmasking)?;
        let responses = self.stored(Round::Unmasking, accepted, |m| m.from)?;
        self.enough(Round::Unmasking, responses.len())?;
        let t = self.config.threshold as usize;
        let session = self.config.session;
        let ring = self.config.ring_mask();
        // Shares revealed about each owner, by kind, in holder order.
        let mut self_shares: BTreeMap<ClientId, Vec<(ClientId, Bytes32)>> = BTreeMap::new();
        let mut key_shares: BTreeMap<ClientId, Vec<(ClientId, Bytes32)>> = BTreeMap::new();
        for (holder, r) in &responses {
            for s in &r.self_mask_shares {
                self_shares
                    .entry(s.owner)
                    .or_default()
                    .push((*holder, s.share));
            }
            for s in &r.mask_key_shares {
                key_shares
                    .entry(s.owner)
                    .or_default()
                    .push((*holder, s.share));
            }
        }
        // Rebuild every secret before touching the sum, so a failure leaves it intact.
        let mut self_seeds = Vec::with_capacity(self.u3.len());
        for u in &self.u3 {
            let shares = self_shares.get(u).map_or(&[][..], Vec::as_slice);
            let seed = crypto::combine(*u, t, shares)?;
            self_seeds.push(crypto::self_mask_seed(&session, &seed));
        }
        let mut pair_seeds = Vec::new();
        for v in self.u2.difference(&self.u3) {
            let shares = key_shares.get(v).map_or(&[][..], Vec::as_slice);
            let seed = crypto::combine(*v, t, shares)?;
            let sk = crypto::mask_secret_key(&session, &seed);
            if crypto::public_key(&sk) != self.keys[v].mask_pk {
                return Err(Error::InconsistentShares { owner: *v });
            }
            for u in self.u3.iter().filter(|u| self.partners[*u].contains(v)) {
                let shared = crypto::agree(&sk, &self.keys[u].mask_pk, *u)?;
                // `u` added +PRG towards higher ids and -PRG towards lower: undo that.
                pair_seeds.push((crypto::pairwise_seed(&session, &shared, *u, *v), *u < *v));
            }
        }
        self.check_sum(&sum)?;
        let mut sum = sum.into_words();
        for seed in &self_seeds {
            crypto::apply_mask(&mut sum, seed, true, ring);
        }
        for (seed, negate) in &pair_seeds {
            crypto::apply_mask(&mut sum, seed, *negate, ring);
        }
        self.round = Round::Finished;
        Ok(Aggregate {
            sum,
            contributors: self.u3.iter().copied().collect(),
        })
    }

    fn check_sum(&self, sum: &MaskedSum) -> Result<(), Error> {
        if sum.len() != self.config.vector_len {
            return Err(Error::BadSum(format!(
                "{} entries, {} expected",
                sum.len(),
                self.config.vector_len
            )));
        }
        Ok(())
    }

    fn at(&self, round: Round) -> Result<(), Error> {
        if self.round != round {
            return Err(Error::WrongRound {
                expected: self.round,
                got: round,
            });
        }
        Ok(())
    }
}

fn carried_sum<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<u64>>, D::Error> {
    crate::packed::deserialize(d).map(Some)
}

/// Messages an earlier state held; `null` read as none.
fn carried<'de, D, M>(d: D) -> Result<BTreeMap<ClientId, M>, D::Error>
where
    D: serde::Deserializer<'de>,
    M: Deserialize<'de>,
{
    Ok(Option::<BTreeMap<ClientId, M>>::deserialize(d)?.unwrap_or_default())
}
