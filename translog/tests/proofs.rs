//! Every proof of every small tree: generated proofs verify, altered logs do not.

use translog::{
    consistency_proof, hash_children, hash_leaf, inclusion_proof, verify_consistency,
    verify_inclusion, Error, Hash, MemoryTree,
};

/// MTH straight from RFC 9162 §2.1.1, recursive on the leaf hashes, to check the tree against.
fn mth(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => translog::empty_root(),
        1 => leaves[0],
        n => {
            let k = 1 << (usize::BITS - 1 - (n - 1).leading_zeros());
            hash_children(&mth(&leaves[..k]), &mth(&leaves[k..]))
        }
    }
}

fn entry(i: u64) -> Vec<u8> {
    format!("audit entry {i}").into_bytes()
}

#[test]
fn all_proofs_of_trees_up_to_70_leaves_verify() {
    let mut tree = MemoryTree::new();
    let mut hashes = Vec::new();
    for i in 0..70u64 {
        tree.append(&entry(i));
        hashes.push(hash_leaf(&entry(i)));
    }
    for n in 1..=70u64 {
        let root = tree.root_at(n).unwrap();
        assert_eq!(root, mth(&hashes[..n as usize]), "root of {n}");
        for m in 0..n {
            let p = inclusion_proof(&tree, m, n).unwrap();
            verify_inclusion(m, n, &hashes[m as usize], &p, &root).unwrap();
            if n > 1 {
                let other = (m + 1) % n;
                assert!(verify_inclusion(other, n, &hashes[m as usize], &p, &root).is_err());
            }
        }
        for m in 0..=n {
            let p = consistency_proof(&tree, m, n).unwrap();
            let old = tree.root_at(m).unwrap();
            verify_consistency(m, n, &p, &old, &root).unwrap();
        }
    }
}

#[test]
fn a_rewritten_entry_or_a_truncated_log_fails_against_a_kept_checkpoint() {
    let mut honest = MemoryTree::new();
    for i in 0..40 {
        honest.append(&entry(i));
    }
    // The auditor kept the head at size 30.
    let (kept_size, kept_root) = (30, honest.root_at(30).unwrap());

    // Rewritten: entry 12 edited, then the log rebuilt and extended as if nothing happened.
    let mut rewritten = MemoryTree::new();
    for i in 0..40 {
        let e = if i == 12 {
            b"edited".to_vec()
        } else {
            entry(i)
        };
        rewritten.append(&e);
    }
    let p = consistency_proof(&rewritten, kept_size, 40).unwrap();
    assert_eq!(
        verify_consistency(kept_size, 40, &p, &kept_root, &rewritten.root()),
        Err(Error::RootMismatch)
    );

    // Truncated: the last 15 entries deleted and 5 new ones appended (size 30 again, then 30).
    let mut truncated = MemoryTree::new();
    for i in 0..25 {
        truncated.append(&entry(i));
    }
    for i in 0..5 {
        truncated.append(format!("new {i}").as_bytes());
    }
    assert_ne!(truncated.root(), kept_root);
    assert!(verify_consistency(kept_size, 30, &[], &kept_root, &truncated.root()).is_err());
    // Shorter than the kept head: no proof can exist at all.
    let mut short = MemoryTree::new();
    for i in 0..20 {
        short.append(&entry(i));
    }
    assert_eq!(
        consistency_proof(&short, kept_size, 20),
        Err(Error::SizesOutOfOrder {
            first: 30,
            second: 20
        })
    );

    // The honest log proves itself.
    let p = consistency_proof(&honest, kept_size, 40).unwrap();
    verify_consistency(kept_size, 40, &p, &kept_root, &honest.root()).unwrap();
}

#[test]
fn requests_outside_the_tree_are_refused() {
    let mut t = MemoryTree::new();
    t.append(b"a");
    t.append(b"b");
    assert_eq!(
        inclusion_proof(&t, 2, 2),
        Err(Error::IndexOutOfRange { index: 2, size: 2 })
    );
    assert_eq!(
        inclusion_proof(&t, 0, 3),
        Err(Error::TreeTooSmall { have: 2, want: 3 })
    );
    assert_eq!(
        consistency_proof(&t, 1, 3),
        Err(Error::TreeTooSmall { have: 2, want: 3 })
    );
    assert_eq!(t.root_at(3), Err(Error::TreeTooSmall { have: 2, want: 3 }));
    assert_eq!(MemoryTree::new().root(), translog::empty_root());
}
