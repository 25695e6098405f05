//! Cryptographically secure randomness for noise and subsampling.
//!
//! All randomness in `dp` comes from ChaCha20 (`rand_chacha::ChaCha20Rng`), a stream cipher used
//! as a CSPRNG: an observer who sees some outputs cannot predict others, which a statistical
//! generator (xorshift, PCG, Mersenne Twister) does not guarantee and DP proofs assume.
//!
//! Stream layout, so parallel results never depend on thread scheduling:
//!
//! ```text
//! master = ChaCha20(seed)                       seed: 32 bytes from the OS, or explicit
//! key_r  = 32 bytes drawn from master           one fresh key per mechanism invocation r
//! chunk c of invocation r  ->  ChaCha20(key_r) with stream id c   (2^64 independent streams)
//! ```
//!
//! The coordinate range is cut into fixed-size chunks, so chunk `c` always reads stream `c` of its
//! invocation's key whichever thread runs it.
//!
//! [`NoiseRng::from_secret`] derives `seed = SHA-256(key || context)` so a data holder can
//! replay a round's noise (e.g. to resume local training bit for bit) from one long-lived
//! secret key and a per-round context, without storing generator state.
//!
//! ```
//! use fl_engine::dp::NoiseRng;
//! use rand::Rng;
//! let mut a = NoiseRng::from_seed_for_reproducible_runs([7; 32]);
//! let mut b = NoiseRng::from_seed_for_reproducible_runs([7; 32]);
//! assert_eq!(a.next_u64(), b.next_u64());
//! assert!(a.is_reproducible());
//! assert!(!NoiseRng::from_os_entropy().unwrap().is_reproducible());
//! ```

use std::convert::Infallible;

use rand::rngs::SysRng;
use rand::{Rng, SeedableRng, TryCryptoRng, TryRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

use super::error::{DpError, Result};

/// ChaCha20 generator for DP noise and sampling. Seed it from the OS in production.
pub struct NoiseRng {
    master: ChaCha20Rng,
    reproducible: bool,
}

impl NoiseRng {
    /// Seeds ChaCha20 with 32 bytes from the operating system (`getrandom`). Use this in production.
    pub fn from_os_entropy() -> Result<Self> {
        let mut seed = [0u8; 32];
        SysRng
            .try_fill_bytes(&mut seed)
            .map_err(|e| DpError::Entropy(e.to_string()))?;
        Ok(Self {
            master: ChaCha20Rng::from_seed(seed),
            reproducible: false,
        })
    }

    /// Seeds ChaCha20 with a caller-chosen seed so tests and simulations can be replayed.
    ///
    /// Anyone who knows the seed knows the noise and can subtract it: never use this for data
    /// that leaves the data holder.
    pub fn from_seed_for_reproducible_runs(seed: [u8; 32]) -> Self {
        Self {
            master: ChaCha20Rng::from_seed(seed),
            reproducible: true,
        }
    }

    /// Seeds ChaCha20 with `SHA-256(key || context)`: one generator per `context` (for example
    /// study, site and round) from one secret `key`.
    ///
    /// The noise is exactly as secret as `key`: whoever holds the key and knows the context can
    /// regenerate the noise and subtract it, so keep the key at the data holder, like a signing
    /// key, and never reuse it for anything else. With a secret key the generator counts as not
    /// reproducible ([`is_reproducible`](Self::is_reproducible) is false), even though the
    /// key holder can deliberately replay it.
    pub fn from_secret(key: &[u8; 32], context: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(key);
        hasher.update(context);
        Self {
            master: ChaCha20Rng::from_seed(hasher.finalize().into()),
            reproducible: false,
        }
    }

    /// True when the generator was seeded explicitly (so its noise offers no privacy).
    pub fn is_reproducible(&self) -> bool {
        self.reproducible
    }

    /// Draws a fresh key for one mechanism invocation; its streams are independent of every
    /// other invocation's because the key itself is ChaCha20 output.
    pub(crate) fn next_streams(&mut self) -> StreamFamily {
        let mut key = [0u8; 32];
        self.master.fill_bytes(&mut key);
        StreamFamily { key }
    }
}

impl std::fmt::Debug for NoiseRng {
    // The internal state is a secret: printing it would reveal all future noise.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoiseRng")
            .field("reproducible", &self.reproducible)
            .finish_non_exhaustive()
    }
}

// `Rng` and `CryptoRng` follow from the infallible `TryRng` and `TryCryptoRng`.
impl TryRng for NoiseRng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> std::result::Result<u32, Infallible> {
        Ok(self.master.next_u32())
    }
    fn try_next_u64(&mut self) -> std::result::Result<u64, Infallible> {
        Ok(self.master.next_u64())
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> std::result::Result<(), Infallible> {
        self.master.fill_bytes(dest);
        Ok(())
    }
}

impl TryCryptoRng for NoiseRng {}

/// The key of one mechanism invocation; hands out one ChaCha20 stream per chunk index.
pub(crate) struct StreamFamily {
    key: [u8; 32],
}

impl StreamFamily {
    /// ChaCha20 keyed with this invocation's key, positioned at the start of stream `index`.
    pub(crate) fn stream(&self, index: u64) -> ChaCha20Rng {
        let mut rng = ChaCha20Rng::from_seed(self.key);
        rng.set_stream(index);
        rng
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_and_repeat() {
        let mut rng = NoiseRng::from_seed_for_reproducible_runs([1; 32]);
        let fam = rng.next_streams();
        let a: u64 = fam.stream(0).next_u64();
        let b: u64 = fam.stream(1).next_u64();
        assert_ne!(a, b);
        assert_eq!(a, fam.stream(0).next_u64());
        let fam2 = rng.next_streams();
        assert_ne!(a, fam2.stream(0).next_u64());
    }

    #[test]
    fn secret_derivation_is_sha256_of_key_and_context() {
        let key = [9u8; 32];
        let mut a = NoiseRng::from_secret(&key, b"study/site-0/round-1");
        let mut b = NoiseRng::from_secret(&key, b"study/site-0/round-1");
        assert!(!a.is_reproducible());
        let first = a.next_u64();
        assert_eq!(first, b.next_u64());
        // The seed is SHA-256(key || context), so the stream equals ChaCha20 under that seed.
        let mut concat = key.to_vec();
        concat.extend_from_slice(b"study/site-0/round-1");
        let seed: [u8; 32] = Sha256::digest(&concat).into();
        let mut plain = NoiseRng::from_seed_for_reproducible_runs(seed);
        assert_eq!(first, plain.next_u64());
        // Another context or another key gives another stream.
        let other_ctx = NoiseRng::from_secret(&key, b"study/site-0/round-2").next_u64();
        let other_key = NoiseRng::from_secret(&[8u8; 32], b"study/site-0/round-1").next_u64();
        assert_ne!(first, other_ctx);
        assert_ne!(first, other_key);
    }
}
