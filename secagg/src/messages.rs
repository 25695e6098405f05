//! What travels between nodes and the server, one type per round and direction. The server
//! relays these as they are; everything secret inside them is encrypted end to end between
//! nodes or masked.
//!
//! Byte strings in what a node sends (keys, ciphertexts, revealed shares) are written as
//! base64, which a relay keeping them as JSON stores and parses at a third of the size of
//! arrays of numbers; what the server sends a node keeps the arrays, which nodes of earlier
//! releases read. Every byte string reads either form (`crate::bytes`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{ClientId, SessionId};
use crate::crypto::Bytes32;

/// Round AdvertiseKeys, node → server: the node's two public keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdvertiseKeys {
    pub session: SessionId,
    pub from: ClientId,
    /// X25519 key that share ciphertexts to this node are encrypted under.
    #[serde(with = "crate::bytes::b64_32")]
    pub cipher_pk: Bytes32,
    /// X25519 key of the pairwise masks.
    #[serde(with = "crate::bytes::b64_32")]
    pub mask_pk: Bytes32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerKeys {
    pub id: ClientId,
    #[serde(with = "crate::bytes::array_32")]
    pub cipher_pk: Bytes32,
    #[serde(with = "crate::bytes::array_32")]
    pub mask_pk: Bytes32,
}

/// Server → node after AdvertiseKeys: the keys of the node's neighbours still present.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeysBroadcast {
    pub session: SessionId,
    pub to: ClientId,
    pub peers: Vec<PeerKeys>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EncryptedShare {
    /// In [`ShareKeys`] the recipient; in [`SharesRelay`] the sender.
    pub peer: ClientId,
    #[serde(with = "crate::bytes::b64")]
    pub ciphertext: Vec<u8>,
}

/// Round ShareKeys, node → server: one ciphertext per neighbour, each holding that
/// neighbour's shares of the node's two secrets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareKeys {
    pub session: SessionId,
    pub from: ClientId,
    pub shares: Vec<EncryptedShare>,
}

/// Server → node after ShareKeys: the ciphertexts addressed to the node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharesRelay {
    pub session: SessionId,
    pub to: ClientId,
    /// The ciphertexts written as arrays of numbers, as nodes of earlier releases read them.
    #[serde(serialize_with = "shares_as_arrays")]
    pub shares: Vec<EncryptedShare>,
}

fn shares_as_arrays<S: serde::Serializer>(
    shares: &[EncryptedShare],
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct AsArray<'a> {
        peer: ClientId,
        #[serde(serialize_with = "crate::bytes::array::serialize")]
        ciphertext: &'a [u8],
    }
    s.collect_seq(shares.iter().map(|e| AsArray {
        peer: e.peer,
        ciphertext: &e.ciphertext,
    }))
}

/// Round MaskedInputCollection, node → server: the input plus self mask plus pairwise masks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaskedInput {
    pub session: SessionId,
    pub from: ClientId,
    /// Packed on the wire (`crate::packed`): a JSON array of 64-bit ring elements is about
    /// 20 characters an entry to write and parse, the packed form under 11 bytes.
    #[serde(with = "crate::packed")]
    pub masked: Vec<u64>,
}

/// Server → node after MaskedInputCollection: who sent a masked input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnmaskRequest {
    pub session: SessionId,
    pub to: ClientId,
    pub survivors: Vec<ClientId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevealedShare {
    /// Whose secret this is a share of.
    pub owner: ClientId,
    #[serde(with = "crate::bytes::b64_32")]
    pub share: Bytes32,
}

/// Round Unmasking, node → server: for each neighbour that survived, its share of that
/// neighbour's self-mask seed; for each that dropped, its share of the mask-key seed. Never
/// both for one neighbour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnmaskResponse {
    pub session: SessionId,
    pub from: ClientId,
    pub self_mask_shares: Vec<RevealedShare>,
    pub mask_key_shares: Vec<RevealedShare>,
}

/// A fingerprint of a message's content, to tell a replay from a conflicting second message.
pub(crate) trait Fingerprint {
    fn feed(&self, h: &mut Sha256);
    fn fingerprint(&self) -> Bytes32 {
        let mut h = Sha256::new();
        self.feed(&mut h);
        h.finalize().into()
    }
}

fn id(h: &mut Sha256, c: ClientId) {
    h.update(c.0.to_be_bytes());
}

fn len(h: &mut Sha256, n: usize) {
    h.update((n as u64).to_be_bytes());
}

impl Fingerprint for AdvertiseKeys {
    fn feed(&self, h: &mut Sha256) {
        h.update(b"advertise");
        h.update(self.session.0);
        id(h, self.from);
        h.update(self.cipher_pk);
        h.update(self.mask_pk);
    }
}

impl Fingerprint for KeysBroadcast {
    fn feed(&self, h: &mut Sha256) {
        h.update(b"keys");
        h.update(self.session.0);
        id(h, self.to);
        len(h, self.peers.len());
        for p in &self.peers {
            id(h, p.id);
            h.update(p.cipher_pk);
            h.update(p.mask_pk);
        }
    }
}

fn feed_shares(h: &mut Sha256, shares: &[EncryptedShare]) {
    len(h, shares.len());
    for s in shares {
        id(h, s.peer);
        len(h, s.ciphertext.len());
        h.update(&s.ciphertext);
    }
}

impl Fingerprint for ShareKeys {
    fn feed(&self, h: &mut Sha256) {
        h.update(b"share");
        h.update(self.session.0);
        id(h, self.from);
        feed_shares(h, &self.shares);
    }
}

impl Fingerprint for SharesRelay {
    fn feed(&self, h: &mut Sha256) {
        h.update(b"relay");
        h.update(self.session.0);
        id(h, self.to);
        feed_shares(h, &self.shares);
    }
}

impl Fingerprint for MaskedInput {
    fn feed(&self, h: &mut Sha256) {
        h.update(b"masked");
        h.update(self.session.0);
        id(h, self.from);
        len(h, self.masked.len());
        // The vector is megabytes; it enters the fingerprint through a fast multiply-xor hash
        // instead of SHA-256. The fingerprint only tells a replay from a conflicting second
        // message, and both are refused, so it needs no collision resistance.
        h.update(fast_hash(&self.masked).to_le_bytes());
    }
}

/// Four independent multiply-xor lanes (the multiplier is 2^64 / golden ratio, odd).
fn fast_hash(v: &[u64]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut lanes = [1u64, 2, 3, 4];
    let mut chunks = v.chunks_exact(4);
    for c in &mut chunks {
        for (l, x) in lanes.iter_mut().zip(c) {
            *l = (*l ^ x).wrapping_mul(K).rotate_left(29);
        }
    }
    for (l, x) in lanes.iter_mut().zip(chunks.remainder()) {
        *l = (*l ^ x).wrapping_mul(K).rotate_left(29);
    }
    lanes
        .iter()
        .fold(v.len() as u64, |acc, l| (acc ^ l).wrapping_mul(K))
}

impl Fingerprint for UnmaskRequest {
    fn feed(&self, h: &mut Sha256) {
        h.update(b"unmask-request");
        h.update(self.session.0);
        id(h, self.to);
        len(h, self.survivors.len());
        for s in &self.survivors {
            id(h, *s);
        }
    }
}

impl Fingerprint for UnmaskResponse {
    fn feed(&self, h: &mut Sha256) {
        h.update(b"unmask-response");
        h.update(self.session.0);
        id(h, self.from);
        for list in [&self.self_mask_shares, &self.mask_key_shares] {
            len(h, list.len());
            for s in list {
                id(h, s.owner);
                h.update(s.share);
            }
        }
    }
}
