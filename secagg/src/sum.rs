//! The running sum of a session's masked inputs, kept apart from the [`Server`](crate::Server)'s
//! state. It is the only part of the relay as large as the model (one ring element per entry,
//! whatever the number of nodes), and only a masked input and the final unmasking touch it;
//! everything else (keys, share ciphertexts, who is in) is small and is read by every message
//! and every node's poll. A relay that stores its state between requests therefore stores the
//! sum on its own, as [`MaskedSum::to_bytes`], and loads it only where it is used.

use crate::config::RoundConfig;
use crate::error::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskedSum {
    words: Vec<u64>,
}

/// Bytes per stored ring element: as many as `Z_{2^bits}` needs.
fn width(config: &RoundConfig) -> usize {
    config.modulus_bits.div_ceil(8) as usize
}

impl MaskedSum {
    /// The sum before any masked input: zero in every entry.
    pub fn zero(config: &RoundConfig) -> Self {
        Self {
            words: vec![0; config.vector_len],
        }
    }

    /// Little-endian ring elements of `⌈b/8⌉` bytes each, `vector_len` of them: no framing
    /// and no text encoding, so storing and loading it is a copy.
    pub fn to_bytes(&self, config: &RoundConfig) -> Vec<u8> {
        crate::packed::to_le(&self.words, width(config))
    }

    /// Reads what [`Self::to_bytes`] wrote for the same session; refuses a length or an
    /// element that does not fit the session's vector and ring.
    pub fn from_bytes(config: &RoundConfig, bytes: &[u8]) -> Result<Self, Error> {
        let w = width(config);
        if bytes.len() != config.vector_len * w {
            return Err(Error::BadSum(format!(
                "{} bytes stored, {} expected ({} entries of {w} bytes)",
                bytes.len(),
                config.vector_len * w,
                config.vector_len
            )));
        }
        let ring = config.ring_mask();
        let words = crate::packed::from_le(bytes, w);
        if let Some(index) = words.iter().position(|&v| v & !ring != 0) {
            return Err(Error::BadSum(format!(
                "entry {index} lies outside the ring Z_2^{}",
                config.modulus_bits
            )));
        }
        Ok(Self { words })
    }

    pub(crate) fn from_words(words: Vec<u64>) -> Self {
        Self { words }
    }

    #[cfg(test)]
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
    }

    pub(crate) fn len(&self) -> usize {
        self.words.len()
    }

    /// Adds `masked` entry by entry in the ring.
    pub(crate) fn add(&mut self, masked: &[u64], ring: u64) {
        for (acc, v) in self.words.iter_mut().zip(masked) {
            *acc = acc.wrapping_add(*v) & ring;
        }
    }

    pub(crate) fn into_words(self) -> Vec<u64> {
        self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SessionId;

    fn config(bits: u32, len: usize) -> RoundConfig {
        RoundConfig {
            session: SessionId([7; 32]),
            clients: 3,
            threshold: 2,
            degree: 2,
            graph_seed: [1; 32],
            vector_len: len,
            modulus_bits: bits,
        }
    }

    /// Hand-checked layout: in `Z_2^24` each element takes 3 bytes, little-endian.
    #[test]
    fn stores_ring_elements_in_as_few_bytes_as_the_ring_needs() {
        let c = config(24, 2);
        let sum = MaskedSum::from_words(vec![0x0001_0203, 0xff_ffff]);
        assert_eq!(sum.to_bytes(&c), [3, 2, 1, 0xff, 0xff, 0xff]);
        assert_eq!(MaskedSum::from_bytes(&c, &sum.to_bytes(&c)).unwrap(), sum);
        let wide = config(64, 2);
        let big = MaskedSum::from_words(vec![u64::MAX, 1]);
        assert_eq!(big.to_bytes(&wide).len(), 16);
        assert_eq!(
            MaskedSum::from_bytes(&wide, &big.to_bytes(&wide)).unwrap(),
            big
        );
    }

    #[test]
    fn refuses_a_stored_sum_of_another_length_or_ring() {
        let c = config(20, 2);
        assert!(matches!(
            MaskedSum::from_bytes(&c, &[0; 5]),
            Err(Error::BadSum(_))
        ));
        // 0x100000 needs 21 bits
        assert!(matches!(
            MaskedSum::from_bytes(&c, &[0, 0, 0x10, 0, 0, 0]),
            Err(Error::BadSum(_))
        ));
        assert_eq!(
            MaskedSum::from_bytes(&c, &[0; 6]).unwrap(),
            MaskedSum::zero(&c)
        );
    }
}
