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

/// The right edge of a tree: the roots of the perfect subtrees its leaves decompose into, one
/// per set bit of the size. That is all an append needs: the new leaf merges with the lowest
/// roots, one per trailing one bit of the size. A store that keeps every perfect subtree (as
/// [`MemoryTree`] does) can keep this in memory and write an append's nodes without reading any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    /// Highest level first, so the lowest root is last.
    roots: Vec<Hash>,
}

impl Frontier {
    /// The perfect subtrees, as `(level, index)`, whose roots form the edge of a tree of `size`
    /// leaves, highest level first: what [`Frontier::from_roots`] takes.
    pub fn positions(size: u64) -> Vec<(u32, u64)> {
        (0..u64::BITS)
            .rev()
            .filter(|level| size >> level & 1 == 1)
            .map(|level| (level, (size >> level) - 1))
            .collect()
    }

    /// The edge of a tree of `size` leaves from the roots at [`Frontier::positions`]`(size)`, in
    /// that order.
    pub fn from_roots(size: u64, roots: Vec<Hash>) -> Result<Self, Error> {
        if roots.len() != size.count_ones() as usize {
            return Err(Error::Store(format!(
                "a tree of {size} leaves has {} edge roots, not {}",
                size.count_ones(),
                roots.len()
            )));
        }
        Ok(Self { size, roots })
    }

    /// Reads the edge of a tree of `size` leaves from `tree`.
    pub fn of(tree: &dyn SubtreeHashes, size: u64) -> Result<Self, Error> {
        let roots = Self::positions(size)
            .into_iter()
            .map(|(level, index)| tree.perfect(level, index))
            .collect::<Result<_, _>>()?;
        Self::from_roots(size, roots)
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends a leaf hash and returns the perfect subtrees it completes: the leaf itself
    /// (level 0), then the new root at each level above that it completes.
    pub fn append(&mut self, leaf: Hash) -> Vec<Hash> {
        let completes = self.size.trailing_ones() as usize;
        let mut completed = Vec::with_capacity(completes + 1);
        completed.push(leaf);
        let mut node = leaf;
        for _ in 0..completes {
            // one root per set bit, so a trailing one always has its root
            let left = self.roots.pop().unwrap_or_default();
            node = hash_children(&left, &node);
            completed.push(node);
        }
        self.roots.push(node);
        self.size += 1;
        completed
    }

    /// The root hash of the tree (RFC 9162's MTH): the edge roots folded from the lowest up.
    pub fn root(&self) -> Hash {
        let mut roots = self.roots.iter().rev();
        let Some(lowest) = roots.next() else {
            return crate::hash::empty_root();
        };
        roots.fold(*lowest, |right, left| hash_children(left, &right))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At every size up to 300 the edge appends exactly the nodes the full tree stores, and
    /// reading it back from the full tree gives the same edge and root.
    #[test]
    fn the_edge_writes_what_the_full_tree_stores() {
        let mut full = MemoryTree::new();
        let mut edge = Frontier::default();
        for i in 0..300u64 {
            let leaf = hash_leaf(&i.to_be_bytes());
            let completed = edge.append(leaf);
            assert_eq!(full.append_leaf_hash(leaf), i);
            assert_eq!(completed.len(), 1 + i.trailing_ones() as usize);
            for (level, hash) in completed.iter().enumerate() {
                let stored = full.perfect(level as u32, i >> level).unwrap();
                assert_eq!(*hash, stored, "leaf {i}, level {level}");
            }
            assert_eq!(edge.root(), full.root(), "size {}", i + 1);
            assert_eq!(Frontier::of(&full, i + 1).unwrap(), edge);
        }
    }

    /// Hand-checked positions: 6 = 4 + 2 leaves is the subtree of leaves 0-3 and of 4-5.
    #[test]
    fn positions_follow_the_set_bits() {
        assert_eq!(Frontier::positions(0), vec![]);
        assert_eq!(Frontier::positions(1), vec![(0, 0)]);
        assert_eq!(Frontier::positions(6), vec![(2, 0), (1, 2)]);
        assert_eq!(Frontier::positions(7), vec![(2, 0), (1, 2), (0, 6)]);
        assert!(Frontier::from_roots(6, vec![[0; 32]]).is_err());
        assert_eq!(Frontier::default().root(), crate::hash::empty_root());
    }
}
