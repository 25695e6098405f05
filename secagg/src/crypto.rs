//! The primitives, each from a maintained crate: X25519 (x25519-dalek), HKDF-SHA-256 (hkdf),
//! ChaCha20-Poly1305 (chacha20poly1305), the ChaCha20 stream as mask generator (chacha20, the
//! stream cipher under chacha20poly1305; the same stream as rand_chacha's `ChaCha20Rng`) and
//! Shamir sharing over the P-256 scalar field (vsss-rs over p256's `Scalar`).
//!
//! A node's two secrets — the seed of its mask key and its self-mask seed — are field
//! elements, so that they can be shared as they are; the X25519 key and the mask stream are
//! derived from them with HKDF under the session id.

use chacha20::cipher::{KeyIvInit, StreamCipher};
use chacha20::ChaCha20;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Nonce};
use hkdf::Hkdf;
use p256::elliptic_curve::ff::{Field, PrimeField};
use p256::Scalar;
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, SeedableRng};
use sha2::Sha256;
use vsss_rs::{IdentifierPrimeField, PrimeFieldShare, ReadableShareSet, Shamir};
use x25519_dalek::{PublicKey, StaticSecret};

use crate::config::{ClientId, SessionId};
use crate::error::Error;

pub(crate) type Bytes32 = [u8; 32];

/// A cryptographically secure generator seeded from the operating system.
pub fn rng_from_os() -> Result<ChaCha20Rng, Error> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| Error::Config(format!("no OS randomness: {e}")))?;
    Ok(ChaCha20Rng::from_seed(seed))
}

fn hkdf(session: &SessionId, ikm: &[u8], info: &[&[u8]]) -> Bytes32 {
    let hk = Hkdf::<Sha256>::new(Some(&session.0), ikm);
    let mut out = [0u8; 32];
    let info: Vec<u8> = info.concat();
    // 32 bytes is always a valid HKDF-SHA-256 output length.
    hk.expand(&info, &mut out).expect("32-byte HKDF output");
    out
}

pub(crate) fn random_scalar<R: CryptoRng + ?Sized>(rng: &mut R) -> Scalar {
    Scalar::random(rng)
}

pub(crate) fn scalar_bytes(s: &Scalar) -> Bytes32 {
    s.to_repr().into()
}

pub(crate) fn scalar_from_bytes(b: &Bytes32) -> Option<Scalar> {
    Option::from(Scalar::from_repr((*b).into()))
}

/// The X25519 key whose pairwise secrets mask the node's input, from its shared seed.
pub(crate) fn mask_secret_key(session: &SessionId, seed: &Scalar) -> StaticSecret {
    StaticSecret::from(hkdf(session, &scalar_bytes(seed), &[b"secagg/mask-key"]))
}

/// The stream seed of the node's self mask, from its shared seed.
pub(crate) fn self_mask_seed(session: &SessionId, seed: &Scalar) -> Bytes32 {
    hkdf(session, &scalar_bytes(seed), &[b"secagg/self-mask"])
}

pub(crate) fn agree(
    secret: &StaticSecret,
    peer: &Bytes32,
    peer_id: ClientId,
) -> Result<Bytes32, Error> {
    let shared = secret.diffie_hellman(&PublicKey::from(*peer));
    if !shared.was_contributory() {
        return Err(Error::WeakKey(peer_id));
    }
    Ok(*shared.as_bytes())
}

/// Seed of the mask shared by `a` and `b`; symmetric in the pair.
pub(crate) fn pairwise_seed(
    session: &SessionId,
    shared: &Bytes32,
    a: ClientId,
    b: ClientId,
) -> Bytes32 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    hkdf(
        session,
        shared,
        &[
            b"secagg/pairwise-mask",
            &lo.0.to_be_bytes(),
            &hi.0.to_be_bytes(),
        ],
    )
}

/// One AEAD key per direction, so every key encrypts a single message and a zero nonce is safe.
fn share_cipher(
    session: &SessionId,
    shared: &Bytes32,
    from: ClientId,
    to: ClientId,
) -> ChaCha20Poly1305 {
    let key = hkdf(
        session,
        shared,
        &[
            b"secagg/share-key",
            &from.0.to_be_bytes(),
            &to.0.to_be_bytes(),
        ],
    );
    ChaCha20Poly1305::new(&key.into())
}

