//! A node's side of the protocol: a state machine driven by the server's relayed messages.
//!
//! ```text
//! Fresh --advertise_keys--> KeysSent --share_keys(KeysBroadcast)--> SharesSent
//!   --masked_input(SharesRelay, x)--> InputSent --unmask(UnmaskRequest)--> Done
//! ```
//!
//! Routing refusals (wrong session or round, replay, misaddressed) leave the state as it was;
//! any other failed check aborts the node's part in the round for good.

use std::collections::{BTreeMap, BTreeSet};

use p256::Scalar;
use rand_chacha::ChaCha20Rng;
use x25519_dalek::StaticSecret;

use crate::config::{ClientId, RoundConfig};
use crate::crypto::{self, Bytes32};
use crate::error::{Error, Round};
use crate::graph::Graph;
use crate::messages::{
    AdvertiseKeys, EncryptedShare, Fingerprint, KeysBroadcast, MaskedInput, PeerKeys,
    RevealedShare, ShareKeys, SharesRelay, UnmaskRequest, UnmaskResponse,
};

enum State {
    Fresh,
    KeysSent {
        cipher_sk: StaticSecret,
        mask_seed: Scalar,
    },
    SharesSent {
        cipher_sk: StaticSecret,
        mask_seed: Scalar,
        self_seed: Scalar,
        peers: BTreeMap<ClientId, PeerKeys>,
    },
    InputSent {
        /// Shares this node holds of each partner's (mask-key seed, self-mask seed).
        held: BTreeMap<ClientId, (Bytes32, Bytes32)>,
    },
    Done,
    Aborted,
}

pub struct Client {
    config: RoundConfig,
    id: ClientId,
    neighbours: BTreeSet<ClientId>,
    rng: ChaCha20Rng,
    state: State,
    /// Fingerprint of the server message each round was answered from.
    answered: BTreeMap<Round, Bytes32>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Client({}, round {:?})", self.id, self.round())
    }
}

impl Client {
    /// `rng` must be cryptographically secure and private to this node ([`crate::rng_from_os`]).
    pub fn new(config: RoundConfig, id: ClientId, rng: ChaCha20Rng) -> Result<Self, Error> {
        config.validate()?;
        if !config.contains(id) {
            return Err(Error::UnknownClient(id));
        }
        let neighbours = Graph::new(&config).neighbours(id);
        Ok(Self {
            config,
            id,
            neighbours,
            rng,
            state: State::Fresh,
            answered: BTreeMap::new(),
        })
    }

    pub fn id(&self) -> ClientId {
        self.id
    }

    /// The round whose server message this node waits for next.
    pub fn round(&self) -> Round {
        match self.state {
            State::Fresh => Round::AdvertiseKeys,
            State::KeysSent { .. } => Round::ShareKeys,
            State::SharesSent { .. } => Round::MaskedInputCollection,
            State::InputSent { .. } => Round::Unmasking,
            State::Done | State::Aborted => Round::Finished,
        }
    }

    pub fn is_aborted(&self) -> bool {
        matches!(self.state, State::Aborted)
    }

    /// Round AdvertiseKeys: two fresh X25519 key pairs.
    pub fn advertise_keys(&mut self) -> Result<AdvertiseKeys, Error> {
        self.expect(Round::AdvertiseKeys)?;
        let (cipher_sk, cipher_pk) = crypto::cipher_keypair(&mut self.rng);
        let mask_seed = crypto::random_scalar(&mut self.rng);
        let mask_pk =
            crypto::public_key(&crypto::mask_secret_key(&self.config.session, &mask_seed));
        self.state = State::KeysSent {
            cipher_sk,
            mask_seed,
        };
        Ok(AdvertiseKeys {
            session: self.config.session,
            from: self.id,
            cipher_pk,
            mask_pk,
        })
    }

    /// Round ShareKeys: checks the neighbours' keys, draws the self-mask seed and sends each
    /// neighbour its encrypted shares of both secrets.
    pub fn share_keys(&mut self, msg: &KeysBroadcast) -> Result<ShareKeys, Error> {
        self.route(Round::ShareKeys, msg.session, msg.to, msg.fingerprint())?;
        let result = self.share_keys_checked(msg);
        self.settle(Round::ShareKeys, msg.fingerprint(), result)
    }

