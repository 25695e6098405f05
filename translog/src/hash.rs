//! RFC 9162 §2.1.1 hashing: `MTH({}) = SHA-256()`, leaves `SHA-256(0x00 || d)`, interior
//! nodes `SHA-256(0x01 || left || right)`. The prefixes keep a leaf from passing as a node.

use sha2::{Digest, Sha256};

pub const HASH_LEN: usize = 32;
pub type Hash = [u8; HASH_LEN];

/// Hash of one log entry.
pub fn hash_leaf(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0x00]);
    h.update(data);
    h.finalize().into()
}

/// Hash of an interior node from its two children.
pub fn hash_children(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([0x01]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Root of the empty tree: the hash of the empty string.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// Largest power of two strictly smaller than `n` (`n >= 2`), the split point `k` of RFC 9162.
pub(crate) fn split_point(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1 << (63 - (n - 1).leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_point_is_the_largest_power_of_two_below_n() {
        let cases = [
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 4),
            (8, 4),
            (9, 8),
            (1 << 40, 1 << 39),
        ];
        for (n, k) in cases {
            assert_eq!(split_point(n), k, "n = {n}");
        }
    }

    #[test]
    fn empty_root_is_sha256_of_nothing() {
        // RFC 9162 §2.1.1: MTH({}) = SHA-256(); the well-known e3b0c442… digest.
        assert_eq!(
            hex(&empty_root()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn leaf_and_node_hashes_are_domain_separated() {
        // SHA-256(0x00) and SHA-256(0x01 || 0x00*64), both from `printf ... | sha256sum`.
        assert_eq!(
            hex(&hash_leaf(b"")),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
        );
        let zero = [0u8; 32];
        assert_ne!(hash_children(&zero, &zero), hash_leaf(&[0u8; 64]));
    }

    fn hex(h: &Hash) -> String {
        h.iter().map(|b| format!("{b:02x}")).collect()
    }
}