fn share_aad(session: &SessionId, from: ClientId, to: ClientId) -> Vec<u8> {
    [&session.0[..], &from.0.to_be_bytes(), &to.0.to_be_bytes()].concat()
}

/// Plaintext of one encrypted share: sender, recipient, share of the mask-key seed, share of
/// the self-mask seed (Bonawitz et al., round ShareKeys).
pub(crate) const SHARE_PLAINTEXT_LEN: usize = 4 + 4 + 32 + 32;

pub(crate) fn encrypt_shares(
    session: &SessionId,
    shared: &Bytes32,
    from: ClientId,
    to: ClientId,
    mask_key_share: &Bytes32,
    self_mask_share: &Bytes32,
) -> Vec<u8> {
    let mut pt = Vec::with_capacity(SHARE_PLAINTEXT_LEN);
    pt.extend_from_slice(&from.0.to_be_bytes());
    pt.extend_from_slice(&to.0.to_be_bytes());
    pt.extend_from_slice(mask_key_share);
    pt.extend_from_slice(self_mask_share);
    let aad = share_aad(session, from, to);
    share_cipher(session, shared, from, to)
        .encrypt(
            &Nonce::default(),
            Payload {
                msg: &pt,
                aad: &aad,
            },
        )
        .expect("ChaCha20-Poly1305 encrypts any message under 256 GiB")
}

/// Decrypts and checks the ids inside; returns (mask-key share, self-mask share).
pub(crate) fn decrypt_shares(
    session: &SessionId,
    shared: &Bytes32,
    from: ClientId,
    to: ClientId,
    ciphertext: &[u8],
) -> Result<(Bytes32, Bytes32), Error> {
    let aad = share_aad(session, from, to);
    let pt = share_cipher(session, shared, from, to)
        .decrypt(
            &Nonce::default(),
            Payload {
                msg: ciphertext,
                aad: &aad,
            },
        )
        .map_err(|_| Error::Decryption { from })?;
    if pt.len() != SHARE_PLAINTEXT_LEN
        || pt[0..4] != from.0.to_be_bytes()
        || pt[4..8] != to.0.to_be_bytes()
    {
        return Err(Error::Decryption { from });
    }
    let mut a = [0u8; 32];
    let mut b = [0u8; 32];
    a.copy_from_slice(&pt[8..40]);
    b.copy_from_slice(&pt[40..72]);
    Ok((a, b))
}

/// Adds `sign * PRG(seed)` to `acc` in `Z_{2^b}` (`mask` is `2^b - 1`): entry `i` takes the
/// little-endian word at bytes `8i..8i+8` of the ChaCha20 stream under key `seed`, nonce 0,
/// counter from 0. That is the stream of rand_chacha's `ChaCha20Rng::from_seed(seed)`, which
/// nodes of earlier releases draw their masks from (up to 2^32 blocks, 256 GiB, where the
/// IETF variant's 32-bit counter ends). The stream is drawn 8 KiB at a time through the
/// cipher's own keystream, which runs its AVX-512 code where the CPU has it (see
/// `.cargo/config.toml`): mask expansion is most of a node's protocol cost and of the
/// server's unmasking.
pub(crate) fn apply_mask(acc: &mut [u64], seed: &Bytes32, negate: bool, mask: u64) {
    const WORDS: usize = 1024;
    let mut stream = ChaCha20::new(seed.into(), &[0u8; 12].into());
    let mut buf = [0u8; WORDS * 8];
    for chunk in acc.chunks_mut(WORDS) {
        let bytes = &mut buf[..chunk.len() * 8];
        bytes.fill(0);
        stream.apply_keystream(bytes);
        let words = bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
        if negate {
            for (a, r) in chunk.iter_mut().zip(words) {
                *a = a.wrapping_sub(r) & mask;
            }
        } else {
            for (a, r) in chunk.iter_mut().zip(words) {
                *a = a.wrapping_add(r) & mask;
            }
        }
    }
}

type Share = PrimeFieldShare<Scalar>;