    fn share_keys_checked(&mut self, msg: &KeysBroadcast) -> Result<(ShareKeys, State), Error> {
        let State::KeysSent {
            cipher_sk,
            mask_seed,
        } = std::mem::replace(&mut self.state, State::Aborted)
        else {
            return Err(Error::Aborted);
        };
        let mut peers = BTreeMap::new();
        let mut keys: BTreeSet<Bytes32> = BTreeSet::new();
        keys.insert(crypto::public_key(&cipher_sk));
        keys.insert(crypto::public_key(&crypto::mask_secret_key(
            &self.config.session,
            &mask_seed,
        )));
        for p in &msg.peers {
            if !self.neighbours.contains(&p.id) {
                return Err(Error::NotNeighbour {
                    from: p.id,
                    to: self.id,
                });
            }
            if peers.insert(p.id, p.clone()).is_some() {
                return Err(Error::BadRelay(format!("node {} is listed twice", p.id)));
            }
            if !keys.insert(p.cipher_pk) || !keys.insert(p.mask_pk) {
                return Err(Error::ReusedKey);
            }
        }
        let need = self.config.threshold as usize;
        if peers.len() < need {
            return Err(Error::TooFewSurvivors {
                round: Round::ShareKeys,
                have: peers.len(),
                need,
            });
        }
        let self_seed = crypto::random_scalar(&mut self.rng);
        let holders: Vec<ClientId> = peers.keys().copied().collect();
        let mask_shares = crypto::split(&mask_seed, need, &holders, &mut self.rng)?;
        let self_shares = crypto::split(&self_seed, need, &holders, &mut self.rng)?;
        let mut shares = Vec::with_capacity(holders.len());
        for (i, holder) in holders.iter().enumerate() {
            let shared = crypto::agree(&cipher_sk, &peers[holder].cipher_pk, *holder)?;
            let ciphertext = crypto::encrypt_shares(
                &self.config.session,
                &shared,
                self.id,
                *holder,
                &mask_shares[i],
                &self_shares[i],
            );
            shares.push(EncryptedShare {
                peer: *holder,
                ciphertext,
            });
        }
        let out = ShareKeys {
            session: self.config.session,
            from: self.id,
            shares,
        };
        Ok((
            out,
            State::SharesSent {
                cipher_sk,
                mask_seed,
                self_seed,
                peers,
            },
        ))
    }

    /// Round MaskedInputCollection: decrypts the shares it holds for its partners, then masks
    /// `input` (already encoded in `Z_{2^b}`) with its self mask and one pairwise mask per
    /// partner: `+PRG(s_uv)` towards higher ids, `-PRG(s_uv)` towards lower ones.
    pub fn masked_input(&mut self, msg: &SharesRelay, input: &[u64]) -> Result<MaskedInput, Error> {
        self.route(
            Round::MaskedInputCollection,
            msg.session,
            msg.to,
            msg.fingerprint(),
        )?;
        // A wrong input is the caller's mistake, not the server's: refuse it without aborting.
        if input.len() != self.config.vector_len {
            return Err(Error::VectorLength {
                expected: self.config.vector_len,
                got: input.len(),
            });
        }
        let mask = self.config.ring_mask();
        if let Some(index) = input.iter().position(|&v| v & !mask != 0) {
            return Err(Error::OutOfRing {
                index,
                bits: self.config.modulus_bits,
            });
        }
        let result = self.masked_input_checked(msg, input);
        self.settle(Round::MaskedInputCollection, msg.fingerprint(), result)
    }

    fn masked_input_checked(
        &mut self,
        msg: &SharesRelay,
        input: &[u64],
    ) -> Result<(MaskedInput, State), Error> {
        let State::SharesSent {
            cipher_sk,
            mask_seed,
            self_seed,
            peers,
        } = std::mem::replace(&mut self.state, State::Aborted)
        else {
            return Err(Error::Aborted);
        };
        let session = self.config.session;
        let mut held = BTreeMap::new();
        for s in &msg.shares {
            let Some(p) = peers.get(&s.peer) else {
                return Err(Error::BadRelay(format!(
                    "a share from {}, not an admitted neighbour",
                    s.peer
                )));
            };
            let shared = crypto::agree(&cipher_sk, &p.cipher_pk, s.peer)?;
            let pair = crypto::decrypt_shares(&session, &shared, s.peer, self.id, &s.ciphertext)?;
            if held.insert(s.peer, pair).is_some() {
                return Err(Error::BadRelay(format!("two shares from {}", s.peer)));
            }
        }
        let need = self.config.threshold as usize;
        if held.len() < need {
            return Err(Error::TooFewSurvivors {
                round: Round::MaskedInputCollection,
                have: held.len(),
                need,
            });
        }
        let ring = self.config.ring_mask();
        let mut masked = input.to_vec();
        crypto::apply_mask(
            &mut masked,
            &crypto::self_mask_seed(&session, &self_seed),
            false,
            ring,
        );
        let mask_sk = crypto::mask_secret_key(&session, &mask_seed);
        for partner in held.keys() {
            let shared = crypto::agree(&mask_sk, &peers[partner].mask_pk, *partner)?;
            let seed = crypto::pairwise_seed(&session, &shared, self.id, *partner);
            crypto::apply_mask(&mut masked, &seed, self.id > *partner, ring);
        }
        Ok((
            MaskedInput {
                session,
                from: self.id,
                masked,
            },
            State::InputSent { held },
        ))
    }

