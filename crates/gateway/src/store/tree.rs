//! The audit trail's Merkle tree as the store keeps it (migration 0006, docs/verifiable-log.md):
//! each audit row holds, in `tree_nodes`, the perfect-subtree hashes its append completed, and
//! the tree's right edge is kept in memory between transactions, so that an append writes its
//! nodes into its own row without reading the tree.

use std::sync::{Arc, Mutex};

use translog::{Frontier, Hash, HASH_LEN};

use super::{Result, StoreError, Tx};

/// The audit entry whose row holds the perfect subtree at `level`, `index`: the one whose leaf
/// completes it, leaf `((index + 1) << level) - 1`, which is entry `seq` one more.
pub(crate) fn holding_seq(level: u32, index: u64) -> Result<i64> {
    index
        .checked_add(1)
        .and_then(|i| i.checked_shl(level).filter(|s| s >> level == i))
        .and_then(|s| i64::try_from(s).ok())
        .ok_or_else(|| StoreError::Corrupt("tree position beyond the audit sequence".into()))
}

/// The nodes an append completed, as its row stores them: level 0 first, 32 bytes each.
pub(crate) fn encode_nodes(nodes: &[Hash]) -> Vec<u8> {
    nodes.concat()
}

/// The hash at `level` in the `tree_nodes` of entry `seq`, checking that the row holds exactly
/// the nodes leaf `seq - 1` completes.
pub(crate) fn node_in_row(seq: i64, nodes: &[u8], level: u32) -> Result<Hash> {
    let leaf =
        u64::try_from(seq - 1).map_err(|_| StoreError::Corrupt("audit sequence below 1".into()))?;
    let expected = (1 + leaf.trailing_ones() as usize) * HASH_LEN;
    if nodes.len() != expected {
        return Err(StoreError::Corrupt(format!(
            "audit entry {seq} holds {} bytes of tree hashes, not {expected}",
            nodes.len()
        )));
    }
    let at = level as usize * HASH_LEN;
    nodes
        .get(at..at + HASH_LEN)
        .and_then(|h| Hash::try_from(h).ok())
        .ok_or_else(|| {
            StoreError::Corrupt(format!("audit entry {seq} has no node at level {level}"))
        })
}

/// Reads the right edge of the stored tree of `size` leaves.
pub(crate) async fn load_edge(tx: &mut dyn Tx, size: u64) -> Result<Frontier> {
    let positions = Frontier::positions(size);
    let found = tx.audit_subtrees(&positions).await?;
    let roots = positions
        .iter()
        .map(|p| {
            found
                .iter()
                .find(|f| (f.0, f.1) == *p)
                .map(|f| f.2)
                .ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "the audit Merkle tree lacks the subtrees before leaf {size}"
                    ))
                })
        })
        .collect::<Result<_>>()?;
    Frontier::from_roots(size, roots).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// The tree's right edge after the entry `seq` whose chain hash is `hash`, shared by the
/// store's transactions. The chain head names the edge exactly (each hash covers every entry
/// before it), so an append that finds the head it read here skips reading the tree; any other
/// head (a transaction that rolled back, another replica's appends, start-up) reads it once.
#[derive(Clone, Default)]
pub(crate) struct TreeEdge(Arc<Mutex<Option<(i64, String, Frontier)>>>);

impl TreeEdge {
    pub fn after(&self, seq: i64, hash: &str) -> Option<Frontier> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &*kept {
            Some((s, h, edge)) if *s == seq && h == hash => Some(edge.clone()),
            _ => None,
        }
    }

    pub fn keep(&self, seq: i64, hash: &str, edge: Frontier) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((seq, hash.to_owned(), edge));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-checked: the subtree of leaves 4-5 (level 1, index 2) is completed by leaf 5, entry 6;
    /// the subtree of leaves 0-7 by leaf 7, entry 8.
    #[test]
    fn a_subtree_lives_in_the_row_of_its_last_leaf() {
        assert_eq!(holding_seq(0, 0).unwrap(), 1);
        assert_eq!(holding_seq(1, 2).unwrap(), 6);
        assert_eq!(holding_seq(3, 0).unwrap(), 8);
        assert!(holding_seq(63, 1).is_err());
        // entry 8 is leaf 7 (three trailing ones): four nodes
        let nodes: Vec<Hash> = (0..4u8).map(|l| [l; HASH_LEN]).collect();
        let row = encode_nodes(&nodes);
        assert_eq!(node_in_row(8, &row, 3).unwrap(), [3; HASH_LEN]);
        assert!(
            node_in_row(7, &row, 0).is_err(),
            "leaf 6 completes one node only"
        );
        assert!(node_in_row(8, &row[..64], 0).is_err());
    }

    async fn append(store: &dyn crate::store::Store, entries: usize, commit: bool) {
        let mut tx = store.begin().await.unwrap();
        for _ in 0..entries {
            tx.append_audit(crate::store::sample_audit_event())
                .await
                .unwrap();
        }
        if commit {
            tx.commit().await.unwrap();
        }
    }

    async fn assert_tree_matches_rows(store: &dyn crate::store::Store, size: u64) {
        let mut tx = store.begin().await.unwrap();
        let recomputed = crate::app::audit::recompute_tree(&mut *tx).await.unwrap();
        assert_eq!(recomputed.gap_at, None);
        let head = crate::app::audit::tree_head(&mut *tx).await.unwrap();
        assert_eq!(head, (size, recomputed.tree.root()));
    }

    /// The kept edge follows the committed head only: after appends that rolled back, several
    /// appends in one transaction, and appends by a second store on the same database (another
    /// replica) in between, every append still completes the tree of the rows.
    #[tokio::test]
    async fn the_kept_edge_survives_rollbacks_and_other_writers() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("g.db").display());
        let one = crate::store::SqliteStore::connect(&url).await.unwrap();
        let other = crate::store::SqliteStore::connect(&url).await.unwrap();
        append(&one, 3, true).await;
        append(&one, 2, false).await; // rolled back
        append(&one, 3, true).await;
        assert_tree_matches_rows(&one, 6).await;
        append(&other, 5, true).await;
        append(&one, 1, true).await;
        append(&other, 1, false).await;
        append(&one, 7, true).await;
        assert_tree_matches_rows(&other, 19).await;
        assert_tree_matches_rows(&one, 19).await;
    }
}
