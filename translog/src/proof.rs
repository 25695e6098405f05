//! Inclusion and consistency proofs, RFC 9162 §2.1.3 and §2.1.4.
//!
//! Generation follows the recursive definitions `PATH(m, D[n])` and `SUBPROOF(m, D[n], b)`;
//! each `MTH` of a sub-range is assembled from stored perfect subtrees, so a proof costs
//! O(log² n) lookups whatever the tree size. Verification is the iterative algorithm of
//! §2.1.3.2 and §2.1.4.2, which needs nothing but the proof, the sizes and the roots.

use crate::hash::{empty_root, hash_children, split_point, Hash};
use crate::Error;

/// Read access to the hashes of a log's perfect subtrees, wherever they are kept.
///
/// `perfect(level, index)` is the root of the complete subtree of `2^level` leaves that
/// starts at leaf `index << level`; level 0 is the leaf hashes. Only subtrees lying wholly
/// inside the first `size()` leaves are ever asked for.
pub trait SubtreeHashes {
    fn size(&self) -> u64;
    fn perfect(&self, level: u32, index: u64) -> Result<Hash, Error>;
}

/// `MTH(D[start:end])`, for a range whose start is aligned the way RFC 9162's recursion
/// produces them (every range it asks for is).
pub fn subtree_root<S: SubtreeHashes + ?Sized>(
    store: &S,
    start: u64,
    end: u64,
) -> Result<Hash, Error> {
    if end > store.size() {
        return Err(Error::TreeTooSmall {
            have: store.size(),
            want: end,
        });
    }
    let n = end - start;
    if n == 0 {
        return Ok(empty_root());
    }
    if n.is_power_of_two() && start.is_multiple_of(n) {
        let level = n.trailing_zeros();
        return store.perfect(level, start >> level);
    }
    let k = split_point(n);
    let left = subtree_root(store, start, start + k)?;
    let right = subtree_root(store, start + k, end)?;
    Ok(hash_children(&left, &right))
}

/// The audit path of leaf `index` in the tree of the first `size` leaves (`PATH(m, D[n])`).
pub fn inclusion_proof<S: SubtreeHashes + ?Sized>(
    store: &S,
    index: u64,
    size: u64,
) -> Result<Vec<Hash>, Error> {
    if index >= size {
        return Err(Error::IndexOutOfRange { index, size });
    }
    if size > store.size() {
        return Err(Error::TreeTooSmall {
            have: store.size(),
            want: size,
        });
    }
    let mut proof = Vec::new();
    path(store, index, 0, size, &mut proof)?;
    Ok(proof)
}

fn path<S: SubtreeHashes + ?Sized>(
    store: &S,
    m: u64,
    start: u64,
    end: u64,
    out: &mut Vec<Hash>,
) -> Result<(), Error> {
    let n = end - start;
    if n <= 1 {
        return Ok(());
    }
    let k = split_point(n);
    if m < k {
        path(store, m, start, start + k, out)?;
        out.push(subtree_root(store, start + k, end)?);
    } else {
        path(store, m - k, start + k, end, out)?;
        out.push(subtree_root(store, start, start + k)?);
    }
    Ok(())
}

/// The proof that the tree of `first` leaves is a prefix of the tree of `second` leaves
/// (`PROOF(m, D[n])`). Empty when `first` is 0 or equal to `second`.
pub fn consistency_proof<S: SubtreeHashes + ?Sized>(
    store: &S,
    first: u64,
    second: u64,
) -> Result<Vec<Hash>, Error> {
    if first > second {
        return Err(Error::SizesOutOfOrder { first, second });
    }
    if second > store.size() {
        return Err(Error::TreeTooSmall {
            have: store.size(),
            want: second,
        });
    }
    let mut proof = Vec::new();
    if first > 0 && first < second {
        subproof(store, first, 0, second, true, &mut proof)?;
    }
    Ok(proof)
}