    /// Round Unmasking: reveals, for each partner, the self-mask share if the server lists it
    /// as a survivor and the mask-key share otherwise.
    pub fn unmask(&mut self, msg: &UnmaskRequest) -> Result<UnmaskResponse, Error> {
        self.route(Round::Unmasking, msg.session, msg.to, msg.fingerprint())?;
        let result = self.unmask_checked(msg);
        self.settle(Round::Unmasking, msg.fingerprint(), result)
    }

    fn unmask_checked(&mut self, msg: &UnmaskRequest) -> Result<(UnmaskResponse, State), Error> {
        let State::InputSent { held } = std::mem::replace(&mut self.state, State::Aborted) else {
            return Err(Error::Aborted);
        };
        let survivors: BTreeSet<ClientId> = msg.survivors.iter().copied().collect();
        if survivors.len() != msg.survivors.len() {
            return Err(Error::InconsistentSurvivors(
                "a survivor is listed twice".into(),
            ));
        }
        if !survivors.contains(&self.id) {
            return Err(Error::InconsistentSurvivors(
                "this node sent its input but is not listed".into(),
            ));
        }
        if let Some(bad) = survivors.iter().find(|s| !self.config.contains(**s)) {
            return Err(Error::UnknownClient(*bad));
        }
        let need = self.config.threshold as usize;
        if survivors.len() < need {
            return Err(Error::TooFewSurvivors {
                round: Round::Unmasking,
                have: survivors.len(),
                need,
            });
        }
        let (mut self_mask_shares, mut mask_key_shares) = (Vec::new(), Vec::new());
        for (owner, (mask_key, self_mask)) in &held {
            if survivors.contains(owner) {
                self_mask_shares.push(RevealedShare {
                    owner: *owner,
                    share: *self_mask,
                });
            } else {
                mask_key_shares.push(RevealedShare {
                    owner: *owner,
                    share: *mask_key,
                });
            }
        }
        let out = UnmaskResponse {
            session: self.config.session,
            from: self.id,
            self_mask_shares,
            mask_key_shares,
        };
        Ok((out, State::Done))
    }

    fn expect(&self, round: Round) -> Result<(), Error> {
        if self.is_aborted() {
            return Err(Error::Aborted);
        }
        let expected = self.round();
        if expected != round {
            return Err(Error::WrongRound {
                expected,
                got: round,
            });
        }
        Ok(())
    }

    /// Routing checks, in the order that names the most precise refusal.
    fn route(
        &self,
        round: Round,
        session: crate::SessionId,
        to: ClientId,
        fingerprint: Bytes32,
    ) -> Result<(), Error> {
        if session != self.config.session {
            return Err(Error::WrongSession);
        }
        if to != self.id {
            return Err(Error::WrongRecipient {
                expected: self.id,
                got: to,
            });
        }
        if let Some(seen) = self.answered.get(&round) {
            return Err(if *seen == fingerprint {
                Error::Replayed {
                    client: self.id,
                    round,
                }
            } else {
                Error::Duplicate {
                    client: self.id,
                    round,
                }
            });
        }
        self.expect(round)
    }

    fn settle<T>(
        &mut self,
        round: Round,
        fp: Bytes32,
        r: Result<(T, State), Error>,
    ) -> Result<T, Error> {
        self.answered.insert(round, fp);
        match r {
            Ok((out, next)) => {
                self.state = next;
                Ok(out)
            }
            Err(e) => {
                self.state = State::Aborted;
                Err(e)
            }
        }
    }
}

#[cfg(test)]
impl Client {
    /// Every secret byte string this node holds, for the test that searches the server's
    /// state for them.
    pub(crate) fn secrets_for_tests(&self) -> Vec<Vec<u8>> {
        let s = &self.config.session;
        match &self.state {
            State::InputSent { held } => held
                .values()
                .flat_map(|(a, b)| [a.to_vec(), b.to_vec()])
                .collect(),
            State::SharesSent {
                cipher_sk,
                mask_seed,
                self_seed,
                ..
            } => vec![
                cipher_sk.to_bytes().to_vec(),
                crypto::scalar_bytes(mask_seed).to_vec(),
                crypto::mask_secret_key(s, mask_seed).to_bytes().to_vec(),
                crypto::scalar_bytes(self_seed).to_vec(),
                crypto::self_mask_seed(s, self_seed).to_vec(),
            ],
            _ => vec![],
        }
    }
}
