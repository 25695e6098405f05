//! An oblivious pseudorandom function, so a data holder can learn which of its subjects opted
//! out without telling the gateway whom it holds.
//!
//! The OPRF mode of RFC 9497 ("Oblivious Pseudorandom Functions (OPRFs) Using Prime-Order
//! Groups"), ciphersuite ristretto255-SHA512, over curve25519-dalek's ristretto group:
//!
//! ```text
//! client:  r random scalar;  B = r · H(x)                        (blind)
//! server:  Z = k · B                                             (evaluate)
//! client:  N = r⁻¹ · Z = k · H(x);  F(k, x) = SHA-512(len‖x‖len‖N‖"Finalize")   (finalize)
//! server:  F(k, x) directly, for inputs it already knows           (evaluate_direct)
//! ```
//!
//! The server never sees x (B is uniformly distributed whatever x is), and the client can
//! compute F only through the server, one call per input. H is hash_to_ristretto255 with
//! expand_message_xmd(SHA-512) (RFC 9380 §5.3.1) under the suite's domain separation tag.
//! The test vectors of RFC 9497 Appendix A.1.1 pin every step.
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use sha2::{Digest, Sha512};

/// The RFC 9497 context string of the OPRF mode (mode 0) with ristretto255-SHA512.
const CONTEXT: &[u8] = b"OPRFV1-\x00-ristretto255-SHA512";

/// Bytes of a serialised group element or scalar.
pub const ELEMENT_LEN: usize = 32;
/// Bytes of an OPRF output.
pub const OUTPUT_LEN: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OprfError {
    #[error("not a valid ristretto255 element")]
    InvalidElement,
    #[error("an element must be {ELEMENT_LEN} bytes")]
    Length,
    #[error("the system's random source failed")]
    Random,
}

/// The server's secret key.
#[derive(Clone)]
pub struct OprfKey(Scalar);

impl std::fmt::Debug for OprfKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OprfKey(..)")
    }
}

impl OprfKey {
    /// A key derived from other secret key material (`label` keeps derivations apart).
    pub fn derive(secret: &[u8], label: &[u8]) -> Self {
        let mut h = Sha512::new();
        h.update((label.len() as u16).to_be_bytes());
        h.update(label);
        h.update(secret);
        Self(Scalar::from_bytes_mod_order_wide(&h.finalize().into()))
    }

    /// A key from its 32-byte little-endian scalar encoding (RFC 9497's `skSm`).
    pub fn from_bytes(bytes: [u8; 32]) -> Option<Self> {
        Option::from(Scalar::from_canonical_bytes(bytes)).map(Self)
    }

    /// A public name of this key: SHA-256 of `k · G` (RFC 9497's public key `pkS`, which
    /// reveals nothing of `k`), hex encoded. Outputs a client keeps are valid only under the key
    /// they were computed with; this tells it when the key changed.
    pub fn key_id(&self) -> String {
        use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
        let public = (self.0 * RISTRETTO_BASEPOINT_POINT).compress();
        hex::encode(sha2::Sha256::digest(public.as_bytes()))
    }

    /// `F(k, input)` for an input the server knows itself.
    pub fn evaluate_direct(&self, input: &[u8]) -> [u8; OUTPUT_LEN] {
        finalize_element(input, &(self.0 * hash_to_group(input)))
    }

    /// `k · B` for a client's blinded element.
    pub fn evaluate(&self, blinded: &[u8]) -> Result<[u8; ELEMENT_LEN], OprfError> {
        Ok((self.0 * decode(blinded)?).compress().to_bytes())
    }
}

/// A client's blinding of one input, kept until the server's answer arrives.
pub struct Blinded {
    blind: Scalar,
    /// The element to send to the server.
    pub element: [u8; ELEMENT_LEN],
}

impl Blinded {
    /// Blind `input` with a fresh random scalar.
    pub fn new(input: &[u8]) -> Result<Self, OprfError> {
        let wide = crate::key_file::random_bytes::<64>().map_err(|_| OprfError::Random)?;
        Ok(Self::with_blind(
            input,
            Scalar::from_bytes_mod_order_wide(&wide),
        ))
    }

    fn with_blind(input: &[u8], blind: Scalar) -> Self {
        Self {
            blind,
            element: (blind * hash_to_group(input)).compress().to_bytes(),
        }
    }

    /// `F(k, input)` from the server's evaluation of [`Blinded::element`].
    pub fn finalize(&self, input: &[u8], evaluated: &[u8]) -> Result<[u8; OUTPUT_LEN], OprfError> {
        let n = self.blind.invert() * decode(evaluated)?;
        Ok(finalize_element(input, &n))
    }
}

fn decode(bytes: &[u8]) -> Result<RistrettoPoint, OprfError> {
    let arr: [u8; ELEMENT_LEN] = bytes.try_into().map_err(|_| OprfError::Length)?;
    let point = CompressedRistretto(arr)
        .decompress()
        .ok_or(OprfError::InvalidElement)?;
    // RFC 9497 §2.1: the identity is not a valid input or output element.
    if point == RistrettoPoint::default() {
        return Err(OprfError::InvalidElement);
    }
    Ok(point)
}