fn subproof<S: SubtreeHashes + ?Sized>(
    store: &S,
    m: u64,
    start: u64,
    end: u64,
    whole: bool,
    out: &mut Vec<Hash>,
) -> Result<(), Error> {
    let n = end - start;
    if m == n {
        if !whole {
            out.push(subtree_root(store, start, end)?);
        }
        return Ok(());
    }
    let k = split_point(n);
    if m <= k {
        subproof(store, m, start, start + k, whole, out)?;
        out.push(subtree_root(store, start + k, end)?);
    } else {
        subproof(store, m - k, start + k, end, false, out)?;
        out.push(subtree_root(store, start, start + k)?);
    }
    Ok(())
}

/// Root reached from a leaf hash and its audit path (RFC 9162 §2.1.3.2, steps 1-5).
pub fn root_from_inclusion_proof(
    index: u64,
    size: u64,
    leaf_hash: &Hash,
    proof: &[Hash],
) -> Result<Hash, Error> {
    if index >= size {
        return Err(Error::IndexOutOfRange { index, size });
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf_hash;
    for p in proof {
        if sn == 0 {
            return Err(Error::ProofLength {
                expected: proof_len(index, size),
                got: proof.len(),
            });
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = hash_children(p, &r);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            r = hash_children(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    if sn != 0 {
        return Err(Error::ProofLength {
            expected: proof_len(index, size),
            got: proof.len(),
        });
    }
    Ok(r)
}

/// Checks that `leaf_hash` is leaf `index` of the tree of `size` leaves whose root is `root`.
pub fn verify_inclusion(
    index: u64,
    size: u64,
    leaf_hash: &Hash,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), Error> {
    let got = root_from_inclusion_proof(index, size, leaf_hash, proof)?;
    if &got == root {
        Ok(())
    } else {
        Err(Error::RootMismatch)
    }
}

/// Checks that the tree of `first` leaves with root `first_root` is a prefix of the tree of
/// `second` leaves with root `second_root` (RFC 9162 §2.1.4.2).
pub fn verify_consistency(
    first: u64,
    second: u64,
    proof: &[Hash],
    first_root: &Hash,
    second_root: &Hash,
) -> Result<(), Error> {
    if first > second {
        return Err(Error::SizesOutOfOrder { first, second });
    }
    if first == second {
        // Same size: nothing to prove beyond the roots being equal.
        if !proof.is_empty() {
            return Err(Error::ProofLength {
                expected: 0,
                got: proof.len(),
            });
        }
        return if first_root == second_root {
            Ok(())
        } else {
            Err(Error::RootMismatch)
        };
    }
    if first == 0 {
        // Every tree extends the empty tree.
        if !proof.is_empty() {
            return Err(Error::ProofLength {
                expected: 0,
                got: proof.len(),
            });
        }
        return Ok(());
    }
    // Step 1: a non-trivial proof is never empty.
    if proof.is_empty() {
        return Err(Error::ProofLength {
            expected: 1,
            got: 0,
        });
    }
    // Step 2: when `first` is a power of two its root is the first node of the path.
    let mut path: Vec<&Hash> = Vec::with_capacity(proof.len() + 1);
    if first.is_power_of_two() {
        path.push(first_root);
    }
    path.extend(proof.iter());
    // Steps 3-4.
    let (mut fn_, mut sn) = (first - 1, second - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    // Step 5.
    let (mut fr, mut sr) = (*path[0], *path[0]);
    // Step 6.
    for c in &path[1..] {
        if sn == 0 {
            return Err(Error::RootMismatch);
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = hash_children(c, &fr);
            sr = hash_children(c, &sr);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            sr = hash_children(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    // Step 7.
    if sn == 0 && &fr == first_root && &sr == second_root {
        Ok(())
    } else {
        Err(Error::RootMismatch)
    }
}

/// Length of a well-formed audit path: one hash per level of the `PATH(m, D[n])` recursion.
fn proof_len(index: u64, size: u64) -> usize {
    let (mut m, mut n, mut len) = (index, size, 0);
    while n > 1 {
        let k = split_point(n);
        if m < k {
            n = k;
        } else {
            m -= k;
            n -= k;
        }
        len += 1;
    }
    len
}