/// Splits `secret` into one share per holder (evaluation point = holder id), threshold `t`.
pub(crate) fn split<R: CryptoRng>(
    secret: &Scalar,
    threshold: usize,
    holders: &[ClientId],
    rng: &mut R,
) -> Result<Vec<Bytes32>, Error> {
    let ids = holders
        .iter()
        .map(|h| IdentifierPrimeField(Scalar::from(h.0 as u64)));
    let shares = <Vec<Share> as Shamir<Share>>::split_secret_with_participant_ids_iter(
        threshold,
        holders.len(),
        &IdentifierPrimeField(*secret),
        rng,
        ids,
    )
    .map_err(|e| Error::Config(format!("secret sharing: {e}")))?;
    Ok(shares.iter().map(|s| scalar_bytes(&s.value.0)).collect())
}

/// Rebuilds a secret from `(holder, share)` pairs. With more than `t` shares a second,
/// different subset is interpolated too, so a holder that altered its share is caught.
pub(crate) fn combine(
    owner: ClientId,
    threshold: usize,
    shares: &[(ClientId, Bytes32)],
) -> Result<Scalar, Error> {
    if shares.len() < threshold {
        return Err(Error::TooFewShares {
            owner,
            have: shares.len(),
            need: threshold,
        });
    }
    let parsed: Vec<Share> = shares
        .iter()
        .map(|(h, s)| {
            scalar_from_bytes(s)
                .map(|v| Share {
                    identifier: IdentifierPrimeField(Scalar::from(h.0 as u64)),
                    value: IdentifierPrimeField(v),
                })
                .ok_or(Error::InconsistentShares { owner })
        })
        .collect::<Result<_, _>>()?;
    let interpolate = |subset: &[Share]| {
        subset
            .to_vec()
            .combine()
            .map(|v| v.0)
            .map_err(|_| Error::InconsistentShares { owner })
    };
    let first = interpolate(&parsed[..threshold])?;
    if parsed.len() > threshold {
        let second = interpolate(&parsed[parsed.len() - threshold..])?;
        if second != first {
            return Err(Error::InconsistentShares { owner });
        }
    }
    Ok(first)
}

/// Fresh X25519 key pair for encrypting shares.
pub(crate) fn cipher_keypair<R: CryptoRng + ?Sized>(rng: &mut R) -> (StaticSecret, Bytes32) {
    let mut bytes = [0u8; 32];
    rng.fill_bytes(&mut bytes);
    let sk = StaticSecret::from(bytes);
    let pk = PublicKey::from(&sk).to_bytes();
    (sk, pk)
}

pub(crate) fn public_key(sk: &StaticSecret) -> Bytes32 {
    PublicKey::from(sk).to_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::Rng;

    /// Words `0..n` of rand_chacha's stream, which earlier releases masked with.
    fn rand_chacha_words(seed: &Bytes32, n: usize) -> Vec<u64> {
        let mut prg = ChaCha20Rng::from_seed(*seed);
        (0..n).map(|_| prg.next_u64()).collect()
    }

    #[test]
    fn masks_are_the_stream_of_rand_chachas_generator() {
        let seed: Bytes32 = core::array::from_fn(|i| (i * 7 + 3) as u8);
        // not a multiple of the 1024-word blocks it is drawn in, nor of ChaCha's 8 words
        let n = 2 * 1024 + 37;
        let expected = rand_chacha_words(&seed, n);
        let mut added = vec![0u64; n];
        apply_mask(&mut added, &seed, false, u64::MAX);
        assert_eq!(added, expected);
        let mut subtracted = vec![0u64; n];
        apply_mask(&mut subtracted, &seed, true, u64::MAX);
        let negated: Vec<u64> = expected.iter().map(|w| w.wrapping_neg()).collect();
        assert_eq!(subtracted, negated);
        // in a smaller ring: the low bits of the same words, and a mask removes itself
        let ring = (1u64 << 20) - 1;
        let input: Vec<u64> = (0..n as u64).map(|i| (i * 977) & ring).collect();
        let mut masked = input.clone();
        apply_mask(&mut masked, &seed, false, ring);
        assert!(masked
            .iter()
            .zip(&input)
            .zip(&expected)
            .all(|((m, x), w)| *m == x.wrapping_add(*w) & ring));
        apply_mask(&mut masked, &seed, true, ring);
        assert_eq!(masked, input);
    }
}