/// RFC 9497 `Finalize`'s hash over the unblinded element.
fn finalize_element(input: &[u8], n: &RistrettoPoint) -> [u8; OUTPUT_LEN] {
    let n = n.compress().to_bytes();
    let mut h = Sha512::new();
    h.update((input.len() as u16).to_be_bytes());
    h.update(input);
    h.update((n.len() as u16).to_be_bytes());
    h.update(n);
    h.update(b"Finalize");
    h.finalize().into()
}

/// hash_to_ristretto255 (RFC 9380 Appendix B) with DST `HashToGroup-` ‖ context.
fn hash_to_group(input: &[u8]) -> RistrettoPoint {
    let mut dst = b"HashToGroup-".to_vec();
    dst.extend_from_slice(CONTEXT);
    RistrettoPoint::from_uniform_bytes(&expand_message_xmd_64(input, &dst))
}

/// expand_message_xmd with SHA-512 for 64 output bytes (RFC 9380 §5.3.1): one block, so
/// `ell` = 1 and the output is b_1.
fn expand_message_xmd_64(msg: &[u8], dst: &[u8]) -> [u8; 64] {
    let dst_len = u8::try_from(dst.len()).expect("the suite's tag is short");
    let mut b0 = Sha512::new();
    b0.update([0u8; 128]); // Z_pad: SHA-512's block size
    b0.update(msg);
    b0.update(64u16.to_be_bytes()); // len_in_bytes
    b0.update([0u8]);
    b0.update(dst);
    b0.update([dst_len]);
    let b0 = b0.finalize();
    let mut b1 = Sha512::new();
    b1.update(b0);
    b1.update([1u8]);
    b1.update(dst);
    b1.update([dst_len]);
    b1.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<const N: usize>(hex_text: &str) -> [u8; N] {
        hex::decode(hex_text).unwrap().try_into().unwrap()
    }

    /// RFC 9497 Appendix A.1.1 (OPRF mode, ristretto255-SHA512), test vectors 1 and 2.
    #[test]
    fn rfc_9497_test_vectors() {
        let key = OprfKey::from_bytes(bytes(
            "5ebcea5ee37023ccb9fc2d2019f9d7737be85591ae8652ffa9ef0f4d37063b0e",
        ))
        .unwrap();
        let blind = Scalar::from_canonical_bytes(bytes(
            "64d37aed22a27f5191de1c1d69fadb899d8862b58eb4220029e036ec4c1f6706",
        ))
        .unwrap();
        let cases = [
            (
                "00",
                "609a0ae68c15a3cf6903766461307e5c8bb2f95e7e6550e1ffa2dc99e412803c",
                "7ec6578ae5120958eb2db1745758ff379e77cb64fe77b0b2d8cc917ea0869c7e",
                "527759c3d9366f277d8c6020418d96bb393ba2afb20ff90df23fb7708264e2f3\
                 ab9135e3bd69955851de4b1f9fe8a0973396719b7912ba9ee8aa7d0b5e24bcf6",
            ),
            (
                "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a",
                "da27ef466870f5f15296299850aa088629945a17d1f5b7f5ff043f76b3c06418",
                "b4cbf5a4f1eeda5a63ce7b77c7d23f461db3fcab0dd28e4e17cecb5c90d02c25",
                "f4a74c9c592497375e796aa837e907b1a045d34306a749db9f34221f7e750cb4\
                 f2a6413a6bf6fa5e19ba6348eb673934a722a7ede2e7621306d18951e7cf2c73",
            ),
        ];
        for (input, blinded, evaluated, output) in cases {
            let input = hex::decode(input).unwrap();
            let b = Blinded::with_blind(&input, blind);
            assert_eq!(hex::encode(b.element), blinded);
            let z = key.evaluate(&b.element).unwrap();
            assert_eq!(hex::encode(z), evaluated);
            let out = b.finalize(&input, &z).unwrap();
            assert_eq!(hex::encode(out), output.replace(' ', ""));
            assert_eq!(key.evaluate_direct(&input), out);
        }
    }

    #[test]
    fn a_random_blind_gives_the_same_output_and_an_unrelated_element() {
        let key = OprfKey::derive(b"registry secret", b"test");
        let a = Blinded::new(b"psn-1").unwrap();
        let b = Blinded::new(b"psn-1").unwrap();
        assert_ne!(a.element, b.element);
        let fa = a.finalize(b"psn-1", &key.evaluate(&a.element).unwrap());
        let fb = b.finalize(b"psn-1", &key.evaluate(&b.element).unwrap());
        assert_eq!(fa, fb);
        assert_eq!(fa.unwrap(), key.evaluate_direct(b"psn-1"));
        let other = OprfKey::derive(b"registry secret", b"other");
        assert_ne!(
            other.evaluate_direct(b"psn-1"),
            key.evaluate_direct(b"psn-1")
        );
    }

    #[test]
    fn malformed_elements_are_refused() {
        let key = OprfKey::derive(b"k", b"test");
        assert_eq!(key.evaluate(&[0u8; 31]), Err(OprfError::Length));
        assert_eq!(key.evaluate(&[0u8; 32]), Err(OprfError::InvalidElement));
        assert_eq!(key.evaluate(&[0xff; 32]), Err(OprfError::InvalidElement));
    }
}
