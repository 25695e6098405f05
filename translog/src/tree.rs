//! An append-only Merkle tree held in memory: every perfect subtree hash, level by level.
//!
//! Appending a leaf stores its hash and the roots of the perfect subtrees it completes
//! (amortised two hashes per append); the store is about twice the leaf hashes. A database
//! keeps the same rows (`level`, `index`, `hash`) and implements [`SubtreeHashes`] over them.

use crate::hash::{hash_children, hash_leaf, Hash};
use crate::proof::{subtree_root, SubtreeHashes};
use crate::Error;

#[derive(Debug, Clone, Default)]
pub struct MemoryTree {
    /// `levels[h][i]` is the root of leaves `[i << h, (i + 1) << h)`.
    levels: Vec<Vec<Hash>>,
}

impl MemoryTree {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one entry and returns its leaf index.
    pub fn append(&mut self, entry: &[u8]) -> u64 {
        self.append_leaf_hash(hash_leaf(entry))
    }

    /// Appends an already hashed leaf and returns its index.
    pub fn append_leaf_hash(&mut self, leaf: Hash) -> u64 {
        if self.levels.is_empty() {
            self.levels.push(Vec::new());
        }
        self.levels[0].push(leaf);
        let index = self.levels[0].len() as u64 - 1;
        // Each completed pair on a level yields a node on the level above.
        let mut level = 0;
        while self.levels[level].len().is_multiple_of(2) {
            let n = self.levels[level].len();
            let parent = hash_children(&self.levels[level][n - 2], &self.levels[level][n - 1]);
            if self.levels.len() == level + 1 {
                self.levels.push(Vec::new());
            }
            self.levels[level + 1].push(parent);
            level += 1;
        }
        index
    }

    /// Root of the tree of the first `size` leaves.
    pub fn root_at(&self, size: u64) -> Result<Hash, Error> {
        subtree_root(self, 0, size)
    }

    /// Root of the whole tree.
    pub fn root(&self) -> Hash {
        // The whole range is always held, so this cannot fail.
        subtree_root(self, 0, self.size()).unwrap_or_else(|_| crate::hash::empty_root())
    }
}

impl SubtreeHashes for MemoryTree {
    fn size(&self) -> u64 {
        self.levels.first().map_or(0, |l| l.len() as u64)
    }

    fn perfect(&self, level: u32, index: u64) -> Result<Hash, Error> {
        self.levels
            .get(level as usize)
            .and_then(|l| l.get(index as usize))
            .copied()
            .ok_or(Error::Store(format!(
                "no subtree at level {level}, index {index}"
            )))
    }
}
